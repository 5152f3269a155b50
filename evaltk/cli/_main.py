"""The ``evaltk`` command: a thin layer over the public functions.

Each topic module registers its own sub-command through a ``register_cli(subparsers)``
function; this file only dispatches and maps errors to the documented exit codes.

Exit codes shared by every sub-command (README, "Exit codes"):

====  ======================================================================
0     success (or: the gate passed / everything valid)
1     a negative decision on valid input (gate failed, fixtures invalid, regress)
64    usage error (unknown option, missing argument)
65    input read but violates its schema (:class:`evaltk.errors.SchemaViolation`)
66    input unreadable (missing file, not UTF-8, not JSON/YAML)
69    an optional dependency is missing; the message names the extra to install
      (``pip install 'evaltk[report]'``)
70    internal error (a bug in evaltk; please report it)
141   the reader of standard output closed the pipe (``evaltk ... | head``)
====  ======================================================================

Sub-commands may define further codes of their own (the trajectory grader uses 2
for an honest hold and 10-13 for lock problems); each is documented in README.

Every command takes ``--limit NAME=VALUE`` (repeatable, anywhere on the line) to raise a
reading limit (:class:`evaltk.Limits`, ``docs/limits.md``); a limit passed is exit 65.
Everything a command prints goes through :func:`printable`: control characters from
user data (a trace id holding an escape sequence) are shown escaped, never sent to the
terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import re
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from .. import _io
from .._validation import extra_of
from ..errors import EvaltkError, MissingExtra, OutputRefused, SchemaViolation, UnreadableInput
from ..values import EvaltkWarning

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_USAGE = 64
EXIT_DATAERR = 65
EXIT_NOINPUT = 66
EXIT_UNAVAILABLE = 69
EXIT_SOFTWARE = 70

# Modules that provide ``register_cli(subparsers)``.  One line per topic.
_MODULES: tuple[str, ...] = (
    "evaltk.cli.agreement",
    "evaltk.cli.calibration",
    "evaltk.cli.demo",
    "evaltk.cli.ingest",
    "evaltk.cli.import_",
    "evaltk.cli.trajectory",
    "evaltk.cli.suite",
    "evaltk.cli.report",
    "evaltk.cli.fixtures",
    "evaltk.cli.score",
    "evaltk.cli.gate",
    "evaltk.cli.scale",
    "evaltk.cli.judge",
)


class CliError(Exception):
    """Raised by a sub-command to exit with ``code`` and a one-line ``message`` on stderr."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would exit 2, which the grader owns
        self.print_usage(sys.stderr)
        raise CliError(f"usage: {message}", EXIT_USAGE)


#: What a terminal would act on: C0 controls but newline and tab, DEL, C1 controls, and the
#: Unicode controls that reorder or hide text (bidirectional overrides, line separators).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029"
                          "\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: str) -> str:
    r"""``text`` safe to print on a terminal: control characters written as escapes.

    Examples
    --------
    >>> printable("run-\x1b[2Jx\tok\n")
    'run-\\x1b[2Jx\tok\n'
    """
    return _UNPRINTABLE.sub(_escape, text)


class _Printable(io.TextIOBase):
    """A text stream that writes :func:`printable` text to ``raw``."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def write(self, s: str) -> int:
        self._raw.write(printable(s))
        return len(s)

    def flush(self) -> None:
        self._raw.flush()

    def fileno(self) -> int:
        return self._raw.fileno()

    def isatty(self) -> bool:
        return self._raw.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._raw, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._raw, "errors", None)


@contextlib.contextmanager
def _printable_streams() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(out), _Printable(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _take_limits(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the arguments without ``--limit NAME=VALUE``, the limit specs); stops at ``--``."""
    rest: list[str] = []
    specs: list[str] = []
    it = iter(argv)
    for a in it:
        if a == "--":
            rest.append(a)
            rest.extend(it)
            break
        if a == "--limit":
            nxt = next(it, None)
            if nxt is None:
                raise CliError("usage: --limit needs NAME=VALUE (docs/limits.md)", EXIT_USAGE)
            specs.append(nxt)
        elif a.startswith("--limit="):
            specs.append(a.removeprefix("--limit="))
        else:
            rest.append(a)
    return rest, specs


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="evaltk",
        description="Evaluate AI agent runs honestly.",
        epilog="Example: evaltk score data/demo/traces.jsonl --answers data/demo/answers.csv --out out/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evaltk {__version__}")
    parser.add_argument("--limit", metavar="NAME=VALUE", action="append",
                        help="raise a reading limit for this command (depth, line_bytes, records, "
                             "categories, file_bytes, regular_only); repeatable, accepted anywhere "
                             "on the line; docs/limits.md")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


@contextlib.contextmanager
def _no_user_state() -> Iterator[None]:
    """Keep libraries evaltk calls from writing under the user's home: matplotlib (imported by
    pingouin) builds its font cache in ``~/.cache/matplotlib`` unless ``MPLCONFIGDIR`` names
    a folder, so a command gives it a private temporary one (removed at the end) when the
    user has not set one (docs/outputs.md, "Nothing outside the output")."""
    if os.environ.get("MPLCONFIGDIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="evaltk-mpl-") as tmp:
        os.environ["MPLCONFIGDIR"] = tmp
        try:
            yield
        finally:
            os.environ.pop("MPLCONFIGDIR", None)


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """A warning reaches the terminal as one line, ``evaltk: warning: <message>``, once per
    message: not Python's two lines pointing into ``__main__.py``."""
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = str(message)
        if text not in seen:
            seen.add(text)
            print(f"evaltk: warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always", EvaltkWarning)  # the seen-set dedupes; Python's registry would not
        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    with _no_user_state(), _printable_streams(), _warnings_as_lines():
        return _main(sys.argv[1:] if argv is None else list(argv))


def _main(argv: list[str]) -> int:
    try:
        argv, specs = _take_limits(argv)
        try:
            changes = _io.parse_limits(specs)
        except ValueError as e:
            raise CliError(f"usage: --limit: {e}", EXIT_USAGE) from None
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        with _io.limits(**changes):
            return int(args.func(args) or 0)
    except CliError as e:
        print(f"evaltk: {e}", file=sys.stderr)
        return e.code
    except OutputRefused as e:  # nothing read or written: a usage error (docs/outputs.md)
        print(f"evaltk: refused output: {e}", file=sys.stderr)
        return EXIT_USAGE
    except MissingExtra as e:
        print(f"evaltk: {e}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ImportError as e:  # an optional module imported deep inside a command
        extra = extra_of(e.name)
        if extra is None:
            traceback.print_exc()
            return EXIT_SOFTWARE
        print(f"evaltk: {MissingExtra(extra, e.name or '?', _command(argv))}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except UnreadableInput as e:
        print(f"evaltk: unreadable input: {e}", file=sys.stderr)
        return EXIT_NOINPUT
    except SchemaViolation as e:
        print(f"evaltk: schema violation: {e}", file=sys.stderr)
        return EXIT_DATAERR
    except (EvaltkError, ValueError) as e:
        print(f"evaltk: invalid input: {e}", file=sys.stderr)
        return EXIT_DATAERR
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        print(f"evaltk: unreadable input: {e}", file=sys.stderr)
        return EXIT_NOINPUT
    except BrokenPipeError:  # the reader closed the pipe (`... | head`): no traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:  # pragma: no cover
            pass
        return 141
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except Exception:  # pragma: no cover - a bug: show it, exit 70
        traceback.print_exc()
        return EXIT_SOFTWARE


def _command(argv: Sequence[str] | None) -> str:
    """```evaltk report``` (the command word of ``argv``)."""
    words = [w for w in (sys.argv[1:] if argv is None else argv) if not w.startswith("-")]
    return f"`evaltk {words[0]}`" if words else "`evaltk`"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
