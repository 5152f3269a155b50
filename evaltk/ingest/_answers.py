"""Judges' answers and humans' labels: the answer vocabulary, the CSV / JSONL / Parquet answer readers, and their checks."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _columns, _io
from .._io import canonical_json, loads_json
from .._validation import as_frame
from ..errors import SchemaViolation, UnreadableInput
from ..values import (
    ANSWER_VOCABULARIES,
    FREE_TEXT_MEASURES,
    INSTRUMENT_COLUMNS,
    PER_STEP_MEASURES,
    normalize_answer,
    normalize_measure,
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
from ._records import _STR, CATEGORICAL_COLUMNS, AnswerRecords
from ._series import (
    _arrow_codes,
    _blocks,
    _cat_from_codes,
    _categorical,
    _concat,
    _empty_str,
    _encode,
    _s,
    _sparse_cat,
)

#: A guide-level measure name (``g_<name>``): answered in free text unless the vocabulary lists it.
_G_MEASURE = re.compile(r"^g_[a-z0-9_]+$")

# --------------------------------------------------------------------------- answers

_ANSWER_REQUIRED = ("trace_id", "measure", "rater", "answer")

#: The judge-instrument columns (:data:`evaltk.values.INSTRUMENT_COLUMNS`, imported above; their home).
#: Audit data an answer may carry beside the instrument: the digest of the rendered prompt.
#: It varies by item, so it is not part of the instrument.
AUDIT_COLUMNS: tuple[str, ...] = ("prompt_digest",)
#: The optional text columns, read as text or empty; ``decoding`` is canonicalised too.
_OPTIONAL_TEXT: tuple[str, ...] = ("rater_version", *INSTRUMENT_COLUMNS, *AUDIT_COLUMNS)
#: Columns of :attr:`evaltk.ingest.Ingested.answers` and ``labels`` (the joined tables).
ANSWER_COLUMNS: tuple[str, ...] = ("trace_id", "measure", "step", "rater", "answer", "confidence", "cost",
                                   "latency_ms", *_OPTIONAL_TEXT, "run_pos", "step_pos")


class _RowByRow(Exception):
    """A CSV read block by block turned out to need the row-by-row reader (a quoted
    newline, a ragged row, ...): ``whole()`` gives the whole file read that way."""

    def __init__(self, whole: Callable[[], tuple[pd.DataFrame, np.ndarray]]) -> None:
        super().__init__("read row by row")
        self.whole = whole


def _load_answer_source(source: Any, kind: str) -> tuple[str, Iterable[tuple[pd.DataFrame, np.ndarray]]]:
    """(name, batches of (raw frame, record numbers)).  Raw frames keep the source's own
    types.  One batch, but a CSV, which comes in blocks of rows (see :func:`_csv_blocks`);
    iterating it may raise :class:`_RowByRow`."""
    source = as_frame(source)
    if isinstance(source, str | Path):
        path, name, data, fmt = _read_file(source)
        if fmt == "csv":
            _io.check_line_records(data, file=name, header=1)
            return name, _read_csv(data, name)
        return name, [_load_file(name, data, fmt)]
    if isinstance(source, pd.DataFrame):
        return "<dataframe>", [(source.reset_index(drop=True), np.arange(1, len(source) + 1))]
    if isinstance(source, Mapping):
        return "<records>", [(_frame_from_records([source]), np.array([1]))]
    if isinstance(source, Iterable):
        recs = list(source)
        return "<records>", [(_frame_from_records(recs), np.arange(1, len(recs) + 1))]
    raise TypeError(f"`{kind}s` must be a path, a DataFrame or a list of dicts; got "
                    f"{type(source).__name__}.")


def _load_file(name: str, data: bytes, fmt: str) -> tuple[pd.DataFrame, np.ndarray]:
    """(raw frame, record numbers) of a Parquet or JSONL answers file's bytes."""
    if fmt == "parquet":
        df = _io.arrow_frame(_read_parquet(data, name))
        return df, np.arange(1, len(df) + 1)
    _io.check_line_records(data, file=name)
    t = _jsonl_table(data)
    if t is not None:
        return _io.arrow_frame(t), np.arange(1, t.num_rows + 1)
    nums, texts = _split_lines(data, name)
    recs = _parse_json_lines(texts)
    return _frame_from_records(recs), np.asarray(nums, np.int64)


def _jsonl_table(data: bytes) -> pa.Table | None:
    """A JSONL file's records as Arrow's JSON reader types them, one row per line: None
    unless every line is a flat record Arrow reads (no blank line, nothing nested), when the
    file is read record by record instead (:func:`_parse_json_lines`)."""
    clean, n_lines = _no_blank_lines(data)
    t = _arrow_json(data, checked=True) if clean else None  # _no_blank_lines screened bare nulls
    if (t is not None and t.num_rows == n_lines
            and all(not pa.types.is_nested(f.type) for f in t.schema)):
        return t
    return None


def _frame_from_records(recs: Sequence[Any]) -> pd.DataFrame:
    """Records (dicts, or exceptions for unparsable lines) to an object frame.

    A record that is not an object becomes a row with a private ``__error__`` column.
    """
    return _frame_of_rows([_record_row(r) for r in recs])


def _record_row(r: Any) -> dict[str, Any]:
    """A parsed JSONL record as a row: its fields, or ``__error__`` saying why it is no record."""
    if isinstance(r, Exception):
        return {"__error__": str(r)}
    if not isinstance(r, Mapping):
        return {"__error__": f"an answer record must be a JSON object; got {_jtype(r)}"}
    return dict(r)


def _frame_of_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] = ()) -> pd.DataFrame:
    """Rows (field dicts, ``__error__`` for a line that is no record) as the object frame the
    checks read; ``columns`` are there even when no row has them."""
    df = pd.DataFrame.from_records(list(rows)) if rows else pd.DataFrame()
    for c in columns:
        if c not in df.columns:
            df[c] = None
    return df.astype(object) if len(df.columns) else df


#: Columns the CSV reader first reads as numbers (``float64``, an empty cell null): they
#: are numbers or empty in a valid table, and a column read so skips its text and its cast.
#: ``step`` stays text: its messages quote the cell as written.
_CSV_NUMBERS = ("confidence", "cost", "latency_ms")


def _arrow_csv(data: bytes | memoryview, header: list[str], *, typed: bool) -> pa.Table | None:
    """Arrow's CSV reader over rows of the file (no header line: its columns are
    ``header``), every column as text (``large_string``); ``typed``: the number
    columns as ``float64`` (None unless every cell is a number or empty, and none reads
    as NaN: such a file is read again as text, where the checks name the bad cell).  Arrow
    parses these cells with the parser of the text-to-number cast the text path runs, so
    both give the same values.  None where Arrow refuses the file."""
    import pyarrow.csv as pcsv

    numbers = [h for h in header if h in _CSV_NUMBERS] if typed else []
    if typed and not numbers:
        return None
    # text as large_string, what pandas' ``str`` stores: the frame shares Arrow's buffers
    types = {h: pa.float64() if h in numbers else pa.large_string() for h in header}
    try:
        t = pcsv.read_csv(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pcsv.ReadOptions(block_size=1 << 24, column_names=header),  # see _ARROW_ABORT
            convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=False,
                                                null_values=[""], quoted_strings_can_be_null=True))
        t.validate(full=True)
    except (pa.ArrowException, ValueError):
        return None
    for h in numbers:  # "nan" parses as a number; the text path calls it not one
        if pc.any(pc.is_nan(t.column(h))).as_py():
            return None
    return t


#: An answers CSV is parsed and checked in newline-aligned blocks of about this many bytes:
#: only one block's raw columns are held at a time, beside the checked rows so far.
_CSV_BLOCK_BYTES = 8 << 20


def _read_csv(data: bytes, name: str) -> Iterable[tuple[pd.DataFrame, np.ndarray]]:
    """Batches of (raw frame, record numbers) of a CSV; record numbers are file line
    numbers.  Every cell is text (CSV has no types), but number columns Arrow reads as
    numbers (:func:`_arrow_csv`).  The header is checked here; the rows come block by block
    (:func:`_csv_blocks`), or, when the file needs it, row by row in one batch."""
    header = _csv_header(data, name)
    clean, n_lines = _no_blank_lines(data)
    if clean and n_lines >= 2:
        return ((_io.arrow_frame(t), numbers) for t, numbers in _csv_blocks(data, header, n_lines))
    return [_csv_rows(data, header)]


def _csv_header(data: bytes, name: str) -> list[str]:
    """A CSV's header: readable and without a repeated name."""
    import csv

    nl = data.find(b"\n")
    head = data if nl < 0 else data[:nl]
    try:
        header = next(csv.reader([head.decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        raise UnreadableInput("the CSV header is not readable UTF-8 text", file=name) from None
    if len(set(header)) != len(header):
        raise SchemaViolation(f"duplicated column names in the header: {header}", file=name,
                              record=1)
    return header


def _csv_blocks(data: bytes, header: list[str], n_lines: int, *, typed: bool = True
                ) -> Iterable[tuple[pa.Table, np.ndarray]]:
    """The rows after the header, in newline-aligned blocks of about :data:`_CSV_BLOCK_BYTES`,
    each parsed by Arrow (``typed``: the number columns as numbers when they all are, see
    :func:`_arrow_csv`; else every column as text); raises :class:`_RowByRow` at the first block Arrow cannot read
    line for line (a quoted newline, a ragged row, bad bytes), so the whole file is read
    row by row instead: the same rows either way."""
    start, line0, n = data.find(b"\n") + 1, 2, len(data)
    view = memoryview(data)
    while start < n:
        cut = start + _CSV_BLOCK_BYTES
        end = n if cut >= n else (data.find(b"\n", cut) + 1 or n)
        lines = data.count(b"\n", start, end) + (data[end - 1:end] != b"\n")
        t = _arrow_csv(view[start:end], header, typed=True) if typed else None
        if t is None:  # a number column holds something else: every column as text
            t = _arrow_csv(view[start:end], header, typed=False)
        if t is None or t.num_rows != lines:  # a quoted newline moved a row
            raise _RowByRow(lambda: _csv_rows(data, header))
        yield t, np.arange(line0, line0 + lines, dtype=np.int64)
        del t
        line0 += lines
        start = end
    if line0 != n_lines + 1:  # pragma: no cover - the blocks cover every line
        raise _RowByRow(lambda: _csv_rows(data, header))


def _csv_rows(data: bytes, header: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """Row by row (:func:`evaltk._io.csv_records`): ragged rows, bad bytes, blank lines,
    quoted newlines; an unterminated quote spoils its own record, not the lines after it."""
    text = data.decode("utf-8", errors="surrogateescape")
    rows: list[dict[str, Any]] = []
    nums: list[int] = []
    for line, fields in _io.csv_records(text, n_fields=len(header)):
        if line == 1:
            continue  # the header
        if isinstance(fields, str):
            rows.append({"__error__": fields})
            nums.append(line)
            continue
        if not fields or all(not f.strip() for f in fields) and len(fields) <= 1:
            continue  # a blank line is not a record
        nums.append(line)
        if any(_bad_text(f) for f in fields):
            rows.append({"__error__": "not valid UTF-8"})
        elif len(fields) != len(header):
            rows.append({"__error__": f"has {len(fields)} fields; the header has {len(header)}"})
        else:
            rows.append(dict(zip(header, fields, strict=True)))
    df = pd.DataFrame.from_records(rows, columns=list(dict.fromkeys([*header, "__error__"])))
    return df.astype(object), np.asarray(nums, np.int64)


def _str_col(col: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(values as str dtype with NaN where absent, absent mask, wrong-type mask).

    Absent: null, NaN or the empty string.
    """
    if isinstance(col.dtype, pd.StringDtype):
        s = col.astype(_STR)
        # absent: a null or the empty string (a required field that is null is malformed)
        empty = pc.fill_null(pc.equal(s.array._pa_array, ""), True)  # type: ignore[attr-defined]  # the Arrow-backed array's pyarrow buffer
        empty = np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool)
        if empty.any():
            s = s.where(~empty)
        return s.reset_index(drop=True), empty, np.zeros(len(col), bool)
    vals = col.to_numpy(dtype=object)
    n = len(vals)
    is_str = np.fromiter((isinstance(v, str) and not _bad_text(v) for v in vals), bool, n)
    miss = np.fromiter((_is_missing(v) or (isinstance(v, str) and v == "") for v in vals), bool, n)
    wrong = ~is_str & ~miss
    clean = np.where(is_str & ~miss, vals, None)  # type: ignore[call-overload]  # numpy stubs: None as a value
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
        codes, uniq = _arrow_codes(s.array._pa_array)  # type: ignore[attr-defined]  # the Arrow-backed array's pyarrow buffer
        empty = np.flatnonzero(uniq == "")
        miss = (codes == empty[0]) | (codes < 0) if empty.size else codes < 0
        if empty.size:
            codes = np.where(miss, -1, codes)
        return s, codes, uniq, miss, np.zeros(len(col), bool)
    s, miss, wrong = _str_col(col)
    codes, uniq = pd.factorize(s)  # type: ignore[assignment]  # factorize's Index; np.asarray below
    return s, np.asarray(codes, np.int64), np.asarray(uniq, dtype=object), miss, wrong


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
    # only an IntegerArray's attributes are read: pandas 2.3's Arrow text arrays warn on ``_data``
    masked = isinstance(arr, pd.arrays.IntegerArray)
    data, mask = (getattr(arr, "_data", None), getattr(arr, "_mask", None)) if masked else (None, None)
    if (isinstance(data, np.ndarray)
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
            v = pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            present = a.is_valid().to_numpy(zero_copy_only=False)
            v = pd.to_numeric(pd.Series(a.to_pandas()), errors="coerce").to_numpy(dtype=float)
            return v, present & np.isnan(v)
        nan = np.isnan(v)  # absent, or the text "nan": not a number (as in the object path)
        if nan.any():
            return v, nan & a.is_valid().to_numpy(zero_copy_only=False)
        return v, np.zeros(n, bool)
    vals = col.to_numpy(dtype=object)
    out = np.full(n, np.nan)
    wrong = np.zeros(n, bool)
    text = np.array([isinstance(v, str) for v in vals], bool)
    if text.any():  # text cells parse exactly as a CSV column does (Arrow's cast, not float())
        out[text], wrong[text] = _num_col(pd.Series(list(vals[text]), dtype=_STR))
    for i in np.flatnonzero(~text):
        v = vals[i]
        if _is_missing(v):
            continue
        if isinstance(v, bool | np.bool_):
            wrong[i] = True
        elif isinstance(v, int | float | np.integer | np.floating):
            out[i] = float(v)
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

    def flag(self, mask: np.ndarray, fld: str | None, msg: Callable[..., str]) -> None:
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
        """(reason, field) as categorical Series of length n, missing where not flagged."""
        rows, reasons, fields = self.rows()
        return _sparse_cat(self.n, rows, reasons), _sparse_cat(self.n, rows, fields)


def _keep_rows(columns: dict[str, Any], keep: np.ndarray | None) -> pd.DataFrame:
    """A frame of the rows of ``columns`` (Series or arrays, one length) where ``keep``
    (every row for None), with a new RangeIndex.

    ``columns`` is emptied as the frame is built, so each input column can be freed as
    soon as its rows are taken: at most one column is held twice.  Column by column: text
    through one Arrow filter (a column with no value at all is rebuilt as shared blocks,
    kept rows or not),
    NumPy-backed and masked columns by a boolean mask.  Much cheaper than ``df[keep]``,
    which turns the mask into positions and takes every chunk of every column."""
    k = 0 if keep is None else int(np.count_nonzero(keep))
    mask: pa.Array | None = None
    out: dict[str, Any] = {}
    for c in list(columns):
        s = columns.pop(c)
        s = s.reset_index(drop=True) if isinstance(s, pd.Series) else pd.Series(s, copy=False)
        arr = _columns._arrow(s)
        if arr is not None and isinstance(s.dtype, pd.StringDtype) and arr.null_count == len(arr):
            # no value at all (an absent optional column): shared blocks, not an offset per row
            out[c] = _empty_str(len(s) if keep is None else k)
            del s, arr
            continue
        if keep is None:
            out[c] = s
            continue
        values = s.array
        if arr is not None and isinstance(s.dtype, pd.StringDtype):
            mask = pa.array(keep) if mask is None else mask
            out[c] = pd.Series(pd.array(arr.filter(mask), dtype=_STR))
        elif isinstance(values, pd.Categorical):  # the codes kept, categories no kept row uses dropped
            out[c] = _cat_from_codes(values.codes[keep], np.asarray(values.categories, dtype=object))
        elif isinstance(values, pd.arrays.IntegerArray | pd.arrays.FloatingArray | pd.arrays.BooleanArray):
            out[c] = pd.Series(type(values)(values._data[keep], values._mask[keep]))  # type: ignore[union-attr]  # pandas-stubs: the masked arrays' buffers
        elif isinstance(s.dtype, np.dtype):
            out[c] = s.to_numpy()[keep]
        else:  # anything else: pandas' own row selection
            out[c] = s[keep].reset_index(drop=True)
        del s, values
    return pd.DataFrame(out, copy=False)


def _distinct_ids(values: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """Ids of ``values`` among their distinct strings (-1 for a non-string) plus one
    trailing -1 (so code -1 maps to -1); and the distinct strings."""
    names: dict[str, int] = {}
    ids = [names.setdefault(v, len(names)) if isinstance(v, str) else -1 for v in values]
    return np.asarray([*ids, -1], np.int64), list(names)


class _Text(NamedTuple):
    """A text column: its values (``str``, missing where absent), and the rows where it is
    absent (null, NaN or empty) or not text."""

    values: pd.Series
    missing: np.ndarray
    wrong: np.ndarray


class _Coded(NamedTuple):
    """A text column as given, with ``uniques[codes[i]]`` row i's text (code -1: absent)."""

    values: pd.Series
    codes: np.ndarray
    uniques: np.ndarray
    missing: np.ndarray
    wrong: np.ndarray


def _raw_values(raw: pd.DataFrame, c: str) -> np.ndarray:
    """Column ``c`` as given (object), for messages; all None when absent."""
    return raw[c].to_numpy(dtype=object) if c in raw.columns else np.full(len(raw), None, object)


def _text_column(raw: pd.DataFrame, c: str) -> _Text:
    n = len(raw)
    if c in raw.columns:
        return _Text(*_str_col(raw[c]))
    return _Text(_empty_str(n), np.ones(n, bool), np.zeros(n, bool))


def _coded_column(raw: pd.DataFrame, c: str) -> _Coded:
    n = len(raw)
    if c in raw.columns:
        return _Coded(*_str_codes(raw[c]))
    return _Coded(_empty_str(n), np.full(n, -1, np.int64), np.zeros(0, object), np.ones(n, bool),
                  np.zeros(n, bool))


def _check_unparsed(raw: pd.DataFrame, fl: _Flags) -> None:
    """A line that is not a record (not JSON, not an object, a ragged CSV row)."""
    if "__error__" in raw.columns:
        err = raw["__error__"].to_numpy(dtype=object)
        fl.flag(np.fromiter((isinstance(e, str) for e in err), bool, fl.n), None,
                lambda i: f"malformed: {err[i]}")


def _check_text(raw: pd.DataFrame, cols: Mapping[str, _Text | _Coded], fl: _Flags) -> None:
    """The required text fields present and text; the optional ones (``rater_version``, the
    instrument and audit columns but ``decoding``) text or empty."""
    for c in _ANSWER_REQUIRED:
        col = cols[c]
        fl.flag(col.missing, c, lambda i: "malformed: is required")
        if col.wrong.any():
            vals = _raw_values(raw, c)
            fl.flag(col.wrong, c, lambda i, vals=vals: f"malformed: {_NOT_TEXT}" if isinstance(vals[i], str)
                    else f"malformed: must be a string; got {_jtype(vals[i])} {_show(vals[i])}")
    for c in _OPTIONAL_TEXT:
        if c == "decoding" or not cols[c].wrong.any():
            continue
        vals = _raw_values(raw, c)
        fl.flag(cols[c].wrong, c, lambda i, vals=vals: f"malformed: must be a string or empty; got "
                                                       f"{_jtype(vals[i])} {_show(vals[i])}")


def _canonical_decoding(v: Any) -> str | None:
    """The canonical JSON text of one ``decoding`` cell (a JSON object, as text or as an
    object), or None when it is not one."""
    if isinstance(v, str):
        try:
            v = loads_json(v)
        except ValueError:  # not JSON (UnreadableInput), a repeated key (SchemaViolation)
            return None
    if not isinstance(v, Mapping):
        return None
    try:
        return canonical_json(dict(v)).decode("utf-8")
    except (TypeError, ValueError):
        return None


def _read_decoding(raw: pd.DataFrame, fl: _Flags) -> pd.Series:
    """``decoding`` in its canonical form (a JSON object, key order and spacing ignored), or
    empty; anything else is malformed.  Resolved once per distinct cell."""
    n = fl.n
    if "decoding" not in raw.columns:
        return _empty_str(n)
    col = raw["decoding"]
    vals = col.to_numpy(dtype=object)
    present = np.fromiter((not (_is_missing(v) or (isinstance(v, str) and v == "")) for v in vals), bool, n)
    out = np.full(n, None, object)
    seen: dict[Any, str | None] = {}
    for i in np.flatnonzero(present):
        v = vals[i]
        key = v if isinstance(v, str) else None
        c = seen.get(key) if key is not None and key in seen else _canonical_decoding(v)
        if key is not None:
            seen[key] = c
        out[i] = c
    bad = present & np.fromiter((x is None for x in out), bool, n)
    fl.flag(bad, "decoding", lambda i: f"malformed: must be a JSON object of decoding settings or empty; got "
                                       f"{_jtype(vals[i])} {_show(vals[i])}")
    return _s(out)


class _Measures(NamedTuple):
    """Measure names, resolved once per spelling (several spellings may name one measure).

    Row i's spelling is ``spelled.uniques[spelled.codes[i]]``; its measure is
    ``names[ids[spelled.codes[i]]]`` (``ids`` is -1 for an absent or unknown one, with a
    trailing -1 so that code -1 maps to -1)."""

    spelled: _Coded
    canonical: list[Any]  # per spelling: the measure name, or None when unknown
    ids: np.ndarray
    names: list[str]
    known: np.ndarray  # per row

    def name(self, i: int) -> str:
        return self.names[self.ids[self.spelled.codes[i]]]


def _measures(spelled: _Coded) -> _Measures:
    canonical: list[Any] = []
    for m in spelled.uniques:
        k = normalize_measure(m)
        canonical.append(k if (k in ANSWER_VOCABULARIES or k in FREE_TEXT_MEASURES or _G_MEASURE.match(k))
                         else None)
    ids, names = _distinct_ids(canonical)
    return _Measures(spelled, canonical, ids, names, (ids >= 0)[spelled.codes])


def _check_measure(meas: _Measures, fl: _Flags) -> None:
    spelled = meas.spelled
    fl.flag(~meas.known & ~spelled.missing, "measure",
            lambda i: f"unknown measure: {_show(_text_at(spelled.uniques, spelled.codes, i))} (known: "
                      f"{', '.join(sorted({*ANSWER_VOCABULARIES, *FREE_TEXT_MEASURES}))}, or g_<name>)")


class _Pairs:
    """The distinct (measure, answer spelling) pairs of the rows: an answer word is
    resolved once per pair, then spread to the rows."""

    def __init__(self, meas: _Measures, answer: _Coded) -> None:
        n = len(answer.codes)
        self.n = n
        self.meas = meas
        self.answer = answer
        self.width = len(answer.uniques) + 1
        self.size = (len(meas.names) + 1) * self.width
        self.dense = self.size <= 4 * n + 4096
        if self.dense:  # a dense table over the pair space, indexed by the pair
            seen = np.zeros(self.size, bool)
            for i, j in _blocks(n):
                seen[self._keys(i, j)] = True
            self.uniques = np.flatnonzero(seen)
        else:  # sorted: per unique pair
            self.uniques, self._inverse = np.unique(self._keys(0, n), return_inverse=True)

    def _keys(self, i: int, j: int) -> np.ndarray:
        pb = self.meas.ids[self.meas.spelled.codes[i:j]]
        pb += 1
        pb *= self.width
        pb += self.answer.codes[i:j]
        pb += 1
        return pb

    def spelling(self, p: int) -> tuple[str | None, Any]:
        """(measure name, answer as spelled) of pair ``p``; None for an absent one."""
        mi, ai = divmod(p, self.width)
        return (self.meas.names[mi - 1] if mi else None), (self.answer.uniques[ai - 1] if ai else None)

    def per_row(self, values: list[Any], dtype: Any) -> np.ndarray:
        """Row -> its pair's value (``values`` in the order of :attr:`uniques`)."""
        if not self.dense:
            return np.asarray(values, dtype)[self._inverse]
        table = np.zeros(self.size, dtype)
        table[self.uniques] = values
        out = np.empty(self.n, dtype)
        for i, j in _blocks(self.n):  # blockwise: no full-length pair array
            out[i:j] = table[self._keys(i, j)]
        return out


def _resolve_words(pairs: _Pairs) -> list[Any]:
    """Per pair: the canonical word, verbatim text (identifiers, free text), False for a
    word the measure's vocabulary does not know, None when either side is absent."""
    resolved: list[Any] = []
    for p in pairs.uniques.tolist():
        meas_name, word = pairs.spelling(p)
        if meas_name is None or word is None:
            resolved.append(None)
        elif meas_name in ANSWER_VOCABULARIES:
            w = normalize_answer(word)
            resolved.append(w if w in ANSWER_VOCABULARIES[meas_name] else False)
        else:
            resolved.append(word)
    return resolved


def _check_answer_word(pairs: _Pairs, resolved: list[Any], fl: _Flags) -> None:
    answer, meas = pairs.answer, pairs.meas
    fl.flag(pairs.per_row([r is False for r in resolved], bool), "answer",
            lambda i: f"unknown answer word: {_show(_text_at(answer.uniques, answer.codes, i))} for "
                      f"{meas.name(i)} (allowed: {', '.join(ANSWER_VOCABULARIES[meas.name(i)])})")


class _Step(NamedTuple):
    """The ``step`` column read as integers (``ints``, the usual case: no float round
    trip) or as numbers (``floats``); ``present`` where it is given.  ``as_given``: ``ints``
    is the ``Int64`` column's own array."""

    ints: np.ndarray | None
    floats: np.ndarray | None
    present: np.ndarray
    as_given: bool


def _read_step(raw: pd.DataFrame, fl: _Flags) -> _Step:
    """The step column, with its checks: a non-negative integer or empty."""
    n = fl.n
    view = _int_view(raw["step"]) if "step" in raw.columns else None
    if view is not None:
        step_i, present, as_given = view
        step = _Step(step_i, None, present, as_given)
        bad_int = present & (step_i < 0)
    else:
        if "step" in raw.columns:
            step_f, step_wrong = _num_col(raw["step"])
        else:
            step_f, step_wrong = np.full(n, np.nan), np.zeros(n, bool)
        step_vals = _raw_values(raw, "step") if step_wrong.any() else None
        fl.flag(step_wrong, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                              f"{_jtype(step_vals[i])} {_show(step_vals[i])}")  # type: ignore[index]  # only step_wrong rows: step_vals is set
        present = ~np.isnan(step_f)
        step = _Step(None, step_f, present, False)
        with np.errstate(invalid="ignore"):
            bad_int = present & ((step_f < 0) | (step_f != np.floor(step_f)) | (step_f > 2**53)
                                 | np.isinf(step_f))
    if bad_int.any():
        shown = _raw_values(raw, "step")
        fl.flag(bad_int, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                           f"{_show(shown[i])}")
    return step


def _check_step_rule(raw: pd.DataFrame, step: _Step, meas: _Measures, fl: _Flags) -> None:
    """A per-step measure needs a step; a trace-level one must not have one."""
    per_step = np.asarray([m in PER_STEP_MEASURES for m in meas.names] + [False], bool)[meas.ids][meas.spelled.codes]
    fl.flag(per_step & ~step.present, "step",
            lambda i: f"malformed: is required for the per-step measure {meas.name(i)}")
    trace_level = meas.known & ~per_step & step.present
    if trace_level.any():
        shown = _raw_values(raw, "step")
        fl.flag(trace_level, "step",
                lambda i: f"malformed: must be empty for the trace-level measure {meas.name(i)}; got "
                          f"{_show(shown[i])}")


#: The number columns and their upper bounds: confidence in [0, 1], cost and latency >= 0.
_NUMBERS = (("confidence", 1.0), ("cost", math.inf), ("latency_ms", math.inf))


def _read_numbers(raw: pd.DataFrame, fl: _Flags) -> dict[str, Any]:
    """``confidence, cost, latency_ms``: numbers in range, or empty."""
    nums: dict[str, Any] = {}
    absent: pd.Series | None = None
    for c, hi in _NUMBERS:
        if c not in raw.columns:  # absent: all NaN, nothing to check; the absent columns
            # share one array as pandas columns (copy on write: an edit copies)
            absent = pd.Series(np.full(fl.n, np.nan)) if absent is None else absent
            nums[c] = absent
            continue
        v, wrong = _num_col(raw[c])
        rng = "a number in [0, 1]" if hi == 1.0 else "a finite number >= 0"
        if wrong.any():
            vals = _raw_values(raw, c)
            fl.flag(wrong, c, lambda i, vals=vals, rng=rng: f"malformed: must be {rng} or empty; got "
                                                            f"{_jtype(vals[i])} {_show(vals[i])}")
        with np.errstate(invalid="ignore"):
            out_r = ~np.isnan(v) & ((v < 0.0) | (v > hi) | np.isinf(v))
        fl.flag(out_r, c, lambda i, v=v, rng=rng: f"malformed: must be {rng}; got {float(v[i])!r}")
        nums[c] = v if v.flags.owndata else v.copy()  # the table owns its columns
    return nums


def _step_column(raw: pd.DataFrame, step: _Step, ok: np.ndarray) -> pd.Series:
    """The ``Int64`` step column.  The rows not kept (not ``ok``) are dropped by the caller:
    their step does not matter."""
    if step.ints is None:
        valid = step.present & ok
        return pd.Series(pd.arrays.IntegerArray(np.where(valid, step.floats, 0).astype(np.int64), ~valid))  # type: ignore[arg-type]  # no ints: the floats are set
    if step.as_given:  # an Int64 column: itself (shared, copy on write)
        return raw["step"]
    return pd.Series(pd.arrays.IntegerArray(step.ints, ~step.present))


# measure and answer: the codes as given when every spelling a kept row uses is already
# the canonical one; else built from the canonical names.  The rows not kept are dropped
# by the caller, so what they hold does not matter.

def _measure_codes(meas: _Measures, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of the canonical ``measure`` column."""
    spelled = meas.spelled
    if all(k is None or k == u for k, u in zip(meas.canonical, spelled.uniques, strict=True)):
        return spelled.codes, spelled.uniques
    return np.where(ok, meas.ids[spelled.codes], -1), np.asarray(meas.names, dtype=object)


def _answer_codes(pairs: _Pairs, resolved: list[Any], ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of the canonical ``answer`` column."""
    answer = pairs.answer
    words = [pairs.spelling(p)[1] for p in pairs.uniques.tolist()]
    if all(not isinstance(r, str) or r == w for r, w in zip(resolved, words, strict=True)):
        return answer.codes, answer.uniques
    a_ids, a_names = _distinct_ids(resolved)
    return np.where(ok, pairs.per_row(list(a_ids[:-1]), np.int64), -1), np.asarray(a_names, dtype=object)


def _answer_checks(raw: pd.DataFrame) -> tuple[dict[str, Any], _Flags]:
    """Column-wise validation.  Returns (normalised columns, flags).

    Checks run in a fixed order (docs/traces.md, "Answer and label tables"); a row's reason is the
    first check it fails.  Only the flagged rows' values may differ from
    what they would be if kept: the caller drops them.
    """
    fl = _Flags(len(raw))
    _check_unparsed(raw, fl)
    text: dict[str, _Text | _Coded] = {c: _text_column(raw, c) for c in ("trace_id", *_OPTIONAL_TEXT)
                                        if c != "decoding"}
    text.update({c: _coded_column(raw, c) for c in ("measure", "rater", "answer")})
    _check_text(raw, text, fl)
    meas = _measures(text["measure"])  # type: ignore[arg-type]  # measure is coded
    _check_measure(meas, fl)
    pairs = _Pairs(meas, text["answer"])  # type: ignore[arg-type]  # answer is coded
    resolved = _resolve_words(pairs)
    _check_answer_word(pairs, resolved, fl)
    step = _read_step(raw, fl)
    _check_step_rule(raw, step, meas, fl)
    nums = _read_numbers(raw, fl)
    decoding = _read_decoding(raw, fl)
    ok = ~fl.done
    rater = text["rater"]
    # the text columns whose values repeat are categoricals (CATEGORICAL_COLUMNS): measure,
    # rater and answer from the codes the checks made, the others encoded by Arrow
    return {
        "trace_id": text["trace_id"].values,
        "measure": _cat_from_codes(*_measure_codes(meas, ok)),
        "step": _step_column(raw, step, ok),
        "rater": _cat_from_codes(rater.codes, rater.uniques),  # type: ignore[union-attr]  # rater is coded
        "answer": _cat_from_codes(*_answer_codes(pairs, resolved, ok)),
        "confidence": nums["confidence"],
        "cost": nums["cost"],
        "latency_ms": nums["latency_ms"],
        **{c: _categorical(decoding if c == "decoding" else text[c].values) if c in CATEGORICAL_COLUMNS["answers"]
           else text[c].values for c in _OPTIONAL_TEXT},
    }, fl


#: The columns of :func:`answer_rows` (the fields :data:`ANSWER_ROW_FIELDS` follow on the typed route).
ANSWER_ROW_COLUMNS: tuple[str, ...] = ("record", "trace_id", "row")
#: The fields :func:`read_answers` reads (every other column of a table is ignored).
ANSWER_ROW_FIELDS: tuple[str, ...] = ("trace_id", "measure", "step", "rater", "answer", "confidence", "cost",
                                      "latency_ms", *_OPTIONAL_TEXT)


def answer_rows(path: str | Path, *, typed: bool = True) -> pa.Table:
    """The records of a CSV or JSONL answers file as :func:`read_answers` reads them, before
    its checks: what a reader that moves rows elsewhere (the scale engine's shuffle) carries,
    so that :func:`answers_from_rows` of the rows, wherever they end up, gives the ledger and
    the errors ingest gives for the file.

    A file comes one of two ways, the way :func:`read_answers` reads it.  Typed (a CSV whose
    lines Arrow reads line for line; a JSONL file of flat records, no blank line, with a text
    ``trace_id``): the fields as Arrow's reader types them (a CSV's as text), no per-row
    work.  Row by row (any other file, or ``typed=False``): each record as JSON text, and a
    line that is no record kept too, saying why.

    Parameters
    ----------
    path : path
        A CSV or JSONL answers (or labels) file.
    typed : bool
        Take the typed route when the file allows it.

    Returns
    -------
    pyarrow.Table
        One row per record, in file order: ``record`` (the record number ingest reports: the
        line a CSV record starts on, the header being line 1; a JSONL record's line; blank
        lines are no record), ``trace_id`` (the record's ``trace_id`` when it is text, else
        null) and ``row``.  Typed, ``row`` is null and the fields of :data:`ANSWER_ROW_FIELDS`
        the file has follow, typed as :func:`read_answers` reads them.  Row by row, ``row`` is
        the record as JSON: an object of its fields, every CSV cell as text, the required ones
        null when absent, and ``__error__`` saying why a line is not a record (not JSON, not an
        object, a ragged CSV row).  ``answers_from_rows([t])`` gives the file's table and
        ledger, the record numbers counted in ``t``.

    Raises
    ------
    UnreadableInput
        The file is missing, empty, not UTF-8 or not CSV / JSONL.
    SchemaViolation
        A required column is missing from the whole file (as :func:`read_answers` says).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
    >>> _ = p.write_text('{"trace_id": "t1", "measure": "x_task", "rater": "j", "answer": "yes"}\\n\\n[1]\\n')
    >>> t = answer_rows(p)
    >>> t["record"].to_pylist(), t["trace_id"].to_pylist(), json.loads(t["row"][1].as_py())["__error__"]
    ([1, 3], ['t1', None], 'an answer record must be a JSON object; got array')
    >>> _ = p.write_text('{"trace_id": "t1", "measure": "x_task", "rater": "j", "answer": "yes"}\\n')
    >>> t = answer_rows(p)
    >>> t.column_names, t["row"].null_count
    (['record', 'trace_id', 'row', 'measure', 'rater', 'answer'], 1)
    """
    _, name, data, fmt = _read_file(path)
    _io.check_line_records(data, file=name, header=1 if fmt == "csv" else 0)
    if fmt not in ("csv", "jsonl"):
        raise UnreadableInput(f"answer_rows reads CSV and JSONL files; got {fmt}", file=name)
    got = (_typed_csv(data, name) if fmt == "csv" else _typed_jsonl(data)) if typed else None
    if got is not None:
        t, numbers = got
        _check_columns(pd.DataFrame(columns=t.column_names), name)
        fields = [c for c in ANSWER_ROW_FIELDS if c in t.column_names and c != "trace_id"]
        return pa.table({"record": pa.array(numbers, pa.int64()), "trace_id": t.column("trace_id"),
                         "row": pa.nulls(t.num_rows, pa.large_string()),
                         **{c: t.column(c) for c in fields}})
    if fmt == "csv":
        raw, numbers = _csv_rows(data, _csv_header(data, name))
    else:
        nums, texts = _split_lines(data, name)
        raw, numbers = _frame_from_records(_parse_json_lines(texts)), np.asarray(nums, np.int64)
    del data
    _check_columns(raw, name)
    return _json_rows(raw, numbers)


def _typed_jsonl(data: bytes) -> tuple[pa.Table, np.ndarray] | None:
    """(records, record numbers) of a JSONL file :func:`read_answers` reads typed with a text
    ``trace_id``, else None."""
    t = _jsonl_table(data)
    if t is None or "__error__" in t.column_names or "trace_id" not in t.column_names:
        return None
    if not pa.types.is_string(t.schema.field("trace_id").type):
        return None
    return t, np.arange(1, t.num_rows + 1, dtype=np.int64)


def _typed_csv(data: bytes, name: str) -> tuple[pa.Table, np.ndarray] | None:
    """(records, record numbers) of a CSV whose lines Arrow reads line for line, every field
    as text (what the checks read a typed block as too), else None."""
    header = _csv_header(data, name)
    clean, n_lines = _no_blank_lines(data)
    if not clean or n_lines < 2 or "__error__" in header or "trace_id" not in header:
        return None
    keep = [h for h in header if h in ANSWER_ROW_FIELDS]
    try:
        blocks = [(t.select(keep), nums) for t, nums in _csv_blocks(data, header, n_lines, typed=False)]
    except _RowByRow:
        return None
    return (pa.concat_tables([t for t, _ in blocks]),
            np.concatenate([nums for _, nums in blocks]))


def _json_rows(raw: pd.DataFrame, numbers: np.ndarray) -> pa.Table:
    """An object frame's records as :func:`answer_rows` gives them row by row."""
    import json

    cols = list(raw.columns)
    rows, tids = [], []
    for vals in raw.itertuples(index=False, name=None):
        # the required fields always (null when absent): rows read apart from their file keep its columns
        row = {c: None if _is_missing_cell(v) else v for c, v in zip(cols, vals, strict=True)
               if c in _ANSWER_REQUIRED or not _is_missing_cell(v)}
        rows.append(json.dumps(row, allow_nan=False))
        t = row.get("trace_id")
        tids.append(t if isinstance(t, str) and "__error__" not in row else None)
    return pa.table({"record": pa.array(numbers, pa.int64()), "trace_id": pa.array(tids, pa.string()),
                     "row": pa.array(rows, pa.large_string())})


def answers_from_rows(tables: Iterable[pa.Table], *, strict: bool = False, kind: str = "answer") -> AnswerRecords:
    """:func:`read_answers` of rows :func:`answer_rows` read, wherever they travelled.

    Parameters
    ----------
    tables : iterable of pyarrow.Table
        Rows of one file each, in record order (any subset of them), each with the columns
        :func:`answer_rows` gave that file: ``row``, and on the typed route the fields, of
        the types it gave (other columns are ignored).
    strict : bool
        As in :func:`read_answers`.
    kind : {"answer", "label"}
        As in :func:`read_answers`.

    Returns
    -------
    AnswerRecords
        The rows' table and ledger as :func:`read_answers` gives them for their files, the
        record numbers counted over the tables' rows end to end (1 is the first table's first).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = p.write_text("trace_id,measure,rater,answer\\nt1,x_task,j,yes\\nt2,x_task,j,maybe\\n")
    >>> t = answer_rows(p)
    >>> answers_from_rows([t.slice(1)]).ledger[["record", "field"]].to_dict("records")
    [{'record': 1, 'field': 'answer'}]
    """
    import json

    if kind not in ("answer", "label"):
        raise ValueError(f"`kind` must be 'answer' or 'label'; got {kind!r}.")
    batches: list[tuple[pd.DataFrame, np.ndarray]] = []
    n = 0
    for t in tables:
        if t.num_rows == 0:
            continue
        row = t.column("row")
        if row.null_count == 0:  # row by row: each record as JSON
            raw = _frame_from_records([json.loads(r) for r in row.to_pylist()])
        elif row.null_count == t.num_rows:  # typed: the fields as the file's reader typed them
            raw = _io.arrow_frame(t.select([c for c in ANSWER_ROW_FIELDS if c in t.column_names]))
        else:
            raise ValueError("`tables` must hold the rows of one file each: a table mixes typed rows "
                             "and rows read one by one.")
        batches.append((raw, np.arange(n + 1, n + t.num_rows + 1, dtype=np.int64)))
        n += t.num_rows
    if not batches:
        return read_answers([], strict=strict, kind=kind)
    return _read_batches("<records>", batches, kind, strict)


def _is_missing_cell(v: Any) -> bool:
    """A cell the object frame holds for a field the record does not have (None or NaN)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def _check_columns(raw: pd.DataFrame, name: str) -> None:
    """A whole table without a required column is refused (unless no line of it is a record)."""
    all_err = "__error__" in raw.columns and bool(raw["__error__"].notna().all())
    missing_cols = [c for c in _ANSWER_REQUIRED if c not in raw.columns]
    if missing_cols and not all_err:
        raise SchemaViolation(f"required column(s) missing: {', '.join(missing_cols)} (an answer "
                              f"table needs trace_id, measure, rater, answer, and step for per-step "
                              f"measures)", file=name, field=missing_cols[0])


def read_answers(source: Any, *, strict: bool = False, kind: str = "answer") -> AnswerRecords:
    """Read and validate a long table of judge answers (``kind="answer"``) or human labels.

    Parameters
    ----------
    source : path, DataFrame, or list of dict
        CSV (header row; empty cells are absent), JSONL, Parquet, a DataFrame or a
        list of records with columns ``trace_id, measure, step, rater, answer`` and
        optionally ``confidence, cost, latency_ms, rater_version``, the judge-instrument
        columns :data:`INSTRUMENT_COLUMNS` and ``prompt_digest``.  Other columns are
        ignored.
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
    name, batches = _load_answer_source(source, kind)
    try:
        return _read_batches(name, batches, kind, strict)
    except _RowByRow as again:  # a CSV that needs the row-by-row reader after all
        return _read_batches(name, [again.whole()], kind, strict)


def _read_batches(name: str, batches: Iterable[tuple[pd.DataFrame, np.ndarray]], kind: str,
                  strict: bool) -> AnswerRecords:
    """Check each batch of rows as it comes (only its checked columns are kept), then one
    table and one ledger over all of them."""
    parts: list[tuple[dict[str, Any], _Flags, np.ndarray]] = []
    for raw, numbers in batches:
        if not parts:
            if len(raw) == 0 and (name.startswith("<") or set(_ANSWER_REQUIRED) <= set(raw.columns)):
                # a header without rows, an empty DataFrame or list: a valid, empty table
                return AnswerRecords(_empty_table(), _ledger(name, [], [], kind, np.zeros(0, bool), [], []),
                                     kind)
            _check_columns(raw, name)
        cols, flags = _answer_checks(raw)
        del raw
        if strict and flags.done.any():  # the first malformed row (batches come in order)
            rows, reasons, fields = flags.rows()
            r = reasons[0]
            msg = r.split(": ", 1)[1] if r.startswith("malformed: ") else r
            raise SchemaViolation(msg, file=name, record=int(numbers[rows[0]]), field=fields[0])
        parts.append((cols, flags, numbers))
    cols, flags, numbers = parts[0] if len(parts) == 1 else _concat_batches(parts)
    del parts
    bad = flags.done
    any_bad = bool(bad.any())
    reason_s, field_s = flags.series()
    ledger = _ledger(name, numbers, cols["trace_id"], kind, bad, reason_s, field_s)
    # built here, or shared with the ledger as a pandas column (copy on write)
    cols.update(ledger_row=np.arange(len(bad), dtype=np.int64), record=ledger["record"])
    table = _keep_rows(cols, ~bad if any_bad else None)
    return AnswerRecords(table=table, ledger=ledger, kind=kind)


def _concat_batches(parts: list[tuple[dict[str, Any], _Flags, np.ndarray]]
                    ) -> tuple[dict[str, Any], _Flags, np.ndarray]:
    """The checked batches as one: columns end to end (text columns keep each batch's Arrow
    chunks, no copy; categoricals against the union of their categories), flags at their
    rows' new positions."""
    sizes = [p[1].n for p in parts]
    offsets = np.cumsum([0, *sizes[:-1]])
    cols: dict[str, Any] = {}
    for c in list(parts[0][0]):
        vals = [p[0].pop(c) for p in parts]
        if all(isinstance(v, np.ndarray) for v in vals):
            cols[c] = np.concatenate(vals)
        else:
            cols[c] = _concat([pd.DataFrame({c: v if isinstance(v, pd.Series) else pd.Series(v, copy=False)},
                                            copy=False) for v in vals])[c]
        del vals
    flags = _Flags(int(sum(sizes)))
    for p, off in zip(parts, offsets, strict=True):
        rows, reasons, fields = p[1].rows()
        if rows.size:
            flags.add(rows + off, reasons, fields)
    return cols, flags, np.concatenate([p[2] for p in parts])


def _empty_table() -> pd.DataFrame:
    return _encode(pd.DataFrame({
        "trace_id": _empty_str(), "measure": _empty_str(), "step": pd.Series(pd.array([], dtype="Int64")),
        "rater": _empty_str(), "answer": _empty_str(), "confidence": np.zeros(0), "cost": np.zeros(0),
        "latency_ms": np.zeros(0), **{c: _empty_str() for c in _OPTIONAL_TEXT},
        "ledger_row": np.zeros(0, np.int64), "record": np.zeros(0, np.int64),
    }), CATEGORICAL_COLUMNS["answers"])
