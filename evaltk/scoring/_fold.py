"""The panel fold, in one home: several raters' answers to one question become one verdict.

Seed 002, "Panel fold": fold several judges to one verdict carrying a confidence; a tie
or a cannot-tell majority abstains; a missing cell is a recorded skip, never an assumed
agreement.  The rule is declared (:class:`FoldRule`) and recorded with every result.

``majority``
    the most frequent answer wins; a tie among the top answers abstains (the
    documented tie rule; ``tie="abstain"``), and a cannot-tell majority abstains.
``weighted``
    each rater's vote counts its weight (for example its measured agreement with
    humans on a held-out set; negative weights are refused); the heaviest answer
    wins, a tie abstains, and answers from raters of weight 0 only abstain.
``unanimity``
    every answering rater gives the same (non-cannot-tell) answer; anything else abstains.

:func:`fold_votes` folds a (words x questions) count matrix.  Scoring (x_task, x_eff,
x_ctx) and :func:`evaltk.judges.fold_panel` both call it, so both give the same verdict
on the same answers; the panel adds what only a declared panel knows (a member's skip
under unanimity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..values import ABSTAIN_WORDS

#: What each ``FoldedVotes.status`` code means.
FOLD_STATUSES: dict[int, str] = {
    0: "valued",
    1: "no votes",
    2: "tie between raters (any disagreement under unanimity)",
    3: "cannot-tell majority",
    4: "only raters of weight 0 answered",
}


@dataclass(frozen=True)
class FoldRule:
    """A declared fold rule; recorded on every panel result and score manifest."""

    name: str = "majority"
    weights: Mapping[str, float] | None = None
    tie: str = "abstain"
    abstain_words: tuple[str, ...] = ABSTAIN_WORDS

    def __post_init__(self) -> None:
        if self.name not in ("majority", "weighted", "unanimity"):
            raise ValueError(f"`rule` must be 'majority', 'weighted' or 'unanimity'; got {self.name!r}.")
        if self.tie != "abstain":
            raise ValueError("`tie` must be 'abstain': a tie is disagreement, and the fold never guesses.")
        if self.name == "weighted":
            if not self.weights:
                raise ValueError("the 'weighted' rule needs `weights` {rater: weight}.")
            bad = {k: v for k, v in self.weights.items() if not np.isfinite(v) or v < 0}
            if bad:
                raise ValueError(f"`weights` must be finite and >= 0; got {bad}.")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tie": self.tie, "abstain_words": list(self.abstain_words),
                "weights": None if self.weights is None else dict(self.weights)}

    def describe(self) -> str:
        """One line for the manifest: the rule and when it abstains."""
        if self.name == "majority":
            return "majority; a tie or a cannot-tell majority abstains"
        if self.name == "unanimity":
            return "unanimity; any disagreement among answering raters or a cannot-tell abstains"
        assert self.weights is not None  # a weighted fold has weights
        ws = ", ".join(f"{k}={v:g}" for k, v in sorted(self.weights.items()))
        return f"weighted majority ({ws}); a weight tie or a cannot-tell majority abstains"


class FoldedVotes(NamedTuple):
    """The fold of each question: ``value`` (NaN unless status 0), ``status`` (a code of
    :data:`FOLD_STATUSES`), ``top`` (the first word with the most votes)."""

    value: np.ndarray
    status: np.ndarray
    top: np.ndarray


def fold_votes(counts: np.ndarray, values: Sequence[float | None], rule: FoldRule,
               raw: np.ndarray | None = None) -> FoldedVotes:
    """Fold a (k words, n questions) vote matrix under ``rule``.

    Parameters
    ----------
    counts : ndarray, shape (k, n)
        Votes per word and question: answer counts, or summed rater weights under
        the ``weighted`` rule.
    values : sequence of float or None, length k
        The value of each word; ``None`` marks an abstaining word (cannot tell).
    rule : FoldRule
    raw : ndarray, shape (k, n), optional
        The unweighted answer counts (default ``counts``); the unanimity rule and the
        weight-0 case read them.

    Returns
    -------
    FoldedVotes

    Examples
    --------
    >>> import numpy as np
    >>> f = fold_votes(np.array([[2, 1, 0], [1, 1, 0], [0, 0, 3]]), [1.0, 0.0, None], FoldRule())
    >>> f.value.tolist(), f.status.tolist()
    ([1.0, nan, nan], [0, 2, 3])
    """
    raw = counts if raw is None else raw
    value, status, top = _fold(counts, raw, values, rule)
    if rule.name == "weighted":
        zero = (status == 1) & (raw.sum(axis=0) > 0)
        status = np.where(zero, np.int8(4), status)
    return FoldedVotes(value, status, top)


def _fold(counts: np.ndarray, raw: np.ndarray, values: Sequence[float | None],
          fold: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fold with its unanimity clause (scoring's hot path calls this directly)."""
    value, status, top = _fold_counts(counts, values)
    if fold.name == "unanimity":  # any disagreement among the raters who answered abstains as one,
        split = (raw > 0).sum(axis=0) > 1  # whatever word leads (a cannot-tell plurality too)
        status = np.where(split, np.int8(2), status)
        value = np.where(status == 0, value, np.nan)
    return value, status, top


def _fold_counts(counts: np.ndarray, values: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Majority fold of a (k, n) vote-count matrix (one row per word, one column per question).

    Returns (value, status, top) where status is 0 valued, 1 no votes, 2 tie,
    3 cannot-tell majority, and ``top`` (intp) the first word with the most votes.
    A tie among the top words abstains, whatever they are.  Word by word (k is 3 or
    4), in boolean arithmetic: no sort, no ``where``, one small gather for the value.
    """
    weighted = counts.dtype.kind == "f"
    k, n = counts.shape
    if k == 0:
        return np.full(n, np.nan), np.ones(n, np.int8), np.zeros(n, np.intp)
    if not weighted and counts.size and counts.max() < 2**31:
        counts = counts.astype(np.int32)  # half the memory traffic
    top_count = counts[0]
    j: Any
    for j in range(1, k):
        top_count = np.maximum(top_count, counts[j])
    small = np.int8 if k < 127 else np.intp  # a panel's free-text answers may have many words
    n_top: np.ndarray = np.zeros(n, small)
    top: np.ndarray = np.zeros(n, small)
    before = np.ones(n, bool)  # no maximum among the words so far
    for j in range(k):
        at_top = (np.isclose(counts[j], top_count) & (counts[j] > 0)) if weighted else counts[j] == top_count
        n_top += at_top.view(np.int8) if small is np.int8 else at_top
        if j < k - 1:
            before &= ~at_top
            top += before.view(np.int8) if small is np.int8 else before  # top = how many words precede the first maximum
    top = top.astype(np.intp)
    vals = np.array([np.nan if v is None else v for v in values], dtype=float)
    none = top_count <= 0
    tie = (n_top > 1) & ~none
    undecided = np.zeros(n, bool)
    for j in np.flatnonzero(np.isnan(vals)):
        undecided |= top == j
    undecided &= ~none & ~tie
    status = none.view(np.int8) + np.int8(2) * tie.view(np.int8) + np.int8(3) * undecided.view(np.int8)
    # value by (status, top): NaN wherever the status is not 0
    table = np.full((4, k), np.nan)
    table[0] = vals
    value = table.ravel()[status.astype(np.intp) * k + top]
    return value, status, top
