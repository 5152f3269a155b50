"""Column builders shared by the readers: ``str`` Series, constant columns, codes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

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
