"""The tables the notebooks show, computed: tidy frames with stable snake_case columns.

Each function here is what a notebook used to compute in its cells: the per-judge
agreement with humans, the human ceiling per dimension, the promotion check of the best
judge, the confusion counts, each judge's direction of error, JudgeBench's position bias,
the checkpoint gate between two agents.  They return **unrounded** numbers (rounding is
:mod:`evaltk.report`'s, at display: STYLE.md 8).  A statistic that is undefined
is a missing value with its cause in the ``*_cause`` column (and a reason), never 0 and
never NaN without a cause.

The domain knowledge they need is read from where the library declares it: the answer
words and their values from the one vocabulary, :data:`evaltk.values.ANSWER_VALUES` (the
ordinal order of ``x_eff`` is the order of its values,
:func:`evaltk.values.answer_categories`), the level of measurement from
:data:`evaltk.values.MEASURE_LEVELS` (:func:`evaltk.values.measure_level`), the abstain
words from :data:`evaltk.values.ABSTAIN_WORDS` (every ``abstain=`` default), which measures
judges answer from :data:`evaltk.scoring.SCORERS`, the seed's direction-of-error notes from
:data:`evaltk.scoring.DIRECTION_OF_ERROR`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InputError
from ..values import (
    ABSTAIN_WORDS,
    ANSWER_VALUES,
    Threshold,
    UndefinedWarning,
    answer_categories,
    is_abstention,
    measure_level,
)

if TYPE_CHECKING:
    from ..judges import CalibrationNumbers

# --------------------------------------------------------------------------- the vocabulary, read


def _judged_measures() -> list[str]:
    """Measures whose score folds judge / human answers (the ones a judge can be calibrated on)."""
    from ..scoring import SCORERS

    return [m for m, s in SCORERS.items() if s.kind == "answers" and m in ANSWER_VALUES]


def _check_measures(measures: Sequence[str], what: str, field: str = "dimensions") -> list[str]:
    known = _judged_measures()
    ms = [measures] if isinstance(measures, str) else list(measures)
    unknown = sorted(set(ms) - set(known))
    if unknown:
        raise InputError(f"no human labels to {what} {unknown} against; choose among {sorted(known)}.",
                         field=field)
    return ms


def _scale(measure: str) -> str:
    """The direction-of-error scale: ``"ordinal"`` or ``"binary"``."""
    return "ordinal" if measure_level(measure) == "ordinal" else "binary"


def _values(measure: str) -> dict[str, float]:
    return {w: v for w, v in ANSWER_VALUES[measure].items() if v is not None}


def _positive(measure: str) -> str:
    """The answer with the highest value (``yes``): the positive label of a binary measure."""
    return answer_categories(measure)[-1]


def answer_order(measure: str) -> list[str]:
    """The answer words of a judged measure in display order: valued words by value, then
    the abstentions.

    Examples
    --------
    >>> answer_order("x_eff")
    ['lots', 'a_few', 'none', 'cannot_tell']
    """
    _check_measures([measure], "order")
    return [*answer_categories(measure), *(w for w, v in ANSWER_VALUES[measure].items() if v is None)]


# --------------------------------------------------------------------------- small helpers


def _number(x: Any) -> float:
    """A float, or NaN for an abstention or a missing value (the cause goes in its own column)."""
    if x is None or is_abstention(x):
        return math.nan
    return float(x)


def _interval(ci: Any) -> tuple[float, float]:
    if ci is None or is_abstention(ci):
        return math.nan, math.nan
    lo, hi = ci
    return _number(lo), _number(hi)


def _cause(*xs: Any) -> tuple[str | None, str | None]:
    """The cause and reason of the first abstention among ``xs`` (None, None when all are defined)."""
    for x in xs:
        x = getattr(x, "statistic", x)  # a result object abstains through its statistic
        if is_abstention(x):
            return x.cause.value, x.reason
    return None, None


def _item_ids(frame: pd.DataFrame) -> pd.Series:
    """One id per question: the trace, plus ``#step`` for per-step dimensions."""
    step = frame["step"].astype("Int64").astype(str).replace("<NA>", "")
    return frame["trace_id"].astype(str) + step.map(lambda s: f"#{s}" if s else "")


def _human_ratings(labels: pd.DataFrame, measure: str) -> pd.DataFrame:
    hum = labels[labels["measure"] == measure]
    return pd.DataFrame({"item_id": _item_ids(hum), "rater": hum["rater"], "rating": hum["answer"]})


def select_answers(answers: pd.DataFrame, *, judges: Sequence[str] = (), measure: str | None = None) -> pd.DataFrame:
    """The answers of ``judges`` (empty: all) on ``measure`` (None: all), refusing names not present.

    Raises
    ------
    evaltk.errors.InputError
        A judge with no answers (field ``judges``) or a measure with none (field ``measure``).
    """
    a = answers if measure is None else answers[answers["measure"] == measure]
    if measure is not None and a.empty:
        raise InputError(f"the answers have no measure {measure!r}; measures: "
                         f"{sorted(answers['measure'].astype(str).unique())}.", field="measure")
    if judges:
        missing = sorted(set(judges) - set(a["rater"]))
        if missing:
            raise InputError(f"no answers from judge(s) {missing}" + (f" on {measure}" if measure else "") +
                             f"; judges present: {sorted(a['rater'].unique())}.", field="judges")
        a = a[a["rater"].isin(list(judges))]
    return a


# --------------------------------------------------------------------------- calibration


def _every_item_rater(human: pd.DataFrame, measure: str) -> pd.Series:
    """A constant rater with a label on every item: the degenerate (always-majority) baseline's
    partner, so that the baseline covers every double-labelled item."""
    return pd.Series(answer_categories(measure)[0], index=human["item_id"].unique())


def _calibration_numbers(human: pd.DataFrame, judge: pd.Series, measure: str, *, confidence_level: float,
                         n_resamples: int, rng: Any) -> CalibrationNumbers:
    from ..judges import calibration_numbers

    return calibration_numbers(human, judge, level=measure_level(measure), categories=list(answer_categories(measure)),
                               abstain=ABSTAIN_WORDS, confidence_level=confidence_level,
                               n_resamples=n_resamples, rng=rng)


def human_ceiling_table(labels: pd.DataFrame, *, measures: Sequence[str], confidence_level: float = 0.95,
                        n_resamples: int = 2000, rng: Any = 0, baseline: bool = True) -> pd.DataFrame:
    """The human ceiling per dimension: human-human percent agreement on the items two or
    more humans labelled, with its interval, and (``baseline=True``) the always-majority
    rater's agreement on the same items.

    Returns one row per measure: ``measure, level, statistic, ci_low, ci_high,
    interval_method, n_pairable, baseline, statistic_cause, statistic_reason``.  Where no
    item has two human labels the statistic is missing and ``statistic_cause`` says why.
    Undefined bootstrap replicates are counted on the results; their warning is not repeated.
    """
    from ..judges import human_ceiling

    rows = []
    for m in _check_measures(measures, "calibrate"):
        human = _human_ratings(labels, m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedWarning)
            if baseline:  # the calibration numbers carry the same ceiling: computed once
                base = _calibration_numbers(human, _every_item_rater(human, m), m, confidence_level=confidence_level,
                                            n_resamples=n_resamples, rng=rng)
                c = base.ceiling
            else:
                base = None
                c = human_ceiling(human, level=measure_level(m), categories=list(answer_categories(m)),
                                  abstain=ABSTAIN_WORDS, confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=rng)
        lo, hi = _interval(c.confidence_interval)
        cause, reason = _cause(c)
        rows.append({"measure": m, "level": measure_level(m), "statistic": _number(c.statistic),
                     "ci_low": lo, "ci_high": hi, "interval_method": c.interval_method,
                     "n_pairable": int(c.n_pairable),
                     "baseline": math.nan if base is None else _number(base.baseline.statistic),
                     "statistic_cause": cause, "statistic_reason": reason})
    return pd.DataFrame(rows)


def _agreement_row(measure: str, judge: str, nums: CalibrationNumbers) -> dict[str, Any]:
    k = nums.judge.kappa
    lo, hi = _interval(nums.judge.confidence_interval)
    klo, khi = _interval(k.confidence_interval)
    cause, reason = _cause(nums.judge.statistic)
    return {"measure": measure, "judge": judge, "statistic": _number(nums.judge.statistic), "ci_low": lo, "ci_high": hi,
            "kappa": _number(k.statistic), "kappa_low": klo, "kappa_high": khi,
            "ceiling": _number(nums.ceiling.statistic), "baseline": _number(nums.baseline.statistic),
            "n_items": int(nums.judge.n_items), "coverage": _number(nums.judge_coverage),
            "n_judge_abstained": int(nums.n_judge_abstained), "statistic_cause": cause, "statistic_reason": reason}


def _judge_numbers(answers: pd.DataFrame, labels: pd.DataFrame, measure: str, judge: str, **kw: Any
                   ) -> CalibrationNumbers:
    human = _human_ratings(labels, measure)
    g = answers[(answers["measure"] == measure) & (answers["rater"] == judge)]
    return _calibration_numbers(human, pd.Series(g["answer"].to_numpy(), index=_item_ids(g)), measure, **kw)


def judge_agreement_table(answers: pd.DataFrame, labels: pd.DataFrame, *, measures: Sequence[str],
                          confidence_level: float = 0.95, n_resamples: int = 2000, rng: Any = 0) -> pd.DataFrame:
    """Each judge's agreement with the human labels of the double-labelled items, per dimension.

    Returns one row per (measure, judge): ``statistic`` (percent agreement) with ``ci_low,
    ci_high``; Cohen's ``kappa`` (quadratic weights on an ordinal dimension) with ``kappa_low,
    kappa_high``; the human ``ceiling`` and majority ``baseline`` on the judge's items;
    ``n_items``, ``coverage`` (share of the items the judge answered), ``n_judge_abstained``;
    and ``statistic_cause, statistic_reason`` where the agreement is undefined.
    """
    rows = []
    kw = {"confidence_level": confidence_level, "n_resamples": n_resamples, "rng": rng}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)  # undefined replicates are counted on the results
        for m in _check_measures(measures, "calibrate"):
            for j in sorted(answers.loc[answers["measure"] == m, "rater"].unique()):
                rows.append(_agreement_row(m, j, _judge_numbers(answers, labels, m, j, **kw)))
    cols = ["measure", "judge", "statistic", "ci_low", "ci_high", "kappa", "kappa_low", "kappa_high", "ceiling",
            "baseline", "n_items", "coverage", "n_judge_abstained", "statistic_cause", "statistic_reason"]
    return pd.DataFrame(rows, columns=cols)


def promotion_table(answers: pd.DataFrame, labels: pd.DataFrame, agreement: pd.DataFrame, *,
                    thresholds: Mapping[str, float] | None = None, threshold_source: str = "",
                    confidence_level: float = 0.95, n_resamples: int = 2000, rng: Any = 0) -> pd.DataFrame:
    """Seed 002's promotion check (:func:`evaltk.promotion_check`) for the judge with the
    highest agreement on each dimension of ``agreement`` (:func:`judge_agreement_table`).

    A threshold counts as validated only with a ``threshold_source``.  Returns
    ``measure, judge, condition, met, evidence``, one row per condition; a dimension with
    no defined agreement has no row.
    """
    from ..judges import promotion_check

    th_of = thresholds_of(thresholds or {}, threshold_source)
    out = []
    defined = agreement[agreement["statistic"].notna()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        for m in dict.fromkeys(defined["measure"]):
            best = defined[defined["measure"] == m].sort_values("statistic", ascending=False).iloc[0]["judge"]
            th = th_of.get(m)
            nums = _judge_numbers(answers, labels, m, best, confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=rng)
            pc = promotion_check(nums, threshold=th).to_frame()
            pc.insert(0, "judge", best)
            pc.insert(0, "measure", m)
            out.append(pc)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=["measure", "judge", "condition", "met", "evidence"])


def confusion_counts(answers: pd.DataFrame, labels: pd.DataFrame, *, measure: str) -> pd.DataFrame:
    """What each judge answered where the humans agree on an answer (the folded human anchor).

    Returns ``judge, human_answer, judge_answer, n``; the judge's abstentions are a column
    of their own (an abstention, not an error).  Order the axes with :func:`answer_order`.
    """
    from ..judges import anchor_correctness

    c = anchor_correctness(answers, labels, measure=measure, abstain=ABSTAIN_WORDS)
    return c.groupby(["judge", "human_answer", "judge_answer"], as_index=False).size().rename(columns={"size": "n"})


# --------------------------------------------------------------------------- direction of error


def judge_direction_table(answers: pd.DataFrame, labels: pd.DataFrame, *, measures: Sequence[str],
                          confidence_level: float = 0.95) -> pd.DataFrame:
    """Which way each judge leans against the human anchor, per dimension.

    Binary dimensions: signed bias (the judge's positive rate minus the humans'), with
    Newcombe's paired interval; ordinal ones: the mean of judge minus human on the
    measure's value scale (``x_eff``: lots 0, a few 0.5, none 1), with a t interval
    (:func:`evaltk.direction_table`).  Abstentions on either side take the item out and
    are counted.  Returns one row per (judge, dimension) with ``lean, statistic, ci_low,
    ci_high, pvalue, n_pairs, n_excluded, coverage, method`` and the table's other columns.
    """
    from ..judges import anchor_correctness
    from ..stats import direction_table

    ms = _check_measures(measures, "compare")
    frames = []
    for m in ms:
        c = anchor_correctness(answers, labels, measure=m, abstain=ABSTAIN_WORDS)
        frames.append(pd.DataFrame({"dimension": m, "judge": c["judge"], "judge_label": c["judge_answer"],
                                    "human": c["human_answer"]}))
    pairs = pd.concat(frames, ignore_index=True)
    rows = []
    for j, g in pairs.groupby("judge", sort=True):
        t = direction_table(g, judge="judge_label", human="human", scales={m: _scale(m) for m in ms},
                            positive={m: _positive(m) for m in ms if _scale(m) == "binary"},
                            categories={m: _values(m) for m in ms if _scale(m) == "ordinal"},
                            abstain=ABSTAIN_WORDS, confidence_level=confidence_level)
        t.insert(0, "judge", j)
        rows.append(t)
    return pd.concat(rows, ignore_index=True)


def construct_direction_table(directions: pd.DataFrame) -> pd.DataFrame:
    """Seed 002's direction-of-error note for each dimension's *construct*
    (:data:`evaltk.scoring.DIRECTION_OF_ERROR`) beside the lean each judge showed
    (``directions`` from :func:`judge_direction_table`): ``dimension, construct, judges``."""
    from ..scoring import DIRECTION_OF_ERROR

    dims = list(dict.fromkeys(directions["dimension"]))
    return pd.DataFrame({
        "dimension": dims, "construct": [DIRECTION_OF_ERROR[d] for d in dims],
        "judges": [", ".join(f"{r.judge}: {r.lean}" for r in directions[directions["dimension"] == d].itertuples())
                   for d in dims]})


def position_bias_table(judgments: pd.DataFrame, *, confidence_level: float = 0.95) -> pd.DataFrame:
    """JudgeBench position bias per judge: the judge's "first-shown wins" rate minus the
    labels' on the frame each pair was shown in (:func:`judgebench_presented`), ties
    (``A=B``) an abstention.  Returns one row per judge with ``lean, statistic, ci_low,
    ci_high, judge_rate, human_rate, n_pairs, n_judge_abstained, mcnemar_midp``, and
    ``statistic_cause, statistic_reason`` where the bias is undefined.
    """
    from ..stats import signed_bias
    from ._sources import judgebench_presented

    shown = judgebench_presented(judgments)
    rows = []
    for j, g in shown.groupby("judge", sort=True):
        r = signed_bias(g["decision"].tolist(), g["label_presented"].tolist(), positive="A>B", negative="B>A",
                        abstain=["A=B"], confidence_level=confidence_level)
        f = r.to_frame().rename(columns={"cause": "statistic_cause", "reason": "statistic_reason"})
        f.insert(0, "judge", j)
        rows.append(f)
    out = pd.concat(rows, ignore_index=True)
    out["dimension"] = "first position wins"
    return out


# --------------------------------------------------------------------------- published and real data


def published_precision_table(annotations: Any, leaderboard: Any, *, confidence_level: float = 0.95) -> Any:
    """Intervals on AgentRewardBench's published judge precision (:func:`evaltk.published_precision_recall`).

    The counts are reconstructed from precision, recall and the number of trajectories
    the experts judged successful (the first annotation of each trajectory; docs/judges.md).
    Returns the :class:`evaltk.SelectionResult` whose ``table`` has ``judge, statistic,
    ci_low, ci_high`` (the precision and its Wilson interval) and ``n_successful,
    n_trajectories``; ``orderings`` says which pairwise orderings the intervals support.
    """
    from dataclasses import replace

    from ..data import load_agentrewardbench
    from ..judges import published_precision_recall

    ratings = load_agentrewardbench(annotations)
    success = ratings[ratings["question"] == "success"].drop_duplicates("item_id")
    n_pos = int((success["rating"] == "Successful").sum())
    board = pd.read_csv(leaderboard)
    pub = published_precision_recall(board, n_pos, judge="Judge", precision="Overall", recall="Recall", f1="F1",
                                     confidence_level=confidence_level)
    t = pub.table.rename(columns={"precision": "statistic", "precision_ci_low": "ci_low",
                                  "precision_ci_high": "ci_high"})
    t["n_successful"] = n_pos
    t["n_trajectories"] = success["item_id"].nunique()
    return replace(pub, table=t)


def judge_selection(answers: pd.DataFrame, labels: pd.DataFrame, canaries: pd.DataFrame, *, measure: str,
                    confidence_level: float = 0.95, n_resamples: int = 2000, rng: Any = 0) -> Any:
    """Judge selection on ``measure``: each judge against the folded human anchor
    (:func:`evaltk.anchor_correctness`), its cost and latency (:func:`evaltk.judge_costs`),
    the canaries it passed (:func:`evaltk.canary_hits`), swept by :func:`evaltk.select_judges`.
    Returns :class:`evaltk.SelectionResult`."""
    from ..judges import anchor_correctness, canary_hits, judge_costs, select_judges

    a = answers[answers["measure"] == measure]
    correct = anchor_correctness(a, labels, measure=measure, abstain=ABSTAIN_WORDS)
    return select_judges(correct, judge_costs(a), canaries=canary_hits(a, canaries), confidence_level=confidence_level,
                         n_resamples=n_resamples, rng=rng)


def judgebench_selection(judgments: pd.DataFrame, *, judge_costs: Mapping[str, float] | None = None,
                         confidence_level: float = 0.95, n_resamples: int = 2000, rng: Any = 0) -> Any:
    """Judge selection on JudgeBench's raw judgments, folded per pair by JudgeBench's own rule
    (:func:`evaltk.judgebench_pair_outcomes`); the judge is the model (``judge_name`` is only the
    prompt family).  ``judge_costs`` (judge -> cost per pair) draws a frontier; every judge
    needs a price.  Returns :class:`evaltk.SelectionResult`.
    """
    from ..data import judgebench_pair_outcomes
    from ..judges import select_judges

    outcomes = judgebench_pair_outcomes(judgments)
    correct = outcomes.rename(columns={"judge_model": "judge"})[["judge", "pair_id", "correct"]]
    costs = None
    if judge_costs:
        missing = sorted(set(correct["judge"]) - set(judge_costs))
        if missing:
            raise InputError(f"`judge_costs` has no price for {missing}.", field="judge_costs")
        costs = pd.DataFrame({"judge": list(judge_costs), "cost_per_item": list(judge_costs.values())})
    return select_judges(correct, costs, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng,
                         item=["pair_id"])


# --------------------------------------------------------------------------- the checkpoint gate


def checkpoint_gate(demo: Any, *, baseline_agent: str, candidate_agent: str, confidence_level: float = 0.95,
                    n_resamples: int = 2000, rng: Any = 0) -> Any:
    """The checkpoint gate (:func:`evaltk.gate`) of ``candidate_agent``'s runs against
    ``baseline_agent``'s, each scored by :func:`evaltk.score_traces` on its own runs.

    Raises
    ------
    evaltk.errors.InputError
        When either agent has no runs (field ``baseline_agent`` / ``candidate_agent``).
    evaltk.GateRefused
        When the gate's hard checks fail.
    """
    from ..judges import gate
    from ..scoring import score_traces

    agent_of = {t["trace_id"]: t.get("agent") for t in demo.traces}  # a trace without an agent is in neither
    present = sorted({a for a in agent_of.values() if a})
    for field, a in (("baseline_agent", baseline_agent), ("candidate_agent", candidate_agent)):
        if a not in present:
            raise InputError(f"no runs of `{baseline_agent}` and `{candidate_agent}` in these traces "
                             f"(agents present: {', '.join(present) or 'none'}): no checkpoint gate.", field=field)
    matrices = []
    for a in (baseline_agent, candidate_agent):
        ids = {k for k, v in agent_of.items() if v == a}
        matrices.append(score_traces([t for t in demo.traces if t["trace_id"] in ids],
                                     demo.answers[demo.answers["trace_id"].isin(ids)],
                                     demo.labels[demo.labels["trace_id"].isin(ids)]))
    return gate(*matrices, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)


# --------------------------------------------------------------------------- thresholds and verdicts


def thresholds_of(thresholds: Mapping[str, float], threshold_source: str = "") -> dict[str, Threshold]:
    """A :class:`evaltk.Threshold` per measure from a report parameter: validated only when
    ``threshold_source`` names the decision-cost record it comes from.

    Raises
    ------
    evaltk.errors.InputError
        A name that is not a measure (field ``thresholds``).
    """
    from ..scoring import MEASURES

    unknown = sorted(set(thresholds) - set(MEASURES))
    if unknown:
        raise InputError(f"no dimension {unknown}; thresholds apply to {', '.join(MEASURES)}.", field="thresholds")
    return {m: Threshold(v, validated=bool(threshold_source), source=threshold_source or "report parameter")
            for m, v in thresholds.items()}


def verdict_table(scores: pd.DataFrame, thresholds: Mapping[str, Threshold]) -> pd.DataFrame:
    """How many runs each verdict (:func:`evaltk.verdicts`) covers per measure and reason:
    ``measure, verdict, verdict_reason, runs``.  A value is not a verdict: without a
    validated threshold every verdict abstains, with that reason."""
    from ..values import verdicts

    v = verdicts(scores[scores["measure"].isin(list(thresholds))].astype({"measure": str}), dict(thresholds))
    return v.groupby(["measure", "verdict", "verdict_reason"], observed=True).size().rename("runs").reset_index()


# --------------------------------------------------------------------------- where you are


def _no_level(measure: str, reason: str | None) -> dict[str, Any]:
    """A row of :func:`level_table` without a level (``reason`` says why)."""
    return {"measure": measure, "level": math.nan, "ci_low": math.nan, "ci_high": math.nan, "method": None,
            "n_labels": 0, "n_runs": 0, "human_only_low": math.nan, "human_only_high": math.nan,
            "effective_labels": math.nan, "reason": reason}


def level_table(matrix: Any, labels: pd.DataFrame, *, measures: Sequence[str], confidence_level: float = 0.95
                ) -> pd.DataFrame:
    """"Where you are" per measure: the level on the human scale with its interval where
    seed 002 allows one (:func:`evaltk.absolute_level`: calibrated on a record, a pinned
    instrument, held-out labels), and the reason wherever it does not.

    Columns ``measure, level, ci_low, ci_high, method, n_labels, n_runs, human_only_low,
    human_only_high, effective_labels, reason``; ``level`` is missing exactly where
    ``reason`` is set."""
    from ..judges import absolute_level
    from ..scoring import UnsupportedUse

    rows = []
    for m in measures:
        row = _no_level(m, None)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedWarning)
                r = absolute_level(matrix, m, labels, confidence_level=confidence_level)
        except (UnsupportedUse, InputError) as e:
            row["reason"] = str(e)
        else:
            lo, hi = _interval(r.confidence_interval)
            hlo, hhi = _interval(r.human_only_interval)
            row.update(level=_number(r.statistic), ci_low=lo, ci_high=hi, method=r.method, n_labels=r.n_labeled,
                       n_runs=r.n_labeled + r.n_unlabeled, human_only_low=hlo, human_only_high=hhi,
                       effective_labels=r.effective_labels,
                       reason=None if not math.isnan(lo) else _cause(r.confidence_interval)[1])
        rows.append(row)
    return pd.DataFrame(rows)
