"""Active labeling: spend scarce human labels where they move an estimate.

Seed 002, "Active labeling": prioritise by uncertainty and influence; expansion is gated
on inter-annotator agreement, since labeling faster than annotators agree buys noise.

The estimate here is a judge's accuracy against human labels.  Items are put in strata by
**uncertainty** (panel disagreement and the judge's confidence, :func:`uncertainty_strata`);
each new label goes to the stratum where it is expected to narrow the interval most
(**influence**: the drop in the stratified estimator's variance,
``W_h^2 p_h (1 - p_h) (1/n_h - 1/(n_h + 1))`` with ``p_h`` a Jeffreys (Beta(1/2, 1/2))-smoothed estimate),
and items are drawn uniformly *within* a stratum, so the stratified estimate stays
unbiased (a greedy Neyman allocation, Cochran 1977, ch. 5).  Labeling the most uncertain
items first without weights would bias the estimate toward the hard items; this does not.

:func:`expansion_gate` releases a new batch only when human-human agreement on the overlap
sample clears a threshold at its lower interval bound; otherwise the answer is "fix the
guidelines first", with the numbers.

References
----------
Cochran, W. G. (1977). *Sampling Techniques*, 3rd ed. Wiley, ch. 5 (stratified random
sampling, optimum allocation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import (
    check_choice,
    check_columns,
    check_confidence_level,
    check_nonempty,
    check_rng,
    undefined,
)
from ..errors import InputError
from ..stats import ConfidenceInterval, LevelEstimate, ResultShape, z_value
from ..values import ABSTAIN_WORDS, Abstention, abstain_labels
from ._level import expected_half_width


def uncertainty_strata(items: pd.DataFrame, *, disagreement: str = "disagreement",
                       confidence: str | None = "confidence", conflict: str | None = None,
                       n_strata: int = 4) -> pd.Series:
    """Stratum of each item by uncertainty: 0 is the most certain.

    The uncertainty score is ``disagreement + (1 - confidence)`` (either part may be
    missing); items are cut into ``n_strata`` quantile bins of it (ties kept together).
    With ``conflict`` (a boolean column: the judge's answer contradicts the rest of the
    panel), conflicting items form their own strata above the others: that is where a
    judge's errors concentrate.
    """
    check_nonempty(items, "items", needs="there are no items to put in strata")
    if n_strata < 1:
        raise ValueError(f"`n_strata` must be >= 1; got {n_strata}.")
    u = np.zeros(len(items))
    if disagreement in items.columns:
        u += items[disagreement].fillna(1.0).to_numpy(float)
    if confidence is not None and confidence in items.columns:
        u += 1.0 - items[confidence].fillna(0.0).to_numpy(float)

    def bins(x: np.ndarray, k: int) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0, int)
        r = pd.Series(x).rank(method="dense")
        return np.asarray(pd.qcut(r, q=min(k, int(r.nunique())), labels=False, duplicates="drop"), dtype=int)

    if conflict is None:
        return pd.Series(bins(u, n_strata), index=items.index, name="stratum")
    if n_strata < 2:
        raise ValueError(f"with `conflict`, `n_strata` must be >= 2 (agreeing and conflicting items); got {n_strata}.")
    c = items[conflict].fillna(True).to_numpy(bool)
    out = np.zeros(len(items), int)
    k_agree = max(1, n_strata - max(1, n_strata // 4))
    out[~c] = bins(u[~c], k_agree)
    out[c] = k_agree + bins(u[c], n_strata - k_agree)
    return pd.Series(out, index=items.index, name="stratum")


@dataclass(frozen=True)
class StratifiedEstimate(ResultShape):
    """A stratified estimate of a proportion with its normal-approximation interval.

    ``statistic`` is a float or an :class:`~evaltk.values.Abstention` (a stratum with
    no label yet); ``confidence_interval`` a :class:`~evaltk.stats.ConfidenceInterval`
    or the same abstention.
    """

    statistic: float | Abstention
    standard_error: float | Abstention
    confidence_interval: ConfidenceInterval | Abstention
    n_labels: int
    per_stratum: pd.DataFrame

    @property
    def half_width(self) -> float:
        ci = self.confidence_interval
        return float("inf") if isinstance(ci, Abstention) else (ci.high - ci.low) / 2

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: ``statistic, cause, reason, ci_low, ci_high, ci_cause, ci_reason``, then
        ``standard_error, n_labels, n_strata``."""
        se = self.standard_error
        row = {**self.summary_row(), "standard_error": float("nan") if isinstance(se, Abstention) else se,
               "n_labels": self.n_labels, "n_strata": len(self.per_stratum)}
        return pd.DataFrame([row])


def _stratified_variance(w: np.ndarray, n: np.ndarray, successes: np.ndarray, size: np.ndarray) -> float:
    """``sum_h W_h^2 (1 - n_h / N_h) p_h (1 - p_h) / n_h``: the stratified estimate's variance.

    ``p_h`` is Jeffreys-smoothed (``(s_h + 0.5) / (n_h + 1)``), so a stratum at 0 or 1
    never claims zero variance from a sample; the finite-population correction (Cochran
    1977, eq. 5.7) leaves none to a stratum labelled in full.  The one formula
    :func:`stratified_accuracy` reports and :func:`propose_batch` plans with.
    """
    p_s = (successes + 0.5) / (n + 1)
    fpc = np.clip(1.0 - n / size, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(n > 0, w ** 2 * fpc * p_s * (1 - p_s) / np.where(n > 0, n, 1), np.inf)
    return float(terms.sum())


def stratified_accuracy(pool: pd.DataFrame, labeled: pd.DataFrame, *, item: str = "item",
                        stratum: str = "stratum", correct: str = "correct",
                        confidence_level: float = 0.95) -> StratifiedEstimate:
    """Stratified estimate of accuracy: ``sum_h W_h p_h`` with ``W_h`` the stratum's pool share.

    A stratum with no label yet leaves the estimate undefined (an abstention): its weight
    would otherwise be silently dropped from the denominator.  ``correct`` must be binary
    (True/False or 0/1; missing = undecided, counted apart); anything else raises
    :class:`~evaltk.errors.InputError`.  The variance carries the finite-population
    correction ``1 - n_h / N_h`` (items are drawn from the pool without replacement), so
    a full census has standard error 0 and its interval is the estimate itself.

    References
    ----------
    Cochran (1977), ch. 5, eqs. 5.6-5.7.
    """
    cl = check_confidence_level(confidence_level)
    check_columns(pool, (item, stratum), name="pool")
    check_columns(labeled, (item, correct), name="labeled")
    check_nonempty(pool, "pool", needs="a stratified estimate needs the pool its strata weigh")
    check_nonempty(labeled, "labeled", needs="label at least one item per stratum first (see `propose_batch`)")
    W = pool.groupby(stratum).size() / len(pool)
    if labeled[item].duplicated().any():
        raise InputError(f"`labeled` has item {labeled.loc[labeled[item].duplicated(), item].iloc[0]!r} twice; "
                         "fold repeated labels first (one label per item keeps the estimator unbiased).",
                         field=item)
    lab = labeled.merge(pool[[item, stratum]], on=item, how="left", suffixes=("_given", ""))
    if lab[stratum].isna().any():
        stray = lab.loc[lab[stratum].isna(), item].tolist()
        raise InputError(f"`labeled` has {len(stray)} item(s) that are not in `pool`, the first {stray[0]!r}; "
                         "every labelled item must come from the pool its stratum weight is taken from.",
                         field=item)
    n_unanswered = int(lab[correct].isna().sum())
    lab = lab[lab[correct].notna()]  # a label that could not decide is not a draw of p_h
    _check_binary(lab, item, correct)
    g = lab.assign(**{correct: lab[correct].astype(float)}).groupby(stratum)[correct]
    per = pd.DataFrame({"weight": W, "size": pool.groupby(stratum).size(), "n": g.size(),
                        "p": g.mean()}).fillna({"n": 0})
    per["n"] = per["n"].astype(int)
    if (per["n"] == 0).any():
        missing = per.index[per["n"] == 0].tolist()
        a = undefined(f"strata {missing} have no label yet", what="the stratified accuracy")
        per = per.reset_index(names=stratum)
        per.attrs["n_unanswered_labels"] = n_unanswered
        return StratifiedEstimate(a, a, a, int(per["n"].sum()), per)
    est = float((per["weight"] * per["p"].astype(float)).sum())
    var = _stratified_variance(per["weight"].to_numpy(float), per["n"].to_numpy(float),
                               per["p"].astype(float).to_numpy() * per["n"].to_numpy(float),
                               per["size"].to_numpy(float))
    se = var ** 0.5
    z = z_value(cl)
    ci = ConfidenceInterval(max(0.0, est - z * se), min(1.0, est + z * se))
    per = per.reset_index(names=stratum)
    per.attrs["n_unanswered_labels"] = n_unanswered
    return StratifiedEstimate(est, se, ci, int(per["n"].sum()), per)


def _check_binary(lab: pd.DataFrame, item: str, correct: str) -> None:
    """``correct`` is a 0/1 outcome (bool or 0/1); anything else is refused, naming the item."""
    vals = lab[correct]
    ok = vals.map(lambda v: isinstance(v, (bool, np.bool_)) or (
        isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1)))
    if not bool(ok.all()):
        i = vals.index[~ok.to_numpy()][0]
        raise InputError(f"`{correct}` must be a binary outcome (True/False or 0/1); item "
                         f"{lab.loc[i, item]!r} has {vals.loc[i]!r}. Accuracy is a share of correct labels: "
                         "map graded or text outcomes to 0/1 first.", record=lab.loc[i, item], field=correct)


class ExpansionRefused(ValueError):
    """Labeling may not expand: no agreement gate was given, or it did not release.
    ``decision`` is the :class:`ExpansionDecision` (None when none was given)."""

    def __init__(self, message: str, decision: ExpansionDecision | None = None) -> None:
        super().__init__(message)
        self.decision = decision


def propose_batch(pool: pd.DataFrame, labeled: pd.DataFrame | None = None, *,
                  gate: ExpansionDecision | None = None, batch_size: int = 20,
                  item: str = "item", stratum: str = "stratum", correct: str = "correct",
                  rng: Any = None, target_half_width: float | None = None,
                  level: LevelEstimate | None = None, confidence_level: float = 0.95) -> pd.DataFrame:
    """The next items to send to human labelers, once agreement releases the expansion.

    Seed 002, "Active labeling": "Expansion is gated on inter-annotator agreement, since
    labeling faster than annotators agree buys noise."  The first batch (nothing
    labelled yet) is where agreement is measured: double-label it.  Every later batch is
    an expansion and needs ``gate``, the :func:`expansion_gate` decision on the
    double-labelled overlap; without it, or when it does not release, this raises
    :class:`ExpansionRefused` (with the gate's message) and proposes nothing.

    Each label of the batch goes, greedily, to the stratum whose expected variance
    reduction is largest; every stratum gets at least two labels before any gets more,
    so no weight is left without evidence.  A label that could not decide (``correct``
    missing) is not a draw of the stratum's accuracy and does not count toward its
    labelled n (its item is not proposed again).  Items are drawn uniformly within a
    stratum.

    Returns the chosen rows of ``pool`` with a ``priority`` (order of choice), the
    ``expected_variance_reduction`` that chose them and the ``expected_half_width`` of the
    interval once the labels up to that row are in: the stratified accuracy's
    (:func:`stratified_accuracy`'s formula at the planned counts, each new label at its
    stratum's current rate), or, with ``level``, the level estimate's
    (:func:`evaltk.expected_half_width`).  ``attrs`` carries ``half_width_now``,
    ``expected_half_width`` (after the whole batch), ``target_half_width`` and ``stopped``.

    With ``target_half_width`` labelling stops when the width is reached: the batch ends
    at the first label whose expected half width is within the target, and when the
    current interval already is, no item is proposed (``stopped`` says so).
    """
    check_nonempty(pool, "pool", needs="there are no items to propose for labelling")
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be >= 1; got {batch_size}.")
    if gate is not None and not isinstance(gate, ExpansionDecision):
        raise TypeError(f"`gate` must be the ExpansionDecision of `expansion_gate`; got {type(gate).__name__}.")
    expanding = labeled is not None and not labeled.empty
    if gate is None and expanding:
        raise ExpansionRefused("expansion is gated on inter-annotator agreement (seed 002): pass "
                               "`gate=expansion_gate(first, second)` on the double-labelled overlap sample")
    if gate is not None and not gate.release:
        raise ExpansionRefused(f"no new batch: {gate.message}", gate)
    gen = check_rng(rng)
    cl = check_confidence_level(confidence_level)
    if target_half_width is not None and not (isinstance(target_half_width, (int, float))
                                              and not isinstance(target_half_width, bool) and target_half_width > 0):
        raise ValueError(f"`target_half_width` must be a number > 0; got {target_half_width!r}.")
    if level is not None and not isinstance(level, LevelEstimate):
        raise TypeError(f"`level` must be a LevelEstimate (evaltk.level_estimate); got {type(level).__name__}.")
    done = set() if labeled is None or labeled.empty else set(labeled[item])
    avail = pool[~pool[item].isin(done)]
    empty = avail.iloc[:0].assign(priority=pd.Series(dtype=int), expected_variance_reduction=pd.Series(dtype=float),
                                  expected_half_width=pd.Series(dtype=float))
    if avail.empty:
        return _planned(empty, math.nan, math.nan, target_half_width, "every item of the pool is labelled")
    W = (pool.groupby(stratum).size() / len(pool)).to_dict()
    size = pool.groupby(stratum).size().to_dict()
    n = {h: 0 for h in W}
    s = {h: 0.0 for h in W}
    h: Any
    if labeled is not None and not labeled.empty:
        lab = labeled.merge(pool[[item, stratum]], on=item, how="left", suffixes=("_given", ""))
        lab = lab[lab[correct].notna()]  # an undecided label is not a draw of p_h
        for h, grp in lab.groupby(stratum):
            n[h] = len(grp)
            s[h] = float(grp[correct].astype(float).sum())
    left = avail.groupby(stratum).size().to_dict()
    z = z_value(cl)
    hs = list(W)

    def planned_half_width(k: int) -> float:  # the interval's half width with k more labels
        if level is not None:
            return expected_half_width(level, k)
        var = _stratified_variance(np.array([W[h] for h in hs]), np.array([n[h] for h in hs], float),
                                   np.array([s[h] for h in hs]), np.array([size[h] for h in hs], float))
        return z * math.sqrt(var)

    now = planned_half_width(0)
    if target_half_width is not None and now <= target_half_width:
        return _planned(empty, now, now, target_half_width,
                        f"the interval's half width {now:.4g} is within the target {target_half_width:g}: "
                        "labelling can stop")
    picks: list[tuple[Any, float]] = []
    widths: list[float] = []
    n0, s0 = dict(n), dict(s)
    for _ in range(min(batch_size, len(avail))):
        best, best_gain = None, -1.0
        for h, w in W.items():
            if left.get(h, 0) == 0:
                continue
            if n[h] < 2:
                gain = float("inf")
            else:
                p = (s[h] + 0.5) / (n[h] + 1)
                gain = w * w * p * (1 - p) * (1 / n[h] - 1 / (n[h] + 1))
            if gain > best_gain:
                best, best_gain = h, gain
        picks.append((best, best_gain))
        n[best] += 1
        s[best] += (s[best] + 0.5) / n[best]  # expected outcome; the real one arrives with the label
        left[best] -= 1
        widths.append(planned_half_width(len(picks)))
        if target_half_width is not None and widths[-1] <= target_half_width:
            break  # the width is reached: the rest of the batch would buy nothing asked for
    rows = []
    for h in dict.fromkeys(h for h, _ in picks):
        k = sum(1 for x, _ in picks if x == h)
        cand = avail[avail[stratum] == h]
        rows.append(cand.iloc[gen.choice(len(cand), size=k, replace=False)])
    out = pd.concat(rows)
    order = {h: i for i, (h, _) in enumerate(picks)}
    gains: dict[Any, float] = {}
    for h, g in picks:
        gains.setdefault(h, g)
    out = out.assign(expected_variance_reduction=out[stratum].map(gains))
    out = out.sort_values(stratum, key=lambda c: c.map(order), kind="stable")
    n.update(n0)  # replay the plan in the order the rows are returned: the width after each row
    s.update(s0)
    after: list[Any] = []
    for h in out[stratum]:
        n[h] += 1
        s[h] += (s[h] + 0.5) / n[h]
        after.append(planned_half_width(len(after) + 1))
    widths = after
    out = out.assign(priority=np.arange(len(out)), expected_half_width=widths).reset_index(drop=True)
    reached = target_half_width is not None and widths[-1] <= target_half_width
    return _planned(out, now, widths[-1], target_half_width,
                    f"the target half width {target_half_width:g} is reached after {len(out)} label(s)"
                    if reached else None)


def _planned(out: pd.DataFrame, now: float, after: float, target: float | None, stopped: str | None) -> pd.DataFrame:
    out.attrs.update({"half_width_now": now, "expected_half_width": after, "target_half_width": target,
                      "stopped": stopped})
    return out


@dataclass(frozen=True)
class ExpansionDecision(ResultShape):
    """Whether to release a new labeling batch, and why.

    ``statistic`` is the agreement value on the overlap sample (a float or an
    :class:`~evaltk.values.Abstention`), ``statistic_name`` which coefficient it is
    (``"cohen_kappa"``, ...), ``confidence_interval`` its interval or an abstention.
    """

    release: bool
    statistic: float | Abstention
    statistic_name: str
    confidence_interval: ConfidenceInterval | Abstention
    threshold: float
    n_items: int
    message: str
    n_one_sided: int = 0  # items one annotator answered and the other abstained on
    one_sided: str = "disagree"

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: ``statistic, cause, reason, ci_low, ci_high, ci_cause, ci_reason``, then
        ``statistic_name, release, threshold, n_items, n_one_sided, one_sided, message``."""
        row = {**self.summary_row(), "statistic_name": self.statistic_name, "release": self.release,
               "threshold": self.threshold, "n_items": self.n_items, "n_one_sided": self.n_one_sided,
               "one_sided": self.one_sided, "message": self.message}
        return pd.DataFrame([row])


#: The category a one-sided abstention becomes when it counts as a disagreement.
ONE_SIDED_ABSTENTION = "(abstained)"


def expansion_gate(first: Sequence[Any], second: Sequence[Any], *, threshold: float = 0.6,
                   statistic: str = "cohen_kappa", confidence_level: float = 0.95,
                   abstain: Sequence[Any] = ABSTAIN_WORDS, min_items: int = 30,
                   one_sided: str = "disagree") -> ExpansionDecision:
    """Release the next batch only if human-human agreement clears ``threshold`` at its lower bound.

    ``first`` and ``second`` are the two annotators' labels on the overlap sample (same
    items, same order).  Items both annotators abstained on leave the comparison.  An
    item only one of them abstained on is, by default (``one_sided="disagree"``), a
    disagreement: the guidelines let one person answer where the other could not, and
    dropping such items would let a vague guideline look consistent.  The abstention
    then counts as its own category (:data:`ONE_SIDED_ABSTENTION`).
    ``one_sided="drop"`` leaves them out instead (counted in the message).  Fewer than
    ``min_items`` compared items never release.  ``statistic`` is ``"cohen_kappa"``,
    ``"gwet_ac1"`` or ``"percent_agreement"``.  ``abstain`` (default
    :data:`evaltk.values.ABSTAIN_WORDS`: "cannot_tell", "Unsure", ...; ``abstain=()`` for
    none) names the labels meaning "the rater declined".

    Examples
    --------
    >>> a = ["yes", "no"] * 20
    >>> b = ["yes", "no"] * 15 + ["cannot_tell", "no"] * 5
    >>> d = expansion_gate(a, b, statistic="percent_agreement", threshold=0.8)
    >>> d.n_one_sided, d.release
    (5, False)
    >>> expansion_gate(a, b, statistic="percent_agreement", threshold=0.8, one_sided="drop").release
    True
    """
    from ..stats import cohen_kappa, gwet_ac1, percent_agreement

    fns = {"cohen_kappa": cohen_kappa, "gwet_ac1": gwet_ac1, "percent_agreement": percent_agreement}
    statistic = check_choice("statistic", statistic, tuple(fns))
    one_sided = check_choice("one_sided", one_sided, ("disagree", "drop"))
    if len(first) != len(second):
        raise InputError(f"`first` and `second` must label the same items (same length); got {len(first)} "
                         f"and {len(second)}.", field="second")
    check_nonempty(first, "first", needs="the gate needs a double-labelled overlap sample")
    ab = {str(x) for x in abstain_labels(abstain)}
    f_ab = np.array([str(x) in ab for x in first], bool)
    s_ab = np.array([str(x) in ab for x in second], bool)
    n_one_sided = int((f_ab ^ s_ab).sum())
    x, y = list(first), list(second)
    if one_sided == "disagree" and n_one_sided:
        keep = ~(f_ab & s_ab)  # both abstained: no comparison
        x = [ONE_SIDED_ABSTENTION if a else v for v, a, k in zip(first, f_ab, keep, strict=True) if k]
        y = [ONE_SIDED_ABSTENTION if a else v for v, a, k in zip(second, s_ab, keep, strict=True) if k]
    res = fns[statistic](x, y, abstain=ab, confidence_level=confidence_level)
    ci = res.confidence_interval
    est = res.statistic
    extra: dict[str, Any] = {"n_one_sided": n_one_sided, "one_sided": one_sided}
    dropped = len(first) - res.n_units_pairable
    sided = (f"; {n_one_sided} one-sided abstention(s) counted as disagreement" if one_sided == "disagree"
             and n_one_sided else f"; {n_one_sided} one-sided abstention(s) left out" if n_one_sided else "")
    if res.n_units_pairable < min_items:
        return ExpansionDecision(False, est, statistic, ci, threshold, len(first),
                                 f"fix the guidelines first: only {res.n_units_pairable} items could be compared "
                                 f"({dropped} dropped as abstentions or missing{sided}); at least "
                                 f"{min_items} are needed before agreement can release a batch", **extra)
    if isinstance(est, Abstention):
        return ExpansionDecision(False, est, statistic, ci, threshold, len(first),
                                 f"fix the guidelines first: {statistic} on the overlap sample is undefined ({est})",
                                 **extra)
    if isinstance(ci, Abstention) or not ci[0] < ci[1]:
        # perfect agreement: the SE is 0 and the interval abstains; a zero-width interval never releases
        why = ci.reason if isinstance(ci, Abstention) else f"[{ci[0]:.3f}, {ci[1]:.3f}] has zero width"
        hint = ("; percent_agreement's Wilson interval is defined there" if statistic != "percent_agreement"
                else "")
        return ExpansionDecision(False, est, statistic, ci, threshold, len(first),
                                 f"hold: {statistic} {est:.3f} on {res.n_units_pairable} double-labelled items has "
                                 f"no interval to clear {threshold:g} with ({why}){hint}{sided}", **extra)
    lo = ci[0]
    if lo >= threshold:
        msg = (f"release: {statistic} {est:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] on {res.n_units_pairable} "
               f"double-labelled items clears {threshold:g} at its lower bound{sided}")
        return ExpansionDecision(True, est, statistic, ci, threshold, len(first), msg, **extra)
    msg = (f"fix the guidelines first: {statistic} {est:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] on "
           f"{res.n_units_pairable} double-labelled items; the lower bound {lo:.3f} is below {threshold:g}, "
           f"so more labels now would buy noise{sided}")
    return ExpansionDecision(False, est, statistic, ci, threshold, len(first), msg, **extra)
