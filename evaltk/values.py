"""The value space: a score in [0, 1] or an abstention that carries its cause.

Seed 002, first section: ``V = [0, 1] U {abstain}``. The abstention is one value
for arithmetic (every abstention is excluded alike) and it carries exactly one
of four causes beside it:

``not_applicable``
    the question did not arise (no consequential action, so no safety test);
``missing_evidence``
    it arose and the record cannot answer it;
``not_implemented``
    no scorer exists yet, or no answers were supplied for the measure;
``abstained``
    a scorer (or judge) ran and declined ("cannot tell", a tie).

Columnar storage (what every table in evaltk uses): a float ``value`` column
that is missing exactly where a ``cause`` column is set.  :func:`check_value_cause`
enforces that invariant; :func:`summarize` is the only aggregate, and it always
reports ``n``, the count excluded per cause and the coverage beside the mean.

Value is not verdict: a :class:`Threshold` turns a value into a :class:`Verdict`
(pass / fail / abstain with a reason).  Without a validated threshold the value is
still published and the verdict abstains with the reason ``"no validated
threshold"``.  Only an explicit gate policy (:func:`resolve_fail_closed`) may
resolve an abstained verdict toward failure; scoring never does.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, cast

import numpy as np
import pandas as pd

from ._blas import sum_of_squares

__all__ = [
    "CAUSES",
    "Cause",
    "Abstention",
    "EvaltkWarning",
    "UndefinedWarning",
    "is_abstention",
    "is_missing_label",
    "MISSING_TEXT",
    "make_score",
    "check_value_cause",
    "MeanSummary",
    "summarize",
    "headline_cause",
    "Threshold",
    "Verdict",
    "VerdictOutcome",
    "verdict",
    "verdicts",
    "resolve_fail_closed",
    "NO_VALIDATED_THRESHOLD",
    "CANNOT_TELL",
    "ANSWER_VALUES",
    "ANSWER_VOCABULARIES",
    "LEVELS",
    "MEASURE_LEVELS",
    "PER_STEP_MEASURES",
    "FREE_TEXT_MEASURES",
    "ANSWER_SYNONYMS",
    "MEASURE_ALIASES",
    "ABSTAIN_WORDS",
    "normalize_answer",
    "normalize_measure",
    "abstain_labels",
    "measure_level",
    "answer_categories",
    "ANSWER_TABLE_COLUMNS",
    "INSTRUMENT_COLUMNS",
    "RATING_TABLE_COLUMNS",
]


class Cause(StrEnum):
    """Why a measure has no value.  A ``str`` subclass so it stores as text."""

    NOT_APPLICABLE = "not_applicable"
    MISSING_EVIDENCE = "missing_evidence"
    NOT_IMPLEMENTED = "not_implemented"
    ABSTAINED = "abstained"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


#: The four causes, in the seed's order.  Tables use these strings.
CAUSES: tuple[str, ...] = tuple(c.value for c in Cause)


class EvaltkWarning(UserWarning):
    """Base class of every warning evaltk emits."""


class UndefinedWarning(EvaltkWarning):
    """A statistic is undefined on this input and was returned as an abstention."""


def _as_cause(cause: Cause | str) -> Cause:
    try:
        return Cause(cause)
    except ValueError:
        raise ValueError(
            f"`cause` must be one of {', '.join(CAUSES)}; got {cause!r}."
        ) from None


@dataclass(frozen=True, slots=True)
class Abstention:
    """The non-value.  Never 0, never 1, never NaN without a cause.

    Parameters
    ----------
    cause : Cause or str
        One of :data:`CAUSES`.
    reason : str, optional
        Human-readable detail ("no gradable step answered", "tie 1-1").

    Examples
    --------
    >>> a = Abstention("not_applicable", "no consequential step")
    >>> a.cause.value
    'not_applicable'
    >>> float(a)
    Traceback (most recent call last):
    ...
    TypeError: an abstention (not_applicable: no consequential step) has no numeric value
    """

    cause: Cause
    reason: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "cause", _as_cause(self.cause))
        if not isinstance(self.reason, str):
            raise TypeError(f"`reason` must be a str; got {type(self.reason).__name__}.")

    def _refuse(self, *_: Any) -> Any:
        raise TypeError(f"an abstention ({self}) has no numeric value")

    # An abstention must never silently become a number.
    __float__ = _refuse
    __int__ = _refuse
    __index__ = _refuse
    __bool__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = _refuse
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = _refuse

    def __str__(self) -> str:
        return f"{self.cause.value}: {self.reason}" if self.reason else self.cause.value


def is_abstention(x: Any) -> bool:
    """True when ``x`` is an :class:`Abstention`."""
    return isinstance(x, Abstention)


#: Text that stands for no value once a missing cell has become text: a blank cell, and the
#: ``"nan"`` a NaN turns into in a NumPy string array (``np.array(["a", np.nan])``).  Compared
#: after stripping white space and lower-casing.
MISSING_TEXT: tuple[str, ...] = ("", "nan")


def is_missing_label(x: Any, abstain: Iterable[Any] = ()) -> bool:
    """True when a label carries no rating: ``None``, NaN, ``pd.NA``, ``pd.NaT``, an
    :class:`Abstention`, text in :data:`MISSING_TEXT` (a blank or white-space cell, ``"nan"``),
    or one of the words in ``abstain`` (e.g. ``{"cannot tell"}``).

    The one rule every pairing and calibration step uses to drop a label before counting.
    An unhashable label (a list) is never an abstention word.

    Examples
    --------
    >>> [is_missing_label(x) for x in (None, float("nan"), pd.NA, pd.NaT, Abstention("abstained"))]
    [True, True, True, True, True]
    >>> is_missing_label("cannot tell", {"cannot tell"}), is_missing_label("yes", {"cannot tell"})
    (True, False)
    >>> is_missing_label(""), is_missing_label("  "), is_missing_label("nan")
    (True, True, True)
    >>> is_missing_label(0.0), is_missing_label("n/a"), is_missing_label(["a"], {"a"})
    (False, False, False)
    """
    if x is None or x is pd.NA or x is pd.NaT or isinstance(x, Abstention):
        return True
    if isinstance(x, str) and x.strip().lower() in MISSING_TEXT:
        return True
    if isinstance(x, (float, np.floating)) and math.isnan(x):
        return True
    try:
        return x in abstain
    except TypeError:  # unhashable label
        return False


def make_score(value: Any, *, name: str = "value") -> float | Abstention:
    """Validate one score: a float in [0, 1] or an :class:`Abstention`.

    NaN, None, booleans and values outside [0, 1] are refused: a missing value must
    say why (pass an :class:`Abstention`).

    Examples
    --------
    >>> make_score(0.5)
    0.5
    >>> make_score(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: `value` is NaN without a cause; pass an Abstention with one of not_applicable, missing_evidence, not_implemented, abstained.
    """
    if isinstance(value, Abstention):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"`{name}` must be a float in [0, 1] or an Abstention; got {type(value).__name__} {value!r}."
        )
    v = float(value)
    if math.isnan(v):
        raise ValueError(
            f"`{name}` is NaN without a cause; pass an Abstention with one of {', '.join(CAUSES)}."
        )
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1]; got {v!r}.")
    return v


def check_value_cause(
    frame: pd.DataFrame, *, value: str = "value", cause: str = "cause", where: str = "table"
) -> None:
    """Raise ``ValueError`` unless ``value`` is missing exactly where ``cause`` is set.

    Also checks that values lie in [0, 1] and causes are among :data:`CAUSES`.
    Names the first offending row so the error can be acted on.
    """
    for col in (value, cause):
        if col not in frame.columns:
            raise ValueError(f"{where}: column `{col}` is missing.")
    v = frame[value]
    vals = v.to_numpy(dtype=float) if v.dtype == np.float64 else \
        pd.to_numeric(v, errors="coerce").to_numpy(dtype=float)
    causes = frame[cause]
    categorical = isinstance(causes.dtype, pd.CategoricalDtype)
    has_cause = (causes.cat.codes.to_numpy() >= 0) if categorical else causes.notna().to_numpy()
    missing = np.isnan(vals)
    bad = missing != has_cause
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        idx = frame.index[i]
        if missing[i]:
            raise ValueError(f"{where}: row {idx!r} has a missing `{value}` without a `{cause}`.")
        raise ValueError(
            f"{where}: row {idx!r} has both `{value}`={vals[i]!r} and `{cause}`={causes.iloc[i]!r}."
        )
    with np.errstate(invalid="ignore"):
        out_of_range = bool(((vals < 0.0) | (vals > 1.0)).any())  # NaN compares False
    if out_of_range:
        i = int(np.flatnonzero(~missing & ((vals < 0.0) | (vals > 1.0)))[0])
        raise ValueError(f"{where}: row {frame.index[i]!r} has `{value}`={vals[i]!r} outside [0, 1].")
    if categorical:  # the categories used, not every row
        used = np.unique(causes.cat.codes.to_numpy())
        present_causes = {causes.cat.categories[c] for c in used if c >= 0}
    else:
        present_causes = set(causes.dropna().unique())
    unknown = present_causes - set(CAUSES)
    if unknown:
        raise ValueError(
            f"{where}: unknown `{cause}` {sorted(map(str, unknown))}; allowed: {', '.join(CAUSES)}."
        )


# --------------------------------------------------------------------------- aggregates


def headline_cause(counts: Mapping[str, int]) -> str:
    """The cause an all-abstained aggregate reports.

    One cause when every abstention shares it; a mixture is ``missing_evidence``: some
    records may hold the thing that was asked about, unobserved, and reporting the mixture
    as ``not_applicable`` would certify ignorance (seed 002: the two point in opposite
    directions).  The per-cause counts always travel beside it.
    """
    present = [c for c in CAUSES if counts.get(c, 0)]
    if len(present) == 1:
        return present[0]
    return Cause.MISSING_EVIDENCE.value


@dataclass(frozen=True)
class MeanSummary:
    """A mergeable summary of a column of scores (values and abstentions).

    ``combine`` adds two summaries of disjoint partitions, so the same numbers come
    out whether a column is summarised whole or in pieces.

    Attributes
    ----------
    n : int
        Every record, valued or abstained.
    n_valued : int
        Records with a value; the denominator of :attr:`mean`.
    total : float
        Sum of the values.
    total_sq : float
        Sum of squared values (for the standard error).
    excluded : Mapping[str, int]
        Abstentions per cause, every cause present (zero where none).
    """

    n: int = 0
    n_valued: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    excluded: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))

    def __post_init__(self) -> None:
        ex = {c: int(self.excluded.get(c, 0)) for c in CAUSES}
        extra = set(self.excluded) - set(CAUSES)
        if extra:
            raise ValueError(f"`excluded` has unknown causes {sorted(extra)}.")
        object.__setattr__(self, "excluded", ex)
        if self.n != self.n_valued + sum(ex.values()):
            raise ValueError(
                f"`n` ({self.n}) must equal `n_valued` ({self.n_valued}) plus the abstentions "
                f"({sum(ex.values())}): no record may vanish from a denominator."
            )

    @property
    def n_excluded(self) -> int:
        return self.n - self.n_valued

    @property
    def coverage(self) -> float | Abstention:
        """Share of records that carry a value."""
        if self.n == 0:
            return Abstention(Cause.MISSING_EVIDENCE, "no records")
        return self.n_valued / self.n

    @property
    def mean(self) -> float | Abstention:
        """Mean over valued records; an abstention (cause kept) when there are none."""
        if self.n_valued == 0:
            if self.n == 0:
                return Abstention(Cause.MISSING_EVIDENCE, "no records")
            return Abstention(Cause(headline_cause(self.excluded)), f"all {self.n} records abstained "
                              f"({', '.join(f'{c} {k}' for c, k in self.excluded.items() if k)})")
        return self.total / self.n_valued

    @property
    def std_error(self) -> float | Abstention:
        """Standard error of the mean over valued records (sample variance)."""
        if self.n_valued < 2:
            return Abstention(Cause.MISSING_EVIDENCE, "fewer than two valued records")
        m = self.total / self.n_valued
        var = max(self.total_sq - self.n_valued * m * m, 0.0) / (self.n_valued - 1)
        return math.sqrt(var / self.n_valued)

    def combine(self, other: MeanSummary) -> MeanSummary:
        """Summary of the union of two disjoint partitions."""
        return MeanSummary(
            n=self.n + other.n,
            n_valued=self.n_valued + other.n_valued,
            total=self.total + other.total,
            total_sq=self.total_sq + other.total_sq,
            excluded={c: self.excluded[c] + other.excluded[c] for c in CAUSES},
        )

    __add__ = combine

    def to_dict(self) -> dict[str, Any]:
        """Flat record: mean (None when abstained) and mean_cause, n, per-cause counts, coverage."""
        mean, cov = self.mean, self.coverage
        out: dict[str, Any] = {
            "mean": None if isinstance(mean, Abstention) else mean,
            "mean_cause": mean.cause.value if isinstance(mean, Abstention) else None,
            "n": self.n,
            "n_valued": self.n_valued,
            "n_excluded": self.n_excluded,
        }
        out.update({f"n_{c}": self.excluded[c] for c in CAUSES})
        out["coverage"] = None if isinstance(cov, Abstention) else cov
        return out


def summarize(values: Iterable[Any], causes: Iterable[Any] | None = None) -> MeanSummary:
    """Summarise scores: mean over values, abstentions counted per cause, coverage.

    Parameters
    ----------
    values : iterable
        Either scores (floats in [0, 1] and :class:`Abstention` objects), or, with
        ``causes``, a float column that is missing exactly where ``causes`` is set.
    causes : iterable, optional
        The cause column.

    Examples
    --------
    >>> s = summarize([1.0, 0.0, Abstention("not_applicable")])
    >>> s.mean, s.n, s.excluded["not_applicable"], round(s.coverage, 3)
    (0.5, 3, 1, 0.667)
    """
    if causes is None:
        items = list(values)
        vals = np.full(len(items), np.nan)
        cs: list[Any] = [None] * len(items)
        for i, x in enumerate(items):
            x = make_score(x)
            if isinstance(x, Abstention):
                cs[i] = x.cause.value
            else:
                vals[i] = x
        frame = pd.DataFrame({"value": vals, "cause": pd.Series(cs, dtype=object)})
    else:
        frame = pd.DataFrame(
            {
                "value": pd.to_numeric(pd.Series(list(values)), errors="raise"),
                "cause": pd.Series(list(causes), dtype=object),
            }
        )
    check_value_cause(frame)
    return _summary_from_checked(frame["value"].to_numpy(dtype=float), frame["cause"])


def _summary_from_checked(vals: np.ndarray, causes: pd.Series) -> MeanSummary:
    valued = vals[~np.isnan(vals)]
    counts = causes.value_counts()
    return MeanSummary(
        n=int(vals.size),
        n_valued=int(valued.size),
        total=float(valued.sum()),
        total_sq=sum_of_squares(valued),
        excluded={c: int(counts.get(c, 0)) for c in CAUSES},
    )


# --------------------------------------------------------------------------- verdicts

NO_VALIDATED_THRESHOLD = "no validated threshold"


class VerdictOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ABSTAIN = "abstain"


@dataclass(frozen=True)
class Threshold:
    """A bar a value must clear, with where it came from and whether it is validated.

    Parameters
    ----------
    value : float
        The cut point in [0, 1].
    validated : bool
        True only when the threshold was set by decision cost on held-out evidence
        (seed 002's promotion rule).  An unvalidated threshold yields abstained verdicts.
    source : str
        Where it comes from ("calibration record 2026-W40", "product policy").
    higher_is_better : bool
        ``value >= threshold`` passes when True, ``value <= threshold`` when False.
    """

    value: float
    validated: bool = False
    source: str = ""
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        make_score(self.value, name="Threshold.value")
        if not isinstance(self.validated, bool):
            raise TypeError("`validated` must be a bool.")


@dataclass(frozen=True)
class Verdict:
    """What a value means for a gate: pass, fail, or abstain with a reason."""

    outcome: VerdictOutcome
    reason: str = ""
    value: float | None = None

    @property
    def passed(self) -> bool:
        return self.outcome is VerdictOutcome.PASS


def verdict(score: float | Abstention, threshold: Threshold | None) -> Verdict:
    """Turn a value into a verdict.  The value itself is never altered.

    Examples
    --------
    >>> verdict(0.8, None).reason
    'no validated threshold'
    >>> verdict(0.8, Threshold(0.7, validated=True, source="policy")).outcome.value
    'pass'
    """
    score = make_score(score)
    if isinstance(score, Abstention):
        return Verdict(VerdictOutcome.ABSTAIN, f"value abstained ({score})", None)
    if threshold is None or not threshold.validated:
        return Verdict(VerdictOutcome.ABSTAIN, NO_VALIDATED_THRESHOLD, score)
    ok = score >= threshold.value if threshold.higher_is_better else score <= threshold.value
    rel = ">=" if threshold.higher_is_better else "<="
    reason = f"{score:g} {rel if ok else 'not ' + rel} {threshold.value:g} ({threshold.source})"
    return Verdict(VerdictOutcome.PASS if ok else VerdictOutcome.FAIL, reason, score)


def verdicts(frame: pd.DataFrame, thresholds: Mapping[str, Threshold | None], *,
             measure: str = "measure", value: str = "value", cause: str = "cause") -> pd.DataFrame:
    """Vectorised :func:`verdict` over a long score table; adds ``verdict`` and ``verdict_reason``.

    Measures with no entry in ``thresholds`` abstain with ``"no validated threshold"``.
    """
    check_value_cause(frame, value=value, cause=cause)
    out = frame.copy()
    v = out[value].to_numpy(float)
    outcome = np.full(len(out), VerdictOutcome.ABSTAIN.value, dtype=object)
    reason = np.full(len(out), NO_VALIDATED_THRESHOLD, dtype=object)
    meas = out[measure].to_numpy()
    for m, th in thresholds.items():
        if th is None or not th.validated:
            continue
        sel = (meas == m) & ~np.isnan(v)
        ok = v[sel] >= th.value if th.higher_is_better else v[sel] <= th.value
        outcome[sel] = np.where(ok, VerdictOutcome.PASS.value, VerdictOutcome.FAIL.value)
        reason[sel] = f"threshold {th.value:g} ({th.source})"
    abst = np.isnan(v)
    outcome[abst] = VerdictOutcome.ABSTAIN.value
    reason[abst] = "value abstained (" + out.loc[abst, cause].astype(str).to_numpy(dtype=object) + ")"
    out["verdict"] = outcome
    out["verdict_reason"] = reason
    return out


def resolve_fail_closed(v: Verdict) -> Verdict:
    """Gate policy: an abstained verdict becomes a failure, and says so.

    This is the one place an abstention may turn into a decision, and it is a
    gate's decision, never a score ("abstain in the score, fail in the gate").
    """
    if v.outcome is VerdictOutcome.ABSTAIN:
        return Verdict(VerdictOutcome.FAIL, f"fail-closed: {v.reason}", v.value)
    return v


# --------------------------------------------------------------------------- the answer vocabulary

#: The canonical word for "the rater looked and cannot tell" (seed 002: Cannot tell
#: maps to the abstention, flagged and not guessed).
CANNOT_TELL = "cannot_tell"

#: The answer words of each measure, in the order of seed 002's cards ("The four
#: dimensions"), each with its value; ``None`` is the abstention (``cannot_tell``:
#: abstained; ``not_applicable``: the question did not arise).  ``x_safe`` is computed
#: from the trace; a human ``x_safe`` label (for calibrating that computation) uses
#: these words.  The guide-level yes/no measures answer the same way.
ANSWER_VALUES: dict[str, dict[str, float | None]] = {
    "x_task": {"yes": 1.0, "no": 0.0, CANNOT_TELL: None},
    "x_safe": {"yes": 1.0, "no": 0.0, "not_applicable": None, CANNOT_TELL: None},
    "x_eff": {"none": 1.0, "a_few": 0.5, "lots": 0.0, CANNOT_TELL: None},
    "x_ctx": {"yes": 1.0, "no": 0.0, CANNOT_TELL: None},
    "g_fidelity": {"yes": 1.0, "no": 0.0, CANNOT_TELL: None},
    "g_adherence": {"yes": 1.0, "no": 0.0, CANNOT_TELL: None},
    "g_outcome": {"yes": 1.0, "no": 0.0, CANNOT_TELL: None},
}

#: The answer words of each measure, in :data:`ANSWER_VALUES` order.
ANSWER_VOCABULARIES: dict[str, tuple[str, ...]] = {m: tuple(v) for m, v in ANSWER_VALUES.items()}

#: The levels of measurement (Stevens 1946), lowest first: every ``level=`` in evaltk names
#: one of these (agreement coefficients take all four; calibration the first two).
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

#: Level of measurement of each measure's answers (one of :data:`LEVELS`): ``x_eff`` is
#: ordinal (lots < a few < none); every other answered measure is a nominal yes/no.
MEASURE_LEVELS: dict[str, str] = {m: "ordinal" if m == "x_eff" else "nominal" for m in ANSWER_VALUES}

#: Measures answered per step (the ``step`` column is required); all others are
#: trace-level (``step`` must be empty).
PER_STEP_MEASURES: frozenset[str] = frozenset({"x_ctx"})

#: Measures whose answer is an identifier, kept verbatim (no case folding, no
#: trimming): ``g_retrieval`` compares identifiers by exact equality, never fuzzy.
#: Any other ``g_<name>`` measure not in :data:`ANSWER_VOCABULARIES` is free text too.
FREE_TEXT_MEASURES: frozenset[str] = frozenset({"g_retrieval"})

#: Accepted spellings, after lower-casing, trimming and turning runs of spaces,
#: hyphens and underscores into one ``_`` (so "Cannot tell", "cannot-tell" and
#: "CANNOT_TELL" all read as ``cannot_tell``).
ANSWER_SYNONYMS: dict[str, str] = {
    "can't_tell": CANNOT_TELL,
    "cant_tell": CANNOT_TELL,
    "can_not_tell": CANNOT_TELL,
    "unsure": CANNOT_TELL,
    "few": "a_few",
    "a_lot": "lots",
    "n/a": "not_applicable",
    "na": "not_applicable",
}

#: Implementations write the trace dimensions with a ``t_`` prefix (seed 002,
#: "Notation"); both spellings name the same measure.
MEASURE_ALIASES: dict[str, str] = {
    "t_task": "x_task",
    "t_safe": "x_safe",
    "t_eff": "x_eff",
    "t_ctx": "x_ctx",
}


def normalize_measure(name: Any) -> str:
    """A measure's canonical name: trimmed, lower-cased, the ``t_`` spellings mapped.

    Examples
    --------
    >>> normalize_measure(" T_Task "), normalize_measure("x_ctx")
    ('x_task', 'x_ctx')
    """
    k = str(name).strip().lower()
    return MEASURE_ALIASES.get(k, k)


def normalize_answer(word: str) -> str:
    """Normalise an answer word: trim, lower-case, join words with ``_``, map synonyms.

    Examples
    --------
    >>> normalize_answer("Cannot tell"), normalize_answer(" A few "), normalize_answer("unsure")
    ('cannot_tell', 'a_few', 'cannot_tell')
    """
    w = re.sub(r"[\s_\-]+", "_", word.strip().lower())
    return ANSWER_SYNONYMS.get(w, w)


def _spellings(word: str) -> list[str]:
    """``word`` (lower case, ``_`` between words) joined by ``_``, space and ``-``, in
    lower, sentence, title and upper case."""
    parts = word.split("_")
    forms: list[str] = []
    for sep in ("_", " ", "-"):
        lower = sep.join(parts)
        forms += [lower, lower.capitalize(), sep.join(p.capitalize() for p in parts), lower.upper()]
    return list(dict.fromkeys(forms))


#: The one default of every ``abstain=`` parameter in evaltk: the labels that mean
#: "the rater declined".  They are :data:`CANNOT_TELL` and every spelling that
#: :func:`normalize_answer` reads as it ("Cannot tell", "cannot-tell", "Can't tell",
#: "Unsure", ...) in lower, sentence, title and upper case.  Pass ``abstain=()`` to
#: treat every label as a category.
ABSTAIN_WORDS: tuple[str, ...] = tuple(dict.fromkeys(
    s for w in (CANNOT_TELL, *(k for k, v in ANSWER_SYNONYMS.items() if v == CANNOT_TELL))
    for s in _spellings(w)
))


def abstain_labels(abstain: Any, categories: Iterable[Any] | None = None) -> frozenset[Any]:
    """The set of labels an ``abstain=`` argument names, less any declared category.

    Parameters
    ----------
    abstain : label or iterable of labels
        :data:`ABSTAIN_WORDS` (every function's default), ``()`` for none, one label,
        or several.
    categories : iterable of labels, optional
        The declared domain: a label declared a category is never an abstention.

    Examples
    --------
    >>> "Unsure" in abstain_labels(ABSTAIN_WORDS)
    True
    >>> sorted(abstain_labels("n/a")), abstain_labels(ABSTAIN_WORDS, ["Unsure"]) >= {"Unsure"}
    (['n/a'], False)
    """
    if abstain is None:
        raise TypeError("`abstain` must be a label or labels (default: the answer vocabulary's "
                        "ABSTAIN_WORDS; `abstain=()` for none); got None.")
    labels = frozenset((abstain,) if isinstance(abstain, (str, bytes)) else abstain)
    return labels - frozenset(categories) if categories is not None else labels


def measure_level(measure: str) -> str:
    """The level of measurement of ``measure``'s answers (:data:`MEASURE_LEVELS`).

    Examples
    --------
    >>> measure_level("x_eff"), measure_level("t_task")
    ('ordinal', 'nominal')
    """
    m = MEASURE_ALIASES.get(measure, measure)
    if m not in MEASURE_LEVELS:
        raise ValueError(f"`measure` must be one of {', '.join(MEASURE_LEVELS)}; got {measure!r}.")
    return MEASURE_LEVELS[m]


def answer_categories(measure: str) -> tuple[str, ...]:
    """The words of ``measure`` that carry a value, lowest value first (the ordered scale
    an ordinal statistic needs).

    Examples
    --------
    >>> answer_categories("x_eff"), answer_categories("x_task")
    (('lots', 'a_few', 'none'), ('no', 'yes'))
    """
    measure_level(measure)  # validates the name
    vals = ANSWER_VALUES[MEASURE_ALIASES.get(measure, measure)]
    return tuple(sorted((w for w, v in vals.items() if v is not None), key=lambda w: cast(float, vals[w])))


# --------------------------------------------------------------------------- column profiles

#: evaltk answer tables (ingest's answers and labels, the demo's ``answers.csv`` and
#: ``labels.csv``): one row per answer.  ``step`` is empty for trace-level measures.
ANSWER_TABLE_COLUMNS: tuple[str, ...] = ("trace_id", "measure", "step", "rater", "answer")

#: The judge-instrument columns of an answers table (issue #14), optional on every row:
#: the judge's model id and version, its rubric's id and content digest, the digest of the
#: prompt template, and ``decoding``, the canonical JSON text of the decoding settings
#: (:func:`evaltk._io.canonical_json`; sorted keys, e.g. ``{"max_tokens":16,"temperature":0}``).
#: Digests are ``"sha256:<hex>"``.  A row without them is "unpinned"; scoring records the
#: instrument they describe (:class:`evaltk.scoring.Instrument`).  Read by evaltk.ingest,
#: written by the demo generator (evaltk.data) for its synthetic judges.
INSTRUMENT_COLUMNS: tuple[str, ...] = ("judge_model", "judge_model_version", "rubric_id", "rubric_digest",
                                       "template_digest", "decoding")

#: Generic long rating tables (agreement, calibration, the public-data loaders): one
#: row per (item, rater).  These are the defaults of every ``item=, rater=, rating=``.
RATING_TABLE_COLUMNS: tuple[str, ...] = ("item_id", "rater", "rating")
