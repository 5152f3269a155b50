"""The ratings adapter: every input form of the agreement functions as category codes, once.

An agreement function accepts a units x raters array, a units x raters DataFrame,
two label sequences (arrays, lists, Series of any dtype: numbers, text, pandas
``str`` / Arrow-backed strings, categoricals), or a long table (``data=``, one row
per rating, what the CLI reads).  Each form becomes the same thing here: a
``(n_units, n_raters)`` matrix of codes into the distinct labels (:class:`_Uniques`),
built column by column with the fastest encoder for the column's dtype (a bincount
for integers, the categories of a categorical, :func:`pandas.factorize` for text),
never through an object-dtype copy of the whole table.  :func:`_encode_uniques`
then maps the distinct labels onto the category domain (declared or observed),
which is the only per-label Python work.

Rules applied to the distinct labels (so once per label, not per cell):

- a missing label (``None``, NaN, ``pd.NA``, a blank text cell, the text ``"nan"`` a
  NaN becomes in a NumPy string array) is no rating: :func:`evaltk.values.is_missing_label`,
  the one rule;
- an abstain label (``abstain=``) is excluded and counted;
- an infinite number is refused (it is no rating at any level of measurement);
- a label outside the declared ``categories`` is refused.

Unit and rater names (a DataFrame's index and columns, the long table's item and rater
labels) are looked up only when an error names them: no ``list(index)`` on the way in.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _io
from .._validation import as_frame, check_columns
from .._validation import plain as _plain
from ..errors import InputError
from ..values import EvaltkWarning, abstain_labels, is_missing_label
from ._result import user_stacklevel


class CategoryDomainWarning(EvaltkWarning):
    """The observed labels are a strict subset of the declared category domain (weighted/ordinal)."""


@dataclass(frozen=True)
class _Ratings:
    """Ratings encoded as category codes: -1 missing, -2 abstained, else index in ``categories``."""

    codes: np.ndarray  # (n_units, n_raters) intp; int8 only when the caller asked for narrow codes
    categories: tuple[Any, ...]
    n_missing: int
    n_abstained: int
    observed: np.ndarray  # bool (q,), category observed among pairable ratings
    declared: bool


class _Names:
    """Unit and rater names for error messages, looked up only when one is needed.

    ``units`` / ``raters`` are anything indexable by position (a pandas ``Index``, the
    uniques of a factorize) or None (then the position is the name).
    """

    __slots__ = ("raters", "units")

    def __init__(self, units: Any = None, raters: Any = None) -> None:
        self.units = units
        self.raters = raters

    def unit(self, i: int) -> Any:
        return i if self.units is None else _plain(self.units[i])

    def rater(self, g: int) -> Any:
        return g if self.raters is None else _plain(self.raters[g])


# =========================================================================== distinct labels


def _sort_labels(labels: list[Any]) -> list[Any]:
    try:
        return sorted(labels)
    except TypeError:
        return labels


def _int_uniques(x: np.ndarray, lo: int | None = None, hi: int | None = None, *, as_array: bool = False
                 ) -> tuple[np.ndarray, Any, np.ndarray] | None:
    """Codes, unique values and counts of an int array by bincount (None when the range is huge).

    ``lo`` and ``hi`` may pass the known minimum and maximum; ``as_array=True`` gives the
    unique values as an array (many ids) rather than a list (a few labels).
    """
    if x.size == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, np.int64) if as_array else [], np.zeros(0, dtype=np.intp)
    if lo is None or hi is None:
        lo, hi = int(x.min()), int(x.max())
    if hi - lo > 1_000_000:
        return None
    shifted = x - lo if lo else x
    return _present_codes(shifted, np.bincount(shifted, minlength=hi - lo + 1), lo, as_array=as_array)


def _present_codes(shifted: np.ndarray, cnt: np.ndarray, lo: int, *, as_array: bool = False,
                   dtype: Any = np.intp) -> tuple[np.ndarray, Any, np.ndarray]:
    """Codes (of ``dtype``), unique values and counts from non-negative ints ``shifted`` (the
    values minus ``lo``) and the occurrences ``cnt`` of each of ``0 .. len(cnt) - 1``: the values
    that occur, in order."""
    present = cnt > 0
    hi = lo + cnt.size - 1
    if bool(present.all()):             # every value in [lo, hi] occurs: the shift is the code
        return (shifted.astype(dtype, copy=False), np.arange(lo, hi + 1) if as_array else list(range(lo, hi + 1)),
                cnt)
    lookup = (np.cumsum(present, dtype=np.intp) - 1).astype(dtype, copy=False)
    values = np.flatnonzero(present) + lo
    return np.take(lookup, shifted), values if as_array else values.tolist(), cnt[present]


class _Uniques(NamedTuple):
    """A flat label array as codes into its distinct labels (-1 where missing)."""

    codes: np.ndarray           # (n,) intp, -1 missing; int8 from a few small whole numbers (widen to compute)
    labels: list[Any]           # distinct non-missing labels
    counts: np.ndarray          # occurrences of each label
    missing: np.ndarray | None  # bool (n,), None when nothing is missing


def _uniques(flat: np.ndarray) -> _Uniques:
    """Distinct labels of any dtype: bincount for ints and integer-valued floats, else unique / factorize."""
    if flat.dtype.kind in "iub":
        return _int_label_uniques(flat)
    if flat.dtype.kind == "f":
        return _float_label_uniques(flat)
    if flat.dtype.kind == "U":
        return _fixed_text_uniques(flat)
    obj = flat.astype(object) if flat.dtype.kind != "O" else flat
    return _factorized(obj)


def _factorized(values: Any) -> _Uniques:
    """:func:`pandas.factorize` of any 1-D array (object, pandas ``str``, Arrow, nullable) as :class:`_Uniques`."""
    if isinstance(values, pd.arrays.NumpyExtensionArray):  # its NumPy array: pandas 2.3's factorize
        values = values.to_numpy()                          # deprecates the wrapper
    ucodes, u = pd.factorize(values, use_na_sentinel=True)
    miss = ucodes < 0
    has_missing = bool(miss.any())
    counts = np.bincount(ucodes[~miss] if has_missing else ucodes, minlength=len(u))
    labels = u.tolist() if hasattr(u, "tolist") else list(u)
    return _Uniques(ucodes.astype(np.intp, copy=False), labels, counts, miss if has_missing else None)


#: Odd 64-bit multipliers of the fixed-width text hash (a constant, so codes never depend on a seed).
_TEXT_HASH = np.uint64(0x9E3779B97F4A7C15)


def _fixed_text_uniques(flat: np.ndarray) -> _Uniques:
    """A NumPy fixed-width text array by hashing its code points, not through a Python object per cell.

    Each row's code points fold into one 64-bit key (Horner, wrapping), the keys are
    factorized, and every cell is then compared with its label's first cell, so a hash
    collision can never merge two labels (it falls back to the exact object path).  Labels
    come in order of first appearance, as :func:`pandas.factorize` gives them.
    """
    n = flat.size
    width = flat.dtype.itemsize // 4
    if n == 0 or width == 0:
        return _factorized(flat.astype(object))
    units = np.ascontiguousarray(flat).view(np.uint32).reshape(n, width)
    key = units[:, 0].astype(np.uint64)
    with np.errstate(over="ignore"):
        for j in range(1, width):
            key *= _TEXT_HASH
            key += units[:, j]
    codes, ukeys = pd.factorize(key)
    k = len(ukeys)
    first = np.full(k, n, dtype=np.intp)
    np.minimum.at(first, codes, np.arange(n, dtype=np.intp))
    reps = flat[first]
    if not np.array_equal(reps[codes], flat):  # a collision: the exact path
        return _factorized(flat.astype(object))
    return _Uniques(codes.astype(np.intp, copy=False), reps.tolist(), np.bincount(codes, minlength=k), None)


def _int_label_uniques(flat: np.ndarray) -> _Uniques:
    got = _int_uniques(flat.astype(np.int64) if flat.dtype.kind == "b" else flat)
    if got is None:  # a huge range: sort instead of bincount
        u, inv, c = np.unique(flat, return_inverse=True, return_counts=True)
        got = inv.reshape(-1), u.tolist(), c
    return _Uniques(*got, None)  # type: ignore[call-arg]  # got: codes, labels, counts


def _float_label_uniques(flat: np.ndarray) -> _Uniques:
    cast = _int8_cast(flat) if flat.size and -128.0 <= flat[0] <= 127.0 else None
    if cast is not None and bool(cast[1].all()):
        # every cell casts back equal from int8: no NaN (it never compares equal) and only whole
        # numbers in [-128, 127], so neither an isnan nor a float min / max pass is needed
        small = cast[0]
        lo, hi = int(small.min()), int(small.max())
        if hi - lo <= 127:
            return _Uniques(*_small_codes(small, lo, hi), None)
    miss = np.isnan(flat)
    has_missing = bool(miss.any())
    got = _integral_float_uniques(flat, miss, has_missing, cast) if flat.size and not bool(miss.all()) else None
    if got is None:
        vals = flat[~miss] if has_missing else flat
        u, inv, c = np.unique(vals, return_inverse=True, return_counts=True)
        codes = inv.reshape(-1)
        if has_missing:
            codes = np.full(flat.shape, -1, dtype=np.intp)
            codes[~miss] = inv.reshape(-1)
        got = codes, u.tolist(), c
    return _Uniques(*got, miss if has_missing else None)  # type: ignore[call-arg]  # got: codes, labels, counts


def _integral_float_uniques(flat: np.ndarray, miss: np.ndarray, has_missing: bool,
                            cast: tuple[np.ndarray, np.ndarray] | None = None
                            ) -> tuple[np.ndarray, list[Any], np.ndarray] | None:
    """Integer-valued floats (the usual case) by bincount, NaN as a sentinel below the minimum.

    ``cast`` is the :func:`_int8_cast` of ``flat`` when it was already made."""
    mn, mx = float(np.fmin.reduce(flat)), float(np.fmax.reduce(flat))
    if not (abs(mn) < 2 ** 52 and abs(mx) < 2 ** 52 and mx - mn <= 1_000_000):
        return None
    lo = int(mn) - 1 if has_missing else int(mn)   # missing cells take the sentinel lo
    if -128 <= lo and mx <= 127 and mx - lo <= 127:
        got = _small_float_uniques(flat, miss, has_missing, lo, int(mx), cast)
    else:
        filled = flat
        if has_missing:
            filled = flat.copy()
            np.copyto(filled, mn - 1.0, where=miss)
        iv = filled.astype(np.int64)
        if not np.array_equal(iv, filled):
            return None
        got = _int_uniques(iv, lo, int(mx))
    if got is None or not has_missing:
        return got
    codes0, labels0, counts0 = got
    codes0 -= 1   # the sentinel is unique value 0: shift it to -1 (missing); codes0 is a new array
    return codes0, labels0[1:], counts0[1:]


def _int8_cast(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``flat`` cast to int8 and where the cast gives the value back (never at a NaN, a fraction
    or a number outside [-128, 127])."""
    with np.errstate(invalid="ignore"):   # NaN casts to an arbitrary int8, which the check refuses
        small = flat.astype(np.int8)
    return small, small == flat


def _small_float_uniques(flat: np.ndarray, miss: np.ndarray, has_missing: bool, lo: int, hi: int,
                         cast: tuple[np.ndarray, np.ndarray] | None = None
                         ) -> tuple[np.ndarray, list[Any], np.ndarray] | None:
    """:func:`_integral_float_uniques` for values in a range of at most 128 integers (the usual
    ratings): one int8 cast checked against the floats, so no float copy and no int64 check
    array (each a full-size temporary, which dominated the time of the multi-rater
    coefficients on float ratings)."""
    small, exact = _int8_cast(flat) if cast is None else cast
    if has_missing:
        exact |= miss
    if not bool(exact.all()):
        return None
    del exact
    if has_missing:
        small[miss] = lo
    return _small_codes(small, lo, hi)


#: At most this many distinct values of int8 cells are counted by one comparison each (a pass
#: over 1-byte cells) rather than by a bincount, which needs the cells as intp first.
_FEW_VALUES = 8


def _small_codes(small: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, list[Any], np.ndarray]:
    """Codes, values and counts of int8 cells ``small`` holding values in ``[lo, hi]``, a range of at
    most 128 (``small`` is shifted in place).  A few values keep int8 codes (``small`` itself when
    every value occurs): no intp copy of the cells, 8 times their size, unless a caller widens them."""
    if lo:
        small -= np.int8(lo)               # now in [0, hi - lo], at most 127: no overflow
    k = hi - lo + 1
    if k <= _FEW_VALUES:
        cnt = np.array([np.count_nonzero(small == v) for v in range(k)], dtype=np.intp)
        codes, labels, counts = _present_codes(small, cnt, 0, dtype=np.int8)
    else:
        got = _int_uniques(small.astype(np.intp), 0, hi - lo)
        assert got is not None  # a range of at most 128
        codes, labels, counts = got
    return codes, [v + lo for v in labels], counts


def _column_uniques(col: Any) -> _Uniques:
    """Distinct labels of one column (a Series, an array, a list) by the encoder its dtype allows."""
    if isinstance(col, pd.Series | pd.Index):
        dtype = col.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            codes = np.asarray(col.cat.codes if isinstance(col, pd.Series) else col.codes).astype(np.intp)  # type: ignore[attr-defined]  # a categorical Index has codes
            miss = codes < 0
            has_missing = bool(miss.any())
            counts = np.bincount(codes[~miss] if has_missing else codes, minlength=len(dtype.categories))
            return _Uniques(codes, dtype.categories.tolist(), counts, miss if has_missing else None)
        if isinstance(dtype, np.dtype) and dtype.kind in "iufb":
            return _uniques(col.to_numpy())
        return _factorized(col.array if isinstance(col, pd.Series) else col)
    arr = _as_array(col)
    if arr.dtype.kind in "iufbU":
        return _uniques(arr)
    return _factorized(arr.astype(object) if arr.dtype.kind != "O" else arr)


def _label_union(cols: Sequence[_Uniques]) -> tuple[list[Any], list[np.ndarray], np.ndarray]:
    """The union of per-column labels (by Python equality, as :func:`pandas.factorize` on the
    whole table would merge them: ``1``, ``1.0`` and ``True`` are one label), each column's
    remap from its label codes to the union's (``-1`` last: a missing code maps there) and the
    union's counts."""
    index: dict[Any, int] = {}
    labels: list[Any] = []
    remaps = []
    for u in cols:
        remap = np.empty(len(u.labels) + 1, dtype=np.intp)
        remap[-1] = -1
        for j, lab in enumerate(u.labels):
            k = index.get(lab)
            if k is None:
                k = index[lab] = len(labels)
                labels.append(lab)
            remap[j] = k
        remaps.append(remap)
    counts = np.zeros(len(labels), dtype=np.int64)
    for u, remap in zip(cols, remaps, strict=True):
        np.add.at(counts, remap[:-1], u.counts)
    return labels, remaps, counts


def _merge_columns(cols: Sequence[_Uniques], n: int) -> _Uniques:
    """Per-column uniques as one row-major ``(n * r)`` code array over the union of their labels
    (:func:`_label_union`)."""
    labels, remaps, counts = _label_union(cols)
    codes = np.empty((n, len(cols)), dtype=np.intp)
    for g, (u, remap) in enumerate(zip(cols, remaps, strict=True)):
        if u.missing is None and np.array_equal(remap[:-1], np.arange(len(u.labels))):
            codes[:, g] = u.codes
        else:
            codes[:, g] = np.take(remap, u.codes)
    has_missing = any(u.missing is not None for u in cols)
    flat = codes.reshape(-1)
    return _Uniques(flat, labels, counts, (flat < 0) if has_missing else None)


class _PairTable(NamedTuple):
    """Two raters' labels as the q x q table of the units both rated, without a units x 2 code
    matrix: what the two-rater coefficients need from any input form."""

    ratings: _Ratings        # its codes a broadcast placeholder of the right shape (only the shape is read)
    table: np.ndarray        # (q * q,) float counts of the units both raters rated
    cells: Callable[[], np.ndarray]  # each both-rated unit's cell code (for the bootstrap), on demand
    both: Callable[[], np.ndarray] | None  # which units both rated, on demand (None: every unit)


def _column_pair(y1: Any, y2: Any, categories: Any, abstain: Any, fn: str) -> _PairTable | None:
    """Two label columns (two Series, Index or 1-D arrays, or a two-column DataFrame that is
    not all numbers) as a :class:`_PairTable`, from each column's own codes.

    The labels are encoded once per distinct label by the rules of :func:`_encode_uniques`
    (the same categories, abstentions, missing labels and errors); the joint table is one
    bincount of the two columns' codes.  None sends the input down the general path (other
    forms, lengths that differ, a `categories` that is not a sequence: it raises there).
    """
    if y2 is None:
        if not isinstance(y1, pd.DataFrame) or y1.shape[1] != 2 or _numeric_frame(y1):
            return None
        names, a, b = _Names(y1.index, y1.columns), y1.iloc[:, 0], y1.iloc[:, 1]
    else:
        names, a, b = _Names(), y1, y2
        if not all(isinstance(x, pd.Series | pd.Index | np.ndarray) and x.ndim == 1 for x in (a, b)):
            return None
    n = len(a)
    if n == 0 or len(b) != n:
        return None
    if categories is not None and (isinstance(categories, str | bytes) or not isinstance(categories, Iterable)):
        return None
    cols = [_column_uniques(a), _column_uniques(b)]
    if (len(cols[0].labels) + 1) * (len(cols[1].labels) + 1) > max(4 * n, 1 << 16):
        return None  # many distinct labels: the joint table of label pairs would outgrow the units
    labels, remaps, counts = _label_union(cols)

    def where(j: int) -> tuple[int, int]:  # the first (unit, rater) cell, row-major, holding label j
        cells = [(int(np.flatnonzero(u.codes == k[0])[0]), g) for g, (u, rm) in enumerate(zip(cols, remaps, strict=True))
                 if (k := np.flatnonzero(rm[:-1] == j)).size]
        return min(cells)

    n_missing = sum(0 if u.missing is None else int(u.missing.sum()) for u in cols)
    enc = _label_encoding(labels, counts, n_missing, categories=None if categories is None else list(categories),
                          abstain=(abstain,) if isinstance(abstain, str | bytes) else abstain, fn=fn,
                          names=names, where_of=where, where="ratings")
    q = len(enc.ratings.categories)
    # category code of each column's label code, with the missing code (-1) first: row i is code i - 1
    cm = [np.concatenate([[-1], np.take(enc.umap, rm[:-1])]) for rm in remaps]
    k1, k2 = len(cm[0]), len(cm[1])
    raw = np.add(cols[0].codes, 1, dtype=np.intp)   # (int8 codes would overflow below)
    raw *= k2
    raw += cols[1].codes
    raw += 1
    full = np.bincount(raw, minlength=k1 * k2).reshape(k1, k2)
    ok1, ok2 = cm[0] >= 0, cm[1] >= 0
    table = np.zeros((q, q))
    np.add.at(table, (cm[0][ok1][:, None], cm[1][ok2][None, :]), full[np.ix_(ok1, ok2)])
    lookup = np.where(ok1[:, None] & ok2[None, :], cm[0][:, None] * q + cm[1][None, :], -1).reshape(-1)
    every = int(table.sum()) == n

    def cells() -> np.ndarray:
        c = lookup[raw]
        return c if every else c[c >= 0]

    rt = dataclasses.replace(enc.ratings, codes=np.broadcast_to(np.zeros(1, dtype=np.intp), (n, 2)))
    return _PairTable(rt, table.reshape(-1), cells, None if every else lambda: lookup[raw] >= 0)


# =========================================================================== input forms


def _as_array(x: Any) -> np.ndarray:
    """np.asarray, but a list mixing numbers and strings keeps its Python types (object)."""
    if isinstance(x, pd.Series | pd.Index):
        return x.to_numpy()
    a = np.asarray(x)
    if a.dtype.kind in "US" and not isinstance(x, np.ndarray):
        a = np.empty(len(x), dtype=object) if a.ndim == 1 else np.asarray(x, dtype=object)
        if a.ndim == 1:
            a[:] = list(x)
    return a


def _as_1d(x: Any, fn: str, name: str) -> np.ndarray:
    a = _as_array(x)
    if a.ndim != 1:
        raise InputError(f"{fn}: `{name}` must be a 1-D sequence of labels; got shape {a.shape}.", field=name)
    if a.dtype.kind not in "iufbO":
        a = a.astype(object)
    return a


def _length(x: Any, fn: str, name: str) -> int:
    if isinstance(x, pd.Series | pd.Index | np.ndarray):
        if x.ndim != 1:
            raise InputError(f"{fn}: `{name}` must be a 1-D sequence of labels; got shape {x.shape}.",
                             field=name)
        return int(x.shape[0])
    return int(_as_1d(x, fn, name).shape[0])


class _Labels(NamedTuple):
    """An input as codes into its distinct labels, with its shape and the names for errors."""

    uniques: _Uniques
    shape: tuple[int, int]
    names: _Names
    where: str


def _numeric_frame(frame: pd.DataFrame) -> bool:
    return all(isinstance(t, np.dtype) and t.kind in "iufb" for t in frame.dtypes)


def _to_labels(ratings: Any, y2: Any, data: Any, item: str, rater: str, rating: str, fn: str) -> _Labels:
    """Whichever input form was given, as :class:`_Labels` (no object copy of the table)."""
    if data is not None:
        if ratings is not None or y2 is not None:
            raise TypeError(f"{fn}: pass either ratings (array-like) or `data=` (long DataFrame), not both.")
        return _long_labels(data, item, rater, rating, fn)
    if ratings is None:
        raise TypeError(f"{fn}: no ratings given (pass a units x raters array, two sequences, or `data=`).")
    if y2 is not None:
        n1, n2 = _length(ratings, fn, "y1"), _length(y2, fn, "y2")
        if n1 != n2:
            raise InputError(f"{fn}: `y1` and `y2` must have one label per unit; got lengths "
                             f"{n1} and {n2}.", field="y2")
        a, b = (x if isinstance(x, pd.Series | pd.Index | np.ndarray) else _as_1d(x, fn, "y")
                for x in (ratings, y2))
        if (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind == b.dtype.kind
                and a.dtype.kind in "iuf"):
            return _wide(np.column_stack([a, b]), _Names(), fn)
        return _Labels(_merge_columns([_column_uniques(a), _column_uniques(b)], n1), (n1, 2), _Names(), "ratings")
    ratings = as_frame(ratings)  # a pyarrow Table or a Polars frame, as pandas
    if isinstance(ratings, pd.DataFrame):
        names = _Names(ratings.index, ratings.columns)
        n, r = ratings.shape
        if _numeric_frame(ratings):
            return _Labels(_uniques(ratings.to_numpy().reshape(-1)), (n, r), names, "ratings")
        cols = [_column_uniques(ratings.iloc[:, g]) for g in range(r)]
        return _Labels(_merge_columns(cols, n), (n, r), names, "ratings")
    arr = _as_array(ratings) if not isinstance(ratings, np.ndarray) else ratings
    return _wide(arr, _Names(), fn)


def _wide(arr: np.ndarray, names: _Names, fn: str) -> _Labels:
    if arr.dtype.kind not in "iufbOU":
        arr = arr.astype(object)
    if arr.ndim != 2:
        raise InputError(f"{fn}: ratings must be a units x raters array (2-D); got shape {arr.shape}. "
                         "For two label sequences pass them as two arguments.", field="ratings")
    n, r = arr.shape
    return _Labels(_uniques(arr.reshape(-1)), (n, r), names, "ratings")


# =========================================================================== the long table
#
# A long table (``data=``) is one row per rating.  Its item and rater columns become unit
# and rater codes in order of first appearance (as :func:`pandas.factorize` numbers them).
# Most tables come grouped by item (a run of rows per item, as a wide table melts or a
# judge writes them), so only the first row of each run is encoded; and when every run
# holds the same raters in the same order (a complete table), row k *is* cell k of the
# units x raters matrix: no scatter and no duplicate check is needed.  Every shortcut is
# proved from the data (a cheap check that either holds or sends the table down the exact
# path): the codes are always the ones the exact path gives.

#: A key column as the run checks read it: NumPy ints, NumPy objects, or Arrow text without nulls.
_Keys = Any


def _key_values(col: pd.Series) -> _Keys | None:
    """An item or rater column in a form the run checks read, or None (categoricals, floats, nulls)."""
    dtype = col.dtype
    if isinstance(dtype, np.dtype):
        return col.to_numpy() if dtype.kind in "iuO" else None
    if isinstance(dtype, pd.StringDtype | pd.ArrowDtype) and getattr(dtype, "storage", "pyarrow") == "pyarrow":
        arr = pa.array(col.array)            # zero-copy for one chunk
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) and arr.null_count == 0:
            return arr
    return None


def _bools(a: Any) -> np.ndarray:
    """A null-free Arrow boolean array as a NumPy bool array (unpacking its bitmap)."""
    bits = np.frombuffer(a.buffers()[1], dtype=np.uint8)
    return np.unpackbits(bits, count=a.offset + len(a), bitorder="little")[a.offset:].view(bool)


def _take(x: _Keys, rows: np.ndarray) -> _Keys:
    return x.take(pa.array(rows)) if isinstance(x, pa.Array) else x[rows]


def _new_runs(x: _Keys) -> np.ndarray:
    """Rows that start a run of equal values (row 0 always does)."""
    n = len(x)
    if isinstance(x, pa.Array):
        differs = _bools(pc.not_equal(x.slice(1), x.slice(0, n - 1)))
    else:
        differs = x[1:] != x[:-1]
    later = np.flatnonzero(differs)
    starts = np.empty(later.size + 1, dtype=np.intp)
    starts[0] = 0
    np.add(later, 1, out=starts[1:])
    return starts


def _text_buffers(a: Any) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (one more than the values) and the data bytes of an Arrow text array, as NumPy views."""
    bufs = a.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if pa.types.is_large_string(a.type) else np.int32)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, dtype=np.uint8)
    return offsets[a.offset:a.offset + len(a) + 1], data


def _periodic(x: _Keys, m: int) -> bool:
    """Whether row k holds the value of row k - m for every k >= m.

    For text, on the buffers: the values repeat every m rows exactly when the offsets step by
    the bytes of the first m values every m rows and the data bytes repeat with that period.
    """
    if not isinstance(x, pa.Array):
        return bool((x[m:] == x[:-m]).all())
    offsets, data = _text_buffers(x)
    period = offsets[m] - offsets[0]
    if not bool((offsets[m:] - offsets[:-m] == period).all()):
        return False
    body = data[offsets[0]:offsets[-1]]
    return bool((body[period:] == body[:body.size - period]).all())


def _as_text(x: _Keys) -> _Keys | None:
    """Object values that are all text as Arrow text (None when any is not text or missing)."""
    if isinstance(x, pa.Array) or x.dtype.kind != "O":
        return x
    try:
        arr = pa.array(x, from_pandas=True)   # inferred: text only if every value is text (bytes are binary)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
    return arr if text and arr.null_count == 0 else None


#: The multiplier of the 64-bit text hash (a constant, so nothing depends on a seed).
_WORD_HASH = np.uint64(0x9E3779B97F4A7C15)
#: The low ``k`` bytes of a word, for k = 0..8.
_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2 ** 64 - 1], dtype=np.uint64)


def _text_hashes(a: Any) -> np.ndarray | None:
    """A 64-bit hash of each value of an Arrow text array, read eight bytes at a time (None if long)."""
    offsets, text = _text_buffers(a)
    lengths = np.diff(offsets)
    longest = int(lengths.max())
    if longest > 64:
        return None
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.zeros(hi - lo + 8, dtype=np.uint8)      # 8 spare bytes: every word read stays inside
    if hi > lo:
        data[:hi - lo] = text[lo:hi]
    words = np.lib.stride_tricks.as_strided(data, shape=(hi - lo + 1, 8), strides=(1, 1))
    start = offsets[:-1] - lo
    h = lengths.astype(np.uint64)
    with np.errstate(over="ignore"):
        for b in range(0, longest, 8):
            word = words[np.minimum(start + b, hi - lo)].view(np.uint64).reshape(-1)
            h *= _WORD_HASH
            h += word & _BYTE_MASKS[np.clip(lengths - b, 0, 8)]
    return h


def _distinct(x: _Keys) -> bool:
    """True when the values are shown pairwise distinct by a cheap check (False: not shown).

    Text is distinct when it increases by (length, bytes) (numbered and sorted ids), or when
    its 64-bit hashes are distinct (equal texts have equal hashes, so no collision can make
    this wrong; a collision only sends the caller down the exact path).
    """
    if len(x) < 2:
        return True
    if not isinstance(x, pa.Array):
        return x.dtype.kind in "iu" and bool((x[1:] > x[:-1]).all())
    k = len(x)
    lengths = np.diff(_text_buffers(x)[0])
    before, after = lengths[:-1], lengths[1:]
    if not bool((after < before).any()):
        longer = after > before
        if bool(longer.all()) or bool((longer | _bools(pc.less(x.slice(0, k - 1), x.slice(1)))).all()):
            return True
    h = _text_hashes(x)
    if h is None:
        return False
    h.sort()
    return not bool((h[1:] == h[:-1]).any())


def _first_seen(x: _Keys) -> tuple[np.ndarray, Any]:
    """Codes in order of first appearance (-1 missing) and the distinct values, exactly."""
    if isinstance(x, pa.Array):
        enc = pc.dictionary_encode(x)
        return enc.indices.to_numpy().astype(np.intp), enc.dictionary
    if x.dtype.kind in "iu":
        got = _first_seen_ints(x)
        if got is not None:
            return got
    codes, uniq = pd.factorize(x, sort=False)
    return codes.astype(np.intp, copy=False), uniq


def _key_codes(col: pd.Series) -> tuple[np.ndarray, Any]:
    """Codes (-1 missing) and labels of an item or rater column (categories keep their order)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = np.asarray(col.cat.codes).astype(np.intp)
        used = np.zeros(len(col.dtype.categories), dtype=bool)
        used[codes[codes >= 0]] = True
        if used.all():
            return codes, col.dtype.categories
        remap = np.full(used.size + 1, -1, dtype=np.intp)
        remap[:-1][used] = np.arange(int(used.sum()))
        return np.take(remap, codes), col.dtype.categories[used]
    x = _key_values(col)
    if x is not None and (isinstance(x, pa.Array) or x.dtype.kind in "iu"):
        return _first_seen(x)
    codes, uniq = pd.factorize(col, sort=False)
    return codes.astype(np.intp, copy=False), uniq


def _first_seen_ints(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Integer ids as codes in order of first appearance (as ``pd.factorize``), by bincount, not hashing."""
    got = _int_uniques(x, as_array=True)
    if got is None:
        return None
    codes, labels, _ = got
    k = len(labels)
    if x.size < 2 or bool((x[1:] >= x[:-1]).all()):   # sorted ids (the usual table): sorted is first-seen
        return codes, labels
    first = np.full(k, x.size, dtype=np.intp)
    head = codes[:4096]                 # few distinct ids (raters) all show up early: look there first
    np.minimum.at(first, head, np.arange(head.size, dtype=np.intp))
    if int(first.max()) == x.size:
        np.minimum.at(first, codes, np.arange(x.size, dtype=np.intp))
    order = np.argsort(first, kind="stable")
    rank = np.empty(k, dtype=np.intp)
    rank[order] = np.arange(k, dtype=np.intp)
    return np.take(rank, codes), labels[order]


class _Cells(NamedTuple):
    """Where each row of a long table goes, and the unit and rater labels.

    ``cell`` is each row's ``unit * n_raters + rater``, or None for a complete table whose
    rows are the cells in order: unit-major (row k is cell k) or, when ``by_rater``,
    rater-major (row k is unit ``k % n_units`` of rater ``k // n_units``).
    """

    cell: np.ndarray | None
    units: Any
    raters: Any
    by_rater: bool = False


class _Runs(NamedTuple):
    """A key column encoded one row per run of equal values."""

    starts: np.ndarray          # first row of each run
    codes: np.ndarray | None    # code of each run; None: every run a different value (run i is value i)
    labels: Any                 # the distinct values, in order of first appearance


#: Rows :func:`_runs` looks at before it compares a whole column.
_RUN_PROBE = 4096


def _runs(x: _Keys) -> _Runs | None:
    """The runs of a key column (None when they do not pay, or when a value is missing or not text)."""
    n = len(x)
    probe = x[:_RUN_PROBE]                  # a first look: rows in no runs are seen in the first rows
    if n > _RUN_PROBE and 2 * len(_new_runs(probe)) > _RUN_PROBE:
        return None
    starts = _new_runs(x)
    if 2 * len(starts) > n:
        return None
    heads = _as_text(_take(x, starts))
    if heads is None:
        return None
    codes, labels = (None, heads) if _distinct(heads) else _first_seen(heads)
    if codes is not None and len(labels) == len(starts):
        codes = None
    return _Runs(starts, codes, labels)


def _run_codes(runs: _Runs, n: int) -> np.ndarray:
    return np.repeat(np.arange(len(runs.starts)) if runs.codes is None else runs.codes,
                     np.diff(runs.starts, append=n))


def _blocks(outer: _Runs, inner: _Keys) -> Any:
    """The inner labels when every outer value is one run of m rows holding the same m inner
    values in the same order, each once (a complete table); else None."""
    n, k = len(inner), len(outer.starts)
    m = int(outer.starts[1]) if k > 1 else n
    if outer.codes is not None or k * m != n or not bool((np.diff(outer.starts) == m).all()):
        return None
    if not _periodic(inner, m):
        return None
    first = _as_text(inner[:m])
    if first is None:
        return None
    if _distinct(first):
        return first
    _, labels = _first_seen(first)
    return labels if len(labels) == m else None


def _first_seen_present(x: _Keys) -> tuple[np.ndarray, Any] | None:
    """:func:`_first_seen` of a whole key column; None when a value is missing."""
    codes, labels = _first_seen(x)
    return None if codes.size and int(codes.min()) < 0 else (codes, labels)


def _grouped_cells(items: _Keys, raters: _Keys) -> _Cells | None:
    """The cells of a table whose rows come in runs per item (or per rater), one row per run encoded.

    None when neither column has runs that pay, or an id is missing (the exact path names
    its row).
    """
    n = len(items)
    item_runs = _runs(items)
    if item_runs is not None:
        labels = _blocks(item_runs, raters)
        if labels is not None:
            return _Cells(None, item_runs.labels, labels)
        ucodes, units = _run_codes(item_runs, n), item_runs.labels
        got = _first_seen_present(raters)
        if got is None:
            return None
        rcodes, rlabels = got
        return _Cells(ucodes * len(rlabels) + rcodes, units, rlabels)
    rater_runs = _runs(raters)
    if rater_runs is None:
        return None
    labels = _blocks(rater_runs, items)
    if labels is not None:
        return _Cells(None, labels, rater_runs.labels, by_rater=True)
    got = _first_seen_present(items)
    if got is None:
        return None
    ucodes, units = got
    return _Cells(ucodes * len(rater_runs.labels) + _run_codes(rater_runs, n), units, rater_runs.labels)


def _exact_cells(data: pd.DataFrame, item: str, rater: str, fn: str) -> _Cells:
    """The cells of any long table by encoding both columns in full; a missing id is refused by row."""
    keys = []
    for col in (item, rater):
        codes, uniq = _key_codes(data[col])
        if codes.size and int(codes.min()) < 0:
            raise InputError(f"{fn}: missing {col!r} label.", record=data.index[int(np.argmax(codes < 0))],
                             field=col)
        keys.append((codes, uniq))
    (ucodes, units), (rcodes, raters) = keys
    return _Cells(ucodes * len(raters) + rcodes, units, raters)


def _long_labels(data: Any, item: str, rater: str, rating: str, fn: str) -> _Labels:
    """A long table (one row per rating) as units x raters codes, each unit and rater labelled once."""
    data = as_frame(data)  # a pyarrow Table or a Polars frame, as pandas
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{fn}: `data` must be a long pandas DataFrame; got {type(data).__name__}.")
    check_columns(data, (item, rater, rating))
    cells = None
    if len(data) > 1:
        ix, rx = _key_values(data[item]), _key_values(data[rater])
        if ix is not None and rx is not None:
            try:
                cells = _grouped_cells(ix, rx)
            except (TypeError, ValueError):   # objects that do not compare (arrays in cells): exact path
                cells = None
    if cells is None:
        cells = _exact_cells(data, item, rater, fn)
    n, r = len(cells.units), len(cells.raters)
    u = _column_uniques(data[rating])
    if cells.cell is None:
        codes, missing = u.codes, u.missing
        if cells.by_rater:
            codes = codes.reshape(r, n).T.reshape(-1)
            missing = None if missing is None else missing.reshape(r, n).T.reshape(-1)
    else:
        cell = cells.cell
        filled = np.zeros(n * r, dtype=bool)
        filled[cell] = True
        if int(np.count_nonzero(filled)) != cell.size:
            i = _first_repeat(cell)
            raise InputError(
                f"{fn}: rater {_plain(data[rater].iloc[i])!r} rated item {_plain(data[item].iloc[i])!r} "
                "more than once.", record=data.index[i], field=rating)
        codes = np.full(n * r, -1, dtype=np.intp)
        codes[cell] = u.codes
        missing = codes < 0
        if not bool(missing.any()):
            missing = None
    return _Labels(_Uniques(codes, u.labels, u.counts, missing), (n, r), _Names(cells.units, cells.raters),
                   rating)


def _first_repeat(cell: np.ndarray) -> int:
    """Row of the first rating whose (item, rater) cell an earlier row already holds."""
    order = np.argsort(cell, kind="stable")
    s = cell[order]
    later = np.flatnonzero(s[1:] == s[:-1]) + 1
    return int(order[later].min())


# =========================================================================== encoding


def _category_domain(answer_labels: list[Any], categories: Sequence[Any] | None, fn: str
                     ) -> tuple[tuple[Any, ...], bool]:
    """The categories (declared, or the sorted answered labels) and whether they were declared."""
    if categories is None:
        return tuple(_sort_labels(list(answer_labels))), False
    cats = tuple(categories)
    if len(set(map(_hashable, cats))) != len(cats):
        raise ValueError(f"{fn}: `categories` has duplicates: {list(cats)!r}.")
    return cats, True


def _where(u: _Uniques, j: int, n_raters: int) -> tuple[int, int]:
    """(unit, rater) positions of the first cell holding distinct label ``j``."""
    return divmod(int(np.flatnonzero(u.codes == j)[0]), n_raters)


def _label_map(labels: list[Any], counts: np.ndarray, kind: np.ndarray, cats: tuple[Any, ...], *, fn: str,
               names: _Names, where: str, where_of: Callable[[int], tuple[int, int]]) -> np.ndarray:
    """Category code of each distinct label (-2 abstained, -1 missing), and -1 last (missing maps there).

    ``kind`` per label: 0 a rating, 1 abstained, 2 missing (blank text, ``"nan"``).
    """
    index = {_hashable(c): i for i, c in enumerate(cats)}
    umap = np.empty(len(labels) + 1, dtype=np.intp)
    umap[-1] = -1
    for j, (lab, kd) in enumerate(zip(labels, kind, strict=True)):
        k = -2 if kd == 1 else -1 if kd == 2 else index.get(_hashable(lab))
        if k is None and counts[j] == 0:  # an unused category of a categorical column
            k = -1
        if k is None:
            i, g = where_of(j)
            raise InputError(
                f"{fn}: label {lab!r} (rater {names.rater(g)!r}) is not in the declared `categories` "
                f"{list(cats)!r} and not an `abstain` label.", record=names.unit(i), field=where)
        umap[j] = k
    return umap


def _label_kinds(labels: list[Any], abstain_set: set[Any], *, fn: str, names: _Names,
                 where: str, where_of: Callable[[int], tuple[int, int]]) -> np.ndarray:
    """0 rating, 1 abstained, 2 missing for each distinct label; an infinite number is refused."""
    kind = np.zeros(len(labels), dtype=np.int8)
    for j, x in enumerate(labels):
        if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) and math.isinf(x):
            i, g = where_of(j)
            raise InputError(f"{fn}: rating {x!r} (rater {names.rater(g)!r}) is not a finite number; "
                             "a missing rating is None or NaN.", record=names.unit(i), field=where)
        if _in_set(x, abstain_set):
            kind[j] = 1
        elif isinstance(x, str) and is_missing_label(x):
            kind[j] = 2
    return kind


class _LabelEncoding(NamedTuple):
    """Distinct labels mapped onto the category domain (:func:`_label_encoding`)."""

    umap: np.ndarray     # category code of each distinct label (-2 abstained, -1 missing), -1 last
    ratings: _Ratings    # its codes empty: the caller maps its own cells through umap


def _label_encoding(labels: list[Any], counts: np.ndarray, n_missing_cells: int, *,
                    categories: Sequence[Any] | None, abstain: Iterable[Any], fn: str,
                    names: _Names, where_of: Callable[[int], tuple[int, int]], where: str) -> _LabelEncoding:
    """The rules that map distinct labels onto the category domain, one label at a time: which
    labels are abstentions or missing, the categories, each label's code, what was observed
    and how many cells are missing or abstained.  ``where_of(j)`` gives the (unit, rater) of
    the first cell holding label ``j``, asked only to name the cell in an error."""
    abstain_set = set(abstain_labels(abstain, categories))  # a declared category never abstains
    kind = _label_kinds(labels, abstain_set, fn=fn, names=names, where=where, where_of=where_of)
    answered = [x for x, k, c in zip(labels, kind, counts, strict=True) if k == 0 and c > 0]
    cats, declared = _category_domain(answered, categories, fn)
    _io.check_categories(len(cats), field=where)  # a k x k table follows: bounded before it is built
    umap = _label_map(labels, counts, kind, cats, fn=fn, names=names, where=where, where_of=where_of)
    u_map = umap[:-1]
    observed = np.zeros(len(cats), dtype=bool)
    observed[u_map[(u_map >= 0) & (counts > 0)]] = True
    n_missing = n_missing_cells + int(counts[kind == 2].sum())
    return _LabelEncoding(umap, _Ratings(np.zeros((0, 0), dtype=np.intp), cats, n_missing, int(counts[kind == 1].sum()), observed, declared))


def _encode_uniques(u: _Uniques, shape: tuple[int, int], *, categories: Sequence[Any] | None,
                    abstain: Iterable[Any], fn: str, names: _Names | None = None,
                    where: str = "ratings", narrow: bool = False) -> _Ratings:
    """Map distinct labels onto the category domain (:func:`_label_encoding`): the codes of
    :class:`_Ratings` (no per-cell Python).  ``narrow=True`` lets int8 label codes stay int8
    when they are the category codes (for a caller that only compares codes)."""
    n, r = shape
    enc = _label_encoding(u.labels, u.counts, 0 if u.missing is None else int(u.missing.sum()),
                          categories=categories, abstain=abstain, fn=fn, names=names or _Names(),
                          where_of=lambda j: _where(u, j, r), where=where)
    if np.array_equal(enc.umap[:-1], np.arange(len(u.labels))):
        codes = u.codes.reshape(n, r)          # labels are already the category codes
        if not narrow:
            codes = codes.astype(np.intp, copy=False)
    else:
        codes = np.take(enc.umap, u.codes).reshape(n, r)
    return dataclasses.replace(enc.ratings, codes=codes)


def _encode(values: np.ndarray, *, categories: Sequence[Any] | None, abstain: Iterable[Any],
            fn: str, names: _Names | None = None, where: str = "ratings") -> _Ratings:
    """Encode a (n, r) label array (any dtype) into category codes (vectorised, no per-cell Python)."""
    if values.ndim != 2:
        raise InputError(f"{fn}: ratings must be units x raters (2-D); got {values.ndim}-D.", field=where)
    return _encode_uniques(_uniques(values.reshape(-1)), values.shape, categories=categories,
                           abstain=abstain, fn=fn, names=names, where=where)


def _hashable(x: Any) -> Any:
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, np.generic):
        return _hashable(x.item())
    return x


def _in_set(x: Any, s: set[Any]) -> bool:
    try:
        return x in s
    except TypeError:
        return False


def _prepare(ratings: Any, y2: Any, data: Any, item: str, rater: str, rating: str,
             categories: Any, abstain: Any, fn: str, *, two: bool, narrow: bool = False) -> _Ratings:
    """The ratings of any input form as category codes, with the shape checks every coefficient needs
    (``narrow``: see :func:`_encode_uniques`)."""
    lab = _to_labels(ratings, y2, data, item, rater, rating, fn)
    n, r = lab.shape
    if n == 0:
        raise InputError(f"{fn}: no units to rate (empty input).", field="ratings")
    if two and r != 2:
        raise InputError(f"{fn} is a two-rater coefficient; got {r} raters.", field="ratings")
    if r < 2:
        raise InputError(f"{fn}: agreement needs at least two raters; got {r}.", field="ratings")
    if isinstance(abstain, str | bytes):
        abstain = (abstain,)
    if categories is not None and (isinstance(categories, str | bytes) or not isinstance(categories, Iterable)):
        raise TypeError(f"{fn}: `categories` must be a sequence of labels; got {categories!r}.")
    return _encode_uniques(lab.uniques, lab.shape, categories=None if categories is None else list(categories),
                           abstain=abstain, fn=fn, names=lab.names, where=lab.where, narrow=narrow)


def _numeric_labels(categories: Sequence[Any]) -> bool:
    return all(isinstance(c, numbers.Real) for c in categories)


def _check_domain(rt: _Ratings, weighted: bool, fn: str, *, ordered: str | None = None) -> None:
    """Refuse an order guessed from text; warn when declared categories go unseen.

    ``ordered`` names what uses the order of the categories (``"weights='linear'"``,
    ``"level='ordinal'"``): without declared ``categories`` the order of numbers is
    their value, and text labels have none (an alphabetical order would be a guess).
    """
    if ordered is not None and not rt.declared and not _numeric_labels(rt.categories):
        raise InputError(
            f"{fn}: {ordered} uses the order of the categories, and the labels "
            f"{list(rt.categories)!r} are not numbers, so they have no order evaltk could know; "
            "declare it with `categories=[...]` (lowest first).", field="categories")
    if weighted and rt.declared and not rt.observed.all():
        unseen = [c for c, o in zip(rt.categories, rt.observed, strict=False) if not o]
        warnings.warn(
            f"{fn}: observed labels are a strict subset of the declared categories "
            f"(unseen: {unseen!r}); the weights and chance agreement use the declared domain.",
            CategoryDomainWarning, stacklevel=user_stacklevel())
