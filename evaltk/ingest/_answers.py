"""Judges' answers and humans' labels: the answer vocabulary, the CSV / JSONL / Parquet answer readers, and their checks."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _columns
from ..errors import SchemaViolation, UnreadableInput
from ..values import (
    ANSWER_VOCABULARIES,
    FREE_TEXT_MEASURES,
    MEASURE_ALIASES,
    PER_STEP_MEASURES,
    normalize_answer,
)
from ._checks import (
    _NOT_TEXT,
    _bad_text,
    _is_missing,
    _jtype,
    _read_file,
    _read_parquet,
    _show,
    _split_lines,
)
from ._ledger import _ledger
from ._readers import _arrow_json, _no_blank_lines, _parse_json_lines
from ._records import _STR, AnswerRecords
from ._series import _blocks, _empty_str, _from_codes, _s

#: A guide-level measure name (``g_<name>``): answered in free text unless the vocabulary lists it.
_G_MEASURE = re.compile(r"^g_[a-z0-9_]+$")

# --------------------------------------------------------------------------- answers

_ANSWER_REQUIRED = ("trace_id", "measure", "rater", "answer")


def _load_answer_source(source: Any, kind: str) -> tuple[str, pd.DataFrame, np.ndarray]:
    """(name, raw frame, record numbers).  Raw frames keep the source's own types."""
    if isinstance(source, pd.DataFrame):
        return "<dataframe>", source.reset_index(drop=True), np.arange(1, len(source) + 1)
    if isinstance(source, str | Path):
        path, name, data, fmt = _read_file(source)
        if fmt == "parquet":
            df = _read_parquet(data, name).to_pandas()
            return name, df, np.arange(1, len(df) + 1)
        if fmt == "jsonl":
            clean, n_lines = _no_blank_lines(data)
            t = _arrow_json(data) if clean else None
            if (t is not None and t.num_rows == n_lines
                    and all(not pa.types.is_nested(f.type) for f in t.schema)):
                return name, t.to_pandas(), np.arange(1, n_lines + 1)
            nums, texts = _split_lines(data, name)
            recs = _parse_json_lines(texts)
            return name, _frame_from_records(recs), np.asarray(nums, np.int64)
        return _read_csv(data, name)
    if isinstance(source, Mapping):
        return "<records>", _frame_from_records([source]), np.array([1])
    if isinstance(source, Iterable):
        recs = list(source)
        return "<records>", _frame_from_records(recs), np.arange(1, len(recs) + 1)
    raise TypeError(f"`{kind}s` must be a path, a DataFrame or a list of dicts; got "
                    f"{type(source).__name__}.")


def _frame_from_records(recs: Sequence[Any]) -> pd.DataFrame:
    """Records (dicts, or exceptions for unparsable lines) to an object frame.

    A record that is not an object becomes a row with a private ``__error__`` column.
    """
    rows = []
    for r in recs:
        if isinstance(r, Exception):
            rows.append({"__error__": str(r)})
        elif not isinstance(r, Mapping):
            rows.append({"__error__": f"an answer record must be a JSON object; got {_jtype(r)}"})
        else:
            rows.append(dict(r))
    df = pd.DataFrame.from_records(rows) if rows else pd.DataFrame()
    return df.astype(object) if len(df.columns) else df


def _read_csv(data: bytes, name: str) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Every cell as text (CSV has no types); record numbers are file line numbers."""
    import csv

    import pyarrow.csv as pcsv

    nl = data.find(b"\n")
    head = data if nl < 0 else data[:nl]
    try:
        header = next(csv.reader([head.decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        raise UnreadableInput("the CSV header is not readable UTF-8 text", file=name) from None
    if len(set(header)) != len(header):
        raise SchemaViolation(f"duplicated column names in the header: {header}", file=name,
                              record=1)
    clean, n_lines = _no_blank_lines(data)
    if clean and n_lines >= 2:
        try:
            t = pcsv.read_csv(
                pa.BufferReader(data), read_options=pcsv.ReadOptions(block_size=1 << 24),  # see _ARROW_ABORT
                convert_options=pcsv.ConvertOptions(column_types={h: pa.string() for h in header},
                                                    strings_can_be_null=False))
            t.validate(full=True)
        except (pa.ArrowException, ValueError):
            t = None
        if t is not None and t.num_rows == n_lines - 1:  # no quoted newline moved a row
            return name, t.to_pandas(), np.arange(2, n_lines + 1)
    # row by row: ragged rows, bad bytes, blank lines, quoted newlines
    text = data.decode("utf-8", errors="surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[dict[str, Any]] = []
    nums: list[int] = []
    line = 1
    try:
        next(reader)
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                rows.append({"__error__": f"not valid CSV ({e})"})
                nums.append(start)
                continue
            line = start
            if not fields or all(not f.strip() for f in fields) and len(fields) <= 1:
                continue  # a blank line is not a record
            nums.append(line)
            if any(_has_surrogate(f) for f in fields):
                rows.append({"__error__": "not valid UTF-8"})
            elif len(fields) != len(header):
                rows.append({"__error__": f"has {len(fields)} fields; the header has {len(header)}"})
            else:
                rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error as e:  # pragma: no cover - csv raises per row above
        raise UnreadableInput(f"not readable as CSV ({e})", file=name) from None
    df = pd.DataFrame.from_records(rows, columns=list(dict.fromkeys([*header, "__error__"])))
    return name, df.astype(object), np.asarray(nums, np.int64)


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _str_col(col: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(values as str dtype with NaN where absent, absent mask, wrong-type mask).

    Absent: null, NaN or the empty string.
    """
    if isinstance(col.dtype, pd.StringDtype):
        s = col.astype(_STR)
        # absent: a null or the empty string (a required field that is null is malformed)
        empty = pc.fill_null(pc.equal(s.array._pa_array, ""), True)
        empty = np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool)
        if empty.any():
            s = s.where(~empty)
        return s.reset_index(drop=True), empty, np.zeros(len(col), bool)
    vals = col.to_numpy(dtype=object)
    n = len(vals)
    is_str = np.fromiter((isinstance(v, str) and not _bad_text(v) for v in vals), bool, n)
    miss = np.fromiter((_is_missing(v) or (isinstance(v, str) and v == "") for v in vals), bool, n)
    wrong = ~is_str & ~miss
    clean = np.where(is_str & ~miss, vals, None)
    return _s(clean), miss, wrong


def _str_codes(col: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values, codes, uniques, absent mask, wrong-type mask) of a text column.

    ``uniques[codes[i]]`` is row i's text, and codes are -1 where it is missing or
    empty.  ``values`` is the column as ``str``; an Arrow-backed column is passed
    through as it is, so an empty string stays in it (the rows it fills are absent,
    which the caller drops).

    As in :func:`_str_col`, absent means null or the empty string.
    """
    if isinstance(col.dtype, pd.StringDtype):
        s = col.astype(_STR).reset_index(drop=True)
        codes, uniq = _arrow_codes(s.array._pa_array)
        empty = np.flatnonzero(uniq == "")
        miss = (codes == empty[0]) | (codes < 0) if empty.size else codes < 0
        if empty.size:
            codes = np.where(miss, -1, codes)
        return s, codes, uniq, miss, np.zeros(len(col), bool)
    s, miss, wrong = _str_col(col)
    codes, uniq = pd.factorize(s)
    return s, np.asarray(codes, np.int64), np.asarray(uniq, dtype=object), miss, wrong


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


def _arrow_codes(a: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
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


def _int_steps(col: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, present mask) of a signed integer column whose values are all exact as
    float64 (what the float path would read); values are 0 where absent.  None for any
    other column (then it is read as numbers)."""
    if getattr(col.dtype, "kind", None) != "i":
        return None
    present = col.notna().to_numpy(dtype=bool)
    values = col.to_numpy(dtype=np.int64, na_value=0, copy=True)
    if values.size and (int(values.max()) > 2**53 or int(values.min()) < -2**53):
        return None
    return values, present


def _int_view(col: pd.Series) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(values, present mask, whether ``col`` is an ``Int64`` column) of a signed integer
    column whose values are all exact as float64, else None.  An ``Int64`` column's own
    values are returned (read only; arbitrary where absent); any other column's are a
    copy, 0 where absent."""
    arr = col.array
    data, mask = getattr(arr, "_data", None), getattr(arr, "_mask", None)
    if (isinstance(arr, pd.arrays.IntegerArray) and isinstance(data, np.ndarray)
            and data.dtype == np.int64 and isinstance(mask, np.ndarray) and mask.shape == data.shape):
        present = ~mask
        if present.any() and (int(data.max(where=present, initial=0)) > 2**53
                              or int(data.min(where=present, initial=0)) < -2**53):
            return None
        return data, present, True
    ints = _int_steps(col)
    return None if ints is None else (*ints, False)


def _text_at(uniques: np.ndarray, codes: np.ndarray, i: int) -> Any:
    """Row i's text from its code (NaN, as pandas shows a missing ``str``, for -1)."""
    return uniques[codes[i]] if codes[i] >= 0 else np.nan


def _num_col(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float values, NaN where absent; wrong-type mask).  Text must be a decimal number."""
    n = len(col)
    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(n, np.nan), col.notna().to_numpy()
    if pd.api.types.is_numeric_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan), np.zeros(n, bool)
    if isinstance(col.dtype, pd.StringDtype):
        a = pa.array(col.astype(_STR).array)
        a = pc.utf8_trim_whitespace(a)
        a = pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)
        try:
            v = pc.cast(a, pa.float64())
            return v.to_numpy(zero_copy_only=False), np.zeros(n, bool)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            present = a.is_valid().to_numpy(zero_copy_only=False)
            v = pd.to_numeric(pd.Series(a.to_pandas()), errors="coerce").to_numpy(dtype=float)
            return v, present & np.isnan(v)
    vals = col.to_numpy(dtype=object)
    out = np.full(n, np.nan)
    wrong = np.zeros(n, bool)
    for i, v in enumerate(vals):
        if _is_missing(v) or (isinstance(v, str) and not v.strip()):
            continue
        if isinstance(v, bool | np.bool_):
            wrong[i] = True
        elif isinstance(v, int | float | np.integer | np.floating):
            out[i] = float(v)
        elif isinstance(v, str):
            try:
                out[i] = float(v)
            except ValueError:
                wrong[i] = True
            else:
                wrong[i] = math.isnan(out[i])
        else:
            wrong[i] = True
    return out, wrong


class _Flags:
    """The first failing check per row, kept sparse: most rows pass every check, so only
    flagged rows get a message (and a Python call); the rest cost one mask operation."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.done = np.zeros(n, bool)
        self._rows: list[np.ndarray] = []
        self._reasons: list[list[str]] = []
        self._fields: list[list[Any]] = []

    def flag(self, mask: np.ndarray, fld: str | None, msg: Callable[[int], str]) -> None:
        """Flag the rows of ``mask`` not flagged yet, with ``msg(row)`` and field ``fld``."""
        hit = np.flatnonzero(mask & ~self.done)
        if hit.size:
            self.add(hit, [msg(int(i)) for i in hit], [fld] * hit.size)

    def add(self, rows: np.ndarray, reasons: list[str], fields: list[Any]) -> None:
        """Flag ``rows`` (none flagged yet) with their reasons and fields."""
        rows = np.asarray(rows, np.int64)
        self.done[rows] = True
        self._rows.append(rows)
        self._reasons.append(list(reasons))
        self._fields.append(list(fields))

    def rows(self) -> tuple[np.ndarray, list[Any], list[Any]]:
        """(flagged rows in order, their reasons, their fields)."""
        if not self._rows:
            return np.zeros(0, np.int64), [], []
        rows = np.concatenate(self._rows)
        reasons = [r for rs in self._reasons for r in rs]
        fields = [f for fs in self._fields for f in fs]
        if len(self._rows) > 1:
            o = np.argsort(rows, kind="stable")
            rows = rows[o]
            reasons = [reasons[k] for k in o]
            fields = [fields[k] for k in o]
        return rows, reasons, fields

    def series(self) -> tuple[pd.Series, pd.Series]:
        """(reason, field) as ``str`` Series of length n, missing where not flagged."""
        rows, reasons, fields = self.rows()
        return _sparse_str(self.n, rows, reasons), _sparse_str(self.n, rows, fields)


def _sparse_str(n: int, rows: np.ndarray, values: Sequence[Any]) -> pd.Series:
    """A ``str`` Series of length n holding ``values`` at ``rows`` and missing elsewhere."""
    if not len(rows):
        return _empty_str(n)
    idx = np.full(n, -1, np.int64)
    idx[rows] = np.arange(len(rows))
    small = pa.array(list(values), type=pa.large_string())
    return _s(small.take(pa.array(idx, mask=idx < 0)))


def _distinct_ids(values: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """Ids of ``values`` among their distinct strings (-1 for a non-string) plus one
    trailing -1 (so code -1 maps to -1); and the distinct strings."""
    names: dict[str, int] = {}
    ids = [names.setdefault(v, len(names)) if isinstance(v, str) else -1 for v in values]
    return np.asarray([*ids, -1], np.int64), list(names)


def _answer_checks(raw: pd.DataFrame) -> tuple[dict[str, Any], _Flags,
                                               dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Column-wise validation.  Returns (normalised columns, flags, codes).

    Checks run in a fixed order; a row's reason is the first check it fails.  ``codes``
    holds ``(codes, uniques)`` of the ``measure``, ``rater`` and ``answer`` columns.
    Only the flagged rows' values may differ from what they would be if kept: the
    caller drops them.
    """
    n = len(raw)
    fl = _Flags(n)
    flag = fl.flag

    def raw_vals(c: str) -> np.ndarray:
        return raw[c].to_numpy(dtype=object) if c in raw.columns else np.full(n, None, object)

    if "__error__" in raw.columns:
        err = raw["__error__"].to_numpy(dtype=object)
        flag(np.fromiter((isinstance(e, str) for e in err), bool, n), None,
             lambda i: f"malformed: {err[i]}")
    texts = {}
    for c in ("trace_id", "rater_version"):
        texts[c] = _str_col(raw[c]) if c in raw.columns else (_empty_str(n), np.ones(n, bool),
                                                               np.zeros(n, bool))
    coded = {}  # measure, rater and answer: (values, codes, uniques) of the text as given
    for c in ("measure", "rater", "answer"):
        if c in raw.columns:
            vals_c, codes_c, uniq_c, miss_c, wrong_c = _str_codes(raw[c])
        else:
            vals_c, codes_c, uniq_c = _empty_str(n), np.full(n, -1, np.int64), np.zeros(0, object)
            miss_c, wrong_c = np.ones(n, bool), np.zeros(n, bool)
        coded[c] = (vals_c, codes_c, uniq_c)
        texts[c] = (vals_c, miss_c, wrong_c)
    for c in ("trace_id", "measure", "rater", "answer"):
        _, miss, wrong = texts[c]
        flag(miss, c, lambda i: "malformed: is required")
        if wrong.any():
            vals = raw_vals(c)
            flag(wrong, c, lambda i, vals=vals: f"malformed: {_NOT_TEXT}" if isinstance(vals[i], str)
                 else f"malformed: must be a string; got {_jtype(vals[i])} {_show(vals[i])}")
    if texts["rater_version"][2].any():
        rvv = raw_vals("rater_version")
        flag(texts["rater_version"][2], "rater_version",
             lambda i: f"malformed: must be a string or empty; got {_jtype(rvv[i])} {_show(rvv[i])}")
    # measure names (per unique spelling; several spellings may name one measure)
    meas_raw, m_codes, m_uniq = coded["measure"]
    m_norm: list[Any] = []
    for m in m_uniq:
        k = str(m).strip().lower()
        k = MEASURE_ALIASES.get(k, k)
        m_norm.append(k if (k in ANSWER_VOCABULARIES or k in FREE_TEXT_MEASURES or _G_MEASURE.match(k))
                      else None)
    m_ids, m_names = _distinct_ids(m_norm)  # row's measure: m_ids[m_codes] (-1: absent, unknown)
    known = (m_ids >= 0)[m_codes]

    def meas(i: int) -> str:
        return m_names[m_ids[m_codes[i]]]

    flag(~known & ~texts["measure"][1], "measure",
         lambda i: f"unknown measure: {_show(_text_at(m_uniq, m_codes, i))} (known: "
                   f"{', '.join(sorted({*ANSWER_VOCABULARIES, *FREE_TEXT_MEASURES}))}, or g_<name>)")
    # answer words (per unique (measure, spelling) pair)
    ans_raw, a_codes, a_uniq = coded["answer"]
    width = len(a_uniq) + 1
    n_pairs = (len(m_names) + 1) * width

    def pairs(i: int, j: int) -> np.ndarray:
        pb = m_ids[m_codes[i:j]]
        pb += 1
        pb *= width
        pb += a_codes[i:j]
        pb += 1
        return pb

    if n_pairs <= 4 * n + 4096:  # a dense table over the pair space, indexed by the pair
        seen = np.zeros(n_pairs, bool)
        for i, j in _blocks(n):
            seen[pairs(i, j)] = True
        p_uniq = np.flatnonzero(seen)

        def per_pair(values: list[Any], dtype: Any) -> np.ndarray:
            """Row -> its pair's value (blockwise: no full-length pair array)."""
            table = np.zeros(n_pairs, dtype)
            table[p_uniq] = values
            out = np.empty(n, dtype)
            for i, j in _blocks(n):
                out[i:j] = table[pairs(i, j)]
            return out
    else:  # sorted: per unique pair
        p_uniq, p_inv = np.unique(pairs(0, n), return_inverse=True)

        def per_pair(values: list[Any], dtype: Any) -> np.ndarray:
            return np.asarray(values, dtype)[p_inv]
    resolved: list[Any] = []
    for p in p_uniq.tolist():
        mi, ai = divmod(p, width)
        meas_name, word = (m_names[mi - 1] if mi else None), (a_uniq[ai - 1] if ai else None)
        if meas_name is None or word is None:
            resolved.append(None)
        elif meas_name in ANSWER_VOCABULARIES:
            w = normalize_answer(word)
            resolved.append(w if w in ANSWER_VOCABULARIES[meas_name] else False)
        else:
            resolved.append(word)  # identifiers and free text: verbatim
    unknown = per_pair([r is False for r in resolved], bool)
    flag(unknown, "answer", lambda i: f"unknown answer word: {_show(_text_at(a_uniq, a_codes, i))} for "
                                      f"{meas(i)} (allowed: {', '.join(ANSWER_VOCABULARIES[meas(i)])})")
    # step
    ints = _int_view(raw["step"]) if "step" in raw.columns else None
    if ints is not None:  # integers (the usual case): no float round trip
        step_i, has_step, step_as_given = ints
        bad_int = has_step & (step_i < 0)
    else:
        if "step" in raw.columns:
            step_f, step_wrong = _num_col(raw["step"])
        else:
            step_f, step_wrong = np.full(n, np.nan), np.zeros(n, bool)
        step_vals = raw_vals("step") if step_wrong.any() else None
        flag(step_wrong, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                           f"{_jtype(step_vals[i])} {_show(step_vals[i])}")
        has_step = ~np.isnan(step_f)
        with np.errstate(invalid="ignore"):
            bad_int = has_step & ((step_f < 0) | (step_f != np.floor(step_f)) | (step_f > 2**53)
                                  | np.isinf(step_f))
    if bad_int.any():
        step_vals = raw_vals("step")
        flag(bad_int, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                        f"{_show(step_vals[i])}")
    per_step = np.asarray([m in PER_STEP_MEASURES for m in m_names] + [False], bool)[m_ids][m_codes]
    flag(per_step & ~has_step, "step",
         lambda i: f"malformed: is required for the per-step measure {meas(i)}")
    if (known & ~per_step & has_step).any():
        step_vals = raw_vals("step")
        flag(known & ~per_step & has_step, "step",
             lambda i: f"malformed: must be empty for the trace-level measure {meas(i)}; got "
                       f"{_show(step_vals[i])}")
    # numbers
    nums: dict[str, Any] = {}
    absent: pd.Series | None = None
    for c, hi in (("confidence", 1.0), ("cost", math.inf), ("latency_ms", math.inf)):
        if c not in raw.columns:  # absent: all NaN, nothing to check; the absent columns
            # share one array as pandas columns (copy on write: an edit copies)
            absent = pd.Series(np.full(n, np.nan)) if absent is None else absent
            nums[c] = absent
            continue
        v, wrong = _num_col(raw[c])
        rng = "a number in [0, 1]" if hi == 1.0 else "a finite number >= 0"
        if wrong.any():
            vals = raw_vals(c)
            flag(wrong, c, lambda i, vals=vals, rng=rng: f"malformed: must be {rng} or empty; got "
                                                         f"{_jtype(vals[i])} {_show(vals[i])}")
        with np.errstate(invalid="ignore"):
            out_r = ~np.isnan(v) & ((v < 0.0) | (v > hi) | np.isinf(v))
        flag(out_r, c, lambda i, v=v, rng=rng: f"malformed: must be {rng}; got {float(v[i])!r}")
        nums[c] = v if v.flags.owndata else v.copy()  # the table owns its columns
    ok = ~fl.done
    if ints is None:
        valid_step = has_step & ok
        step_col = pd.Series(pd.arrays.IntegerArray(np.where(valid_step, step_f, 0).astype(np.int64),
                                                    ~valid_step))
    elif step_as_given:  # an Int64 column: itself (shared, copy on write); the rows not
        step_col = raw["step"]  # kept are dropped by the caller: their step does not matter
    else:
        step_col = pd.Series(pd.arrays.IntegerArray(step_i, ~has_step))
    # measure and answer: the column as given when every spelling a kept row uses is
    # already the canonical one (no new column to build); else built from codes.  The
    # rows not kept are dropped by the caller, so what they hold does not matter.
    arrow_in = {c: _columns._arrow(coded[c][0]) is not None for c in coded}
    if arrow_in["measure"] and all(k is None or k == u for k, u in zip(m_norm, m_uniq, strict=True)):
        meas_col, codes_m = meas_raw, (m_codes, m_uniq)
    else:
        codes_m = (np.where(ok, m_ids[m_codes], -1), np.asarray(m_names, dtype=object))
        meas_col = _from_codes(*codes_m)
    words = [a_uniq[p % width - 1] if p % width else None for p in p_uniq.tolist()]
    if arrow_in["answer"] and all(not isinstance(r, str) or r == w
                                  for r, w in zip(resolved, words, strict=True)):
        ans_col, codes_a = ans_raw, (a_codes, a_uniq)
    else:
        a_ids, a_names = _distinct_ids(resolved)
        codes_a = (np.where(ok, per_pair(list(a_ids[:-1]), np.int64), -1),
                   np.asarray(a_names, dtype=object))
        ans_col = _from_codes(*codes_a)
    codes = {"measure": codes_m, "rater": coded["rater"][1:], "answer": codes_a}
    out = {
        "trace_id": texts["trace_id"][0],
        "measure": meas_col,
        "step": step_col,
        "rater": texts["rater"][0],
        "answer": ans_col,
        "confidence": nums["confidence"],
        "cost": nums["cost"],
        "latency_ms": nums["latency_ms"],
        "rater_version": texts["rater_version"][0],
    }
    return out, fl, codes


def read_answers(source: Any, *, strict: bool = False, kind: str = "answer") -> AnswerRecords:
    """Read and validate a long table of judge answers (``kind="answer"``) or human labels.

    Parameters
    ----------
    source : path, DataFrame, or list of dict
        CSV (header row; empty cells are absent), JSONL, Parquet, a DataFrame or a
        list of records with columns ``trace_id, measure, step, rater, answer`` and
        optionally ``confidence, cost, latency_ms, rater_version``.  Other columns
        are ignored.
    strict : bool
        Raise :class:`~evaltk.errors.SchemaViolation` on the first malformed row
        instead of dropping it to the ledger.
    kind : {"answer", "label"}
        Judges' answers or humans' labels (the ledger's ``kind``).

    Returns
    -------
    AnswerRecords

    Raises
    ------
    UnreadableInput
        The file is missing, empty or not UTF-8.
    SchemaViolation
        A required column is missing (always), or with ``strict=True`` a malformed row.

    Examples
    --------
    >>> a = read_answers([{"trace_id": "a", "measure": "x_task", "rater": "j1",
    ...                    "answer": "Cannot tell"}])
    >>> a.table["answer"].tolist(), a.table["step"].tolist()
    (['cannot_tell'], [<NA>])
    """
    if kind not in ("answer", "label"):
        raise ValueError(f"`kind` must be 'answer' or 'label'; got {kind!r}.")
    name, raw, numbers = _load_answer_source(source, kind)
    if len(raw) == 0 and (name.startswith("<") or set(_ANSWER_REQUIRED) <= set(raw.columns)):
        # a header without rows, an empty DataFrame or list: a valid, empty table
        return AnswerRecords(_empty_table(), _ledger(name, [], [], kind, np.zeros(0, bool), [], []),
                             kind)
    all_err = "__error__" in raw.columns and bool(raw["__error__"].notna().all())
    missing_cols = [c for c in _ANSWER_REQUIRED if c not in raw.columns]
    if missing_cols and not all_err:
        raise SchemaViolation(f"required column(s) missing: {', '.join(missing_cols)} (an answer "
                              f"table needs trace_id, measure, rater, answer, and step for per-step "
                              f"measures)", file=name, field=missing_cols[0])
    cols, flags, codes = _answer_checks(raw)
    bad = flags.done
    any_bad = bool(bad.any())
    if strict and any_bad:
        rows, reasons, fields = flags.rows()
        r = reasons[0]
        msg = r.split(": ", 1)[1] if r.startswith("malformed: ") else r
        raise SchemaViolation(msg, file=name, record=int(numbers[rows[0]]), field=fields[0])
    reason_s, field_s = flags.series()
    ledger = _ledger(name, numbers, cols["trace_id"], kind, bad, reason_s, field_s)
    # built here, or shared with the ledger as a pandas column (copy on write)
    table = pd.DataFrame({**cols, "ledger_row": np.arange(len(bad), dtype=np.int64),
                          "record": ledger["record"]}, copy=False)
    if any_bad:
        table = table[~bad].reset_index(drop=True)
        codes = {c: (k[~bad], u) for c, (k, u) in codes.items()}
    for c, v in codes.items():  # the join (and scoring) read these instead of hashing again
        _columns.remember(table[c], "codes", v)
    return AnswerRecords(table=table, ledger=ledger, kind=kind)


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({
        "trace_id": _empty_str(), "measure": _empty_str(), "step": pd.Series(pd.array([], dtype="Int64")),
        "rater": _empty_str(), "answer": _empty_str(), "confidence": np.zeros(0), "cost": np.zeros(0),
        "latency_ms": np.zeros(0), "rater_version": _empty_str(),
        "ledger_row": np.zeros(0, np.int64), "record": np.zeros(0, np.int64),
    })
