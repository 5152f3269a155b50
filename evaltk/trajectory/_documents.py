"""Reading the three trajectory documents: strict JSON, their JSON Schemas, timestamps and
the precise event checks.

The schemas (``evaltk/schemas/trajectory-*.schema.json``) decide structure; what a
schema cannot say (strictly increasing ``seq``, unique event ids, timestamps with a
zone and in order, one terminal, digests that are hex, bytes that are base64) is
checked by :func:`check_events`, which names the case, the event and the field of the
first problem.  The grader (``_grade``) makes the same checks in its fast pass and
hands over to :func:`check_events` on any anomaly, so every error has one wording.
"""

from __future__ import annotations

import binascii
import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from .. import _io
from ..errors import SchemaViolation
from ._lock import DIMENSIONS

DOCUMENT_KINDS = ("lock", "results", "report", "design")


class Invalid(Exception):
    """Raised by the grader's fast pass on an anomaly; :func:`check_events` then names it."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document strictly.

    Raises :class:`~evaltk.errors.UnreadableInput` when the file is missing, not
    UTF-8 or not JSON (``NaN`` and ``Infinity`` included), and
    :class:`~evaltk.errors.SchemaViolation` for a duplicated object key (which
    plain ``json.load`` silently resolves to the last value).  The reader is
    :func:`evaltk._io.read_json`, shared with the other formats.
    """
    return _io.read_json(path)


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
    if kind not in DOCUMENT_KINDS:
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


# --------------------------------------------------------------------------- timestamps


HEX64_MATCH = re.compile(r"[0-9a-fA-F]{64}").fullmatch
_NO_ZONE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")
_TS = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})"
)


def parse_ts(value: Any, *, what: str, record: Any = None, field: str | None = None,
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


# --------------------------------------------------------------------------- events


KINDS = frozenset(("action", "milestone", "fault", "recovery", "state", "evidence", "claim", "terminal"))
STATUSES = ("completed", "abstained", "none")
#: The fields each event kind must carry as a non-empty string.
REQUIRED: dict[str, tuple[str, ...]] = {
    "action": ("action",), "milestone": ("milestone",), "fault": ("signature",),
    "recovery": ("signature", "action"), "state": (), "evidence": ("evidence_id",),
    "claim": ("claim_id",), "terminal": (),
}


def _bad(cid: str, field: str, msg: str) -> SchemaViolation:
    return SchemaViolation(msg, record=cid, field=field)


def _str_field(ev: Mapping[str, Any], key: str, cid: str, i: int, eid: str) -> str:
    v = ev.get(key)
    if type(v) is not str or not v:
        raise _bad(cid, f"events[{i}].{key}",
                   f"event `{eid}` needs `{key}` as a non-empty string; got {v!r}")
    return v


def _check_identity(cid: str, i: int, ev: Any, ids: dict[str, int], last_seq: int) -> tuple[str, int]:
    """An event is an object with a fresh non-empty ``id`` and a ``seq`` above the last one."""
    if type(ev) is not dict:
        raise _bad(cid, f"events[{i}]", f"an event must be an object; got {type(ev).__name__}")
    eid = ev.get("id")
    if type(eid) is not str or not eid:
        raise _bad(cid, f"events[{i}].id", f"`id` must be a non-empty string; got {eid!r}")
    if eid in ids:
        raise _bad(cid, f"events[{i}].id", f"duplicate event id `{eid}` (also events[{ids[eid]}])")
    ids[eid] = i
    seq = ev.get("seq")
    if type(seq) is not int or seq < 0:
        raise _bad(cid, f"events[{i}].seq",
                   f"event `{eid}`: `seq` must be a non-negative integer; got {seq!r}")
    if seq <= last_seq:
        raise _bad(cid, f"events[{i}].seq",
                   f"event `{eid}` is out of order: seq {seq} does not follow {last_seq}")
    return eid, seq


def _check_at(cid: str, i: int, ev: Mapping[str, Any], eid: str, last_at: datetime | None) -> datetime:
    """An event's ``at`` is a timestamp with a zone, not earlier than the event before it."""
    at = ev["at"]
    t = parse_ts(at, what=f"event `{eid}`: `at`", record=cid, field=f"events[{i}].at")
    if last_at is not None and t < last_at:
        raise _bad(cid, f"events[{i}].at",
                   f"event `{eid}` is out of order: at {at} is earlier than the event before it")
    return t


def _check_evidence(cid: str, i: int, ev: Mapping[str, Any], eid: str) -> None:
    if ("bytes_base64" in ev) == ("sha256" in ev):
        raise _bad(cid, f"events[{i}]",
                   f"evidence event `{eid}` must carry exactly one of `bytes_base64` or `sha256`")
    if "bytes_base64" in ev:
        b64 = ev["bytes_base64"]
        try:
            if type(b64) is not str:
                raise ValueError
            binascii.a2b_base64(b64, strict_mode=True)
        except (binascii.Error, ValueError):
            raise _bad(cid, f"events[{i}].bytes_base64",
                       f"evidence event `{eid}`: `bytes_base64` is not valid base64 "
                       "(RFC 4648, padded)") from None
        return
    dig = ev["sha256"]
    if type(dig) is not str or HEX64_MATCH(dig) is None:
        raise _bad(cid, f"events[{i}].sha256",
                   f"evidence event `{eid}`: `sha256` {dig!r} is not 64 hexadecimal digits")


def _check_claim(cid: str, i: int, ev: Mapping[str, Any], eid: str) -> None:
    cites = ev.get("evidence")
    if type(cites) is not list or any(type(x) is not str for x in cites):
        raise _bad(cid, f"events[{i}].evidence",
                   f"claim event `{eid}`: `evidence` must be a list of evidence ids")


def _check_state(cid: str, i: int, ev: Mapping[str, Any], eid: str) -> None:
    kv = ev.get("state")
    if type(kv) is not dict or not kv:
        raise _bad(cid, f"events[{i}].state", f"state event `{eid}`: `state` must be a non-empty object")


def _check_recovery(cid: str, i: int, ev: Mapping[str, Any], eid: str) -> None:
    ok = ev.get("success")
    if type(ok) is not bool:
        raise _bad(cid, f"events[{i}].success",
                   f"recovery event `{eid}`: `success` must be true or false; got {ok!r}")


def _check_terminal(cid: str, i: int, ev: Mapping[str, Any], eid: str) -> None:
    st = ev.get("status")
    if st not in STATUSES:
        raise _bad(cid, f"events[{i}].status",
                   f"terminal event `{eid}`: `status` must be completed, abstained or none; got {st!r}")
    if st == "abstained":
        _str_field(ev, "reason", cid, i, eid)


_CHECK_KIND = {"evidence": _check_evidence, "claim": _check_claim, "state": _check_state,
               "recovery": _check_recovery, "terminal": _check_terminal}


def check_events(cid: str, events: Any, *, last: dict[str, Any] | None = None) -> datetime | None:
    """Check a case's events in full and raise the first problem, named precisely
    (:class:`~evaltk.errors.SchemaViolation` with the case as record and the field).

    Returns the earliest event timestamp (None when no event has ``at``); with
    ``last``, records the latest one as ``last[cid]``."""
    if type(events) is not list:
        raise _bad(cid, "events", f"`events` must be a list; got {type(events).__name__}")
    ids: dict[str, int] = {}
    last_seq = -1
    last_at: datetime | None = None
    first_at: datetime | None = None
    term_id = None
    for i, ev in enumerate(events):
        eid, last_seq = _check_identity(cid, i, ev, ids, last_seq)
        if "at" in ev:
            last_at = _check_at(cid, i, ev, eid, last_at)
            first_at = last_at if first_at is None else first_at
        kind = ev.get("kind")
        if kind not in KINDS:
            raise _bad(cid, f"events[{i}].kind",
                       f"event `{eid}`: unknown kind {kind!r}; allowed: {', '.join(sorted(KINDS))}")
        for key in REQUIRED[kind]:
            _str_field(ev, key, cid, i, eid)
        if kind == "terminal" and term_id is not None:
            raise _bad(cid, f"events[{i}]", f"second terminal event `{eid}` (the first was `{term_id}`)")
        term_id = eid if kind == "terminal" else term_id
        check = _CHECK_KIND.get(kind)
        if check is not None:
            check(cid, i, ev, eid)
    if last is not None:
        last[cid] = last_at
    return first_at
