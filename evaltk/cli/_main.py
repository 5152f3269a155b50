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
70    internal error (a bug in evaltk; please report it)
141   the reader of standard output closed the pipe (``evaltk ... | head``)
====  ======================================================================

Sub-commands may define further codes of their own (the trajectory grader uses 2
for an honest hold and 10-13 for lock problems); each is documented in README.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from typing import NoReturn

from ..errors import EvaltkError, OutputRefused, SchemaViolation, UnreadableInput

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_USAGE = 64
EXIT_DATAERR = 65
EXIT_NOINPUT = 66
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


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(
        prog="evaltk",
        description="Evaluate AI agent runs honestly.",
        epilog="Example: evaltk score data/demo/traces.jsonl --answers data/demo/answers.csv --out out/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evaltk {__version__}")
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


def main(argv: Sequence[str] | None = None) -> int:
    with _no_user_state():
        return _main(argv)


def _main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return int(args.func(args) or 0)
    except CliError as e:
        print(f"evaltk: {e}", file=sys.stderr)
        return e.code
    except OutputRefused as e:  # nothing read or written: a usage error (docs/outputs.md)
        print(f"evaltk: refused output: {e}", file=sys.stderr)
        return EXIT_USAGE
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
