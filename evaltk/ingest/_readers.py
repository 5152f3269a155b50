"""Trace readers: JSONL (Arrow, chunked, bisected around bad lines), Parquet, records and DataFrames."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _columns, _io
from .._validation import as_frame
from ..errors import LimitExceeded, SchemaViolation, UnreadableInput
from ._checks import (
    _Bad,
    _error,
    _kind_of_path,
    _read_file,
    _read_parquet,
    _strip_none,
)
from ._domain import UNKNOWN_DOMAIN, _apply_rule, _resolve_rule
from ._ledger import _ledger
from ._records import CATEGORICAL_COLUMNS, POSITION_DTYPE, TraceRecords
from ._series import _const, _encode, _from_codes, _increasing_within, _s, _str_series
from ._validate import _check_trace, _validate_arrow, _validate_python


def _blank_to_null(a: pa.Array) -> pa.Array:
    """Empty strings read as absent."""
    if pa.types.is_null(a.type):
        return pa.nulls(len(a), pa.string())
    empty = pc.equal(pc.binary_length(a), 0)
    if pc.any(empty).as_py():
        a = pc.if_else(empty, pa.scalar(None, pa.string()), a)
    return a


def _as_arrow_text(a: Any) -> pa.Array:
    return a if isinstance(a, pa.Array) else pa.array(a, pa.string())


def _run_domains(domain: Any, task_s: pd.Series, rule: Callable[[str], Any]
                 ) -> tuple[pd.Series, np.ndarray, pd.Series]:
    """The domain read from the task prompt (seed 002, "Scope of a trace": "the domain read
    from the task prompt rather than assigned separately"), once per distinct prompt.

    The prompt wins: a record's own ``domain`` field is used only where the rule finds no
    domain in the prompt (it returns its default, ``unknown``).  Returns the domains, where
    the record's field gave them, and the record's field as given (kept beside the domain,
    so a field that disagrees with the prompt is recorded, never silently used).
    """
    dom = _blank_to_null(_as_arrow_text(domain))
    has_field = ~dom.is_null().to_numpy(zero_copy_only=False)
    field_s = _str_series(dom)
    codes, uniq = pd.factorize(task_s)
    derived = np.asarray(_apply_rule(rule, list(uniq)), dtype=object)
    silent = np.asarray([d in (UNKNOWN_DOMAIN, getattr(rule, "default", UNKNOWN_DOMAIN)) for d in derived], bool)
    vals = derived[codes] if len(uniq) else np.zeros(0, object)
    from_field = has_field & (silent[codes] if len(uniq) else np.zeros(0, bool))
    if from_field.any():
        vals = vals.copy()
        vals[from_field] = field_s.to_numpy(dtype=object, na_value=None)[from_field]  # type: ignore[call-overload]  # pandas-stubs: na_value=None is accepted
    return _s(vals), from_field, field_s


def _steps_missing(n_steps: np.ndarray, s_index: np.ndarray, sc_run: np.ndarray,
                   sc_count: np.ndarray) -> np.ndarray:
    """Index gaps within a run (indices sorted), or a source reporting more steps than recorded."""
    n = len(n_steps)
    first = np.zeros(n, np.int64)
    last = np.zeros(n, np.int64)
    if s_index.size:
        starts = np.cumsum(n_steps) - n_steps
        has = n_steps > 0
        first[has] = s_index[starts[has]]
        last[has] = s_index[starts[has] + n_steps[has] - 1]
    gaps = (n_steps > 0) & (last - first + 1 > n_steps)
    more = np.zeros(n, bool)
    if sc_run.size:
        more[sc_run[sc_count > n_steps[sc_run]]] = True
    return gaps | more


def _disagreements(tid_s: pd.Series, n_steps: np.ndarray, sc_run: np.ndarray,
                   sc_source: list[str] | np.ndarray, sc_count: np.ndarray) -> pd.DataFrame:
    """Step counts that differ from the recorded steps, ordered by run then source name."""
    differs = sc_count != n_steps[sc_run] if sc_run.size else np.zeros(0, bool)
    src = np.asarray(sc_source, dtype=object)[differs] if sc_run.size else np.zeros(0, object)
    dr = sc_run[differs]
    o = np.lexsort((src.astype(str), dr)) if dr.size else np.zeros(0, np.int64)
    return pd.DataFrame({
        "trace_id": _s(tid_s.array[dr[o]] if dr.size else []),
        "source": _s(src[o].tolist()),
        "count": sc_count[differs][o],
        "canonical": np.asarray(n_steps, np.int64)[dr[o]],
        "run_pos": dr[o],
    })


def _build_tables(*, tid: pa.Array, task: pa.Array, domain: pa.Array, agent: pa.Array,
                  guide: list[Any], declared: np.ndarray, n_steps: np.ndarray, s_index: np.ndarray,
                  s_action: pa.Array,
                  s_target: pa.Array, s_screen: pa.Array, s_cons: np.ndarray, s_conf: np.ndarray,
                  sc_run: np.ndarray, sc_source: list[str] | np.ndarray, sc_count: np.ndarray,
                  rule: Callable[[str], Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Runs, steps and disagreements of the kept runs (shared by both paths).

    Steps arrive grouped by run in record order; they are sorted by index within
    each run here.  Empty strings in ``target``/``screen``/``domain``/``agent`` read as
    absent.
    """
    n = len(tid)
    step_run = np.repeat(np.arange(n, dtype=np.int64), n_steps)
    sorted_already = _increasing_within(s_index, step_run)
    order = np.arange(0) if sorted_already else np.lexsort((s_index, step_run))

    def take(a: Any) -> Any:
        if sorted_already:
            return a
        if isinstance(a, pa.Array):
            return a.take(pa.array(order))
        return a[order]

    s_index = take(s_index)
    tid_s = _str_series(tid)
    steps = pd.DataFrame({
        "trace_id": _s(tid_s.array[step_run] if n else []),
        "index": s_index.astype(np.int64),
        "action": _str_series(take(s_action)),
        "target": _str_series(_blank_to_null(take(s_target))),
        "screen": _str_series(_blank_to_null(take(s_screen))),
        "consequential": take(s_cons).astype(bool),
        "needs_confirmation": take(s_conf).astype(bool),
        "run_pos": step_run,
    })
    task_s = _str_series(task)
    dom_s, from_field, field_s = _run_domains(domain, task_s, rule)
    sc_run = np.asarray(sc_run, np.int64)
    sc_count = np.asarray(sc_count, np.int64)
    runs = pd.DataFrame({
        "trace_id": tid_s,
        "task": task_s,
        "domain": dom_s,
        "domain_source": _from_codes((~from_field).astype(np.int64), ["record", "rule"]),
        "domain_record": field_s,
        "status": _const("complete", n),
        "n_steps": np.asarray(n_steps, np.int64),
        "agent": _str_series(_blank_to_null(_as_arrow_text(agent))),
        "guide": pd.Series(guide, dtype=object),
        "steps_missing": _steps_missing(n_steps, s_index, sc_run, sc_count),
        "consequential_declared": np.asarray(declared, bool),
    })
    return runs, steps, _disagreements(tid_s, n_steps, sc_run, sc_source, sc_count)


def _records_from_frame(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.to_dict("records")  # type: ignore[return-value]  # pandas-stubs: str column labels


class _NotJson(ValueError):
    """Why a line is not a record, the field when one is to blame (a repeated key), and the
    trace id the line spells, when it spells one (so the ledger row names the run)."""

    def __init__(self, message: str, field: str | None = None, text: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        m = None if text is None else _TRACE_ID.search(text, 0, 4096)
        self.trace_id = None if m is None else _id_text(m.group(1))


def _id_text(escaped: str) -> str:
    """A JSON string's body as text (its escapes decoded), or as written when it does not
    decode to storable text."""
    try:
        text = json.loads(f'"{escaped}"')
        text.encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return escaped
    return text


#: ``"trace_id": "..."`` near the start of a line (read for the ledger when the line is not JSON).
_TRACE_ID = re.compile(r'"trace_id"\s*:\s*"((?:[^"\\]|\\.){1,200})"')


def _parse_json_lines(texts: Sequence[Any]) -> list[Any]:
    """Each line parsed strictly (:func:`evaltk._io.loads_json`: a repeated key, ``NaN``,
    ``Infinity``, ``1e999`` and nesting past the limit refused), or a :class:`_NotJson`
    saying why it is not a record."""
    out: list[Any] = []
    for t in texts:
        if isinstance(t, UnicodeDecodeError):
            out.append(_NotJson(f"not valid UTF-8 (byte 0x{t.object[t.start]:02x} at column "
                                f"{t.start + 1})"))
            continue
        try:
            _io.check_line_bytes(len(t))
            out.append(_io.loads_json(t, record=1, allow_surrogates=True))  # the validator names the field
        except LimitExceeded as e:
            out.append(_NotJson(e.detail, None, t))
        except SchemaViolation as e:  # a repeated key
            out.append(_NotJson(f"not valid JSON ({e.detail})", e.field, t))
        except UnreadableInput as e:
            out.append(_NotJson("not valid JSON (" + e.detail.removeprefix("not JSON: ")
                                .replace(" (column", ": column").rstrip(")") + ")", None, t))
    return out


def _no_blank_lines(data: bytes, start: int = 0, stop: int | None = None, *,
                    newlines: np.ndarray | None = None) -> tuple[bool, int]:
    """Whether every line of ``data[start:stop]`` is non-blank; and its number of lines
    (no copy of ``data``).  ``newlines``: the positions of the newlines in the range, if
    known (see :func:`_newlines`)."""
    stop = len(data) if stop is None else stop
    end = stop - 1 if stop > start and data[stop - 1:stop] == b"\n" else stop
    if newlines is None:
        newlines = _newlines(data, start, stop)
    n = len(newlines) + (0 if end < stop else 1)
    nl = data.find(b"\n", start, end)
    first = data[start:end] if nl < 0 else data[start:nl]
    last_nl = data.rfind(b"\n", start, end)
    last = data[last_nl + 1:end] if last_nl >= 0 else first
    if first.strip() in _NOT_A_ROW or last.strip() in _NOT_A_ROW:
        return False, n
    # a blank or bare-null line inside starts with one of " \t\r\nn": only when some
    # line does is the pattern searched for
    after = newlines[newlines + 1 < end] + 1
    if (after.size and _LINE_START[np.frombuffer(data, np.uint8)[after]].any()
            and _BLANK_OR_NULL_LINE.search(data, start, end)):
        return False, n
    return True, n


#: Bytes a blank or bare-``null`` line can start with.
_LINE_START = np.zeros(256, bool)
_LINE_START[list(b" \t\r\nn")] = True

#: Newlines are found with NumPy in blocks of this many bytes.
_SCAN_BYTES = 1 << 22


def _newlines(data: bytes, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Positions of the newlines in ``data[start:stop]`` (int64)."""
    stop = len(data) if stop is None else stop
    a = np.frombuffer(data, np.uint8)
    parts = [np.flatnonzero(a[i:min(i + _SCAN_BYTES, stop)] == 10) + i
             for i in range(start, stop, _SCAN_BYTES)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


#: A blank line, or a bare ``null`` line: the first is not a record; the second must
#: not reach Arrow's JSON reader, which crashes on it (pyarrow 26: a segmentation
#: fault when a block starts with ``null``), so it takes the per-record path.
_BLANK_OR_NULL_LINE = re.compile(rb"\n[ \t\r]*(?:null[ \t\r]*)?\n")
_NOT_A_ROW = (b"", b"null")


def _has_null_line(data: bytes | memoryview) -> bool:
    buf = bytes(data) if isinstance(data, memoryview) else data
    nl = buf.find(b"\n")
    first = buf if nl < 0 else buf[:nl]
    body = buf.rstrip(b"\r\n")
    last = body[body.rfind(b"\n") + 1:]
    if first.strip() == b"null" or last.strip() == b"null":
        return True
    return re.search(rb"\n[ \t\r]*null[ \t\r]*\n", buf) is not None


def _arrow_json(data: bytes | memoryview, *, checked: bool = False,
                held: np.ndarray | None = None) -> pa.Table | None:
    """Arrow's JSON reader, or None when it refuses the input or the input must not reach
    it.  Every line is screened for nesting first (:func:`evaltk._io.json_line_screen`:
    nesting past the limit crashes the native parser), so no hostile line reaches Arrow
    whatever the caller did; ``held``: the screen's answer for these lines (with or
    without ``constants``), when the caller has it.  A bare ``NaN`` / ``Infinity`` (or
    ``1e999``), which Arrow reads as a number and JSON does not have, is found in what
    Arrow read: a table holding a number that is not finite is refused.  ``checked``: the
    caller has made sure no line is a bare ``null`` (which crashes the reader)."""
    import pyarrow.json as pj

    if held is None:
        data = bytes(data) if isinstance(data, memoryview) else data
        held = _io.json_line_screen(data, constants=False)
    if held.any():
        return None
    if not checked and _has_null_line(data):
        return None
    try:
        t = pj.read_json(pa.BufferReader(pa.py_buffer(data)),
                         read_options=pj.ReadOptions(block_size=1 << 22))
        t.validate(full=True)  # catches invalid UTF-8
        for f in t.schema:  # field names must be text too (Arrow does not check them)
            _ = f.type, f.name, str(f.type)
    except (pa.ArrowException, UnicodeError):  # UnicodeError: a message or name quoting bad bytes
        return None
    if any(_non_finite(c) for c in t.columns):
        return None
    return t


def _non_finite(a: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a floating-point value anywhere in ``a`` (nested lists and structs too) is NaN
    or infinite: what Arrow's JSON reader makes of ``NaN``, ``Infinity`` or ``1e999``.
    Iterative (nesting may be as deep as ``Limits.depth``); a branch whose type holds no
    floating-point field is not visited."""
    stack: list[Any] = list(a.chunks) if isinstance(a, pa.ChunkedArray) else [a]
    while stack:
        c = stack.pop()
        t = c.type
        if pa.types.is_floating(t):
            if not pc.all(pc.is_finite(c)).as_py() and c.null_count < len(c):
                return True
        elif pa.types.is_struct(t):
            stack.extend(c.field(i) for i in range(t.num_fields) if _holds_float(t.field(i).type))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            if _holds_float(t.value_type):
                stack.append(c.values)
        elif pa.types.is_map(t):
            stack.extend(x for x in (c.keys, c.items) if _holds_float(x.type))
        elif pa.types.is_nested(t):  # pragma: no cover - the JSON reader makes no other nested type
            return True
    return False


def _holds_float(t: pa.DataType) -> bool:
    """Whether the type ``t`` has a floating-point field somewhere inside."""
    stack = [t]
    while stack:
        t = stack.pop()
        if pa.types.is_floating(t):
            return True
        stack.extend(t.field(i).type for i in range(t.num_fields)) if pa.types.is_struct(t) else None
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            stack.append(t.value_type)
        elif pa.types.is_map(t):
            stack.extend((t.key_type, t.item_type))
    return False


def _load_trace_source(source: Any) -> tuple[str, str, Any, Any]:
    """(name, mode, payload, numbers).  mode: "arrow" (a Parquet table), "jsonl" (bytes),
    "jsonl-file" (a :class:`_JsonlFile`, larger than one chunk: read chunk by chunk) or
    "records" (a list)."""
    source = as_frame(source)
    if isinstance(source, pd.DataFrame):
        recs = _records_from_frame(source)
        return "<dataframe>", "records", recs, list(range(1, len(recs) + 1))
    if isinstance(source, str | Path):
        big = _jsonl_file(source)
        if big is not None:  # read chunk by chunk, never held whole
            return big.name, "jsonl-file", big, None
        path, name, data, kind = _read_file(source)
        if kind == "parquet":
            table = _read_parquet(data, name)
            return name, "arrow", table, np.arange(1, table.num_rows + 1)
        if kind == "csv":
            raise UnreadableInput("a trace file must be JSONL (one JSON object per line) or Parquet",
                                  file=name)
        stripped = data.lstrip()
        if path.suffix.lower() == ".json" and stripped[:1] == b"[":
            arr = _io.loads_json(_io.decode_utf8(data, file=name), file=name)
            if not isinstance(arr, list):  # pragma: no cover - starts with "["
                raise UnreadableInput("expected a JSON array of trace records", file=name)
            return name, "records", arr, list(range(1, len(arr) + 1))
        _io.check_line_records(data, file=name)
        return name, "jsonl", data, None
    if isinstance(source, Mapping):
        return "<records>", "records", [source], [1]
    if isinstance(source, Iterable):
        recs = list(source)
        return "<records>", "records", recs, list(range(1, len(recs) + 1))
    raise TypeError(f"`traces` must be a path, a DataFrame or a list of dicts; got "
                    f"{type(source).__name__}.")


def read_traces(source: Any, *, strict: bool = False, domain_rule: Any = None) -> TraceRecords:
    """Read and validate trace records; drop in-progress runs and duplicated ids.

    Parameters
    ----------
    source : path, DataFrame, or list of dict
        JSONL (one run per line), a JSON array (``.json``), Parquet (same columns,
        ``steps`` a list column), a DataFrame or a list of records.  Format rules:
        ``docs/traces.md`` and ``evaltk/schemas/trace.schema.json``.
    strict : bool
        Raise :class:`~evaltk.errors.SchemaViolation` on the first malformed record
        instead of dropping it to the ledger.
    domain_rule : callable, mapping or None
        ``task -> domain`` for runs whose record carries no ``domain``; a mapping of
        domain to keywords builds a :class:`KeywordDomainRule`; None is
        :func:`domain_from_task`.

    Returns
    -------
    TraceRecords

    Raises
    ------
    UnreadableInput
        The file is missing, empty, or not UTF-8 as a whole.
    SchemaViolation
        With ``strict=True``, the first malformed record (file, line, field).

    Examples
    --------
    >>> recs = read_traces([{"trace_id": "a", "task": "Buy a mug", "status": "complete",
    ...                      "steps": [{"index": 0, "action": "tap", "target": "buy"}]},
    ...                     {"trace_id": "b", "status": "in_progress"}])
    >>> recs.runs[["trace_id", "domain", "domain_source", "n_steps"]].to_dict("records")
    [{'trace_id': 'a', 'domain': 'shopping', 'domain_source': 'rule', 'n_steps': 1}]
    >>> recs.ledger["reason"].tolist()
    [nan, 'in_progress']
    """
    rule = _resolve_rule(domain_rule)
    name, mode, payload, numbers = _load_trace_source(source)
    if mode in ("jsonl", "jsonl-file"):
        if mode == "jsonl":
            pieces = _jsonl_pieces(name, payload, rule, strict)
            line_of: Callable[[int], bytes] = _LinesOf(payload)
        else:
            pieces = _jsonl_file_pieces(payload, rule, strict)
            line_of = payload.line
        merged = _merge(pieces)

        def canon(ks: Sequence[int]) -> list[str]:  # a record's line, by its number
            return [_canon(_parse_line(line_of(int(merged.numbers[k])))) for k in ks]

        return _dedupe(name, merged, canon)

    elif mode == "arrow":
        table = payload
        numbers = np.asarray(numbers, np.int64)
        piece = _arrow_piece(name, table, numbers, rule, strict,
                             lambda k: table.slice(int(k), 1).to_pylist()[0])
        if piece is None:  # not the expected shape: the validator reads every row
            piece = _python_piece(table.to_pylist(), numbers, name, rule, strict)

        def canon(ks: Sequence[int]) -> list[str]:
            return [_canon(table.slice(int(k), 1).to_pylist()[0]) for k in ks]

        pieces = [piece]
    else:
        records = payload
        pieces = [_python_piece(records, np.asarray(numbers, np.int64), name, rule, strict)]

        def canon(ks: Sequence[int]) -> list[str]:
            return [_canon(records[k]) for k in ks]

    return _dedupe(name, _merge(pieces), canon)


def _canon(obj: Any) -> str:
    return json.dumps(_strip_none(obj), sort_keys=True, default=str)


@dataclass
class _Piece:
    """Validated tables of a run of consecutive records (before duplicates are resolved)."""

    numbers: np.ndarray  # line / row number per record
    code: np.ndarray  # 0 complete, 1 in progress, 2 malformed
    tids: list[Any]
    reasons: list[Any]
    fields: list[Any]
    runs: pd.DataFrame
    steps: pd.DataFrame
    dis: pd.DataFrame
    rec: np.ndarray  # record index (within the piece) of each run


def _merge(pieces: Sequence[_Piece]) -> _Piece:
    if len(pieces) == 1:
        return pieces[0]
    rec_off = np.cumsum([0] + [len(p.code) for p in pieces[:-1]])
    run_off = np.cumsum([0] + [len(p.runs) for p in pieces[:-1]])
    return _Piece(
        numbers=np.concatenate([p.numbers for p in pieces]),
        code=np.concatenate([p.code for p in pieces]),
        tids=[t for p in pieces for t in p.tids],
        reasons=[r for p in pieces for r in p.reasons],
        fields=[f for p in pieces for f in p.fields],
        runs=pd.concat([p.runs for p in pieces], ignore_index=True),
        steps=pd.concat([p.steps.assign(run_pos=p.steps["run_pos"] + o)
                         for p, o in zip(pieces, run_off, strict=True)], ignore_index=True),
        dis=pd.concat([p.dis.assign(run_pos=p.dis["run_pos"] + o)
                       for p, o in zip(pieces, run_off, strict=True)], ignore_index=True),
        rec=np.concatenate([p.rec + o for p, o in zip(pieces, rec_off, strict=True)]),
    )


def _python_piece(records: Sequence[Any], numbers: np.ndarray, name: str,
                  rule: Callable[[str], Any], strict: bool) -> _Piece:
    cols, code, tids, reasons, fields = _validate_python(records, strict=strict, name=name,
                                                         numbers=numbers)  # type: ignore[arg-type]  # an int array serves
    runs, steps, dis = _build_tables(
        tid=cols["trace_id"], task=cols["task"], domain=cols["domain"], agent=cols["agent"],
        guide=cols["guide"], declared=cols["declared"], n_steps=cols["n_steps"], s_index=cols["s_index"],
        s_action=cols["s_action"], s_target=cols["s_target"], s_screen=cols["s_screen"],
        s_cons=cols["s_cons"], s_conf=cols["s_conf"], sc_run=cols["sc_run"],
        sc_source=cols["sc_source"], sc_count=cols["sc_count"], rule=rule)
    return _Piece(np.asarray(numbers, np.int64), code, list(tids), list(reasons), list(fields),
                  runs, steps, dis, np.asarray(cols["rec"], np.int64))


def _parse_line(raw: bytes) -> Any:
    """One JSONL line: the parsed value, or a ValueError saying why it is not JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return _parse_json_lines([e])[0]
    return _parse_json_lines([text])[0]


#: A chunk of at most this many lines that Arrow cannot read goes to the per-record
#: validator; a larger one is split in two and each half tried again.
_MIN_CHUNK = 16


#: JSONL is parsed in newline-aligned chunks of about this many bytes: Arrow's parser
#: costs less per byte on chunks than on one very large buffer, and its working
#: memory stays bounded.
_CHUNK_BYTES = 32 << 20


def _chunk_bounds(data: bytes, size: int) -> list[tuple[int, int, int, np.ndarray]]:
    """(start, end, line number of the first line, positions of the newlines inside) of
    newline-aligned chunks."""
    out = []
    start, line0, n = 0, 1, len(data)
    while start < n:
        cut = start + size
        if cut >= n:
            end = n
        else:
            nl = data.find(b"\n", cut)
            end = n if nl < 0 else nl + 1
        newlines = _newlines(data, start, end)
        out.append((start, end, line0, newlines))
        line0 += len(newlines)
        start = end
    return out


def _jsonl_pieces(name: str, data: bytes, rule: Callable[[str], Any],
                  strict: bool) -> list[_Piece]:
    """Read JSONL held in memory with Arrow, chunk by chunk (:func:`_jsonl_chunk`)."""
    pieces: list[_Piece] = []
    state: dict[str, bool] = {}

    def no_line_decodes() -> bool:
        return not any(_decodes(ln) for ln in data.split(b"\n") if ln.strip())

    for start, end, line0, newlines in _chunk_bounds(data, _CHUNK_BYTES):
        _jsonl_chunk(name, data, start, end, line0, newlines, rule, strict, pieces, no_line_decodes, state)
    return pieces


def _jsonl_chunk(name: str, data: bytes, start: int, end: int, line0: int, newlines: np.ndarray,
                 rule: Callable[[str], Any], strict: bool, pieces: list[_Piece],
                 no_line_decodes: Callable[[], bool], state: dict[str, bool]) -> None:
    """The pieces of the newline-aligned chunk ``data[start:end]``, whose first line is line
    ``line0`` of the file: Arrow reads it; where it cannot (a truncated line, a type that
    changes between lines), it is bisected, so only small pieces around bad lines go to the
    per-record validator and the rest keeps the fast path.  ``no_line_decodes``: whether no
    line of the whole file is UTF-8 (asked once per file, in ``state``, when a chunk is not)."""
    clean, n_lines = _no_blank_lines(data, start, end, newlines=newlines)
    # nesting only: a bare NaN / Infinity is found in what Arrow read (_arrow_json)
    held = _io.json_line_screen(data, start, end, newlines=newlines, constants=False)
    clean = clean and not held.any()
    chunk_lines: list[bytes] = []

    def get_chunk_lines() -> list[bytes]:
        if not chunk_lines:
            chunk_lines.extend(ln for ln in data[start:end].split(b"\n") if ln.strip())
        return chunk_lines

    if clean:
        t = _arrow_json(memoryview(data)[start:end], checked=True, held=held)
        if t is not None and t.num_rows == n_lines:
            piece = _arrow_piece(name, t, np.arange(line0, line0 + n_lines, dtype=np.int64),
                                 rule, strict, lambda k: _parse_line(get_chunk_lines()[k]))
            if piece is not None:
                pieces.append(piece)
                return
    # the slow path for this chunk: its lines, bisected (with the lines that hold a bare
    # NaN / Infinity held back too)
    held = _io.json_line_screen(data, start, end, newlines=newlines)
    if not state.get("utf8_checked"):
        try:
            data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            state["utf8_checked"] = True
            if no_line_decodes():
                raise UnreadableInput("not UTF-8 (no line decodes as UTF-8)", file=name) from None
    nums_l, ls, keep_out = [], [], []
    for i, ln in enumerate(data[start:end].split(b"\n")):
        if ln.strip():
            nums_l.append(i + line0)
            ls.append(ln)
            keep_out.append(bool(held[i]))
    _bisect(name, ls, np.asarray(nums_l, np.int64), rule, strict, pieces, np.asarray(keep_out, bool))


class _LinesOf:
    """Line ``number`` (1-based) of JSONL bytes held in memory (split once, when first asked)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.lines: list[bytes] | None = None

    def __call__(self, number: int) -> bytes:
        if self.lines is None:
            self.lines = self.data.split(b"\n")
        return self.lines[number - 1]


@dataclass
class _JsonlFile:
    """A JSONL file read chunk by chunk, never held whole: where each chunk starts (file
    offset, first line number), so a line can be read again (a duplicated trace id)."""

    name: str
    path: Path
    skip: int  # bytes of a UTF-8 byte-order mark before the first line
    offsets: list[int]
    line0s: list[int]
    sizes: list[int]

    def line(self, number: int) -> bytes:
        """Line ``number`` (1-based) of the file, read again from its chunk."""
        k = int(np.searchsorted(self.line0s, number, side="right")) - 1
        _, chunk = next(iter(_io.read_line_blocks(self.path, self.sizes[k], start=self.offsets[k],
                                                  stop=self.offsets[k] + self.sizes[k])))
        return chunk.split(b"\n")[number - self.line0s[k]]

    def no_line_decodes(self) -> bool:
        for _, chunk in _io.read_line_blocks(self.path, _CHUNK_BYTES, start=self.skip):
            if any(_decodes(ln) for ln in chunk.split(b"\n") if ln.strip()):
                return False
        return True


def _jsonl_file(source: str | Path) -> _JsonlFile | None:
    """The JSONL file to read chunk by chunk, or None when ``source`` is to be read whole
    (not a regular file, not JSONL, a JSON array, one chunk or less, or something the
    whole-file reader refuses with its own message)."""
    path = Path(source)
    try:
        st = path.stat()
    except OSError:
        return None
    if (not stat.S_ISREG(st.st_mode) or st.st_size <= _CHUNK_BYTES
            or st.st_size > _io.current_limits().file_bytes):
        return None
    head = b""
    for _, block in _io.read_line_blocks(path, 4096, stop=4096):
        head += block
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head[:4] == b"\x00\x00\xfe\xff":
        return None
    skip = 3 if head[:3] == b"\xef\xbb\xbf" else 0
    body = head[skip:]
    if _kind_of_path(path, body[:8]) != "jsonl" or (path.suffix.lower() == ".json"
                                                     and body.lstrip()[:1] in (b"[", b"")):
        return None
    return _JsonlFile(str(source), path, skip, [], [], [])


def _jsonl_file_pieces(f: _JsonlFile, rule: Callable[[str], Any], strict: bool) -> list[_Piece]:
    """Read a JSONL file chunk by chunk (:func:`_jsonl_chunk`), each chunk freed before the
    next is read: the same pieces, line numbers and ledger as the file held whole.  The
    whole-file checks follow the chunks: an empty file (nothing but whitespace) is refused
    at its end, and the record limit (``Limits.records``) as the count passes it."""
    pieces: list[_Piece] = []
    state: dict[str, bool] = {}
    line0, newlines_seen, content = 1, 0, False
    lim = _io.current_limits().records
    for offset, chunk in _io.read_line_blocks(f.path, _CHUNK_BYTES, start=f.skip):
        newlines = _newlines(chunk)
        newlines_seen += len(newlines)
        content = content or not chunk.isspace()
        if newlines_seen + 1 > lim:  # the count may pass the limit: count the records exactly
            records = sum(len(p.numbers) for p in pieces)  # every non-blank line so far is one
            _io.check_records(records + sum(1 for ln in chunk.split(b"\n") if ln.strip()), file=f.name)
        f.offsets.append(offset)
        f.line0s.append(line0)
        f.sizes.append(len(chunk))
        _jsonl_chunk(f.name, chunk, 0, len(chunk), line0, newlines, rule, strict, pieces,
                     f.no_line_decodes, state)
        line0 += len(newlines)
        del chunk
    if not content:
        raise UnreadableInput("the file is empty", file=f.name)
    return pieces


def _bisect(name: str, ls: list[bytes], nums: np.ndarray, rule: Callable[[str], Any],
            strict: bool, pieces: list[_Piece], held: np.ndarray) -> None:
    # a bare ``null`` line never goes to Arrow (see _BLANK_OR_NULL_LINE), nor a line the
    # screen held back (:func:`evaltk._io.json_line_screen`)
    nulls = np.flatnonzero(np.asarray([ln.strip() == b"null" for ln in ls], bool) | held)

    def python(lo: int, hi: int) -> None:
        recs = [_parse_line(ln) for ln in ls[lo:hi]]
        pieces.append(_python_piece(recs, nums[lo:hi], name, rule, strict))

    def visit(lo: int, hi: int) -> None:
        if hi <= lo:
            return
        if hi - lo <= _MIN_CHUNK:
            python(lo, hi)
            return
        has_null = np.searchsorted(nulls, lo) < np.searchsorted(nulls, hi)
        t = None if has_null else _arrow_json(b"\n".join(ls[lo:hi]), checked=True)
        if t is not None and t.num_rows == hi - lo:
            piece = _arrow_piece(name, t, nums[lo:hi], rule, strict,
                                 lambda k: _parse_line(ls[lo + k]))
            if piece is not None:
                pieces.append(piece)
                return
        mid = (lo + hi) // 2
        visit(lo, mid)
        visit(mid, hi)

    visit(0, len(ls))


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _explain_suspects(suspect: np.ndarray, code: np.ndarray, numbers: np.ndarray, name: str,
                      strict: bool, get_record: Callable[[int], Any]) -> tuple[list[Any], np.ndarray,
                                                                            np.ndarray] | None:
    """The Python validator (the authority) explains each suspect record: malformed (code 2,
    with reason, field and trace id) or in progress (code 1).  ``code`` is updated in place;
    None when the validator finds a suspect record complete (the two paths disagree)."""
    n = len(code)
    tids: list[Any] = [None] * n
    reasons = np.full(n, None, dtype=object)
    fields = np.full(n, None, dtype=object)
    for k in np.flatnonzero(suspect):
        rec = get_record(int(k))
        try:
            if isinstance(rec, Exception):
                raise _Bad(getattr(rec, "field", None), str(rec), getattr(rec, "trace_id", None))
            res_k = _check_trace(rec)
        except _Bad as b:
            if strict:
                raise _error(b, name, int(numbers[k])) from None
            code[k] = 2
            reasons[k] = f"malformed: {b.detail}"
            fields[k] = b.field
            tids[k] = b.trace_id
            continue
        if res_k.status != "in_progress":
            return None
        code[k] = 1
    reasons[code == 1] = "in_progress"
    return tids, reasons, fields


def _kept_guides(guide: pa.Array | None, n_kept: int) -> list[Any]:
    out: list[Any] = [None] * n_kept
    if guide is None:
        return out
    valid = guide.is_valid().to_numpy(zero_copy_only=False)
    if valid.any():
        vals = guide.filter(guide.is_valid()).to_pylist()
        for pos, v in zip(np.flatnonzero(valid), vals, strict=True):
            out[pos] = _strip_none(v)
    return out


def _kept_step_counts(sc: Sequence[tuple[str, np.ndarray, np.ndarray]], code: np.ndarray,
                      kept: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(run position among the kept, source, count) of every recorded step count of a kept run."""
    if not sc:
        return np.zeros(0, np.int64), np.zeros(0, object), np.zeros(0, np.int64)
    new_pos = np.full(len(code), -1, np.int64)
    new_pos[kept] = np.arange(len(kept))
    runs, sources, counts = [], [], []
    for src_name, present, vals in sc:
        r = np.flatnonzero(present & (code == 0))
        runs.append(new_pos[r])
        sources.append(np.full(r.size, src_name, dtype=object))
        counts.append(vals[r])
    return np.concatenate(runs), np.concatenate(sources), np.concatenate(counts)


def _arrow_piece(name: str, table: pa.Table, numbers: np.ndarray, rule: Callable[[str], Any],
                 strict: bool, get_record: Callable[..., Any]) -> _Piece | None:
    """Column-wise validation of an Arrow table; None when it is not the expected shape
    (or the column checks and the validator disagree): then the validator reads it."""
    try:
        res = _validate_arrow(table)
    except UnicodeError:  # pragma: no cover - _arrow_json already checks the names
        return None
    if res is None:
        return None
    cols, code, suspect = res
    code = code.copy()
    explained = _explain_suspects(suspect, code, numbers, name, strict, get_record)
    if explained is None:
        return None
    tids, reasons, fields = explained
    n = table.num_rows
    kept = np.flatnonzero(code == 0)
    tid_all = cols["tid"]
    tid_py = _str_series(tid_all).to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]  # pandas-stubs: na_value=None is accepted
    for k in np.flatnonzero(code == 2):
        tid_py[k] = tids[k]
    lens = np.diff(cols["offsets"])
    all_kept = len(kept) == n
    kept_steps = np.repeat(code == 0, lens)
    kept_idx = pa.array(kept)

    def take(a: pa.Array) -> pa.Array:
        return a if all_kept else a.take(kept_idx)

    def take_steps(a: Any) -> Any:
        if all_kept:
            return a
        if isinstance(a, pa.Array):
            return a.filter(pa.array(kept_steps))
        return a[kept_steps]

    guide = _kept_guides(None if cols["guide"] is None else take(cols["guide"]), len(kept))
    sc_run, sc_src, sc_cnt = _kept_step_counts(cols["sc"], code, kept)
    runs, steps, dis = _build_tables(
        tid=take(tid_all), task=take(cols["task"]), domain=take(cols["domain"]),
        agent=take(cols["agent"]), guide=guide, declared=cols["declared"][kept], n_steps=lens[kept],
        s_index=take_steps(cols["s_index"]), s_action=take_steps(cols["s_action"]),
        s_target=take_steps(cols["s_target"]), s_screen=take_steps(cols["s_screen"]),
        s_cons=take_steps(cols["s_cons"]), s_conf=take_steps(cols["s_conf"]),
        sc_run=sc_run, sc_source=sc_src, sc_count=sc_cnt, rule=rule)
    return _Piece(np.asarray(numbers, np.int64), code, list(tid_py), list(reasons), list(fields),
                  runs, steps, dis, kept.astype(np.int64))


def _dedupe(name: str, piece: _Piece, canon: Callable[[Sequence[int]], list[str]]) -> TraceRecords:
    """Duplicated trace ids among well-formed complete runs.

    Identical records: the first is kept and the repeats dropped.  Conflicting records
    (same id, different content): every copy is dropped, since preferring one would
    be a silent choice.
    """
    numbers, code, tids = piece.numbers, piece.code.copy(), piece.tids
    runs, steps, dis = piece.runs, piece.steps, piece.dis
    rec_of_run = np.asarray(piece.rec, np.int64)
    reasons = list(piece.reasons)
    fields = list(piece.fields)
    dup_mask = runs["trace_id"].duplicated(keep=False).to_numpy()
    drop_run = np.zeros(len(runs), bool)
    if dup_mask.any():
        pos = np.flatnonzero(dup_mask)
        groups = pd.Series(pos).groupby(runs["trace_id"].to_numpy(dtype=object)[pos], sort=False)
        for _tid, g in groups:
            rp = g.to_numpy()
            recs = rec_of_run[rp]
            texts = canon(recs)
            lines = [int(numbers[r]) for r in recs]
            if all(t == texts[0] for t in texts):
                for r, rr in zip(rp[1:], recs[1:], strict=True):
                    drop_run[r] = True
                    reasons[rr] = f"duplicate trace_id: identical to record {lines[0]}"
                    fields[rr] = "trace_id"
            else:
                where = ", ".join(str(x) for x in lines)
                for r, rr in zip(rp, recs, strict=True):
                    drop_run[r] = True
                    reasons[rr] = f"duplicate trace_id: conflicting records {where}; none kept"
                    fields[rr] = "trace_id"
    dropped = code != 0
    if drop_run.any():
        dropped[rec_of_run[drop_run]] = True
        keep = ~drop_run
        newpos = np.cumsum(keep) - 1
        runs = runs[keep].reset_index(drop=True)
        sk = keep[steps["run_pos"].to_numpy()]
        steps = steps[sk].reset_index(drop=True)
        steps["run_pos"] = newpos[steps["run_pos"].to_numpy()]
        dk = keep[dis["run_pos"].to_numpy()]
        dis = dis[dk].reset_index(drop=True)
        dis["run_pos"] = newpos[dis["run_pos"].to_numpy()]
    # the positions as the dtype rule has them (POSITION_DTYPE), once the rows are final
    steps["run_pos"] = steps["run_pos"].to_numpy().astype(POSITION_DTYPE)
    dis["run_pos"] = dis["run_pos"].to_numpy().astype(POSITION_DTYPE)
    tid_series = _s(list(tids))
    ledger = _ledger(name, numbers, tid_series, "run", dropped, reasons, fields)
    # the text columns whose values repeat as categoricals (CATEGORICAL_COLUMNS)
    runs = _encode(runs, CATEGORICAL_COLUMNS["runs"])
    steps = _encode(steps, CATEGORICAL_COLUMNS["steps"])
    dis = _encode(dis, CATEGORICAL_COLUMNS["step_count_disagreements"])
    # the views scoring reads, computed once on the final step columns (Arrow kernels;
    # a categorical column's views are arithmetic on its codes, never remembered)
    _columns.present(steps["screen"])
    _columns.present(steps["target"])
    _columns.adjacent_equal(steps["target"])
    _columns.remember_positions(steps["trace_id"], runs["trace_id"], steps["run_pos"].to_numpy())
    return TraceRecords(runs=runs, steps=steps, step_count_disagreements=dis, ledger=ledger)
