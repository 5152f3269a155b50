"""Checks every reader shares: JSON types, text, missing values, file bytes, the error form."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .._io import read_bytes, read_parquet
from ..errors import SchemaViolation, UnreadableInput

# --------------------------------------------------------------------------- helpers


class _Bad(Exception):
    def __init__(self, field: str | None, detail: str, trace_id: Any = None) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.trace_id = trace_id


def _jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | np.integer):
        return "integer"
    if isinstance(v, float | np.floating):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "object"
    if isinstance(v, list | tuple | np.ndarray):
        return "array"
    return type(v).__name__


def _show(v: Any) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, float) or math.isfinite(v) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _is_missing(v: Any) -> bool:
    """None, or a float NaN (how pandas fills an absent value in a DataFrame)."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _strip_none(v: Any) -> Any:
    """Drop null-valued keys from objects (recursively): absent and null read alike.

    Iterative (an explicit stack), so a document as deep as the depth limit allows is
    copied without running into Python's recursion limit."""
    nested = (Mapping, list, tuple, np.ndarray)
    if not isinstance(v, nested):
        return v
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(v, root, 0)]
    while stack:
        src, parent, key = stack.pop()
        if isinstance(src, Mapping):
            out: Any = {}
            pairs = [(k, x) for k, x in src.items() if not _is_missing(x)]
        else:
            items = src.tolist() if isinstance(src, np.ndarray) else src
            out = [None] * len(items)
            pairs = list(enumerate(items))
        parent[key] = out
        for k, x in pairs:
            if isinstance(x, nested):
                out[k] = None
                stack.append((x, out, k))
            else:
                out[k] = x
    return root[0]


#: _ARROW_ABORT: with pyarrow 26, a Parquet table read with threads (the default) and
#: later converted with ``to_pylist`` can abort the interpreter at exit ("terminate
#: called without an active exception", exit 134): 10 runs in 12 through ``io.BytesIO``,
#: 2 in 12 through ``pa.BufferReader``, none in 12 with ``use_threads=False``.  evaltk
#: reads Parquet inputs from an Arrow buffer on one thread (tests/ingest/test_traces.py runs
#: the case in fresh interpreters).


def _read_file(source: str | Path) -> tuple[Path, str, bytes, str]:
    """(path, name, bytes, format) of a file source: format ``parquet``, ``csv`` or ``jsonl``."""
    path = Path(source)
    data = _read_bytes(path)
    return path, str(source), data, _kind_of_path(path, data[:8])


def _read_parquet(data: bytes, name: str) -> pa.Table:
    """A Parquet file's bytes as an Arrow table, read on one thread (:func:`evaltk._io.read_parquet`)."""
    return read_parquet(data, name=name)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (:func:`evaltk._io.read_bytes`), refused when empty or UTF-16/32,
    without a UTF-8 byte-order mark.  A missing file is ``file not found`` (the ingest
    reader's message, as it has always been)."""
    if not path.exists() and not path.is_symlink():
        raise UnreadableInput("file not found", file=str(path))
    data = read_bytes(path)
    if not data or data.isspace():
        raise UnreadableInput("the file is empty", file=str(path))
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
        raise UnreadableInput("not UTF-8 (the file starts with a UTF-16/UTF-32 byte-order mark)",
                              file=str(path))
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    return data


def _kind_of_path(path: Path, data_head: bytes) -> str:
    suf = "".join(path.suffixes[-1:]).lower()
    if suf in (".parquet", ".pq"):
        return "parquet"
    if suf in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suf == ".csv":
        return "csv"
    if data_head[:4] == b"PAR1":
        return "parquet"
    if data_head.lstrip()[:1] in (b"{", b"["):
        return "jsonl"
    return "csv"


def _split_lines(data: bytes, name: str) -> tuple[list[int], list[Any]]:
    """Non-blank lines: (line numbers, decoded text or a UnicodeDecodeError)."""
    nums: list[int] = []
    texts: list[Any] = []
    n_ok = 0
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        nums.append(i)
        try:
            texts.append(raw.decode("utf-8"))
            n_ok += 1
        except UnicodeDecodeError as e:
            texts.append(e)
    if texts and n_ok == 0:
        raise UnreadableInput("not UTF-8 (no line decodes as UTF-8)", file=name)
    return nums, texts


def _error(bad: _Bad, name: str, record: Any) -> SchemaViolation:
    return SchemaViolation(bad.detail, file=name, record=int(record), field=bad.field)


# --------------------------------------------------------------------------- trace validation


def _bad_text(v: str) -> bool:
    """True for a string that is not valid Unicode text (an unpaired surrogate, which
    JSON's ``\\ud800`` escape can produce and no table can store)."""
    if v.isascii():
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _safe(v: str) -> str:
    """``v`` fit to quote in a field name or message."""
    return v.encode("utf-8", "backslashreplace").decode("utf-8")


_NOT_TEXT = "is not valid Unicode text (an unpaired surrogate escape)"


def _check_bool(v: Any, field: str) -> bool:
    if v is None or _is_missing(v):
        return False
    if isinstance(v, bool | np.bool_):
        return bool(v)
    raise _Bad(field, f"must be true or false; got {_jtype(v)} {_show(v)}")


def _check_opt_str(v: Any, field: str) -> str | None:
    if _is_missing(v):
        return None
    if isinstance(v, str):
        if _bad_text(v):
            raise _Bad(field, _NOT_TEXT)
        return v or None
    raise _Bad(field, f"must be a string or null; got {_jtype(v)} {_show(v)}")


def _as_int(v: Any) -> int | None:
    """An integer, or a float with no fractional part (JSON Schema's ``integer``); else None."""
    if isinstance(v, bool | np.bool_):
        return None
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating) and math.isfinite(v) and float(v).is_integer():
        return int(v)
    return None
