"""Where you are: a measure's level on the human scale, from a judge and a few human labels.

Seed 002: a provisional measure "can tell you which way things moved and can refuse a
run.  It cannot tell you where you are"; saying where you are takes "a set of human
labels for that dimension's own construct, held out from whatever tuned the scorer".
:func:`level_estimate` combines the judge's answer on every run with those labels
through the prediction-powered estimators of :mod:`evaltk.stats` and keeps every
abstention a cause:

* a human "cannot tell" (or "not applicable") is neither 0 nor dropped: the estimate is
  the mean label over the runs where the construct is decidable, a ratio of two
  prediction-powered means (``decidable`` in :func:`evaltk.stats.ppi_mean`), and the
  labelled runs it removed are counted by cause;
* a judge abstention is a prediction like any other: on such runs the judge's answer is
  replaced by its mean answer over the runs it answered (computed without any label, so
  the rectifier keeps the estimate unbiased), and a judge "cannot tell" also predicts
  "undecidable".  PPI needs no judge to be right for validity, only for precision;
* a labelled run whose human gave no label at all is not a label: it joins the
  unlabelled runs, counted.

:func:`expected_half_width` says how wide the interval should be after the next batch
of labels, so labelling can stop when the width is reached.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_confidence_level
from ..errors import InputError
from ..scoring import ScoreMatrix, check_use
from ..stats import (
    LEVEL_DISTRIBUTION,
    LEVEL_METHODS,
    LevelEstimate,
    active_mean,
    critical_value,
    ppi_mean,
    rogan_gladen,
)
from ..values import (
    ABSTAIN_WORDS,
    ANSWER_VALUES,
    CANNOT_TELL,
    Abstention,
    Cause,
    normalize_answer,
    normalize_measure,
)

#: Why a run left the estimate, or what was done with its judge answer.
EXCLUSION_CAUSES = (
    "human_cannot_tell",      # the labelled run is undecidable for the human: out of the estimand
    "human_not_applicable",   # the question did not arise on the labelled run
    "human_no_label",         # asked, no label given: counted with the unlabelled runs
    "judge_abstained",        # judge said cannot tell / not applicable: imputed, predicts undecidable
    "judge_no_answer",        # judge gave nothing on the run (failed call, missing row): imputed
)


def _reading(x: Any, measure: str | None, who: str, run: Any) -> tuple[str, float | None]:
    """``("value", v)``, ``("cannot_tell", None)``, ``("not_applicable", None)`` or ``("none", None)``."""
    if isinstance(x, Abstention):  # the rater declined / the question did not arise / no answer to read
        return {Cause.ABSTAINED: (CANNOT_TELL, None), Cause.NOT_APPLICABLE: ("not_applicable", None)}.get(
            x.cause, ("none", None))
    if x is None or x is pd.NA or (isinstance(x, (float, np.floating)) and math.isnan(x)):
        return "none", None
    if isinstance(x, str):
        if x in ABSTAIN_WORDS:
            return CANNOT_TELL, None
        w = normalize_answer(x)
        if w == CANNOT_TELL:
            return CANNOT_TELL, None
        if w == "not_applicable":
            return "not_applicable", None
        if measure is None or measure not in ANSWER_VALUES:
            raise InputError(f"{who} answer {x!r} on run {run!r} is a word: name the `measure` whose "
                             "vocabulary maps it to a value.", record=str(run), field=who)
        vocab = ANSWER_VALUES[measure]
        if w not in vocab:
            raise InputError(f"{who} answer {x!r} on run {run!r} is not in {measure}'s vocabulary "
                             f"({', '.join(vocab)}).", record=str(run), field=who)
        v = vocab[w]
        return (CANNOT_TELL, None) if v is None else ("value", float(v))
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise InputError(f"{who} answer {x!r} on run {run!r} is neither a value in [0, 1] nor a word.",
                         record=str(run), field=who)
    v = float(x)
    if not (0.0 <= v <= 1.0):
        raise InputError(f"{who} answer {v!r} on run {run!r} is outside [0, 1].", record=str(run), field=who)
    return "value", v


def _readings(s: pd.Series, measure: str | None, who: str) -> tuple[np.ndarray, np.ndarray]:
    """Per run: the kind of reading (``value``, ``cannot_tell``, ``not_applicable``, ``none``) and the value."""
    if pd.api.types.is_float_dtype(s.dtype) or pd.api.types.is_integer_dtype(s.dtype):
        v = s.to_numpy(dtype=float, na_value=np.nan, copy=True)
        bad = ~np.isnan(v) & ((v < 0) | (v > 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{who} answer {v[i]!r} on run {s.index[i]!r} is outside [0, 1].",
                             record=str(s.index[i]), field=who)
        return np.where(np.isnan(v), "none", "value").astype(object), v
    kinds, vals = zip(*(_reading(x, measure, who, k) for k, x in s.items()), strict=True) if len(s) else ((), ())
    return np.array(kinds, dtype=object), np.array([np.nan if x is None else x for x in vals], dtype=float)


def _series(x: Any, name: str) -> pd.Series:
    s = x if isinstance(x, pd.Series) else pd.Series(dict(x) if isinstance(x, Mapping) else x)
    if s.index.has_duplicates:
        raise InputError(f"`{name}` has run {s.index[s.index.duplicated()][0]!r} twice: one answer per run "
                         "(fold a panel first, `evaltk.fold_panel`).", field=name)
    return s


def level_estimate(
    judge: Any,
    human: Any,
    *,
    measure: str | None = None,
    method: str = "ppi++",
    inclusion_probability: Any = None,
    clusters: Any = None,
    confidence_level: float = 0.95,
    distribution: str = LEVEL_DISTRIBUTION,
) -> LevelEstimate:
    """The human-scale level of a measure over every run, with an interval valid whatever the judge's bias.

    Parameters
    ----------
    judge : Series or mapping, run id -> answer
        The judge's (or the folded panel's) answer on every run: the universe of runs.
        Values in [0, 1], words of ``measure``'s vocabulary, abstain words,
        :class:`~evaltk.values.Abstention` or missing.
    human : Series or mapping, run id -> label
        The held-out human labels, on a subset of those runs.
    measure : str, optional
        Maps answer words to values (``evaltk.values.ANSWER_VALUES``).
    method : {"ppi++", "ppi", "active", "rogan_gladen"}
        ``"ppi++"`` (default, power-tuned) and ``"ppi"`` (``lam = 1``) need the labelled
        runs to be a uniform random subset; ``"active"`` takes labels drawn with known
        unequal probabilities (``inclusion_probability``); ``"rogan_gladen"`` is the
        classical correction by the judge's sensitivity and specificity (0/1 only;
        judge-abstained runs are left out of its apparent rate, which assumes the
        abstentions uninformative: the reason PPI is the default).
    inclusion_probability : Series or mapping, run id -> float in (0, 1]
        Required for ``"active"``: each run's probability of being chosen for a label
        (a stratum's share labelled, from :func:`evaltk.propose_batch`'s design).
    clusters : Series or mapping, run id -> cluster (the task), optional
        Runs of one task are not independent: the variance is summed over clusters.
    confidence_level : float, default 0.95
    distribution : {"t", "normal"}, default "t"
        The interval's quantile (:data:`evaltk.stats.LEVEL_DISTRIBUTION`).

    Returns
    -------
    LevelEstimate
        With ``n_excluded`` counting every cause in :data:`EXCLUSION_CAUSES` and
        ``notes`` stating the method.

    Examples
    --------
    >>> judge = {f"r{i}": ("yes" if i % 3 else "no") for i in range(30)}
    >>> human = {"r1": "yes", "r2": "no", "r3": "no", "r4": "yes", "r5": "cannot tell", "r6": "no"}
    >>> r = level_estimate(judge, human, measure="x_task")
    >>> r.n_labeled, r.n_excluded["human_cannot_tell"]
    (6, 1)
    """
    check_choice("method", method, LEVEL_METHODS)
    cl = check_confidence_level(confidence_level)
    m = normalize_measure(measure) if measure is not None else None
    js, hs = _series(judge, "judge"), _series(human, "human")
    if len(js) == 0:
        raise InputError("`judge` has no runs: the level is of the runs the judge was asked about.", field="judge")
    stray = hs.index.difference(js.index)
    if len(stray):
        raise InputError(f"`human` labels run {stray[0]!r}, which is not among the judge's runs "
                         f"({len(stray)} such): the estimate is over the judge's runs.",
                         record=str(stray[0]), field="human")
    jk, f = _readings(js, m, "judge")
    answered = jk == "value"
    if not answered.any():
        raise InputError("the judge answered no run: its answers carry no level to correct.", field="judge")
    fill = float(np.nanmean(f[answered]))
    f[~answered] = fill  # label-free imputation: the rectifier keeps the estimate unbiased
    judge_dec = ~np.isin(jk, (CANNOT_TELL, "not_applicable"))
    pos = pd.Index(js.index)
    h_read, h_num = _readings(hs, m, "human")
    where = pos.get_indexer(hs.index)
    hk = np.full(len(pos), "unlabeled", dtype=object)
    hk[where] = pd.Series(h_read).map({"value": "value", CANNOT_TELL: "human_cannot_tell",
                                       "not_applicable": "human_not_applicable", "none": "human_no_label"}).to_numpy()
    y = np.full(len(pos), np.nan)
    y[where] = h_num
    labeled = np.isin(hk, ("value", "human_cannot_tell", "human_not_applicable"))
    decidable = hk == "value"
    counts = {c: int((hk == c).sum()) for c in EXCLUSION_CAUSES[:3]}
    counts["judge_abstained"] = int((~judge_dec).sum())
    counts["judge_no_answer"] = int((jk == "none").sum())
    if not labeled.any():
        raise InputError("no run has a human label: a level on the human scale needs some.", field="human")
    cl_codes = None if clusters is None else _series(clusters, "clusters").reindex(pos).to_numpy(dtype=object)
    if cl_codes is not None and pd.isna(cl_codes).any():
        raise InputError(f"`clusters` has no cluster for run {pos[pd.isna(cl_codes)][0]!r}.", field="clusters")
    any_undecidable = bool((labeled & ~decidable).any() or (~judge_dec).any())
    note = (f"judge abstentions ({counts['judge_abstained'] + counts['judge_no_answer']}) imputed with the "
            f"judge's mean answer {fill:.4g} (label-free, so the estimate stays unbiased)"
            if (~answered).any() else None)
    if method in ("ppi++", "ppi"):
        L, U = labeled, ~labeled
        if not U.any():
            raise InputError("every run has a label: the human mean needs no judge.", field="human")
        kw: dict[str, Any] = {}
        if any_undecidable:
            kw = {"decidable": decidable[L], "judge_decidable": judge_dec[L], "judge_decidable_unlabeled": judge_dec[U]}
        if cl_codes is not None:
            kw |= {"clusters": cl_codes[L], "clusters_unlabeled": cl_codes[U]}
        r = ppi_mean(y[L], f[L], f[U], lam=None if method == "ppi++" else 1.0, confidence_level=cl,
                     distribution=distribution, **kw)
    elif method == "active":
        if inclusion_probability is None:
            raise InputError("method='active' needs `inclusion_probability`: each run's chance of a label "
                             "under the design that chose them.", field="inclusion_probability")
        pi = _series(inclusion_probability, "inclusion_probability").reindex(pos).to_numpy(dtype=float)
        if np.isnan(pi).any():
            raise InputError(f"`inclusion_probability` has none for run {pos[np.isnan(pi)][0]!r}.",
                             field="inclusion_probability")
        kw = {"decidable": decidable, "judge_decidable": judge_dec} if any_undecidable else {}
        r = active_mean(f, labeled, pi, y, confidence_level=cl, clusters=cl_codes, distribution=distribution, **kw)
    else:
        keep = answered
        L, U = decidable & keep, ~labeled & keep
        r = rogan_gladen(y[L], f[L], f[U], confidence_level=cl, distribution=distribution)
        note = (f"{int((~answered).sum())} judge-abstained runs left out of the apparent rate "
                "(Rogan-Gladen assumes them uninformative)" if (~answered).any() else None)
    if any_undecidable and method != "rogan_gladen":
        note = "; ".join(x for x in (note, "the estimate is the level over the runs where the construct is "
                                     "decidable") if x)
    return r.with_exclusions(counts, note)


def expected_half_width(estimate: LevelEstimate, more_labels: int) -> float:
    """The interval's half width expected after ``more_labels`` further labels.

    For unclustered PPI the variance is ``V_u + V_l`` (``estimate.variance_split``: the
    judge's term over the ``N`` unlabelled runs and the rectifier's over the ``n``
    labelled ones); labelling ``b`` more runs moves them from one side to the other:
    ``V_u N / (N - b) + V_l n / (n + b)``, with the per-run variances held at their
    current estimates.  Without a split (active, clustered, Rogan-Gladen) the whole
    variance is scaled by ``n / (n + b)``, as for a mean of labels.  ``inf`` where the
    interval abstains.

    Examples
    --------
    >>> r = level_estimate({i: float(i % 2) for i in range(200)},
    ...                    {i: float(i % 2 if i % 7 else 1 - i % 2) for i in range(40)})
    >>> expected_half_width(r, 40) < r.half_width
    True
    """
    if isinstance(more_labels, bool) or not isinstance(more_labels, numbers.Integral) or more_labels < 0:
        raise ValueError(f"`more_labels` must be a whole number >= 0; got {more_labels!r}.")
    se = estimate.standard_error
    if isinstance(se, Abstention) or not math.isfinite(estimate.half_width):
        return math.inf
    n, N, b = estimate.n_labeled, estimate.n_unlabeled, int(more_labels)
    if estimate.variance_split is not None:
        if b >= N:
            raise ValueError(f"`more_labels` ({b}) must leave some of the {N} unlabelled runs.")
        v_u, v_l = estimate.variance_split
        var = v_u * N / (N - b) + v_l * n / (n + b)
    else:
        var = float(se) ** 2 * n / (n + b)
    c = critical_value(estimate.confidence_level, estimate.distribution, max(n + b - 1, 1))
    return c * math.sqrt(var)


def absolute_level(
    matrix: ScoreMatrix,
    measure: str,
    labels: Any,
    *,
    method: str = "ppi++",
    inclusion_probability: Any = None,
    clusters: Any = "task",
    confidence_level: float = 0.95,
    distribution: str = LEVEL_DISTRIBUTION,
) -> LevelEstimate:
    """Where you are on ``measure``: its level on the human scale, where seed 002 allows one.

    The judge's scores in ``matrix`` on every run and the held-out human ``labels`` go
    through :func:`level_estimate`; the estimate is stamped with the measure's instrument
    digest and the labelled runs, and :func:`evaltk.check_use` ("absolute_level") must
    accept it: the measure calibrated on a record, its instrument pinned, every labelled
    run among the record's held-out evaluation items and none among its tuning items.
    Otherwise :class:`evaltk.UnsupportedUse` says why, and no level is given.

    Parameters
    ----------
    matrix : ScoreMatrix
    measure : str
    labels : Series or mapping, trace id -> human label (a value in [0, 1] or a word)
    method, inclusion_probability, confidence_level, distribution
        As in :func:`level_estimate`.
    clusters : "task", None, or Series/mapping trace id -> cluster
        ``"task"`` (default) clusters runs of one task when any task has several runs.

    Returns
    -------
    LevelEstimate
    """
    m = normalize_measure(measure)
    if matrix.manifest.status(m).evidence != "calibrated" or not matrix.manifest.instrument(m).pinned:
        check_use("absolute_level", matrix, measure=m)  # raises why, before any estimate is made
    f = matrix.frame
    rows = f[(f["measure"] == m) & (f["tier"] == "automatic")]
    if rows.empty:
        raise InputError(f"the matrix has no automatic {m} scores.", field="measure")
    vals = rows["value"].to_numpy(dtype=object, copy=True)
    cause = rows["cause"].to_numpy(dtype=object)
    for i in np.flatnonzero(pd.notna(cause)):
        vals[i] = Abstention(Cause(cause[i]), "")
    judge = pd.Series(vals, index=pd.Index(rows["trace_id"].to_numpy(), name="trace_id"), dtype=object)
    judge = judge.astype(float) if not pd.notna(cause).any() else judge
    cl = clusters
    if isinstance(clusters, str) and clusters == "task":
        runs = matrix.runs
        task = runs.set_index("trace_id")["task"] if "task" in runs.columns else None
        cl = task if task is not None and task.reindex(judge.index).duplicated().any() else None
    hs = _series(labels, "labels")
    r = level_estimate(judge, hs, measure=m, method=method, inclusion_probability=inclusion_probability,
                       clusters=cl, confidence_level=confidence_level, distribution=distribution)
    r = replace(r, instrument=matrix.manifest.instrument(m).digest, label_items=tuple(hs.index))
    check_use("absolute_level", matrix, measure=m, level=r)
    return r
