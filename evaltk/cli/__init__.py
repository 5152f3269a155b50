"""The ``evaltk`` command: ``main``, the exit-code table, one module per command.

Domain code never imports this package; every command is a thin layer over public
functions.
"""

from ._main import (
    EXIT_DATAERR,
    EXIT_NEGATIVE,
    EXIT_NOINPUT,
    EXIT_OK,
    EXIT_SOFTWARE,
    EXIT_USAGE,
    CliError,
    build_parser,
    main,
    printable,
)

__all__ = ["main", "build_parser", "CliError", "EXIT_OK", "EXIT_NEGATIVE", "EXIT_USAGE",
           "EXIT_DATAERR", "EXIT_NOINPUT", "EXIT_SOFTWARE", "printable"]
