"""The reading and writing layer every format shares.

One home for what each reader needs before its format begins: the reading limits
(:class:`Limits`: nesting depth, line length, record count, distinct categories, file
size, regular files only; ``docs/limits.md``), the file read with errors that name it,
UTF-8 decoding that names the byte, strict JSON (a repeated object key, ``NaN``,
``Infinity`` and a number out of range refused; nesting screened before any parser
sees it), JSON Lines, strict YAML (the same rules), CSV as text split into records
(an unterminated quote spoils one record, not the rest of the file), and atomic
writes (the old file stays whole until the new one is complete).  Format-specific
readers (task.yaml, Parquet, traces) build on these and add their own rules.

Errors are :class:`~evaltk.errors.UnreadableInput` (the bytes cannot be read as the
format), :class:`~evaltk.errors.SchemaViolation` (read, but ambiguous: a duplicated
key) and :class:`~evaltk.errors.LimitExceeded` (past a limit, which it names), each
naming the file and, where known, the line.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (
    DuplicateKeyError,
    LimitExceeded,
    OutputRefused,
    SchemaViolation,
    UnreadableInput,
    no_duplicate_keys,
)

__all__ = ["Limits", "current_limits", "limits", "parse_limits", "LIMITS_ENV",
           "read_bytes", "read_parquet", "decode_utf8", "read_text", "loads_json", "read_json", "read_jsonl",
           "json_depth", "json_line_screen", "loads_yaml", "yaml_depth", "check_depth",
           "check_line_bytes", "NATIVE_DEPTH",
           "csv_records", "read_csv_text", "RowLines", "check_categories", "check_records", "check_line_records",
           "read_document", "check_output", "check_own_folder", "atomic_path", "atomic_dir", "temporaries_of", "removed_on_failure",
           "write_bytes_atomic", "write_text_atomic", "write_json", "write_jsonl", "write_parquet",
           "write_csv", "neutralize_formula", "file_digest", "check_digest", "TEMP_SUFFIX",
           "FORMULA_PREFIXES", "canonical_json", "sha256_digest", "parse_yaml"]

# --------------------------------------------------------------------------- limits

#: The environment variable that sets limits for a whole process (``depth=600,records=5e7``).
LIMITS_ENV = "EVALTK_LIMITS"


@dataclasses.dataclass(frozen=True)
class Limits:
    """What a reader accepts before it refuses an input (``docs/limits.md``).

    Parameters
    ----------
    depth : int
        Deepest nesting of arrays and objects in one JSON or YAML document (or one JSON
        Lines record).  Past it the record is malformed (``limit depth``).  512 reads any
        document evaltk writes with room to spare; JSON deeper than 1,000 never reaches a
        native parser, whatever the limit.
    line_bytes : int
        Longest line of a JSON Lines file, in bytes (64 MiB).
    records : int
        Most records (lines, rows) one file may hold (50,000,000).
    categories : int
        Most distinct categories a coefficient tabulates (1,000): a table of k x k
        cells is built from them.
    file_bytes : int
        Largest input file, in bytes (8 GiB).  A file is read at most this far.
    regular_only : bool
        Refuse a FIFO, a device or a socket as an input (True).  With False, such a
        stream is read up to ``file_bytes``.

    A user raises a limit from Python (``with evaltk.limits(depth=2000): ...``), from
    every command (``evaltk --limit depth=2000 ingest ...``, repeatable) or for a
    process (``EVALTK_LIMITS="depth=2000,records=1e8"``).

    Examples
    --------
    >>> Limits().depth
    512
    >>> parse_limits("depth=2000, file_bytes=1e6")
    {'depth': 2000, 'file_bytes': 1000000}
    """

    depth: int = 512
    line_bytes: int = 64 << 20
    records: int = 50_000_000
    categories: int = 1_000
    file_bytes: int = 8 << 30
    regular_only: bool = True

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "regular_only":
                if not isinstance(v, bool):
                    raise ValueError(f"limit `regular_only` must be true or false; got {v!r}.")
            elif isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"limit `{f.name}` must be a positive integer; got {v!r}.")


_NAMES = tuple(f.name for f in dataclasses.fields(Limits))
_CURRENT: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("evaltk_limits", default=None)
_ENV_CACHE: dict[str, Limits] = {}


def _limit_value(name: str, text: str) -> int | bool:
    t = text.strip().lower()
    if name == "regular_only":
        if t in ("1", "true", "yes", "on"):
            return True
        if t in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"limit `regular_only` must be true or false; got {text!r}.")
    try:
        x = float(t.replace("_", ""))
    except ValueError:
        raise ValueError(f"limit `{name}` must be a positive integer; got {text!r}.") from None
    if not math.isfinite(x) or x < 1 or not x.is_integer():
        raise ValueError(f"limit `{name}` must be a positive integer; got {text!r}.")
    return int(x)


def parse_limits(spec: str | Iterable[str]) -> dict[str, int | bool]:
    """``"depth=2000,records=1e8"`` (or a list of ``NAME=VALUE``) as a dict of limits.

    Raises ``ValueError`` naming an unknown limit or a bad value."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: dict[str, int | bool] = {}
    for item in items:
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in _NAMES:
            raise ValueError(f"not a limit: {item.strip()!r} (NAME=VALUE with NAME one of "
                             f"{', '.join(_NAMES)}; docs/limits.md).")
        out[name] = _limit_value(name, value)
    return out


def current_limits() -> Limits:
    """The limits in force: those set by :func:`limits` (or ``--limit``), else those of
    ``EVALTK_LIMITS``, else the defaults."""
    got = _CURRENT.get()
    if got is not None:
        return got
    env = os.environ.get(LIMITS_ENV, "")
    if env not in _ENV_CACHE:
        try:
            _ENV_CACHE[env] = Limits(**parse_limits(env))  # type: ignore[arg-type]
        except ValueError as e:
            raise ValueError(f"{LIMITS_ENV}: {e}") from None
    return _ENV_CACHE[env]


@contextlib.contextmanager
def limits(**changes: int | bool) -> Iterator[Limits]:
    """Raise (or lower) reading limits inside a ``with`` block.

    Examples
    --------
    >>> with limits(depth=2000) as lim:
    ...     lim.depth, current_limits().depth
    (2000, 2000)
    >>> current_limits().depth
    512
    """
    unknown = sorted(set(changes) - set(_NAMES))
    if unknown:
        raise ValueError(f"not a limit: {unknown[0]!r} (one of {', '.join(_NAMES)}).")
    new = dataclasses.replace(current_limits(), **changes)  # type: ignore[arg-type]  # checked names above
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)


def _raise_hint(name: str) -> str:
    return f"raise it with --limit {name}=N, {LIMITS_ENV} or evaltk.limits(); docs/limits.md"


def _over(what: str, value: Any, name: str, *, file: str | None = None, record: Any = None,
          field: str | None = None) -> LimitExceeded:
    lim = getattr(current_limits(), name)
    return LimitExceeded(f"{what} {value} is past the limit {name}={lim} ({_raise_hint(name)})",
                         limit=name, file=file, record=record, field=field)


def check_records(n: int, *, file: str | None = None) -> None:
    """Refuse a file of more than ``Limits.records`` records."""
    if n > current_limits().records:
        raise _over("record count", n, "records", file=file)


def check_line_records(data: bytes, *, file: str | None = None, header: int = 0) -> None:
    """Refuse a line-oriented file (JSON Lines, CSV) of more than ``Limits.records`` non-blank
    lines after ``header`` lines (counted exactly only when the newlines say it may be)."""
    lim = current_limits().records
    if data.count(b"\n") + 1 - header <= lim:
        return
    check_records(sum(1 for ln in data.split(b"\n") if ln.strip()) - header, file=file)


def check_categories(n: int, *, file: str | None = None, field: str | None = None) -> None:
    """Refuse a table of more than ``Limits.categories`` distinct categories (before it is built)."""
    if n > current_limits().categories:
        raise _over("distinct categories", n, "categories", file=file, field=field)


# --------------------------------------------------------------------------- files


def _open_checked(p: Path) -> Any:
    """``p`` opened for binary reading, refused before it is opened when it is not a
    regular file (a FIFO would block the open; a device never ends)."""
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UnreadableInput("no such file", file=str(p)) from None
    except OSError as e:
        raise UnreadableInput(f"cannot be read ({e.strerror or e})", file=str(p)) from None
    if stat.S_ISDIR(st.st_mode):
        raise UnreadableInput("is a directory, not a file", file=str(p))
    lim = current_limits()
    if not stat.S_ISREG(st.st_mode) and lim.regular_only:
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device")
        raise LimitExceeded(f"is {kind}, not a regular file (limit regular_only=true; read "
                            f"streams with --limit regular_only=false; docs/limits.md)",
                            limit="regular_only", file=str(p))
    if stat.S_ISREG(st.st_mode) and st.st_size > lim.file_bytes:
        raise _over("file size", f"{st.st_size} bytes", "file_bytes", file=str(p))
    try:
        return p.open("rb")
    except OSError as e:
        raise UnreadableInput(f"cannot be read ({e.strerror or e})", file=str(p)) from None


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``; :class:`~evaltk.errors.UnreadableInput` when it is missing,
    a directory or cannot be read; :class:`~evaltk.errors.LimitExceeded` when it is not a
    regular file or is larger than ``Limits.file_bytes`` (read at most that far)."""
    p = Path(path)
    cap = current_limits().file_bytes
    with _open_checked(p) as f:
        try:
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                data = f.read()  # its size was checked; sized from fstat, not from the cap
            else:  # a stream (regular_only=false): read in pieces, never past the cap
                parts, n = [], 0
                while n <= cap and (piece := f.read(min(1 << 20, cap + 1 - n))):
                    parts.append(piece)
                    n += len(piece)
                data = b"".join(parts)
        except OSError as e:
            raise UnreadableInput(f"cannot be read ({e.strerror or e})", file=str(p)) from None
    if len(data) > cap:
        raise _over("file size", f"more than {cap} bytes", "file_bytes", file=str(p))
    return data


def read_line_blocks(path: str | os.PathLike[str], size: int, *, start: int = 0,
                     stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(offset, block)`` of a regular file's bytes from ``start`` (to ``stop``), in blocks of
    about ``size`` bytes, each but the last ending with a newline (a line longer than ``size``
    is one block): a line-oriented file read without holding it whole.  Errors as
    :func:`read_bytes`: :class:`~evaltk.errors.UnreadableInput` when it cannot be read,
    :class:`~evaltk.errors.LimitExceeded` past ``Limits.file_bytes``."""
    p = Path(path)
    cap = current_limits().file_bytes
    with _open_checked(p) as f:
        try:
            f.seek(start)
            offset = start
            while stop is None or offset < stop:
                want = size if stop is None else min(size, stop - offset)
                block = f.read(want)
                if not block:
                    return
                if block[-1:] != b"\n" and (stop is None or offset + len(block) < stop):
                    block += f.readline() if stop is None else f.readline(stop - offset - len(block))
                if offset + len(block) > cap:
                    raise _over("file size", f"more than {cap} bytes", "file_bytes", file=str(p))
                yield offset, block
                offset += len(block)
        except OSError as e:
            raise UnreadableInput(f"cannot be read ({e.strerror or e})", file=str(p)) from None


def decode_utf8(raw: bytes, *, file: str | None = None) -> str:
    """``raw`` decoded as UTF-8 with a leading byte-order mark dropped.

    Raises :class:`~evaltk.errors.UnreadableInput` naming the byte, its offset and
    (as the record) its line: ``not UTF-8 (byte 0xe9 at offset 43)``.

    Examples
    --------
    >>> decode_utf8("\\ufeffé".encode())
    'é'
    >>> decode_utf8(b"\\xef\\xbb\\xbfa\\n\\xe9")
    Traceback (most recent call last):
    ...
    evaltk.errors.UnreadableInput: line 2: not UTF-8 (byte 0xe9 at offset 5)
    """
    try:
        text = raw.decode("utf-8")  # not utf-8-sig: its error offsets skip the mark
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UnreadableInput(f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})",
                              file=file, record=line) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike[str]) -> str:
    """:func:`read_bytes` then :func:`decode_utf8`."""
    return decode_utf8(read_bytes(path), file=str(path))


def read_parquet(source: str | os.PathLike[str] | bytes, *, columns: Iterable[str] | None = None,
                 name: str | None = None) -> Any:
    """A Parquet file (a path, or its bytes) as an Arrow table: read through
    :func:`read_bytes` (a regular file within ``Limits.file_bytes``) and decoded on one
    thread.  With pyarrow 26 a table read with threads and later converted can abort the
    interpreter at exit ("terminate called without an active exception", exit 134); on
    one thread it never did (tests/ingest/test_traces.py runs the case in fresh
    interpreters).  A file that is not Parquet (0 bytes, garbage, truncated) is
    :class:`~evaltk.errors.UnreadableInput` naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    label = name if name is not None else (None if isinstance(source, bytes) else str(source))
    data = source if isinstance(source, bytes) else read_bytes(source)
    try:
        table = pq.read_table(pa.BufferReader(data), columns=None if columns is None else list(columns),
                              use_threads=False)
    except (pa.ArrowException, OSError) as e:
        raise UnreadableInput(f"not a readable Parquet file ({e})", file=label) from None
    check_records(table.num_rows, file=label)
    return table


def read_ipc(source: str | os.PathLike[str], *, name: str | None = None) -> Any:
    """An Arrow IPC file (the format of a run's staged shuffle, ``evaltk.scale``) as an Arrow
    table, its schema metadata kept: read through :func:`read_bytes` as :func:`read_parquet`
    reads, so the same limits hold, and a file that is not Arrow IPC is
    :class:`~evaltk.errors.UnreadableInput` naming it."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    label = name if name is not None else str(source)
    data = read_bytes(source)
    try:
        # on one thread, as read_parquet (a table decoded with threads could abort the interpreter at exit)
        table = ipc.open_file(pa.BufferReader(data), options=ipc.IpcReadOptions(use_threads=False)).read_all()
    except (pa.ArrowException, OSError) as e:
        raise UnreadableInput(f"not a readable Arrow IPC file ({e})", file=label) from None
    check_records(table.num_rows, file=label)
    return table


# --------------------------------------------------------------------------- JSON

#: JSON nested deeper than this never reaches a native parser, whatever the limits
#: (pyarrow's JSON reader dies with a segmentation fault near 20,000 levels).
NATIVE_DEPTH = 1000

#: The bytes the nesting screen looks at: quotes, backslashes, brackets, newlines, and the
#: first letters of ``NaN`` / ``Infinity`` (Arrow reads both; JSON has neither).
_EVENTS = np.zeros(256, bool)
_EVENTS[list(b'"\\[]{}\nNI')] = True


def _screen(a: np.ndarray, per_line: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(deepest nesting, a close before its open, a bare NaN/Infinity) per line of the
    bytes ``a`` (``per_line``) or for ``a`` as one document; brackets and letters inside
    strings (escapes followed) do not count.  Vectorised: no byte is visited in Python."""
    pos = np.flatnonzero(_EVENTS[a])
    b = a[pos]
    k = len(b)
    nl = b == 10
    if per_line:
        line = np.cumsum(nl) - nl
        n_lines = int(nl.sum()) + 1
    else:
        line = np.zeros(k, np.int64)
        n_lines = 1
    maxd = np.zeros(n_lines, np.int64)
    neg = np.zeros(n_lines, bool)
    bare = np.zeros(n_lines, bool)
    if not k:
        return maxd, neg, bare
    esc = np.zeros(k, bool)
    bsi = np.flatnonzero(b == 92)
    if bsi.size:  # a quote after an odd run of backslashes is escaped
        bpos = pos[bsi]
        run_start = np.r_[True, bpos[1:] != bpos[:-1] + 1]
        r = np.arange(bsi.size)
        in_run = r - np.maximum.accumulate(np.where(run_start, r, 0))
        after = bsi + 1
        ok = after < k
        after, bpos, in_run = after[ok], bpos[ok], in_run[ok]
        hit = (pos[after] == bpos + 1) & (in_run % 2 == 0) & (b[after] != 92)
        esc[after[hit]] = True
    quote = (b == 34) & ~esc
    if per_line:
        first = np.flatnonzero(np.r_[True, line[1:] != line[:-1]])
        lines_with = line[first]
    else:
        first = np.zeros(1, np.int64)
        lines_with = first
    cq = np.cumsum(quote, dtype=np.int64)
    cq -= quote
    if per_line:
        base = np.zeros(n_lines, np.int64)
        base[lines_with] = cq[first]
        cq -= base[line]
    outside = (cq & 1) == 0
    d = (b == 91).view(np.int8) + (b == 123).view(np.int8) - (b == 93).view(np.int8) - (b == 125).view(np.int8)
    d = np.where(outside, d, np.int8(0))
    cd = np.cumsum(d, dtype=np.int64)
    if per_line:
        base[lines_with] = (cd - d)[first]
        cd -= base[line]
    maxd[lines_with] = np.maximum.reduceat(cd, first)
    neg[lines_with] = np.minimum.reduceat(cd, first) < 0
    bare[line[outside & ((b == 78) | (b == 73))]] = True
    return maxd, neg, bare


def _as_array(data: bytes | bytearray | memoryview | str) -> np.ndarray:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return np.frombuffer(data, np.uint8)


#: Every byte but a quote and the four brackets (what :func:`json_depth` deletes first).
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')


def _running_sum(steps: np.ndarray) -> np.ndarray:
    """Cumulative sum of steps of at most 1 in size: int32 for fewer than 2**31 of them (a
    quarter of int64's memory traffic, which dominated the depth screen of a large file)."""
    out: np.ndarray = np.cumsum(steps, dtype=np.int32 if steps.size < 2 ** 31 else np.int64)
    return out


def _drop_escapes(raw: bytes) -> bytes:
    """JSON text without its escaped backslashes and escaped quotes (``\\\\`` then ``\\"``,
    left to right, as a JSON tokenizer pairs them): every quote left opens or closes a string."""
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    return raw


#: Every byte but a quote and the two line-break bytes (what :func:`json_one_line` deletes first).
_NOT_QUOTE_OR_BREAK = bytes(b for b in range(256) if b not in b'"\n\r')
_BREAKS_TO_SPACES = bytes.maketrans(b"\n\r", b"  ")


def json_one_line(data: bytes) -> bytes | None:
    """One JSON document as one line: ``data`` itself when it has no line break before its
    trailing whitespace, else a copy with every line break a space (the same document: a
    line break is whitespace between tokens), for a parser reading a document per line,
    which is faster than one told that values span lines.  None when a line break lies
    inside a string: no JSON string holds one, so the text is no JSON document and the
    caller parses it as it is, to report that.

    Examples
    --------
    >>> json_one_line(b'{"a": [1,\\n 2]}\\n')
    b'{"a": [1,  2]} '
    >>> json_one_line(b'{"a": "x\\ny"}') is None
    True
    """
    first = min((i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0), default=-1)
    if first < 0 or (len(data) - first <= 4096 and not data[first:].strip(b" \t\r\n")):
        return data
    events = _drop_escapes(data).translate(None, _NOT_QUOTE_OR_BREAK).replace(b'""', b"")
    a = np.frombuffer(events, np.uint8)
    quote = a == 34
    inside = _running_sum(quote) & 1
    if bool(inside[~quote].any()):   # a break after an odd number of quotes is inside a string
        return None
    return data.translate(_BREAKS_TO_SPACES)


def json_depth(data: bytes | memoryview | str) -> int:
    """The deepest nesting of arrays and objects in one JSON document (0 for a scalar).

    Three passes in C over the text leave only what the nesting depends on: escaped
    backslashes and escaped quotes are removed (``\\\\`` then ``\\"``, left to right, as
    a JSON tokenizer pairs them), then every byte but a quote and a bracket, then every two
    adjacent quotes (which changes no bracket's side of a string: a string without a bracket
    in it leaves nothing).  NumPy then reads the few bytes left: a bracket after an odd
    number of quotes is inside a string.

    Examples
    --------
    >>> json_depth('{"a": [1, {"b": "]]"}]}')
    3
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    raw = _drop_escapes(data if isinstance(data, bytes) else bytes(data))
    events = raw.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if not events:
        return 0
    a = np.frombuffer(events, np.uint8)
    step = (a == 91).view(np.int8) + (a == 123).view(np.int8) - (a == 93).view(np.int8) - (a == 125).view(np.int8)
    if b'"' in events:  # a bracket after an odd number of quotes is inside a string
        step[(_running_sum(a == 34) & 1) == 1] = 0
    return max(int(_running_sum(step).max()), 0)


def json_line_screen(data: bytes, start: int = 0, stop: int | None = None, *,
                     newlines: np.ndarray | None = None, constants: bool = True) -> np.ndarray:
    """Which lines of JSON Lines bytes ``data[start:stop]`` (split at ``\\n``, the last one
    possibly empty) must not reach a native JSON parser: deeper than ``Limits.depth`` or
    :data:`NATIVE_DEPTH`, holding a bare ``NaN`` / ``Infinity`` (Arrow reads both; JSON
    has neither), or longer than ``Limits.line_bytes``.  The strict per-record parser
    then says what is wrong with each.  ``newlines``: the newline positions in the range
    (absolute), if known.  ``constants=False`` leaves ``NaN`` / ``Infinity`` out (they do
    not harm the parser): for a caller that refuses what the parser read as a number that
    is not finite, anywhere in its result, and then screens again with ``constants=True``.

    Cheap on clean data: a line's depth is at most its number of opening brackets, counted
    per block of lines by ``bytes.count`` and per line only in a block holding more than
    the limit; only lines with more of them than the limit, or a range that holds ``NaN`` /
    ``Infinity`` somewhere, are measured exactly (strings and escapes followed).

    Examples
    --------
    >>> json_line_screen(b'{"a": [1]}\\n{"a": NaN}\\n{"a": "NaN"}\\n' + b'[' * 2000).tolist()
    [False, True, False, True]
    >>> json_line_screen(b'{"a": [1]}\\n{"a": NaN}\\n' + b'[' * 2000, constants=False).tolist()
    [False, False, True]
    """
    stop = len(data) if stop is None else stop
    a = np.frombuffer(data, np.uint8, count=stop - start, offset=start)
    nls = np.flatnonzero(a == 10) if newlines is None else np.asarray(newlines, np.int64) - start
    n_lines = len(nls) + 1
    lim = current_limits()
    cap = min(lim.depth, NATIVE_DEPTH)
    held = np.zeros(n_lines, bool)
    if stop - start > lim.line_bytes:
        held |= (np.r_[nls, len(a)] - np.r_[0, nls + 1]) > lim.line_bytes
    deep = _bracket_heavy(data, start, a, nls, cap)
    nan = constants and ((data.find(b"NaN", start, stop) >= 0) or (data.find(b"Infinity", start, stop) >= 0))
    if deep.any() or nan:
        maxd, neg, bare = _screen(a, per_line=True)
        held |= (deep & ((maxd > cap) | neg)) | (bare if constants else False)
    return held


#: Lines per block whose opening brackets :func:`json_line_screen` counts at once.
_SCREEN_LINES = 16


def _bracket_heavy(data: bytes, start: int, a: np.ndarray, nls: np.ndarray, cap: int) -> np.ndarray:
    """True for each line of ``a`` (``data[start:]``, newlines at ``nls``) with more than
    ``cap`` opening brackets ("[" or "{", inside strings too): only these can be nested
    deeper than ``cap``.  Counted per block of :data:`_SCREEN_LINES` lines with
    ``bytes.count``; only a block over ``cap`` is counted line by line."""
    n_lines = len(nls) + 1
    heavy = np.zeros(n_lines, bool)
    firsts = np.arange(0, n_lines, _SCREEN_LINES)
    line_start = np.r_[0, nls + 1]
    b_start = (line_start[firsts] + start).tolist()
    b_end = (np.r_[line_start[firsts[1:]], len(a)] + start).tolist()
    count = data.count
    over = [i for i, (s, e) in enumerate(zip(b_start, b_end, strict=True))
            if e - s > cap and count(b"[", s, e) + count(b"{", s, e) > cap]
    for i in over:
        lo, hi = int(firsts[i]), min(int(firsts[i]) + _SCREEN_LINES, n_lines)
        s, e = b_start[i] - start, b_end[i] - start
        opens = np.flatnonzero((a[s:e] | 32) == 123) + s  # "[" (91) and "{" (123): b | 32 == 123
        per_line = np.bincount(np.searchsorted(nls, opens) - lo, minlength=hi - lo)
        heavy[lo:hi] = per_line > cap
    return heavy


def check_depth(depth: int, *, file: str | None = None, record: Any = None,
                field: str | None = None) -> None:
    """Refuse nesting deeper than ``Limits.depth`` (:class:`~evaltk.errors.LimitExceeded`)."""
    if depth > current_limits().depth:
        raise _over("nesting depth", depth, "depth", file=file, record=record, field=field)


def check_line_bytes(n: int, *, file: str | None = None, record: Any = None) -> None:
    """Refuse a line longer than ``Limits.line_bytes``."""
    if n > current_limits().line_bytes:
        raise _over("line length", f"{n} bytes", "line_bytes", file=file, record=record)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _OutOfRange(ValueError):
    def __init__(self, number: str) -> None:
        super().__init__(f"number {number} is out of range (larger than a float holds)")
        self.number = number


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise _OutOfRange(text)
    return x


def _key_of(text: str, number: str) -> str | None:
    """The object key holding ``number`` in ``text`` (for the message), if one does."""
    import re

    m = re.search(r'"((?:[^"\\]|\\.)*)"\s*:\s*' + re.escape(number) + r"(?![0-9.eE+-])", text)
    return None if m is None else m.group(1)


def loads_json(text: str, *, file: str | None = None, record: int | None = None,
               allow_nan: bool = False, allow_surrogates: bool = False) -> Any:
    """Parse one JSON document strictly.

    A repeated object key raises :class:`~evaltk.errors.SchemaViolation` (plain
    ``json.loads`` silently keeps the last value); text that is not JSON raises
    :class:`~evaltk.errors.UnreadableInput` with the line (or ``record``, for one
    line of a JSON Lines file) and column.  ``NaN``, ``Infinity`` and a number too large
    for a float (``1e999``) are not JSON and are refused unless ``allow_nan=True`` (for a
    reader whose own checks then name the field that holds one).  A lone surrogate escape
    (``"\\ud800"``: no file can store the text it makes) is refused unless
    ``allow_surrogates=True`` (the trace reader, whose validator names the field).  Nesting
    deeper than ``Limits.depth`` raises :class:`~evaltk.errors.LimitExceeded` before parsing.

    Examples
    --------
    >>> loads_json('{"a": 1}')
    {'a': 1}
    >>> loads_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    evaltk.errors.SchemaViolation: field `a`: duplicate object key 'a'
    """
    depth = json_depth(text)
    check_depth(depth, file=file, record=record)
    try:
        doc = json.loads(text, object_pairs_hook=no_duplicate_keys,
                         parse_constant=None if allow_nan else _no_constant,
                         parse_float=None if allow_nan else _finite_float)
    except DuplicateKeyError as e:
        raise SchemaViolation(f"duplicate object key {e.args[0]!r}", file=file, record=record,
                              field=e.args[0]) from None
    except json.JSONDecodeError as e:
        raise UnreadableInput(f"not JSON: {e.msg} (column {e.colno})", file=file,
                              record=e.lineno if record is None else record) from None
    except RecursionError:  # deeper than Python's parser reads (the limit was raised past it)
        raise LimitExceeded(f"nesting depth {depth} is more than Python's JSON parser can read "
                            f"(the limit depth={current_limits().depth} is above what it holds)",
                            limit="depth", file=file, record=record) from None
    except _OutOfRange as e:
        raise UnreadableInput(f"not JSON: {e}", file=file, record=record,
                              field=_key_of(text, e.number)) from None
    except ValueError as e:  # NaN, Infinity, an integer of too many digits
        raise UnreadableInput(f"not JSON: {e}", file=file, record=record) from None
    if not allow_surrogates and _SURROGATE.search(text) and _lone_surrogate(doc):
        raise UnreadableInput("not JSON text: a lone surrogate escape (such as \\ud800) is not "
                              "Unicode; no file can store it", file=file, record=record)
    return doc


#: A ``\\uD800``-``\\uDFFF`` escape: only a text holding one can decode to a lone surrogate.
_SURROGATE = __import__("re").compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(doc: Any) -> bool:
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _canon(x: Any, where: str) -> Any:
    """``x`` in canonical form, checked.  Iterative (an explicit stack, children visited in
    document order), so a document as deep as the reading limit allows is never cut short
    by Python's recursion limit."""
    root: list[Any] = [None]
    stack: list[tuple[Any, str, Any, Any]] = [(x, where, root, 0)]
    while stack:
        v, w, parent, key = stack.pop()
        if isinstance(v, dict):
            out: Any = {}
            kids = []
            for k, item in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"{w}: object key {k!r} is not a string.")
                out[k] = None
                kids.append((item, f"{w}.{k}", out, k))
            parent[key] = out
            stack.extend(reversed(kids))
        elif isinstance(v, list | tuple):
            out = [None] * len(v)
            parent[key] = out
            stack.extend((v[i], f"{w}[{i}]", out, i) for i in range(len(v) - 1, -1, -1))
        elif isinstance(v, bool) or v is None or isinstance(v, str | int):
            parent[key] = v
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError(f"{w}: {v!r} has no canonical JSON form.")
            parent[key] = int(v) if v.is_integer() else v
        else:
            raise TypeError(f"{w}: {type(v).__name__} is not a JSON value.")
    return root[0]


def canonical_json(obj: Any) -> bytes:
    """The canonical serialisation every digest is computed over (trajectory locks, judge instruments).

    UTF-8 bytes of JSON with object keys sorted by Unicode code point, no
    whitespace (separators ``,`` and ``:``), non-ASCII characters written as
    themselves (``ensure_ascii=False``; only ``"``, ``\\`` and control characters
    are escaped), integers in plain decimal, a float with an integral value written
    as that integer (``2.0`` as ``2``), other floats in Python's shortest
    round-trip form (``0.1``, ``1e-07``); NaN and infinities are refused.  Arrays
    keep their order.

    Examples
    --------
    >>> canonical_json({"b": [1, 2.0], "a": "é"})
    b'{"a":"\\xc3\\xa9","b":[1,2]}'
    """
    return json.dumps(
        _canon(obj, "$"), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def read_json(path: str | os.PathLike[str], *, allow_nan: bool = False) -> Any:
    """Read one JSON document strictly (:func:`read_text`, then :func:`loads_json`)."""
    return loads_json(read_text(path), file=str(path), allow_nan=allow_nan)


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Read a JSON Lines file strictly: one :func:`loads_json` value per non-blank line,
    errors naming the line."""
    text = read_text(path)
    lines = text.splitlines()
    check_records(len(lines), file=str(path))
    out = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            check_line_bytes(len(line), file=str(path), record=n)
            out.append(loads_json(line, file=str(path), record=n))
    return out


# --------------------------------------------------------------------------- YAML


# --------------------------------------------------------------------------- CSV


def csv_records(text: str, *, n_fields: int | None = None) -> Iterator[tuple[int, list[str] | str]]:
    """The records of CSV text: ``(line, fields)``, or ``(line, reason)`` for a malformed one.

    A quoted field may span lines.  A record that cannot end (an unterminated quote runs
    to the end of the file), breaks the quoting rules, or has a number of fields other
    than ``n_fields`` after swallowing whole lines that are records of ``n_fields`` fields
    on their own (without a quote), is malformed on its first line, and reading starts again on the next line: one bad quote
    spoils one record, and every following line still gets a record of its own.  Blank
    lines give ``[]``.

    Examples
    --------
    >>> list(csv_records('a,b\\n1,"x\\n2,y\\n3,z\\n', n_fields=2))
    [(1, ['a', 'b']), (2, 'not valid CSV (unexpected end of data: an unterminated quote)'), (3, ['2', 'y']), (4, ['3', 'z'])]
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln + "\n" for ln in lines]
    i = 0
    while i < len(lines):
        reader = csv.reader(iter(lines[i:]), strict=True)
        restart = None
        while True:
            before = reader.line_num
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                why = str(e)
                if "unexpected end of data" in why:
                    why += ": an unterminated quote"
                yield i + before + 1, f"not valid CSV ({why})"
                restart = i + before + 1
                break
            used = reader.line_num - before
            start = i + before
            if (used > 1 and n_fields is not None and len(fields) != n_fields
                    and _records_each(lines[start + 1:start + used - 1], n_fields)):
                # the quote swallowed lines that are records of their own: it was unterminated
                yield start + 1, (f"not valid CSV (a quoted field runs over {used} lines and "
                                  f"leaves {len(fields)} fields, not {n_fields}: an "
                                  f"unterminated quote)")
                restart = start + 1
                break
            yield start + 1, fields
        if restart is None:
            return
        i = restart


def _records_each(lines: list[str], n_fields: int) -> bool:
    """Whether there are ``lines`` and each, read alone, is a CSV record of ``n_fields``
    fields with no quote in it (the lines a stray quote swallowed between itself and the
    quote that closed it)."""
    try:
        return bool(lines) and all('"' not in ln and len(next(csv.reader([ln], strict=True), []))
                                   == n_fields for ln in lines)
    except csv.Error:
        return False


class RowLines(Mapping[int, int]):
    """Row ``i`` of a table is on line ``i + first`` of its file (one record per line): the
    ``attrs["lines"]`` of :func:`read_csv_text` without a Python object per row (pandas
    deep-copies ``attrs`` along with a frame)."""

    def __init__(self, n: int, first: int = 2) -> None:
        self.n, self.first = n, first

    def __getitem__(self, i: int) -> int:
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool) and 0 <= i < self.n:
            return int(i) + self.first
        raise KeyError(i)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"RowLines(n={self.n}, first={self.first})"


def _csv_through_arrow(raw: bytes, missing: set[str]) -> Any:
    """The text table of CSV bytes without a quote, through Arrow's CSV reader (every cell a
    string, each row one line), or None whenever the file is not that simple: a quote, a
    carriage return not before a newline, a blank line, a ragged row, a repeated column name,
    text that is not UTF-8.  The per-record reader then reads it and names what is wrong."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw or b'"' in raw or raw.count(b"\r") != raw.count(b"\r\n"):
        return None
    head = raw[:raw.find(b"\n")] if b"\n" in raw else raw
    try:
        names = head.rstrip(b"\r").decode("utf-8").split(",")
    except UnicodeDecodeError:
        return None
    if not head.rstrip(b"\r") or len(set(names)) != len(names):
        return None
    try:
        table = pcsv.read_csv(
            pa.py_buffer(raw),
            read_options=pcsv.ReadOptions(use_threads=False, block_size=max(len(raw) + 1, 1 << 16)),
            parse_options=pcsv.ParseOptions(quote_char=False, escape_char=False, newlines_in_values=False,
                                            ignore_empty_lines=True),
            convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in names}, null_values=[],
                                                strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                check_utf8=True))
    except (pa.ArrowException, ValueError):
        return None
    lines = raw.count(b"\n") + (not raw.endswith(b"\n"))
    if table.column_names != names or table.num_rows + 1 != lines:
        return None  # a blank line (or a header only): the per-record reader numbers the lines
    if missing:
        gone = pa.array(sorted(missing), pa.string())
        table = pa.table({n: pc.if_else(pc.is_in(c, value_set=gone), pa.scalar(None, pa.string()), c)
                          for n, c in zip(names, table.columns, strict=True)})
    return table


def str_dtype() -> Any:
    """pandas' ``str`` dtype: Arrow-backed text, NaN where missing (pandas 3's default for
    text; pandas 2.3, the oldest pandas evaltk supports, has it but does not default to it)."""
    import pandas as pd

    return pd.StringDtype("pyarrow", na_value=np.nan)


def arrow_frame(table: Any) -> Any:
    """``table.to_pandas()`` with every text column (``string``, ``large_string``) as
    :func:`str_dtype`, sharing Arrow's buffers.  pandas 3 does that by default; pandas 2.3
    makes Python ``str`` objects, which the readers then check one object at a time: the
    answers CSV at 10^5 traces read in 23 s of CPU there against 4 s on pandas 3
    (cProfile, 2026-12-03), so every reader converts through here.  Repeated column names, and
    names with a NUL, are kept (pyarrow 14 refuses to convert them; later releases convert them
    as they are)."""
    import pyarrow as pa

    text = str_dtype()
    names = list(table.column_names)
    # a header "a,," or one with a NUL: pyarrow 14's to_pandas refuses repeated names, and takes ""
    # and "\x00" for the same one; such a table is converted under positional names, set back after
    renamed = len(set(names)) < len(names) or any("\x00" in n for n in names)
    if renamed:
        table = table.replace_schema_metadata(None).rename_columns([str(i) for i in range(len(names))])
    frame = table.to_pandas(types_mapper={pa.string(): text, pa.large_string(): text}.get)
    if renamed:
        frame.columns = names
    return frame


def read_csv_text(path: str | os.PathLike[str], *, required: Iterable[str] = (),
                  empty_is_missing: bool = False, missing: Iterable[str] = ()) -> Any:
    """A CSV file as a table of text: every cell a string, nothing guessed.

    No cell becomes missing because it reads ``NA``, ``None``, ``null`` or ``NaN`` (pandas'
    defaults would turn the x_eff answer ``none`` and an id spelled ``NA`` into missing
    values).  What is missing is declared: ``missing`` lists the exact cell texts that are
    (none by default); ``empty_is_missing`` adds the empty cell, otherwise it is ``""``.
    A byte-order mark is allowed.  A malformed record (a ragged row, an unterminated quote)
    raises :class:`~evaltk.errors.SchemaViolation` naming its line; errors name the file,
    and the column when one of ``required`` is absent.  The frame's ``attrs["lines"]`` maps
    each row to its line in the file.

    Every column is pandas' Arrow-backed ``str`` dtype (what ``pandas.read_csv`` gives),
    a missing cell NaN.  A file without a quote, one record per line (what programs write),
    is read by Arrow's CSV reader with no Python object per cell; any other file by the
    per-record reader (quoted fields, blank lines, a malformed record: it names the line),
    which gives the same table.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("item_id,rating\\nNA,none\\n2,\\n", encoding="utf-8")
    >>> read_csv_text(p, required=["rating"]).values.tolist()
    [['NA', 'none'], ['2', '']]
    """
    import pyarrow as pa

    p = Path(path)
    raw = read_bytes(p)
    missing = set(missing) | ({""} if empty_is_missing else set())
    table = _csv_through_arrow(raw, missing)
    if table is not None:
        check_records(table.num_rows, file=str(p))
        line_of: Mapping[int, int] = RowLines(table.num_rows)
    else:
        header, rows, lines = _csv_records_text(decode_utf8(raw, file=str(p)), p, missing)
        table = pa.table({name: pa.array([r[k] for r in rows], pa.string()) for k, name in enumerate(header)})
        line_of = dict(enumerate(lines))
    frame = arrow_frame(table)
    for col in required:
        if col not in frame.columns:
            raise SchemaViolation(f"required column is missing (columns: {list(frame.columns)})",
                                  file=str(p), field=col)
    frame.attrs["lines"] = line_of
    return frame


def _csv_records_text(text: str, p: Path, missing: set[str]) -> tuple[list[str], list[list[Any]], list[int]]:
    """The header, the rows (``None`` for a missing cell) and each row's line, record by record."""
    header: list[str] | None = None
    rows: list[list[Any]] = []
    lines: list[int] = []
    for line, rec in csv_records(text, n_fields=None):
        if header is None:
            if isinstance(rec, str):
                raise UnreadableInput(f"the header is not a CSV row: {rec}", file=str(p), record=line)
            if not rec:
                continue
            header = rec
            if len(set(header)) != len(header):
                raise SchemaViolation(f"duplicated column names in the header: {header}",
                                      file=str(p), record=line)
            continue
        if isinstance(rec, str):
            raise SchemaViolation(f"malformed record: {rec}", file=str(p), record=line)
        if not rec:
            continue  # a blank line is not a record
        if len(rec) != len(header):
            raise SchemaViolation(f"malformed record: has {len(rec)} fields; the header has "
                                  f"{len(header)}", file=str(p), record=line)
        rows.append([None if c in missing else c for c in rec])
        lines.append(line)
        if len(rows) > current_limits().records:
            check_records(len(rows), file=str(p))
    if header is None:
        raise UnreadableInput("not a CSV table (the file has no header row)", file=str(p))
    return header, rows, lines


# =========================================================================== the writing layer
#
# Every output of every command and of the Python API goes through these (docs/outputs.md):
# a file is written under a temporary name in its destination folder and renamed over the
# destination once complete; a folder is assembled beside its destination and renamed, or
# (a folder that holds other things, a partitioned dataset) each file is written atomically
# and a completion record is written last.  ``check_output`` is the one refusal rule for an
# output path that is, or is inside, an input.

#: Suffix of every temporary name (``.<name>.<random>.tmp``): no reader's glob matches it.
TEMP_SUFFIX = ".tmp"

#: Leading characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV
#: Injection"): ``=``, ``+``, ``-``, ``@``, tab and carriage return.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _within(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None], *,
                 kind: str = "file", writes: Iterable[str] | None = None, by: str | None = None,
                 overwrite: bool = False) -> Path:
    """Refuse an output path that would overwrite or write into one of ``inputs``.

    ``kind="file"``: ``out`` must not be an existing folder, and must not be (after
    symlinks and ``..`` are resolved) one of ``inputs`` or inside one of them.
    ``kind="dir"``: ``out`` must not be an existing file, nor be or lie inside an
    input; with ``writes`` (the names the command writes in ``out``) no input may be,
    hold or lie inside ``out/<name>``; without ``writes`` the whole folder is replaced,
    so no input may lie inside ``out`` at all.  With ``writes`` and ``by`` (the command,
    ``"evaltk score"``) an existing folder must also hold nothing but what ``by`` writes
    (:func:`check_own_folder`) unless ``overwrite``.

    Returns ``out`` as a :class:`~pathlib.Path`.  Raises
    :class:`~evaltk.errors.OutputRefused` naming both paths (the command line exits 64).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); lock = d / "lock.json"; _ = lock.write_text("{}")
    >>> check_output(d / "report.json", [lock]).name
    'report.json'
    >>> check_output(lock, [lock])
    Traceback (most recent call last):
    ...
    evaltk.errors.OutputRefused: output ... is the input ...lock.json; choose another output path
    """
    o = Path(out)
    writes = None if writes is None else list(writes)
    if kind not in ("file", "dir"):
        raise ValueError(f"`kind` must be 'file' or 'dir'; got {kind!r}")
    if kind == "file" and o.is_dir():
        raise OutputRefused(f"output {o} is a folder; a file is expected here", output=str(o))
    if kind == "dir" and o.exists() and not o.is_dir():
        raise OutputRefused(f"output {o} is an existing file; a folder is expected here", output=str(o))
    blocker = next((a for a in o.parents if a.exists() or a.is_symlink()), None)
    if blocker is not None and not blocker.is_dir():
        raise OutputRefused(f"output {o}: {blocker} is a file, not a folder", output=str(o))
    ro = _real(o)
    targets = [ro] if kind == "file" or writes is None else [ro / w for w in writes]
    for raw in inputs:
        if raw is None or str(raw) == "":
            continue
        ri = _real(raw)
        if ro == ri:
            raise OutputRefused(f"output {o} is the input {raw}; choose another output path",
                                output=str(o), input=str(raw))
        if _within(ro, ri):
            raise OutputRefused(f"output {o} is inside the input {raw}; choose an output outside it",
                                output=str(o), input=str(raw))
        for t in targets:
            if _within(ri, t) or _within(t, ri):
                raise OutputRefused(f"output {o} would overwrite the input {raw} (written as {t}); "
                                    "choose another output path", output=str(o), input=str(raw))
    if by is not None and writes is not None and not overwrite:
        check_own_folder(o, writes, by=by)
    return o


def _foreign(folder: Path, writes: set[str], under: str = "") -> list[str]:
    """The entries of ``folder`` (relative to the output, ``under`` the prefix) that are not
    among ``writes``, nor a folder holding some of them, nor one of their temporaries."""
    names = {w.split("/", 1)[0]: w for w in writes}
    found: list[str] = []
    for e in sorted(folder.iterdir(), key=lambda x: x.name):
        rel = f"{under}{e.name}"
        temp = e.name.endswith(TEMP_SUFFIX) and any(e.name.startswith(f".{n}.") for n in names)
        if temp or (rel in writes and not e.is_dir()):
            continue
        if e.is_dir() and not e.is_symlink() and any(w.startswith(rel + "/") for w in writes):
            found += _foreign(e, writes, rel + "/")
        else:
            found.append(rel + ("/" if e.is_dir() else ""))
    return found


def check_own_folder(out: str | os.PathLike[str], writes: Iterable[str], *, by: str) -> None:
    """Refuse an existing output folder that is not an earlier output of the command ``by``.

    The one rule for a command that writes named files into a folder (``evaltk demo``,
    ``score``, ``ingest``, ``import``; docs/outputs.md).  ``writes`` are the paths it
    writes, relative to the folder (``suite/run.json``), the last of them the file it
    writes last (``manifest.json``, ``import.json``), which marks a finished run.  A new
    or empty folder is written; so is an earlier run's, one that holds that last file and
    nothing but ``writes`` (and their temporaries), which is rewritten in place.  Any
    other folder is refused: a demo corpus, another command's output, a file of the
    user's that happens to share a name, so that none of them is replaced by a file of
    the same name.  The commands' ``--overwrite`` skips this check (their files then
    replace those of the same name; nothing else in the folder is touched).

    Raises :class:`~evaltk.errors.OutputRefused` naming the folder and what is in it
    (the command line exits 64).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "manifest.json").write_text("{}")
    >>> check_own_folder(d, ["scores.parquet", "manifest.json"], by="evaltk score")
    >>> _ = (d / "traces.jsonl").write_text("")
    >>> check_own_folder(d, ["scores.parquet", "manifest.json"], by="evaltk score")
    Traceback (most recent call last):
    ...
    evaltk.errors.OutputRefused: output ... holds files evaltk score does not write (traces.jsonl): ...
    """
    o = Path(out)
    if not o.is_dir() or not any(o.iterdir()):
        return
    writes = list(writes)
    others = _foreign(o, set(writes))
    hint = (f"give a new or empty folder or one an earlier `{by}` wrote, or pass --overwrite to write its "
            "files over those of the same name")
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise OutputRefused(f"output {o} holds files {by} does not write ({shown}): {hint}", output=str(o))
    if not (o / writes[-1]).is_file():
        shown = ", ".join(sorted(e.name for e in o.iterdir())[:5])
        raise OutputRefused(f"output {o} holds {shown} but no {writes[-1]}, so it is not a finished "
                            f"output of {by}: {hint}", output=str(o))


def _umask() -> int:
    """The process's umask, read without changing it where the system shows it (Linux's
    ``/proc/self/status``: ``os.umask`` can only be read by setting it, which another
    thread writing a file at that moment would see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temp_name(p: Path, *, directory: bool = False) -> Path:
    """A fresh temporary name beside ``p``, with the permissions an ordinary ``open`` would
    give (an existing ``p``'s mode kept; otherwise 0o666 / 0o777 less the umask), not
    ``mkstemp``'s 0o600: a file replaced atomically keeps who may read it."""
    if directory:
        d = Path(tempfile.mkdtemp(prefix=f".{p.name}.", suffix=TEMP_SUFFIX, dir=str(p.parent)))
        os.chmod(d, 0o777 & ~_umask())
        return d
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=TEMP_SUFFIX, dir=str(p.parent))
    try:
        mode = p.stat().st_mode & 0o7777 if p.is_file() else 0o666 & ~_umask()
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return Path(tmp)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def temporaries_of(path: str | os.PathLike[str]) -> list[Path]:
    """The temporaries :func:`atomic_path` (and :func:`atomic_dir`) may have left beside ``path``
    (a writer killed before its rename): ``.<name>.<8 characters of mkstemp's>.tmp``, exactly, so
    a name that merely begins the same (another file's temporary) is not among them."""
    p = Path(path)
    pattern = re.compile(rf"\.{re.escape(p.name)}\.[a-z0-9_]{{8}}{re.escape(TEMP_SUFFIX)}")
    try:
        entries = os.listdir(p.parent)
    except OSError:
        return []
    return [p.parent / e for e in sorted(entries) if pattern.fullmatch(e)]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write to; renamed over ``path`` on success.

    The old file stays whole until the new one is complete; a failed write (an
    exception in the block) removes the temporary and leaves ``path`` as it was.
    Creates the folder when needed; refuses a ``path`` that is a folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.parquet"
    >>> import pandas as pd
    >>> with atomic_path(p) as tmp:
    ...     pd.DataFrame({"a": [1]}).to_parquet(tmp)
    >>> sorted(x.name for x in p.parent.iterdir())
    ['t.parquet']
    """
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        raise OutputRefused(f"output {p} is a folder; a file is expected here", output=str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_name(p)
    try:
        yield tmp
        os.replace(tmp, p)
    except BaseException:
        _remove(tmp)
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary folder beside ``path`` to assemble an output folder in; renamed to
    ``path`` when the block succeeds (an existing ``path`` is moved aside first, then
    removed), removed when it fails (``path`` then stays as it was)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputRefused(f"output {p} is an existing file; a folder is expected here", output=str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_name(p, directory=True)
    try:
        yield tmp
        old = None
        if p.exists() or p.is_symlink():
            old = _temp_name(p, directory=True)
            os.replace(p, old)  # an empty temp dir: rename over it
        os.replace(tmp, p)
        if old is not None:
            _remove(old)
    except BaseException:
        _remove(tmp)
        raise


@contextlib.contextmanager
def removed_on_failure(*paths: str | os.PathLike[str] | None) -> Iterator[None]:
    """When the block raises, remove each of ``paths`` (files) that exists, so a refused or
    failed run leaves no earlier result at its output path to be read as this run's."""
    try:
        yield
    except BaseException:
        for raw in paths:
            if raw is not None and str(raw) != "":
                p = Path(raw)
                if p.is_file() or p.is_symlink():
                    p.unlink()
        raise


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_document(path: str | os.PathLike[str]) -> Any:
    """A JSON or YAML document: ``.yaml`` / ``.yml`` as YAML (:func:`loads_yaml`: the safe
    loader, a repeated key refused), ``.json`` as strict JSON, any other name as JSON first
    and YAML when it is not JSON.  ``NaN`` is let through so that the loader names the field
    that holds it."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() not in (".yaml", ".yml"):
        try:
            return loads_json(text, file=str(path), allow_nan=True)
        except UnreadableInput:
            if path.suffix.lower() == ".json":
                raise
    return loads_yaml(text, file=str(path))




def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 atomically: through a temporary file in the same folder,
    renamed over ``path`` only once it is complete (the old file stays whole until then,
    and a failed write leaves no temporary behind).  Creates the folder when needed."""
    write_bytes_atomic(path, text.encode("utf-8"))


#: A list or object with more entries than this is written one entry per line (:func:`json_text`).
JSON_LONG = 1000


def json_text(doc: Any, *, default: Any = None, allow_nan: bool = True, ensure_ascii: bool = True,
              sort_keys: bool = False, long: int = JSON_LONG) -> str:
    """``json.dumps(doc, indent=2, ...)``, at the C encoder's speed for long documents.

    Python's ``json`` encodes with indentation in pure Python (about 3 s for the summary of
    a 100,000-task suite); without indentation it uses its C encoder.  Here a list or an
    object of at most ``long`` entries (:data:`JSON_LONG`) is indented two spaces per level, exactly
    as ``json.dumps(indent=2)`` writes it, and a longer one gets one entry per line, each
    entry compact (the C encoder's ``", "`` and ``": "``).  A small document is
    byte-for-byte what ``json.dumps(indent=2)`` gives; a long one stays one line per task,
    trace or row, and parses to the same value.

    >>> json_text({"a": [1, 2], "b": {}}) == json.dumps({"a": [1, 2], "b": {}}, indent=2)
    True
    """
    flat = json.JSONEncoder(ensure_ascii=ensure_ascii, allow_nan=allow_nan, default=default,
                            sort_keys=sort_keys).encode
    out: list[str] = []

    def key(k: Any) -> str:
        if not isinstance(k, str):  # json's own key rule (int, float, bool, None; else TypeError)
            k = next(iter(json.loads(flat({k: None}))))
        return flat(k)

    def emit(v: Any, level: int) -> None:
        if not (isinstance(v, dict | list | tuple) and v):
            out.append(flat(v))
            return
        pad = "\n" + "  " * (level + 1)
        compact = len(v) > long
        pairs = (sorted(v.items()) if sort_keys else v.items()) if isinstance(v, dict) else ((None, x) for x in v)
        out.append("{" if isinstance(v, dict) else "[")
        for i, (k, x) in enumerate(pairs):
            out.append(("," if i else "") + pad)
            if isinstance(v, dict):
                out.append(key(k) + ": ")
            if compact:
                out.append(flat(x))
            else:
                emit(x, level + 1)
        out.append("\n" + "  " * level + ("}" if isinstance(v, dict) else "]"))

    emit(doc, 0)
    return "".join(out)


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Write ``doc`` as indented UTF-8 JSON (no ``NaN``) atomically (:func:`write_text_atomic`,
    :func:`json_text`)."""
    write_text_atomic(path, json_text(doc, ensure_ascii=False, allow_nan=False) + "\n")


def write_jsonl(path: str | os.PathLike[str], records: Iterable[Any], *,
                default: Any = None) -> None:
    """Write one compact JSON document per line (no ``NaN``) atomically; ``default`` as in
    :func:`json.dumps`."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False, default=default) + "\n")


def write_parquet(frame: Any, path: str | os.PathLike[str]) -> None:
    """Write a DataFrame (without its index) or an Arrow table as Parquet, atomically."""
    with atomic_path(path) as tmp:
        if hasattr(frame, "to_parquet"):
            frame.to_parquet(tmp, index=False)
        else:
            import pyarrow.parquet as pq

            pq.write_table(frame, tmp)


def neutralize_formula(cell: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, defused with a leading ``'`` (OWASP).

    Text that starts with one of :data:`FORMULA_PREFIXES` gets a single quote in
    front; a cell that is a plain number (``-0.5``, ``+3``, ``1e-3``) stays as it is,
    as does anything that is not a string.

    Examples
    --------
    >>> [neutralize_formula(x) for x in ["=1+2", "@SUM(A1)", "-0.5", "ok", -3, "-x"]]
    ["'=1+2", "'@SUM(A1)", '-0.5', 'ok', -3, "'-x"]
    """
    if isinstance(cell, str) and cell.startswith(FORMULA_PREFIXES) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def write_csv(frame: Any, path: str | os.PathLike[str]) -> None:
    """Write a DataFrame as UTF-8 CSV (no index, ``\\n`` line ends) atomically, text cells
    passed through :func:`neutralize_formula` (number columns are left as they are).  A
    text cell that holds a carriage return makes every text cell quoted (a bare CR would
    otherwise split the row for most readers)."""
    import csv

    import pandas as pd

    safe = frame.copy()
    bare_cr = False
    for c in safe.columns:
        s = safe[c]
        if s.dtype == object or pd.api.types.is_string_dtype(s.dtype) or isinstance(s.dtype, pd.CategoricalDtype):
            safe[c] = s.astype(object).map(neutralize_formula)
            bare_cr = bare_cr or bool(safe[c].map(lambda x: isinstance(x, str) and "\r" in x).any())
    # Python's CSV writer quotes a cell holding "\n" but not one holding a bare "\r", which
    # readers take for a line end: such a file quotes every text cell
    quoting = csv.QUOTE_NONNUMERIC if bare_cr else csv.QUOTE_MINIMAL
    with atomic_path(path) as tmp:
        safe.to_csv(tmp, index=False, lineterminator="\n", quoting=quoting)


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, as hex (read in chunks); :class:`~evaltk.errors.UnreadableInput`
    when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise UnreadableInput(f"cannot read input file: {e.strerror}.", file=str(path)) from None
    return h.hexdigest()


def check_digest(path: str | os.PathLike[str], expected: str, *, recorded_in: str) -> None:
    """Refuse a file whose SHA-256 is not ``expected`` (``"sha256:<hex>"`` or bare hex), naming
    the file, the record that holds the digest and the check
    (:class:`~evaltk.errors.SchemaViolation`); a missing file is refused the same way."""
    p = Path(path)
    if not p.is_file():
        raise SchemaViolation(f"integrity check `digest`: the file is missing ({recorded_in} lists it)",
                              file=str(p))
    want = str(expected).removeprefix("sha256:")
    have = file_digest(p)
    if have != want:
        raise SchemaViolation(f"integrity check `digest`: sha256 {have[:16]}... differs from "
                              f"{want[:16]}... recorded in {recorded_in}: the file changed after it was "
                              "written", file=str(p))


def sha256_digest(obj: Any) -> str:
    """Lower-case hex SHA-256 of :func:`canonical_json` of ``obj``.

    Examples
    --------
    >>> sha256_digest({})
    '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'
    """
    return hashlib.sha256(canonical_json(obj)).hexdigest()


# --------------------------------------------------------------------------- safe YAML

import yaml  # noqa: E402  (PyYAML is a core dependency)


class _DuplicateKeys:
    """Mixin for a safe loader: records duplicate keys (with their lines), never overwrites."""

    duplicates: list[tuple[str, int, int]]  # key, line, first line
    nonfinite: list[tuple[int, str]]  # line, the scalar (.nan, -.inf)

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                    hash(key)
                except Exception:  # the base class reports unhashable keys
                    continue
                line = key_node.start_mark.line + 1
                if key in first:
                    self.duplicates.append((str(key), line, first[key]))
                else:
                    first[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]

    def construct_yaml_float(self, node: yaml.Node) -> float:
        """A float; ``.nan`` / ``.inf`` are recorded as problems (strict JSON's rule, in YAML)."""
        x = super().construct_yaml_float(node)  # type: ignore[misc]
        if not math.isfinite(x):
            self.nonfinite.append((node.start_mark.line + 1, str(node.value)))
        return x


class _SafeLoader(_DuplicateKeys, yaml.SafeLoader):
    """The pure-Python safe loader: used for messages, identical with or without libyaml."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates = []
        self.nonfinite = []


_SafeLoader.add_constructor("tag:yaml.org,2002:float", _DuplicateKeys.construct_yaml_float)  # type: ignore[type-var]  # types-PyYAML: a mixin's constructor


if hasattr(yaml, "CSafeLoader"):
    class _FastLoader(_DuplicateKeys, yaml.CSafeLoader):
        """libyaml's parser with the same safe constructor: about ten times faster."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates = []
            self.nonfinite = []

    _FastLoader.add_constructor("tag:yaml.org,2002:float", _DuplicateKeys.construct_yaml_float)  # type: ignore[type-var]  # types-PyYAML: a mixin's constructor
else:  # pragma: no cover - PyYAML built without libyaml
    _FastLoader = _SafeLoader  # type: ignore[misc, assignment]


def parse_yaml(text: str) -> tuple[Any, yaml.Node | None, list[tuple[int | None, str]]]:
    """Parse YAML safely.  Returns (data, root node, [(line, problem)]); never raises on bad YAML.

    No object is constructed (the safe loader) and a duplicate key is a problem with
    its line and the line of the first.  The libyaml parser reads a well-formed file;
    a file it rejects is parsed again by the pure-Python parser, so that the reported
    problem is the same on every install.
    """
    try:
        depth = yaml_depth(text)
    except yaml.YAMLError as e:  # libyaml stops counting at 1,000 levels; otherwise not YAML,
        depth = 1001 if "maximum nesting depth" in str(e) else 0  # which the parse below names
    lim = current_limits().depth
    if depth > lim:  # refused before a document is built (its construction recurses)
        return None, None, [(None, f"nesting depth {depth} is past the limit depth={lim} "
                                   f"({_raise_hint('depth')})")]
    if _FastLoader is not _SafeLoader:
        try:
            loader = _FastLoader(text)
        except yaml.YAMLError as e:  # a character YAML does not allow (NUL): found on creation
            return None, None, [(None, f"not valid YAML: {e}")]
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            return data, node, _loader_problems(loader)
        except (yaml.YAMLError, RecursionError, ValueError):
            pass  # the pure-Python parser below names the problem
        finally:
            loader.dispose()
    try:
        loader = _SafeLoader(text)  # type: ignore[assignment]  # either loader: the same interface
    except yaml.YAMLError as e:
        return None, None, [(None, f"not valid YAML: {e}")]
    problems: list[tuple[int | None, str]] = []
    data = None
    node = None
    try:
        node = loader.get_single_node()
        if node is not None:
            data = loader.construct_document(node)
        problems += _loader_problems(loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "invalid YAML"
        if e.context and e.problem:
            what = f"{e.context}, {e.problem}"
        problems.append((mark.line + 1 if mark else None, f"not valid YAML: {what}"))
        data, node = None, None
    except yaml.YAMLError as e:
        problems.append((None, f"not valid YAML: {e}"))
        data, node = None, None
    except RecursionError:
        problems.append((None, "not valid YAML: nested too deeply"))
        data, node = None, None
    except ValueError as e:  # an integer of more digits than Python converts
        problems.append((None, f"not valid YAML: {e}"))
        data, node = None, None
    finally:
        loader.dispose()
    return data, node, problems


def _loader_problems(loader: Any) -> list[tuple[int | None, str]]:
    return ([(line, f"duplicate key `{key}` (first at line {first})")
             for key, line, first in loader.duplicates]
            + [(line, f"{value} is not a number JSON can hold (NaN and infinity are refused)")
               for line, value in loader.nonfinite])


def yaml_depth(text: str) -> int:
    """The deepest nesting of sequences and mappings in a YAML stream, from its events
    (the parser keeps a stack, not a recursion: any depth is measured safely)."""
    depth = top = 0
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for ev in yaml.parse(text, Loader=loader):
        if isinstance(ev, yaml.CollectionStartEvent):
            depth += 1
            top = max(top, depth)
        elif isinstance(ev, yaml.CollectionEndEvent):
            depth -= 1
    return top




def loads_yaml(text: str, *, file: str | None = None) -> Any:
    """One YAML document, strictly: :func:`parse_yaml`, raising on its first problem.

    A duplicate key raises :class:`~evaltk.errors.SchemaViolation` naming the key as the
    field and its line as the record, and so does ``.nan`` / ``.inf`` (strict JSON's rule);
    nesting past ``Limits.depth`` raises :class:`~evaltk.errors.LimitExceeded` before the
    document is built; text that is not YAML raises :class:`~evaltk.errors.UnreadableInput`
    with the line.

    Examples
    --------
    >>> loads_yaml("a: 1\\nb: [x, y]\\n")
    {'a': 1, 'b': ['x', 'y']}
    >>> loads_yaml("a: 1\\na: 2\\n", file="r.yaml")
    Traceback (most recent call last):
    ...
    evaltk.errors.SchemaViolation: r.yaml: line 2: field `a`: duplicate key `a` (first at line 1)
    """
    data, _node, problems = parse_yaml(text)
    if problems:
        line, msg = problems[0]
        if msg.startswith("duplicate key"):
            key = msg.split("`")[1]
            raise SchemaViolation(msg, file=file, record=line, field=key)
        if msg.startswith("nesting depth"):
            raise LimitExceeded(msg, limit="depth", file=file, record=line)
        if "not a number JSON can hold" in msg:
            raise SchemaViolation(msg, file=file, record=line)
        raise UnreadableInput(msg, file=file, record=line)
    return data


# --------------------------------------------------------------------------- process memory


def proc_status(pid: int | str, key: str) -> int:
    """``VmRSS`` / ``VmHWM`` of a process from ``/proc/<pid>/status``, bytes (0 where unreadable)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: ``always``: :func:`release_memory` on every call (a diagnostic of what a process keeps).
RELEASE_ENV = "EVALTK_RELEASE_MEMORY"
_RELEASED_AT = [0]  # this process's resident size right after the last release (one number, not a cache)


def release_memory() -> None:
    """Hand freed memory back to the system (Arrow's pool and glibc keep it otherwise): after a
    large table is freed (ingest, between its phases) and between scale partitions, so a
    long-lived process or worker stays at the size of its largest step.  Arrow's pool and
    glibc's heap do not lend each other freed memory, so returning one's before the other
    grows lowers the peak, not only the resident size at the end.

    Only when this process has grown by a quarter (at least 256 MiB) since the last release: a
    full ``gc.collect`` and ``malloc_trim`` after every partition cost about a fifth of its CPU
    (0.27 s of 1.39 s per 100k traces, most of it faulting the returned pages in again), while
    the memory a partition needs is reused by the next one anyway.  Resident memory between
    partitions therefore stays under 1.25x (or +256 MiB) the size after a release, whatever the
    number of partitions; the peak is that of the largest partition either way.  With the
    environment variable ``EVALTK_RELEASE_MEMORY=always`` (a diagnostic: ``benchmarks/scale.py
    --release-always``) it releases on every call, so the resident size between partitions is
    what a process keeps, not a sawtooth above it.
    """
    import gc

    import pyarrow as pa

    base = _RELEASED_AT[0]
    always = os.environ.get(RELEASE_ENV) == "always"
    if base and not always and proc_status("self", "VmRSS") < base + max(base // 4, 256 * 2**20):
        return
    gc.collect()
    pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    _RELEASED_AT[0] = proc_status("self", "VmRSS")


def released_rss() -> int:
    """This process's resident size (bytes) right after :func:`release_memory` last handed memory
    back (0 before it first did): the floor its resident size returns to, which grows only if
    something is kept from one partition to the next."""
    return _RELEASED_AT[0]


@functools.cache
def _libc() -> Any:
    """glibc, loaded once (each ``ctypes.CDLL`` call makes a new function-pointer class that stays
    alive: loading it per release grew the process by a few objects a partition); None without glibc."""
    try:
        import ctypes

        lib = ctypes.CDLL("libc.so.6")
        lib.malloc_trim  # noqa: B018 - AttributeError here when there is no malloc_trim
        return lib
    except (OSError, AttributeError):
        return None
