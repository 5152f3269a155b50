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
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (
    DuplicateKeyError,
    LimitExceeded,
    SchemaViolation,
    UnreadableInput,
    no_duplicate_keys,
)

__all__ = ["Limits", "current_limits", "limits", "parse_limits", "LIMITS_ENV",
           "read_bytes", "read_parquet", "decode_utf8", "read_text", "loads_json", "read_json", "read_jsonl",
           "json_depth", "json_line_screen", "loads_yaml", "yaml_depth", "check_depth",
           "check_line_bytes", "NATIVE_DEPTH",
           "csv_records", "read_csv_text", "check_categories", "check_records", "check_line_records",
           "write_text_atomic", "write_json"]

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
    new = dataclasses.replace(current_limits(), **changes)
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


def json_depth(data: bytes | memoryview | str) -> int:
    """The deepest nesting of arrays and objects in one JSON document (0 for a scalar).

    Examples
    --------
    >>> json_depth('{"a": [1, {"b": "]]"}]}')
    3
    """
    return int(_screen(_as_array(data), per_line=False)[0][0])


def json_line_screen(data: bytes, start: int = 0, stop: int | None = None, *,
                     newlines: np.ndarray | None = None) -> np.ndarray:
    """Which lines of JSON Lines bytes ``data[start:stop]`` (split at ``\\n``, the last one
    possibly empty) must not reach a native JSON parser: deeper than ``Limits.depth`` or
    :data:`NATIVE_DEPTH`, holding a bare ``NaN`` / ``Infinity`` (Arrow reads both; JSON
    has neither), or longer than ``Limits.line_bytes``.  The strict per-record parser
    then says what is wrong with each.  ``newlines``: the newline positions in the range
    (absolute), if known.

    Cheap on clean data: a line's depth is at most its number of opening brackets, so only
    lines with more of them than the limit, or a chunk that holds ``NaN`` / ``Infinity``
    somewhere, are measured exactly (strings and escapes followed).

    Examples
    --------
    >>> json_line_screen(b'{"a": [1]}\\n{"a": NaN}\\n{"a": "NaN"}\\n' + b'[' * 2000).tolist()
    [False, True, False, True]
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
    opens = np.flatnonzero((a | 32) == 123)  # "[" (91) and "{" (123): the bytes b with b | 32 == 123
    deep = np.bincount(np.searchsorted(nls, opens), minlength=n_lines) > cap
    nan = (data.find(b"NaN", start, stop) >= 0) or (data.find(b"Infinity", start, stop) >= 0)
    if deep.any() or nan:
        maxd, neg, bare = _screen(a, per_line=True)
        held |= (deep & ((maxd > cap) | neg)) | bare
    return held


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


def _yaml() -> Any:
    import yaml

    return yaml


_YAML_LOADER: list[Any] = []


def _strict_yaml_loader() -> Any:
    """A safe YAML loader (libyaml's when present) that refuses a repeated key and a
    ``.nan`` / ``.inf`` float, naming the line."""
    if _YAML_LOADER:
        return _YAML_LOADER[0]
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        hash(key)
                    except TypeError:
                        continue  # the base class reports an unhashable key
                    line = key_node.start_mark.line + 1
                    if key in seen:
                        raise SchemaViolation(f"duplicate key {str(key)!r} (first on line "
                                              f"{seen[key]})", record=line, field=str(key))
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_float(self, node: Any) -> float:
            x = super().construct_yaml_float(node)
            if not math.isfinite(x):
                raise SchemaViolation(f"{node.value} is not a number JSON can hold (NaN and "
                                      f"infinity are refused)", record=node.start_mark.line + 1)
            return x

    StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
    _YAML_LOADER.append(StrictLoader)
    return StrictLoader


def yaml_depth(text: str) -> int:
    """The deepest nesting of sequences and mappings in a YAML stream, from its events
    (the parser keeps a stack, not a recursion: any depth is measured safely)."""
    yaml = _yaml()
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
    """Parse one YAML document strictly: safe tags only, a repeated key and ``.nan`` /
    ``.inf`` refused (:class:`~evaltk.errors.SchemaViolation` naming the line), nesting
    past ``Limits.depth`` refused before the document is built, text that is not YAML
    :class:`~evaltk.errors.UnreadableInput` naming the line.

    Examples
    --------
    >>> loads_yaml("a: 1\\nb: [x, y]\\n")
    {'a': 1, 'b': ['x', 'y']}
    >>> loads_yaml("a: 1\\na: 2\\n")
    Traceback (most recent call last):
    ...
    evaltk.errors.SchemaViolation: line 2: field `a`: duplicate key 'a' (first on line 1)
    """
    yaml = _yaml()
    try:
        check_depth(yaml_depth(text), file=file)
        return yaml.load(text, Loader=_strict_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except SchemaViolation as e:
        if e.file is None and file is not None and not isinstance(e, LimitExceeded):
            raise SchemaViolation(e.detail, file=file, record=e.record, field=e.field) from None
        raise
    except RecursionError:
        raise LimitExceeded(f"nesting depth is more than Python's YAML reader can build (the limit "
                            f"depth={current_limits().depth} is above what it holds)", limit="depth",
                            file=file) from None
    except ValueError as e:  # an integer of more digits than Python converts, a bad date
        raise UnreadableInput(f"not YAML that can be read: {e}", file=file) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        line = None if mark is None else mark.line + 1
        if "maximum nesting depth" in problem:  # libyaml's own bound (1,000 levels)
            raise LimitExceeded(f"nesting depth past libyaml's bound of 1000 levels (limit depth="
                                f"{current_limits().depth})", limit="depth", file=file,
                                record=line) from None
        raise UnreadableInput(f"not YAML: {problem}", file=file, record=line) from None


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

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text("item_id,rating\\nNA,none\\n2,\\n", encoding="utf-8")
    >>> read_csv_text(p, required=["rating"]).values.tolist()
    [['NA', 'none'], ['2', '']]
    """
    import pandas as pd

    p = Path(path)
    text = read_text(p)
    missing = set(missing) | ({""} if empty_is_missing else set())
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
    frame = pd.DataFrame(rows, columns=header, dtype=object)
    for col in required:
        if col not in frame.columns:
            raise SchemaViolation(f"required column is missing (columns: {list(frame.columns)})",
                                  file=str(p), field=col)
    frame.attrs["lines"] = dict(enumerate(lines))
    return frame


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 atomically: through a temporary file in the same folder,
    renamed over ``path`` only once it is complete (the old file stays whole until then,
    and a failed write leaves no temporary behind).  Creates the folder when needed."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Write ``doc`` as indented UTF-8 JSON (no ``NaN``) atomically (:func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
