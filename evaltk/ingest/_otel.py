"""OpenTelemetry spans (GenAI semantic conventions, OpenInference attributes) as evaltk runs.

Inputs: OTLP JSON (``{"resourceSpans": [...]}``, one document per file or per line, as
the OpenTelemetry Collector's file exporter writes) and the span JSON the Python SDK
writes (``ReadableSpan.to_json()``: one object per line, or pretty-printed objects one
after another, as ``ConsoleSpanExporter`` writes).  One trace id is one run; agent and
tool spans are its steps in start order; the mapping is docs/import-otel.md.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .. import _io
from ..errors import DuplicateKeyError, no_duplicate_keys
from ._import import Imported, _answers_frame, _Ledger, _mark_step, _policy_fields, canonical_text
from ._policy import ActionPolicy

#: The extra that installs the OpenTelemetry SDK (to write spans; reading needs nothing).
OTEL_EXTRA = "otel"
#: GenAI ``gen_ai.operation.name`` and OpenInference ``openinference.span.kind`` values per role.
SPAN_ROLES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "tool": (frozenset({"execute_tool"}), frozenset({"TOOL"})),
    "agent": (frozenset({"invoke_agent", "create_agent"}), frozenset({"AGENT"})),
    "model call": (frozenset({"chat", "text_completion", "generate_content", "embeddings"}),
                   frozenset({"LLM", "EMBEDDING"})),
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_USAGE_KEYS = {"gen_ai.usage.input_tokens": "input_tokens", "gen_ai.usage.output_tokens": "output_tokens",
               "llm.token_count.prompt": "input_tokens", "llm.token_count.completion": "output_tokens",
               "llm.token_count.total": "total_tokens"}


class _BadSpan(Exception):
    def __init__(self, field: str | None, detail: str) -> None:
        super().__init__(detail)
        self.field, self.detail = field, detail


# --------------------------------------------------------------------------- decoding


def _any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain JSON value."""
    if not isinstance(v, Mapping) or not v:
        return None
    (kind, x), = list(v.items())[:1]
    if kind == "intValue":
        return int(x)
    if kind == "doubleValue":
        return float(x)
    if kind == "arrayValue":
        return [_any_value(y) for y in (x or {}).get("values", [])]
    if kind == "kvlistValue":
        return _kv_list((x or {}).get("values", []))
    return x  # stringValue, boolValue, bytesValue (base64 text)


def _kv_list(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise _BadSpan("attributes", "must be a list of {key, value}")
    out: dict[str, Any] = {}
    for it in items:
        if not isinstance(it, Mapping) or not isinstance(it.get("key"), str):
            raise _BadSpan("attributes", "an attribute must be {key, value}")
        out[it["key"]] = _any_value(it.get("value"))
    return out


def _span_id(v: Any, field: str, n_bytes: int, *, required: bool = True) -> str | None:
    """A trace or span id as lower-case hex: OTLP JSON writes hex, protobuf's JSON mapping
    base64, the SDK ``0x``-prefixed hex."""
    if v is None or v == "":
        if required:
            raise _BadSpan(field, "is required")
        return None
    if not isinstance(v, str):
        raise _BadSpan(field, f"must be a string; got {type(v).__name__}")
    s = v[2:] if v.startswith("0x") else v
    if len(s) == 2 * n_bytes and all(c in "0123456789abcdefABCDEF" for c in s):
        out = s.lower()
    else:
        try:
            raw = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != n_bytes:
            raise _BadSpan(field, f"must be {2 * n_bytes} hex digits (or base64 of {n_bytes} bytes); got {v!r}")
        out = raw.hex()
    if not required and set(out) == {"0"}:
        return None
    return out


def _nanos(v: Any, field: str) -> int | None:
    if v is None or v == "" or v == 0 or v == "0":
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        if v.isdigit():
            return int(v)
        try:
            dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return (dt - _EPOCH) // _MICRO * 1000
    raise _BadSpan(field, f"must be a time (unix nanoseconds or ISO 8601); got {v!r}")


_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


def _precision(*times: Any) -> int:
    """The precision, in nanoseconds, of a span's times: 1 for unix nanoseconds, 1,000 when
    any is ISO 8601 text (microseconds: what the SDK's ``to_json`` writes)."""
    return 1000 if any(isinstance(v, str) and v and not v.isdigit() for v in times) else 1


def _same_time(a: int | None, b: int | None, unit: int) -> bool:
    """Two times of one span agree at the precision ``unit`` both copies carry: equal in
    nanoseconds, or less than a microsecond apart when one is in microseconds (the SDK
    rounds ``time_ns / 1e9`` through a float to the microsecond, which lands within 1 us
    of the nanosecond time; two such times must be equal)."""
    if a is None or b is None:
        return a is b
    return abs(a - b) < unit


def _same_span(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two copies of one span id are the same span (docs/import-otel.md, "Repeated
    spans"): every field equal, the times compared at the coarser precision of the two, and
    the scope only where both carry one."""
    unit = max(a["precision_ns"], b["precision_ns"])
    skip = {"start", "end", "events", "scope", "precision_ns"}
    if any(a[k] != b[k] for k in a.keys() - skip) or a.keys() != b.keys():
        return False
    if a["scope"] is not None and b["scope"] is not None and a["scope"] != b["scope"]:
        return False
    if not (_same_time(a["start"], b["start"], unit) and _same_time(a["end"], b["end"], unit)):
        return False
    ea, eb = a["events"], b["events"]
    return len(ea) == len(eb) and all(
        x["name"] == y["name"] and x["attributes"] == y["attributes"]
        and _same_time(x["time_unix_nano"], y["time_unix_nano"], unit) for x, y in zip(ea, eb, strict=True))


def _status(v: Any) -> dict[str, Any]:
    if not isinstance(v, Mapping):
        return {"code": "UNSET"}
    code = v.get("code", v.get("status_code", "UNSET"))
    code = {0: "UNSET", 1: "OK", 2: "ERROR"}.get(code, code) if isinstance(code, int) else str(code)
    code = code.removeprefix("STATUS_CODE_").removeprefix("StatusCode.")
    out = {"code": code}
    msg = v.get("message", v.get("description"))
    if msg:
        out["message"] = msg
    return out


def _otlp_span(s: Any, resource: dict[str, Any], scope: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(s, Mapping):
        raise _BadSpan(None, "a span must be an object")
    kind = s.get("kind")
    if isinstance(kind, int):
        kind = ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"][kind] if 0 <= kind <= 5 else str(kind)
    return {
        "trace_id": _span_id(s.get("traceId"), "traceId", 16),
        "span_id": _span_id(s.get("spanId"), "spanId", 8),
        "parent_span_id": _span_id(s.get("parentSpanId"), "parentSpanId", 8, required=False),
        "name": s.get("name"),
        "kind": str(kind or "UNSPECIFIED").removeprefix("SPAN_KIND_"),
        "start": _nanos(s.get("startTimeUnixNano"), "startTimeUnixNano"),
        "end": _nanos(s.get("endTimeUnixNano"), "endTimeUnixNano"),
        "status": _status(s.get("status")),
        "attributes": _kv_list(s.get("attributes", [])),
        "events": [{"name": e.get("name"), "time_unix_nano": _nanos(e.get("timeUnixNano"), "events.timeUnixNano"),
                    "attributes": _kv_list(e.get("attributes", []))} for e in s.get("events", [])
                   if isinstance(e, Mapping)],
        "resource": resource, "scope": scope,
        "precision_ns": _precision(s.get("startTimeUnixNano"), s.get("endTimeUnixNano"),
                                   *(e.get("timeUnixNano") for e in s.get("events", []) if isinstance(e, Mapping))),
    }


def _sdk_span(s: Mapping[str, Any]) -> dict[str, Any]:
    ctx = s.get("context")
    if not isinstance(ctx, Mapping):
        raise _BadSpan("context", "is required (trace_id and span_id)")
    attrs = s.get("attributes") or {}
    if not isinstance(attrs, Mapping):
        raise _BadSpan("attributes", "must be an object")
    res = s.get("resource") or {}
    return {
        "trace_id": _span_id(ctx.get("trace_id"), "context.trace_id", 16),
        "span_id": _span_id(ctx.get("span_id"), "context.span_id", 8),
        "parent_span_id": _span_id(s.get("parent_id"), "parent_id", 8, required=False),
        "name": s.get("name"),
        "kind": str(s.get("kind") or "UNSPECIFIED").removeprefix("SpanKind."),
        "start": _nanos(s.get("start_time"), "start_time"),
        "end": _nanos(s.get("end_time"), "end_time"),
        "status": _status(s.get("status")),
        "attributes": dict(attrs),
        "events": [{"name": e.get("name"), "time_unix_nano": _nanos(e.get("timestamp"), "events.timestamp"),
                    "attributes": dict(e.get("attributes") or {})} for e in s.get("events") or []
                   if isinstance(e, Mapping)],
        "resource": dict(res.get("attributes") or {}) if isinstance(res, Mapping) else {},
        "scope": None,  # not in the SDK's JSON: compared only where both copies carry it
        "precision_ns": _precision(s.get("start_time"), s.get("end_time"),
                                   *(e.get("timestamp") for e in s.get("events") or [] if isinstance(e, Mapping))),
    }


def _checked(span: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(span["name"], str) or not span["name"]:
        raise _BadSpan("name", "is required (a non-empty string)")
    if span["start"] is None:
        raise _BadSpan("start", "the start time is required")
    return span


def _documents(path: str) -> list[tuple[int, Any]]:
    """``(line, JSON value)`` for each document of the file: one document, JSON Lines, or
    pretty-printed objects one after another.  A value that is not JSON is an exception."""
    text = _io.read_text(path)
    dec = json.JSONDecoder(object_pairs_hook=no_duplicate_keys, parse_constant=_no_constant)
    out: list[tuple[int, Any]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return out
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = dec.raw_decode(text, pos)
        except (json.JSONDecodeError, DuplicateKeyError, ValueError) as e:
            out.append((line, ValueError(f"not JSON ({e}); the rest of the file from here is not read")))
            return out
        out.append((line, value))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _items(v: Any, where: str, *, objects: bool = True) -> list[Any]:
    """A JSON list (absent or null: empty) whose items are objects."""
    if v is None:
        return []
    if not isinstance(v, list) or (objects and not all(isinstance(x, Mapping) for x in v)):
        raise _BadSpan(where, "must be a list of objects")
    return v


def _otlp_spans(doc: Mapping[str, Any], path: str, line: int, led: _Ledger,
                out: list[tuple[Any, str | None, dict[str, Any]]]) -> None:
    """The spans of one OTLP JSON document; a malformed block or span goes to the ledger."""
    try:
        blocks = _items(doc.get("resourceSpans"), "resourceSpans")
    except _BadSpan as b:
        led.dropped(path, line, None, "span", f"malformed: {b.detail}", b.field)
        return
    for i, rs in enumerate(blocks):
        try:
            resource = rs.get("resource") or {}
            res = _kv_list(resource.get("attributes") or []) if isinstance(resource, Mapping) else {}
            scopes = _items(rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")),
                            f"resourceSpans[{i}].scopeSpans")
            spans = [(j, ss, _items(ss.get("spans"), f"resourceSpans[{i}].scopeSpans[{j}].spans", objects=False))
                     for j, ss in enumerate(scopes)]
        except _BadSpan as b:
            led.dropped(path, line, None, "span", f"malformed: {b.detail}", b.field or f"resourceSpans[{i}]")
            continue
        except (TypeError, ValueError, AttributeError) as e:  # e.g. a resource attribute of the wrong type
            led.dropped(path, line, None, "span", f"malformed: {e}", f"resourceSpans[{i}].resource")
            continue
        for j, ss, items in spans:
            sc = ss.get("scope")
            scope = {k: v for k, v in sc.items() if k in ("name", "version")} if isinstance(sc, Mapping) else {}
            for m, sp in enumerate(items):
                where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{m}]"
                try:
                    out.append((line, where, _checked(_otlp_span(sp, res, scope))))
                except _BadSpan as b:
                    led.dropped(path, line, None, "span", f"malformed: {b.detail}",
                                f"{where}.{b.field}" if b.field else where)
                except (TypeError, ValueError, AttributeError) as e:  # a value of the wrong type inside
                    led.dropped(path, line, None, "span", f"malformed: {e}", where)


def _spans(path: str, led: _Ledger) -> list[tuple[Any, str | None, dict[str, Any]]]:
    """Every span of one file with its record: ``(record, field, span)``; malformed ones go to the ledger."""
    out: list[tuple[Any, str | None, dict[str, Any]]] = []
    for line, doc in _documents(path):
        if isinstance(doc, Exception):
            led.dropped(path, line, None, "span", f"malformed: {doc}")
        elif isinstance(doc, Mapping) and "resourceSpans" in doc:
            _otlp_spans(doc, path, line, led, out)
        elif isinstance(doc, Mapping) and "context" in doc:
            try:
                out.append((line, None, _checked(_sdk_span(doc))))
            except _BadSpan as b:
                led.dropped(path, line, None, "span", f"malformed: {b.detail}", b.field)
            except (TypeError, ValueError, AttributeError) as e:
                led.dropped(path, line, None, "span", f"malformed: {e}")
        else:
            led.dropped(path, line, None, "span", "malformed: neither an OTLP JSON document "
                        "(resourceSpans) nor an SDK span (context, name, start_time)")
    return out


# --------------------------------------------------------------------------- runs


def span_role(attributes: Mapping[str, Any]) -> str:
    """``tool``, ``agent``, ``model call`` or ``span`` (any other), from the GenAI
    ``gen_ai.operation.name`` or the OpenInference ``openinference.span.kind``."""
    op, oi = attributes.get("gen_ai.operation.name"), attributes.get("openinference.span.kind")
    for role, (ops, kinds) in SPAN_ROLES.items():
        if op in ops or (isinstance(oi, str) and oi.upper() in kinds):
            return role
    return "span"


def _text_of_messages(v: Any) -> str | None:
    """The first user text of GenAI ``gen_ai.input.messages`` (JSON text or a list)."""
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return v or None
    if not isinstance(v, list):
        return None
    for m in v:
        if isinstance(m, Mapping) and m.get("role") == "user":
            if isinstance(m.get("content"), str):
                return m["content"]
            for p in m.get("parts") or []:
                if isinstance(p, Mapping) and isinstance(p.get("content"), str):
                    return p["content"]
    return None


def _task(spans: list[dict[str, Any]]) -> tuple[str, str]:
    """The task text and where it came from: the root's (then each agent's, then each model
    call's) input; the root span's name when none carries one."""
    order = sorted(spans, key=lambda s: (s["parent_span_id"] is not None, span_role(s["attributes"]) != "agent",
                                         s["start"]))
    for s in (s for s in order if s["parent_span_id"] is None or span_role(s["attributes"]) in ("agent", "model call")):
        a = s["attributes"]
        for key in ("input.value", "gen_ai.input.messages", "gen_ai.prompt"):
            text = _text_of_messages(a.get(key)) if key != "input.value" else a.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip(), f"span {s['span_id']} attribute {key}"
    return order[0]["name"], f"span {order[0]['span_id']} name"


def _usage(a: Mapping[str, Any]) -> dict[str, Any] | None:
    u = {k: a[src] for src, k in _USAGE_KEYS.items() if isinstance(a.get(src), int | float)}
    return u or None


def _first(a: Mapping[str, Any], *keys: str) -> Any:
    return next((a[k] for k in keys if a.get(k) not in (None, "")), None)


def _step(s: dict[str, Any], role: str, policy: ActionPolicy | None) -> dict[str, Any]:
    a = s["attributes"]
    if role == "tool":
        tool = _first(a, "gen_ai.tool.name", "tool.name") or s["name"].removeprefix("execute_tool ")
        step: dict[str, Any] = {"action": tool, "target": _text(_first(a, "gen_ai.tool.call.arguments",
                                                                          "tool.parameters", "input.value"))}
        result = _first(a, "gen_ai.tool.call.result", "output.value")
        if result is not None:
            step["result"] = _text(result)
    else:
        tool = None
        step = {"action": a.get("gen_ai.operation.name") or "invoke_agent",
                "target": _text(_first(a, "gen_ai.agent.name", "agent.name")) or s["name"]}
    if s["status"].get("code") == "ERROR":
        step["error"] = {"message": s["status"].get("message")}
    u = _usage(a)
    if u:
        step["usage"] = u
    step.update(_span_fields(s))
    return _mark_step(step, tool, policy)


def _text(v: Any) -> str | None:
    """An attribute as text: a string as written, anything else as canonical JSON."""
    if v is None or isinstance(v, str):
        return v
    return canonical_text(v)


def _span_fields(s: dict[str, Any]) -> dict[str, Any]:
    """What every span keeps: ids, name, kind, times, status, every attribute and event."""
    return {"span_id": s["span_id"], "parent_span_id": s["parent_span_id"], "name": s["name"], "kind": s["kind"],
            "start_time_unix_nano": s["start"], "end_time_unix_nano": s["end"], "status": s["status"],
            "attributes": s["attributes"], "events": s["events"]}


def _unfinished(spans: list[dict[str, Any]]) -> str | None:
    """Why the trace's span set is incomplete (a mid-write trace), or None."""
    ids = {s["span_id"] for s in spans}
    open_ = [s["span_id"] for s in spans if s["end"] is None]
    if open_:
        return f"span {open_[0]} has not ended"
    missing = sorted({s["parent_span_id"] for s in spans if s["parent_span_id"] and s["parent_span_id"] not in ids})
    if missing:
        return f"the parent span {missing[0]} is not among the spans (it has not ended, or was not exported)"
    if not any(s["parent_span_id"] is None for s in spans):  # pragma: no cover - implied by the parent check
        return "no root span"
    return None


def _owner(span_id: str | None, parents: Mapping[str, str | None], step_of: Mapping[str, int]) -> int | None:
    """The step a span belongs to: its nearest ancestor that is a step (None: none is)."""
    while span_id is not None and span_id not in step_of:
        span_id = parents.get(span_id)
    return None if span_id is None else step_of[span_id]


_Item = tuple[str, Any, "str | None", dict[str, Any]]


def _run(tid: str, items: list[_Item], policy: ActionPolicy | None, led: _Ledger) -> dict[str, Any]:
    """One trace's spans as a run (complete or in progress), with their ledger rows."""
    first: dict[str, _Item] = {}
    repeats: list[tuple[_Item, _Item]] = []
    conflicting: set[str] = set()
    for it in items:
        sid = it[3]["span_id"]
        if sid not in first:
            first[sid] = it
            continue
        f = first[sid]
        if not _same_span(it[3], f[3]):
            conflicting.add(sid)
        elif it[3]["precision_ns"] < f[3]["precision_ns"]:  # the finer copy is kept
            first[sid], it, f = it, f, it
        repeats.append((it, f))
    spans = sorted((it for sid, it in first.items() if sid not in conflicting),
                   key=lambda t: (t[3]["start"], t[3]["span_id"]))
    for it, f in repeats:
        loc = f"{f[0]}:{f[1]}"
        unit = max(it[3]["precision_ns"], f[3]["precision_ns"])
        led.dropped(it[0], it[1], tid, "span", f"duplicate span_id {it[3]['span_id']}: " + (
            f"conflicting with {loc}; neither kept" if it[3]["span_id"] in conflicting
            else f"identical to {loc}" if it[3] == f[3]
            else f"the same span as {loc}" + (" (times compared to the microsecond)" if unit > 1 else "")),
            it[2])
    for sid in sorted(conflicting):
        f = first[sid]
        led.dropped(f[0], f[1], tid, "span", f"duplicate span_id {sid}: conflicting copies; neither kept", f[2])
    if conflicting:
        why: str | None = f"span {min(conflicting)} was exported twice with different content"
    else:
        why = _unfinished([t[3] for t in spans]) if spans else "every span was dropped"
    roles = [span_role(t[3]["attributes"]) for t in spans]
    steps: list[dict[str, Any]] = []
    step_of: dict[str, int] = {}
    for (*_loc, s), role in zip(spans, roles, strict=True):
        if role in ("tool", "agent"):
            step_of[s["span_id"]] = len(steps)
            steps.append({"index": len(steps), **_step(s, role, policy)})
    parents = {t[3]["span_id"]: t[3]["parent_span_id"] for t in spans}
    calls: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for (*_loc, s), role in zip(spans, roles, strict=True):
        owner = _owner(s["parent_span_id"], parents, step_of)
        if role == "model call":
            a = s["attributes"]
            calls.append({"model": _first(a, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name"),
                          "usage": _usage(a), "step": owner, **_span_fields(s)})
        elif role == "span":
            others.append({"step": owner, **_span_fields(s)})
    run: dict[str, Any] = {"trace_id": tid, "status": "in_progress" if why else "complete"}
    if not why:
        task, task_from = _task([t[3] for t in spans])
        agent_step = next((st for st in steps if "gen_ai.agent.name" in st["attributes"]), None)
        resource = spans[0][3]["resource"]
        run.update({"task": task, "agent": (agent_step["attributes"]["gen_ai.agent.name"] if agent_step
                                             else resource.get("service.name")), **_policy_fields(policy),
                    "source": {"format": "opentelemetry", "files": sorted({t[0] for t in spans}),
                               "task_from": task_from, "resource": resource}})
    else:
        run["in_progress_reason"] = why
    run.update({"steps": steps, "model_calls": calls, "other_spans": others})
    for (path, record, where, _s), role in zip(spans, roles, strict=True):
        if why:
            led.dropped(path, record, tid, "span", f"in_progress: {why}", where)
        else:
            led.kept(path, record, tid, "span", {"tool": "step", "agent": "step"}.get(role, role))
    return run


def import_otel(files: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *,
                policy: ActionPolicy | None = None) -> Imported:
    """Import OpenTelemetry spans (OTLP JSON, or the SDK's span JSON) as evaltk runs.

    One trace id is one run, whatever file its spans are in.  Agent and tool spans
    (GenAI ``gen_ai.operation.name`` ``invoke_agent`` / ``execute_tool``, or
    OpenInference ``openinference.span.kind`` ``AGENT`` / ``TOOL``) are its steps in
    start order; model-call spans are kept on the run with their token usage, other
    spans too; every attribute is kept, known or not.  A trace whose span set is
    incomplete (a span not ended, a parent span absent) is an in-progress run.

    Parameters
    ----------
    files : path or list of paths
    policy : ActionPolicy, optional
        Which tool calls are consequential and which ask for confirmation (by tool
        name); without one, x_safe is ``not_implemented`` on every run.

    Returns
    -------
    Imported
        ``traces`` (one per trace id), no answers and no suite, and a ledger with one
        row per span.
    """
    paths = [os.fspath(files)] if isinstance(files, str | os.PathLike) else [os.fspath(p) for p in files]
    if not paths:
        raise ValueError("no span file given.")
    led = _Ledger()
    by_trace: dict[str, list[tuple[str, Any, str | None, dict[str, Any]]]] = {}
    for path in paths:
        for record, where, span in _spans(path, led):
            by_trace.setdefault(span["trace_id"], []).append((path, record, where, span))
    traces = [_run(tid, items, policy, led) for tid, items in by_trace.items()]
    ledger = led.frame()  # in input order: file, line, position in the document
    pos = {p: i for i, p in enumerate(paths)}
    order = sorted(range(len(ledger)), key=lambda i: (pos[str(ledger["source"].iat[i])], ledger["record"].iat[i],
                                                      _span_position(ledger["field"].iat[i])))
    ledger = ledger.iloc[order].reset_index(drop=True)
    return Imported("opentelemetry", traces, _answers_frame([]), None, ledger, tuple(paths), policy)


def _span_position(field: Any) -> tuple[int, ...]:
    """``resourceSpans[0].scopeSpans[1].spans[2]`` -> (0, 1, 2), for ordering."""
    return tuple(int(x) for x in re.findall(r"\[(\d+)\]", field)) if isinstance(field, str) else ()
