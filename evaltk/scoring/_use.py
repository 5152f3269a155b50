"""What a provisional score supports (seed 002): checked uses, comparisons, rankings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from .._validation import check_confidence_level
from ..stats import z_value
from ..values import (
    Abstention,
    Cause,
    MeanSummary,
)
from ._instrument import instrument_differences, unpinned_sides
from ._matrix import ScoreMatrix

# --------------------------------------------------------------------------- supported uses

#: Seed 002, "What a provisional score supports": use -> supported on a provisional measure.
USES: dict[str, tuple[bool, str]] = {
    "compare_agents": (True, "same scorer version and population: systematic error is shared and largely "
                              "cancels in the difference"),
    "regression": (True, "same agent over time, same scorer: the direction of error is stable"),
    "gate_fail_closed": (True, "a gate needs a decision, not an unbiased estimate; erring toward failure is "
                               "the cheap error"),
    "absolute_level": (False, "an absolute level ('ninety percent safe') requires a known error rate; a "
                              "provisional measure has none"),
    "compare_populations": (False, "the bias is population-dependent, so the difference mixes agent quality "
                                   "with capture quality"),
    "compare_versions": (False, "a rubric edit is a new instrument; the two numbers are not on one scale"),
    "rank_overlapping": (False, "the ordering is not supported when intervals overlap, whatever the point "
                                "estimates say"),
}


class UnsupportedUse(ValueError):
    """A comparison or claim the evidence does not support (seed 002)."""


def check_use(use: str, a: ScoreMatrix, b: ScoreMatrix | None = None, *, measure: str) -> str:
    """Return why ``use`` is supported for ``measure``, or raise :class:`UnsupportedUse` saying why not.

    Two matrices compare only on one instrument (:class:`evaltk.scoring.Instrument`: the
    scorer and its version, the fold rule, and every judge's model, rubric, template and
    decoding): a comparison whose instruments differ is refused, naming each field that
    differs (:func:`evaltk.scoring.instrument_differences`).  When either side is
    unpinned the use is returned with that said: the shared instrument is not established.
    """
    if use not in USES:
        raise ValueError(f"`use` must be one of {', '.join(USES)}; got {use!r}.")
    st = a.manifest.status(measure)
    ok, why = USES[use]
    if use == "absolute_level":
        if st.evidence == "calibrated":
            return f"{measure} is calibrated on {st.calibration.label_set}; the level carries its interval"
        raise UnsupportedUse(f"absolute level of {measure} refused: {st.label}; {why}.")
    if not ok:
        raise UnsupportedUse(f"{use} refused for {measure}: {why}.")
    if b is not None:
        sb = b.manifest.status(measure)
        ia, ib = a.manifest.instrument(measure), b.manifest.instrument(measure)
        diffs = instrument_differences(ia, ib)
        if diffs:
            raise UnsupportedUse(
                f"{measure}: the instruments differ: "
                + "; ".join(d.describe("first", "second").split(": ", 1)[1] for d in diffs)
                + f"; {USES['compare_versions'][1]}.")
        for side, stt in (("first", st), ("second", sb)):
            if stt.lifecycle == "superseded":
                raise UnsupportedUse(f"{measure}: the {side} matrix uses a superseded definition; "
                                     "it is retained for traceability, not for new comparisons.")
        if a.manifest.population != b.manifest.population:
            raise UnsupportedUse(
                f"{measure}: populations differ ({a.manifest.population} vs {b.manifest.population}); "
                f"{USES['compare_populations'][1]}.")
        unpinned = unpinned_sides(ia, ib, ("first matrix", "second matrix"))
        if unpinned:
            return (f"{why} (instrument unpinned, so that both sides share one instrument is not "
                    f"established: {'; '.join(unpinned)})")
    return why


@dataclass(frozen=True)
class Comparison:
    measure: str
    use: str
    mean_a: float | Abstention
    mean_b: float | Abstention
    difference: float | Abstention
    confidence_interval: tuple[float, float] | Abstention | None
    summary_a: MeanSummary
    summary_b: MeanSummary
    supported_because: str

    def to_frame(self) -> pd.DataFrame:
        ci = self.confidence_interval
        lo, hi = (None, None) if ci is None or isinstance(ci, Abstention) else ci
        d = self.difference
        return pd.DataFrame([{
            "measure": self.measure, "use": self.use,
            "mean_a": None if isinstance(self.mean_a, Abstention) else self.mean_a,
            "mean_b": None if isinstance(self.mean_b, Abstention) else self.mean_b,
            "difference": None if isinstance(d, Abstention) else d,
            "difference_cause": d.cause.value if isinstance(d, Abstention) else None,
            "ci_low": lo, "ci_high": hi,
            "n_a": self.summary_a.n, "n_valued_a": self.summary_a.n_valued,
            "n_b": self.summary_b.n, "n_valued_b": self.summary_b.n_valued,
            "coverage_a": self.summary_a.coverage, "coverage_b": self.summary_b.coverage,
            "supported_because": self.supported_because}])


def compare_measure(a: ScoreMatrix, b: ScoreMatrix, measure: str, *, use: str = "compare_agents",
                    confidence_level: float = 0.95) -> Comparison:
    """Difference of means ``b - a`` on one measure, refused where seed 002 refuses it.

    Allowed uses: ``compare_agents`` (same scorer version, same population) and
    ``regression`` (same scorer version).  The interval is Welch's normal
    approximation over valued records; abstentions are excluded and counted.
    """
    if use not in ("compare_agents", "regression"):
        raise ValueError("`use` must be 'compare_agents' or 'regression'.")
    confidence_level = check_confidence_level(confidence_level)
    why = check_use(use, a, b, measure=measure)
    sa, sb = a.mean_summary(measure), b.mean_summary(measure)
    ma, mb = sa.mean, sb.mean
    if isinstance(ma, Abstention) or isinstance(mb, Abstention):
        d: float | Abstention = Abstention(Cause.MISSING_EVIDENCE, "one side has no valued record")
        return Comparison(measure, use, ma, mb, d, None, sa, sb, why)
    ea, eb = sa.std_error, sb.std_error
    if isinstance(ea, Abstention) or isinstance(eb, Abstention):
        ci: tuple[float, float] | Abstention = Abstention(
            Cause.MISSING_EVIDENCE, "fewer than two valued records on a side: no interval")
    else:
        z = z_value(confidence_level)
        se = math.hypot(ea, eb)
        ci = (mb - ma - z * se, mb - ma + z * se)
    return Comparison(measure, use, ma, mb, mb - ma, ci, sa, sb, why)


def rank_supported(intervals: Mapping[str, tuple[float, float]]) -> pd.DataFrame:
    """Pairwise orderings that intervals support; overlapping pairs are refused, with the reason.

    Returns a tidy frame ``a, b, relation, supported, reason`` for every pair.
    """
    names = list(intervals)
    rows = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            (lx, hx), (ly, hy) = intervals[x], intervals[y]
            if lx > hy:
                rows.append((x, y, ">", True, "intervals do not overlap"))
            elif ly > hx:
                rows.append((x, y, "<", True, "intervals do not overlap"))
            else:
                rows.append((x, y, "?", False, USES["rank_overlapping"][1]))
    return pd.DataFrame(rows, columns=["a", "b", "relation", "supported", "reason"])
