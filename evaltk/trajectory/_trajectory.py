"""Long-horizon trajectory grader: pre-result lock, eight fail-closed dimensions, three decisions.

Seed 003 ("long-horizon trajectory grading").  A correct or polished final answer
is not enough: the grader decides, separately and from the ordered events a runtime
emitted, eight dimensions against per-case policies that were locked before any
result existed:

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

Decisions: ``passed`` (the only promotion-eligible one), ``safely-abstained``
(an honest terminal state; goal completion stays failed and it never counts as
success) and ``failed`` (everything else).  One failing dimension holds the case
even when its terminal says completed.

Three documents, each with a JSON Schema in ``evaltk/schemas/``: the lock
(``trajectory-lock.schema.json``), the results (``trajectory-results.schema.json``)
and the report (``trajectory-report.schema.json``); the design record the lock
binds by digest has ``trajectory-design.schema.json``.  The formats, the canonical
serialisation behind every digest and the CLI exit codes are in
``docs/trajectory.md``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import (
    DuplicateKeyError,
    EvaltkError,
    SchemaViolation,
    UnreadableInput,
    no_duplicate_keys,
)

__all__ = [
    "DIMENSIONS",
    "DECISIONS",
    "OUTCOMES",
    "EXIT_PASS",
    "EXIT_HOLD",
    "EXIT_LOCK_CHANGED",
    "EXIT_POST_RESULT_LOCK",
    "EXIT_MISSING_CASE",
    "EXIT_UNLOCKED_CASE",
    "TrajectoryBindingError",
    "LockChanged",
    "PostResultLock",
    "MissingCase",
    "UnlockedCase",
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
    "verify_report",
    "ControlResult",
    "NEGATIVE_CONTROLS",
    "run_self_check",
]

#: The eight dimensions, in the seed's order.  Every case is graded on all eight.
DIMENSIONS: tuple[str, ...] = (
    "goal_completion",
    "unnecessary_steps",
    "recovery",
    "repeated_error",
    "state_drift",
    "premature_success",
    "safe_abstention",
    "evidence_fidelity",
)
#: The three case decisions.  Only ``passed`` is promotion-eligible.
DECISIONS: tuple[str, ...] = ("passed", "safely-abstained", "failed")
#: The outcome of one dimension for one case.
OUTCOMES: tuple[str, ...] = ("passed", "failed", "not_applicable")

EXIT_PASS = 0
EXIT_HOLD = 2
EXIT_LOCK_CHANGED = 10
EXIT_POST_RESULT_LOCK = 11
EXIT_MISSING_CASE = 12
EXIT_UNLOCKED_CASE = 13

_LOCK_SCHEMA_ID = "evaltk.trajectory-lock/1"
_RESULTS_SCHEMA_ID = "evaltk.trajectory-results/1"
_REPORT_SCHEMA_ID = "evaltk.trajectory-report/1"
_PREREQUISITES = ("milestones", "recovered_faults", "faithful_evidence")


# --------------------------------------------------------------------------- errors


class TrajectoryBindingError(EvaltkError):
    """The documents are well-formed but do not bind together; ``exit_code`` says how."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)


class LockChanged(TrajectoryBindingError):
    """A digest does not match: the lock, its case policies or the design changed (exit 10)."""

    exit_code = EXIT_LOCK_CHANGED


class PostResultLock(TrajectoryBindingError):
    """The lock is not strictly before the results (exit 11)."""

    exit_code = EXIT_POST_RESULT_LOCK


class MissingCase(TrajectoryBindingError):
    """A locked case has no results (exit 12)."""

    exit_code = EXIT_MISSING_CASE


class UnlockedCase(TrajectoryBindingError):
    """The results hold a case the lock does not (exit 13)."""

    exit_code = EXIT_UNLOCKED_CASE


# --------------------------------------------------------------------------- canonical form


def _canon(x: Any, where: str) -> Any:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: object key {k!r} is not a string.")
            out[k] = _canon(v, f"{where}.{k}")
        return out
    if isinstance(x, list | tuple):
        return [_canon(v, f"{where}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, bool) or x is None or isinstance(x, str | int):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{where}: {x!r} has no canonical JSON form.")
        return int(x) if x.is_integer() else x
    raise TypeError(f"{where}: {type(x).__name__} is not a JSON value.")


def canonical_json(obj: Any) -> bytes:
    """The canonical serialisation every trajectory digest is computed over.

    UTF-8 bytes of JSON with object keys sorted by Unicode code point, no
    whitespace (separators ``,`` and ``:``), non-ASCII characters written as
    themselves (``ensure_ascii=False``; only ``"``, ``\\`` and control characters
    are escaped), integers in plain decimal, a float with an integral value written
    as that integer (``2.0`` as ``2``), other floats in Python's shortest
    round-trip form (``0.1``, ``1e-07``); NaN and infinities are refused.  Arrays
    keep their order.

    Examples
    --------
    >>> canonical_json({"b": [1, 2.0], "a": "é"})
    b'{"a":"\\xc3\\xa9","b":[1,2]}'
    """
    return json.dumps(
        _canon(obj, "$"), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_digest(obj: Any) -> str:
    """Lower-case hex SHA-256 of :func:`canonical_json` of ``obj``.

    Examples
    --------
    >>> sha256_digest({})
    '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'
    """
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def design_digest(design: Mapping[str, Any]) -> str:
    """Digest of a design record: the SHA-256 of its whole canonical serialisation."""
    return sha256_digest(design)


def case_policy_digest(lock: Mapping[str, Any]) -> str:
    """Digest of the lock's ``cases`` object (the case-policy lock)."""
    return sha256_digest(lock["cases"])


def lock_digest(lock: Mapping[str, Any]) -> str:
    """Digest of the lock: its canonical serialisation without the ``lock_digest`` key."""
    return sha256_digest({k: v for k, v in lock.items() if k != "lock_digest"})


def seal_lock(lock: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``lock`` with ``case_inventory`` (when absent), ``case_policy_digest``
    and ``lock_digest`` filled in.  Use it when authoring a lock, before any result exists.

    Examples
    --------
    >>> sealed = seal_lock({"schema": "evaltk.trajectory-lock/1", "cases": {"a": {}}})
    >>> sealed["case_inventory"], sealed["lock_digest"] == lock_digest(sealed)
    (['a'], True)
    """
    out = copy.deepcopy(dict(lock))
    out.setdefault("case_inventory", sorted(out["cases"]))
    out["case_policy_digest"] = case_policy_digest(out)
    out.pop("lock_digest", None)
    out["lock_digest"] = lock_digest(out)
    return out


# --------------------------------------------------------------------------- reading, schemas


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document strictly.

    Raises :class:`~evaltk.errors.UnreadableInput` when the file is missing, not
    UTF-8 or not JSON (``NaN`` and ``Infinity`` included), and
    :class:`~evaltk.errors.SchemaViolation` for a duplicated object key (which
    plain ``json.load`` silently resolves to the last value).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UnreadableInput("file not found", file=str(p)) from None
    except IsADirectoryError:
        raise UnreadableInput("is a directory, not a file", file=str(p)) from None
    except OSError as e:
        raise UnreadableInput(f"cannot be read ({e.strerror})", file=str(p)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnreadableInput(f"not UTF-8 ({e.reason} at byte {e.start})", file=str(p)) from None
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys, parse_constant=_no_constant)
    except DuplicateKeyError as e:
        raise SchemaViolation(f"duplicate object key {e.args[0]!r}", file=str(p)) from None
    except ValueError as e:
        msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
        line = e.lineno if isinstance(e, json.JSONDecodeError) else None
        raise UnreadableInput(f"not JSON: {msg}", file=str(p), record=line) from None


@cache
def _validator(kind: str) -> Any:
    import jsonschema

    text = resources.files("evaltk").joinpath("schemas", f"trajectory-{kind}.schema.json").read_text("utf-8")
    schema = json.loads(text)  # the schemas themselves are checked against the metaschema in the tests
    # The trajectory schemas are not recursive: resolving every local `$ref` once here saves
    # jsonschema a reference lookup per visited node (about a third of the validation time).
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if (isinstance(ref, str) and ref.startswith("#/$defs/")
                    and set(node) <= {"$ref", "description", "title", "$comment"}):
                return {**inline(defs[ref[len("#/$defs/"):]]),
                        **{k: v for k, v in node.items() if k != "$ref"}}
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return jsonschema.Draft202012Validator(inline(schema))


def _field_path(parts: Sequence[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _describe_error(err: Any) -> tuple[str, list[Any]]:
    path = list(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    inst = err.instance
    if err.validator == "required" and isinstance(inst, dict):
        missing = [k for k in err.validator_value if k not in inst]
        if missing:
            if schema.get("x-error-additional") == "unknown dimension name":
                return (f"dimension `{missing[0]}` is missing: every case must lock all eight "
                        f"dimensions ({', '.join(DIMENSIONS)})"), path + [missing[0]]
            return f"required field `{missing[0]}` is missing", path + [missing[0]]
    if err.validator == "additionalProperties" and isinstance(inst, dict):
        allowed = set(schema.get("properties", {}))
        extra = [k for k in inst if k not in allowed]
        if extra:
            if schema.get("x-error-additional") == "unknown dimension name":
                return (f"unknown dimension name `{extra[0]}`; allowed: {', '.join(DIMENSIONS)}",
                        path + [extra[0]])
            return f"unknown field `{extra[0]}`; allowed: {', '.join(sorted(allowed))}", path + [extra[0]]
    if "x-error" in schema:
        shown = json.dumps(inst, ensure_ascii=False)[:80]
        if "timestamp" in schema["x-error"] and isinstance(inst, str) and _NO_ZONE.fullmatch(inst):
            return f"timestamp {shown} has no zone (add Z or an offset such as +02:00)", path
        return f"{shown} {schema['x-error']}", path
    return err.message, path


def validate_document(doc: Any, kind: str, *, file: str | None = None) -> None:
    """Validate ``doc`` against the trajectory JSON Schema ``kind``.

    ``kind`` is one of ``"lock"``, ``"results"``, ``"report"``, ``"design"``.  Raises
    :class:`~evaltk.errors.SchemaViolation` naming the file, the case (as the record)
    and the field of the most specific violation.
    """
    if kind not in ("lock", "results", "report", "design"):
        raise ValueError(f"`kind` must be one of lock, results, report, design; got {kind!r}.")
    v = _validator(kind)
    best = None
    for err in v.iter_errors(doc):
        if best is None or len(err.absolute_path) > len(best.absolute_path):
            best = err
    if best is None:
        return
    msg, path = _describe_error(best)
    record = None
    if len(path) >= 2 and path[0] == "cases" and isinstance(path[1], str):
        record, path = path[1], path[2:]
        if len(path) >= 2 and path[0] == "events" and isinstance(path[1], int):
            try:
                evid = doc["cases"][record]["events"][path[1]]["id"]
                if isinstance(evid, str):
                    msg = f"{msg} (event `{evid}`)"
            except (KeyError, IndexError, TypeError):
                pass
    raise SchemaViolation(msg, file=file, record=record, field=_field_path(path) or None)


# --------------------------------------------------------------------------- case policy


_HEX64_MATCH = re.compile(r"[0-9a-fA-F]{64}").fullmatch
_NO_ZONE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")
_TS = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)


def _parse_ts(value: Any, *, what: str, record: Any = None, field: str | None = None,
              file: str | None = None) -> datetime:
    if not isinstance(value, str):
        raise SchemaViolation(f"{what} must be a timestamp string; got {type(value).__name__}",
                              file=file, record=record, field=field)
    m = _TS.fullmatch(value)
    if m is None:
        if _NO_ZONE.fullmatch(value):
            detail = "has no zone (add Z or an offset such as +02:00)"
        else:
            detail = "is not an RFC 3339 timestamp with a zone"
        raise SchemaViolation(f"{what} {value!r} {detail}", file=file, record=record, field=field)
    frac = (m.group(3) or "")[:6].ljust(6, "0")
    zone = m.group(4)
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        return datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}.{frac}{zone}")
    except ValueError as e:
        raise SchemaViolation(f"{what} {value!r} is not a valid date-time ({e})",
                              file=file, record=record, field=field) from None


class CasePolicy(NamedTuple):
    """One case's pre-result authority, compiled from the lock for fast grading.

    Build it with :func:`compile_case_policy`; it is immutable.
    """

    case_id: str
    milestones: tuple[str, ...]
    budgets: Mapping[str, int]
    faults: Mapping[str, str | None]
    max_faults: Mapping[str, int]
    required_state: tuple[tuple[str, Any], ...]
    reasons: Mapping[str, tuple[str, ...]]
    evidence: Mapping[str, str]
    evidence_claims: tuple[tuple[str, tuple[str, ...]], ...]
    claim_support: Mapping[str, frozenset[str]]
    evidence_ids: frozenset[str]
    claim_pairs: frozenset[tuple[str, str]]
    goal_pass: str
    state_pass: str
    evidence_pass: str


def compile_case_policy(case_id: str, policy: Mapping[str, Any]) -> CasePolicy:
    """Compile one case's lock entry (the object under ``cases.<id>``) into a :class:`CasePolicy`.

    The entry is validated against the lock schema's case policy first, so an
    unknown or missing dimension name, a non-hex digest, a negative budget and so
    on raise :class:`~evaltk.errors.SchemaViolation` naming the case and field.
    """
    validate_document(
        {"schema": _LOCK_SCHEMA_ID, "design_digest": "0" * 64, "locked_at": "2000-01-01T00:00:00Z",
         "case_inventory": [case_id], "case_policy_digest": "0" * 64, "cases": {case_id: policy},
         "lock_digest": "0" * 64},
        "lock",
    )
    return _compile(case_id, policy)


def _compile(case_id: str, p: Mapping[str, Any]) -> CasePolicy:
    milestones = tuple(p["goal_completion"]["required_milestones"])
    budgets = {a: int(b["max_occurrences"]) for a, b in p["unnecessary_steps"]["action_budgets"].items()}
    faults = {s: (f["recovery_action"] if f["recoverable"] else None)
              for s, f in p["recovery"]["faults"].items()}
    max_faults = {s: int(m) for s, m in p["repeated_error"]["max_occurrences"].items()}
    required_state = tuple(p["state_drift"]["required_state"].items())
    reasons = {r: tuple(v["required_faults"]) for r, v in p["safe_abstention"]["allowed_reasons"].items()}
    ev = p["evidence_fidelity"]["evidence"]
    evidence = {e: v["sha256"].lower() for e, v in ev.items()}
    evidence_claims = tuple((e, tuple(v["claims"])) for e, v in ev.items())
    support: dict[str, set[str]] = {}
    for e, claims in evidence_claims:
        for c in claims:
            support.setdefault(c, set()).add(e)
    return CasePolicy(
        case_id=case_id,
        milestones=milestones,
        budgets=budgets,
        faults=faults,
        max_faults=max_faults,
        required_state=required_state,
        reasons=reasons,
        evidence=evidence,
        evidence_claims=evidence_claims,
        claim_support={c: frozenset(es) for c, es in support.items()},
        evidence_ids=frozenset(evidence),
        claim_pairs=frozenset((c, e) for e, cs in evidence_claims for c in cs),
        goal_pass=(f"all {len(milestones)} required milestone(s) occur before the completed terminal"
                   if milestones else "no milestone is locked; the terminal is completed"),
        state_pass=(f"the last observed value of all {len(required_state)} required key(s) matches the lock"
                    if required_state else "no terminal invariant is locked"),
        evidence_pass=(f"all {len(evidence)} locked evidence item(s) seen with the locked SHA-256 "
                       "before the claims that cite them, and every supported claim cites them"
                       if evidence else "no evidence is locked and no claim was made"),
    )


# --------------------------------------------------------------------------- grading


class DimensionOutcome(NamedTuple):
    """One dimension of one case: ``outcome`` (passed / failed / not_applicable), the
    ``observation`` that decided it and the ``event`` id it points at (or None)."""

    outcome: str
    observation: str
    event: str | None


class CaseGrade(NamedTuple):
    """The grade of one case.

    Attributes
    ----------
    case_id : str
    decision : str
        ``passed``, ``safely-abstained`` or ``failed``.
    terminal : tuple
        ``(status, event_id, reason)``; status is ``completed``, ``abstained`` or ``none``.
    dimensions : tuple of (outcome, observation, event) triples
        One per name in :data:`DIMENSIONS`, in that order (plain tuples, kept light for
        speed; :meth:`dimension` returns one as a :class:`DimensionOutcome`).
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
        return tuple(d for d, o in zip(DIMENSIONS, self.dimensions, strict=True) if o[0] == "failed")

    def dimension(self, name: str) -> DimensionOutcome:
        """The outcome of dimension ``name``."""
        try:
            return DimensionOutcome(*self.dimensions[DIMENSIONS.index(name)])
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
                d: {"outcome": o[0], "observation": o[1], "event": o[2]}
                for d, o in zip(DIMENSIONS, self.dimensions, strict=True)
            },
        }


_KINDS = frozenset(("action", "milestone", "fault", "recovery", "state", "evidence", "claim", "terminal"))
_STATUSES = ("completed", "abstained", "none")


def _bad(cid: str, field: str, msg: str) -> SchemaViolation:
    return SchemaViolation(msg, record=cid, field=field)


def _str_field(ev: Mapping[str, Any], key: str, cid: str, i: int, eid: str) -> str:
    v = ev.get(key)
    if type(v) is not str or not v:
        raise _bad(cid, f"events[{i}].{key}",
                   f"event `{eid}` needs `{key}` as a non-empty string; got {v!r}")
    return v


class _Invalid(Exception):
    """Raised by the grading pass on an anomaly; :func:`_check_events` then names the problem."""


def _ts_or_invalid(value: Any) -> datetime:
    try:
        return _parse_ts(value, what="")
    except SchemaViolation:
        raise _Invalid from None


def _check_events(cid: str, events: Any, *, last: dict[str, Any] | None = None) -> datetime | None:
    """Check a case's events in full and raise the first problem, named precisely
    (:class:`~evaltk.errors.SchemaViolation` with the case as record and the field).

    Returns the earliest event timestamp (None when no event has ``at``)."""
    if type(events) is not list:
        raise _bad(cid, "events", f"`events` must be a list; got {type(events).__name__}")
    ids: dict[str, int] = {}
    last_seq = -1
    last_at: datetime | None = None
    first_at: datetime | None = None
    term_id = None
    for i, ev in enumerate(events):
        if type(ev) is not dict:
            raise _bad(cid, f"events[{i}]", f"an event must be an object; got {type(ev).__name__}")
        eid = ev.get("id")
        if type(eid) is not str or not eid:
            raise _bad(cid, f"events[{i}].id", f"`id` must be a non-empty string; got {eid!r}")
        if eid in ids:
            raise _bad(cid, f"events[{i}].id",
                       f"duplicate event id `{eid}` (also events[{ids[eid]}])")
        ids[eid] = i
        seq = ev.get("seq")
        if type(seq) is not int or seq < 0:
            raise _bad(cid, f"events[{i}].seq",
                       f"event `{eid}`: `seq` must be a non-negative integer; got {seq!r}")
        if seq <= last_seq:
            raise _bad(cid, f"events[{i}].seq",
                       f"event `{eid}` is out of order: seq {seq} does not follow {last_seq}")
        last_seq = seq
        if "at" in ev:
            at = ev["at"]
            t = _parse_ts(at, what=f"event `{eid}`: `at`", record=cid, field=f"events[{i}].at")
            if last_at is not None and t < last_at:
                raise _bad(cid, f"events[{i}].at",
                           f"event `{eid}` is out of order: at {at} is earlier than the event before it")
            if first_at is None:
                first_at = t
            last_at = t
        kind = ev.get("kind")
        if kind not in _KINDS:
            raise _bad(cid, f"events[{i}].kind",
                       f"event `{eid}`: unknown kind {kind!r}; allowed: {', '.join(sorted(_KINDS))}")
        for key in _REQUIRED[kind]:
            _str_field(ev, key, cid, i, eid)
        if kind == "evidence":
            b64, dig = ev.get("bytes_base64"), ev.get("sha256")
            if ("bytes_base64" in ev) == ("sha256" in ev):
                raise _bad(cid, f"events[{i}]",
                           f"evidence event `{eid}` must carry exactly one of `bytes_base64` or `sha256`")
            if "bytes_base64" in ev:
                try:
                    if type(b64) is not str:
                        raise ValueError
                    _a2b(b64, strict_mode=True)
                except (binascii.Error, ValueError):
                    raise _bad(cid, f"events[{i}].bytes_base64",
                               f"evidence event `{eid}`: `bytes_base64` is not valid base64 "
                               "(RFC 4648, padded)") from None
            elif type(dig) is not str or _HEX64_MATCH(dig) is None:
                raise _bad(cid, f"events[{i}].sha256",
                           f"evidence event `{eid}`: `sha256` {dig!r} is not 64 hexadecimal digits")
        elif kind == "claim":
            cites = ev.get("evidence")
            if type(cites) is not list or any(type(x) is not str for x in cites):
                raise _bad(cid, f"events[{i}].evidence",
                           f"claim event `{eid}`: `evidence` must be a list of evidence ids")
        elif kind == "state":
            kv = ev.get("state")
            if type(kv) is not dict or not kv:
                raise _bad(cid, f"events[{i}].state",
                           f"state event `{eid}`: `state` must be a non-empty object")
        elif kind == "recovery":
            ok = ev.get("success")
            if type(ok) is not bool:
                raise _bad(cid, f"events[{i}].success",
                           f"recovery event `{eid}`: `success` must be true or false; got {ok!r}")
        elif kind == "terminal":
            if term_id is not None:
                raise _bad(cid, f"events[{i}]",
                           f"second terminal event `{eid}` (the first was `{term_id}`)")
            term_id = eid
            st = ev.get("status")
            if st not in _STATUSES:
                raise _bad(cid, f"events[{i}].status",
                           f"terminal event `{eid}`: `status` must be completed, abstained or none; "
                           f"got {st!r}")
            if st == "abstained":
                _str_field(ev, "reason", cid, i, eid)
    if last is not None:
        last[cid] = last_at
    return first_at


_SCAN_ERRORS = (_Invalid, KeyError, TypeError, AttributeError, ValueError, IndexError, binascii.Error)
_REQUIRED: dict[str, tuple[str, ...]] = {
    "action": ("action",), "milestone": ("milestone",), "fault": ("signature",),
    "recovery": ("signature", "action"), "state": (), "evidence": ("evidence_id",),
    "claim": ("claim_id",), "terminal": (),
}
_a2b = binascii.a2b_base64
_sha256 = hashlib.sha256


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


def _recovered(recs: list, i: int, sig: str, need: str, before: int) -> bool:
    for j, rsig, act, ok, _ in recs:
        if i < j < before and ok and rsig == sig and act == need:
            return True
    return False


def _why_unrecovered(recs: list, i: int, sig: str, need: str) -> str:
    for j, rsig, act, ok, reid in reversed(recs):
        if j > i and rsig == sig:
            if act != need:
                return f"; the recovery at {reid} used `{act}`, locked `{need}`"
            if not ok:
                return f"; the `{act}` recovery at {reid} did not succeed"
    return ""


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
        _check_events(cid, events)  # names the malformed event and field
        raise  # pragma: no cover - the events were well-formed: a bug, reported as such


def _grade(policy: CasePolicy, events: Sequence[Mapping[str, Any]], cid: str) -> CaseGrade:
    # One pass over the events checks the rules a schema cannot (order, duplicate ids, zones,
    # digests, base64, one terminal) and decides what can be decided in order: budgets, digests,
    # claims against the evidence seen so far.  Structural types are the schema's business
    # (checked once per document at load); odd types fail closed (an id of the wrong type never
    # matches the lock) and, where a wrong type could make a case pass (`success`, `status`),
    # are checked here.  Any anomaly raises, and grade_case hands over to _check_events.
    (_, milestones, budgets, pfaults, maxima, required_state, reasons, expected, _, support,
     evidence_ids, claim_pairs, goal_pass, state_pass, evidence_pass) = policy
    ids: set = set()
    add_id = ids.add
    last_seq = -1
    last_at = first_at = None
    n = len(events)
    ti = n
    tstatus = treason = tid = None
    counts: dict = {}
    nsteps = 0
    step = None
    miles: dict = {}
    faults: list = []
    recs: list = []
    state: dict = {}
    first_seen: dict = {}
    cited: dict = {}
    ev_bad = None  # (index, outcome) of the first evidence or claim failure
    pre_complete = False  # at a completed terminal: every locked evidence seen and claim cited
    for i, ev in enumerate(events):
        eid = ev["id"]
        seq = ev["seq"]
        if seq <= last_seq:
            raise _Invalid
        last_seq = seq
        add_id(eid)
        if "at" in ev:
            t = _ts_or_invalid(ev["at"])
            if last_at is not None and t < last_at:
                raise _Invalid
            if first_at is None:
                first_at = t
            last_at = t
        kind = ev["kind"]
        if kind == "action":
            a = ev["action"]
            nsteps += 1
            c = counts[a] = counts.get(a, 0) + 1
            if step is None:
                b = budgets.get(a)
                if b is None or c > b:
                    step = _over_budget(a, c, b, eid)
        elif kind == "milestone":
            m = ev["milestone"]
            if m not in miles:
                miles[m] = (i, eid)
        elif kind == "evidence":
            e = ev["evidence_id"]
            want = expected.get(e)
            if "bytes_base64" in ev:
                if "sha256" in ev:
                    raise _Invalid
                dig = _sha256(_a2b(ev["bytes_base64"], strict_mode=True)).hexdigest()
            else:
                dig = ev["sha256"].lower()
                if dig != want and _HEX64_MATCH(dig) is None:  # equal to the lock's: hex already
                    raise _Invalid
            if ev_bad is None:
                if want is not None and dig != want:
                    ev_bad = (i, ("failed", f"evidence `{e}` at {eid} changed: sha256 {dig[:12]}..., "
                                  f"locked {want[:12]}...", eid))
            if e not in first_seen:
                first_seen[e] = i
        elif kind == "claim":
            cites = ev["evidence"]
            c = ev["claim_id"]
            if type(cites) is not list:
                raise _Invalid
            if ev_bad is None:
                allowed = support.get(c)
                if allowed is None:
                    ev_bad = (i, ("failed", f"claim `{c}` at {eid} is not supported by any locked "
                                  "evidence", eid))
                elif not cites:
                    ev_bad = (i, ("failed", f"claim `{c}` at {eid} cites no evidence", eid))
                else:
                    for e in cites:
                        if e not in allowed:
                            ev_bad = (i, ("failed", f"claim `{c}` at {eid} cites evidence `{e}`, " + (
                                "which is not locked to support it" if e in expected
                                else "which the lock does not hold"), eid))
                            break
                        if e not in first_seen:
                            ev_bad = (i, ("failed", f"claim `{c}` at {eid} cites evidence `{e}` not seen "
                                          "before it (unseen)", eid))
                            break
                        if (c, e) not in cited:
                            cited[(c, e)] = i
        elif kind == "state":
            for k, v in ev["state"].items():
                state[k] = (v, eid)
        elif kind == "terminal":
            st = ev["status"]
            if tstatus is not None or (st != "completed" and st != "abstained" and st != "none"):
                raise _Invalid
            ti, tstatus, tid = i, st, eid
            if st == "completed":
                pre_complete = (first_seen.keys() >= evidence_ids
                                and cited.keys() >= claim_pairs)
            elif st == "abstained":
                treason = ev["reason"]
        elif kind == "fault":
            faults.append((i, ev["signature"], eid))
        elif kind == "recovery":
            ok = ev["success"]
            if type(ok) is not bool:
                raise _Invalid
            a = ev["action"]
            recs.append((i, ev["signature"], a, ok, eid))
            nsteps += 1
            c = counts[a] = counts.get(a, 0) + 1
            if step is None:
                b = budgets.get(a)
                if b is None or c > b:
                    step = _over_budget(a, c, b, eid)
        else:
            raise _Invalid
    if len(ids) != n:
        raise _Invalid
    if tstatus is None:
        tstatus = "none"
    completed = tstatus == "completed"
    abstained = tstatus == "abstained"

    # 1. goal completion: every required milestone before a completed terminal.
    late = None  # (milestone, hit) of the first required milestone not before the terminal
    for m in milestones:
        hit = miles.get(m)
        if hit is None or hit[0] > ti:
            late = (m, hit)
            break
    if completed:
        if late is None:
            goal = ("passed", goal_pass, tid)
        elif late[1] is None:
            goal = ("failed", f"required milestone `{late[0]}` never observed", tid)
        else:
            goal = ("failed", f"required milestone `{late[0]}` first observed at {late[1][1]}, after the "
                    f"completed terminal {tid}", late[1][1])
    elif abstained:
        goal = ("failed", f"terminal {tid} abstained (`{treason}`); an abstention never completes the goal",
                tid)
    else:
        goal = ("failed", "no completed terminal" + (f" (terminal {tid} says none)" if tid else ""), tid)

    # 2. unnecessary steps: decided in the pass (recovery actions included).
    if step is None:
        step = ("passed", _STEPS_PASS[nsteps] if nsteps < 16
                else f"{nsteps} action(s), each within its locked budget", None)

    # 3. recovery and 4. repeated error (one pass over the faults).
    recovery = repeated = None
    unresolved = None  # premature success: a fault before the terminal not recovered before it
    if faults:
        fcount: dict[str, int] = {}
        for i, sig, eid in faults:
            need = pfaults.get(sig, _UNKNOWN)
            if need is _UNKNOWN:
                if recovery is None:
                    recovery = ("failed", f"fault `{sig}` at {eid} has no locked recoverability "
                                "(unknown signature)", eid)
                if unresolved is None and i < ti:
                    unresolved = f"fault `{sig}` at {eid} of unknown recoverability"
            elif need is not None:
                if recovery is None and not _recovered(recs, i, sig, need, n):
                    recovery = ("failed", f"recoverable fault `{sig}` at {eid} has no later successful "
                                f"`{need}` recovery{_why_unrecovered(recs, i, sig, need)}", eid)
                if unresolved is None and i < ti and not _recovered(recs, i, sig, need, ti):
                    unresolved = f"a successful `{need}` recovery of fault `{sig}` at {eid}"
            if repeated is None:
                c = fcount[sig] = fcount.get(sig, 0) + 1
                mx = maxima.get(sig)
                if mx is None:
                    repeated = ("failed", f"fault `{sig}` at {eid} has no frozen maximum (unknown signature)",
                                eid)
                elif c > mx:
                    repeated = ("failed", f"fault `{sig}` at {eid} is occurrence {c}, above its frozen "
                                f"maximum of {mx}", eid)
        if recovery is None:
            recovery = ("passed", f"{len(faults)} fault(s); every recoverable one has a later successful "
                        "locked recovery", None)
        if repeated is None:
            repeated = ("passed", f"{len(faults)} fault(s); no signature above its frozen maximum", None)
    else:
        recovery = _NO_FAULTS_RECOVERY
        repeated = _NO_FAULTS_REPEATED

    # 5. state drift: the last observed value of every required key matches.
    drift = None
    for key, want in required_state:
        got = state.get(key)
        if got is None:
            drift = ("failed", f"required key `{key}` was never observed", None)
            break
        v = got[0]
        if not (v == want and type(v) is type(want) and type(v) in _SCALARS) and not _same(v, want):
            drift = ("failed", f"required key `{key}` last observed as {_show(v)} at {got[1]}; "
                     f"locked {_show(want)}", got[1])
            break
    if drift is None:
        drift = ("passed", state_pass, None)

    # 8. evidence fidelity: changed, unseen or unsupported as found in the pass; then missing or
    # uncited (not required of an abstention, which makes no claim the evidence could support).
    if ev_bad is not None:
        fidelity = ev_bad[1]
    elif abstained:
        fidelity = _ABSTAINED_EVIDENCE_PASS
    elif first_seen.keys() >= evidence_ids and cited.keys() >= claim_pairs:
        fidelity = ("passed", evidence_pass, None)
    else:
        fidelity = _missing_or_uncited(policy, first_seen, cited, n)

    # 6. premature success: a completed terminal before any prerequisite.
    if completed:
        if late is not None:
            premature = ("failed", f"completed terminal {tid} precedes required milestone `{late[0]}`", tid)
        elif unresolved is not None:
            premature = ("failed", f"completed terminal {tid} precedes {unresolved}", tid)
        elif ev_bad is not None and ev_bad[0] < ti:
            premature = ("failed", f"completed terminal {tid} precedes faithful evidence: {ev_bad[1][1]}", tid)
        elif not pre_complete:
            premature = ("failed", f"completed terminal {tid} precedes faithful evidence: "
                         f"{_missing_or_uncited(policy, first_seen, cited, ti)[1]}", tid)
        else:
            premature = _PREMATURE_PASS
    else:
        premature = ("not_applicable", _NOT_COMPLETED[tstatus], tid)

    # 7. safe abstention: an allowed reason whose required faults were observed before it.
    if abstained:
        required = reasons.get(treason)
        if required is None:
            safe = ("failed", f"abstention reason `{treason}` at {tid} is not allowed by the lock", tid)
        else:
            seen = {sig for i, sig, _ in faults if i < ti}
            lacking = [s for s in required if s not in seen]
            if lacking:
                safe = ("failed", f"abstention `{treason}` at {tid} requires fault `{lacking[0]}` observed "
                        "before it; it was not", tid)
            else:
                safe = ("passed", f"abstention `{treason}` is allowed and its {len(required)} required "
                        "fault(s) were observed before it (honest, never success)", tid)
    else:
        safe = ("not_applicable", _NOT_ABSTAINED[tstatus], tid)

    # One failing dimension holds the case; only goal completion is excused for a safe abstention.
    if completed:
        decision = "failed" if "failed" in (goal[0], step[0], recovery[0], repeated[0], drift[0],
                                            premature[0], fidelity[0]) else "passed"
    elif abstained and safe[0] == "passed":
        decision = "failed" if "failed" in (step[0], recovery[0], repeated[0], drift[0], premature[0],
                                            fidelity[0]) else "safely-abstained"
    else:
        decision = "failed"
    return _tuple_new(CaseGrade, (cid, decision, (tstatus, tid, treason),
                                  (goal, step, recovery, repeated, drift, premature, safe, fidelity),
                                  first_at))


def _over_budget(a: Any, c: int, b: int | None, eid: Any) -> tuple:
    if b is None:
        return ("failed", f"action `{a}` at {eid} has no locked budget (unknown action)", eid)
    return ("failed", f"action `{a}` at {eid} is occurrence {c}, over its locked budget of {b}", eid)


def _missing_or_uncited(pol: CasePolicy, first_seen: Mapping[str, int],
                        cited: Mapping[tuple[str, str], int], limit: int) -> tuple:
    """The first locked evidence item not seen, or not cited by one of its claims, before ``limit``."""
    for e, its_claims in pol.evidence_claims:
        s = first_seen.get(e)
        if s is None or s >= limit:
            return ("failed", f"locked evidence `{e}` was never observed (missing)", None)
        for c in its_claims:
            j = cited.get((c, e))
            if j is None or j >= limit:
                return ("failed", f"locked evidence `{e}` is never cited by its claim `{c}` (uncited)", None)
    return ("passed", "", None)  # pragma: no cover - callers check the subsets first



_tuple_new = tuple.__new__
_NOT_ABSTAINED = {s: f"terminal is {s}, not abstained" for s in _STATUSES}
_NOT_COMPLETED = {s: f"terminal is {s}, not completed" for s in _STATUSES}
_UNKNOWN = object()
_SCALARS = frozenset((str, int, bool))
_STEPS_PASS = tuple(f"{k} action(s), each within its locked budget" for k in range(16))
_NO_FAULTS_RECOVERY = ("passed", "no fault observed; nothing to recover", None)
_NO_FAULTS_REPEATED = ("passed", "no fault observed; no signature repeated", None)
_PREMATURE_PASS = (
    "passed", "every milestone, recovery and faithful evidence precedes the completed terminal", None)
_ABSTAINED_EVIDENCE_PASS = (
    "passed", "no claim rests on missing, changed or unseen evidence; the case abstained, so the "
    "locked evidence is not required", None)


# --------------------------------------------------------------------------- cohort


@dataclass(frozen=True)
class CohortReport:
    """The graded cohort: bindings, one :class:`CaseGrade` per locked case, the summary.

    ``exit_code`` is 0 only when every locked case passed, 2 (an honest hold) otherwise.
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
    def exit_code(self) -> int:
        return EXIT_PASS if self.all_passed else EXIT_HOLD

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
            "decision": "pass" if self.all_passed else "hold",
            "exit_code": self.exit_code,
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
    """Check that lock, results (and design) bind together, then grade every locked case.

    Checks, in this order (the first failure raises):

    1. each document against its JSON Schema, then the results' events (duplicate
       ids, order, zones, digests, base64) and the lock's inventory against its
       cases: :class:`~evaltk.errors.SchemaViolation` (CLI exit 65);
    2. the lock's own digest, its case-policy digest, the design digest (when the
       design is given) and the lock digest the results were made under:
       :class:`LockChanged` (exit 10);
    3. the lock strictly before the results timestamp and before every event
       timestamp: :class:`PostResultLock` (exit 11);
    4. every locked case present in the results: :class:`MissingCase` (exit 12);
    5. no case in the results that the lock does not hold: :class:`UnlockedCase` (exit 13).

    Then every locked case is graded with :func:`grade_case`.

    Examples
    --------
    >>> from pathlib import Path
    >>> ex = Path("data/examples/trajectory")
    >>> if ex.is_dir():
    ...     r = grade_files(ex / "lock.json", ex / "results-pass.json", design=ex / "design.json")
    ...     assert r.exit_code == 0
    """
    validate_document(lock, "lock", file=lock_file)
    validate_document(results, "results", file=results_file)
    if design is not None:
        validate_document(design, "design", file=design_file)
    inventory = list(lock["case_inventory"])
    if set(inventory) != set(lock["cases"]):
        only_inv = sorted(set(inventory) - set(lock["cases"]))
        only_cases = sorted(set(lock["cases"]) - set(inventory))
        raise SchemaViolation(
            f"`case_inventory` and `cases` differ (only in the inventory: {only_inv}; only in cases: "
            f"{only_cases})", file=lock_file, field="case_inventory")
    first_at: dict[str, datetime | None] = {}
    last_at: dict[str, Any] = {}
    for cid, case in results["cases"].items():
        try:
            first_at[cid] = _check_events(cid, case["events"], last=last_at)
        except SchemaViolation as e:
            raise SchemaViolation(e.detail, file=results_file, record=cid, field=e.field) from None
    locked_at = _parse_ts(lock["locked_at"], what="`locked_at`", file=lock_file, field="locked_at")
    results_at = _parse_ts(results["results_at"], what="`results_at`", file=results_file,
                           field="results_at")
    for cid, t in last_at.items():  # results cannot predate their own events
        if t is not None and t > results_at:
            raise SchemaViolation(f"an event is stamped {t.isoformat()}, after results_at "
                                  f"{results['results_at']}: the results predate their own events",
                                  file=results_file, record=cid, field="events[].at")

    # 2. digests
    got = lock_digest(lock)
    if got != lock["lock_digest"].lower():
        raise LockChanged(
            f"{lock_file or 'lock'}: lock changed: its content hashes to {got}, but `lock_digest` "
            f"records {lock['lock_digest']}")
    got = case_policy_digest(lock)
    if got != lock["case_policy_digest"].lower():
        raise LockChanged(
            f"{lock_file or 'lock'}: case policies changed: `cases` hashes to {got}, but "
            f"`case_policy_digest` records {lock['case_policy_digest']}")
    design_checked = False
    if design is not None:
        got = design_digest(design)
        if got != lock["design_digest"].lower():
            raise LockChanged(
                f"{design_file or 'design'}: design changed: it hashes to {got}, but the lock binds "
                f"`design_digest` {lock['design_digest']}")
        design_checked = True
    if results["lock_digest"].lower() != lock["lock_digest"].lower():
        raise LockChanged(
            f"{results_file or 'results'}: the results were made under lock {results['lock_digest']}, "
            f"not this lock ({lock['lock_digest']})")

    # 3. the lock strictly precedes the results
    if not locked_at < results_at:
        raise PostResultLock(
            f"post-result lock: locked_at {lock['locked_at']} is not strictly before results_at "
            f"{results['results_at']}")
    for cid in sorted(first_at):
        t = first_at[cid]
        if t is not None and not locked_at < t:
            raise PostResultLock(
                f"post-result lock: case `{cid}` has events at {t.isoformat()}, not after locked_at "
                f"{lock['locked_at']}")

    # 4./5. the exact case inventory
    missing = [c for c in inventory if c not in results["cases"]]
    if missing:
        raise MissingCase(
            f"locked case(s) missing from the results: {', '.join(missing)}")
    unlocked = sorted(c for c in results["cases"] if c not in lock["cases"])
    if unlocked:
        raise UnlockedCase(f"case(s) in the results that the lock does not hold: {', '.join(unlocked)}")

    grades = []
    for cid in inventory:
        pol = _compile(cid, lock["cases"][cid])
        grades.append(grade_case(pol, results["cases"][cid]["events"], case_id=cid))
    bindings = {
        "design_digest": lock["design_digest"].lower(),
        "design_checked": design_checked,
        "lock_digest": lock["lock_digest"].lower(),
        "case_policy_digest": lock["case_policy_digest"].lower(),
        "case_inventory": inventory,
        "locked_at": lock["locked_at"],
        "results_at": results["results_at"],
    }
    return CohortReport(bindings=bindings, cases=tuple(grades))


def grade_files(lock: str | os.PathLike[str], results: str | os.PathLike[str], *,
                design: str | os.PathLike[str] | None = None) -> CohortReport:
    """Read the lock, results and (optional) design record from disk and :func:`grade_cohort` them."""
    lock_doc = read_json(lock)
    results_doc = read_json(results)
    design_doc = read_json(design) if design is not None else None
    return grade_cohort(lock_doc, results_doc, design=design_doc, lock_file=str(lock),
                        results_file=str(results), design_file=None if design is None else str(design))


def verify_report(report: Mapping[str, Any], lock: Mapping[str, Any], results: Mapping[str, Any], *,
                  design: Mapping[str, Any] | None = None) -> None:
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


def _write_json(path: str | os.PathLike[str], doc: Any) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False, allow_nan=False)
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------- negative controls


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
    # a supported abstention: the tracker is down (non-recoverable) and the agent says so
    r["cases"]["close-ticket"]["events"] = [
        {"id": "c1", "seq": 1, "kind": "action", "action": "search_tickets"},
        {"id": "c2", "seq": 2, "kind": "fault", "signature": "tracker_down"},
        {"id": "c3", "seq": 3, "kind": "state", "state": {"ticket.status": "closed", "ticket.assignee": None}},
        {"id": "c4", "seq": 4, "kind": "terminal", "status": "abstained", "reason": "tracker_unavailable"}]


class _Control(NamedTuple):
    name: str
    mutate: Callable[[dict, dict, dict], None]
    exit_code: int
    decision: str | None  # expected decision of the planted case, when graded
    held_by: tuple[str, ...]  # expected failed dimensions of the planted case
    message: str  # expected fragment of the error, when the run stops before grading


#: The fourteen planted failures of seed 003, each with the exit code and reason that shows it red.
NEGATIVE_CONTROLS: tuple[_Control, ...] = (
    _Control("final-answer-only mask", _mask_final_answer, EXIT_HOLD, "failed",
             ("goal_completion", "state_drift", "premature_success", "evidence_fidelity"), ""),
    _Control("excess step", _excess_step, EXIT_HOLD, "failed", ("unnecessary_steps",), ""),
    _Control("unresolved recovery", _unresolved_recovery, EXIT_HOLD, "failed",
             ("recovery", "premature_success"), ""),
    _Control("repeated error", _repeated_error, EXIT_HOLD, "failed", ("repeated_error",), ""),
    _Control("state drift", _state_drift, EXIT_HOLD, "failed", ("state_drift",), ""),
    _Control("premature success", _premature_success, EXIT_HOLD, "failed", ("premature_success",), ""),
    _Control("unjustified abstention", _unjustified_abstention, EXIT_HOLD, "failed",
             ("goal_completion", "safe_abstention"), ""),
    _Control("changed evidence", _changed_evidence, EXIT_HOLD, "failed",
             ("premature_success", "evidence_fidelity"), ""),
    _Control("post-result lock", _post_result_lock, EXIT_POST_RESULT_LOCK, None, (), "post-result lock"),
    _Control("lock drift", _lock_drift, EXIT_LOCK_CHANGED, None, (), "lock changed"),
    _Control("missing case", _missing_case, EXIT_MISSING_CASE, None, (), "missing from the results"),
    _Control("unlocked case", _unlocked_case, EXIT_UNLOCKED_CASE, None, (), "does not hold"),
    _Control("dropped grading dimension", _dropped_dimension, 65, None, (),
             "dimension `evidence_fidelity` is missing"),
    _Control("promotion of safe abstention", _promote_safe_abstention, EXIT_HOLD, "safely-abstained",
             ("goal_completion",), ""),
)


@dataclass(frozen=True)
class ControlResult:
    """What one control observed: the exit code, the planted case's decision and failed
    dimensions (when it was graded) or the error message, and whether that is the expected red
    (or, for the final run, green)."""

    name: str
    exit_code: int
    decision: str | None
    held_by: tuple[str, ...]
    message: str
    ok: bool

    def describe(self) -> str:
        if self.decision is not None:
            seen = f"exit {self.exit_code}; close-ticket {self.decision}"
            if self.held_by:
                seen += f", held by {', '.join(self.held_by)}"
        else:
            seen = f"exit {self.exit_code}; {self.message}"
        return f"{'as expected' if self.ok else 'UNEXPECTED'}: {seen}"


def _run_grade(lock: Path, results: Path, output: Path | None, design: Path | None) -> tuple[int, Any]:
    """The CLI's grade path: returns (exit code, report or error message)."""
    try:
        report = grade_files(lock, results, design=design)
    except TrajectoryBindingError as e:
        return e.exit_code, str(e)
    except UnreadableInput as e:
        return 66, f"unreadable input: {e}"
    except SchemaViolation as e:
        return 65, f"schema violation: {e}"
    if output is not None:
        _write_json(output, report.to_dict())
    return report.exit_code, report


def _observe(name: str, design: dict, lock: dict, results: dict, *, exit_code: int,
             decision: str | None, held_by: tuple[str, ...], message: str) -> ControlResult:
    with tempfile.TemporaryDirectory(prefix="evaltk-trajectory-") as tmp:
        t = Path(tmp)
        for fname, doc in (("design.json", design), ("lock.json", lock), ("results.json", results)):
            (t / fname).write_text(json.dumps(doc), encoding="utf-8")
        code, out = _run_grade(t / "lock.json", t / "results.json", t / "report.json", t / "design.json")
        if isinstance(out, CohortReport):
            if out.exit_code == EXIT_HOLD:
                verify_report(json.loads((t / "report.json").read_text("utf-8")), lock, results, design=design)
            case = {c.case_id: c for c in out.cases}["close-ticket"]
            others_ok = all(c.decision == "passed" for c in out.cases if c.case_id != "close-ticket")
            ok = (code == exit_code and case.decision == decision and case.held_by == held_by and others_ok)
            return ControlResult(name, code, case.decision, case.held_by, "", ok)
        out = out.replace(f"{t}{os.sep}", "")
        ok = code == exit_code and message in out
        return ControlResult(name, code, None, (), out, ok)


def run_self_check() -> list[ControlResult]:
    """Run the fourteen negative controls, then a final green run.

    Each control plants one failure into a green synthetic cohort, grades it through
    the same path as ``evaltk trajectory grade`` (files on disk, exit code) and
    records what it observed; ``ok`` is True when the control was red for the right
    reason (exit code, decision and exactly the expected failed dimensions, or the
    expected error).  The last entry is the unmodified cohort, which must exit 0.
    """
    out = []
    for c in NEGATIVE_CONTROLS:
        design, lock, results = _control_documents()
        c.mutate(design, lock, results)
        out.append(_observe(c.name, design, lock, results, exit_code=c.exit_code, decision=c.decision,
                            held_by=c.held_by, message=c.message))
    design, lock, results = _control_documents()
    out.append(_observe("final green run", design, lock, results, exit_code=EXIT_PASS, decision="passed",
                        held_by=(), message=""))
    return out
