"""Bootstrap confidence intervals with a declared unit of resampling and undefined replicates counted.

Two engines share one result type (:class:`BootstrapResult`):

:func:`bootstrap`
    the general case: any statistic of one or more samples.  ``paired=True``
    (the default) resamples every sample with the same item indices, which is
    what a difference between two judges scored on the same items needs.
    ``vectorized=True`` hands the statistic a whole batch of resamples at once
    (scipy's convention: the statistic takes ``axis=-1``).

:func:`bootstrap_table`
    statistics that are functions of a table of counts (every agreement
    coefficient is a function of a confusion or coincidence table).  Each item
    is mapped to a *type* (a cell, or a distinct unit pattern); resampling
    items with replacement is then exactly a multinomial draw of type counts,
    so all replicates are computed at once from a ``(n_resamples, n_types)``
    matrix of counts, not by a Python loop over resamples.  Cluster resampling
    sums per-cluster count vectors with a resampled cluster-count matrix;
    stratified resampling draws each stratum's counts separately.

Undefined replicates (a kappa whose expected agreement is 1 in a resample) are
counted and reported in ``n_undefined``; ``undefined="drop"`` drops them with a
:class:`~evaltk.values.UndefinedWarning`, ``undefined="raise"`` raises
:class:`UndefinedReplicateError`.  BCa falls back to the percentile interval,
with a warning and the reason recorded on the result, when its bias correction
or acceleration is undefined (all replicates on one side of the estimate, or a
jackknife value undefined, or no jackknife spread).

References
----------
Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*.
Chapman & Hall, ch. 13-14 (percentile, BCa) and ch. 11 (jackknife acceleration).
Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their
Application*. Cambridge, sec. 5.2 (basic interval), 3.8 (clustered data).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._blas import serial_blas
from .._validation import (
    SeedRecord,
    check_choice,
    check_confidence_level,
    check_n_resamples,
    check_rng,
    lazy_module,
    seeded_rng,
)
from ..errors import InputError
from ..values import Abstention, Cause, UndefinedWarning
from ._result import ConfidenceInterval, ResultShape, user_stacklevel

special = lazy_module("scipy.special")

#: Interval methods understood by both engines.
METHODS: tuple[str, ...] = ("percentile", "basic", "bca")
#: Units of resampling.
UNITS: tuple[str, ...] = ("item", "cluster", "stratified")

# Largest number of cells materialised at once (chunks of resamples stay under it).
_CHUNK_CELLS = 4_000_000


class UndefinedReplicateError(ValueError):
    """Raised with ``undefined="raise"`` when some bootstrap replicates are undefined."""


#: What to do with replicates on which the statistic is undefined.
UNDEFINED_POLICIES: tuple[str, ...] = ("drop", "raise")
#: What to do when every defined replicate is equal (a degenerate bootstrap distribution).
DEGENERATE_POLICIES: tuple[str, ...] = ("abstain", "keep")
#: The reason a bootstrap interval abstains when every resample gives the same value.
DEGENERATE_BOOTSTRAP = ("degenerate bootstrap distribution: all resamples equal ({n} defined resamples, all "
                        "{value:.6g}); the sample shows no variation to resample, so no interval follows from it")


@dataclass(frozen=True)
class BootstrapConfig:
    """How to bootstrap: the settings every engine call shares (scipy's ``BootstrapMethod`` idea).

    Pass one as ``method=`` to :func:`bootstrap`, :func:`bootstrap_table` or
    :func:`bootstrap_sums` instead of the separate keywords; a caller that bootstraps
    several statistics alike builds it once.

    Attributes
    ----------
    method : {"percentile", "basic", "bca"}
    n_resamples : int
    confidence_level : float
    unit : {"item", "cluster", "stratified"}
        The unit of resampling (the labels themselves are data: ``clusters=``, ``strata=``).
    rng : None, int or numpy.random.Generator
        The result records the seed that reproduces it (:attr:`BootstrapResult.seed`).
    undefined : {"drop", "raise"}
        Undefined replicates are always counted (``n_undefined``) and warned about;
        ``"drop"`` excludes them from the interval, ``"raise"`` refuses.
    degenerate : {"abstain", "keep"}
        When every defined replicate is equal (perfect agreement, a constant score),
        ``"abstain"`` (the default) returns the interval and the SE as abstentions
        with the cause (:data:`DEGENERATE_BOOTSTRAP`); ``"keep"`` returns the
        zero-width interval, for a caller that applies its own rule to it.

    Examples
    --------
    >>> cfg = BootstrapConfig(n_resamples=500, rng=0)
    >>> bootstrap([0, 1, 1, 1], lambda x: sum(x) / len(x), method=cfg).n_resamples
    500
    """

    method: str = "percentile"
    n_resamples: int = 2000
    confidence_level: float = 0.95
    unit: str = "item"
    rng: Any = None
    undefined: str = "drop"
    degenerate: str = "abstain"

    def __post_init__(self) -> None:
        check_choice("degenerate", self.degenerate, DEGENERATE_POLICIES)
        check_choice("method", self.method, METHODS)
        check_choice("unit", self.unit, UNITS)
        check_choice("undefined", self.undefined, UNDEFINED_POLICIES)
        object.__setattr__(self, "n_resamples", check_n_resamples(self.n_resamples))
        object.__setattr__(self, "confidence_level", check_confidence_level(self.confidence_level))
        if not (self.rng is None or isinstance(self.rng, np.random.Generator)):
            check_rng(self.rng)  # validates; the seed itself is kept so the config records it

    def seeded(self) -> tuple[np.random.Generator, SeedRecord]:
        """The Generator one engine call draws from, and the record of its seed (see :func:`seeded_rng`)."""
        return seeded_rng(self.rng)


_DEFAULTS = BootstrapConfig()


def _config(method: str | BootstrapConfig, *, n_resamples: int, confidence_level: float, unit: str,
            rng: Any, undefined: str) -> BootstrapConfig:
    """The config of one engine call: a passed :class:`BootstrapConfig`, or one built from the keywords."""
    if isinstance(method, BootstrapConfig):
        given = {k: v for k, v in (("n_resamples", n_resamples), ("confidence_level", confidence_level),
                                   ("unit", unit), ("undefined", undefined))
                 if v != getattr(_DEFAULTS, k)}
        if rng is not None:
            given["rng"] = rng
        if given:
            raise TypeError(f"`method` is a BootstrapConfig; set {', '.join(sorted(given))} on it, "
                            "not as keywords as well.")
        return method
    return BootstrapConfig(method=method, n_resamples=n_resamples, confidence_level=confidence_level,
                           unit=unit, rng=rng, undefined=undefined)


def _group_codes(values: Any, n: int, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"`{name}` must be one label per item ({n}); got shape {np.shape(arr)}.")
    ser = pd.Series(arr)
    if ser.isna().any():
        i = int(np.flatnonzero(ser.isna().to_numpy())[0])
        raise ValueError(f"`{name}` has a missing label at item {i}; every item needs one.")
    codes, _ = pd.factorize(ser, sort=True)
    return codes.astype(np.intp)


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class BootstrapResult(ResultShape):
    """A bootstrap interval, with the undefined replicates it excluded counted.

    Attributes
    ----------
    statistic : float or Abstention
        The statistic on the original data (an abstention when undefined there).
    confidence_interval : ConfidenceInterval or Abstention
        ``(low, high)``; an abstention when no replicate was defined, or when every
        defined replicate is equal (a degenerate bootstrap distribution: zero width
        from a sample is never precision).
    standard_error : float or Abstention
        Standard deviation of the defined replicates (``ddof=1``).
    n_resamples : int
        Replicates drawn.
    n_undefined : int
        Replicates on which the statistic was undefined (counted, warned about and
        excluded from the interval).
    method : str
        The interval method actually used (``"percentile"`` when BCa fell back).
    method_requested : str
        The method asked for.
    confidence_level : float
    unit : str
        ``"item"``, ``"cluster"`` or ``"stratified"``.
    bootstrap_distribution : numpy.ndarray
        The defined replicates, in draw order.
    fallback_reason : str or None
        Why BCa fell back to the percentile interval, when it did.
    bias_correction, acceleration : float or None
        BCa's ``z0`` and ``a`` when they were computed.
    seed_record : SeedRecord or None
        The randomness the resamples came from (``None`` when none were drawn);
        :attr:`seed` and :attr:`seed_reason` read it.
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    standard_error: float | Abstention
    n_resamples: int
    n_undefined: int
    method: str
    method_requested: str
    confidence_level: float
    unit: str
    bootstrap_distribution: np.ndarray = field(repr=False)
    fallback_reason: str | None = None
    bias_correction: float | None = None
    acceleration: float | None = None
    seed_record: SeedRecord | None = field(default=None, repr=False)

    @property
    def n_defined(self) -> int:
        return self.n_resamples - self.n_undefined

    @property
    def seed(self) -> int | None:
        """The int that, passed as ``rng=``, draws these resamples again; ``None`` when none is known.

        ``None`` with :attr:`seed_reason` when no resample was drawn or an already-used
        Generator was passed; ``rng=result.seed_record.generator()`` replays the latter.
        """
        return None if self.seed_record is None else self.seed_record.seed

    @property
    def seed_reason(self) -> str | None:
        """Why :attr:`seed` is None (``None`` when it is known)."""
        if self.seed_record is None:
            return "no resample was drawn (the statistic is undefined on the data)"
        return self.seed_record.reason

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: statistic / cause, interval / cause, SE, counts and the method used."""
        se = self.standard_error
        return pd.DataFrame(
            [
                {
                    **self.summary_row(),
                    "standard_error": None if isinstance(se, Abstention) else se,
                    "confidence_level": self.confidence_level,
                    "method": self.method,
                    "method_requested": self.method_requested,
                    "unit": self.unit,
                    "n_resamples": self.n_resamples,
                    "n_undefined": self.n_undefined,
                    "fallback_reason": self.fallback_reason,
                    "seed": self.seed,
                    "seed_reason": self.seed_reason,
                }
            ]
        )


def _undefined_result(reason: str, cfg: BootstrapConfig) -> BootstrapResult:
    warnings.warn(f"statistic undefined on the data ({reason}); no interval.", UndefinedWarning,
                  stacklevel=user_stacklevel())
    ab = Abstention(Cause.MISSING_EVIDENCE, reason)
    return BootstrapResult(
        statistic=ab, confidence_interval=ab, standard_error=ab, n_resamples=cfg.n_resamples,
        n_undefined=0, method=cfg.method, method_requested=cfg.method,
        confidence_level=cfg.confidence_level, unit=cfg.unit, bootstrap_distribution=np.empty(0),
    )


# --------------------------------------------------------------------------- interval core


class _Interval(NamedTuple):
    """One interval rule's answer: the bounds, the method it used and, for BCa, its parameters."""

    low: float
    high: float
    method: str
    fallback_reason: str | None = None
    bias_correction: float | None = None
    acceleration: float | None = None


def _interval_from_replicates(theta: float, reps: np.ndarray, jack: tuple[np.ndarray, np.ndarray] | None,
                              cfg: BootstrapConfig, seed: SeedRecord) -> BootstrapResult:
    """The result of one bootstrap: undefined replicates counted, then the interval ``cfg`` asks for."""
    good, n_undef = _defined_replicates(reps, cfg)
    drawn: dict[str, Any] = dict(statistic=theta, n_resamples=cfg.n_resamples, n_undefined=n_undef,
                 method_requested=cfg.method, confidence_level=cfg.confidence_level, unit=cfg.unit,
                 bootstrap_distribution=good, seed_record=seed)
    if good.size == 0:
        ab = Abstention(Cause.MISSING_EVIDENCE, "every bootstrap replicate is undefined")
        return BootstrapResult(confidence_interval=ab, standard_error=ab, method=cfg.method, **drawn)
    if cfg.degenerate == "abstain" and good.size > 1 and bool(np.all(good == good[0])):
        # every resample repeats one value (perfect agreement, a constant score): a zero-width
        # interval would claim certainty the sample cannot give
        ab = Abstention(Cause.MISSING_EVIDENCE, DEGENERATE_BOOTSTRAP.format(n=good.size, value=float(good[0])))
        warnings.warn(f"no bootstrap interval ({ab.reason}).", UndefinedWarning, stacklevel=user_stacklevel())
        return BootstrapResult(confidence_interval=ab, standard_error=ab, method=cfg.method, **drawn)
    se: float | Abstention = (float(np.std(good, ddof=1)) if good.size > 1
                              else Abstention(Cause.MISSING_EVIDENCE, "one defined replicate"))
    iv = _interval(theta, good, jack, cfg)
    return BootstrapResult(
        confidence_interval=ConfidenceInterval(float(iv.low), float(iv.high)), standard_error=se,
        method=iv.method, fallback_reason=iv.fallback_reason, bias_correction=iv.bias_correction,
        acceleration=iv.acceleration, **drawn,
    )


def _defined_replicates(reps: np.ndarray, cfg: BootstrapConfig) -> tuple[np.ndarray, int]:
    """The defined replicates and how many were not (counted, warned about, or refused)."""
    defined = np.isfinite(reps)
    n_undef = int(reps.size - defined.sum())
    if n_undef:
        msg = (f"{n_undef} of {reps.size} bootstrap replicates are undefined "
               f"(the statistic has no value on those resamples)")
        if cfg.undefined == "raise":
            raise UndefinedReplicateError(msg + "; pass undefined='drop' to exclude them.")
        warnings.warn(msg + "; they were dropped and are counted in `n_undefined`.",
                      UndefinedWarning, stacklevel=user_stacklevel())
    return reps[defined], n_undef


def _interval(theta: float, good: np.ndarray, jack: tuple[np.ndarray, np.ndarray] | None,
              cfg: BootstrapConfig) -> _Interval:
    """Percentile, basic (Davison & Hinkley 5.2) or BCa (Efron & Tibshirani 14.3) bounds."""
    alpha = (1.0 - cfg.confidence_level) / 2.0
    if cfg.method == "bca":
        bca = _bca_interval(theta, good, jack, alpha)
        if bca.fallback_reason is None:
            return bca
        warnings.warn(f"BCa interval undefined ({bca.fallback_reason}); using the percentile interval.",
                      UndefinedWarning, stacklevel=user_stacklevel())
        low, high = np.quantile(good, [alpha, 1.0 - alpha])
        return bca._replace(low=low, high=high, method="percentile")
    ql, qh = np.quantile(good, [alpha, 1.0 - alpha])
    if cfg.method == "basic":
        return _Interval(2.0 * theta - qh, 2.0 * theta - ql, "basic")
    return _Interval(ql, qh, "percentile")


def _bca_interval(theta: float, good: np.ndarray, jack: tuple[np.ndarray, np.ndarray] | None,
                  alpha: float) -> _Interval:
    """BCa bounds, or NaN bounds with the reason BCa is undefined here."""
    z0, acc, reason = _bca_parameters(theta, good, jack)
    if reason is not None:
        return _Interval(math.nan, math.nan, "bca", reason)
    assert z0 is not None and acc is not None  # for type checkers only
    za = special.ndtri(np.array([alpha, 1.0 - alpha]))
    adj = special.ndtr(z0 + (z0 + za) / (1.0 - acc * (z0 + za)))
    if not np.all(np.isfinite(adj)):
        return _Interval(math.nan, math.nan, "bca", "adjusted percentiles are not finite", z0, acc)
    low, high = np.quantile(good, adj)
    return _Interval(low, high, "bca", None, z0, acc)


def _bca_parameters(theta: float, good: np.ndarray, jack: tuple[np.ndarray, np.ndarray] | None
                    ) -> tuple[float | None, float | None, str | None]:
    # Bias correction with ties at the estimate split half-half (discrete statistics tie often).
    below = np.count_nonzero(good < theta) + 0.5 * np.count_nonzero(good == theta)
    p = below / good.size
    if p <= 0.0 or p >= 1.0:
        return None, None, "every replicate lies on one side of the estimate, so z0 is infinite"
    z0 = float(special.ndtri(p))
    if jack is None:
        return None, None, "no jackknife values"
    values, mult = jack
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None, None, "a leave-one-out (jackknife) value is undefined, so the acceleration is"
    total = mult.sum()
    mean = float(np.dot(mult, values) / total)
    d = mean - values
    s2 = float(np.dot(mult, d * d))
    if s2 <= 0.0 or not math.isfinite(s2):
        return None, None, "the jackknife values have no spread, so the acceleration is 0/0"
    acc = float(np.dot(mult, d ** 3) / (6.0 * s2 ** 1.5))
    return z0, acc, None


# --------------------------------------------------------------------------- sums engine
#
# One resampling core for every statistic that is a function of column sums over the
# resampled units: counts of types (every agreement coefficient), per-cluster count
# vectors, per-key sums of scores (the regression gate), per-item differences (judge
# selection).  A *block* is ``(rows, multiplicity)``: distinct unit rows (``None`` for
# the identity, i.e. one row per type) and how often each occurs; blocks are strata,
# each resampled on its own.  Resampling units with replacement is then exactly a
# multinomial draw of row counts per block, and a resample's column sums are
# ``counts @ rows``.


def _cluster_matrix(type_index: np.ndarray, groups: np.ndarray, n_types: int) -> np.ndarray:
    n_groups = int(groups.max()) + 1 if groups.size else 0
    flat = groups * n_types + type_index
    return np.bincount(flat, minlength=n_groups * n_types).reshape(n_groups, n_types).astype(float)


_Block = tuple[np.ndarray | None, np.ndarray]


def _draw_sums(blocks: Sequence[_Block], B: int, gen: np.random.Generator) -> np.ndarray:
    """``(B, n_columns)`` column sums of ``B`` resamples, each block (stratum) drawn separately."""
    out: np.ndarray | None = None
    for rows, mult in blocks:
        m = float(mult.sum())
        K = gen.multinomial(int(round(m)), mult / m, size=B).astype(float)
        part = K if rows is None else K @ rows
        out = part if out is None else out + part
    assert out is not None  # for type checkers: callers pass at least one block
    return out


def _jackknife_sums(statistic: Callable[[np.ndarray], np.ndarray], rows: np.ndarray | None,
                    mult: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-unit-out values, one per distinct row, weighted by its multiplicity."""
    if rows is None:
        present = np.flatnonzero(mult > 0)
        J = np.repeat(mult[None, :], present.size, axis=0)
        J[np.arange(present.size), present] -= 1.0
        weights = mult[present]
    else:
        keep = mult > 0
        J = (mult @ rows)[None, :] - rows[keep]
        weights = mult[keep]
    return _batched(statistic, J), weights


def _batched(statistic: Callable[[np.ndarray], np.ndarray], W: np.ndarray) -> np.ndarray:
    out = np.empty(W.shape[0])
    step = _chunk_rows(W.shape[1])
    for i in range(0, W.shape[0], step):
        out[i:i + step] = _call_batch(statistic, W[i:i + step])
    return out


def _call_batch(statistic: Callable[[np.ndarray], np.ndarray], W: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(statistic(W), dtype=float)
    if out.shape != (W.shape[0],):
        raise ValueError(
            f"a table statistic must return one value per row of counts, shape ({W.shape[0]},); "
            f"got {out.shape}."
        )
    return out


def _run_sums(statistic: Callable[[np.ndarray], np.ndarray], blocks: Sequence[_Block],
              jack_rows: np.ndarray | None, jack_mult: np.ndarray, cfg: BootstrapConfig) -> BootstrapResult:
    """The engine: point estimate on the observed sums, replicates, jackknife for BCa, interval."""
    observed = sum(mult[None, :] if rows is None else mult[None, :] @ rows for rows, mult in blocks)
    theta = float(_call_batch(statistic, np.asarray(observed, dtype=float))[0])
    if not math.isfinite(theta):
        return _undefined_result("undefined on the observed data", cfg)
    gen, seed = cfg.seeded()
    reps = _batched(statistic, _draw_sums(blocks, cfg.n_resamples, gen))
    jack = _jackknife_sums(statistic, jack_rows, jack_mult) if cfg.method == "bca" else None
    return _interval_from_replicates(theta, reps, jack, cfg, seed)


@serial_blas
def bootstrap_sums(
    rows: Any,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    multiplicity: Any = None,
    strata: Any = None,
    method: str | BootstrapConfig = "percentile",
    unit: str = "item",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    undefined: str = "drop",
) -> BootstrapResult:
    """Bootstrap a statistic of column sums over resampled units, every replicate at once.

    Parameters
    ----------
    rows : array_like, shape (n_units, n_columns)
        One row per resampled unit (an item, or a cluster with its items' sums): the
        quantities the statistic sums.  Identical rows may be given once with their
        count in ``multiplicity``.
    statistic : callable
        ``statistic(S)`` with ``S`` of shape ``(m, n_columns)`` (the column sums of
        ``m`` resamples) returns shape ``(m,)``, NaN where undefined.
    multiplicity : array_like of int, shape (n_units,), optional
        How many units each row stands for (default one each).
    strata : array_like, shape (n_units,), optional
        Resample within each stratum (its size kept fixed).
    method : {"percentile", "basic", "bca"} or BootstrapConfig
    unit : str
        Recorded on the result (``"item"``, ``"cluster"`` or ``"stratified"``): what a row is.
    n_resamples, confidence_level, rng, undefined
        As in :func:`bootstrap`.

    Returns
    -------
    BootstrapResult
        Undefined replicates (NaN from ``statistic``) counted in ``n_undefined`` and
        warned about (:class:`~evaltk.values.UndefinedWarning`).

    Notes
    -----
    Drawing ``N`` units with replacement from rows with multiplicities ``m`` gives row
    counts ``Multinomial(N, m / N)``; a resample's sums are those counts times the
    rows.  The BCa acceleration uses the leave-one-unit-out jackknife.

    Examples
    --------
    A pooled rate over clusters (3 clusters, grounded and answered steps per cluster):

    >>> res = bootstrap_sums([[1, 2], [3, 3], [0, 4]], lambda S: S[:, 0] / S[:, 1], unit="cluster",
    ...                      rng=0, n_resamples=500)
    >>> round(res.statistic, 4), res.n_undefined
    (0.4444, 0)
    """
    cfg = _config(method, n_resamples=n_resamples, confidence_level=confidence_level, unit=unit,
                  rng=rng, undefined=undefined)
    R = np.asarray(rows, dtype=float)
    if R.ndim != 2 or R.shape[0] == 0:
        raise InputError(f"`rows` must be a non-empty 2-D array (units x columns); got shape {R.shape}.",
                         field="rows")
    mult = (np.ones(R.shape[0]) if multiplicity is None
            else np.asarray(multiplicity, dtype=float).reshape(-1))
    if mult.shape != (R.shape[0],) or (mult < 0).any() or mult.sum() <= 0:
        raise ValueError(f"`multiplicity` must be one non-negative count per row ({R.shape[0]}).")
    if strata is None:
        blocks: list[_Block] = [(R, mult)]
    else:
        s = _group_codes(strata, R.shape[0], "strata")
        blocks = [(R[s == g], mult[s == g]) for g in np.unique(s)]
    return _run_sums(statistic, blocks, R, mult, cfg)


def _count_blocks(t: np.ndarray, T: int, unit: str, clusters: Any, strata: Any
                  ) -> tuple[list[_Block], np.ndarray | None, np.ndarray]:
    """The resampling blocks of items of types ``t``, and the jackknife rows and weights."""
    n = t.size
    counts = np.bincount(t, minlength=T).astype(float)
    _check_unit_labels(unit, clusters, strata)
    if unit == "item":
        return [(None, counts)], None, counts
    if unit == "stratified":
        M = _cluster_matrix(t, _group_codes(strata, n, "strata"), T)
        return [(None, row) for row in M], None, counts
    c = _group_codes(clusters, n, "clusters")
    M = _cluster_matrix(t, c, T)
    ones = np.ones(M.shape[0])
    if strata is None:
        return [(M, ones)], M, ones
    s = _group_codes(strata, n, "strata")
    bad = np.flatnonzero(pd.Series(s).groupby(c).nunique().to_numpy() > 1)
    if bad.size:
        raise ValueError(f"cluster {int(bad[0])} spans more than one stratum; clusters must nest in strata.")
    cluster_stratum = np.full(M.shape[0], -1)
    cluster_stratum[c] = s
    return ([(M[cluster_stratum == g], ones[cluster_stratum == g]) for g in np.unique(cluster_stratum)],
            M, ones)


def _type_index(type_index: Any, n_types: int | None, *, allow_empty: bool) -> tuple[np.ndarray, int]:
    t = np.asarray(type_index)
    if t.ndim != 1 or (t.size == 0 and not allow_empty):
        raise InputError("`type_index` must be a non-empty 1-D array (one type per item).", field="type_index")
    if t.size and (not np.issubdtype(t.dtype, np.integer) or t.min() < 0):
        raise ValueError("`type_index` must hold non-negative ints.")
    t = t.astype(np.intp)
    T = int(n_types) if n_types is not None else (int(t.max()) + 1 if t.size else 0)
    if t.size and t.max() >= T:
        raise ValueError(f"`type_index` has a type {int(t.max())} >= `n_types` ({T}).")
    return t, T


def resample_counts(
    type_index: Any,
    n_resamples: int,
    *,
    n_types: int | None = None,
    unit: str = "item",
    clusters: Any = None,
    strata: Any = None,
    rng: Any = None,
) -> np.ndarray:
    """Bootstrap type counts: an ``(n_resamples, n_types)`` matrix, one resample per row.

    Row ``b`` is how many times each type appears in resample ``b``.  For
    ``unit="item"`` this is a multinomial draw of ``n`` items over the observed
    type frequencies, which has exactly the distribution of the type counts of
    ``n`` items drawn with replacement.  ``unit="cluster"`` draws clusters with
    replacement (``multinomial(C, 1/C)`` cluster counts) and sums their count
    vectors; with ``strata`` the clusters are drawn within each stratum.
    ``unit="stratified"`` draws each stratum's items separately, keeping the
    stratum sizes fixed.

    Examples
    --------
    >>> w = resample_counts([0, 0, 1, 2], 3, rng=0)
    >>> w.shape, bool((w.sum(axis=1) == 4).all())
    ((3, 3), True)
    """
    t, T = _type_index(type_index, n_types, allow_empty=False)
    B = check_n_resamples(n_resamples)
    gen = check_rng(rng)
    check_choice("unit", unit, UNITS)
    blocks, _, _ = _count_blocks(t, T, unit, clusters, strata)
    return _draw_sums(blocks, B, gen)


@serial_blas
def bootstrap_table(
    type_index: Any,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_types: int | None = None,
    method: str | BootstrapConfig = "percentile",
    unit: str = "item",
    clusters: Any = None,
    strata: Any = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    undefined: str = "drop",
) -> BootstrapResult:
    """Bootstrap a statistic of type counts, every replicate at once.

    Parameters
    ----------
    type_index : array of int, shape (n,)
        The type (cell of the table, or distinct unit pattern) of each item.
    statistic : callable
        ``statistic(W)`` with ``W`` of shape ``(m, n_types)`` (float counts, one
        table per row) returns shape ``(m,)``, NaN where undefined.  Row 0 of the
        first call is not special: the point estimate is ``statistic`` on the
        observed counts.
    n_types : int, optional
        Number of types (default ``max(type_index) + 1``).
    method : {"percentile", "basic", "bca"} or BootstrapConfig
        A :class:`BootstrapConfig` carries every setting below but the data
        (``clusters``, ``strata``); do not pass them again as keywords.
    unit : {"item", "cluster", "stratified"}
    clusters, strata : array-like, optional
        One label per item.
    n_resamples : int, default 2000
    confidence_level : float, default 0.95
    rng : None, int or numpy.random.Generator
    undefined : {"drop", "raise"}
        What to do with replicates on which the statistic is undefined.

    Returns
    -------
    BootstrapResult

    Notes
    -----
    Resampling ``n`` items with replacement and tabulating them gives type
    counts distributed ``Multinomial(n, p)`` with ``p`` the observed type
    frequencies, so drawing the counts directly is the same bootstrap, with a
    cost independent of ``n`` (the engine is :func:`bootstrap_sums` with one row
    per type).  The BCa acceleration uses the leave-one-item-out jackknife
    (leave-one-cluster-out for ``unit="cluster"``); items of the same type share
    one jackknife value, computed once and weighted by its count.

    Examples
    --------
    Bootstrap the proportion of items of type 1 (2 of 4):

    >>> res = bootstrap_table([0, 1, 1, 0], lambda W: W[:, 1] / W.sum(axis=1), rng=1,
    ...                       n_resamples=500)
    >>> res.statistic, res.n_undefined
    (0.5, 0)
    """
    cfg = _config(method, n_resamples=n_resamples, confidence_level=confidence_level, unit=unit,
                  rng=rng, undefined=undefined)
    t, T = _type_index(type_index, n_types, allow_empty=False)
    if cfg.unit == "cluster" and clusters is not None:
        n_clusters = int(pd.Series(np.asarray(clusters)).nunique(dropna=False))
        if n_clusters < 2:  # one cluster resampled is itself: a zero-width interval would be false precision
            return _undefined_result(f"{n_clusters} cluster: between-cluster variance cannot be estimated", cfg)
    blocks, jack_rows, jack_mult = _count_blocks(t, T, cfg.unit, clusters, strata)
    return _run_sums(statistic, blocks, jack_rows, jack_mult, cfg)


# --------------------------------------------------------------------------- general engine


def _as_float(value: Any) -> float:
    if isinstance(value, Abstention):
        return math.nan
    if hasattr(value, "statistic"):  # a result object
        return _as_float(value.statistic)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"the statistic must return a float, an Abstention or a result with `.statistic`; "
            f"got {type(value).__name__}."
        ) from None


def _samples(data: Any, *, paired: bool) -> list[np.ndarray]:
    """``data`` as a list of 1-D non-empty samples (one per item each when ``paired``)."""
    if isinstance(data, (list, tuple)) and len(data) and not np.isscalar(data[0]):
        samples = [np.asarray(d) for d in data]
    else:
        samples = [np.asarray(data)]
    for i, s in enumerate(samples):
        if s.ndim != 1:
            raise ValueError(f"sample {i} of `data` must be 1-D; got shape {s.shape}.")
        if s.size == 0:
            raise InputError(f"sample {i} of `data` is empty.", field="data")
    if paired and any(s.size != samples[0].size for s in samples):
        raise ValueError(
            f"paired samples must have one entry per item; got lengths {[s.size for s in samples]}."
        )
    return samples


def _check_unit_labels(unit: str, clusters: Any, strata: Any) -> None:
    """The labels each unit of resampling needs, and refuses (one message per rule, both engines)."""
    if unit == "item" and (clusters is not None or strata is not None):
        raise ValueError("`unit='item'` takes no `clusters` or `strata`; use unit='cluster' or 'stratified'.")
    if unit == "cluster" and clusters is None:
        raise ValueError("`unit='cluster'` needs `clusters=` (one cluster label per item).")
    if unit == "stratified" and strata is None:
        raise ValueError("`unit='stratified'` needs `strata=` (one label per item).")


class _Design(NamedTuple):
    """How the general engine resamples: the unit, and the item labels it needs (codes 0..k-1)."""

    unit: str
    paired: bool
    clusters: np.ndarray | None
    strata: np.ndarray | None

    @classmethod
    def of(cls, unit: str, n: int, clusters: Any, strata: Any, *, paired: bool) -> _Design:
        if not paired and unit != "item":
            raise ValueError("`paired=False` resamples each sample separately and supports unit='item' only.")
        _check_unit_labels(unit, clusters, strata)
        return cls(unit, paired,
                   None if clusters is None else _group_codes(clusters, n, "clusters"),
                   None if strata is None else _group_codes(strata, n, "strata"))


def _tolerant(statistic: Callable[..., Any]) -> Callable[..., float]:
    """``statistic`` as a float function: NaN where it is undefined (abstains, divides by zero)."""
    def call(*xs: np.ndarray) -> float:
        try:
            with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedWarning)
                return _as_float(statistic(*xs))
        except ZeroDivisionError:
            return math.nan
    return call


def _chunk_rows(width: int) -> int:
    """Rows of ``width`` cells that fit in one batch (at least one)."""
    return max(1, _CHUNK_CELLS // max(width, 1))


def _item_indices(gen: np.random.Generator, n: int, B: int, strata: np.ndarray | None) -> np.ndarray:
    """(B, n) item indices for one batch of resamples: all items, or items within each stratum."""
    if strata is None:
        return gen.integers(0, n, size=(B, n))
    parts = []
    for s in np.unique(strata):
        members = np.flatnonzero(strata == s)
        parts.append(members[gen.integers(0, members.size, size=(B, members.size))])
    return np.concatenate(parts, axis=1)


def _batch(gen: np.random.Generator, samples: list[np.ndarray], m: int, design: _Design) -> list[np.ndarray]:
    """``m`` resamples of every sample, shape ``(m, n_j)`` each (units of fixed size: items)."""
    if design.paired:
        idx = _item_indices(gen, samples[0].size, m, design.strata)
        return [s[idx] for s in samples]
    return [s[gen.integers(0, s.size, size=(m, s.size))] for s in samples]


class _Clusters(NamedTuple):
    """The items of each cluster, and each cluster's stratum (``None`` without strata)."""

    members: list[np.ndarray]
    stratum: np.ndarray | None

    @classmethod
    def of(cls, clusters: np.ndarray, strata: np.ndarray | None) -> _Clusters:
        order = np.argsort(clusters, kind="stable")
        members = np.split(order, np.flatnonzero(np.diff(clusters[order])) + 1)
        return cls(members, None if strata is None else np.array([strata[m[0]] for m in members]))

    def resample(self, gen: np.random.Generator) -> np.ndarray:
        """Item indices of one resample: clusters drawn with replacement (within strata)."""
        ids = np.arange(len(self.members))
        if self.stratum is None:
            pick = gen.choice(ids, size=ids.size, replace=True)
        else:
            cs = self.stratum
            pick = np.concatenate([gen.choice(ids[cs == s], size=int((cs == s).sum()), replace=True)
                                   for s in np.unique(cs)])
        return np.concatenate([self.members[i] for i in pick])


def _vectorized_replicates(statistic: Callable[..., Any], samples: list[np.ndarray], design: _Design,
                           gen: np.random.Generator, B: int) -> np.ndarray:
    """Replicates of a statistic that takes a batch of resamples (``axis=-1``), in chunks."""
    reps = np.empty(B)
    step = _chunk_rows(samples[0].size * len(samples))
    for i in range(0, B, step):
        m = min(step, B - i)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(statistic(*_batch(gen, samples, m, design), axis=-1), dtype=float)
        if out.shape != (m,):
            raise ValueError(f"a vectorized statistic must return shape ({m},); got {out.shape}.")
        reps[i:i + m] = out
    return reps


def _looped_replicates(call: Callable[..., float], samples: list[np.ndarray], design: _Design,
                       gen: np.random.Generator, B: int) -> np.ndarray:
    """Replicates one resample at a time (any statistic; clusters of unequal size)."""
    reps = np.empty(B)
    if design.unit == "cluster":
        assert design.clusters is not None  # _Design.of checked it
        clusters = _Clusters.of(design.clusters, design.strata)
        for b in range(B):
            idx = clusters.resample(gen)
            reps[b] = call(*[s[idx] for s in samples])
        return reps
    for b in range(B):
        reps[b] = call(*[x[0] for x in _batch(gen, samples, 1, design)])
    return reps


def bootstrap(
    data: Any,
    statistic: Callable[..., Any],
    *,
    method: str | BootstrapConfig = "percentile",
    unit: str = "item",
    clusters: Any = None,
    strata: Any = None,
    paired: bool = True,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    undefined: str = "drop",
    vectorized: bool = False,
) -> BootstrapResult:
    """Bootstrap confidence interval of any statistic, with the resampling unit declared.

    Parameters
    ----------
    data : array-like or sequence of array-likes
        One 1-D sample, or a tuple/list of samples.  With ``paired=True`` every
        sample has one entry per item and all are resampled with the same
        indices (a difference between two judges on the same items).
    statistic : callable
        ``statistic(*samples)`` returning a float, an :class:`~evaltk.values.Abstention`
        (undefined), NaN (undefined) or a result with ``.statistic``.  With
        ``vectorized=True`` it is called as ``statistic(*samples, axis=-1)`` on
        arrays of shape ``(m, n)`` and returns shape ``(m,)``.
    method : {"percentile", "basic", "bca"} or BootstrapConfig, default "percentile"
        A :class:`BootstrapConfig` carries ``n_resamples``, ``confidence_level``,
        ``unit``, ``rng`` and ``undefined``; do not pass them again as keywords.
    unit : {"item", "cluster", "stratified"}, default "item"
        What is resampled: items; whole clusters (``clusters=``, e.g. tasks or
        conversations, with all their items); or items within each stratum
        (``strata=``).  ``unit="cluster"`` with ``strata=`` resamples clusters
        within strata.
    clusters, strata : array-like, optional
        One label per item.
    paired : bool, default True
        False resamples each sample independently (``unit="item"`` only).
    n_resamples : int, default 2000
    confidence_level : float, default 0.95
    rng : None, int or numpy.random.Generator
        The only source of randomness.
    undefined : {"drop", "raise"}, default "drop"
        Replicates on which the statistic is undefined are counted in
        ``n_undefined`` and dropped with an :class:`~evaltk.values.UndefinedWarning`,
        or make the call raise :class:`UndefinedReplicateError`.
    vectorized : bool, default False

    Returns
    -------
    BootstrapResult

    Notes
    -----
    For statistics of a count table use :func:`bootstrap_table` (or the
    ``method=`` option of the agreement functions), which draws all replicates
    as multinomial count tables and is orders of magnitude faster.  BCa uses
    the leave-one-out jackknife over the resampling unit for the acceleration.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([0, 1, 1, 1, 0, 1, 1, 0, 1, 1])
    >>> res = bootstrap(x, np.mean, rng=0, n_resamples=1000)
    >>> res.statistic, res.method, res.n_undefined
    (0.7, 'percentile', 0)
    """
    cfg = _config(method, n_resamples=n_resamples, confidence_level=confidence_level, unit=unit,
                  rng=rng, undefined=undefined)
    if not callable(statistic):
        raise TypeError("`statistic` must be callable.")
    samples = _samples(data, paired=paired)
    design = _Design.of(cfg.unit, samples[0].size, clusters, strata, paired=paired)
    call = _tolerant(statistic)
    theta = call(*samples)
    if not math.isfinite(theta):
        return _undefined_result("undefined on the observed data", cfg)
    gen, seed = cfg.seeded()
    vectorized = vectorized and cfg.unit != "cluster"  # clusters differ in size: one resample at a time
    if vectorized:
        reps = _vectorized_replicates(statistic, samples, design, gen, cfg.n_resamples)
    else:
        reps = _looped_replicates(call, samples, design, gen, cfg.n_resamples)
    jack = None
    if cfg.method == "bca":
        jack = (_vectorized_jackknife(samples, statistic) if vectorized and paired
                else _generic_jackknife(samples, call, design))
    return _interval_from_replicates(theta, reps, jack, cfg, seed)


def _vectorized_jackknife(samples: list[np.ndarray], statistic: Callable[..., Any]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-item-out values of a vectorised statistic, in chunks of rows."""
    n = samples[0].size
    vals = np.empty(n)
    step = _chunk_rows(n * len(samples))
    base = np.arange(n - 1)
    for i in range(0, n, step):
        left = np.arange(i, min(i + step, n))
        idx = base[None, :] + (base[None, :] >= left[:, None])   # row j skips item left[j]
        with np.errstate(divide="ignore", invalid="ignore"):
            vals[left] = np.asarray(statistic(*[s[idx] for s in samples], axis=-1), dtype=float)
    return vals, np.ones(n)


def _generic_jackknife(samples: list[np.ndarray], call: Callable[..., float], design: _Design
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-unit-out values: one cluster, one paired item, or one observation of one sample."""
    if design.unit == "cluster":
        assert design.clusters is not None
        groups = np.unique(design.clusters)
        vals = np.array([call(*[s[design.clusters != g] for s in samples]) for g in groups])
        return vals, np.ones(groups.size)
    if design.paired:
        return _leave_one_out(samples[0].size, lambda keep: call(*[s[keep] for s in samples]))
    out = [_leave_one_out(s.size, lambda keep, j=j: call(*[t[keep] if k == j else t
                                                        for k, t in enumerate(samples)]))[0]
           for j, s in enumerate(samples)]
    vals = np.concatenate(out)
    return vals, np.ones(vals.size)


def _leave_one_out(n: int, value: Callable[..., float]) -> tuple[np.ndarray, np.ndarray]:
    """``value(keep)`` for each of ``n`` masks that leave one position out."""
    keep = np.ones(n, dtype=bool)
    vals = np.empty(n)
    for i in range(n):
        keep[i] = False
        vals[i] = value(keep)
        keep[i] = True
    return vals, np.ones(n)
