"""Errors that name where bad input came from: the file, the record and the field.

Every reader in evaltk raises one of these (never a traceback from deep inside
pandas or json), and the CLI maps each class to a documented exit code.
"""

from __future__ import annotations

__all__ = ["EvaltkError", "InputError", "UnreadableInput", "SchemaViolation", "LimitExceeded",
           "OutputRefused", "format_location"]


def format_location(file: str | None = None, record: object | None = None,
                    field: str | None = None) -> str:
    """``file:line 3: field `steps[2].index``` style prefix (parts that are None are left out)."""
    parts = []
    if file is not None:
        parts.append(str(file))
    if record is not None:
        parts.append(f"record {record}" if not isinstance(record, int) else f"line {record}")
    loc = ": ".join(parts)
    if field is not None:
        loc = f"{loc}: field `{field}`" if loc else f"field `{field}`"
    return loc


class EvaltkError(Exception):
    """Base class of evaltk's own errors."""


class InputError(EvaltkError, ValueError):
    """Bad input.  ``file``, ``record`` (line number or id) and ``field`` say where."""

    def __init__(self, message: str, *, file: str | None = None, record: object | None = None,
                 field: str | None = None) -> None:
        self.file = None if file is None else str(file)
        self.record = record
        self.field = field
        self.detail = message
        loc = format_location(self.file, record, field)
        super().__init__(f"{loc}: {message}" if loc else message)


class UnreadableInput(InputError):
    """The input cannot be read at all: missing file, not UTF-8, not JSON/YAML."""


class SchemaViolation(InputError):
    """The input was read but does not follow its documented schema."""


class LimitExceeded(SchemaViolation):
    """The input passes a reading limit (:class:`evaltk.Limits`): nesting depth, line length,
    record count, distinct categories, file size, or not a regular file.  ``limit`` names
    the limit; the message says how to raise it (``docs/limits.md``).  Exit code 65."""

    def __init__(self, message: str, *, limit: str, file: str | None = None,
                 record: object | None = None, field: str | None = None) -> None:
        self.limit = limit
        super().__init__(message, file=file, record=record, field=field)
class OutputRefused(EvaltkError, ValueError):
    """An output path evaltk will not write: it is, or is inside, one of the command's inputs
    (``output`` and ``input`` name both), or it is a file where a folder is expected (or the
    reverse).  The command line exits 64 (a usage error: nothing was read or written)."""

    def __init__(self, message: str, *, output: str, input: str | None = None) -> None:
        self.output = str(output)
        self.input = None if input is None else str(input)
        super().__init__(message)


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (which value counts would be a guess)."""


def no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """``json.loads(..., object_pairs_hook=no_duplicate_keys)``: refuse a repeated key."""
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKeyError(k)
        out[k] = v
    return out
