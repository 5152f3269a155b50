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

    index: list[int]  # type: ignore[assignment]  # the field shadows tuple.index (unused here)
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
    declared: bool = True


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
        dv = obj.get("consequential_declared")
        declared = True if _is_missing(dv) else _check_bool(dv, "consequential_declared")
    except _Bad as b:
        b.trace_id = tid
        raise
    return _CheckedTrace("complete", tid, task, domain, agent, guide, steps, counts, declared)


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
        self.declared: list[bool] = []
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


    def add(self, k: int, res: _CheckedTrace) -> None:
        """Append the validated complete run of record ``k``."""
        st = res.steps
        assert st is not None  # a complete run has its steps
        r = len(self.tid)
        self.rec.append(k)
        self.tid.append(res.trace_id)
        self.task.append(res.task)
        self.domain.append(res.domain)
        self.agent.append(res.agent)
        self.guide.append(res.guide)
        self.declared.append(res.declared)
        self.nsteps.append(len(st.index))
        self.s_idx += st.index
        self.s_act += st.action
        self.s_tgt += st.target
        self.s_scr += st.screen
        self.s_con += st.consequential
        self.s_nc += st.needs_confirmation
        for src, c in res.step_counts:
            self.sc_run.append(r)
            self.sc_src.append(src)
            self.sc_cnt.append(c)

    def columns(self) -> dict[str, Any]:
        return {
            "rec": np.asarray(self.rec, np.int64),
            "trace_id": pa.array(self.tid, pa.string()),
            "task": pa.array(self.task, pa.string()),
            "domain": pa.array(self.domain, pa.string()),
            "agent": pa.array(self.agent, pa.string()),
            "guide": self.guide,
            "declared": np.asarray(self.declared, bool),
            "n_steps": np.asarray(self.nsteps, np.int64),
            "s_index": np.asarray(self.s_idx, np.int64),
            "s_action": pa.array(self.s_act, pa.string()),
            "s_target": pa.array(self.s_tgt, pa.string()),
            "s_screen": pa.array(self.s_scr, pa.string()),
            "s_cons": np.asarray(self.s_con, bool),
            "s_conf": np.asarray(self.s_nc, bool),
            "sc_run": np.asarray(self.sc_run, np.int64),
            "sc_source": self.sc_src,
            "sc_count": np.asarray(self.sc_cnt, np.int64),
        }


def _checked_or_bad(obj: Any) -> _CheckedTrace | _Bad:
    """The validated record, or why it is malformed (a line that failed to decode or
    parse arrives as its exception)."""
    if isinstance(obj, Exception):
        return _Bad(getattr(obj, "field", None), str(obj), getattr(obj, "trace_id", None))
    try:
        return _check_trace(obj)
    except _Bad as b:
        return b


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
        res = _checked_or_bad(obj)
        if isinstance(res, _Bad):
            if strict:
                raise _error(res, name, numbers[k])
            code[k] = 2
            tids[k] = res.trace_id
            reasons[k] = f"malformed: {res.detail}"
            fields[k] = res.field
        elif res.status == "in_progress":
            tids[k] = res.trace_id
            code[k] = 1
            reasons[k] = "in_progress"
        else:
            tids[k] = res.trace_id
            cols.add(k, res)
    return cols.columns(), code, tids, reasons, fields


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
    "consequential_declared": (pa.types.is_boolean, pa.types.is_null),
}


def _fits(t: pa.DataType, preds: Iterable[Callable[[pa.DataType], bool]]) -> bool:
    return any(p(t) for p in preds)


def _mask(a: Any) -> np.ndarray:
    """A boolean Arrow array as a NumPy mask."""
    return a.to_numpy(zero_copy_only=False)


def _empty_text(a: pa.Array) -> np.ndarray:
    """Null or the empty string (a required text field that is missing)."""
    return _mask(pc.fill_null(pc.equal(pc.binary_length(a), 0), True))


def _field_type(table: pa.Table, name: str) -> pa.DataType:
    names = table.column_names
    return table.schema.field(name).type if name in names else pa.null()


def _steps_fit(steps_t: pa.DataType) -> bool:
    """The steps column is null, a list of nulls, or a list of structs with well-typed fields."""
    if pa.types.is_null(steps_t):
        return True
    if not (pa.types.is_list(steps_t) or pa.types.is_large_list(steps_t)):
        return False
    vt = steps_t.value_type
    if pa.types.is_null(vt):
        return True
    if not pa.types.is_struct(vt):
        return False
    fnames = {vt.field(i).name for i in range(vt.num_fields)}
    if "action" not in fnames:
        return False
    return all(_fits(vt.field(f).type, _STEP_TYPES[f]) for f in fnames & set(_STEP_TYPES))


def _shape_fits(table: pa.Table) -> bool:
    """The table has the column types the column-wise checks read (else the Python path)."""
    names = set(table.column_names)
    if "trace_id" not in names or "status" not in names:
        return False
    for col, preds in _RUN_TYPES.items():
        if col in names and not _fits(table.schema.field(col).type, preds):
            return False
    if not _steps_fit(_field_type(table, "steps")):
        return False
    sc_t = _field_type(table, "step_counts")
    if not (pa.types.is_null(sc_t) or (pa.types.is_struct(sc_t) and all(
            pa.types.is_integer(sc_t.field(i).type) or pa.types.is_null(sc_t.field(i).type)
            for i in range(sc_t.num_fields)))):
        return False
    g_t = _field_type(table, "guide")
    return pa.types.is_null(g_t) or pa.types.is_struct(g_t)


class _StepList(NamedTuple):
    """Where each run's steps sit in the flat step arrays."""

    offsets: np.ndarray  # n + 1, from 0
    lens: np.ndarray
    step_run: np.ndarray  # run of each step
    flat: Any  # the flattened step structs, or None
    null_list: np.ndarray | None  # runs whose steps value is null


def _step_list_arrow(table: pa.Table, n: int) -> _StepList:
    if pa.types.is_null(_field_type(table, "steps")):
        offsets, flat, null_list = np.zeros(n + 1, np.int64), None, None
    else:
        steps_arr = table.column("steps").combine_chunks()
        if isinstance(steps_arr, pa.ChunkedArray):  # pragma: no cover - combine_chunks gives Array
            steps_arr = steps_arr.combine_chunks()
        null_list = _mask(steps_arr.is_null())
        offsets = steps_arr.offsets.to_numpy().astype(np.int64)
        offsets = offsets - offsets[0]
        flat = steps_arr.flatten()
    lens = np.diff(offsets)
    step_run = np.repeat(np.arange(n, dtype=np.int64), lens)
    return _StepList(offsets, lens, step_run, flat, null_list)


def _no_step_columns(m: int) -> dict[str, Any]:
    return {"s_index": np.zeros(m, np.int64), "s_action": pa.nulls(m, pa.string()),
            "s_target": pa.nulls(m, pa.string()), "s_screen": pa.nulls(m, pa.string()),
            "s_cons": np.zeros(m, bool), "s_conf": np.zeros(m, bool)}


def _step_indices(index: pa.Array, sl: _StepList, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each step's index (the list order where a run's steps carry none) and the bad ones:
    a missing index in a run that has some, or a negative one."""
    if pa.types.is_null(index.type):
        idx_null = np.ones(m, bool)
        s_index = np.zeros(m, np.int64)
    else:
        idx_null = _mask(index.is_null())
        s_index = index.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    bad = np.zeros(m, bool)
    if idx_null.any():
        n_null = np.bincount(sl.step_run[idx_null], minlength=n)
        positional = (n_null == sl.lens)[sl.step_run]
        within = np.arange(m, dtype=np.int64) - np.repeat(sl.offsets[:-1], sl.lens)
        s_index = np.where(idx_null & positional, within, s_index)
        bad |= idx_null & ~positional
    bad |= s_index < 0
    return s_index, bad


def _runs_with_repeated_index(s_index: np.ndarray, step_run: np.ndarray, n: int) -> np.ndarray:
    bad_run = np.zeros(n, bool)
    if _increasing_within(s_index, step_run):
        return bad_run  # strictly increasing: no repeat
    order = np.lexsort((s_index, step_run))
    sr, si = step_run[order], s_index[order]
    dup = (sr[1:] == sr[:-1]) & (si[1:] == si[:-1])
    if dup.any():
        bad_run[sr[1:][dup]] = True
    return bad_run


def _step_checks(sl: _StepList, n: int, m: int) -> tuple[dict[str, Any], np.ndarray]:
    """Every step well-formed: not null, an index (or none in the run), a non-empty
    action, no index twice in a run.  Returns the step columns and the runs that fail."""
    flat = sl.flat
    fn = {flat.type.field(i).name for i in range(flat.type.num_fields)}

    def field(name: str) -> pa.Array:
        a = flat.field(name) if name in fn else pa.nulls(m, pa.null())
        return pa.nulls(m, pa.string()) if pa.types.is_null(a.type) else a

    def flag(name: str) -> np.ndarray:
        if name not in fn or pa.types.is_null(flat.field(name).type):
            return np.zeros(m, bool)
        return flat.field(name).fill_null(False).to_numpy(zero_copy_only=False).astype(bool)

    s_index, bad_s = _step_indices(flat.field("index") if "index" in fn else pa.nulls(m, pa.null()),
                                   sl, n, m)
    bad_s |= _mask(flat.is_null())
    action = field("action")
    bad_s |= _empty_text(action)
    bad_run = _runs_with_repeated_index(s_index, sl.step_run, n)
    if bad_s.any():
        bad_run[sl.step_run[bad_s]] = True
    cols = {"s_index": s_index,
            "s_action": action if pa.types.is_string(action.type) else pa.nulls(m, pa.string()),
            "s_target": field("target"), "s_screen": field("screen"),
            "s_cons": flag("consequential"), "s_conf": flag("needs_confirmation")}
    return cols, bad_run


def _step_count_checks(table: pa.Table) -> tuple[list[tuple[str, np.ndarray, np.ndarray]], np.ndarray]:
    """Each recorded step count present is non-negative.  Returns (source, present, count)
    per source and the runs with a negative count."""
    sc_t = _field_type(table, "step_counts")
    sc_cols: list[tuple[str, np.ndarray, np.ndarray]] = []
    negative = np.zeros(table.num_rows, bool)
    if not pa.types.is_struct(sc_t):
        return sc_cols, negative
    sc = table.column("step_counts").combine_chunks()
    sc_valid = _mask(sc.is_valid())
    for i in range(sc_t.num_fields):
        f = sc.field(i)
        if pa.types.is_null(f.type):
            continue
        present = _mask(f.is_valid()) & sc_valid
        vals = f.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        negative |= present & (vals < 0)
        sc_cols.append((sc_t.field(i).name, present, vals))
    return sc_cols, negative


def _validate_arrow(table: pa.Table) -> tuple[dict[str, Any], np.ndarray, np.ndarray] | None:
    """Column-wise validation of an Arrow table of trace records.

    Returns ``(columns, code, suspect)`` (code: 0 complete, 1 in-progress; ``suspect``
    marks records the Python validator must look at), or None when the table's
    shape is not the expected one (then the Python path reads everything).
    """
    if not _shape_fits(table):
        return None
    n = table.num_rows

    def col(name: str) -> pa.Array:
        if name in table.column_names:
            return table.column(name).combine_chunks()
        return pa.nulls(n, pa.string())

    tid, status, task = col("trace_id"), col("status"), col("task")
    if pa.types.is_null(task.type):
        task = pa.nulls(n, pa.string())
    is_ip = _mask(pc.fill_null(pc.equal(status, "in_progress"), False))
    is_c = _mask(pc.fill_null(pc.equal(status, "complete"), False))
    # trace_id non-empty, status in the vocabulary; every check below is for complete runs
    suspect = _empty_text(tid) | ~(is_ip | is_c)
    bad_run = _empty_text(task)  # task non-empty
    sl = _step_list_arrow(table, n)
    m = int(sl.offsets[-1])
    if sl.flat is None:
        bad_run |= True  # steps a list
    else:
        bad_run |= sl.null_list
    if sl.flat is not None and m and pa.types.is_struct(sl.flat.type):
        steps_cols, bad_steps = _step_checks(sl, n, m)
        bad_run |= bad_steps
    else:
        steps_cols = _no_step_columns(m)
        if m:
            bad_run |= sl.lens > 0
    sc_cols, negative = _step_count_checks(table)
    suspect |= is_c & (bad_run | negative)
    g_t = _field_type(table, "guide")
    declared = (table.column("consequential_declared").combine_chunks()
                if not pa.types.is_null(_field_type(table, "consequential_declared")) else None)
    columns = {"tid": tid, "task": task, "domain": col("domain"), "agent": col("agent"),
               "declared": np.ones(n, bool) if declared is None
               else declared.fill_null(True).to_numpy(zero_copy_only=False).astype(bool),
               "guide": table.column("guide").combine_chunks() if pa.types.is_struct(g_t) else None,
               "offsets": sl.offsets, "step_run": sl.step_run, "sc": sc_cols, **steps_cols}
    code = np.where(is_ip, 1, 0).astype(np.int8)
    return columns, code, suspect
