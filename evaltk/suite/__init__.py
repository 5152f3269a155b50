"""Suite gating (seed 000, RFC 0246): the gating score, pass rules and conformance.

Modules (private; the public names are the ones below): ``_model`` (pass rules,
trajectory specs, thresholds, :class:`SuiteRun`), ``_read`` (suite runs from files,
mappings and frames), ``_scores`` (exact means and threshold comparisons), ``_suite``
(pass@k and pass^k), ``_summary`` (the RFC 0246 summary and ``eval.scored`` events),
``_gate`` (schemas and the gate on a summary) and ``_conformance`` (checking a host's
summary).
"""

from ..stats import pass_at_k, pass_hat_k
from ._conformance import Violation, check_summary
from ._gate import GateDecision, gate_summary, load_summary, schema, validate_summary
from ._model import (
    AGGREGATIONS,
    MATCH_MODES,
    PASS_RULES,
    SuiteRun,
    SuiteThresholds,
    TrajectorySpec,
    trajectory_matches,
)
from ._read import load_suite_run, suite_run_from_frame
from ._scores import SCORE_TOLERANCE
from ._summary import EvalSummary, scored_events, summarize_suite

__all__ = [
    "PASS_RULES",
    "MATCH_MODES",
    "AGGREGATIONS",
    "SCORE_TOLERANCE",
    "pass_at_k",
    "pass_hat_k",
    "TrajectorySpec",
    "trajectory_matches",
    "SuiteThresholds",
    "SuiteRun",
    "load_suite_run",
    "suite_run_from_frame",
    "EvalSummary",
    "summarize_suite",
    "scored_events",
    "Violation",
    "check_summary",
    "GateDecision",
    "gate_summary",
    "load_summary",
    "validate_summary",
    "schema",
]
