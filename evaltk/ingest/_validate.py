"""Validation of trace records: the per-record authority and the column-wise Arrow fast path."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._checks import (
    _NOT_TEXT,
    _as_int,
    _Bad,
    _bad_text,
    _check_bool,
    _check_opt_str,
    _error,
    _is_missing,
    _jtype,
    _safe,
    _show,
    _strip_none,
)
from ._records import _INT64_MAX, TRACE_STATUSES
from ._series import _increasing_within


class _StepColumns(NamedTuple):
    """The validated steps of one run, column by column."""

    index: list[int]
    action: list[str]
    target: list[str | None]
    screen: list[str | None]
    consequential: list[bool]
    needs_confirmation: list[bool]


class _CheckedTrace(NamedTuple):
    """One validated trace record.  An in-progress run carries only its status and id (the
    rest is not checked: a mid-write record is incomplete by nature)."""

    status: str
    trace_id: Any
    task: Any = None
    domain: Any = None
    agent: Any = None
    guide: Any = None
    steps: _StepColumns | None = None
    step_counts: Any = ()


def _required_str(v: Any, field: str) -> str:
    """A required, non-empty text field (``trace_id``, ``task``, a step's ``action``)."""
    if _is_missing(v):
        raise _Bad(field, "is required")
    if not isinstance(v, str):
        raise _Bad(field, f"must be a string; got {_jtype(v)} {_show(v)}")
    if not v:
        raise _Bad(field, "must not be empty")
    if _bad_text(v):
        raise _Bad(field, _NOT_TEXT)
    return v


def _check_status(obj: Mapping[str, Any], tid: str) -> str:
    status = obj.get("status")
    if _is_missing(status):
        raise _Bad("status", "is required (complete or in_progress)", tid)
    if not isinstance(status, str) or status not in TRACE_STATUSES:
        raise _Bad("status", f"must be one of {', '.join(TRACE_STATUSES)}; got {_jtype(status)} "
                   f"{_show(status)}", tid)
    return status


def _check_guide(guide: Any) -> Any:
    """An object (null-valued keys dropped) or None."""
    if _is_missing(guide):
        return None
    if not isinstance(guide, Mapping):
        raise _Bad("guide", f"must be an object or null; got {_jtype(guide)}")
    return _strip_none(guide)


def _check_step_counts(sc: Any) -> list[tuple[str, int]]:
    """``step_counts``: source -> a non-negative integer (a null count is absent)."""
    counts: list[tuple[str, int]] = []
    if _is_missing(sc):
        return counts
    if not isinstance(sc, Mapping):
        raise _Bad("step_counts", f"must be an object of source -> count; got {_jtype(sc)}")
    for k, c in sc.items():
        if isinstance(k, str) and _bad_text(k):
            raise _Bad(f"step_counts.{_safe(k)}", "the source name " + _NOT_TEXT)
        if _is_missing(c):
            continue
        c0, c = c, _as_int(c)
        if c is None:
            raise _Bad(f"step_counts.{_safe(str(k))}", f"must be a non-negative integer; got {_jtype(c0)} {_show(c0)}")
        if c < 0 or c > _INT64_MAX:
            raise _Bad(f"step_counts.{_safe(str(k))}", f"must be a non-negative integer; got {c}")
        counts.append((str(k), int(c)))
    return counts


def _step_list(obj: Mapping[str, Any]) -> list[Any] | tuple[Any, ...]:
    """``steps``: required for a complete run, a list."""
    steps = obj.get("steps")
    if isinstance(steps, np.ndarray):  # a list cell of a DataFrame read from Parquet
        steps = list(steps)
    elif "steps" not in obj or _is_missing(steps):
        raise _Bad("steps", "is required for a complete run (a list of step objects)")
    if not isinstance(steps, list | tuple):
        raise _Bad("steps", f"must be a list of step objects; got {_jtype(steps)}")
    return steps


def _step_index(s: Mapping[str, Any], j: int, positional: bool, seen: dict[int, int]) -> int:
    """Step j's index: given, or its position when no step of the run gives one; unique."""
    f = f"steps[{j}].index"
    i = j if positional else s.get("index")
    if _is_missing(i):
        raise _Bad(f, "is required (give every step an index, or none: then the list order is the index)")
    i = _as_int(i)
    if i is None:
        raise _Bad(f, f"must be a non-negative integer; got {_jtype(s.get('index'))} {_show(s.get('index'))}")
    if i < 0 or i > _INT64_MAX:
        raise _Bad(f, f"must be a non-negative integer; got {i}")
    i = int(i)
    if i in seen:
        raise _Bad(f, f"duplicated step index {i} (also at steps[{seen[i]}])")
    seen[i] = j
    return i


def _check_steps(steps: Sequence[Any]) -> _StepColumns:
    """Every step an object with an index and an action; optional text and flags."""
    cols = _StepColumns([], [], [], [], [], [])
    seen: dict[int, int] = {}
    # no step carries an index: the list order is the index (0, 1, 2, ...)
    positional = all(isinstance(s, Mapping) and _is_missing(s.get("index")) for s in steps)
    for j, s in enumerate(steps):
        f = f"steps[{j}]"
        if not isinstance(s, Mapping):
            raise _Bad(f, f"a step must be an object; got {_jtype(s)}")
        i = _step_index(s, j, positional, seen)
        a = _required_str(s.get("action"), f + ".action")
        cols.index.append(i)
        cols.action.append(a)
        cols.target.append(_check_opt_str(s.get("target"), f + ".target"))
        cols.screen.append(_check_opt_str(s.get("screen"), f + ".screen"))
        cols.consequential.append(_check_bool(s.get("consequential"), f + ".consequential"))
        cols.needs_confirmation.append(_check_bool(s.get("needs_confirmation"), f + ".needs_confirmation"))
    return cols


def _check_trace(obj: Any) -> _CheckedTrace:
    """Validate one trace record; raises ``_Bad`` naming the field (docs/traces.md, "The
    trace file").  Checked in the order of the contract: the record is an object, its
    ``trace_id`` and ``status``; an in-progress run stops there; then ``task``, the
    optional ``domain``, ``agent``, ``guide``, ``step_counts``, and the steps."""
    if not isinstance(obj, Mapping):
        raise _Bad(None, f"a trace record must be a JSON object; got {_jtype(obj)}")
    tid = _required_str(obj.get("trace_id"), "trace_id")
    if _check_status(obj, tid) == "in_progress":
        return _CheckedTrace("in_progress", tid)
    try:
        task = _required_str(obj.get("task"), "task")
        domain = _check_opt_str(obj.get("domain"), "domain")
        agent = _check_opt_str(obj.get("agent"), "agent")
        guide = _check_guide(obj.get("guide"))
        counts = _check_step_counts(obj.get("step_counts"))
        steps = _check_steps(_step_list(obj))
    except _Bad as b:
        b.trace_id = tid
        raise
    return _CheckedTrace("complete", tid, task, domain, agent, guide, steps, counts)


# --------------------------------------------------------------------------- trace readers


class _TraceCols:
    """Column buffers for the validated complete runs (Python path)."""

    def __init__(self) -> None:
        self.rec: list[int] = []  # position in the record list
        self.tid: list[str] = []
        self.task: list[str] = []
        self.domain: list[str | None] = []
        self.agent: list[str | None] = []
        self.guide: list[Any] = []
        self.nsteps: list[int] = []
        self.s_idx: list[int] = []
        self.s_act: list[str] = []
        self.s_tgt: list[str | None] = []
        self.s_scr: list[str | None] = []
        self.s_con: list[bool] = []
        self.s_nc: list[bool] = []
        self.sc_run: list[int] = []
        self.sc_src: list[str] = []
        self.sc_cnt: list[int] = []


def _validate_python(records: Sequence[Any], *, strict: bool, name: str,
                     numbers: Sequence[int]) -> tuple[dict[str, Any], np.ndarray, list, list, list]:
    """Per-record validation.  Returns (columns, status codes, trace ids, reasons, fields).

    Status code per record: 0 complete & well-formed, 1 in-progress, 2 malformed.
    """
    n = len(records)
    code = np.zeros(n, np.int8)
    tids: list[Any] = [None] * n
    reasons: list[Any] = [None] * n
    fields: list[Any] = [None] * n
    cols = _TraceCols()
    for k, obj in enumerate(records):
        if isinstance(obj, Exception):  # a line that failed to decode or parse
            bad = _Bad(None, str(obj))
        else:
            try:
                res = _check_trace(obj)
            except _Bad as b:
                bad = b
            else:
                tids[k] = res.trace_id
                if res.status == "in_progress":
                    code[k] = 1
                    reasons[k] = "in_progress"
                    continue
                st = res.steps
                r = len(cols.tid)
                cols.rec.append(k)
                cols.tid.append(res.trace_id)
                cols.task.append(res.task)
                cols.domain.append(res.domain)
                cols.agent.append(res.agent)
                cols.guide.append(res.guide)
                cols.nsteps.append(len(st.index))
                cols.s_idx += st.index
                cols.s_act += st.action
                cols.s_tgt += st.target
                cols.s_scr += st.screen
                cols.s_con += st.consequential
                cols.s_nc += st.needs_confirmation
                for src, c in res.step_counts:
                    cols.sc_run.append(r)
                    cols.sc_src.append(src)
                    cols.sc_cnt.append(c)
                continue
        if strict:
            raise _error(bad, name, numbers[k])
        code[k] = 2
        tids[k] = bad.trace_id
        reasons[k] = f"malformed: {bad.detail}"
        fields[k] = bad.field
    nst = np.asarray(cols.nsteps, np.int64)
    columns = {
        "rec": np.asarray(cols.rec, np.int64),
        "trace_id": pa.array(cols.tid, pa.string()),
        "task": pa.array(cols.task, pa.string()),
        "domain": pa.array(cols.domain, pa.string()),
        "agent": pa.array(cols.agent, pa.string()),
        "guide": cols.guide,
        "n_steps": nst,
        "s_index": np.asarray(cols.s_idx, np.int64),
        "s_action": pa.array(cols.s_act, pa.string()),
        "s_target": pa.array(cols.s_tgt, pa.string()),
        "s_screen": pa.array(cols.s_scr, pa.string()),
        "s_cons": np.asarray(cols.s_con, bool),
        "s_conf": np.asarray(cols.s_nc, bool),
        "sc_run": np.asarray(cols.sc_run, np.int64),
        "sc_source": cols.sc_src,
        "sc_count": np.asarray(cols.sc_cnt, np.int64),
    }
    return columns, code, tids, reasons, fields


_STEP_TYPES = {
    "index": (pa.types.is_integer, pa.types.is_null),
    "action": (pa.types.is_string,),
    "target": (pa.types.is_string, pa.types.is_null),
    "screen": (pa.types.is_string, pa.types.is_null),
    "consequential": (pa.types.is_boolean, pa.types.is_null),
    "needs_confirmation": (pa.types.is_boolean, pa.types.is_null),
}
_RUN_TYPES = {
    "trace_id": (pa.types.is_string,),
    "status": (pa.types.is_string,),
    "task": (pa.types.is_string, pa.types.is_null),
    "domain": (pa.types.is_string, pa.types.is_null),
    "agent": (pa.types.is_string, pa.types.is_null),
}


def _fits(t: pa.DataType, preds: Iterable[Callable[[pa.DataType], bool]]) -> bool:
    return any(p(t) for p in preds)


def _validate_arrow(table: pa.Table) -> tuple[dict[str, Any], np.ndarray, np.ndarray] | None:
    """Column-wise validation of an Arrow table of trace records.

    Returns ``(columns, code, suspect)`` (code: 0 complete, 1 in-progress; ``suspect``
    marks records the Python validator must look at), or None when the table's
    shape is not the expected one (then the Python path reads everything).
    """
    names = set(table.column_names)
    if "trace_id" not in names or "status" not in names:
        return None
    for col, preds in _RUN_TYPES.items():
        if col in names and not _fits(table.schema.field(col).type, preds):
            return None
    n = table.num_rows
    steps_t = table.schema.field("steps").type if "steps" in names else pa.null()
    if pa.types.is_null(steps_t):
        steps_arr = None
    elif pa.types.is_list(steps_t) or pa.types.is_large_list(steps_t):
        vt = steps_t.value_type
        if pa.types.is_null(vt):
            steps_arr = table.column("steps").combine_chunks()
        elif pa.types.is_struct(vt):
            fnames = {vt.field(i).name for i in range(vt.num_fields)}
            if "action" not in fnames:
                return None
            for f in fnames & set(_STEP_TYPES):
                if not _fits(vt.field(f).type, _STEP_TYPES[f]):
                    return None
            steps_arr = table.column("steps").combine_chunks()
        else:
            return None
    else:
        return None
    sc_t = table.schema.field("step_counts").type if "step_counts" in names else pa.null()
    if not (pa.types.is_null(sc_t) or (pa.types.is_struct(sc_t) and all(
            pa.types.is_integer(sc_t.field(i).type) or pa.types.is_null(sc_t.field(i).type)
            for i in range(sc_t.num_fields)))):
        return None
    g_t = table.schema.field("guide").type if "guide" in names else pa.null()
    if not (pa.types.is_null(g_t) or pa.types.is_struct(g_t)):
        return None

    def col(name: str) -> pa.Array:
        if name in names:
            return table.column(name).combine_chunks()
        return pa.nulls(n, pa.string())

    tid = col("trace_id")
    status = col("status")
    task = col("task")
    if pa.types.is_null(task.type):
        task = pa.nulls(n, pa.string())
    suspect = np.zeros(n, bool)
    # trace_id: non-null, non-empty; status in the vocabulary
    suspect |= pc.fill_null(pc.equal(pc.binary_length(tid), 0), True).to_numpy(zero_copy_only=False)
    is_ip = pc.fill_null(pc.equal(status, "in_progress"), False).to_numpy(zero_copy_only=False)
    is_c = pc.fill_null(pc.equal(status, "complete"), False).to_numpy(zero_copy_only=False)
    suspect |= ~(is_ip | is_c)
    # complete runs: task non-empty, steps a list, every step well-formed
    suspect |= is_c & pc.fill_null(pc.equal(pc.binary_length(task), 0), True).to_numpy(zero_copy_only=False)
    if steps_arr is None:
        suspect |= is_c
        offsets = np.zeros(n + 1, np.int64)
        flat = None
    else:
        if isinstance(steps_arr, pa.ChunkedArray):  # pragma: no cover - combine_chunks gives Array
            steps_arr = steps_arr.combine_chunks()
        suspect |= is_c & steps_arr.is_null().to_numpy(zero_copy_only=False)
        offsets = steps_arr.offsets.to_numpy().astype(np.int64)
        offsets = offsets - offsets[0]
        flat = steps_arr.flatten()
    lens = np.diff(offsets)
    m = int(offsets[-1])
    step_run = np.repeat(np.arange(n, dtype=np.int64), lens)
    if flat is not None and m and pa.types.is_struct(flat.type):
        ftype = flat.type
        fn = {ftype.field(i).name for i in range(ftype.num_fields)}

        def sfield(name: str) -> pa.Array:
            return flat.field(name) if name in fn else pa.nulls(m, pa.null())

        bad_s = flat.is_null().to_numpy(zero_copy_only=False)
        index = sfield("index")
        if pa.types.is_null(index.type):
            idx_null = np.ones(m, bool)
            s_index = np.zeros(m, np.int64)
        else:
            idx_null = index.is_null().to_numpy(zero_copy_only=False)
            s_index = index.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if idx_null.any():
            # a run whose steps carry no index at all: the list order is the index
            n_null = np.bincount(step_run[idx_null], minlength=n)
            positional = (n_null == lens)[step_run]
            within = np.arange(m, dtype=np.int64) - np.repeat(offsets[:-1], lens)
            s_index = np.where(idx_null & positional, within, s_index)
            bad_s |= idx_null & ~positional
        bad_s |= s_index < 0
        action = sfield("action")
        bad_s |= pc.fill_null(pc.equal(pc.binary_length(action), 0), True).to_numpy(zero_copy_only=False)
        # duplicated index within a run
        if _increasing_within(s_index, step_run):
            dup = np.zeros(max(m - 1, 0), bool)  # strictly increasing: no repeat
            sr = step_run
        else:
            order = np.lexsort((s_index, step_run))
            sr, si = step_run[order], s_index[order]
            dup = (sr[1:] == sr[:-1]) & (si[1:] == si[:-1])
        bad_run = np.zeros(n, bool)
        if dup.any():
            bad_run[sr[1:][dup]] = True
        if bad_s.any():
            bad_run[step_run[bad_s]] = True
        suspect |= is_c & bad_run

        def sstr(name: str) -> pa.Array:
            a = sfield(name)
            if pa.types.is_null(a.type):
                return pa.nulls(m, pa.string())
            return a

        def sbool(name: str) -> np.ndarray:
            a = sfield(name)
            if pa.types.is_null(a.type):
                return np.zeros(m, bool)
            return a.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)

        steps_cols = {"s_index": s_index, "s_action": action if pa.types.is_string(action.type)
                      else pa.nulls(m, pa.string()),
                      "s_target": sstr("target"), "s_screen": sstr("screen"),
                      "s_cons": sbool("consequential"), "s_conf": sbool("needs_confirmation")}
    else:
        steps_cols = {"s_index": np.zeros(m, np.int64), "s_action": pa.nulls(m, pa.string()),
                      "s_target": pa.nulls(m, pa.string()), "s_screen": pa.nulls(m, pa.string()),
                      "s_cons": np.zeros(m, bool), "s_conf": np.zeros(m, bool)}
        if m:
            suspect |= is_c & (lens > 0)
    # step_counts: non-negative
    sc_cols: list[tuple[str, np.ndarray, np.ndarray]] = []
    if pa.types.is_struct(sc_t):
        sc = table.column("step_counts").combine_chunks()
        sc_valid = sc.is_valid().to_numpy(zero_copy_only=False)
        for i in range(sc_t.num_fields):
            f = sc.field(i)
            if pa.types.is_null(f.type):
                continue
            present = f.is_valid().to_numpy(zero_copy_only=False) & sc_valid
            vals = f.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            suspect |= is_c & present & (vals < 0)
            sc_cols.append((sc_t.field(i).name, present, vals))
    columns = {"tid": tid, "task": task, "domain": col("domain"), "agent": col("agent"),
               "guide": table.column("guide").combine_chunks() if pa.types.is_struct(g_t) else None,
               "offsets": offsets, "step_run": step_run, "sc": sc_cols, **steps_cols}
    code = np.where(is_ip, 1, 0).astype(np.int8)
    return columns, code, suspect
