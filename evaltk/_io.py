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

import json
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import DuplicateKeyError, SchemaViolation, UnreadableInput, no_duplicate_keys

__all__ = ["read_bytes", "decode_utf8", "read_text", "loads_json", "read_json", "read_jsonl",
           "read_csv_text", "read_document", "canonical_json", "write_text_atomic", "write_json"]


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


def read_document(path: str | os.PathLike[str]) -> Any:
    """A JSON or YAML document: ``.yaml`` / ``.yml`` as YAML (``yaml.safe_load`` only),
    ``.json`` as strict JSON, any other name as JSON first and YAML when it is not JSON.
    ``NaN`` is let through so that the loader names the field that holds it."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() not in (".yaml", ".yml"):
        try:
            return loads_json(text, file=str(path), allow_nan=True)
        except UnreadableInput:
            if path.suffix.lower() == ".json":
                raise
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise UnreadableInput(f"not JSON or YAML: {getattr(e, 'problem', None) or e}", file=str(path),
                              record=None if mark is None else mark.line + 1) from None


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
    """The canonical JSON serialisation (every trajectory digest, tool arguments and judge
    decoding settings are written in it).

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
