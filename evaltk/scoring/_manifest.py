"""The manifest that travels with every score matrix, and THE promotion rule (seed 002)."""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from .. import __version__ as _evaltk_version
from .._display import HtmlTable
from .._validation import zero_width
from ..values import (
    Abstention,
    Threshold,
)
from ._instrument import Instrument
from ._measures import (
    DIRECTION_OF_ERROR,
    MEASURES,
    SCORERS,
)

# --------------------------------------------------------------------------- the promotion rule

#: Seed 002's five conditions, in order; every check of the promotion rule uses these names.
PROMOTION_CONDITIONS: tuple[str, ...] = (
    "human_ceiling",
    "degenerate_baseline",
    "held_out_label_set",
    "threshold_by_decision_cost",
    "stated_interval",
)


def _finite(*xs: Any) -> bool:
    return all(isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in xs)


def _pair(x: Any) -> tuple[Any, Any] | None:
    """``x`` as a (low, high) pair, or None when it is not one (an abstention, None, a scalar)."""
    try:
        lo, hi = x
    except (TypeError, ValueError):
        return None
    return lo, hi


def _named(x: Any) -> bool:
    return isinstance(x, str) and bool(x.strip())


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def _why(*xs: Any) -> str:
    """``" (cause: reason)"`` of the first abstaining number among ``xs``, else ``""``."""
    ab = next((x for x in xs if isinstance(x, Abstention)), None)
    return "" if ab is None else f" ({ab.cause.value}: {ab.reason})"


def _ceiling_condition(rec: CalibrationRecord) -> tuple[bool, str]:
    hc = rec.human_ceiling
    if hc is None or len(hc) != 3 or not _finite(*hc) or not hc[1] <= hc[0] <= hc[2]:
        return False, "no human-human agreement with a finite interval around it" + _why(*(hc or ()))
    if why := zero_width((hc[1], hc[2]), what="human-human"):
        return False, why
    return True, f"human-human agreement {hc[0]:.3f} [{hc[1]:.3f}, {hc[2]:.3f}]"


def _baseline_condition(rec: CalibrationRecord) -> tuple[bool, str]:
    if rec.baseline is None or not _finite(rec.baseline):
        return False, "no degenerate (always-majority) baseline on the same items" + _why(rec.baseline)
    return True, f"degenerate baseline {rec.baseline:.3f} on the same items"


def _held_out_condition(rec: CalibrationRecord) -> tuple[bool, str]:
    """Held out is a fact about two declared item sets, not a flag: ``held_out=True`` alone never meets it."""
    if not _named(rec.label_set):
        return False, "the held-out label set is not named (`label_set`)"
    if not rec.evaluation_items or rec.n_items <= 0:
        return False, f"label set {rec.label_set!r} names no evaluation items (`evaluation_items`)"
    if rec.tuning_items is None:
        return False, "the items that shaped the scorer are not declared (`tuning_items`)"
    overlap = set(rec.evaluation_items) & set(rec.tuning_items)
    if overlap:
        ex = sorted(map(str, overlap))[:3]
        return False, (f"{len(overlap)} evaluation item(s) also shaped the scorer (fitted, not held out), "
                       f"e.g. {ex}")
    if rec.held_out is not True:
        return False, f"label set {rec.label_set!r} is recorded as fitted, not held out"
    return True, (f"label set {rec.label_set!r}: {len(set(rec.evaluation_items))} evaluation items, none among "
                  f"the {len(set(rec.tuning_items))} tuning items")


def _threshold_condition(rec: CalibrationRecord) -> tuple[bool, str]:
    th = rec.threshold
    if th is None:
        return False, "no threshold"
    if th.validated is not True:
        return False, f"threshold {th.value:g} is not validated ({th.source.strip() or 'no source'})"
    if not _named(th.source):
        return False, f"validated threshold {th.value:g} has no recorded source (blank `source`)"
    return True, f"threshold {th.value:g} ({th.source.strip()})"


def _interval_condition(rec: CalibrationRecord) -> tuple[bool, str]:
    ci = _pair(rec.interval)
    if ci is None or not _finite(*ci, rec.estimate) or not ci[0] <= rec.estimate <= ci[1]:
        return False, f"no finite interval around the {rec.statistic} estimate" + _why(rec.estimate, rec.interval)
    cl = rec.confidence_level
    if cl is None or not _finite(cl) or not 0 < cl < 1:
        return False, f"the interval's confidence level {rec.confidence_level!r} is not in (0, 1)"
    if why := zero_width(ci, what=rec.statistic, n=rec.n_items):
        return False, why
    return True, (f"{rec.statistic} {rec.estimate:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] at "
                  f"{rec.confidence_level:.0%} on {rec.n_items} items")


_CHECKS = (_ceiling_condition, _baseline_condition, _held_out_condition, _threshold_condition,
           _interval_condition)


def promotion_conditions(record: CalibrationRecord) -> pd.DataFrame:
    """Seed 002's promotion rule, the one statement of it: all five conditions, or provisional.

    Calibrated implies a human ceiling, a degenerate baseline, a label set held out from
    everything that shaped the scorer, a threshold set by decision cost, and a stated
    interval.  Each is checked on the evidence the record carries, never on a flag:
    ``held_out=True`` meets nothing without a named label set, its evaluation items and
    the declared tuning items, disjoint from them; a blank threshold ``source`` is no
    source.  :meth:`CalibrationRecord.conditions`, :meth:`Manifest.calibrate`,
    :meth:`Manifest.from_dict` and :func:`evaltk.judges.promotion_check` all call this.

    Returns
    -------
    DataFrame
        ``condition, met, evidence``, one row per name in :data:`PROMOTION_CONDITIONS`.

    Examples
    --------
    >>> rec = CalibrationRecord(label_set="held-out W40", statistic="kappa", estimate=0.7,
    ...     interval=(0.6, 0.8), confidence_level=0.95, held_out=True,
    ...     human_ceiling=(0.8, 0.7, 0.9), baseline=0.0,
    ...     threshold=Threshold(0.5, validated=True, source="   "), n_items=2,
    ...     evaluation_items=(1, 2), tuning_items=())
    >>> promotion_conditions(rec).query("not met")["condition"].tolist()
    ['threshold_by_decision_cost']
    """
    rows = [(name, *check(record)) for name, check in zip(PROMOTION_CONDITIONS, _CHECKS, strict=True)]
    return pd.DataFrame(rows, columns=["condition", "met", "evidence"])


# --------------------------------------------------------------------------- manifest


def population_digest(runs: pd.DataFrame) -> str:
    """The default population label of a set of runs: a digest of its distinct tasks.

    Two score matrices compare only on one population (seed 002); every engine labels a
    population with this, so an in-memory and a DuckDB or Dask score of the same runs match.
    """
    tasks = sorted(map(str, pd.unique(runs["task"]))) if len(runs) else []
    h = hashlib.sha256("\n".join(tasks).encode("utf-8")).hexdigest()[:16]
    return f"tasks:{h}"


@dataclass(frozen=True)
class CalibrationRecord:
    """Evidence for promoting a measure to ``calibrated`` (seed 002, the promotion rule).

    All five conditions of :func:`promotion_conditions` must hold: a human ceiling, a
    degenerate baseline, a label set held out from everything that shaped the scorer, a
    threshold set by decision cost, and a stated interval.  Fitted (not held-out)
    evidence is recorded and shown as such; it never promotes.

    ``evaluation_items`` are the items of ``label_set`` the agreement was measured on;
    ``tuning_items`` every item that shaped the scorer (``None``: not declared).  Held
    out means both are declared and disjoint; ``held_out=True`` is a claim they must back.
    """

    label_set: str
    statistic: str
    #: an undefined number keeps its :class:`~evaltk.values.Abstention` (cause and reason), never a NaN
    estimate: float | Abstention
    interval: tuple[float, float] | Abstention
    confidence_level: float | None  # None: no interval was computed
    held_out: bool
    human_ceiling: tuple[float | Abstention, float | Abstention, float | Abstention] | None  # estimate, low, high
    baseline: float | Abstention | None
    threshold: Threshold | None
    n_items: int
    evaluation_items: tuple[Any, ...] | None = None
    tuning_items: tuple[Any, ...] | None = None

    def conditions(self) -> dict[str, bool]:
        """The five conditions of the promotion rule, each checked on the evidence itself."""
        t = promotion_conditions(self)
        return dict(zip(t["condition"], t["met"].astype(bool), strict=True))

    def unmet(self) -> list[str]:
        return [k for k, ok in self.conditions().items() if not ok]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record; an abstaining number is ``{"cause": ..., "reason": ...}``."""
        d = {k: getattr(self, k) for k in ("label_set", "statistic", "confidence_level", "held_out", "n_items")}
        d["estimate"] = _number_json(self.estimate)
        d["baseline"] = _number_json(self.baseline)
        d["interval"] = _number_json(self.interval) if isinstance(self.interval, Abstention) else list(self.interval)
        d["human_ceiling"] = None if self.human_ceiling is None else [_number_json(x) for x in self.human_ceiling]
        d["threshold"] = None if self.threshold is None else {
            "value": self.threshold.value, "validated": self.threshold.validated,
            "source": self.threshold.source, "higher_is_better": self.threshold.higher_is_better}
        for k in ("evaluation_items", "tuning_items"):
            items = getattr(self, k)
            d[k] = None if items is None else [_plain(x) for x in items]
        d["conditions"] = self.conditions()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CalibrationRecord:
        th = d.get("threshold")
        hc = d.get("human_ceiling")
        ev, tu = d.get("evaluation_items"), d.get("tuning_items")
        iv = _number_from_json(d["interval"])
        return cls(label_set=d["label_set"], statistic=d["statistic"], estimate=_number_from_json(d["estimate"]),
                   interval=iv if isinstance(iv, Abstention) else tuple(iv), confidence_level=d["confidence_level"],
                   held_out=d["held_out"],
                   human_ceiling=None if hc is None else tuple(_number_from_json(x) for x in hc),
                   baseline=_number_from_json(d.get("baseline")),
                   threshold=None if th is None else Threshold(**th), n_items=d["n_items"],
                   evaluation_items=None if ev is None else tuple(ev),
                   tuning_items=None if tu is None else tuple(tu))


def _number_json(x: Any) -> Any:
    """A number of a calibration record as JSON: an abstention keeps its cause and reason."""
    return {"cause": x.cause.value, "reason": x.reason} if isinstance(x, Abstention) else x


def _number_from_json(x: Any) -> Any:
    if isinstance(x, Mapping) and set(x) == {"cause", "reason"}:
        return Abstention(x["cause"], x["reason"])
    return x


def _status_problem(evidence: Any, lifecycle: Any, rec: CalibrationRecord | None) -> tuple[str, str] | None:
    """(field, what is wrong) when a status breaks the vocabulary or claims more than its
    evidence: the one check :class:`MeasureStatus` and :meth:`Manifest.from_dict` apply."""
    if evidence not in ("calibrated", "provisional"):
        return "evidence", f"evidence status {evidence!r} is not calibrated or provisional"
    if lifecycle not in ("current", "superseded"):
        return "lifecycle", f"lifecycle status {lifecycle!r} is not current or superseded"
    if evidence == "calibrated" and (rec is None or rec.unmet()):
        why = "no calibration record" if rec is None else f"unmet: {', '.join(rec.unmet())}"
        return "evidence", (f"`calibrated` is not supported by its evidence ({why}); the promotion rule "
                            "needs all five conditions on a calibration record")
    return None


@dataclass(frozen=True)
class MeasureStatus:
    """Both status axes of one measure, its scorer and its direction-of-error note."""

    measure: str
    evidence: str  # "calibrated" | "provisional"
    lifecycle: str  # "current" | "superseded"
    scorer: str
    scorer_version: str
    direction_of_error: str
    evidence_kind: str = "none"  # "none" | "fitted" | "held_out"
    calibration: CalibrationRecord | None = None
    #: What produced the measure's numbers (:class:`evaltk.scoring.Instrument`); None when not
    #: recorded.  Its scorer and version are this status's: they are kept in step here.
    instrument: Instrument | None = None

    def __post_init__(self) -> None:
        """Seed 002: "calibrated belongs on a record" and "calibrated implies all five": a
        status is refused when it claims ``calibrated`` without a record meeting them.  The
        instrument's scorer and version are kept in step with the status's."""
        problem = _status_problem(self.evidence, self.lifecycle, self.calibration)
        if problem is not None:
            raise ValueError(f"{self.measure}: {problem[1]}")
        ins = self.instrument
        if ins is not None and (ins.measure, ins.scorer, ins.scorer_version) != (
                self.measure, self.scorer, self.scorer_version):
            object.__setattr__(self, "instrument", replace(ins, measure=self.measure, scorer=self.scorer,
                                                           scorer_version=self.scorer_version))

    @property
    def label(self) -> str:
        """Status as a reader should see it: fitted evidence is never hidden under 'provisional'."""
        if self.evidence == "provisional" and self.evidence_kind == "fitted":
            return "provisional (fitted evidence only: does not meet the promotion rule)"
        if self.evidence == "provisional" and self.calibration is not None:
            return f"provisional (calibration record fails: {', '.join(self.calibration.unmet())})"
        if self.evidence == "provisional":
            return "provisional (no calibration record)"
        return f"calibrated on {self.calibration.label_set}" if self.calibration else "calibrated"


def _default_instrument(measure: str) -> Instrument | None:
    """A rule scorer's instrument is the rule; a judged measure's is recorded when it is scored."""
    sc = SCORERS[measure]
    return Instrument(measure, sc.name, sc.version, kind="rule") if sc.kind == "rule" else None


@dataclass(frozen=True)
class Manifest(HtmlTable):
    """Travels with every score matrix: per measure both status axes, scorer, lean."""

    measures: Mapping[str, MeasureStatus]
    population: str
    created_with: str = f"evaltk {_evaltk_version}"
    fold_rule: str = "majority; a tie or a cannot-tell majority abstains"

    @classmethod
    def default(cls, population: str) -> Manifest:
        return cls(
            measures={m: MeasureStatus(m, "provisional", "current", SCORERS[m].name, SCORERS[m].version,
                                       DIRECTION_OF_ERROR[m], instrument=_default_instrument(m))
                      for m in MEASURES},
            population=population,
        )

    def instrument(self, measure: str) -> Instrument:
        """The instrument of ``measure`` (an ``unrecorded`` one when the manifest has none)."""
        st = self.status(measure)
        return st.instrument or Instrument(measure, st.scorer, st.scorer_version)

    def instruments(self) -> pd.DataFrame:
        """One row per measure: ``measure, instrument_status, instrument_digest, instrument``
        (a one-line description) and ``unpinned`` (why it is not pinned, or empty)."""
        rows = []
        for m in self.measures:
            ins = self.instrument(m)
            rows.append({"measure": m, "instrument_status": ins.status, "instrument_digest": ins.digest,
                         "instrument": ins.describe(), "unpinned": "; ".join(ins.unpinned_reasons)})
        return pd.DataFrame(rows, columns=["measure", "instrument_status", "instrument_digest", "instrument",
                                           "unpinned"])

    def status(self, measure: str) -> MeasureStatus:
        try:
            return self.measures[measure]
        except KeyError:
            raise KeyError(f"`measure` must be one of {', '.join(self.measures)}; got {measure!r}.") from None

    def calibrate(self, measure: str, record: CalibrationRecord) -> Manifest:
        """Attach a calibration record; ``calibrated`` only when all five conditions hold."""
        st = self.status(measure)
        ok = not record.unmet()
        new = replace(st, evidence="calibrated" if ok else "provisional",
                      evidence_kind="held_out" if record.held_out else "fitted", calibration=record)
        return replace(self, measures={**self.measures, measure: new})

    def supersede(self, measure: str) -> Manifest:
        st = self.status(measure)
        return replace(self, measures={**self.measures, measure: replace(st, lifecycle="superseded")})

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f"Manifest: population {self.population}, {self.created_with}", self.to_frame())]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "measure": s.measure, "evidence": s.evidence, "lifecycle": s.lifecycle, "status": s.label,
            "scorer": s.scorer, "scorer_version": s.scorer_version, "evidence_kind": s.evidence_kind,
            "direction_of_error": s.direction_of_error, "instrument_status": self.instrument(s.measure).status,
            "instrument_digest": self.instrument(s.measure).digest} for s in self.measures.values()])

    def to_dict(self) -> dict[str, Any]:
        return {
            "population": self.population, "created_with": self.created_with, "fold_rule": self.fold_rule,
            "measures": {m: {"evidence": s.evidence, "lifecycle": s.lifecycle, "scorer": s.scorer,
                             "scorer_version": s.scorer_version, "direction_of_error": s.direction_of_error,
                             "evidence_kind": s.evidence_kind, "status": s.label,
                             "calibration": None if s.calibration is None else s.calibration.to_dict(),
                             "instrument": None if s.instrument is None else s.instrument.to_dict()}
                         for m, s in self.measures.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> Manifest:
        """Read a manifest back, refusing a status its evidence does not support.

        A manifest on disk is input like any other: ``calibrated`` is accepted only with a
        calibration record that meets all five conditions, and both axes must use the
        status vocabulary.
        """
        from ..errors import SchemaViolation

        ms = {}
        try:
            items = d["measures"].items()
        except (KeyError, AttributeError, TypeError):
            raise SchemaViolation("a manifest needs a `measures` mapping", file=source, field="measures") from None
        for m, s in items:
            where = f"measures.{m}"
            if not isinstance(s, Mapping):
                raise SchemaViolation(f"a measure's status must be an object; got {type(s).__name__}",
                                      file=source, field=where)
            cal = s.get("calibration")
            if cal is not None and not isinstance(cal, Mapping):
                raise SchemaViolation(f"a calibration record must be an object or null; got "
                                      f"{type(cal).__name__}", file=source, field=f"{where}.calibration")
            try:
                rec = None if cal is None else CalibrationRecord.from_dict(cal)
                problem = _status_problem(s["evidence"], s["lifecycle"], rec)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise SchemaViolation(f"malformed measure status: {e}", file=source, field=where) from None
            if problem is not None:
                raise SchemaViolation(problem[1], file=source, field=f"{where}.{problem[0]}")
            try:
                ins = s.get("instrument")
                st = MeasureStatus(m, s["evidence"], s["lifecycle"], s["scorer"], s["scorer_version"],
                                   s["direction_of_error"], s.get("evidence_kind", "none"), rec,
                                   None if ins is None else Instrument.from_dict(
                                       ins, measure=m, scorer=s["scorer"], scorer_version=s["scorer_version"]))
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise SchemaViolation(f"malformed measure status: {e}", file=source, field=where) from None
            ms[m] = st
        try:
            return cls(measures=ms, population=d["population"], created_with=d["created_with"],
                       fold_rule=d["fold_rule"])
        except KeyError as e:
            raise SchemaViolation(f"missing {e}", file=source, field=str(e).strip("'")) from None
