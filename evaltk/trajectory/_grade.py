"""Grading one case on seed 003's eight dimensions, one function per row of its table.

==================  ===========================================  ==============================================
dimension           pre-result authority (lock)                  fail-closed observation (results)
==================  ===========================================  ==============================================
goal_completion     required milestone ids, completed terminal   every milestone occurs before the terminal
unnecessary_steps   per-action maximum occurrences + rationale   unknown or over-budget action (recovery
                                                                 actions included) fails
recovery            fault recoverability and recovery action     a recoverable fault needs a later successful
                                                                 recovery with the locked action
repeated_error      maximum occurrences per fault signature      recurrence above the frozen maximum fails
state_drift         required terminal key/value invariants       the last observed value of every key matches
premature_success   milestones, recovered faults, evidence       a completed terminal before any prerequisite
safe_abstention     allowed reasons and required fault sigs      unsupported abstention fails; a supported one
                                                                 is honest but never success
evidence_fidelity   evidence id, expected SHA-256, claim ids     missing, changed, uncited or unseen evidence
==================  ===========================================  ==============================================

:func:`grade_case` reads the events once into one record, :class:`_Facts` (order, unique
ids, timestamps; the terminal, the first occurrence of each milestone, the step budgets
counted, the last value of each state key, the faults and recovery positions; then the
evidence and claims in order), then applies one function per dimension and :func:`_decide`.  Any
anomaly on the way raises; :func:`grade_case` then hands over to
:func:`~evaltk.trajectory.check_events`, which names the problem.

Outcomes that do not depend on the trajectory are built once, at import or in
:func:`compile_case_policy`; the rest are built with ``tuple.__new__`` (the named tuple's own constructor costs about a
tenth of a grade).  ``benchmarks/trajectory.py`` runs seed 003's frozen check.
"""

from __future__ import annotations

import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple

from ._documents import HEX64_MATCH, STATUSES, Invalid, check_events, parse_ts
from ._lock import DIMENSIONS, canonical_json
from ._policy import CasePolicy, DimensionOutcome


class CaseGrade(NamedTuple):
    """The grade of one case.

    Attributes
    ----------
    case_id : str
    decision : str
        ``passed``, ``safely-abstained`` or ``failed``.
    terminal : tuple
        ``(status, event_id, reason)``; status is ``completed``, ``abstained`` or ``none``.
    dimensions : tuple of DimensionOutcome
        One per name in :data:`DIMENSIONS`, in that order.
    first_at : datetime or None
        The earliest event timestamp (used to check the lock precedes the run).
    """

    case_id: str
    decision: str
    terminal: tuple[str, str | None, str | None]
    dimensions: tuple[DimensionOutcome, ...]
    first_at: datetime | None = None

    @property
    def passed(self) -> bool:
        """True only for the promotion-eligible decision ``passed``."""
        return self.decision == "passed"

    @property
    def held_by(self) -> tuple[str, ...]:
        """The dimensions that failed."""
        return tuple(d for d, o in zip(DIMENSIONS, self.dimensions, strict=True) if o.outcome == "failed")

    def dimension(self, name: str) -> DimensionOutcome:
        """The outcome of dimension ``name``."""
        try:
            return self.dimensions[DIMENSIONS.index(name)]
        except ValueError:
            raise ValueError(f"`name` must be one of {', '.join(DIMENSIONS)}; got {name!r}.") from None

    def to_dict(self) -> dict[str, Any]:
        """The case's entry in the report (``cases.<id>``)."""
        status, event, reason = self.terminal
        return {
            "decision": self.decision,
            "terminal": {"status": status, "event": event, "reason": reason},
            "held_by": list(self.held_by),
            "dimensions": {
                d: {"outcome": o.outcome, "observation": o.observation, "event": o.event}
                for d, o in zip(DIMENSIONS, self.dimensions, strict=True)
            },
        }


# --------------------------------------------------------------------------- the entry point


#: What a malformed event raises in the fast pass (``Invalid`` where a wrong value would
#: otherwise pass unnoticed); :func:`grade_case` then asks ``check_events`` for the wording.
_SCAN_ERRORS = (Invalid, KeyError, TypeError, AttributeError, ValueError, IndexError, binascii.Error)


def grade_case(policy: CasePolicy, events: Sequence[Mapping[str, Any]], *,
               case_id: str | None = None) -> CaseGrade:
    """Grade one case's ordered events against its locked policy, on all eight dimensions.

    This is the function the CLI (through :func:`grade_cohort`) and the benchmark call.

    Parameters
    ----------
    policy : CasePolicy
        From :func:`compile_case_policy` (or a loaded lock through :func:`grade_cohort`).
    events : list of dict
        The events as in a results document's ``cases.<id>.events``: each with
        ``id``, ``seq`` (strictly increasing), ``kind`` and the kind's fields.
    case_id : str, optional
        Names the case in errors; defaults to ``policy.case_id``.

    Returns
    -------
    CaseGrade

    Raises
    ------
    evaltk.errors.SchemaViolation
        Duplicate event ids, events out of order (``seq`` or ``at``), timestamps
        without a zone, non-hex digests, evidence bytes that are not base64, a
        second terminal, a missing field; naming the case and the field.

    Notes
    -----
    Decision rule (seed 003): ``passed`` when the terminal is completed and no
    dimension failed; ``safely-abstained`` when the terminal is abstained, the
    abstention is supported and no dimension other than goal completion failed;
    ``failed`` otherwise.

    References
    ----------
    Seed 003, "Eve SOTA long-horizon trajectory grading" (September 2026),
    section "Eight independent dimensions".

    Examples
    --------
    >>> from evaltk.trajectory import compile_case_policy
    >>> pol = compile_case_policy("c1", {
    ...     "goal_completion": {"required_milestones": ["found"]},
    ...     "unnecessary_steps": {"action_budgets": {"search": {"max_occurrences": 1,
    ...                                                         "rationale": "one lookup"}}},
    ...     "recovery": {"faults": {}}, "repeated_error": {"max_occurrences": {}},
    ...     "state_drift": {"required_state": {}},
    ...     "premature_success": {"prerequisites": ["milestones", "recovered_faults",
    ...                                             "faithful_evidence"]},
    ...     "safe_abstention": {"allowed_reasons": {}},
    ...     "evidence_fidelity": {"evidence": {}}})
    >>> g = grade_case(pol, [
    ...     {"id": "e1", "seq": 1, "kind": "action", "action": "search"},
    ...     {"id": "e2", "seq": 2, "kind": "terminal", "status": "completed"},
    ...     {"id": "e3", "seq": 3, "kind": "milestone", "milestone": "found"}])
    >>> g.decision, g.held_by
    ('failed', ('goal_completion', 'premature_success'))
    """
    cid = policy.case_id if case_id is None else case_id
    try:
        return _grade(policy, events, cid)
    except _SCAN_ERRORS:
        check_events(cid, events)  # names the malformed event and field
        raise  # pragma: no cover - the events were well-formed: a bug, reported as such


def _grade(policy: CasePolicy, events: Sequence[Mapping[str, Any]], cid: str) -> CaseGrade:
    f = _read_facts(policy, events)
    n = len(events)
    status = f.status
    late = _late_milestone(policy, f.first_milestone, f.index)
    faults = _faults(policy, events, f.faults) if f.faults else ()
    attempts = _attempts(events, f.recoveries) if f.recoveries else ()
    # Premature success is a rule about a completed terminal, safe abstention about an abstained one.
    if status == "completed":
        premature = _premature_success(policy, f, late, faults, attempts)
        safe = _new(DimensionOutcome, ("not_applicable", _NOT_ABSTAINED[status], f.event))
    elif status == "abstained":
        premature = _new(DimensionOutcome, ("not_applicable", _NOT_COMPLETED[status], f.event))
        safe = _safe_abstention(policy, f, faults)
    else:
        premature = _new(DimensionOutcome, ("not_applicable", _NOT_COMPLETED[status], f.event))
        safe = _new(DimensionOutcome, ("not_applicable", _NOT_ABSTAINED[status], f.event))
    outcomes = (
        _goal_completion(policy, f, late),
        _unnecessary_steps(policy, f),
        _recovery(faults, attempts, n) if faults else _NO_FAULTS_RECOVERY,
        _repeated_error(policy, faults) if faults else _NO_FAULTS_REPEATED,
        _state_drift(policy, f.last_state),
        premature,
        safe,
        _evidence_fidelity(policy, f, n),
    )
    return _new(CaseGrade, (cid, _decide(status, outcomes), (status, f.event, f.reason), outcomes, f.first_at))


# --------------------------------------------------------------------------- reading the events


_new = tuple.__new__
#: What the lock says of a fault signature it does not hold.
_UNKNOWN = object()


class _Facts:
    """What a case's events say, read once (:func:`_read_facts`): the record every rule reads.

    The terminal: ``index`` (its position; the number of events when there is none),
    ``status`` (``none`` when there is none), ``event`` (its id) and ``reason`` (of an
    abstention).  Filed in event order: ``first_milestone`` (milestone -> (position, event
    id) of its first occurrence), ``faults`` and ``recoveries`` (positions), ``last_state``
    (key -> (last observed value, event id)).  The step budgets, counted in the same pass:
    ``n_steps`` (actions and recoveries) and the first step ``over`` its budget or without
    one (its event, occurrence ``over_count``; None when every step is within budget).
    ``first_at``: the earliest timestamp.  The evidence and claims (:func:`_read_proof`):
    ``first_seen`` (evidence -> position first seen), ``cited`` ((claim, evidence) ->
    position first cited), the first changed, unsupported or unseen item ``bad`` (at
    ``bad_at``; no citation is recorded after it), ``last_proof`` (position of the last
    evidence or claim, -1 when none) and ``complete`` (by the last event: every locked item
    seen and cited by each of its claims).
    """

    __slots__ = ("index", "status", "event", "reason", "first_milestone", "faults", "recoveries",
                 "last_state", "n_steps", "over", "over_count", "first_at",
                 "first_seen", "cited", "bad", "bad_at", "last_proof", "complete")
    index: int
    status: str
    event: str | None
    reason: Any
    first_milestone: dict[Any, tuple[int, str]]
    faults: list[int]
    recoveries: list[int]
    last_state: dict[Any, tuple]
    n_steps: int
    over: Mapping[str, Any] | None
    over_count: int
    first_at: datetime | None
    first_seen: dict[str, int]
    cited: dict[tuple[str, str], int]
    bad: DimensionOutcome | None
    bad_at: int
    last_proof: int
    complete: bool


def _read_facts(policy: CasePolicy, events: Sequence[Mapping[str, Any]]) -> _Facts:
    """One ordered pass over a case's events: the checks a schema cannot make (``seq``
    strictly increasing, unique ids, timestamps in order, at most one terminal), each event
    filed by kind (unknown kinds raise), the step budgets counted, the first occurrence of
    each milestone, the last value of each state key, the terminal and the earliest
    timestamp; then the evidence and claims in order."""
    f = _Facts()
    budgets = policy.budgets
    counts: dict[Any, int] = {}
    first_milestone: dict[Any, tuple[int, str]] = {}
    last_state: dict[Any, tuple] = {}
    faults: list[int] = []
    recoveries: list[int] = []
    proofs: list[int] = []
    ids: set[Any] = set()
    add_id = ids.add
    f.index = -1
    f.over = None
    last_seq = -1
    last_at = first_at = None
    for i, ev in enumerate(events):
        seq = ev["seq"]
        if seq <= last_seq:
            raise Invalid
        last_seq = seq
        add_id(ev["id"])
        if "at" in ev:
            last_at = _not_before(ev["at"], last_at)
            first_at = last_at if first_at is None else first_at
        kind = ev["kind"]
        if kind == "action" or kind == "recovery":
            a = ev["action"]
            c = counts[a] = counts.get(a, 0) + 1
            if c > budgets.get(a, -1) and f.over is None:
                f.over, f.over_count = ev, c
            if kind == "recovery":
                recoveries.append(i)
        elif kind == "evidence" or kind == "claim":
            proofs.append(i)
        elif kind == "milestone":
            first_milestone.setdefault(ev["milestone"], (i, ev["id"]))
        elif kind == "state":
            eid = ev["id"]
            for k, v in ev["state"].items():
                last_state[k] = (v, eid)
        elif kind == "terminal":
            _read_terminal(f, ev, i)
        elif kind == "fault":
            faults.append(i)
        else:
            raise Invalid
    if len(ids) != len(events):
        raise Invalid
    if f.index < 0:
        f.index, f.status, f.event, f.reason = len(events), "none", None, None
    f.first_milestone, f.last_state, f.faults, f.recoveries = first_milestone, last_state, faults, recoveries
    f.n_steps, f.first_at = sum(counts.values()), first_at
    _read_proof(policy, events, proofs, f)
    return f


def _not_before(value: Any, last: datetime | None) -> datetime:
    t = parse_ts(value, what="")  # SchemaViolation is a ValueError: a scan error
    if last is not None and t < last:
        raise Invalid
    return t


def _read_terminal(f: _Facts, ev: Mapping[str, Any], i: int) -> None:
    if f.index >= 0:
        raise Invalid  # a second terminal
    status = ev["status"]
    if status != "completed" and status != "abstained" and status != "none":
        raise Invalid
    f.index, f.status, f.event = i, status, ev["id"]
    f.reason = ev["reason"] if status == "abstained" else None


def _late_milestone(policy: CasePolicy, first: Mapping[Any, tuple[int, str]], before: int) -> tuple | None:
    """The first required milestone not observed before position ``before``, as
    ``(milestone, (position, event id) of its first occurrence, or None)``; None when every
    one was."""
    for m in policy.milestones:
        hit = first.get(m)
        if hit is None or hit[0] > before:
            return (m, hit)
    return None


class _Fault(NamedTuple):
    """A fault event: position, signature, event id and what the lock says of the signature:
    the recovery action it needs, None (not recoverable) or ``_UNKNOWN`` (not locked)."""

    index: int  # type: ignore[assignment]  # the position field shadows tuple.index (unused here)
    signature: str
    event: str
    need: Any


class _Attempt(NamedTuple):
    """A recovery event: position, the fault signature it recovers, the action, whether it
    succeeded, the event id."""

    index: int  # type: ignore[assignment]  # the position field shadows tuple.index (unused here)
    signature: str
    action: str
    success: bool
    event: str


def _faults(policy: CasePolicy, events: Sequence[Mapping[str, Any]], positions: list[int]) -> list[_Fault]:
    out = []
    for i in positions:
        sig = events[i]["signature"]
        out.append(_new(_Fault, (i, sig, events[i]["id"], policy.faults.get(sig, _UNKNOWN))))
    return out


def _attempts(events: Sequence[Mapping[str, Any]], positions: list[int]) -> list[_Attempt]:
    out = []
    for i in positions:
        ev = events[i]
        ok = ev["success"]
        if type(ok) is not bool:
            raise Invalid
        out.append(_new(_Attempt, (i, ev["signature"], ev["action"], ok, ev["id"])))
    return out


def _read_proof(policy: CasePolicy, events: Sequence[Mapping[str, Any]], positions: list[int],
                f: _Facts) -> None:
    """The evidence and claims in event order, into ``f`` (see :class:`_Facts`)."""
    first_seen: dict[str, int] = {}
    cited: dict[tuple[str, str], int] = {}
    bad = None
    bad_at = -1
    for i in positions:
        ev = events[i]
        if ev["kind"] == "evidence":
            e = ev["evidence_id"]
            want = policy.evidence.get(e)
            if "bytes_base64" in ev:  # exactly one of the bytes or their stated SHA-256
                if "sha256" in ev:
                    raise Invalid
                dig = _sha256(_a2b(ev["bytes_base64"], strict_mode=True)).hexdigest()
            else:
                dig = ev["sha256"].lower()
                if dig != want and HEX64_MATCH(dig) is None:  # equal to the lock's: hex already
                    raise Invalid
            if bad is None and want is not None and dig != want:
                bad, bad_at = _changed(e, ev["id"], dig, want), i
            if e not in first_seen:
                first_seen[e] = i
        else:
            cites = ev["evidence"]
            if type(cites) is not list:
                raise Invalid
            if bad is None:
                bad = _cite(policy, ev["claim_id"], cites, ev["id"], first_seen, cited, i)
                if bad is not None:
                    bad_at = i
    f.first_seen, f.cited, f.bad, f.bad_at = first_seen, cited, bad, bad_at
    f.last_proof = positions[-1] if positions else -1
    f.complete = first_seen.keys() >= policy.evidence_ids and cited.keys() >= policy.claim_pairs


def _changed(e: str, eid: str, dig: str, want: str) -> DimensionOutcome:
    return _failed(f"evidence `{e}` at {eid} changed: sha256 {dig[:12]}..., locked {want[:12]}...", eid)


def _cite(policy: CasePolicy, c: Any, cites: list, eid: str, first_seen: Mapping[str, int],
          cited: dict[tuple[str, str], int], i: int) -> DimensionOutcome | None:
    """Record claim ``c``'s citations at position ``i``; the failure when it is unsupported,
    cites nothing, cites evidence the lock does not tie to it or evidence not yet seen."""
    allowed = policy.claim_support.get(c)
    if allowed is None:
        return _failed(f"claim `{c}` at {eid} is not supported by any locked evidence", eid)
    if not cites:
        return _failed(f"claim `{c}` at {eid} cites no evidence", eid)
    for e in cites:
        if e not in allowed:
            return _failed(f"claim `{c}` at {eid} cites evidence `{e}`, " + (
                "which is not locked to support it" if e in policy.evidence
                else "which the lock does not hold"), eid)
        if e not in first_seen:
            return _failed(f"claim `{c}` at {eid} cites evidence `{e}` not seen before it (unseen)", eid)
        if (c, e) not in cited:
            cited[(c, e)] = i
    return None


def _complete_before(policy: CasePolicy, f: _Facts, limit: int) -> bool:
    """Every locked evidence item seen, and cited by each of its claims, before ``limit``."""
    if f.last_proof < limit:  # every position recorded is before the limit
        return f.complete
    seen, cited = f.first_seen, f.cited
    for e in policy.evidence_ids:
        if seen.get(e, limit) >= limit:
            return False
    for p in policy.claim_pairs:
        if cited.get(p, limit) >= limit:
            return False
    return True


_sha256 = hashlib.sha256
_a2b = binascii.a2b_base64


# --------------------------------------------------------------------------- the eight dimensions


def _passed(observation: str, event: str | None = None) -> DimensionOutcome:
    return _new(DimensionOutcome, ("passed", observation, event))


def _failed(observation: str, event: str | None = None) -> DimensionOutcome:
    return _new(DimensionOutcome, ("failed", observation, event))


def _goal_completion(policy: CasePolicy, term: _Facts, late: tuple | None) -> DimensionOutcome:
    """Every required milestone before a completed terminal; an abstention never completes."""
    tid = term.event
    if term.status == "completed":
        if late is None:
            return _new(DimensionOutcome, ("passed", policy.goal_pass, tid))
        milestone, hit = late
        if hit is None:
            return _failed(f"required milestone `{milestone}` never observed", tid)
        return _failed(f"required milestone `{milestone}` first observed at {hit[1]}, after the completed "
                       f"terminal {tid}", hit[1])
    if term.status == "abstained":
        return _failed(f"terminal {tid} abstained (`{term.reason}`); an abstention never completes the goal",
                       tid)
    return _failed("no completed terminal" + (f" (terminal {tid} says none)" if tid else ""), tid)


def _unnecessary_steps(policy: CasePolicy, f: _Facts) -> DimensionOutcome:
    """Every action, recovery actions included, has a locked budget and stays within it;
    the first unknown or over-budget one (counted in the events pass) fails."""
    if f.over is not None:
        a = f.over["action"]
        return _over_budget(a, f.over_count, policy.budgets.get(a), f.over["id"])
    n = f.n_steps
    return _STEPS_PASS[n] if n < len(_STEPS_PASS) else _passed(
        f"{n} action(s), each within its locked budget")


def _over_budget(a: Any, c: int, b: int | None, eid: Any) -> DimensionOutcome:
    if b is None:
        return _failed(f"action `{a}` at {eid} has no locked budget (unknown action)", eid)
    return _failed(f"action `{a}` at {eid} is occurrence {c}, over its locked budget of {b}", eid)



def _recovered(attempts: Sequence[_Attempt], fault: _Fault, need: str, before: int) -> bool:
    """A successful recovery of ``fault`` with the locked action after it and before ``before``."""
    return any(fault.index < a.index < before and a.success and a.signature == fault.signature
               and a.action == need for a in attempts)


def _why_unrecovered(attempts: Sequence[_Attempt], fault: _Fault, need: str) -> str:
    for a in reversed(attempts):
        if a.index > fault.index and a.signature == fault.signature:
            if a.action != need:
                return f"; the recovery at {a.event} used `{a.action}`, locked `{need}`"
            if not a.success:
                return f"; the `{a.action}` recovery at {a.event} did not succeed"
    return ""


def _recovery(faults: Sequence[_Fault], attempts: Sequence[_Attempt], n: int) -> DimensionOutcome:
    """Every fault has locked recoverability; a recoverable one has a later successful recovery
    with the locked action."""
    for f in faults:
        need = f.need
        if need is _UNKNOWN:
            return _failed(f"fault `{f.signature}` at {f.event} has no locked recoverability "
                           "(unknown signature)", f.event)
        if need is not None and not _recovered(attempts, f, need, n):
            return _failed(f"recoverable fault `{f.signature}` at {f.event} has no later successful "
                           f"`{need}` recovery{_why_unrecovered(attempts, f, need)}", f.event)
    return _passed(f"{len(faults)} fault(s); every recoverable one has a later successful locked recovery")


def _repeated_error(policy: CasePolicy, faults: Sequence[_Fault]) -> DimensionOutcome:
    """No fault signature occurs more often than its frozen maximum (unknown ones fail)."""
    counts: dict[str, int] = {}
    for f in faults:
        c = counts[f.signature] = counts.get(f.signature, 0) + 1
        mx = policy.max_faults.get(f.signature)
        if mx is None:
            return _failed(f"fault `{f.signature}` at {f.event} has no frozen maximum (unknown signature)",
                           f.event)
        if c > mx:
            return _failed(f"fault `{f.signature}` at {f.event} is occurrence {c}, above its frozen "
                           f"maximum of {mx}", f.event)
    return _passed(f"{len(faults)} fault(s); no signature above its frozen maximum")


def _state_drift(policy: CasePolicy, last: Mapping[Any, tuple]) -> DimensionOutcome:
    """The last observed value of every required key (read in the events pass) matches the lock."""
    for key, want in policy.required_state:
        got = last.get(key)
        if got is None:
            return _failed(f"required key `{key}` was never observed")
        v, eid = got
        if not (v == want and type(v) is type(want) and type(v) in _SCALARS) and not _same(v, want):
            return _failed(f"required key `{key}` last observed as {_show(v)} at {eid}; "
                           f"locked {_show(want)}", eid)
    return policy.state_passed


def _unresolved_fault(faults: Sequence[_Fault], attempts: Sequence[_Attempt],
                      before: int) -> str | None:
    """The first fault before position ``before`` that is of unknown recoverability or not
    recovered before ``before`` (described), or None."""
    for f in faults:
        if f.index >= before:
            break
        need = f.need
        if need is _UNKNOWN:
            return f"fault `{f.signature}` at {f.event} of unknown recoverability"
        if need is not None and not _recovered(attempts, f, need, before):
            return f"a successful `{need}` recovery of fault `{f.signature}` at {f.event}"
    return None


def _premature_success(policy: CasePolicy, term: _Facts, late: tuple | None, faults: Sequence[_Fault],
                       attempts: Sequence[_Attempt]) -> DimensionOutcome:
    """A completed terminal must follow every prerequisite: the milestones, the recovery of
    every fault before it and faithful evidence."""
    tid = term.event
    if late is not None:
        return _failed(f"completed terminal {tid} precedes required milestone `{late[0]}`", tid)
    unresolved = _unresolved_fault(faults, attempts, term.index) if faults else None
    if unresolved is not None:
        return _failed(f"completed terminal {tid} precedes {unresolved}", tid)
    if term.bad is not None and term.bad_at < term.index:
        return _failed(f"completed terminal {tid} precedes faithful evidence: {term.bad.observation}", tid)
    if not _complete_before(policy, term, term.index):
        return _failed(f"completed terminal {tid} precedes faithful evidence: "
                       f"{_missing_or_uncited(policy, term, term.index).observation}", tid)
    return _PREMATURE_PASS


def _safe_abstention(policy: CasePolicy, term: _Facts, faults: Sequence[_Fault]) -> DimensionOutcome:
    """An abstention needs an allowed reason whose required faults were observed before it;
    a supported one is honest, never success."""
    tid = term.event
    required = policy.reasons.get(term.reason)
    if required is None:
        return _failed(f"abstention reason `{term.reason}` at {tid} is not allowed by the lock", tid)
    seen = {f.signature for f in faults if f.index < term.index}
    lacking = [s for s in required if s not in seen]
    if lacking:
        return _failed(f"abstention `{term.reason}` at {tid} requires fault `{lacking[0]}` observed "
                       "before it; it was not", tid)
    return _passed(f"abstention `{term.reason}` is allowed and its {len(required)} required "
                   "fault(s) were observed before it (honest, never success)", tid)


def _evidence_fidelity(policy: CasePolicy, f: _Facts, n: int) -> DimensionOutcome:
    """No changed, unsupported, unseen, missing or uncited evidence, whatever the terminal
    (seed 003: "Missing, changed, uncited, or unseen evidence fails"; "One failing dimension
    holds the case"): a supported abstention without the locked evidence is failed."""
    if f.bad is not None:
        return f.bad
    if f.complete:
        return policy.evidence_passed
    return _missing_or_uncited(policy, f, n)


def _missing_or_uncited(policy: CasePolicy, proof: _Facts, limit: int) -> DimensionOutcome:
    """The first locked evidence item not seen, or not cited by one of its claims, before ``limit``."""
    for e, its_claims in policy.evidence_claims:
        s = proof.first_seen.get(e)
        if s is None or s >= limit:
            return _failed(f"locked evidence `{e}` was never observed (missing)")
        for c in its_claims:
            j = proof.cited.get((c, e))
            if j is None or j >= limit:
                return _failed(f"locked evidence `{e}` is never cited by its claim `{c}` (uncited)")
    return _passed("")  # pragma: no cover - callers check the subsets first


_outcome_of = itemgetter(0)  # DimensionOutcome.outcome (twice as fast as attrgetter in a map)


def _decide(status: str, outcomes: tuple[DimensionOutcome, ...]) -> str:
    """One failing dimension holds the case; only goal completion is excused, and only for a
    supported abstention (``safely-abstained``, never success)."""
    if status == "completed":
        return "failed" if "failed" in map(_outcome_of, outcomes) else "passed"
    safe = outcomes[_SAFE_ABSTENTION]
    if status == "abstained" and safe.outcome == "passed":
        return "failed" if "failed" in map(_outcome_of, outcomes[1:]) else "safely-abstained"
    return "failed"


# --------------------------------------------------------------------------- helpers and constants


def _show(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    return s if len(s) <= 60 else s[:57] + "..."


def _same(a: Any, b: Any) -> bool:
    ta = type(a)
    if ta is type(b) and (ta is str or ta is int or ta is bool or a is None):
        return a == b
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return False


_SAFE_ABSTENTION = DIMENSIONS.index("safe_abstention")
_SCALARS = frozenset((str, int, bool))
_STEPS_PASS = tuple(_passed(f"{k} action(s), each within its locked budget") for k in range(16))
_NOT_ABSTAINED = {s: f"terminal is {s}, not abstained" for s in STATUSES}
_NOT_COMPLETED = {s: f"terminal is {s}, not completed" for s in STATUSES}
_NO_FAULTS_RECOVERY = _passed("no fault observed; nothing to recover")
_NO_FAULTS_REPEATED = _passed("no fault observed; no signature repeated")
_PREMATURE_PASS = _passed("every milestone, recovery and faithful evidence precedes the completed terminal")
