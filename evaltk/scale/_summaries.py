"""The per-partition mergeable summaries of a scored dataset: what the weekly report reads.

:func:`score_dataset` writes, beside each partition's ``scores/``, ``runs/`` and
``ledger/`` files, ``summaries/<key>.json`` (:data:`SUMMARIES_DIR`): the partition's
:class:`ReportSummary`, recorded with its SHA-256 in the partition's marker and in the
completion record.  :func:`read_report_summary` checks the completion record and combines
those small files, so ``evaltk report --scored DIR`` renders a week of any size without
reading a score row: memory and time grow with the number of partitions, not of traces.

Every number of the weekly page's score sections is a function of these summaries:
counts, abstentions per cause, coverage and means per measure (and per agent) through
:class:`evaltk.stats.ScoreSummary` (n, n valued, sum, sum of squares, abstentions per
cause: exact counts, means to floating-point rounding), the judge-vs-human
:class:`evaltk.stats.ConfusionTable` per measure (Cohen's kappa and its bootstrap interval,
identical to the rows' for the same seed), and the automatic tier's value counts per
measure (verdicts at any threshold; kept up to :data:`MAX_VALUES` distinct values a
measure, else marked unavailable).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._display import HtmlTable
from .._io import write_json
from ..errors import SchemaViolation, UnreadableInput
from ..stats import (
    MISSING_KEY,
    PARTIAL_COLUMNS,
    ConfusionTable,
    ScoreSummary,
    calibration_table,
    combine_all,
    score_partials,
)
from ..values import CAUSES
from . import _remote
from ._remote import Root

#: Where a scored dataset keeps its per-partition summaries (``summaries/<key>.json``).
SUMMARIES_DIR = "summaries"
SUMMARY_FORMAT = "evaltk.scale.summary/1"
#: Distinct automatic-tier values kept per measure for verdicts; beyond, that measure's
#: value counts are dropped (``None``) and a verdict at a validated threshold says so.
MAX_VALUES = 1000
_KEYS = ("measure", "tier")
_AGENT_KEYS = ("measure", "agent")


def _merge_values(a: Mapping[float, int] | None, b: Mapping[float, int] | None) -> dict[float, int] | None:
    if a is None or b is None:
        return None
    out = dict(a)
    for v, n in b.items():
        out[v] = out.get(v, 0) + n
    return out if len(out) <= MAX_VALUES else None


@dataclass(frozen=True)
class ReportSummary(HtmlTable):
    """The mergeable summary of scored runs the weekly report shows: adds across partitions.

    Attributes
    ----------
    scores : ScoreSummary
        Grouped by ``measure, tier``.
    agents : ScoreSummary
        The automatic tier grouped by ``measure, agent`` (a run without an agent is the
        missing-key group).
    calibration : mapping of str to ConfusionTable
        Judge (automatic) vs human per measure of :data:`evaltk.scale.CALIBRATION_CATEGORIES`.
    values : mapping of str to (mapping of float to int, or None)
        Automatic-tier value counts per measure (None: more than :data:`MAX_VALUES`).
    n_traces, n_scores : int
        Runs scored and automatic-tier score rows.
    scorer_versions : frozenset of str
        Of the automatic tier.
    """

    scores: ScoreSummary
    agents: ScoreSummary
    calibration: Mapping[str, ConfusionTable] = field(default_factory=dict)
    values: Mapping[str, Mapping[float, int] | None] = field(default_factory=dict)
    n_traces: int = 0
    n_scores: int = 0
    scorer_versions: frozenset[str] = frozenset()

    def combine(self, other: ReportSummary) -> ReportSummary:
        """The summary of the union of two disjoint sets of runs."""
        cal = dict(self.calibration)
        for m, t in other.calibration.items():
            cal[m] = cal[m].combine(t) if m in cal else t
        vals = {m: _merge_values(self.values.get(m, {}), other.values.get(m, {}))
                for m in dict.fromkeys([*self.values, *other.values])}
        return ReportSummary(self.scores.combine(other.scores), self.agents.combine(other.agents), cal, vals,
                             self.n_traces + other.n_traces, self.n_scores + other.n_scores,
                             self.scorer_versions | other.scorer_versions)

    __add__ = combine

    def to_frame(self, *, tier: str = "automatic") -> pd.DataFrame:
        """One row per measure of ``tier``: the columns of :func:`evaltk.values.summarize_frame`."""
        groups = {k[:1]: s for k, s in self.scores.groups.items() if k[1] == tier}
        return ScoreSummary(("measure",), groups).to_frame()

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f"ReportSummary: {self.n_traces:,} runs, {self.n_scores:,} automatic scores", self.to_frame())]

    # ---- the JSON document of one partition
    def to_dict(self) -> dict[str, Any]:
        def rows(s: ScoreSummary) -> list[dict[str, Any]]:
            p = s.partials()
            return [{k: (None if k in s.keys and v is MISSING_KEY else _plain(v)) for k, v in r.items()}
                    for r in p.to_dict(orient="records")]

        return {"format": SUMMARY_FORMAT, "n_traces": self.n_traces, "n_scores": self.n_scores,
                "scorer_versions": sorted(self.scorer_versions),
                "scores": rows(self.scores), "agents": rows(self.agents),
                "calibration": {m: {"categories": list(t.categories), "counts": t.counts.tolist(),
                                    "n_units": t.n_units, "excluded_a": dict(t.excluded_a),
                                    "excluded_b": dict(t.excluded_b)} for m, t in self.calibration.items()},
                "values": {m: None if v is None else [[float(x), int(n)] for x, n in sorted(v.items())]
                           for m, v in self.values.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: str | None = None) -> ReportSummary:
        """The summary a partition's ``summaries/<key>.json`` holds (refused if it is not one)."""
        try:
            if d["format"] != SUMMARY_FORMAT:
                raise ValueError(f"format {d['format']!r}, expected {SUMMARY_FORMAT!r}")
            cal = {str(m): ConfusionTable(tuple(t["categories"]), np.asarray(t["counts"], np.int64),
                                          int(t["n_units"]), {c: int(t["excluded_a"][c]) for c in CAUSES},
                                          {c: int(t["excluded_b"][c]) for c in CAUSES})
                   for m, t in d["calibration"].items()}
            vals = {str(m): None if v is None else {float(x): int(n) for x, n in v} for m, v in d["values"].items()}
            return cls(_from_rows(d["scores"], _KEYS), _from_rows(d["agents"], _AGENT_KEYS), cal, vals,
                       int(d["n_traces"]), int(d["n_scores"]), frozenset(str(v) for v in d["scorer_versions"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SchemaViolation(f"integrity check `summary`: not a partition summary ({e})", file=file) from None


def _plain(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return None if v is pd.NA else v


def _from_rows(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> ScoreSummary:
    cols = [*keys, *PARTIAL_COLUMNS]
    frame = pd.DataFrame([[r[c] for c in cols] for r in rows], columns=cols)
    return ScoreSummary.from_partials(frame, keys) if len(frame) else ScoreSummary(tuple(keys))


def report_summary(scores: pd.DataFrame, runs: pd.DataFrame) -> ReportSummary:
    """The :class:`ReportSummary` of scored runs: a long score table (``ScoreMatrix.frame``, or
    a partition's ``scores/`` file) and its run table (``agent`` used when present).

    Examples
    --------
    >>> from evaltk import score_traces
    >>> from evaltk.data import make_demo
    >>> d = make_demo(n_traces=60, rng=0)
    >>> m = score_traces(d.traces, d.answers, d.labels)
    >>> s = report_summary(m.frame, m.runs)
    >>> s.n_traces == m.runs.shape[0], s.to_frame()["n"].sum() == s.n_scores
    (True, True)
    """
    from ._scale import CALIBRATION_CATEGORIES

    f = scores.assign(measure=scores["measure"].astype(str), tier=scores["tier"].astype(str))
    auto = f[(f["tier"] == "automatic").to_numpy(bool)]
    agent = (runs[["trace_id", "agent"]] if "agent" in runs.columns
             else pd.DataFrame({"trace_id": runs["trace_id"], "agent": pd.Series([None] * len(runs), dtype=object)}))
    by_agent = auto.merge(agent.astype({"trace_id": auto["trace_id"].dtype}), on="trace_id", how="left")
    values: dict[str, dict[float, int] | None] = {}
    for m, g in auto.groupby("measure", sort=True, observed=True):
        vc = g["value"].dropna().value_counts()
        values[str(m)] = {float(x): int(n) for x, n in vc.items()} if len(vc) <= MAX_VALUES else None
    return ReportSummary(
        ScoreSummary.from_partials(score_partials(f, list(_KEYS)), _KEYS),
        ScoreSummary.from_partials(score_partials(by_agent, list(_AGENT_KEYS)), _AGENT_KEYS),
        {m: calibration_table(f, m, categories=cats) for m, cats in CALIBRATION_CATEGORIES.items()},
        values, int(auto["trace_id"].nunique()), len(auto),
        frozenset(str(v) for v in auto["scorer_version"].dropna().unique()))


def write_partition_summary(folder: Path, key: str, scores: pd.DataFrame, runs: pd.DataFrame) -> str:
    """Write ``folder/summaries/<key>.json`` (atomically); its name relative to ``folder``."""
    rel = f"{SUMMARIES_DIR}/{key}.json"
    write_json(folder / rel, report_summary(scores, runs).to_dict())
    return rel


# =========================================================================== reading


def _read_bytes(root: Root, rel: str) -> bytes:
    if root.remote:
        return _remote.read_bytes(root.at(rel), root.so)
    from .._io import read_bytes

    try:
        return read_bytes(root.at(rel))
    except UnreadableInput:
        raise SchemaViolation("integrity check `digest`: a recorded file is missing", file=root.at(rel)) from None


def _markers(root: Root) -> list[str]:
    from ._scale import _PARTS_DIR, _RUN_FILE

    return [r[len(_PARTS_DIR) + 1:-len(".json")] for r in root.find(_PARTS_DIR, (".json",))
            if not r.endswith("/" + _RUN_FILE)]


def _few(keys: Sequence[str], n: int = 5) -> str:
    return ", ".join(keys[:n]) + (f" and {len(keys) - n} more" if len(keys) > n else "")


def _partial_message(root: Root) -> str:
    """How far an interrupted run got: the partitions done and, when the store can be listed, those missing."""
    from ._scale import _PARTS_DIR, _RUN_FILE, COMPLETE_FILE, discover_partitions

    done = sorted(_markers(root))
    total: int | None = None
    missing: list[str] = []
    try:
        run = root.read_json(f"{_PARTS_DIR}/{_RUN_FILE}")
        total = int(run["partitions"])
        parts, _ = discover_partitions(run["traces"], storage_options=root.so)
        missing = sorted(p.key for p in parts if p.key not in set(done))
    except Exception:  # noqa: BLE001 - the store is elsewhere or gone: say what is known
        pass
    of = f" of {total}" if total is not None else ""
    msg = (f"integrity check `complete`: no completion record {COMPLETE_FILE}: the dataset is partial "
           f"(a `scale score` that failed, was interrupted or is still running): {len(done)}{of} partition(s) done")
    msg += f" ({_few(done)})" if done else ""
    if missing:
        msg += f"; missing: {_few(missing)}"
    elif total is not None and total > len(done):
        msg += f"; {total - len(done)} missing"
    return msg + "; finish it with `evaltk scale score ... --resume`"


def check_complete(out: str | Path, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The completion record of a scored dataset, refused unless the dataset is complete and
    carries every partition's summary (reads ``_complete.json`` only).

    Raises
    ------
    UnreadableInput
        ``out`` is not a folder.
    SchemaViolation
        No ``_complete.json`` (the message names the partitions done and missing), not a
        completion record, or a partition written without its summary.
    """
    from ._scale import COMPLETE_FILE, COMPLETE_FORMAT

    root = Root(out, storage_options)
    if not root.isdir():
        raise UnreadableInput("not a scored dataset (a folder written by `evaltk scale score` expected)",
                              file=str(root))
    if not root.isfile(COMPLETE_FILE):
        raise SchemaViolation(_partial_message(root), file=str(root))
    marker = root.at(COMPLETE_FILE)
    doc = root.read_json(COMPLETE_FILE)
    try:
        if doc["format"] != COMPLETE_FORMAT:
            raise ValueError(f"format {doc['format']!r}")
        parts = [(str(p["key"]), {str(k): str(v) for k, v in p["files"].items()}) for p in doc["partitions"]]
        str(doc["manifest"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SchemaViolation(f"integrity check `complete`: not a completion record ({e})", file=marker) from None
    lacking = [k for k, files in parts if f"scores/{k}.parquet" in files and f"{SUMMARIES_DIR}/{k}.json" not in files]
    if lacking:
        raise SchemaViolation(
            f"integrity check `summary`: {len(lacking)} partition(s) have no summary file ({_few(lacking)}): "
            f"the dataset was written by an evaltk that did not write {SUMMARIES_DIR}/; score it again with "
            "`evaltk scale score ... --overwrite`, or summarise its rows with `evaltk scale summarize`",
            file=marker)
    return doc


def read_report_summary(out: str | Path, *, storage_options: Mapping[str, Any] | None = None
                        ) -> tuple[ReportSummary, Any]:
    """The combined :class:`ReportSummary` of a scored dataset and its manifest, from the
    per-partition summaries only (no score, run or ledger file is opened).

    Checks the completion record (:func:`check_complete`), the manifest's and every
    summary file's SHA-256 against it.

    Raises
    ------
    UnreadableInput, SchemaViolation
        As :func:`check_complete`; a summary or the manifest missing or changed (``digest``).
    """
    from ..scoring import Manifest
    from ._scale import COMPLETE_FILE

    doc = check_complete(out, storage_options=storage_options)
    root = Root(out, storage_options)
    marker = root.at(COMPLETE_FILE)
    root.check_digest("manifest.json", str(doc["manifest"]), recorded_in=marker)
    manifest = Manifest.from_dict(root.read_json("manifest.json"), source=root.at("manifest.json"))
    pieces = []
    for part in doc["partitions"]:
        rel = f"{SUMMARIES_DIR}/{part['key']}.json"
        if rel not in part["files"]:
            continue  # a partition whose runs were all dropped: nothing scored, only its ledger
        data = _read_bytes(root, rel)
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if got != part["files"][rel]:
            raise SchemaViolation(f"integrity check `digest`: the file changed since {marker} recorded it "
                                  f"({part['files'][rel]} recorded, {got} now)", file=root.at(rel))
        try:
            d = json.loads(data)
        except ValueError as e:
            raise SchemaViolation(f"integrity check `summary`: not JSON ({e})", file=root.at(rel)) from None
        pieces.append(ReportSummary.from_dict(d, file=root.at(rel)))
    if not pieces:
        return ReportSummary(ScoreSummary(_KEYS), ScoreSummary(_AGENT_KEYS)), manifest
    return combine_all(pieces), manifest
