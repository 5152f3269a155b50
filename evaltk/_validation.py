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

import importlib
import numbers
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, cast

import numpy as np

from .errors import InputError, MissingExtra
from .values import Abstention, Cause, UndefinedWarning

__all__ = [
    "check_confidence_level",
    "check_rng",
    "SeedRecord",
    "seeded_rng",
    "GENERATOR_SEED",
    "recorded_seed",
    "check_choice",
    "check_n_resamples",
    "check_columns",
    "check_frame",
    "EXTRAS",
    "extra_of",
    "require_extra",
    "import_optional",
    "as_frame",
    "check_nonempty",
    "plain",
    "undefined",
    "user_stacklevel",
    "zero_width",
]


def plain(x: Any) -> Any:
    """A NumPy or Arrow scalar as the Python value it holds, anything else as given: what a
    message shows (``trial 0``, ``got inf``, not ``trial np.int64(0)``, which NumPy 2's repr
    gives) and what keys compare and hash as across engines."""
    if isinstance(x, np.generic):
        return x.item()
    pa = sys.modules.get("pyarrow")  # an Arrow scalar exists only once pyarrow is imported: no import here
    return x.as_py() if pa is not None and isinstance(x, pa.Scalar) else x


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
    >>> check_rng(-1)
    Traceback (most recent call last):
    ...
    ValueError: `rng` must be None, a non-negative int seed or a numpy Generator; got -1.
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"`rng` must be None, a non-negative int seed or a numpy Generator; got {rng!r}.")
        return np.random.default_rng(int(rng))
    raise TypeError(f"`rng` must be None, an int seed or a numpy Generator; got {type(rng).__name__}.")


@dataclass(frozen=True)
class SeedRecord:
    """The randomness one call drew: enough to run it again and get the same numbers.

    Attributes
    ----------
    seed : int or None
        Pass it as ``rng=seed`` to reproduce the call.  The int you passed; the
        entropy drawn for ``rng=None`` (numpy's ``SeedSequence().entropy``, 128 bits);
        the seed of a Generator you passed that had not drawn yet.  ``None`` when a
        Generator that had already drawn was passed: no int seed gives its stream.
    reason : str or None
        Why ``seed`` is None.
    state : dict
        The bit generator's ``state`` before the first draw (always recorded):
        :meth:`generator` rebuilds a Generator that draws the same stream, whatever
        ``rng=`` was.
    """

    seed: int | None
    reason: str | None
    state: Mapping[str, Any] = field(repr=False, compare=False)

    def generator(self) -> np.random.Generator:
        """A new Generator at the recorded start state (``rng=record.generator()`` replays the call)."""
        bit = getattr(np.random, self.state["bit_generator"])()
        bit.state = self.state
        return np.random.Generator(bit)


def _fresh_seed(gen: np.random.Generator) -> int | None:
    """The int seed of a Generator that has not drawn yet (``default_rng(seed)``), else None."""
    bit = gen.bit_generator
    seq = getattr(bit, "seed_seq", None)
    if not isinstance(seq, np.random.SeedSequence) or seq.spawn_key or not isinstance(seq.entropy, int):
        return None
    if type(bit)(np.random.SeedSequence(seq.entropy)).state != bit.state:
        return None
    return int(seq.entropy)


def seeded_rng(rng: Any) -> tuple[np.random.Generator, SeedRecord]:
    """``rng=`` as a Generator, with the :class:`SeedRecord` that reproduces what it will draw.

    Draws nothing from a Generator it is given (published numbers do not move): for
    ``rng=None`` the fresh entropy is drawn here, so it is known and recorded.

    Examples
    --------
    >>> gen, rec = seeded_rng(7)
    >>> rec.seed, bool(gen.random() == np.random.default_rng(7).random())
    (7, True)
    >>> g = np.random.default_rng(3)
    >>> _ = g.random()
    >>> seeded_rng(g)[1].seed is None
    True
    """
    if rng is None:
        entropy = int(cast(int, np.random.SeedSequence().entropy))  # drawn fresh: an int
        gen = np.random.default_rng(entropy)
        return gen, SeedRecord(entropy, None, gen.bit_generator.state)
    gen = check_rng(rng)
    if gen is not rng:  # an int seed
        return gen, SeedRecord(int(rng), None, gen.bit_generator.state)
    seed = _fresh_seed(gen)
    reason = None if seed is not None else (
        "a Generator that had already drawn (or was spawned) was passed: no int seed gives its "
        "stream; `SeedRecord.state` / `.generator()` replays it")
    return gen, SeedRecord(seed, reason, gen.bit_generator.state)


#: What a result records as its seed when no int seed reproduces the caller's Generator
#: (it had drawn already, or was spawned); its ``SeedRecord.state`` still replays it.
GENERATOR_SEED = "caller's Generator (seed not recorded)"


def recorded_seed(record: SeedRecord) -> int | str:
    """The seed a result stores: the int that reproduces the call, else :data:`GENERATOR_SEED`.

    Examples
    --------
    >>> recorded_seed(seeded_rng(7)[1]), recorded_seed(seeded_rng(np.random.default_rng(3))[1])
    (7, 3)
    >>> g = np.random.default_rng(3); _ = g.random()
    >>> recorded_seed(seeded_rng(g)[1])
    "caller's Generator (seed not recorded)"
    """
    return GENERATOR_SEED if record.seed is None else record.seed


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


#: Each optional extra of evaltk (``pip install 'evaltk[NAME]'``) and the modules it brings
#: that evaltk imports; ``pyproject.toml`` lists the same extras with their versions.
#: A module in two extras is named by the first (the weekly report runs the regression gate).
EXTRAS: dict[str, tuple[str, ...]] = {
    "gate": ("pingouin",),
    "scale": ("duckdb", "dask", "distributed"),
    "judges": ("httpx", "jinja2"),
    "inspect": ("inspect_ai",),
    "report": ("altair", "vl_convert", "papermill", "nbformat", "nbconvert", "jupytext", "ipykernel",
               "pingouin"),
}


def extra_of(module: str | None) -> str | None:
    """The extra that brings ``module`` (or its top-level package), or None.

    Examples
    --------
    >>> extra_of("altair.vegalite"), extra_of("numpy")
    ('report', None)
    """
    top = (module or "").split(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def import_optional(module: str, *, purpose: str) -> Any:
    """``module`` imported, or :class:`~evaltk.errors.MissingExtra` naming the extra that brings it.

    Examples
    --------
    >>> import_optional("altair", purpose="a chart").__name__
    'altair'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = extra_of(module)
        if extra is None:
            raise
        raise MissingExtra(extra, module, purpose) from None


class _LazyModule:
    """A module imported on its first attribute access (see :func:`lazy_module`)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{'' if self._module is None else ' (imported)'}>"


def lazy_module(name: str) -> Any:
    """``name`` (a dependency such as ``"scipy.stats"``), imported when an attribute of it is
    first used rather than when evaltk is imported: scipy.stats alone costs about 0.7 CPU-s of
    import, paid by every worker process of the scale engines that never needs it.

    Examples
    --------
    >>> special = lazy_module("scipy.special")
    >>> float(special.ndtri(0.5))
    0.0
    """
    return _LazyModule(name)


def require_extra(extra: str, *, purpose: str) -> None:
    """Import every module of ``extra``; :class:`~evaltk.errors.MissingExtra` names the first missing.

    Called where a command starts, so a missing optional dependency is one sentence that
    says what to install, before any work is done.

    Examples
    --------
    >>> require_extra("report", purpose="`evaltk report`")
    """
    check_choice("extra", extra, tuple(EXTRAS))
    for module in EXTRAS[extra]:
        import_optional(module, purpose=purpose)


def as_frame(data: Any) -> Any:
    """A pandas DataFrame for a table given as pandas, Arrow or Polars; anything else unchanged.

    The one adapter every public entry point that takes a table uses: a
    ``pyarrow.Table`` or ``RecordBatch`` converts with ``to_pandas()``; a Polars
    ``DataFrame`` (or ``LazyFrame``, collected) goes through Arrow (``to_arrow()``), so
    Polars is never imported here and never required.

    Examples
    --------
    >>> import pyarrow as pa
    >>> as_frame(pa.table({"item": [1, 2], "rating": ["a", "b"]}))
       item rating
    0     1      a
    1     2      b
    """
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    module = type(data).__module__ or ""
    if module.startswith("polars"):
        if not hasattr(data, "to_arrow") and hasattr(data, "collect"):  # a LazyFrame
            data = data.collect()
        if hasattr(data, "to_arrow"):
            return data.to_arrow().to_pandas()
    if module.startswith("pyarrow") and hasattr(data, "to_pandas") and hasattr(data, "schema"):
        return data.to_pandas()
    return data


def check_frame(data: Any, name: str = "data") -> Any:
    """``data`` as a pandas DataFrame (pandas, Arrow or Polars, through :func:`as_frame`);
    :class:`TypeError` naming ``name`` otherwise.

    Examples
    --------
    >>> check_frame([1, 2], "scores")
    Traceback (most recent call last):
    ...
    TypeError: `scores` must be a pandas DataFrame (or a pyarrow / Polars table); got list.
    """
    import pandas as pd

    data = as_frame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`{name}` must be a pandas DataFrame (or a pyarrow / Polars table); "
                        f"got {type(data).__name__}.")
    return data


def check_columns(frame: Any, columns: Iterable[str | None], *, name: str = "data") -> None:
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
        if col is not None and col not in have:
            raise InputError(f"`{name}` must have a column `{col}`; got columns {have}.", field=col)


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` that points at the first frame outside evaltk.

    Call it directly inside the ``warnings.warn(...)`` call.
    """
    frame: FrameType | None = sys._getframe(1)  # the function that is warning
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("evaltk"):
        frame = frame.f_back
        level += 1
    return level


def undefined(reason: str, *, what: str | None = None, cause: Cause = Cause.MISSING_EVIDENCE) -> Abstention:
    """The abstention of an undefined statistic, announced with an :class:`UndefinedWarning`
    that points at the caller's line (the first frame outside evaltk)."""
    warnings.warn(f"{what} is undefined: {reason}." if what else reason, UndefinedWarning,
                  stacklevel=user_stacklevel())
    return Abstention(cause, reason)


def zero_width(interval: Any, *, what: str, n: int | None = None, unit: str = "items",
               fmt: str = ".3f") -> str | None:
    """The one rule "no interval narrower than the data allows" (issue #16): why a finite
    ``interval`` (low, high) of zero width is no evidence, or None when it has width.

    A sample never shows that precision, so a decision that needs an interval (the
    promotion rule's stated-interval and human-ceiling conditions, the regression gate's
    "excludes drops") is not met by one of zero width; the caller says so at the boundary.

    Examples
    --------
    >>> zero_width((0.6, 0.8), what="kappa") is None
    True
    >>> zero_width((1.0, 1.0), what="kappa", n=12)
    'the kappa interval [1.000, 1.000] has zero width: a sample of 12 items never shows that precision (an interval must reflect the sample size)'
    """
    lo, hi = interval
    if lo < hi:
        return None
    of = "" if n is None else f" of {n} {unit}"
    return (f"the {what} interval [{lo:{fmt}}, {hi:{fmt}}] has zero width: a sample{of} never shows that "
            "precision (an interval must reflect the sample size)")


def check_nonempty(data: Any, name: str, *, needs: str) -> None:
    """Raise :class:`~evaltk.errors.InputError` when ``data`` has no rows (or no items).

    ``needs`` says what the call needs the rows for, so the message tells the caller
    what to pass: "`answers` has no rows; ``needs``."

    Examples
    --------
    >>> check_nonempty([], "answers", needs="a judge's answers to score")
    Traceback (most recent call last):
    ...
    evaltk.errors.InputError: field `answers`: `answers` has no rows; a judge's answers to score.
    """
    if len(data) == 0:
        raise InputError(f"`{name}` has no rows; {needs}.", field=name)
