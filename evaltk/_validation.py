"""Argument checks shared by every subpackage: one function per concern, one message form.

Every check raises ``ValueError`` or ``TypeError`` whose message names the parameter in
backticks, says what is allowed and what came::

    `confidence_level` must be in (0, 1); got 1.5.

The checks return the value in its canonical form (a float, an int, a numpy
``Generator``), so a caller writes ``cl = check_confidence_level(confidence_level)`` once
at the top and uses ``cl`` below.  ``assert`` is never used for input checks (it vanishes
under ``python -O``).

This module imports nothing from evaltk but :mod:`evaltk.errors`, so every layer
(``stats`` included) may use it.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .errors import InputError

__all__ = [
    "check_confidence_level",
    "check_rng",
    "seeded_rng",
    "GENERATOR_SEED",
    "check_choice",
    "check_n_resamples",
    "check_columns",
]


def check_confidence_level(confidence_level: Any) -> float:
    """``confidence_level`` as a float strictly between 0 and 1.

    Examples
    --------
    >>> check_confidence_level(0.9)
    0.9
    >>> check_confidence_level(1.5)
    Traceback (most recent call last):
    ...
    ValueError: `confidence_level` must be in (0, 1); got 1.5.
    """
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, numbers.Real):
        raise TypeError(f"`confidence_level` must be a float in (0, 1); got {confidence_level!r}.")
    c = float(confidence_level)
    if not 0.0 < c < 1.0:
        raise ValueError(f"`confidence_level` must be in (0, 1); got {confidence_level!r}.")
    return c


def check_rng(rng: Any) -> np.random.Generator:
    """``rng=`` as a numpy Generator: ``None`` (fresh entropy), an int seed, or a Generator.

    A Generator is passed through unchanged (the caller's stream continues).

    Examples
    --------
    >>> g = np.random.default_rng(0)
    >>> check_rng(g) is g
    True
    >>> check_rng("seed")
    Traceback (most recent call last):
    ...
    TypeError: `rng` must be None, an int seed or a numpy Generator; got str.
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"`rng` must be None, an int seed or a numpy Generator; got {type(rng).__name__}.")


#: The seed a result records when the caller passed a Generator: its state is the caller's.
GENERATOR_SEED = "caller's Generator (seed not recorded)"


def seeded_rng(rng: Any) -> tuple[np.random.Generator, int | str]:
    """``rng=`` as a Generator (:func:`check_rng`), and the seed a result records.

    An int seed is recorded as given.  ``None`` draws a fresh int seed from the OS
    entropy and records it, so an unseeded run can still be repeated.  A Generator is
    passed through unchanged (the caller's stream continues) and recorded as
    :data:`GENERATOR_SEED`: it says so rather than inventing a number.

    Examples
    --------
    >>> g, seed = seeded_rng(7)
    >>> seed, bool(g.integers(100) == np.random.default_rng(7).integers(100))
    (7, True)
    >>> isinstance(seeded_rng(None)[1], int)
    True
    >>> seeded_rng(np.random.default_rng(0))[1]
    "caller's Generator (seed not recorded)"
    """
    if isinstance(rng, np.random.Generator):
        return rng, GENERATOR_SEED
    if rng is None:
        rng = int(np.random.SeedSequence().entropy)
    gen = check_rng(rng)
    return gen, int(rng)


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    """``value`` when it is one of ``allowed``.

    Examples
    --------
    >>> check_choice("method", "bca", ("percentile", "bca"))
    'bca'
    >>> check_choice("method", "BCa", ("percentile", "bca"))
    Traceback (most recent call last):
    ...
    ValueError: `method` must be one of 'percentile', 'bca'; got 'BCa'.
    """
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"`{name}` must be one of {', '.join(map(repr, allowed))}; got {value!r}.")
    return value


def check_n_resamples(n_resamples: Any) -> int:
    """``n_resamples`` as a positive int.

    Examples
    --------
    >>> check_n_resamples(0)
    Traceback (most recent call last):
    ...
    ValueError: `n_resamples` must be a positive int; got 0.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive int; got {n_resamples!r}.")
    return int(n_resamples)


def check_columns(frame: Any, columns: Iterable[str], *, name: str = "data") -> None:
    """Raise :class:`~evaltk.errors.InputError` naming the first of ``columns`` ``frame`` lacks.

    Examples
    --------
    >>> import pandas as pd
    >>> check_columns(pd.DataFrame({"item": [1]}), ["item", "rating"])
    Traceback (most recent call last):
    ...
    evaltk.errors.InputError: field `rating`: `data` must have a column `rating`; got columns ['item'].
    """
    have = list(frame.columns)
    for col in columns:
        if col not in have:
            raise InputError(f"`{name}` must have a column `{col}`; got columns {have}.", field=col)
