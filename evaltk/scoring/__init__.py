"""Scoring: the four-dimension score vector per trace (the fast path), the readable
statement of the same rules (:mod:`evaltk.scoring.reference`, the specification), the
panel fold, the score matrix, the manifest with the promotion rule, what a provisional
score supports, and the failure taxonomy.

Private modules, one concern each: ``_measures`` (names, tiers, vocabularies, scorers),
``_fold`` (the panel fold), ``_rules`` (the fast path), ``_matrix`` (:class:`ScoreMatrix`),
``_instrument`` (:class:`Instrument`: what produced a measure's numbers, its digest, and
how two compare), ``_manifest`` (:class:`Manifest` and THE promotion rule), ``_use`` (what a provisional
score supports), ``_taxonomy`` (failure categories)."""

from ._fold import FOLD_STATUSES, FoldedVotes, FoldRule, fold_votes
from ._instrument import (
    INSTRUMENT_KINDS,
    MEMBER_FIELDS,
    Instrument,
    InstrumentDifference,
    PanelMember,
    instrument_differences,
    same_instrument,
    unpinned_sides,
)
from ._manifest import (
    PROMOTION_CONDITIONS,
    CalibrationRecord,
    Manifest,
    MeasureStatus,
    population_digest,
    promotion_conditions,
)
from ._matrix import SCORE_TABLES, ScoreMatrix, check_score_table
from ._measures import (
    DIRECTION_OF_ERROR,
    GUIDE_MEASURES,
    MEASURES,
    SCORERS,
    TIERS,
    TRACE_MEASURES,
    VOCABULARIES,
    WAIT_ACTIONS,
)
from ._rules import score_run, score_tables, score_traces
from ._taxonomy import (
    DEFAULT_RULES,
    PAYMENT_PATTERN,
    PAYMENT_WORDS,
    FailureRule,
    classify_failures,
    load_rules,
)
from ._use import (
    LENGTH_STRATA,
    USES,
    Comparison,
    UnsupportedUse,
    check_use,
    compare_measure,
    rank_supported,
)

__all__ = [
    "TRACE_MEASURES",
    "GUIDE_MEASURES",
    "MEASURES",
    "TIERS",
    "VOCABULARIES",
    "WAIT_ACTIONS",
    "DIRECTION_OF_ERROR",
    "SCORERS",
    "FoldRule",
    "FoldedVotes",
    "FOLD_STATUSES",
    "fold_votes",
    "ScoreMatrix",
    "Instrument",
    "PanelMember",
    "InstrumentDifference",
    "INSTRUMENT_KINDS",
    "MEMBER_FIELDS",
    "instrument_differences",
    "same_instrument",
    "unpinned_sides",
    "SCORE_TABLES",
    "check_score_table",
    "Manifest",
    "MeasureStatus",
    "CalibrationRecord",
    "PROMOTION_CONDITIONS",
    "promotion_conditions",
    "population_digest",
    "score_traces",
    "score_run",
    "score_tables",
    "UnsupportedUse",
    "USES",
    "Comparison",
    "LENGTH_STRATA",
    "check_use",
    "compare_measure",
    "rank_supported",
    "FailureRule",
    "DEFAULT_RULES",
    "PAYMENT_WORDS",
    "PAYMENT_PATTERN",
    "classify_failures",
    "load_rules",
]
