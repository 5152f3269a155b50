"""Where you are: a level on the human scale from a judge on every run and a few human labels.

A judge's rate on all runs is biased by however the judge errs; the human rate on the
few labelled runs is unbiased but wide.  Prediction-powered inference combines them
into an estimate that is unbiased whatever the judge's bias, and narrower than the
human-only interval by as much as the judge predicts the human label:

* :func:`ppi_mean`: PPI++ (Angelopoulos, Duchi and Zrnic 2023), power-tuned, for a
  mean or a proportion from labels on a random subset; optionally clustered (runs that
  share a task are not independent);
* :func:`active_mean`: the inverse-probability form of active statistical inference
  (Zrnic and Candès 2024) for labels drawn with known, unequal inclusion
  probabilities (the labeling module's strata), also power-tuned and clusterable;
* :func:`rogan_gladen`: the classical correction of an apparent prevalence by the
  judge's measured sensitivity and specificity (Rogan and Gladen 1978), with the
  delta-method variance of Reiczigel, Földi and Ózsvári (2010).

Every function returns a :class:`LevelEstimate`: the estimate, its interval, the
human-only estimate and interval on the same labels, the effective number of labels
(how many human labels alone would give the same variance) and the counts.

Formulas (labels ``Y_i`` on ``n`` labelled runs, judge answers ``f_i`` on them and
``f~_j`` on the ``N`` other runs; ``var`` is the population variance, ``ddof=0``)::

    theta(lam) = mean_j(lam f~_j) + mean_i(Y_i - lam f_i)
    se^2       = var(lam f~) / N + var(Y - lam f) / n
    lam*       = cov(Y, f) / ((1 + n / N) var_1(f, f~))        clipped to [0, 1]

with ``var_1`` the sample variance (``ddof=1``) over all judge answers, exactly as
``ppi_py.ppi_mean_ci`` computes it; ``lam = 1`` is plain PPI, ``lam = 0`` the human-only
mean.  The interval is ``theta +- c se``: by default the small-sample t form (``c``
Student's t on ``n - 1`` df, the variances with ``ddof=1``); ``distribution="normal"``
is ppi_py's (normal ``c``, ``ddof=0``).  A zero estimated variance (every label
equal to its judge answer, all one value) gives no interval: it abstains with the
cause rather than print ``[1, 1]``.

References
----------
Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I. and Zrnic, T. (2023).
Prediction-powered inference. *Science* 382, 669-674.

Angelopoulos, A. N., Duchi, J. C. and Zrnic, T. (2023). PPI++: Efficient
prediction-powered inference. arXiv:2311.01453.

Zrnic, T. and Candès, E. J. (2024). Active statistical inference. *ICML 2024*,
arXiv:2403.03208.

Rogan, W. J. and Gladen, B. (1978). Estimating prevalence from the results of a
screening test. *American Journal of Epidemiology* 107, 71-76.

Reiczigel, J., Földi, J. and Ózsvári, L. (2010). Exact confidence limits for prevalence
of a disease with an imperfect diagnostic test. *Epidemiology and Infection* 138,
1674-1678.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_confidence_level
from ..errors import InputError
from ..values import Abstention, Cause
from ._intervals import critical_value, wilson_interval
from ._result import ConfidenceInterval, ResultShape, undefined

#: The estimators :class:`LevelEstimate.method` names.
LEVEL_METHODS = ("ppi++", "ppi", "active", "rogan_gladen")
#: ``distribution=`` values: the interval is ``estimate +- c * SE`` with ``c`` the normal
#: quantile and population variances (``ppi_py``'s), or Student's t on ``n - 1`` df and
#: sample variances (``ddof=1``), ``n`` the labels.
LEVEL_DISTRIBUTIONS = ("t", "normal")
#: The default, chosen from ``benchmarks/level_coverage.py`` (docs/calibration.md, "Where
#: you are"): at 50 labels the normal interval covered 92.1-92.8% for the three simulated
#: judges, t on 49 df 93.7-94.2%; from 100 labels on the two agree to within 0.5%.
LEVEL_DISTRIBUTION = "t"


@dataclass(frozen=True)
class LevelEstimate(ResultShape):
    """A level on the human scale with its interval, beside the human-only one.

    Attributes
    ----------
    statistic : float or Abstention
        The estimate of the mean human label over every run.
    confidence_interval : ConfidenceInterval or Abstention
        ``statistic +- z * standard_error``; an abstention (with its cause) where the
        estimated variance is zero, so no interval narrower than the data allow is shown.
    standard_error : float or Abstention
    method : str
        One of :data:`LEVEL_METHODS`.
    lam : float
        The power-tuning weight on the judge (``1`` plain PPI, ``0`` human only); NaN
        for Rogan-Gladen.
    human_only, human_only_interval
        The mean of the labels and its interval (Wilson for 0/1 labels, the normal
        interval otherwise): what the labels say without the judge.
    effective_labels : float
        ``n_labeled * var(human only) / var(estimate)``: the number of human labels the
        human-only mean would need for the same variance (``inf`` when the estimate's
        variance is zero; NaN when either variance is).
    n_labeled, n_unlabeled : int
    n_clusters : int or None
        The number of clusters the variance was summed over; ``None`` when unclustered.
    confidence_level : float
    n_excluded : Mapping[str, int]
        Runs left out before estimation, by cause (filled by callers that fold
        abstentions; empty here).
    notes : tuple of str
        What the estimate assumed or clipped.
    distribution : str
        ``"t"`` (Student's t on ``n_labeled - 1`` df) or ``"normal"``: the quantile of the interval.
    instrument : str, optional
        The digest of the instrument whose answers were the predictions (set by
        :func:`evaltk.absolute_level`): an estimate belongs to one instrument.
    label_items : tuple, optional
        The runs whose human labels were used, so a check can see they were held out.
    variance_split : tuple of float, optional
        ``(judge term, rectifier term)``: the variance contributed by the unlabelled
        runs' judge answers and by the labelled runs' residuals (unclustered PPI only),
        so a planner can see what another batch of labels buys.
    """

    statistic: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    standard_error: float | Abstention
    method: str
    lam: float
    human_only: float | Abstention
    human_only_interval: ConfidenceInterval | Abstention
    effective_labels: float
    n_labeled: int
    n_unlabeled: int
    n_clusters: int | None
    confidence_level: float
    n_excluded: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    variance_split: tuple[float, float] | None = None
    distribution: str = LEVEL_DISTRIBUTION
    instrument: str | None = None
    label_items: tuple[Any, ...] | None = None

    @property
    def half_width(self) -> float:
        """Half the interval's width; ``inf`` where the interval abstains."""
        ci = self.confidence_interval
        return math.inf if isinstance(ci, Abstention) else (ci.high - ci.low) / 2.0

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: the shared leading columns, then the method, the human-only
        estimate and interval, the effective labels, the counts and the exclusions."""
        ho = self.human_only_interval
        se = self.standard_error
        row = {
            **self.summary_row(),
            "standard_error": math.nan if isinstance(se, Abstention) else se,
            "method": self.method,
            "lam": self.lam,
            "human_only": math.nan if isinstance(self.human_only, Abstention) else self.human_only,
            "human_only_low": math.nan if isinstance(ho, Abstention) else ho.low,
            "human_only_high": math.nan if isinstance(ho, Abstention) else ho.high,
            "effective_labels": self.effective_labels,
            "n_labeled": self.n_labeled,
            "n_unlabeled": self.n_unlabeled,
            "n_clusters": self.n_clusters,
            "confidence_level": self.confidence_level,
            "distribution": self.distribution,
            **{f"n_excluded_{k}": v for k, v in self.n_excluded.items()},
        }
        return pd.DataFrame([row])

    def with_exclusions(self, n_excluded: Mapping[str, int], note: str | None = None) -> LevelEstimate:
        """The same estimate carrying the runs its caller left out, by cause."""
        notes = self.notes + ((note,) if note else ())
        return replace(self, n_excluded=dict(n_excluded), notes=notes)


def _vector(x: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """A 1-d float array of finite numbers, or an :class:`InputError` naming ``name``."""
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as e:
        raise InputError(f"`{name}` must be numbers (0/1 labels or scores in [0, 1]); {e}.", field=name) from None
    if a.ndim != 1:
        raise InputError(f"`{name}` must be one-dimensional; got shape {a.shape}.", field=name)
    if not allow_empty and a.size == 0:
        raise InputError(f"`{name}` has no values.", field=name)
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"`{name}` has a missing or infinite value at position {i} ({a[i]!r}); "
                         "an abstention is not a number: leave that run out and report it by cause "
                         "(`evaltk.level_estimate` does).", field=name)
    return a


def _clusters(c: Any, n: int, name: str) -> np.ndarray | None:
    if c is None:
        return None
    codes, _ = pd.factorize(pd.Series(np.asarray(c, dtype=object)), use_na_sentinel=True)
    if len(codes) != n:
        raise InputError(f"`{name}` has {len(codes)} entries for {n} runs.", field=name)
    if (codes < 0).any():
        raise InputError(f"`{name}` has a missing cluster id at position {int(np.flatnonzero(codes < 0)[0])}.",
                         field=name)
    return codes


def _is_binary(y: np.ndarray) -> bool:
    return bool(np.isin(y, (0.0, 1.0)).all())


def _quantile(cl: float, distribution: str, n_labels: int) -> float:
    """``c`` of ``estimate +- c * SE``: Student's t on ``n_labels - 1`` df, or the normal quantile."""
    return critical_value(cl, check_choice("distribution", distribution, LEVEL_DISTRIBUTIONS), max(n_labels - 1, 1))


def _ddof(distribution: str, n_labels: int) -> int:
    """The t interval is the textbook one: the sample variances with ``n - 1`` (``ddof=1``);
    the normal one is ppi_py's (``ddof=0``)."""
    return 1 if distribution == "t" and n_labels > 1 else 0


def _var(x: np.ndarray, ddof: int) -> float:
    return float(x.var(ddof=ddof if x.size > ddof else 0))


def _interval(est: float, var: float, z: float, what: str, *, n_labels: int | None = None,
              unit: bool = False) -> tuple[ConfidenceInterval | Abstention, float | Abstention]:
    """``est +- z se``, intersected with [0, 1] when every value is on that scale (``unit``:
    the level cannot leave it, so the intersection keeps the coverage) and the estimate is on
    it too (a prediction-powered estimate can fall just outside, where the intersection could
    exclude it or be empty: that interval is left whole and the caller says why,
    :func:`_off_scale`); an abstention with its cause where no variance can be estimated."""
    if n_labels is not None and n_labels < 2:
        a = undefined(f"{n_labels} label(s): no variance can be estimated from fewer than two",
                      what=f"the interval of {what}")
        return a, a
    if not var > 0:
        a = undefined(f"its estimated variance is zero (at {est:g}: the labels do not vary, and the judge's "
                      "answers either do not vary or get no weight); an interval of zero width would "
                      "claim more than the labels show",
                      what=f"the interval of {what}")
        return a, a
    se = math.sqrt(var)
    lo, hi = est - z * se, est + z * se
    if unit and 0.0 <= est <= 1.0:
        lo, hi = max(0.0, lo), min(1.0, hi)
    return ConfidenceInterval(lo, hi), se


def _off_scale(est: float, unit: bool) -> tuple[str, ...]:
    """The note for an estimate outside [0, 1] on data that lies in it (:func:`_interval`)."""
    if not unit or 0.0 <= est <= 1.0:
        return ()
    return (f"the estimate {est:.6g} lies outside [0, 1], where every label and answer lies (the judge's "
            "answers on the labelled runs differ from those on the unlabelled ones); its interval is "
            "reported whole, not intersected with [0, 1]",)


def _on_unit_scale(*xs: np.ndarray) -> bool:
    return all(bool(((x >= 0) & (x <= 1)).all()) for x in xs)


def _cluster_var(terms: np.ndarray, codes: np.ndarray, scale: float) -> tuple[float, int]:
    """``sum_c (sum_{i in c} t_i)^2 * C / (C - 1) / scale^2`` for centred terms ``t``."""
    k = int(codes.max()) + 1
    sums = np.bincount(codes, weights=terms, minlength=k)
    used = np.bincount(codes, minlength=k) > 0
    c = int(used.sum())
    if c < 2:
        return math.nan, c
    return float((sums ** 2).sum()) * c / (c - 1) / scale ** 2, c


def _effective(n: int, var_human: float, var_est: float) -> float:
    if not (var_human > 0):
        return math.nan
    return math.inf if var_est == 0 else n * var_human / var_est


def _tune(z: np.ndarray, g: np.ndarray, gu: np.ndarray) -> float:
    """``cov(Z, g) / ((1 + n/N) var_1(g, g~))`` clipped to [0, 1]: ``ppi_py._calc_lam_glm``
    for a mean (``Z`` the labels less the estimate times the decidable indicator)."""
    n, N = z.size, gu.size
    every = np.concatenate([g, gu])
    v = float(every.var(ddof=1)) if every.size > 1 else 0.0
    if not v > 0:
        return 0.0  # a judge that answers one value everywhere carries no information
    if not np.ptp(z) > 0:
        # constant labels share no variance with the judge; the centred product would be
        # rounding noise (1e-33), and a lam of that size a near-zero-width interval
        return 0.0
    cov = float(((z - z.mean()) * (g - g.mean())).mean())
    return float(np.clip(cov / ((1.0 + n / N) * v), 0.0, 1.0))


def _binary(x: Any, n: int, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=bool) if x is not None else np.ones(n, dtype=bool)
    if a.shape != (n,):
        raise InputError(f"`{name}` needs {n} entries; got shape {a.shape}.", field=name)
    return a.astype(float)


def _labels_where(labels: Any, keep: np.ndarray, name: str) -> np.ndarray:
    """The labels as floats, finite where ``keep``; 0 elsewhere (read nowhere else)."""
    y = np.asarray(pd.to_numeric(pd.Series(np.asarray(labels, dtype=object)), errors="coerce"), dtype=float)
    if y.size != keep.size:
        raise InputError(f"`{name}` has {y.size} entries for {keep.size} runs.", field=name)
    _vector(y[keep], name, allow_empty=True)
    return np.where(keep, y, 0.0)


def _no_decidable() -> tuple[Abstention, Abstention]:
    a = undefined("no run is estimated decidable (every human label is 'cannot tell')",
                  what="the level")
    return a, a


def ppi_mean(
    labels: Any,
    predictions: Any,
    predictions_unlabeled: Any,
    *,
    lam: float | None = None,
    confidence_level: float = 0.95,
    clusters: Any = None,
    clusters_unlabeled: Any = None,
    decidable: Any = None,
    judge_decidable: Any = None,
    judge_decidable_unlabeled: Any = None,
    distribution: str = LEVEL_DISTRIBUTION,
) -> LevelEstimate:
    """The power-tuned prediction-powered mean (PPI++) of the human label over every run.

    Parameters
    ----------
    labels : array-like of float
        The human labels ``Y`` on the ``n`` labelled runs (0/1 or scores in [0, 1]).
        The labelled runs must be a uniform random subset of all runs; for labels
        drawn with unequal probabilities use :func:`active_mean`.
    predictions : array-like of float
        The judge's answers ``f`` on the same runs, in the same order.
    predictions_unlabeled : array-like of float
        The judge's answers on the ``N`` runs without a human label.
    lam : float in [0, 1], optional
        The weight on the judge.  ``None`` (default) tunes it from the data as
        ``ppi_py`` does; ``1`` is plain PPI (Angelopoulos et al. 2023); ``0`` gives the
        human-only mean.
    confidence_level : float, default 0.95
    distribution : {"t", "normal"}, default "t"
        The quantile of ``estimate +- c * SE`` (:data:`LEVEL_DISTRIBUTION`).
    clusters, clusters_unlabeled : array-like, optional
        A cluster id per labelled and per unlabelled run (the task, when runs share a
        task).  The variance is then the cluster-robust sum over clusters (a task's
        labelled and unlabelled runs in one cluster), scaled by ``C / (C - 1)``; ``lam``
        is tuned as if unclustered (any fixed ``lam`` keeps the estimate unbiased).
    decidable : array-like of bool, optional
        Per labelled run, whether the human could decide (False: "cannot tell"; its
        label is not read).  The estimand is then the mean label over the runs where
        the construct is decidable, ``E[Y D] / E[D]``, estimated as a ratio of two
        prediction-powered means with the delta-method variance.
    judge_decidable, judge_decidable_unlabeled : array-like of bool, optional
        The judge's prediction of ``D`` on the labelled and the unlabelled runs
        (False where it answered "cannot tell"); default all True.  Like any
        prediction, it needs to be right only for efficiency, never for validity.

    Returns
    -------
    LevelEstimate
        ``method`` is ``"ppi++"`` when ``lam`` was tuned, ``"ppi"`` otherwise.

    Notes
    -----
    Without clusters or ``decidable`` and with ``distribution="normal"``, the estimate
    and interval equal ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci(alpha=1 -
    confidence_level)`` (tested to 1e-10).  The default ``distribution="t"`` is the
    textbook small-sample form: sample variances with ``n - 1`` (``ddof=1``) and Student's
    t on ``n - 1`` df; at 50 labels the normal interval under-covers
    (:data:`LEVEL_DISTRIBUTION`).  With ``decidable``, ``lam`` is the same
    formula applied to ``Y D - theta D`` and ``f d - theta d`` at the plain-PPI
    ``theta``: the power tuning of the ratio's linearisation.

    Examples
    --------
    >>> r = ppi_mean([1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 1, 1, 0, 1, 1])
    >>> round(r.statistic, 4), r.method, r.n_labeled, r.n_unlabeled
    (0.8359, 'ppi++', 4, 8)
    """
    cl = check_confidence_level(confidence_level)
    f = _vector(predictions, "predictions")
    fu = _vector(predictions_unlabeled, "predictions_unlabeled")
    n, N = f.size, fu.size
    d = _binary(decidable, n, "decidable")
    y = _labels_where(labels, d > 0, "labels")
    dj = _binary(judge_decidable, n, "judge_decidable")
    dju = _binary(judge_decidable_unlabeled, N, "judge_decidable_unlabeled")
    if lam is not None and not (0.0 <= float(lam) <= 1.0):
        raise ValueError(f"`lam` must be in [0, 1]; got {lam!r}.")
    cu = _clusters(clusters, n, "clusters")
    cuu = _clusters(clusters_unlabeled, N, "clusters_unlabeled")
    if (cu is None) != (cuu is None):
        raise InputError("give `clusters` and `clusters_unlabeled` together (a cluster id for every run).",
                         field="clusters")
    y1, y2, f1, f2, g1, g2 = y * d, d, f * dj, dj, fu * dju, dju

    def means(lm: float) -> tuple[float, float]:
        return (float((lm * g1).mean() + (y1 - lm * f1).mean()),
                float((lm * g2).mean() + (y2 - lm * f2).mean()))

    tuned = lam is None
    if tuned:
        m1, m2 = means(1.0)
        t0 = m1 / m2 if m2 > 0 else 0.0
        lam = _tune(y1 - t0 * y2, f1 - t0 * f2, g1 - t0 * g2)
    lam = float(lam)  # type: ignore[arg-type]  # tuned above when not given
    m1, m2 = means(lam)
    z = _quantile(cl, distribution, n)
    notes: list[str] = []
    ho, ho_ci, var_h = _human_ratio(y1, y2, cl, z, cu, ddof=_ddof(distribution, n))
    if not m2 > 0:
        a, b = _no_decidable()
        return LevelEstimate(a, b, b, "ppi++" if tuned else "ppi", lam, ho, ho_ci, math.nan, n, N, None, cl,
                             distribution=distribution)
    est = m1 / m2 if decidable is not None or judge_decidable is not None or \
        judge_decidable_unlabeled is not None else m1
    if decidable is not None:
        notes.append("the mean over the runs where the construct is decidable (a ratio of two "
                     "prediction-powered means, delta-method variance)")
    t_u = lam * (g1 - est * g2) / m2
    t_l = (y1 - est * y2 - lam * (f1 - est * f2)) / m2
    n_clusters: int | None = None
    dd = _ddof(distribution, n)
    if cu is None:
        var = _var(t_u, dd) / N + _var(t_l, dd) / n
    else:
        both = pd.factorize(pd.Series(np.concatenate([np.asarray(clusters, dtype=object),
                                                      np.asarray(clusters_unlabeled, dtype=object)])))[0]
        var, n_clusters = _cluster_var(np.concatenate([(t_u - t_u.mean()) / N, (t_l - t_l.mean()) / n]),
                                       both, 1.0)
        notes.append("cluster-robust variance over clusters; lam tuned as if unclustered")
        if math.isnan(var):
            raise InputError("a cluster-robust interval needs at least two clusters.", field="clusters")
    unit = distribution == "t" and _on_unit_scale(y, f, fu)
    ci, se = _interval(est, var, z, "the prediction-powered mean", n_labels=n, unit=unit)
    notes.extend(_off_scale(est, unit))
    split = (_var(t_u, dd) / N, _var(t_l, dd) / n) if cu is None else None
    return LevelEstimate(est, ci, se, "ppi++" if tuned else "ppi", lam, ho, ho_ci,
                         _effective(int(y2.sum()), var_h, var), n, N, n_clusters, cl, {}, tuple(notes), split,
                         distribution)


def _human_ratio(y1: np.ndarray, y2: np.ndarray, cl: float, z: float, codes: np.ndarray | None, *,
                 weights: np.ndarray | None = None, ddof: int = 0
                 ) -> tuple[float | Abstention, ConfidenceInterval | Abstention, float]:
    """The labels' own mean over the decidable runs (inverse-probability weighted when
    ``weights``), its interval and the variance of that mean."""
    w = np.ones_like(y1) if weights is None else weights
    den = float((w * y2).mean())
    if not den > 0:
        a = Abstention(Cause.MISSING_EVIDENCE, "no labelled run is decidable")
        return a, a, math.nan
    est = float((w * y1).mean()) / den
    terms = w * (y1 - est * y2) / den
    N = terms.size
    var = _var(terms, ddof) / N if codes is None else _cluster_var(terms - terms.mean(), codes, N)[0]
    ci: ConfidenceInterval | Abstention
    if weights is None and codes is None and _is_binary(y1) and _is_binary(y2):
        ci = wilson_interval(int(y1.sum()), int(y2.sum()), confidence_level=cl).confidence_interval
    elif var > 0:
        ci = ConfidenceInterval(est - z * math.sqrt(var), est + z * math.sqrt(var))
    else:
        ci = Abstention(Cause.MISSING_EVIDENCE, f"every decidable label is {est:g}: the normal interval "
                        "would have zero width")
    return est, ci, var


def active_mean(
    predictions: Any,
    labeled: Any,
    inclusion_probability: Any,
    labels: Any,
    *,
    lam: float | None = None,
    confidence_level: float = 0.95,
    clusters: Any = None,
    decidable: Any = None,
    judge_decidable: Any = None,
    distribution: str = LEVEL_DISTRIBUTION,
) -> LevelEstimate:
    """The mean human label over every run from labels drawn with known probabilities.

    The inverse-probability estimator of active statistical inference (Zrnic and Candès
    2024): with ``xi_i`` the indicator that run ``i`` was labelled and ``pi_i`` its
    inclusion probability, ``psi_i = lam f_i + (Y_i - lam f_i) xi_i / pi_i`` and the
    estimate is ``mean(psi)``, unbiased for any ``lam`` and any judge as long as each
    ``pi_i`` is the probability the design gave run ``i`` (a stratum's ``n_h / N_h``
    under stratified sampling).  Its variance is ``var(psi) / N`` (the Poisson-sampling
    form; conservative for sampling without replacement within strata); ``lam``
    minimises it (``-cov(a, b) / var(a)`` with ``a = f (1 - xi / pi)``,
    ``b = Y xi / pi``, clipped to [0, 1]).

    Parameters
    ----------
    predictions : array-like of float
        The judge's answer on every run (length ``N``).
    labeled : array-like of bool
        Which runs have a human label.
    inclusion_probability : array-like of float in (0, 1]
        Each run's probability of having been chosen for a label.
    labels : array-like of float
        The human label on every run; read only where ``labeled`` (NaN elsewhere is fine).
    lam, confidence_level, clusters, distribution
        As in :func:`ppi_mean`; ``clusters`` is one id per run.
    decidable, judge_decidable : array-like of bool, optional
        As in :func:`ppi_mean`, one entry per run (``decidable`` read where ``labeled``).

    Returns
    -------
    LevelEstimate
        ``method`` is ``"active"``; ``human_only`` is the inverse-probability
        (Hajek) mean of the labels alone.

    Examples
    --------
    >>> r = active_mean([1, 1, 0, 0, 1, 0], [True, False, True, False, True, True],
    ...                 [0.5, 0.5, 1.0, 1.0, 0.5, 1.0], [1, None, 0, None, 0, 0])
    >>> r.method, r.n_labeled, r.n_unlabeled
    ('active', 4, 2)
    """
    cl = check_confidence_level(confidence_level)
    f = _vector(predictions, "predictions")
    N = f.size
    xi = np.asarray(labeled, dtype=bool)
    pi = _vector(inclusion_probability, "inclusion_probability")
    if xi.shape != (N,) or pi.size != N:
        raise InputError(f"`labeled` and `inclusion_probability` need one entry per run ({N}).",
                         field="labeled")
    if ((pi <= 0) | (pi > 1)).any():
        i = int(np.flatnonzero((pi <= 0) | (pi > 1))[0])
        raise InputError(f"`inclusion_probability` must be in (0, 1]; run {i} has {pi[i]!r}.",
                         field="inclusion_probability")
    if lam is not None and not (0.0 <= float(lam) <= 1.0):
        raise ValueError(f"`lam` must be in [0, 1]; got {lam!r}.")
    d = _binary(decidable, N, "decidable") * xi
    y = _labels_where(labels, d > 0, "labels")
    dj = _binary(judge_decidable, N, "judge_decidable")
    w = xi / pi
    y1, y2, f1, f2 = y * d, d, f * dj, dj

    def psis(lm: float) -> tuple[np.ndarray, np.ndarray]:
        return lm * f1 + (y1 - lm * f1) * w, lm * f2 + (y2 - lm * f2) * w

    tuned = lam is None
    if tuned:
        p1, p2 = psis(1.0)
        t0 = float(p1.mean() / p2.mean()) if p2.mean() > 0 else 0.0
        a = (f1 - t0 * f2) * (1.0 - w)
        b = (y1 - t0 * y2) * w
        va = float(a.var())
        lam = float(np.clip(-float(((a - a.mean()) * (b - b.mean())).mean()) / va, 0.0, 1.0)) if va > 0 else 0.0
    lam = float(lam)  # type: ignore[arg-type]  # tuned above when not given
    p1, p2 = psis(lam)
    m1, m2 = float(p1.mean()), float(p2.mean())
    z = _quantile(cl, distribution, int(xi.sum()))
    codes = _clusters(clusters, N, "clusters")
    ho, ho_ci, var_h = _human_ratio(y1, y2, cl, z, codes, weights=w, ddof=_ddof(distribution, int(xi.sum())))
    n = int(xi.sum())
    if not m2 > 0:
        a_, b_ = _no_decidable()
        return LevelEstimate(a_, b_, b_, "active", lam, ho, ho_ci, math.nan, n, N - n, None, cl,
                             distribution=distribution)
    ratio = decidable is not None or judge_decidable is not None
    est = m1 / m2 if ratio else m1
    # without a decidable indicator the denominator is known to be 1: the terms are psi itself
    terms = (p1 - est * p2) / m2 if ratio else p1 - est
    n_clusters = None
    if codes is None:
        var = _var(terms, _ddof(distribution, n)) / N
    else:
        var, n_clusters = _cluster_var(terms - terms.mean(), codes, N)
        if math.isnan(var):
            raise InputError("a cluster-robust interval needs at least two clusters.", field="clusters")
    unit = distribution == "t" and _on_unit_scale(y, f)
    ci, se = _interval(est, var, z, "the active-inference mean", n_labels=n, unit=unit)
    return LevelEstimate(est, ci, se, "active", lam, ho, ho_ci, _effective(int(d.sum()), var_h, var),
                         n, N - n, n_clusters, cl, {}, _off_scale(est, unit), distribution=distribution)


def rogan_gladen(
    labels: Any,
    predictions: Any,
    predictions_unlabeled: Any,
    *,
    confidence_level: float = 0.95,
    distribution: str = LEVEL_DISTRIBUTION,
) -> LevelEstimate:
    """The Rogan-Gladen prevalence: the judge's apparent rate corrected by its measured errors.

    ``theta = (p + Sp - 1) / (Se + Sp - 1)`` with ``p`` the judge's positive rate over
    every run, ``Se`` its rate of positives on the human positives and ``Sp`` its rate of
    negatives on the human negatives (both measured on the labelled runs).  The variance
    is the delta method's ``(var p + theta^2 var Se + (1 - theta)^2 var Sp) / J^2`` with
    ``J = Se + Sp - 1`` (Reiczigel et al. 2010); the estimate is clipped to [0, 1] and a
    clip is named in ``notes``.  The classical comparison for :func:`ppi_mean`: it needs
    0/1 labels and answers, treats ``Se`` and ``Sp`` as transportable from the labelled
    runs, and is undefined when the judge is no better than chance (``J <= 0``).

    Examples
    --------
    >>> r = rogan_gladen([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1], [1, 0, 1, 1, 0, 0])
    >>> round(r.statistic, 4), r.method
    (0.5, 'rogan_gladen')
    """
    cl = check_confidence_level(confidence_level)
    y = _vector(labels, "labels")
    f = _vector(predictions, "predictions")
    fu = _vector(predictions_unlabeled, "predictions_unlabeled", allow_empty=True)
    if f.size != y.size:
        raise InputError(f"`predictions` has {f.size} values for {y.size} labels.", field="predictions")
    for name, v in (("labels", y), ("predictions", f), ("predictions_unlabeled", fu)):
        if not _is_binary(v):
            raise InputError(f"`{name}` must be 0/1 for the Rogan-Gladen correction (a prevalence).", field=name)
    n, N = y.size, fu.size
    z = _quantile(cl, distribution, n)
    ho, ho_ci, _ = _human_ratio(y, np.ones_like(y), cl, z, None)
    every = np.concatenate([f, fu])
    pos, neg = y == 1, y == 0
    notes: list[str] = []

    def _undefined(reason: str) -> LevelEstimate:
        a = undefined(reason, what="the Rogan-Gladen prevalence")
        return LevelEstimate(a, a, a, "rogan_gladen", math.nan, ho, ho_ci, math.nan, n, N, None, cl, {}, (),
                             distribution=distribution)

    if not pos.any() or not neg.any():
        return _undefined("the labels hold no " + ("human positive" if not pos.any() else "human negative")
                          + ", so the judge's sensitivity and specificity cannot both be measured")
    se_, sp = float(f[pos].mean()), float(1.0 - f[neg].mean())
    j = se_ + sp - 1.0
    if not j > 0:
        return _undefined(f"the judge is no better than chance on the labels (sensitivity {se_:.3g} + "
                          f"specificity {sp:.3g} <= 1)")
    p = float(every.mean())
    raw = (p + sp - 1.0) / j
    est = float(np.clip(raw, 0.0, 1.0))
    if est != raw:
        notes.append(f"clipped from {raw:.4g} to [0, 1]")
    var = (p * (1 - p) / every.size + est ** 2 * se_ * (1 - se_) / int(pos.sum())
           + (1 - est) ** 2 * sp * (1 - sp) / int(neg.sum())) / j ** 2
    ci, se = _interval(est, var, z, "the Rogan-Gladen prevalence")
    if isinstance(ci, ConfidenceInterval):
        ci = ConfidenceInterval(max(0.0, ci.low), min(1.0, ci.high))
    return LevelEstimate(est, ci, se, "rogan_gladen", math.nan, ho, ho_ci,
                         _effective(n, float(y.var()) / n, var), n, N, None, cl, {}, tuple(notes),
                         distribution=distribution)
