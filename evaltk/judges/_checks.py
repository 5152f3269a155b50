"""The checks every judges entry point shares: no rows is a caller error; undefined is announced."""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import InputError
from ..values import Abstention, Cause, UndefinedWarning


def check_nonempty(data: Any, name: str, *, needs: str) -> None:
    """Raise :class:`~evaltk.errors.InputError` when ``data`` has no rows (or no items).

    ``needs`` says what the call needs the rows for, so the message tells the caller
    what to pass: "`answers` has no rows; ``needs``."
    """
    if len(data) == 0:
        raise InputError(f"`{name}` has no rows; {needs}.", field=name)


def undefined(reason: str, *, what: str) -> Abstention:
    """The abstention of an undefined judges statistic, announced with an :class:`UndefinedWarning`.

    Call it from the public function itself: the warning points at that function's caller.
    """
    warnings.warn(f"{what} is undefined: {reason}.", UndefinedWarning, stacklevel=3)
    return Abstention(Cause.MISSING_EVIDENCE, reason)
