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

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import DuplicateKeyError, SchemaViolation, UnreadableInput, no_duplicate_keys

__all__ = ["read_bytes", "decode_utf8", "read_text", "loads_json", "read_json", "read_jsonl",
           "read_csv_text", "write_text_atomic", "write_json", "canonical_json", "sha256_digest",
           "parse_yaml", "loads_yaml"]


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


# --------------------------------------------------------------------------- canonical form


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
    """The canonical serialisation every digest in evaltk is computed over.

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
    class _FastLoader(_DuplicateKeys, yaml.CSafeLoader):  # type: ignore[name-defined]
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
    loader = _SafeLoader(text)
    problems: list[tuple[int | None, str]] = []
    data: Any = None
    node: yaml.Node | None = None
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
