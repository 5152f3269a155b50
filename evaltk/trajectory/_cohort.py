"""A graded cohort: the bindings a lock, its results and the design must satisfy, one grade per
locked case, the report document and its verification.

A graded cohort has a decision (``pass`` only when every locked case passed, ``hold``
otherwise); each binding failure is an error class of its own.  The exit codes seed 003
asks of the command are ``evaltk trajectory grade``'s, in :mod:`evaltk.cli.trajectory`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import _io
from ..errors import EvaltkError, SchemaViolation
from ._documents import check_events, parse_ts, read_json, validate_document
from ._grade import CaseGrade, grade_case
from ._lock import _REPORT_SCHEMA_ID, DIMENSIONS, case_policy_digest, design_digest, lock_digest
from ._policy import _compile

#: The report format's ``summary.exit_code`` (trajectory-report.schema.json, enum 0 / 2):
#: the code ``evaltk trajectory grade`` exits with for a graded cohort, recorded in the
#: document.  The command's table (``evaltk/cli/trajectory.py``) is the authority; a test
#: holds the two equal.
_REPORTED_EXIT_CODE = {"pass": 0, "hold": 2}


# --------------------------------------------------------------------------- errors


class TrajectoryBindingError(EvaltkError):
    """The documents are well-formed but do not bind together; the subclass says how."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class LockChanged(TrajectoryBindingError):
    """A digest does not match: the lock, its case policies or the design changed."""


class PostResultLock(TrajectoryBindingError):
    """The lock is not strictly before the results."""


class MissingCase(TrajectoryBindingError):
    """A locked case has no results."""


class UnlockedCase(TrajectoryBindingError):
    """The results hold a case the lock does not."""


class DesignNotBound(TrajectoryBindingError):
    """No design record to check the lock's ``design_digest`` against: grading binds the
    exact design (seed 003), so it does not run without one."""


#: The design record :func:`grade_files` reads when none is named: ``design.json`` beside the lock.
DESIGN_BESIDE_LOCK = "design.json"


# --------------------------------------------------------------------------- cohort


@dataclass(frozen=True)
class CohortReport:
    """The graded cohort: bindings, one :class:`CaseGrade` per locked case, the summary.

    ``decision`` is ``pass`` only when every locked case passed, ``hold`` (an honest hold)
    otherwise.
    """

    bindings: Mapping[str, Any]
    cases: tuple[CaseGrade, ...]

    @property
    def n_passed(self) -> int:
        return sum(1 for c in self.cases if c.decision == "passed")

    @property
    def n_safely_abstained(self) -> int:
        return sum(1 for c in self.cases if c.decision == "safely-abstained")

    @property
    def n_failed(self) -> int:
        return sum(1 for c in self.cases if c.decision == "failed")

    @property
    def all_passed(self) -> bool:
        return bool(self.cases) and all(c.decision == "passed" for c in self.cases)

    @property
    def decision(self) -> str:
        """``pass`` when every locked case passed, else ``hold``."""
        return "pass" if self.all_passed else "hold"

    @property
    def pass_rate(self) -> float:
        """Share of locked cases ``passed``: safely-abstained and failed cases count as not passed.

        Computed through :class:`evaltk.values.MeanSummary` over a 0/1 column with no
        abstentions (a safe abstention is a decision, not a missing value).
        """
        from ..values import MeanSummary

        k = self.n_passed
        s = MeanSummary(n=len(self.cases), n_valued=len(self.cases), total=float(k), total_sq=float(k))
        return float(s.mean)

    def summary(self) -> dict[str, Any]:
        failed_by = dict.fromkeys(DIMENSIONS, 0)
        for c in self.cases:
            for d in c.held_by:
                failed_by[d] += 1
        return {
            "cases": len(self.cases),
            "passed": self.n_passed,
            "safely_abstained": self.n_safely_abstained,
            "failed": self.n_failed,
            "pass_rate": self.pass_rate,
            "failed_by_dimension": failed_by,
            "decision": self.decision,
            "exit_code": _REPORTED_EXIT_CODE[self.decision],
        }

    def to_dict(self) -> dict[str, Any]:
        """The report document (``trajectory-report.schema.json``)."""
        from .. import __version__

        return {
            "schema": _REPORT_SCHEMA_ID,
            "grader": {"name": "evaltk.trajectory", "version": __version__},
            "bindings": dict(self.bindings),
            "cases": {c.case_id: c.to_dict() for c in self.cases},
            "summary": self.summary(),
        }

    def to_frame(self) -> Any:
        """Tidy table: one row per case and dimension with ``case_id, dimension, outcome,
        observation, event, decision``."""
        import pandas as pd

        rows = [
            {"case_id": c.case_id, "dimension": d, "outcome": o[0], "observation": o[1],
             "event": o[2], "decision": c.decision}
            for c in self.cases for d, o in zip(DIMENSIONS, c.dimensions, strict=True)
        ]
        return pd.DataFrame(rows, columns=["case_id", "dimension", "outcome", "observation", "event",
                                           "decision"])


def grade_cohort(lock: Mapping[str, Any], results: Mapping[str, Any], *,
                 design: Mapping[str, Any] | None = None, lock_file: str | None = None,
                 results_file: str | None = None, design_file: str | None = None) -> CohortReport:
    """Check that lock, results and design bind together, then grade every locked case.

    Checks, in this order (the first failure raises):

    0. a design record is given (seed 003: the CLI "binds the exact ... design digest"):
       :class:`DesignNotBound`;
    1. each document against its JSON Schema, then the results' events (duplicate
       ids, order, zones, digests, base64) and the lock's inventory against its
       cases: :class:`~evaltk.errors.SchemaViolation`;
    2. the lock's own digest, its case-policy digest, the design digest and the lock
       digest the results were made under:
       :class:`LockChanged`;
    3. the lock strictly before the results timestamp and before every event
       timestamp: :class:`PostResultLock`;
    4. every locked case present in the results: :class:`MissingCase`;
    5. no case in the results that the lock does not hold: :class:`UnlockedCase`.

    Then every locked case is graded with :func:`grade_case`.

    Examples
    --------
    >>> from pathlib import Path
    >>> ex = Path("data/examples/trajectory")
    >>> if ex.is_dir():
    ...     r = grade_files(ex / "lock.json", ex / "results-pass.json", design=ex / "design.json")
    ...     assert r.decision == "pass"
    """
    if design is None:
        raise DesignNotBound(
            f"{lock_file or 'lock'}: no design record: grading binds the exact design digest the lock "
            f"records ({lock.get('design_digest') if isinstance(lock, Mapping) else '?'}); give the design "
            f"(`--design`, or `{DESIGN_BESIDE_LOCK}` beside the lock)")
    files = _Files(lock_file, results_file, design_file)
    inventory, first_at = _check_documents(lock, results, design, files)
    design_checked = _check_digests(lock, results, design, files)
    _check_lock_precedes(lock, results, first_at)
    _check_inventory(lock, results, inventory)
    grades = tuple(grade_case(_compile(cid, lock["cases"][cid]), results["cases"][cid]["events"],
                              case_id=cid) for cid in inventory)
    bindings = {
        "design_digest": lock["design_digest"].lower(),
        "design_checked": design_checked,
        "lock_digest": lock["lock_digest"].lower(),
        "case_policy_digest": lock["case_policy_digest"].lower(),
        "case_inventory": inventory,
        "locked_at": lock["locked_at"],
        "results_at": results["results_at"],
    }
    return CohortReport(bindings=bindings, cases=grades)


@dataclass(frozen=True)
class _Files:
    lock: str | None
    results: str | None
    design: str | None


def _check_documents(lock: Mapping[str, Any], results: Mapping[str, Any], design: Mapping[str, Any] | None,
                     files: _Files) -> tuple[list[str], dict[str, datetime | None]]:
    """1. Schemas, events and the lock's inventory (SchemaViolation).  Returns the inventory
    and each case's earliest event timestamp."""
    validate_document(lock, "lock", file=files.lock)
    validate_document(results, "results", file=files.results)
    if design is not None:
        validate_document(design, "design", file=files.design)
    inventory = list(lock["case_inventory"])
    if set(inventory) != set(lock["cases"]):
        only_inv = sorted(set(inventory) - set(lock["cases"]))
        only_cases = sorted(set(lock["cases"]) - set(inventory))
        raise SchemaViolation(
            f"`case_inventory` and `cases` differ (only in the inventory: {only_inv}; only in cases: "
            f"{only_cases})", file=files.lock, field="case_inventory")
    first_at: dict[str, datetime | None] = {}
    last_at: dict[str, Any] = {}
    for cid, case in results["cases"].items():
        try:
            first_at[cid] = check_events(cid, case["events"], last=last_at)
        except SchemaViolation as e:
            raise SchemaViolation(e.detail, file=files.results, record=cid, field=e.field) from None
    parse_ts(lock["locked_at"], what="`locked_at`", file=files.lock, field="locked_at")
    results_at = parse_ts(results["results_at"], what="`results_at`", file=files.results,
                          field="results_at")
    for cid, t in last_at.items():  # results cannot predate their own events
        if t is not None and t > results_at:
            raise SchemaViolation(f"an event is stamped {t.isoformat()}, after results_at "
                                  f"{results['results_at']}: the results predate their own events",
                                  file=files.results, record=cid, field="events[].at")
    return inventory, first_at


def _check_digests(lock: Mapping[str, Any], results: Mapping[str, Any], design: Mapping[str, Any],
                   files: _Files) -> bool:
    """2. The lock's own digest, its case-policy digest, the design digest and the lock the
    results were made under (LockChanged).  Returns that the design was checked (always)."""
    got = lock_digest(lock)
    if got != lock["lock_digest"].lower():
        raise LockChanged(
            f"{files.lock or 'lock'}: lock changed: its content hashes to {got}, but `lock_digest` "
            f"records {lock['lock_digest']}")
    got = case_policy_digest(lock)
    if got != lock["case_policy_digest"].lower():
        raise LockChanged(
            f"{files.lock or 'lock'}: case policies changed: `cases` hashes to {got}, but "
            f"`case_policy_digest` records {lock['case_policy_digest']}")
    got = design_digest(design)
    if got != lock["design_digest"].lower():
        raise LockChanged(
            f"{files.design or 'design'}: design changed: it hashes to {got}, but the lock binds "
            f"`design_digest` {lock['design_digest']}")
    if results["lock_digest"].lower() != lock["lock_digest"].lower():
        raise LockChanged(
            f"{files.results or 'results'}: the results were made under lock {results['lock_digest']}, "
            f"not this lock ({lock['lock_digest']})")
    return True


def _check_lock_precedes(lock: Mapping[str, Any], results: Mapping[str, Any],
                         first_at: Mapping[str, datetime | None]) -> None:
    """3. The lock strictly before the results and before every event (PostResultLock)."""
    locked_at = parse_ts(lock["locked_at"], what="`locked_at`")
    if not locked_at < parse_ts(results["results_at"], what="`results_at`"):
        raise PostResultLock(
            f"post-result lock: locked_at {lock['locked_at']} is not strictly before results_at "
            f"{results['results_at']}")
    for cid in sorted(first_at):
        t = first_at[cid]
        if t is not None and not locked_at < t:
            raise PostResultLock(
                f"post-result lock: case `{cid}` has events at {t.isoformat()}, not after locked_at "
                f"{lock['locked_at']}")


def _check_inventory(lock: Mapping[str, Any], results: Mapping[str, Any], inventory: list[str]) -> None:
    """4./5. Exactly the locked cases: none missing (MissingCase), none unlocked (UnlockedCase)."""
    missing = [c for c in inventory if c not in results["cases"]]
    if missing:
        raise MissingCase(f"locked case(s) missing from the results: {', '.join(missing)}")
    unlocked = sorted(c for c in results["cases"] if c not in lock["cases"])
    if unlocked:
        raise UnlockedCase(f"case(s) in the results that the lock does not hold: {', '.join(unlocked)}")


def grade_files(lock: str | os.PathLike[str], results: str | os.PathLike[str], *,
                design: str | os.PathLike[str] | None = None) -> CohortReport:
    """Read the lock, results and design record from disk and :func:`grade_cohort` them.

    Without ``design``, the design is :data:`DESIGN_BESIDE_LOCK` in the lock's folder (a
    regular file there, not a symlink out of it); with neither, :class:`DesignNotBound`.
    """
    lock_doc = read_json(lock)
    results_doc = read_json(results)
    if design is None:
        design = _design_beside(Path(lock))
    design_doc = read_json(design)
    if not isinstance(design_doc, dict):  # `null` is not "no design": the file was given
        raise SchemaViolation(f"a design record must be a JSON object; got {type(design_doc).__name__}",
                              file=str(design))
    return grade_cohort(lock_doc, results_doc, design=design_doc, lock_file=str(lock),
                        results_file=str(results), design_file=str(design))


def _design_beside(lock: Path) -> Path:
    """``design.json`` in the lock's folder, resolved inside it; DesignNotBound when absent."""
    folder = lock.parent
    cand = folder / DESIGN_BESIDE_LOCK
    try:
        inside = cand.is_file() and cand.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        raise DesignNotBound(
            f"{lock}: no design record: grading binds the exact design digest the lock records; give "
            f"`--design`, or put the design as `{DESIGN_BESIDE_LOCK}` beside the lock (none is there"
            f"{'' if not cand.is_symlink() else ': a symlink out of the folder is not followed'})")
    return cand


def verify_report(report: Mapping[str, Any], lock: Mapping[str, Any], results: Mapping[str, Any], *,
                  design: Mapping[str, Any]) -> None:
    """Check a report document: its schema, and that it is exactly what grading the lock and
    results gives (so a dropped dimension or a promoted safe abstention cannot pass for a
    report).  Raises :class:`~evaltk.errors.SchemaViolation` or ``ValueError`` naming the case
    and field that differ."""
    validate_document(report, "report")
    expected = grade_cohort(lock, results, design=design).to_dict()
    for key in ("bindings", "summary"):
        if report[key] != expected[key]:
            diff = [k for k in expected[key] if report[key].get(k) != expected[key][k]]
            raise ValueError(f"report: field `{key}.{diff[0] if diff else '?'}` differs from grading "
                             "the lock and results")
    if set(report["cases"]) != set(expected["cases"]):
        raise ValueError("report: the case set differs from the lock's inventory")
    for cid, want in expected["cases"].items():
        have = report["cases"][cid]
        for key in ("decision", "terminal", "held_by"):
            if have[key] != want[key]:
                raise ValueError(f"report: record {cid}: field `{key}` is {have[key]!r}; grading gives "
                                 f"{want[key]!r}")
        for d in DIMENSIONS:
            if have["dimensions"][d] != want["dimensions"][d]:
                raise ValueError(f"report: record {cid}: field `dimensions.{d}` differs from grading")


def run_grade(lock: str | os.PathLike[str], results: str | os.PathLike[str],
              output: str | os.PathLike[str] | None = None,
              design: str | os.PathLike[str] | None = None) -> CohortReport:
    """Grade files as ``evaltk trajectory grade`` does and write the report to ``output``.

    Returns the :class:`CohortReport` when the documents bind (its ``decision`` is
    ``pass`` or ``hold``); raises a :class:`TrajectoryBindingError` subclass,
    :class:`~evaltk.errors.SchemaViolation` or :class:`~evaltk.errors.UnreadableInput`
    otherwise, and writes nothing: a report an earlier run left at ``output`` is removed,
    so a refused run never leaves a result that reads as its own.  An ``output`` that
    is one of the inputs (or a folder) is refused first, touching nothing
    (:class:`~evaltk.errors.OutputRefused`).  The command maps each outcome to its exit
    code; the negative controls of :func:`run_self_check` go through this path.
    """
    if output is None:
        return grade_files(lock, results, design=design)
    _io.check_output(output, [lock, results, design])
    with _io.removed_on_failure(output):
        report = grade_files(lock, results, design=design)
        _io.write_json(output, report.to_dict())
    return report
