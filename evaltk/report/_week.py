"""The week's scores as the weekly page shows them: from a score matrix in memory, or from a
scored dataset's per-partition summaries (``evaltk report --scored DIR``) without its rows.

Both ways go through one mergeable summary (:class:`evaltk.scale.ReportSummary`): the
in-memory page summarises its matrix with :func:`evaltk.scale.report_summary`, the scored
page combines the summaries ``score_dataset`` wrote beside each partition
(:func:`evaltk.scale.read_report_summary`).  What needs rows (the level on the human scale,
the checkpoint gate's pairs of runs) is computed from the matrix in memory and, from a
scored dataset, said to be unavailable, with the reason.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError
from ..values import CAUSES, NO_VALIDATED_THRESHOLD, Threshold, VerdictOutcome

#: Why a section that needs rows is not on a page rendered from a scored dataset.
NO_ROWS = ("not available from a scored dataset: its per-partition summaries keep counts, sums and count "
           "tables per measure and agent, not the runs themselves")
GATE_FROM_SUMMARIES = (f"*Checkpoint gate {NO_ROWS}: the gate pairs the candidate's and the baseline's runs task "
                       "by task and tests the paired differences, so it needs each run's scores.  Run it on the "
                       "two agents' score matrices in memory (`evaltk.judges.gate`, docs/judges.md).*")
LEVEL_FROM_SUMMARIES = (f"absolute level {NO_ROWS}: the prediction-powered estimate pairs each held-out labelled "
                        "run's judge score with its human label; compute it in memory with "
                        "`evaltk.absolute_level` on the labelled runs' score matrix")


def seed_order(frame: pd.DataFrame, column: str = "measure") -> pd.DataFrame:
    """``frame`` sorted by ``column`` in the seed's order of the measures (the trace vector,
    then the guide family; other names after them), stably."""
    from ..scoring import MEASURES

    rank = {m: i for i, m in enumerate(MEASURES)}
    return frame.sort_values(column, key=lambda s: s.map(lambda m: rank.get(m, len(rank))), kind="stable")


@dataclass(frozen=True)
class WeekScores:
    """The week's scores for the weekly page (:func:`weekly_scores`).

    Attributes
    ----------
    summaries : evaltk.scale.ReportSummary
        Every number of the page's score sections.
    manifest : evaltk.scoring.Manifest
        The scores' manifest (each measure's status and instrument).
    note : str
        Whose runs these are, for the page's "Sources" line.
    matrix : ScoreMatrix or None
        The rows, when the week was scored in memory; None from a scored dataset.
    scored : str
        The scored dataset read ("" when scored in memory).
    files : tuple of Path
        Provenance inputs: a local scored dataset's ``_complete.json`` (which records
        the SHA-256 of every file of the dataset) and ``manifest.json``.
    origin : str
        Whose runs these are, as a phrase of its own, for a page's "Source" line.
    """

    summaries: Any
    manifest: Any
    note: str
    matrix: Any = None
    scored: str = ""
    files: tuple[Path, ...] = ()
    origin: str = ""

    def measure_summary(self) -> pd.DataFrame:
        """The automatic tier per measure, in the seed's order: the columns of
        :func:`evaltk.values.summarize_frame` (n, abstentions per cause, coverage, mean)."""
        return seed_order(self.summaries.to_frame()).reset_index(drop=True)

    def summary(self, by: str | None = None) -> pd.DataFrame:
        """As :meth:`evaltk.ScoreMatrix.summary` (``by=None`` or ``"agent"``), automatic tier."""
        if by is None:
            return self.summaries.to_frame()
        if by != "agent":
            raise InputError(f"the weekly summaries are grouped by agent only; got by={by!r}.", field="by")
        return self.summaries.agents.to_frame()

    def calibration(self, *, confidence_level: float = 0.95, n_resamples: int = 2000, rng: Any = 0
                    ) -> pd.DataFrame:
        """The judges' folded score (automatic tier) against the human tier on the labelled runs,
        per measure: Cohen's kappa with its bootstrap interval, drawn from the combined count
        tables (:meth:`evaltk.scale.DatasetSummary.calibration_frame`), so the rows and the
        summaries give the identical interval for the same ``rng``."""
        from ..scale import DatasetSummary

        return DatasetSummary(self.summaries.scores, self.summaries.calibration).calibration_frame(
            confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)

    def directions(self, *, confidence_level: float = 0.95) -> pd.DataFrame:
        """Which way the judges' folded score (automatic tier) errs against the human tier, per
        measure with a judge-vs-human table: :func:`evaltk.stats.table_direction` on the combined
        count tables, so the lean, its interval and the exclusions are those of the labelled
        runs, from the summaries alone.  One row per measure, shaped as
        :func:`evaltk.report.judge_direction_table`'s (``judge`` is ``"automatic tier"``)."""
        from ..stats import table_direction
        from ._tables import _scale

        rows = []
        for m, t in self.summaries.calibration.items():
            f = table_direction(t, scale=_scale(m), confidence_level=confidence_level).to_frame()
            f.insert(0, "dimension", m)
            f.insert(0, "judge", "automatic tier")
            rows.append(f)
        return seed_order(pd.concat(rows, ignore_index=True), "dimension").reset_index(drop=True) if rows else \
            pd.DataFrame(columns=["judge", "dimension", "lean"])

    def verdicts(self, thresholds: Mapping[str, Threshold]) -> pd.DataFrame:
        """How many runs each verdict covers per measure and reason, as
        :func:`evaltk.report.verdict_table` gives on the rows: ``measure, verdict,
        verdict_reason, runs``, from the value counts and abstentions per cause."""
        rows: list[tuple[str, str, str, int]] = []
        groups = {k[0]: s for k, s in self.summaries.scores.groups.items() if k[1] == "automatic"}
        for m, th in thresholds.items():
            s = groups.get(m)
            if s is None:
                continue
            if th is None or not th.validated:
                rows.append((m, VerdictOutcome.ABSTAIN.value, NO_VALIDATED_THRESHOLD, s.n_valued))
            elif self.summaries.values.get(m) is None:
                from ..scale import MAX_VALUES

                rows.append((m, "not available", f"more than {MAX_VALUES} distinct values: the scored dataset "
                             "keeps no value counts for this measure", s.n_valued))
            else:
                vals = self.summaries.values[m]
                ok = sum(n for v, n in vals.items() if (v >= th.value if th.higher_is_better else v <= th.value))
                reason = f"threshold {th.value:g} ({th.source})"
                rows += [(m, VerdictOutcome.PASS.value, reason, ok), (m, VerdictOutcome.FAIL.value, reason,
                                                                     s.n_valued - ok)]
            rows += [(m, VerdictOutcome.ABSTAIN.value, f"value abstained ({c})", s.excluded[c]) for c in CAUSES]
        t = pd.DataFrame([r for r in rows if r[3] > 0], columns=["measure", "verdict", "verdict_reason", "runs"])
        return t.sort_values(["measure", "verdict", "verdict_reason"]).reset_index(drop=True)

    def levels(self, labels: pd.DataFrame, *, measures: Sequence[str], confidence_level: float = 0.95
               ) -> pd.DataFrame:
        """"Where you are" per measure (:func:`evaltk.report.level_table`).  From a scored dataset
        the manifest still says why a measure has no level; a measure that could have one
        says it needs rows."""
        from ..scoring import UnsupportedUse, check_use
        from ._tables import _no_level, level_table

        if self.matrix is not None:
            return level_table(self.matrix, labels, measures=measures, confidence_level=confidence_level)
        rows = []
        for m in measures:
            reason = LEVEL_FROM_SUMMARIES
            try:  # the manifest alone refuses an uncalibrated or unpinned measure, as in memory
                check_use("absolute_level", types.SimpleNamespace(manifest=self.manifest), measure=m)  # type: ignore[arg-type]
            except UnsupportedUse as e:
                reason = str(e)
            rows.append(_no_level(m, reason))
        return pd.DataFrame(rows)


def weekly_scores(sources: Any, demo: Any, *, scored: str = "") -> WeekScores:
    """The week's scores for the weekly page.

    With ``scored`` (a folder or fsspec URL written by ``evaltk scale score`` /
    :func:`evaltk.scale.score_dataset`): its per-partition summaries, combined after the
    completion record and their digests are checked; no score, run or ledger file is
    opened.  Otherwise the imported runs of ``sources`` or the demo corpus, scored in
    memory (:func:`evaltk.report.week_scores`).

    Raises
    ------
    evaltk.errors.SchemaViolation
        A partial dataset (no ``_complete.json``; the message names the partitions done
        and missing), or a summary missing or changed.
    evaltk.errors.UnreadableInput
        ``scored`` is not a scored dataset.
    """
    from ..scale import read_report_summary, report_summary
    from ._sources import week_scores

    if scored:
        s, manifest = read_report_summary(scored)
        local = "://" not in scored
        files = tuple(Path(scored) / f for f in ("_complete.json", "manifest.json")) if local else ()
        name = Path(scored).name if local else scored
        note = (f"scores, coverage, agents, verdicts and the judges against the human labels: the {s.n_traces:,} runs of the scored dataset {name} "
                f"(from its per-partition summaries; no score row read; {len(s.scorer_versions)} scorer "
                "version(s)); the judge sections: ")
        origin = (f"the {s.n_traces:,} runs of the scored dataset {name} (from its per-partition summaries; "
                  "no score row read)")
        return WeekScores(s, manifest, note, None, scored, files, origin)
    sm, note = week_scores(sources, demo)
    summary = report_summary(sm.frame, sm.runs)
    origin = (f"the {summary.n_traces:,} runs imported in {sources.imported.name}/, scored in memory"
              if sources.imported is not None else
              f"the demo corpus's {summary.n_traces:,} runs, scored in memory")
    return WeekScores(summary, sm.manifest, note, sm, origin=origin)
