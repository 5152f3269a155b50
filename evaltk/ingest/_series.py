"""Column builders shared by the readers: ``str`` Series, constant columns, codes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import union_categoricals

from .. import _columns
from ._records import _STR


def _s(values: Any) -> pd.Series:
    """A pandas ``str`` Series (Arrow-backed, NaN where absent) from a list, array or Arrow array."""
    if isinstance(values, pd.Series):
        values = values.array
    if hasattr(values, "__arrow_array__"):
        values = pa.array(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):  # large_string: what the str dtype stores (no cast)
        values = pa.array(values if isinstance(values, list | np.ndarray) else list(values),
                          type=pa.large_string(), from_pandas=True)
    elif not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = values.cast(pa.large_string())
    return pd.Series(pd.array(values, dtype=_STR))


def _from_codes(codes: np.ndarray, uniques: Sequence[Any]) -> pd.Series:
    """A ``str`` Series from integer codes into ``uniques`` (-1 or a None unique: absent)."""
    codes = np.asarray(codes, np.int64)
    if not len(uniques):
        return _s(pa.nulls(len(codes), pa.string()))
    d = pa.array(list(uniques), type=pa.large_string())
    arr = pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int64(), mask=codes < 0), d)
    return _s(arr.dictionary_decode())


#: A column of one repeated value (a ledger's source, kind and status, a missing
#: reason) is built from one block of this many rows, shared by all its Arrow chunks:
#: no memory per row, however long the column.
_CONST_BLOCK = 1 << 16


def _const(value: str | None, n: int) -> pd.Series:
    """A ``str`` Series of ``n`` copies of ``value`` (missing for None)."""
    block = pa.repeat(pa.scalar(value, pa.large_string()), min(n, _CONST_BLOCK))
    if n <= _CONST_BLOCK:
        return _s(block)
    k, rest = divmod(n, _CONST_BLOCK)
    chunks = [block] * k + ([block.slice(0, rest)] if rest else [])
    return pd.Series(pd.array(pa.chunked_array(chunks, type=pa.large_string()), dtype=_STR))


def _empty_str(n: int = 0) -> pd.Series:
    return _const(None, n)


def _str_series(a: Any) -> pd.Series:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(a, pa.Array):
        if pa.types.is_null(a.type):
            a = pa.nulls(len(a), pa.string())
        elif not pa.types.is_string(a.type):
            a = a.cast(pa.string())
        return _s(a)
    return _s(list(a))


def _increasing_within(values: np.ndarray, groups: np.ndarray) -> bool:
    """True when ``values`` strictly increase inside each run of equal ``groups``."""
    if values.size < 2:
        return True
    same = groups[1:] == groups[:-1]
    return bool(np.all(values[1:][same] > values[:-1][same]))


def _blocks(n: int) -> Iterable[tuple[int, int]]:
    """(start, stop) of consecutive row blocks of at most ``_BLOCK`` rows covering n rows."""
    return ((i, min(i + _BLOCK, n)) for i in range(0, n, _BLOCK))


#: Row block for long chains of element-wise NumPy work: temporaries of this many
#: rows stay in cache and are reused, where full-length ones would each be new memory.
_BLOCK = 1 << 16


# --------------------------------------------------------------------------- categoricals
# The columns of the returned tables that :data:`~evaltk.ingest.CATEGORICAL_COLUMNS` names
# are pandas categoricals: integer codes into one small ``str`` Index of the values the
# rows use (no unused category), -1 where missing.


def _cat_from_codes(codes: np.ndarray, uniques: Sequence[Any] | np.ndarray, *,
                    all_used: bool = False) -> pd.Series:
    """A categorical Series from codes into ``uniques`` (distinct strings; -1: missing),
    keeping only the categories some row uses, sorted (so a table's categories do not
    depend on the path or the block sizes that read it).  Block by block: no temporary
    of the column's length but the new codes.  ``all_used``: the caller knows every unique
    is used (an Arrow dictionary), so they are not counted."""
    codes = np.asarray(codes)
    uniques = np.asarray(uniques, dtype=object)
    m = len(uniques)
    if all_used:
        keep = np.arange(m)
    else:
        counts = np.zeros(m + 1, np.int64)  # counts[0]: missing (code -1)
        for i, j in _blocks(len(codes)):
            counts += np.bincount(codes[i:j].astype(np.intp) + 1, minlength=m + 1)
        keep = np.flatnonzero(counts[1:])
    order = keep[np.argsort(uniques[keep].astype(str), kind="stable")]  # sorted: the same on every path
    cats = pd.Index(pa.array(uniques[order].tolist(), type=pa.large_string()), dtype=_STR)
    dtype = _columns._narrow(np.zeros(0, np.int64), len(order)).dtype
    if len(order) == m and (order == np.arange(m)).all():
        new = codes.astype(dtype, copy=False)
    else:
        remap = np.full(m + 1, -1, dtype)  # the last entry: code -1 stays -1
        remap[order] = np.arange(len(order))
        new = np.empty(len(codes), dtype)
        for i, j in _blocks(len(codes)):
            np.take(remap, codes[i:j], out=new[i:j])
    return pd.Series(pd.Categorical.from_codes(new, dtype=pd.CategoricalDtype(cats)), copy=False)


def _arrow_codes(a: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` of an Arrow string array, -1 where null (as ``pd.factorize``,
    without its intermediate copies: Arrow encodes every chunk against one dictionary)."""
    enc = pc.dictionary_encode(a)
    chunks = enc.chunks if isinstance(enc, pa.ChunkedArray) else [enc]
    if not chunks:
        return np.zeros(0, np.int64), np.zeros(0, object)
    d = chunks[0].dictionary
    if not all(c.dictionary.equals(d) for c in chunks[1:]):  # pragma: no cover - not in pyarrow 26
        codes, uniq = pd.factorize(pd.Series(pd.array(a, dtype=_STR)))
        return np.asarray(codes, np.int64), np.asarray(uniq, dtype=object)
    return (_int64(pa.chunked_array([c.indices for c in chunks], type=chunks[0].indices.type)),
            np.asarray(d.to_numpy(zero_copy_only=False), dtype=object))


def _int64(a: pa.Array | pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    """An Arrow integer array as int64, ``fill`` where null (one copy, chunk by chunk)."""
    chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    out = np.empty(len(a), np.int64)
    off = 0
    for c in chunks:
        if c.null_count:
            c = pc.fill_null(c, fill)
        out[off:off + len(c)] = c.to_numpy(zero_copy_only=False)
        off += len(c)
    return out


def _categorical(s: Any) -> pd.Series:
    """A text column (a ``str`` Series, an Arrow array or a list) as a categorical Series."""
    if isinstance(s, pd.Series) and isinstance(s.dtype, pd.CategoricalDtype):
        return s.reset_index(drop=True)
    if not isinstance(s, pd.Series) or _columns._arrow(s) is None:
        s = _str_series(s) if not isinstance(s, pd.Series) else _s(s)
    arr = _columns._arrow(s)
    if arr.null_count == len(arr):  # no value at all (an absent optional column)
        return _cat_from_codes(np.full(len(arr), -1, np.int8), [], all_used=True)
    codes, uniq = _arrow_codes(arr)
    # a missing string (NaN in a ``str`` column) is a null in Arrow: code -1; Arrow's
    # dictionary holds only values some row has
    return _cat_from_codes(codes, uniq, all_used=True)


def _sparse_cat(n: int, rows: np.ndarray, values: Sequence[Any]) -> pd.Series:
    """A categorical Series of length n holding ``values`` at ``rows`` and missing elsewhere."""
    codes = np.full(n, -1, np.int64)
    if len(rows):
        c, u = pd.factorize(pd.Series(list(values), dtype=object), use_na_sentinel=True)
        codes[np.asarray(rows, np.int64)] = c
        return _cat_from_codes(codes, np.asarray(u, dtype=object))
    return _cat_from_codes(codes, [])


def _set_rows(s: pd.Series, rows: np.ndarray, values: pd.Series | Sequence[Any]) -> pd.Series:
    """A categorical ``s`` with ``rows`` set to ``values`` (a categorical or a list), new
    categories appended; nothing else is copied but the codes."""
    new = values if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype) \
        else _sparse_cat(len(rows), np.arange(len(rows)), list(values))
    have = set(s.cat.categories)
    cats = list(s.cat.categories) + [c for c in new.cat.categories if c not in have]
    where = {c: i for i, c in enumerate(cats)}
    dtype = _columns._narrow(np.zeros(0, np.int64), len(cats)).dtype  # not int64: a ledger is long
    codes = s.cat.codes.to_numpy().astype(dtype, copy=True)
    new_map = np.asarray([where[c] for c in new.cat.categories] + [-1], dtype)
    codes[np.asarray(rows, np.int64)] = new_map[new.cat.codes.to_numpy()]
    return _cat_from_codes(codes, np.asarray(cats, dtype=object))


def _encode(df: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``df`` with its text columns among ``columns`` as categoricals (the others as they are)."""
    enc = {c: _categorical(df[c]) for c in columns if c in df.columns}
    if not enc:
        return df
    return pd.DataFrame({c: enc.get(c, df[c]) for c in df.columns}, copy=False)


def _concat(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Frames end to end with a new RangeIndex; a column categorical in every frame stays
    categorical (its categories the sorted union; each frame's must all be used, as in
    every table ingest builds), which ``pd.concat`` does only when every frame has the
    same categories."""
    if len(frames) == 1:
        return frames[0].reset_index(drop=True)
    out: dict[str, Any] = {}
    for c in frames[0].columns:
        parts = [f[c] for f in frames]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            # each part uses all its categories, so the union does: sorted, it is the rule's
            out[c] = pd.Series(union_categoricals([p.array for p in parts], sort_categories=True),
                               copy=False)
        else:
            out[c] = pd.concat(parts, ignore_index=True)
    return pd.DataFrame(out, copy=False)
