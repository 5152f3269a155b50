"""Encoded views of string columns, remembered for immutable Arrow-backed columns.

Scoring is arithmetic on integers: which answer word, which rater, which measure,
whether a step has a captured screen.  Getting those integers out of a string
column costs a hash or a scan per row; ingest already does that work while it
validates, so it records the result here and scoring reads it back instead of
hashing the same strings again.

Soundness rests on one fact: an Arrow array never changes.  pandas' Arrow-backed
``str`` columns hold a ``pyarrow.ChunkedArray``; every edit (``df.loc[...] = ...``,
``fillna``, a new column) builds a new array object, while copies and slices of the
frame keep the same object.  A derived view is therefore remembered against the
identity of that object (a weak reference: it is forgotten when the array is
freed) and is valid for as long as the object is alive.  A view never holds the
array it describes, nor another column's array, strongly (that would keep the
array, and its entry, alive for ever: issue 19 measured +16.8 MiB per scoring
call from exactly that), and the memo is bounded besides (:data:`MEMO_MAX`
arrays, the oldest forgotten first), so a long-lived worker scoring partition
after partition stays at the size of one partition.  NumPy-backed columns are
mutable in place, so nothing is remembered for them: they are computed each time.

Every view is also computable from scratch by the same function here, so a table
built by hand scores exactly as an ingested one (the tests check both paths).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__: list[str] = []  # internal

_MEMO: dict[int, tuple[weakref.ref, dict[str, Any]]] = {}
#: At most this many arrays are remembered at once (the oldest entry is dropped first).
#: Ingest and scoring of one table remember a few dozen columns; the bound is a safety
#: net behind the weak references, not the mechanism that frees memory.
MEMO_MAX = 256


def _arrow(s: pd.Series) -> Any:
    """The immutable Arrow array behind ``s``, or None (NumPy-backed or object columns)."""
    return getattr(getattr(s, "array", None), "_pa_array", None)


def _forget(key: int, memo: dict[int, Any] = _MEMO) -> Callable[[Any], None]:
    def cb(_ref: Any) -> None:  # the dict is bound here: it outlives module teardown
        memo.pop(key, None)
    return cb


def _frozen(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, tuple):
        for v in value:
            _frozen(v)
    return value


def _narrow(codes: np.ndarray, n_uniques: int) -> np.ndarray:
    """Codes in the smallest signed integer type that holds them (a vocabulary of a few
    words fits int8: an eighth of the memory every later pass reads)."""
    for t in (np.int8, np.int16, np.int32):
        if n_uniques <= np.iinfo(t).max:
            return codes.astype(t, copy=False)
    return codes.astype(np.int64, copy=False)


def remember(s: pd.Series, name: str, value: Any) -> None:
    """Record ``value`` as the ``name`` view of ``s`` (a no-op unless ``s`` is Arrow-backed)."""
    if name == "codes":
        value = (_narrow(np.asarray(value[0]), len(value[1])), value[1])
    arr = _arrow(s)
    if arr is None:
        return
    key = id(arr)
    hit = _MEMO.get(key)
    if hit is None or hit[0]() is not arr:
        try:
            ref = weakref.ref(arr, _forget(key))
        except TypeError:  # pragma: no cover - every pyarrow array supports weak references
            return
        hit = (ref, {})
        _MEMO.pop(key, None)
        while len(_MEMO) >= MEMO_MAX:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = hit
    hit[1][name] = _frozen(value)


def recall(s: pd.Series, name: str) -> Any:
    """The remembered ``name`` view of ``s``, or None."""
    arr = _arrow(s)
    if arr is None:
        return None
    hit = _MEMO.get(id(arr))
    if hit is None or hit[0]() is not arr:
        return None
    return hit[1].get(name)


def _view(s: pd.Series, name: str, compute: Callable[[pd.Series], Any]) -> Any:
    v = recall(s, name)
    if v is None:
        v = compute(s)
        remember(s, name, v)
    return v


# --------------------------------------------------------------------------- the views


def _codes_of(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    u: np.ndarray | pd.Index
    if isinstance(s.dtype, pd.CategoricalDtype):
        u = np.asarray(s.cat.categories, dtype=object)
        return _narrow(s.cat.codes.to_numpy(), len(u)), u
    c, u = pd.factorize(s)
    return _narrow(np.asarray(c), len(u)), np.asarray(u, dtype=object)


def codes(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` with ``uniques[codes[i]] == s[i]`` and -1 where missing; read-only.

    ``codes`` is the smallest signed integer type that holds ``len(uniques)``.

    ``uniques`` holds distinct values but need not be in order of first appearance,
    and may hold values no row uses (ingest registers its vocabularies as they are).
    """
    return _view(s, "codes", _codes_of)


def _present_of(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):  # per category, then a take by code
        codes = s.cat.codes.to_numpy()
        per_cat = np.append(_present_of(pd.Series(s.cat.categories)), False)  # code -1: missing
        return per_cat[codes]
    arr = _arrow(s)
    if arr is not None:
        import pyarrow.compute as pc

        # present: not null, not empty, not whitespace only (whitespace is not evidence)
        blank = pc.or_kleene(pc.equal(pc.utf8_length(arr), 0), pc.utf8_is_space(arr))
        ok = pc.invert(pc.fill_null(blank, True))
        return np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
    ok = s.notna().to_numpy()
    return ok & (s.fillna("").astype(str).str.strip() != "").to_numpy(bool)


def present(s: pd.Series) -> np.ndarray:
    """True where a value is present: not missing and not blank (whitespace is not evidence)."""
    return _view(s, "present", _present_of)


def _adjacent_equal_of(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):  # equal codes, equal values (-1 equals -1)
        c = s.cat.codes.to_numpy()
        return c[1:] == c[:-1]
    arr = _arrow(s)
    if arr is not None:
        import pyarrow.compute as pc

        if len(arr) < 2:
            return np.zeros(0, bool)
        a, b = arr[1:], arr[:-1]
        eq = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        return np.asarray(pc.or_(eq, both_null).to_numpy(zero_copy_only=False), dtype=bool)
    c = pd.factorize(s, use_na_sentinel=False)[0]
    return c[1:] == c[:-1]


def adjacent_equal(s: pd.Series) -> np.ndarray:
    """``s[i + 1] == s[i]`` for every i (missing equals missing)."""
    return _view(s, "adjacent_equal", _adjacent_equal_of)


def categories(s: pd.Series) -> pd.CategoricalDtype:
    """A categorical dtype over the values of ``s`` (which must be unique), in row order.

    Building one checks uniqueness (a hash of every value); remembered, the check runs
    once per column, not once per scoring.
    """
    return _view(s, "categories", _categories_of)


def _categories_of(s: pd.Series) -> pd.CategoricalDtype:
    values = s.array
    if _arrow(s) is not None:  # a zero-copy slice: a new ChunkedArray over the same buffers, same dtype,
        values = values[:]     # so the view does not hold the array it is remembered against
    return pd.CategoricalDtype(pd.Index(values))


def remember_positions(s: pd.Series, runs_trace_id: pd.Series, positions: np.ndarray) -> None:
    """Record that row i of the table holding ``s`` (its ``trace_id`` column) belongs to
    run ``positions[i]`` of the runs table whose ``trace_id`` column is ``runs_trace_id``.

    The record holds only while both columns are the very arrays ingest built: sorting
    or filtering either table builds new arrays, and then positions are found afresh.
    """
    runs_arr = _arrow(runs_trace_id)
    if runs_arr is not None:
        remember(s, "run_pos", (weakref.ref(runs_arr), _compact(positions)))


def _compact(values: np.ndarray, missing: np.ndarray | None = None) -> np.ndarray:
    """An own copy of integer ``values`` in int32 when they fit (positions and step indices
    usually do: half of int64's memory, at 10^6 traces about 220 MiB of remembered
    positions), else int64, with -1 where ``missing`` (no temporary of the values' length
    but the copy); :func:`_wide` reads it back as int64."""
    values = np.asarray(values)
    wide = values.size and (int(values.min()) < -2**31 or int(values.max()) >= 2**31)
    out = np.array(values, dtype=np.int64 if wide else np.int32, copy=True)
    if missing is not None:
        out[missing] = -1
    return out


def _wide(values: np.ndarray) -> np.ndarray:
    """A remembered integer array as int64 (a fresh, writable array the caller owns)."""
    return values.astype(np.int64)


def positions(s: pd.Series, runs_trace_id: pd.Series) -> np.ndarray | None:
    """The run positions (int64) recorded for ``s`` against exactly ``runs_trace_id``, or None."""
    v = recall(s, "run_pos")
    arr = _arrow(runs_trace_id)
    if v is None or arr is None or v[0]() is not arr:
        return None
    return _wide(v[1])


def remember_step_positions(s: pd.Series, steps_trace_id: pd.Series, step_pos: np.ndarray,
                            steps: np.ndarray, missing: np.ndarray | None = None) -> None:
    """Record that answer row i (of the table holding ``s``, its ``trace_id`` column) with
    step value ``steps[i]`` is step row ``step_pos[i]`` of the steps table whose
    ``trace_id`` column is ``steps_trace_id`` (-1 where the answer has no step: in the
    arrays as given, or where ``missing``)."""
    arr = _arrow(steps_trace_id)
    if arr is not None:
        remember(s, "step_pos", (weakref.ref(arr), _compact(step_pos, missing), _compact(steps, missing)))


def step_positions(s: pd.Series, steps_trace_id: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """``(step_pos, steps)`` recorded for ``s`` against exactly ``steps_trace_id``, or None.

    The caller must still compare the table's current step values with ``steps``: the
    ``step`` column is NumPy-backed and can be edited in place.
    """
    v = recall(s, "step_pos")
    arr = _arrow(steps_trace_id)
    if v is None or arr is None or v[0]() is not arr:
        return None
    return _wide(v[1]), _wide(v[2])
