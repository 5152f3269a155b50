"""The reading and writing layer every format shares.

One home for what each reader needs before its format begins: the file read with
errors that name it, UTF-8 decoding that names the byte, strict JSON (a repeated
object key, ``NaN`` and ``Infinity`` refused), JSON Lines, and atomic writes (the
old file stays whole until the new one is complete).  Format-specific readers
(task.yaml, Parquet, CSV) build on these and add their own rules.

Errors are :class:`~evaltk.errors.UnreadableInput` (the bytes cannot be read as the
format) and :class:`~evaltk.errors.SchemaViolation` (read, but ambiguous: a
duplicated key), each naming the file and, where known, the line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import (
    DuplicateKeyError,
    OutputRefused,
    SchemaViolation,
    UnreadableInput,
    no_duplicate_keys,
)

__all__ = ["read_bytes", "decode_utf8", "read_text", "loads_json", "read_json", "read_jsonl",
           "read_csv_text", "read_document", "check_output", "atomic_path", "atomic_dir", "removed_on_failure",
           "write_bytes_atomic", "write_text_atomic", "write_json", "write_jsonl", "write_parquet",
           "write_csv", "neutralize_formula", "file_digest", "check_digest", "TEMP_SUFFIX",
           "FORMULA_PREFIXES", "canonical_json", "sha256_digest", "parse_yaml", "loads_yaml"]


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``; :class:`~evaltk.errors.UnreadableInput` when it is missing,
    a directory or cannot be read."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise UnreadableInput("no such file", file=str(p)) from None
    except IsADirectoryError:
        raise UnreadableInput("is a directory, not a file", file=str(p)) from None
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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads_json(text: str, *, file: str | None = None, record: int | None = None,
               allow_nan: bool = False) -> Any:
    """Parse one JSON document strictly.

    A repeated object key raises :class:`~evaltk.errors.SchemaViolation` (plain
    ``json.loads`` silently keeps the last value); text that is not JSON raises
    :class:`~evaltk.errors.UnreadableInput` with the line (or ``record``, for one
    line of a JSON Lines file) and column.  ``NaN`` and ``Infinity`` are not JSON
    and are refused unless ``allow_nan=True`` (for a reader whose own checks then
    name the field that holds one).

    Examples
    --------
    >>> loads_json('{"a": 1}')
    {'a': 1}
    >>> loads_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    evaltk.errors.SchemaViolation: field `a`: duplicate object key 'a'
    """
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys,
                          parse_constant=None if allow_nan else _no_constant)
    except DuplicateKeyError as e:
        raise SchemaViolation(f"duplicate object key {e.args[0]!r}", file=file, record=record,
                              field=e.args[0]) from None
    except json.JSONDecodeError as e:
        raise UnreadableInput(f"not JSON: {e.msg} (column {e.colno})", file=file,
                              record=e.lineno if record is None else record) from None
    except ValueError as e:  # NaN, Infinity
        raise UnreadableInput(f"not JSON: {e}", file=file, record=record) from None


def _canon(x: Any, where: str) -> Any:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: object key {k!r} is not a string.")
            out[k] = _canon(v, f"{where}.{k}")
        return out
    if isinstance(x, list | tuple):
        return [_canon(v, f"{where}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, bool) or x is None or isinstance(x, str | int):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{where}: {x!r} has no canonical JSON form.")
        return int(x) if x.is_integer() else x
    raise TypeError(f"{where}: {type(x).__name__} is not a JSON value.")


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


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read one JSON document strictly (:func:`read_text`, then :func:`loads_json`)."""
    return loads_json(read_text(path), file=str(path))


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Read a JSON Lines file strictly: one :func:`loads_json` value per non-blank line,
    errors naming the line."""
    text = read_text(path)
    return [loads_json(line, file=str(path), record=n)
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def read_csv_text(path: str | os.PathLike[str], *, required: Iterable[str] = (),
                  empty_is_missing: bool = False) -> Any:
    """A CSV file as a table of text: every cell a string, nothing guessed.

    No cell becomes missing because it reads ``NA``, ``None``, ``null`` or ``NaN`` (pandas'
    defaults would turn the x_eff answer ``none`` and an id spelled ``NA`` into missing
    values); with ``empty_is_missing`` an empty cell is missing, otherwise it is ``""``.
    A byte-order mark is allowed.  Errors name the file, and the column when one of
    ``required`` is absent.

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
    if not p.is_file():
        raise UnreadableInput("no such file", file=str(p))
    try:
        frame = pd.read_csv(p, dtype=str, keep_default_na=False, na_values=[""] if empty_is_missing else [],
                            encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnreadableInput(f"not UTF-8 ({e.reason} at byte {e.start})", file=str(p)) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise UnreadableInput(f"not a CSV table ({e})", file=str(p)) from None
    for col in required:
        if col not in frame.columns:
            raise SchemaViolation(f"required column is missing (columns: {list(frame.columns)})",
                                  file=str(p), field=col)
    return frame


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
                 kind: str = "file", writes: Iterable[str] | None = None) -> Path:
    """Refuse an output path that would overwrite or write into one of ``inputs``.

    ``kind="file"``: ``out`` must not be an existing folder, and must not be (after
    symlinks and ``..`` are resolved) one of ``inputs`` or inside one of them.
    ``kind="dir"``: ``out`` must not be an existing file, nor be or lie inside an
    input; with ``writes`` (the names the command writes in ``out``) no input may be,
    hold or lie inside ``out/<name>``; without ``writes`` the whole folder is replaced,
    so no input may lie inside ``out`` at all.

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
    return o


def _temp_name(p: Path, *, directory: bool = False) -> Path:
    if directory:
        return Path(tempfile.mkdtemp(prefix=f".{p.name}.", suffix=TEMP_SUFFIX, dir=str(p.parent)))
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=TEMP_SUFFIX, dir=str(p.parent))
    os.close(fd)
    return Path(tmp)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


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


def write_json(path: str | os.PathLike[str], doc: Any) -> None:
    """Write ``doc`` as indented UTF-8 JSON (no ``NaN``) atomically (:func:`write_text_atomic`)."""
    write_text_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")


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


class _SafeLoader(_DuplicateKeys, yaml.SafeLoader):
    """The pure-Python safe loader: used for messages, identical with or without libyaml."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates = []


if hasattr(yaml, "CSafeLoader"):
    class _FastLoader(_DuplicateKeys, yaml.CSafeLoader):
        """libyaml's parser with the same safe constructor: about ten times faster."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates = []
else:  # pragma: no cover - PyYAML built without libyaml
    _FastLoader = _SafeLoader  # type: ignore[misc, assignment]


def parse_yaml(text: str) -> tuple[Any, yaml.Node | None, list[tuple[int | None, str]]]:
    """Parse YAML safely.  Returns (data, root node, [(line, problem)]); never raises on bad YAML.

    No object is constructed (the safe loader) and a duplicate key is a problem with
    its line and the line of the first.  The libyaml parser reads a well-formed file;
    a file it rejects is parsed again by the pure-Python parser, so that the reported
    problem is the same on every install.
    """
    if _FastLoader is not _SafeLoader:
        loader = _FastLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            return data, node, [(line, f"duplicate key `{key}` (first at line {first})")
                                for key, line, first in loader.duplicates]
        except (yaml.YAMLError, RecursionError):
            pass
        finally:
            loader.dispose()
    loader = _SafeLoader(text)  # type: ignore[assignment]  # either loader: the same interface
    problems: list[tuple[int | None, str]] = []
    data = None
    node = None
    try:
        node = loader.get_single_node()
        if node is not None:
            data = loader.construct_document(node)
        for key, line, first in loader.duplicates:
            problems.append((line, f"duplicate key `{key}` (first at line {first})"))
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
    finally:
        loader.dispose()
    return data, node, problems


def loads_yaml(text: str, *, file: str | None = None) -> Any:
    """One YAML document, strictly: :func:`parse_yaml`, raising on its first problem.

    A duplicate key raises :class:`~evaltk.errors.SchemaViolation` naming the key as the
    field and its line as the record; text that is not YAML raises
    :class:`~evaltk.errors.UnreadableInput` with the line.

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
        raise UnreadableInput(msg, file=file, record=line)
    return data
