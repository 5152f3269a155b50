"""Judges: the panel fold, calibration against human labels, judge selection on the
Pareto frontier, active labeling and regression gates."""

from ..scoring import PROMOTION_CONDITIONS  # the one rule's names (scoring), re-exported here
from ._calibration import (
    _LEVELS as CALIBRATION_LEVELS,
)
from ._calibration import (
    AgreementWithHumans,
    AltTestResult,
    CalibrationNumbers,
    CeilingResult,
    PromotionCheck,
    SampleSizePlan,
    agentrewardbench_ceiling,
    alt_test,
    calibration_numbers,
    calibration_record,
    human_ceiling,
    kappa_sample_size,
    population_table,
    promotion_check,
)
from ._labeling import (
    ExpansionDecision,
    ExpansionRefused,
    StratifiedEstimate,
    expansion_gate,
    propose_batch,
    stratified_accuracy,
    uncertainty_strata,
)
from ._level import EXCLUSION_CAUSES, expected_half_width, level_estimate
from ._panel import (
    FoldRule,
    PanelResult,
    fold_pairwise_trials,
    fold_panel,
    review_queue,
)
from ._regression import (
    DIMENSION_TYPES,
    GateRefused,
    GateResult,
    data_validity,
    gate,
    scoring_consistency,
)
from ._selection import (
    SelectionResult,
    anchor_correctness,
    canary_hits,
    judge_costs,
    pareto_frontier,
    published_precision_recall,
    select_judges,
)

__all__ = [
    "EXCLUSION_CAUSES",
    "level_estimate",
    "expected_half_width",
    "CALIBRATION_LEVELS",
    "FoldRule",
    "PanelResult",
    "fold_panel",
    "fold_pairwise_trials",
    "review_queue",
    "CeilingResult",
    "AgreementWithHumans",
    "CalibrationNumbers",
    "PromotionCheck",
    "PROMOTION_CONDITIONS",
    "AltTestResult",
    "SampleSizePlan",
    "agentrewardbench_ceiling",
    "population_table",
    "human_ceiling",
    "calibration_numbers",
    "promotion_check",
    "calibration_record",
    "alt_test",
    "kappa_sample_size",
    "anchor_correctness",
    "judge_costs",
    "canary_hits",
    "select_judges",
    "SelectionResult",
    "published_precision_recall",
    "pareto_frontier",
    "uncertainty_strata",
    "propose_batch",
    "stratified_accuracy",
    "StratifiedEstimate",
    "expansion_gate",
    "ExpansionDecision",
    "ExpansionRefused",
    "DIMENSION_TYPES",
    "GateResult",
    "GateRefused",
    "gate",
    "data_validity",
    "scoring_consistency",
]
