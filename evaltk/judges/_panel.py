"""Panel fold: several judges' answers to one question become one verdict with a confidence.

Seed 002, "Panel fold": disagreement feeds the review queue, not the score; a missing
cell is a recorded skip, never an assumed agreement.  The fold rule is declared and
recorded with the result (:class:`evaltk.scoring.FoldRule`), never hard-coded.  The fold
itself has one home, :func:`evaltk.scoring.fold_votes`, which scoring uses too: the panel
and the score matrix give the same verdict on the same answers.  What only a declared
panel knows is added here: under ``unanimity`` a member's skip abstains.

The same fold applies to repeated trials of one judge (put the trial in the ``rater``
column).  JudgeBench's pairwise fold of two orderings against a label is
:func:`fold_pairwise_trials`.

:func:`review_queue` ranks traces for human review with the seed's hinge of low mean
confidence, panel disagreement and conflict against the human vote y(t).  It changes who
looks at a run, never what it scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import _columns
from .._display import HtmlTable
from .._validation import as_frame, check_nonempty
from ..scoring import FoldRule, fold_votes
from ..values import CAUSES


@dataclass(frozen=True)
class PanelResult(HtmlTable):
    """One folded verdict per item, the skips, and the rule that produced them.

    ``verdicts`` columns: the item keys, ``verdict`` (the winning answer, or missing),
    ``cause`` (set exactly where ``verdict`` is missing), ``reason``, ``confidence`` (share
    of the whole panel's vote weight behind the verdict: a member that did not answer is
    weight not behind it), ``agreement`` (share of the panel giving the modal answer),
    ``disagreement`` (share of the panel that answered otherwise), ``n_panel``,
    ``n_answered``, ``n_skipped``, ``n_cannot_tell``.  Agreement, disagreement and the
    skipped share ``n_skipped / n_panel`` add up to 1: one answer from a three-judge panel
    reports confidence and agreement 1/3 with ``n_answered`` 1, never a full panel's 1.0.
    """

    verdicts: pd.DataFrame
    skips: pd.DataFrame
    rule: FoldRule
    panel: tuple[str, ...]
    keys: tuple[str, ...] = field(default=("trace_id", "measure", "step"))

    def to_frame(self) -> pd.DataFrame:
        return self.verdicts.copy()


#: The reason of each fold status (scoring's statuses), plain and under unanimity.
_FOLD_REASONS = {
    False: {0: "", 1: "no answer", 2: "tie between raters", 3: "cannot-tell majority",
            4: "no rater with positive weight answered"},
    True: {0: "", 1: "no answer", 2: "raters disagree (unanimity rule)", 3: "cannot-tell majority",
           4: "no rater with positive weight answered"},
}


def _keys_present(df: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    return [k for k in keys if k in df.columns]


def fold_panel(answers: pd.DataFrame, *, rule: str | FoldRule = "majority",
               weights: Mapping[str, float] | None = None, panel: Sequence[str] | None = None,
               keys: Sequence[str] = ("trace_id", "measure", "step"), rater: str = "rater",
               answer: str = "answer", confidence: str | None = None) -> PanelResult:
    """Fold a panel of raters into one verdict per item.

    Parameters
    ----------
    answers : DataFrame
        Long table, one row per (item, rater).  Duplicate (item, rater) rows are refused.
    rule : str or FoldRule
        ``"majority"`` (default), ``"weighted"`` or ``"unanimity"``.
    weights : mapping, optional
        ``{rater: weight}`` for ``"weighted"``.
    panel : sequence of str, optional
        The raters expected on every item (default: every rater named on a row, an empty
        answer included).  A panel member with no answer on an item (no row, or an empty
        answer) is a recorded skip (``skips``), never an agreement: it stays in ``n_panel``,
        leaves unanimity without a unanimous verdict, and lowers the confidence.
    keys : sequence of str
        Columns identifying an item (those present are used; ``step`` may be missing).
    confidence : str, optional
        Column with each rater's self-reported confidence in [0, 1]; when given, the
        verdict's ``mean_confidence`` (among raters who gave the verdict) is reported.

    Examples
    --------
    >>> df = pd.DataFrame({"trace_id": ["t", "t", "t"], "measure": "x_task",
    ...                    "rater": ["a", "b", "c"], "answer": ["yes", "yes", "no"]})
    >>> r = fold_panel(df)
    >>> r.verdicts[["verdict", "confidence", "disagreement"]].round(3).values.tolist()
    [['yes', 0.667, 0.333]]
    """
    answers = as_frame(answers)
    check_nonempty(answers, "answers", needs="there are no rater answers to fold")
    fr = rule if isinstance(rule, FoldRule) else FoldRule(rule, weights=weights)
    ks = _keys_present(answers, keys)
    df, members = _checked_answers(answers, ks, keys, rater, answer, panel, fr)
    # items and members come from every row, an empty answer included: an empty cell is a
    # recorded skip of that member, never a row that silently leaves the panel
    item_codes_all = df.groupby(ks, dropna=False, sort=False, observed=True).ngroup().to_numpy(np.int64)
    _, first = np.unique(item_codes_all, return_index=True)
    items = pd.MultiIndex.from_frame(df[ks].iloc[first].reset_index(drop=True))
    n_items = len(items)
    has = np.asarray(_columns.present(df[answer]), bool)  # not missing, not blank
    item_codes = item_codes_all[has]
    ans = df.loc[has, answer].astype(str).to_numpy()
    words, wcodes = np.unique(ans, return_inverse=True)
    k = len(words)
    raters_answered = df.loc[has, rater].astype(str)
    w = (raters_answered.map(fr.weights).to_numpy(float) if fr.name == "weighted" else np.ones(int(has.sum())))
    counts = np.bincount(item_codes * k + wcodes, minlength=n_items * k).reshape(n_items, k).astype(float)
    wsum = np.bincount(item_codes * k + wcodes, weights=w, minlength=n_items * k).reshape(n_items, k)
    n_answered = counts.sum(1)
    n_panel = len(members)
    abst = np.isin(words, fr.abstain_words)
    votes = wsum.T if fr.name == "weighted" else counts.T.astype(np.int64)
    folded = fold_votes(votes, [None if a else 0.0 for a in abst], fr, raw=counts.T.astype(np.int64))
    top = folded.top if k else np.zeros(n_items, np.intp)
    cause = np.where(folded.status == 0, None, "abstained").astype(object)  # type: ignore[call-overload]  # numpy stubs: None as a value
    reason = np.array([_FOLD_REASONS[fr.name == "unanimity"][int(x)] for x in folded.status], object)
    if fr.name == "unanimity":  # a skip is never an assumed agreement: unanimity needs every member
        partial = (folded.status == 0) & (n_answered < n_panel)
        cause[partial] = "abstained"
        reason[partial] = "not every panel member answered (unanimity rule)"
    verdict = words[top].astype(object) if k else np.full(n_items, None, object)
    verdict[cause != None] = None  # noqa: E711
    # confidence and agreement are shares of the whole panel: a member that did not answer is
    # weight not behind the verdict, so one answer of three reports 1/3, never a full panel's 1.0
    weights_of = dict(fr.weights or {})
    panel_w = float(sum(float(weights_of[m]) for m in members)) if fr.name == "weighted" else float(n_panel)
    top_v = wsum[np.arange(n_items), top] if k else np.zeros(n_items)
    modal = counts.max(1) if k else np.zeros(n_items)
    out = items.to_frame(index=False)
    out["verdict"] = verdict
    out["cause"] = pd.Categorical(cause, categories=list(CAUSES))
    out["reason"] = reason
    out["confidence"] = np.where((cause == None) & (panel_w > 0), top_v / (panel_w or 1.0), np.nan)  # noqa: E711
    out["agreement"] = modal / n_panel
    out["disagreement"] = (n_answered - modal) / n_panel
    out["n_panel"] = n_panel
    out["n_answered"] = n_answered.astype(int)
    out["n_skipped"] = n_panel - out["n_answered"]
    out["n_cannot_tell"] = (counts[:, abst].sum(1) if abst.any() else np.zeros(n_items)).astype(int)
    if confidence is not None:
        out["mean_confidence"] = _mean_confidence(df[has], confidence, wcodes == top[item_codes], item_codes,
                                                  n_items, cause == None)  # noqa: E711
    sk = _skips(items, item_codes, raters_answered.to_numpy(), members, rater,
                empty=(item_codes_all[~has], df.loc[~has, rater].astype(str).to_numpy()))
    return PanelResult(verdicts=out, skips=sk, rule=fr, panel=members, keys=tuple(ks))


def _checked_answers(answers: pd.DataFrame, ks: list[str], keys: Sequence[str], rater: str, answer: str,
                     panel: Sequence[str] | None, fr: FoldRule) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Every row (an empty answer included), and the panel, after the checks: keys and columns
    present, one row per (item, rater), every rater in the panel, a weight for every member.
    The panel defaults to every rater named on a row, answered or not."""
    if not ks:
        raise ValueError(f"`answers` has none of the key columns {list(keys)}.")
    for c in (rater, answer):
        if c not in answers.columns:
            raise ValueError(f"`answers` needs a `{c}` column.")
    df = answers.reset_index(drop=True).copy()
    df[answer] = df[answer].astype(object)
    if df[rater].isna().any():
        raise ValueError(f"`answers` has rows without a `{rater}`: a skip needs to name its panel member.")
    dup = df.duplicated([*ks, rater], keep=False)
    if dup.any():
        row = df[dup].iloc[0]
        raise ValueError(f"rater {row[rater]!r} answered item {tuple(row[k] for k in ks)} more than once; "
                         "fold repeated trials by giving each trial its own `rater` name.")
    members = tuple(panel) if panel is not None else tuple(sorted(df[rater].astype(str).unique()))
    unknown = set(df[rater].astype(str)) - set(members)
    if unknown:
        raise ValueError(f"raters {sorted(unknown)} answered but are not in `panel`.")
    if fr.name == "weighted":
        missing = set(members) - set(fr.weights or {})
        if missing:
            raise ValueError(f"`weights` has no weight for raters {sorted(missing)}.")
    return df, members


def _mean_confidence(df: pd.DataFrame, confidence: str, wins: np.ndarray, item_codes: np.ndarray, n_items: int,
                     valued: np.ndarray) -> np.ndarray:
    """Mean self-reported confidence of the raters who gave the verdict, per item (NaN where abstained)."""
    if confidence not in df.columns:
        raise ValueError(f"`answers` has no `{confidence}` column.")
    c = pd.to_numeric(df[confidence], errors="coerce").to_numpy(float)
    wins = wins & ~np.isnan(c)
    s = np.bincount(item_codes[wins], weights=c[wins], minlength=n_items)
    nn = np.bincount(item_codes[wins], minlength=n_items)
    return np.where((nn > 0) & valued, s / np.maximum(nn, 1), np.nan)


def _skips(items: pd.MultiIndex, item_codes: np.ndarray, raters: np.ndarray, members: Sequence[str],
           rater: str, empty: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    """Every (item, panel member) with no answer: a recorded skip, never an agreement.  ``empty``
    holds the (item, rater) of the rows whose answer cell is empty."""
    answered = pd.MultiIndex.from_arrays([item_codes, raters])
    full = pd.MultiIndex.from_product([np.arange(len(items)), list(members)])
    missing = full.difference(answered)
    sk = items.to_frame(index=False).iloc[np.asarray(missing.get_level_values(0), int)].reset_index(drop=True)
    sk[rater] = missing.get_level_values(1)
    was_empty = missing.isin(pd.MultiIndex.from_arrays([empty[0], empty[1]])) if len(empty[0]) else \
        np.zeros(len(missing), bool)
    sk["reason"] = np.where(was_empty, "empty answer from this panel member (recorded skip, not an agreement)",
                            "no answer from this panel member (recorded skip, not an agreement)")
    return sk


def fold_pairwise_trials(judgments: pd.DataFrame, *, item: str = "pair_id", judge: str = "judge_name",
                         decision: str = "decision", label: str = "label", trial: str = "trial",
                         swapped_trials: Sequence[int] = (1,)) -> pd.DataFrame:
    """JudgeBench's fold of repeated pairwise trials against a label.

    Each trial's decision (``A>B``, ``B>A``, ``A=B`` or missing) is first mapped back to
    the original frame (trials in ``swapped_trials`` presented the two responses
    swapped), then scored +1 when it matches the label, -1 when it matches the opposite,
    and 0 for a tie or no parsable verdict.  The pair counts as correct when the sum is
    positive (Tan et al. 2024, JudgeBench, scoring script).

    Returns one row per (judge, item): ``score`` (the sum), ``correct``, ``n_trials``,
    ``n_unparsable``.
    """
    check_nonempty(judgments, "judgments", needs="there are no pairwise trials to fold")
    need = [item, judge, decision, label, trial]
    miss = [c for c in need if c not in judgments.columns]
    if miss:
        raise ValueError(f"`judgments` is missing columns {miss}.")
    df = judgments[need].copy()
    d = df[decision].astype(object).where(df[decision].notna(), None)
    flip = {"A>B": "B>A", "B>A": "A>B", "A=B": "A=B"}
    swapped = df[trial].isin(list(swapped_trials)).to_numpy()
    dd = np.array([flip.get(x, None) if s else (x if x in flip else None)
                   for x, s in zip(d.to_numpy(object), swapped, strict=True)], dtype=object)
    lab = df[label].astype(str).to_numpy(object)
    bad_label = ~np.isin(lab, ["A>B", "B>A"])
    if bad_label.any():
        raise ValueError(f"`{label}` must be 'A>B' or 'B>A'; got {lab[bad_label][0]!r}.")
    opposite = np.where(lab == "A>B", "B>A", "A>B")
    s = np.where(dd == lab, 1, np.where(dd == opposite, -1, 0))
    df["_s"] = s
    df["_unparsable"] = pd.isna(pd.Series(dd))
    g = df.groupby([judge, item], sort=True)
    out = g.agg(score=("_s", "sum"), n_trials=("_s", "size"), n_unparsable=("_unparsable", "sum")).reset_index()
    out["correct"] = out["score"] > 0
    return out


def review_queue(result: PanelResult, *, human: pd.DataFrame | None = None, confidence_floor: float = 0.75,
                 weights: Mapping[str, float] | None = None, human_answer: str = "answer",
                 human_rater: str = "rater", top: int | None = None) -> pd.DataFrame:
    """Rank items for human review by the seed's hinge.

    ``priority = w_c * max(0, floor - confidence) + w_d * disagreement + w_h * conflict
    + w_s * skipped``

    where ``confidence`` is the panel's mean self-reported confidence behind the verdict
    (its vote share where raters reported none), ``disagreement`` is 1 - the modal share,
    ``conflict`` is 1 when the panel verdict contradicts the human vote y(t) on the item
    (several humans are folded by majority first; a human tie casts no vote), and
    ``skipped`` is the share of the panel that did not answer.  An abstained verdict counts
    as confidence 0.  Weights default to 1 each.  Routing never changes a score.

    Returns a DataFrame of the item keys, ``priority``, the components, and ``reasons``
    (which of them fired), sorted by priority, highest first.
    """
    if not 0 <= confidence_floor <= 1:
        raise ValueError(f"`confidence_floor` must be in [0, 1]; got {confidence_floor}.")
    w = {"confidence": 1.0, "disagreement": 1.0, "conflict": 1.0, "skipped": 1.0, **(weights or {})}
    v = result.verdicts.copy()
    keys = list(result.keys)
    conf = v["confidence"].to_numpy(float)
    if "mean_confidence" in v.columns:
        mc = v["mean_confidence"].to_numpy(float)
        conf = np.where(np.isnan(mc), conf, mc)
    conf = np.where(np.isnan(conf), 0.0, conf)  # an abstained verdict carries no confidence
    low = np.maximum(0.0, confidence_floor - conf)
    dis = v["disagreement"].to_numpy(float)
    skipped = (v["n_skipped"] / v["n_panel"]).to_numpy(float)
    conflict = np.zeros(len(v))
    if human is not None:
        hk = [k for k in keys if k in human.columns]
        if human_rater in human.columns:
            hv_tab = fold_panel(human[[*hk, human_rater, human_answer]], keys=hk, rater=human_rater,
                                answer=human_answer).verdicts[[*hk, "verdict"]]
        else:
            hv_tab = human[[*hk, human_answer]].rename(columns={human_answer: "verdict"})
            hv_tab = hv_tab.drop_duplicates(hk, keep=False)
        hv_tab = hv_tab.rename(columns={"verdict": "_human"})
        left = v[hk].copy()
        for k in hk:  # align key dtypes (an object `step` of Nones against an Int64 one)
            if k == "step":
                left[k] = pd.to_numeric(left[k], errors="coerce").astype("Int64")
                hv_tab[k] = pd.to_numeric(hv_tab[k], errors="coerce").astype("Int64")
            else:
                left[k] = left[k].astype(str)
                hv_tab[k] = hv_tab[k].astype(str)
        mv = left.merge(hv_tab, on=hk, how="left")
        hv = mv["_human"].to_numpy(object)
        pv = v["verdict"].to_numpy(object)
        has = pd.notna(mv["_human"]).to_numpy() & pd.notna(v["verdict"]).to_numpy()
        conflict = np.where(has, (hv != pv).astype(float), 0.0)
    pr = w["confidence"] * low + w["disagreement"] * dis + w["conflict"] * conflict + w["skipped"] * skipped
    reasons = np.full(len(v), "", dtype=object)
    for name, arr in (("low confidence", low > 0), ("panel disagreement", dis > 0),
                      ("conflicts with human vote", conflict > 0), ("panel members skipped", skipped > 0)):
        reasons = np.where(arr, np.where(reasons == "", name, reasons + "; " + name), reasons)
    out = v[keys].copy()
    out["verdict"] = v["verdict"]
    out["priority"] = pr
    out["low_confidence"] = low
    out["disagreement"] = dis
    out["conflict"] = conflict
    out["skipped"] = skipped
    out["reasons"] = reasons
    out = out.sort_values("priority", ascending=False, kind="stable").reset_index(drop=True)
    return out if top is None else out.head(top)
