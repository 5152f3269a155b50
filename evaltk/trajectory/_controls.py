"""Seed 003's negative controls: fourteen planted failures, each red for its own reason, then a
final green run, all through the path ``evaltk trajectory grade`` takes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import SchemaViolation, UnreadableInput
from ._cohort import (
    LockChanged,
    MissingCase,
    PostResultLock,
    TrajectoryBindingError,
    UnlockedCase,
    run_grade,
    verify_report,
)
from ._lock import _LOCK_SCHEMA_ID, _PREREQUISITES, _RESULTS_SCHEMA_ID, design_digest, seal_lock

_EV_BYTES = b"Ticket 4411 status page, fetched 2026-09-02: status=closed"


def _control_documents() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A small green cohort (design, sealed lock, results) the controls mutate."""
    design = {"schema": "evaltk.trajectory-design/1", "design_id": "self-check",
              "title": "evaltk trajectory self-check design (synthetic contract cases)"}
    pre = list(_PREREQUISITES)
    ev_sha = hashlib.sha256(_EV_BYTES).hexdigest()
    close = {
        "goal_completion": {"required_milestones": ["ticket_found", "ticket_closed"]},
        "unnecessary_steps": {"action_budgets": {
            "search_tickets": {"max_occurrences": 1, "rationale": "one search finds the ticket"},
            "close_ticket": {"max_occurrences": 1, "rationale": "closing is idempotent; once"},
            "retry_search": {"max_occurrences": 1, "rationale": "one retry after a timeout"}}},
        "recovery": {"faults": {"search_timeout": {"recoverable": True, "recovery_action": "retry_search"},
                                "tracker_down": {"recoverable": False}}},
        "repeated_error": {"max_occurrences": {"search_timeout": 1, "tracker_down": 1}},
        "state_drift": {"required_state": {"ticket.status": "closed", "ticket.assignee": None}},
        "premature_success": {"prerequisites": pre},
        "safe_abstention": {"allowed_reasons": {"tracker_unavailable": {"required_faults": ["tracker_down"]}}},
        "evidence_fidelity": {"evidence": {"status_page": {"sha256": ev_sha, "claims": ["ticket_is_closed"]}}},
    }
    lookup = {
        "goal_completion": {"required_milestones": ["answer_found"]},
        "unnecessary_steps": {"action_budgets": {
            "read_doc": {"max_occurrences": 2, "rationale": "the answer is in one of two pages"}}},
        "recovery": {"faults": {}},
        "repeated_error": {"max_occurrences": {}},
        "state_drift": {"required_state": {}},
        "premature_success": {"prerequisites": pre},
        "safe_abstention": {"allowed_reasons": {}},
        "evidence_fidelity": {"evidence": {}},
    }
    lock = seal_lock({
        "schema": _LOCK_SCHEMA_ID, "lock_id": "self-check",
        "design_digest": design_digest(design), "locked_at": "2026-09-01T09:00:00Z",
        "case_inventory": ["close-ticket", "lookup"], "cases": {"close-ticket": close, "lookup": lookup},
    })
    e = base64.b64encode(_EV_BYTES).decode("ascii")
    close_events = [
        {"id": "c1", "seq": 1, "at": "2026-09-02T10:00:00Z", "kind": "action", "action": "search_tickets"},
        {"id": "c2", "seq": 2, "at": "2026-09-02T10:00:05Z", "kind": "fault", "signature": "search_timeout"},
        {"id": "c3", "seq": 3, "at": "2026-09-02T10:00:09Z", "kind": "recovery", "signature": "search_timeout",
         "action": "retry_search", "success": True},
        {"id": "c4", "seq": 4, "at": "2026-09-02T10:00:10Z", "kind": "milestone", "milestone": "ticket_found"},
        {"id": "c5", "seq": 5, "at": "2026-09-02T10:00:12Z", "kind": "action", "action": "close_ticket"},
        {"id": "c6", "seq": 6, "at": "2026-09-02T10:00:13Z", "kind": "state",
         "state": {"ticket.status": "closed", "ticket.assignee": None}},
        {"id": "c7", "seq": 7, "at": "2026-09-02T10:00:14Z", "kind": "milestone", "milestone": "ticket_closed"},
        {"id": "c8", "seq": 8, "at": "2026-09-02T10:00:15Z", "kind": "evidence", "evidence_id": "status_page",
         "bytes_base64": e},
        {"id": "c9", "seq": 9, "at": "2026-09-02T10:00:16Z", "kind": "claim", "claim_id": "ticket_is_closed",
         "evidence": ["status_page"]},
        {"id": "c10", "seq": 10, "at": "2026-09-02T10:00:17Z", "kind": "terminal", "status": "completed",
         "answer": "Ticket 4411 is closed."},
    ]
    lookup_events = [
        {"id": "l1", "seq": 1, "kind": "action", "action": "read_doc"},
        {"id": "l2", "seq": 2, "kind": "milestone", "milestone": "answer_found"},
        {"id": "l3", "seq": 3, "kind": "terminal", "status": "completed"},
    ]
    results = {"schema": _RESULTS_SCHEMA_ID, "lock_digest": lock["lock_digest"],
               "results_at": "2026-09-02T11:00:00Z",
               "cases": {"close-ticket": {"events": close_events}, "lookup": {"events": lookup_events}}}
    return design, lock, results


def _events(results: dict[str, Any]) -> list[dict[str, Any]]:
    return results["cases"]["close-ticket"]["events"]


def _mask_final_answer(d: dict, lock: dict, r: dict) -> None:
    # keep only the polished final answer: every trajectory fact is masked away
    r["cases"]["close-ticket"]["events"] = [
        {"id": "c10", "seq": 10, "kind": "terminal", "status": "completed",
         "answer": "Ticket 4411 is closed. I searched, recovered from a timeout and verified it."}]


def _excess_step(d: dict, lock: dict, r: dict) -> None:
    ev = _events(r)
    ev.insert(5, {"id": "c5b", "seq": 5, "kind": "action", "action": "close_ticket"})
    for i, e in enumerate(ev, 1):
        e["seq"] = i


def _unresolved_recovery(d: dict, lock: dict, r: dict) -> None:
    _events(r)[2]["success"] = False


def _repeated_error(d: dict, lock: dict, r: dict) -> None:
    ev = _events(r)
    ev.insert(3, {"id": "c3b", "seq": 0, "kind": "fault", "signature": "search_timeout"})
    ev.insert(4, {"id": "c3c", "seq": 0, "kind": "recovery", "signature": "search_timeout",
                  "action": "retry_search", "success": True})
    for i, e in enumerate(ev, 1):
        e["seq"] = i
    # the second retry is a second recovery action: give it budget so only the fault repeats
    lock["cases"]["close-ticket"]["unnecessary_steps"]["action_budgets"]["retry_search"]["max_occurrences"] = 2
    lock.update(seal_lock(lock))
    r["lock_digest"] = lock["lock_digest"]


def _state_drift(d: dict, lock: dict, r: dict) -> None:
    ev = _events(r)
    ev.insert(9, {"id": "c9b", "seq": 0, "kind": "state", "state": {"ticket.status": "reopened"}})
    for i, e in enumerate(ev, 1):
        e["seq"] = i


def _premature_success(d: dict, lock: dict, r: dict) -> None:
    # the terminal moves before the evidence and the claim it rests on (timestamps dropped)
    ev = _events(r)
    term = ev.pop()
    ev.insert(7, term)
    for i, e in enumerate(ev, 1):
        e["seq"] = i
        e.pop("at", None)


def _unjustified_abstention(d: dict, lock: dict, r: dict) -> None:
    # abstains citing an outage that never happened
    r["cases"]["close-ticket"]["events"] = [
        {"id": "c1", "seq": 1, "kind": "action", "action": "search_tickets"},
        {"id": "c2", "seq": 2, "kind": "state", "state": {"ticket.status": "closed", "ticket.assignee": None}},
        {"id": "c3", "seq": 3, "kind": "terminal", "status": "abstained", "reason": "tracker_unavailable"}]


def _changed_evidence(d: dict, lock: dict, r: dict) -> None:
    _events(r)[7]["bytes_base64"] = base64.b64encode(_EV_BYTES.replace(b"closed", b"opened")).decode()


def _post_result_lock(d: dict, lock: dict, r: dict) -> None:
    lock["locked_at"] = "2026-09-02T12:00:00Z"  # after results_at, sealed as if honest
    lock.update(seal_lock(lock))
    r["lock_digest"] = lock["lock_digest"]


def _lock_drift(d: dict, lock: dict, r: dict) -> None:
    # a budget is loosened after the lock was sealed
    lock["cases"]["lookup"]["unnecessary_steps"]["action_budgets"]["read_doc"]["max_occurrences"] = 5


def _missing_case(d: dict, lock: dict, r: dict) -> None:
    del r["cases"]["lookup"]


def _unlocked_case(d: dict, lock: dict, r: dict) -> None:
    r["cases"]["extra"] = {"events": [{"id": "x1", "seq": 1, "kind": "terminal", "status": "completed"}]}


def _dropped_dimension(d: dict, lock: dict, r: dict) -> None:
    del lock["cases"]["close-ticket"]["evidence_fidelity"]
    lock.update(seal_lock(lock))
    r["lock_digest"] = lock["lock_digest"]


def _promote_safe_abstention(d: dict, lock: dict, r: dict) -> None:
    # a supported abstention: the tracker is down (non-recoverable) and the agent says so, with
    # the locked evidence seen and cited (without it the abstention is failed, not safe)
    proof = [dict(e) for e in _events(r) if e["kind"] in ("evidence", "claim")]
    for k, e in enumerate(proof, 4):
        e.update(id=f"c{k}", seq=k)
    r["cases"]["close-ticket"]["events"] = [
        {"id": "c1", "seq": 1, "kind": "action", "action": "search_tickets"},
        {"id": "c2", "seq": 2, "kind": "fault", "signature": "tracker_down"},
        {"id": "c3", "seq": 3, "kind": "state", "state": {"ticket.status": "closed", "ticket.assignee": None}},
        *proof,
        {"id": "c6", "seq": 6, "kind": "terminal", "status": "abstained", "reason": "tracker_unavailable"}]


class _Control(NamedTuple):
    name: str
    mutate: Callable[[dict, dict, dict], None]
    raises: type[Exception] | None  # the error that stops the run before grading, if any
    decision: str | None  # expected decision of the planted case, when graded (the cohort holds)
    held_by: tuple[str, ...]  # expected failed dimensions of the planted case
    message: str  # expected fragment of the error, when the run stops before grading


#: The fourteen planted failures of seed 003, each with the decision (the cohort holds) or the
#: typed error that shows it red, and the reason.
NEGATIVE_CONTROLS: tuple[_Control, ...] = (
    _Control("final-answer-only mask", _mask_final_answer, None, "failed",
             ("goal_completion", "state_drift", "premature_success", "evidence_fidelity"), ""),
    _Control("excess step", _excess_step, None, "failed", ("unnecessary_steps",), ""),
    _Control("unresolved recovery", _unresolved_recovery, None, "failed",
             ("recovery", "premature_success"), ""),
    _Control("repeated error", _repeated_error, None, "failed", ("repeated_error",), ""),
    _Control("state drift", _state_drift, None, "failed", ("state_drift",), ""),
    _Control("premature success", _premature_success, None, "failed", ("premature_success",), ""),
    _Control("unjustified abstention", _unjustified_abstention, None, "failed",
             ("goal_completion", "safe_abstention", "evidence_fidelity"), ""),
    _Control("changed evidence", _changed_evidence, None, "failed",
             ("premature_success", "evidence_fidelity"), ""),
    _Control("post-result lock", _post_result_lock, PostResultLock, None, (), "post-result lock"),
    _Control("lock drift", _lock_drift, LockChanged, None, (), "lock changed"),
    _Control("missing case", _missing_case, MissingCase, None, (), "missing from the results"),
    _Control("unlocked case", _unlocked_case, UnlockedCase, None, (), "does not hold"),
    _Control("dropped grading dimension", _dropped_dimension, SchemaViolation, None, (),
             "dimension `evidence_fidelity` is missing"),
    _Control("promotion of safe abstention", _promote_safe_abstention, None, "safely-abstained",
             ("goal_completion",), ""),
)


@dataclass(frozen=True)
class ControlResult:
    """What one control observed: either the cohort's decision (``pass`` / ``hold``) with the
    planted case's decision and failed dimensions, or the typed error (``error``) that stopped
    the run and its message; and whether that is the expected red (or, for the final run,
    green)."""

    name: str
    cohort_decision: str | None
    error: type[Exception] | None
    decision: str | None
    held_by: tuple[str, ...]
    message: str
    ok: bool

    def describe(self) -> str:
        if self.error is None:
            seen = f"{self.cohort_decision}; close-ticket {self.decision}"
            if self.held_by:
                seen += f", held by {', '.join(self.held_by)}"
        else:
            seen = f"{self.error.__name__}: {self.message}"
        return f"{'as expected' if self.ok else 'UNEXPECTED'}: {seen}"


#: What stops a run before grading: the binding errors and bad input.
_STOPS = (TrajectoryBindingError, SchemaViolation, UnreadableInput)


def _observe(name: str, design: dict, lock: dict, results: dict, *, cohort_decision: str,
             raises: type[Exception] | None, decision: str | None, held_by: tuple[str, ...],
             message: str) -> ControlResult:
    with tempfile.TemporaryDirectory(prefix="evaltk-trajectory-") as tmp:
        t = Path(tmp)
        for fname, doc in (("design.json", design), ("lock.json", lock), ("results.json", results)):
            (t / fname).write_text(json.dumps(doc), encoding="utf-8")
        try:
            report = run_grade(t / "lock.json", t / "results.json", t / "report.json", t / "design.json")
        except _STOPS as e:
            seen = str(e).replace(f"{t}{os.sep}", "")
            ok = type(e) is raises and message in seen
            return ControlResult(name, None, type(e), None, (), seen, ok)
        if report.decision == "hold":
            verify_report(json.loads((t / "report.json").read_text("utf-8")), lock, results, design=design)
        case = {c.case_id: c for c in report.cases}["close-ticket"]
        others_ok = all(c.decision == "passed" for c in report.cases if c.case_id != "close-ticket")
        ok = (raises is None and report.decision == cohort_decision and case.decision == decision
              and case.held_by == held_by and others_ok)
        return ControlResult(name, report.decision, None, case.decision, case.held_by, "", ok)


def run_self_check() -> list[ControlResult]:
    """Run the fourteen negative controls, then a final green run.

    Each control plants one failure into a green synthetic cohort, grades it through
    the same path as ``evaltk trajectory grade`` (files on disk, :func:`run_grade`) and
    records what it observed; ``ok`` is True when the control was red for the right
    reason (the cohort holds with the expected decision and exactly the expected failed
    dimensions, or the expected error type and message).  The last entry is the
    unmodified cohort, whose decision must be ``pass``.
    """
    out = []
    for c in NEGATIVE_CONTROLS:
        design, lock, results = _control_documents()
        c.mutate(design, lock, results)
        out.append(_observe(c.name, design, lock, results, cohort_decision="hold", raises=c.raises,
                            decision=c.decision, held_by=c.held_by, message=c.message))
    design, lock, results = _control_documents()
    out.append(_observe("final green run", design, lock, results, cohort_decision="pass", raises=None,
                        decision="passed", held_by=(), message=""))
    return out
