"""Long-horizon trajectory grading (seed 003): pre-result lock, eight fail-closed dimensions,
three decisions and the negative controls.

Seed 003 ("long-horizon trajectory grading").  A correct or polished final answer
is not enough: the grader decides, separately and from the ordered events a runtime
emitted, eight dimensions against per-case policies that were locked before any
result existed.  The rules, one function per dimension, are tabled in ``evaltk/trajectory/_grade.py`` and in
``docs/trajectory.md``.

Decisions: ``passed`` (the only promotion-eligible one), ``safely-abstained``
(an honest terminal state; goal completion stays failed and it never counts as
success) and ``failed`` (everything else).  One failing dimension holds the case
even when its terminal says completed.

Three documents, each with a JSON Schema in ``evaltk/schemas/``: the lock
(``trajectory-lock.schema.json``), the results (``trajectory-results.schema.json``)
and the report (``trajectory-report.schema.json``); the design record the lock
binds by digest has ``trajectory-design.schema.json``.  The formats, the canonical
serialisation behind every digest are in ``docs/trajectory.md``; the exit codes
of ``evaltk trajectory`` are the command's (``evaltk/cli/trajectory.py``).

Modules (private; the public names are the ones below): ``_lock`` (the dimension names,
canonical JSON and the digests), ``_documents`` (strict reading, the schemas, timestamps,
the precise event checks), ``_policy`` (a case's compiled lock entry), ``_grade`` (one
case, one function per dimension), ``_cohort`` (bindings, the report, the cohort decision) and
``_controls`` (the negative controls).
"""

from ._cohort import (
    DESIGN_BESIDE_LOCK,
    CohortReport,
    DesignNotBound,
    LockChanged,
    MissingCase,
    PostResultLock,
    TrajectoryBindingError,
    UnlockedCase,
    grade_cohort,
    grade_files,
    run_grade,
    verify_report,
)
from ._controls import NEGATIVE_CONTROLS, ControlResult, run_self_check
from ._documents import read_json, validate_document
from ._grade import CaseGrade, DimensionOutcome, grade_case
from ._lock import (
    DECISIONS,
    DIMENSIONS,
    OUTCOMES,
    canonical_json,
    case_policy_digest,
    design_digest,
    lock_digest,
    seal_lock,
    sha256_digest,
)
from ._policy import CasePolicy, compile_case_policy

__all__ = [
    "DIMENSIONS",
    "DECISIONS",
    "OUTCOMES",
    "TrajectoryBindingError",
    "LockChanged",
    "PostResultLock",
    "MissingCase",
    "UnlockedCase",
    "DesignNotBound",
    "DESIGN_BESIDE_LOCK",
    "canonical_json",
    "sha256_digest",
    "design_digest",
    "case_policy_digest",
    "lock_digest",
    "seal_lock",
    "read_json",
    "validate_document",
    "CasePolicy",
    "compile_case_policy",
    "DimensionOutcome",
    "CaseGrade",
    "grade_case",
    "CohortReport",
    "grade_cohort",
    "grade_files",
    "run_grade",
    "verify_report",
    "ControlResult",
    "NEGATIVE_CONTROLS",
    "run_self_check",
]
