"""Scale past one machine: score and summarise a trace store with DuckDB or Dask, same numbers.

Scoring is row-local (one trace never changes another's row) and every aggregate is
a mergeable summary (:mod:`evaltk.stats`), so a store too large for memory is
scored one partition at a time and the partial summaries are added.  The engines
(an optional extra: ``pip install "evaltk[scale]"``):

``"pandas"``
    partitions one after another in this process (no extra dependency); the reference.
``"duckdb"`` or a ``duckdb.DuckDBPyConnection``
    a single machine with more data than memory: DuckDB checks the store (trace ids
    unique across partitions), selects each partition's answers when they are not
    stored beside it (a semi-join), and computes every summary with SQL over the
    written score dataset, under the memory limit you set (``memory_limit="4GB"``;
    DuckDB spills to ``temp_directory``).  Partitions are scored in worker processes;
    the limit also bounds them (with this process): as many run at once as the measured
    peak of one fits, and a run past it is refused naming the partition.
``"dask"`` or a ``distributed.Client``
    a cluster: one task per partition on the workers, partial summaries combined by
    a tree reduction on the cluster.  :func:`score_partitions` scores a Dask
    DataFrame of trace records with ``map_partitions`` and a declared output schema
    (:data:`SCORE_META`); :func:`dask_score_summary` reduces a score DataFrame.

The trace store
---------------
A file, or a folder of JSONL or Parquet trace files, hive-partitioned or not
(``traces/week=2026-W40/part-0.parquet``, ``traces/agent=a1/part-0.jsonl``).  One file
is one partition: the unit of work.  Answers and labels (CSV, JSONL or Parquet) are
either *co-partitioned* (a folder with a file at the same relative path, extension
aside, holding the answers of that partition's traces: the fast layout) or one file
or folder for the whole store (each partition's rows are then selected by trace id).
A trace id must not occur in two partitions (checked with DuckDB when it is
installed); ``key=value`` folder names become run columns when the records lack them.

Output (``out=``): ``scores/``, ``runs/`` and ``ledger/`` Parquet datasets mirroring
the store's partitions, ``manifest.json``, and last the completion record
``_complete.json`` (:data:`COMPLETE_FILE`: every partition's files with their SHA-256;
docs/outputs.md).  Each file is written atomically.  ``summarize_dataset(out, ...)``
reads them back with any engine, after checking the completion record, the digests
and every scores partition (:func:`evaltk.scoring.check_score_table`): a partial or
edited dataset is refused.

Results are identical to the in-memory path (``score_traces`` on the whole store):
counts and abstention tallies exactly, sums and means to floating-point rounding
(different addition order, well under 1e-12), bootstrap intervals identical for the
same ``rng`` (they are drawn from the combined count tables).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import _io
from .._display import HtmlTable
from .._io import (
    atomic_path,
    check_output,
    file_digest,
    write_jsonl,
    write_parquet,
)
from .._io import proc_status as _proc_status
from .._io import release_memory as _release_memory
from .._validation import import_optional
from ..errors import InputError, LimitExceeded, OutputRefused, SchemaViolation, UnreadableInput
from ..stats import (
    PARTIAL_COLUMNS,
    ConfusionTable,
    PassCounts,
    ScoreSummary,
    TreeCombiner,
    combine_all,
    pass_counts,
    score_partials,
)
from ..values import CAUSES, Abstention, normalize_measure
from . import _remote
from ._remote import Root, is_remote
from ._summaries import (
    CALIBRATION_CATEGORIES,
    SUMMARIES_DIR,
    ReportSummary,
    _run_column,
    _run_positions,
    report_summary,
    write_partition_summary,
)

#: Progress of long work (partitions scored) is logged here at INFO, never printed.
logger = logging.getLogger("evaltk.scale")

#: Engine names accepted by ``engine=`` (an engine object works too).
ENGINES: tuple[str, ...] = ("pandas", "duckdb", "dask")

#: The declared output schema of a scored partition (``ScoreMatrix.frame`` with plain strings).
SCORE_META: pd.DataFrame = pd.DataFrame({
    "trace_id": pd.Series(dtype=object), "measure": pd.Series(dtype=object), "tier": pd.Series(dtype=object),
    "value": pd.Series(dtype=np.float64), "cause": pd.Series(dtype=object), "reason": pd.Series(dtype=object),
    "scorer": pd.Series(dtype=object), "scorer_version": pd.Series(dtype=object),
    "n_raters": pd.Series(dtype=np.int32)})


_TRACE_SUFFIXES = (".parquet", ".jsonl", ".ndjson", ".json")
_ANSWER_SUFFIXES = (".parquet", ".jsonl", ".ndjson", ".json", ".csv")
_RUN_OUT = ("trace_id", "task", "domain", "domain_source", "domain_record", "status", "n_steps", "agent",
            "steps_missing", "guide")
_HIVE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
#: The folder value of a missing hive key (Hive's convention): DuckDB
#: (``hive_partitioning = true``) and Arrow datasets read it back as NULL, and so does
#: evaltk, so a run without the key stays in the missing-key group
#: (:data:`evaltk.stats.MISSING_KEY`) after a store round trip.
_HIVE_MISSING = "__HIVE_DEFAULT_PARTITION__"
#: The completion record of a scored dataset, written last by :func:`score_dataset`:
#: ``{"format": COMPLETE_FORMAT, "manifest": "sha256:<hex>", "partitions": [{"key": ..., "files":
#: {"scores/<key>.parquet": "sha256:<hex>", "runs/...": ..., "ledger/...": ...}}, ...]}``
#: (a partition whose runs were all dropped has only its ledger file).  A dataset without it
#: is partial; :func:`summarize_dataset` refuses it (docs/outputs.md).
COMPLETE_FILE = "_complete.json"
COMPLETE_FORMAT = "evaltk.scale.complete/1"
_TABLES = ("scores", "runs", "ledger")
#: Per-partition markers (``_partitions/<key>.json``: the partition's files and digests,
#: written after them) and the run's parameters (``_partitions/_run.json``): what ``resume``
#: reads to skip the partitions an interrupted run finished.
_PARTS_DIR = "_partitions"
_RUN_FILE = "_run.json"
#: Shared answers and labels repartitioned by their trace's partition, removed when the run completes.
_SHUFFLE_DIR = "_shuffle"
#: Everything :func:`score_dataset` writes in ``out`` (what ``overwrite=True`` removes, and nothing else).
_WRITES = (*_TABLES, SUMMARIES_DIR, "manifest.json", COMPLETE_FILE, _PARTS_DIR, _SHUFFLE_DIR)
_LOG = logging.getLogger("evaltk.scale")


# =========================================================================== the summary of a dataset


@dataclass(frozen=True)
class DatasetSummary(HtmlTable):
    """Every aggregate of a scored dataset, as mergeable summaries.

    Attributes
    ----------
    scores : ScoreSummary
        Means with abstentions per cause and coverage, grouped by ``measure, tier``
        (and the ``by`` run columns).
    calibration : mapping of str to ConfusionTable
        Judge (``automatic``) vs human tables per measure of :data:`CALIBRATION_CATEGORIES`.
    pass_counts : PassCounts
        ``x_task`` (automatic tier) trials and passes per task: pass@k and pass^k.
    tasks : frozenset of str
        Distinct task prompts (the population digest of the manifest).
    n_runs : int
        Kept runs.
    """

    scores: ScoreSummary
    calibration: Mapping[str, ConfusionTable] = field(default_factory=dict)
    pass_counts: PassCounts = field(default_factory=PassCounts)
    tasks: frozenset[str] = frozenset()
    n_runs: int = 0

    def combine(self, other: DatasetSummary) -> DatasetSummary:
        """Summary of the union of two disjoint sets of partitions."""
        cal = dict(self.calibration)
        for m, t in other.calibration.items():
            cal[m] = cal[m].combine(t) if m in cal else t
        return DatasetSummary(self.scores.combine(other.scores), cal,
                              self.pass_counts.combine(other.pass_counts), self.tasks | other.tasks,
                              self.n_runs + other.n_runs)

    __add__ = combine

    @property
    def population(self) -> str:
        """The manifest's population label: a digest of the task set (as ``score_traces``)."""
        from ..scoring import population_digest

        return population_digest(pd.DataFrame({"task": sorted(self.tasks)}))

    def to_frame(self, *, tier: str = "automatic") -> pd.DataFrame:
        """The table ``ScoreMatrix.summary(by=...)`` gives for ``tier``: one row per measure (and group)."""
        keys = self.scores.keys
        ti = keys.index("tier")
        groups = {k[:ti] + k[ti + 1:]: s for k, s in self.scores.groups.items() if k[ti] == tier}
        return ScoreSummary(keys[:ti] + keys[ti + 1:], groups).to_frame()

    def calibration_frame(self, *, statistic: str = "cohen_kappa", confidence_level: float = 0.95,
                          n_resamples: int = 2000, rng: Any = None, method: str = "percentile") -> pd.DataFrame:
        """Judge-vs-human coefficient per measure with its bootstrap interval, from the combined tables.

        One row per measure: ``measure, statistic, ci_low, ci_high, ci_reason, n_units,
        n_pairable, coverage`` and the units each side left out per cause; ``ci_reason`` says
        why there is no interval where there is none (a degenerate bootstrap distribution: every
        resample gives the same value), else None.  The replicates are drawn
        from the combined count table (never from rows), so every engine gives the same
        interval for the same ``rng``.
        """
        from .._validation import check_rng

        gen = check_rng(rng)
        rows = []
        for m in sorted(self.calibration):
            t = self.calibration[m]
            r = t.bootstrap(statistic, method=method, n_resamples=n_resamples,
                            confidence_level=confidence_level, rng=gen)
            st, ci = r.statistic, r.confidence_interval
            row = {"measure": m, "statistic_name": statistic,
                   "statistic": None if isinstance(st, Abstention) else st,
                   "ci_low": None if isinstance(ci, Abstention) else ci[0],
                   "ci_high": None if isinstance(ci, Abstention) else ci[1],
                   "ci_reason": ci.reason if isinstance(ci, Abstention) else None,
                   "n_units": t.n_units, "n_pairable": t.n_pairable,
                   "coverage": None if isinstance(t.coverage, Abstention) else t.coverage}
            row.update({f"judge_n_{c}": t.excluded_a[c] for c in CAUSES})
            row.update({f"human_n_{c}": t.excluded_b[c] for c in CAUSES})
            rows.append(row)
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class ScoredDataset:
    """What :func:`score_dataset` wrote and the summary it combined while scoring.

    Attributes
    ----------
    out : Path
        The output folder (``scores/``, ``runs/``, ``ledger/``, ``manifest.json``, ``_complete.json``).
    summary : DatasetSummary
    n_partitions : int
    engine : str
    memory : Mapping[str, Any]
        What the DuckDB engine's worker pool measured (empty on the other engines, and when
        partitions were scored in this process): ``worker``, the largest worker peak (VmHWM,
        bytes); ``total``, the largest resident total of this process and its workers seen by
        the ``memory_limit`` watchdog (0 without a limit); ``admissions``, one
        :class:`Admission` per decision of how many partitions may run at once; and, under a
        limit, ``companions``: a :class:`Companion` per partition that ran beside the first one
        before it was measured, one at a time (empty when the first ran alone: the limit was not
        far off); ``kept``, a :class:`Kept` per partition in the order they finished: what its
        worker held once it was done.
    """

    out: Path
    summary: DatasetSummary
    n_partitions: int
    engine: str
    memory: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Companion:
    """A partition admitted beside the first one under ``memory_limit``, before the first was
    measured (the limit was far off; see :class:`Admission`): ``key``, and ``stopped_at``, the
    resident total (bytes) at which the watchdog stopped it to give the first partition the
    room (its partition was then scored later), or None when it was scored beside the first."""

    key: str
    stopped_at: int | None


@dataclass(frozen=True)
class Kept:
    """What a worker process keeps between partitions, once partition ``key`` is scored, in the
    worker of process id ``pid``: ``rss``, its resident size (bytes), and ``floor``, its resident
    size right after it last handed freed memory back (:func:`evaltk._io.release_memory`, which
    waits for the process to grow by its threshold first: ``rss`` is a sawtooth above ``floor``).
    A worker's ``floor`` over the partitions it scored is what it carries from one to the next,
    and grows only with a leak (flat memory: issue 19); the resident total of the run also counts
    each worker's working set wherever in its partition it is."""

    key: str
    pid: int
    rss: int
    floor: int


@dataclass(frozen=True)
class Admission:
    """One decision of ``memory_limit``'s admission: ``width`` partitions may run at once because
    ``(limit - rest) // worker_peak`` of them fit (at most ``n_workers``), where ``rest`` is this
    process and its descendants other than the workers, and ``worker_peak`` the largest worker
    peak measured so far (bytes)."""

    width: int
    rest: int
    worker_peak: int


def _summary_of(scores: pd.DataFrame, runs: pd.DataFrame, by: Sequence[str],
                report: ReportSummary | None = None) -> DatasetSummary:
    """The summary of one scored partition (frames as written).  ``report``, the partition's
    :class:`ReportSummary` when already computed, gives the judge-vs-human tables and (without
    ``by``) the score summary, so they are not counted twice."""
    report = report_summary(scores, runs) if report is None else report
    pos = _run_positions(scores["trace_id"], runs["trace_id"])
    keys = ["measure", "tier", *by]
    if by:  # the run columns through each score's run position, as categoricals (no row join)
        f = pd.DataFrame({"measure": scores["measure"].array, "tier": scores["tier"].array,
                          **{b: _run_column(runs, b, pos) for b in by},
                          "value": scores["value"].array, "cause": scores["cause"].array})
        s = ScoreSummary.from_partials(score_partials(f, keys), keys)
    else:
        s = report.scores
    x = np.flatnonzero(((scores["measure"] == "x_task") & (scores["tier"] == "automatic")).to_numpy(
        bool, na_value=False) & (pos >= 0))
    task = runs["task"].to_numpy(dtype=object)[pos[x]]
    return DatasetSummary(s, dict(report.calibration),
                          pass_counts(task, pd.to_numeric(scores["value"], errors="coerce").to_numpy(float)[x]),
                          frozenset(str(t) for t in runs["task"].unique()), len(runs))


def _empty_summary(by: Sequence[str]) -> DatasetSummary:
    return DatasetSummary(ScoreSummary(("measure", "tier", *by)),
                          {m: ConfusionTable(c, np.zeros((len(c), len(c)), np.int64), 0)
                           for m, c in CALIBRATION_CATEGORIES.items()})


# =========================================================================== partitions


@dataclass(frozen=True)
class Partition:
    """One unit of work: a trace file and the answers and labels of its traces.

    Attributes
    ----------
    key : str
        Relative path of the trace file without its extension (``week=2026-W40/part-0``).
    traces : str
    answers, labels : str or None
        A co-partitioned file; None when there is none.
    hive : tuple of (str, str)
        ``key=value`` folder names on the way to the file.
    """

    key: str
    traces: str
    answers: str | None = None
    labels: str | None = None
    hive: tuple[tuple[str, str], ...] = ()


def _files(root: Path, suffixes: Sequence[str]) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise UnreadableInput("no such file or folder", file=str(root))
    out = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in suffixes
                 and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts))
    return out


def _stem_key(root: Path, p: Path) -> str:
    if root.is_file():
        return p.with_suffix("").name
    return p.relative_to(root).with_suffix("").as_posix()


def _listing(src: str | Path, suffixes: Sequence[str], storage_options: Mapping[str, Any] | None
             ) -> tuple[list[str], dict[str, str]]:
    """The files of a source (a file or a folder; local or a URL) and each one's key: its path
    relative to the folder without the extension (the file's stem for a single file)."""
    if is_remote(src):
        files = _remote.find(str(src), suffixes, storage_options)
        root = str(src).rstrip("/")
        single = files == [str(src)]
        rels = [f.rsplit("/", 1)[-1] if single else f[len(root):].strip("/") for f in files]
        return files, {f: PurePosixPath(r).with_suffix("").as_posix() for f, r in zip(files, rels, strict=True)}
    root_p = Path(src)
    paths = _files(root_p, suffixes)
    return [str(p) for p in paths], {str(p): _stem_key(root_p, p) for p in paths}


def _is_dir(src: str | Path, storage_options: Mapping[str, Any] | None) -> bool:
    return Root(src, storage_options).isdir() if is_remote(src) else Path(src).is_dir()


def discover_partitions(traces: str | Path, answers: str | Path | None = None,
                        labels: str | Path | None = None, *, storage_options: Mapping[str, Any] | None = None
                        ) -> tuple[list[Partition], dict[str, str | None]]:
    """The partitions of a trace store, and the answer/label sources that are *not* co-partitioned.

    ``traces``, ``answers`` and ``labels`` are local paths or URLs (``s3://``, ``gs://``,
    ``memory://``, ``file://``; ``storage_options`` go to fsspec); the filesystem's own
    listing finds the files.  Returns ``(partitions, shared)`` where ``shared["answers"]``
    (``"labels"``) is the path of an answer source that must be selected by trace id (None
    when the answers are co-partitioned or absent).
    """
    files, key_of = _listing(traces, _TRACE_SUFFIXES, storage_options)
    if not files:
        raise UnreadableInput("no trace file (.parquet, .jsonl) in the store", file=str(traces))
    keys = [key_of[f] for f in files]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise InputError(f"two trace files share the partition key {dup!r} (same name, different "
                         "extension); keep one per partition", file=str(traces))
    shared: dict[str, str | None] = {"answers": None, "labels": None}
    co: dict[str, dict[str, str]] = {"answers": {}, "labels": {}}
    store_is_dir = _is_dir(traces, storage_options)
    for name, src in (("answers", answers), ("labels", labels)):
        if src is None:
            continue
        if store_is_dir and _is_dir(src, storage_options):
            afiles, akey = _listing(src, _ANSWER_SUFFIXES, storage_options)
            found = {akey[f]: f for f in afiles}
            if found and set(found) <= set(keys):
                co[name] = found
                continue
        exists = _remote.exists(str(src), storage_options) if is_remote(src) else Path(src).exists()
        if not exists:
            raise UnreadableInput("no such file or folder", file=str(src))
        shared[name] = str(src)
    parts = []
    for f, k in zip(files, keys, strict=True):
        hive = tuple((m.group(1), m.group(2)) for seg in PurePosixPath(k).parent.parts if (m := _HIVE.match(seg)))
        parts.append(Partition(k, f, co["answers"].get(k), co["labels"].get(k), hive))
    return parts, shared


# =========================================================================== one partition


#: The columns a numbered read of an answer source adds to each row (:func:`_numbered_sql`): the
#: row's file (its position in the source's listing) and the record number ingest gives the row
#: when it reads that file itself.  The staged shuffle files carry them, and the listing itself as
#: the Parquet key-value metadata ``_SOURCES_KEY``, so the ledger names the source, not the copy.
#: A CSV or JSONL row travels as :func:`evaltk.ingest.answer_rows` reads it: typed fields, or the
#: record as JSON (``_ROW_COL``), so that its partition's :func:`evaltk.ingest.answers_from_rows`
#: sees what ingest sees; the metadata keeps each file's field types (``schemas``).
_FILE_COL, _RECORD_COL, _ROW_COL = "evaltk_file", "evaltk_record", "evaltk_row"
_SOURCES_KEY = b"evaltk.sources"
#: The answer sources by name, and the ``kind`` :func:`evaltk.ingest.read_answers` reads each as.
_KINDS = {"answers": "answer", "labels": "label"}


def _text_rows(path: str, storage_options: Mapping[str, Any] | None, *, typed: bool = True) -> pa.Table:
    """:func:`evaltk.ingest.answer_rows` of a CSV or JSONL file, a URL copied to a local temporary file first."""
    from ..ingest import answer_rows

    if not is_remote(path):
        return answer_rows(path, typed=typed)
    import tempfile

    fs, p = _remote.filesystem(path, storage_options)
    with tempfile.TemporaryDirectory(prefix="evaltk-rows-") as d:
        local = Path(d) / PurePosixPath(p).name
        fs.get(p, str(local))
        try:
            return answer_rows(local, typed=typed)
        except InputError as e:  # name the URL, not the copy
            raise type(e)(e.detail, file=path, record=e.record, field=e.field) from None


def _carried_rows(path: str, carried: dict[str, pa.DataType], storage_options: Mapping[str, Any] | None
                  ) -> tuple[pa.Table, pa.Schema | None]:
    """A CSV or JSONL file's rows (:func:`_text_rows`) as they travel through DuckDB, and the types of
    their fields (None when they travel as JSON).  The fields of all typed files share one DuckDB
    column each, so a file whose field type differs from the one an earlier file gave it
    (``carried``, updated) travels as JSON instead, and a field of no type (all null) is left out:
    the partition gives it back (:func:`_file_rows`)."""
    from ..ingest import ANSWER_ROW_FIELDS

    t = _text_rows(path, storage_options)
    fields = [f for f in t.schema if f.name in ANSWER_ROW_FIELDS]
    if t.column("row").null_count < t.num_rows:  # row by row already
        return t, None
    typed = [f for f in fields if not pa.types.is_null(f.type)]
    if any(carried.get(f.name, f.type) != f.type for f in typed):
        return _text_rows(path, storage_options, typed=False), None
    carried.update((f.name, f.type) for f in typed)
    return t.drop_columns([f.name for f in fields if pa.types.is_null(f.type)]), pa.schema(fields)


def _numbered_sql(path: str, con: Any, storage_options: Mapping[str, Any] | None = None
                  ) -> tuple[str, dict[str, Any]]:
    """A DuckDB query reading an answer source (a file or a folder; a URL needs its filesystem
    registered on the connection: :func:`evaltk.scale._remote.register`), each row with its file
    (``evaltk_file``, a position in the listing) and the record number ingest reports for it
    (``evaltk_record``: a Parquet file's 1-based row, ``file_row_number + 1``; a CSV or JSONL
    record's, from :func:`evaltk.ingest.answer_rows`, whose rows are registered on ``con``: typed
    fields, or the record as JSON in ``evaltk_row``, every line kept: one that is no record too).
    Each file is read on its own (``UNION ALL BY NAME``).  Returns the query and the source's
    description :func:`_located_answers` reads (:func:`_sources_meta`)."""
    files, _ = _listing(path, _ANSWER_SUFFIXES, storage_options)
    if not files:
        raise UnreadableInput("no answer file (.parquet, .jsonl, .csv)", file=path)
    suf = {PurePosixPath(f).suffix.lower() for f in files}
    if not (suf <= {".parquet"} or suf <= {".csv"} or suf <= {".jsonl", ".ndjson", ".json"}):
        raise InputError(f"an answer source mixes formats {sorted(suf)}; use one", file=path)
    reads = []
    schemas: list[pa.Schema | None] = []
    carried: dict[str, pa.DataType] = {}
    for j, f in enumerate(files):
        q = "'" + f.replace("'", "''") + "'"
        if PurePosixPath(f).suffix.lower() == ".parquet":
            schemas.append(None)
            reads.append(f"SELECT *, {j} AS {_FILE_COL}, file_row_number + 1 AS {_RECORD_COL} "
                         f"FROM read_parquet({q}, hive_partitioning = false)")
            continue
        name = f"evaltk_rows_{j}"
        rows, schema = _carried_rows(f, carried, storage_options)
        schemas.append(schema)
        con.register(name, rows)
        reads.append(f"SELECT * EXCLUDE (record, \"row\"), \"row\" AS {_ROW_COL}, {j} AS {_FILE_COL}, "
                     f"record AS {_RECORD_COL} FROM {name}")
    return "(" + " UNION ALL BY NAME ".join(reads) + ")", _sources_meta(path, files, schemas)


def _sources_meta(source: str, files: Sequence[str], schemas: Sequence[pa.Schema | None]) -> dict[str, Any]:
    """The description of a numbered source (:func:`_numbered_sql`) its rows carry as the metadata
    ``_SOURCES_KEY``: the source, its files, and per file the types of its typed fields (an Arrow
    schema, base64) or None."""
    import base64

    return {"source": source, "files": list(files),
            "schemas": [None if sc is None else base64.b64encode(sc.serialize().to_pybytes()).decode("ascii")
                        for sc in schemas]}


def _sources_metadata(meta: Mapping[str, Any]) -> dict[bytes, bytes]:
    """The schema metadata carrying a numbered source's description (:func:`_sources_meta`)."""
    return {_SOURCES_KEY: json.dumps(meta).encode()}


def _with_sources(table: pa.Table, meta: Mapping[str, Any]) -> pa.Table:
    return table.replace_schema_metadata(_sources_metadata(meta))


def _file_rows(table: pa.Table, fidx: np.ndarray, schemas: Sequence[str | None]) -> Iterator[pa.Table]:
    """The rows of a text source, sorted by file, as :func:`evaltk.ingest.answers_from_rows` reads
    them: one table per file, its typed fields back in the types its reader gave them."""
    import base64

    if not len(fidx):
        return
    cuts = np.flatnonzero(np.diff(fidx)) + 1
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(fidx)], strict=True):
        part = table.slice(lo, hi - lo)
        enc = schemas[int(fidx[lo])]
        if enc is None:
            yield pa.table({"row": part.column(_ROW_COL)})
            continue
        sc = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(enc)))
        yield pa.table({"row": pa.nulls(hi - lo, pa.large_string()),
                        **{f.name: pa.nulls(hi - lo) if pa.types.is_null(f.type) else part.column(f.name).cast(f.type)
                           for f in sc}})


def _jsonl_field(path: str | Path, field: str) -> list[Any]:
    """The ``field`` of each line of a JSON Lines file that is a JSON object holding it.
    A line the reading screen holds back (:func:`evaltk._io.json_line_screen`) or that is
    not JSON is skipped here: the partition's ingest reports it in the ledger."""
    data = _io.read_bytes(path)
    held = _io.json_line_screen(data)
    out = []
    for line, bad in zip(data.split(b"\n"), held, strict=True):
        if bad or not line.strip():
            continue
        with contextlib.suppress(ValueError, AttributeError, RecursionError):
            v = json.loads(line).get(field)
            if v is not None:
                out.append(v)
    return out


def _trace_ids(path: str) -> pa.Array:
    p = Path(path)
    if p.suffix.lower() == ".parquet":
        return _io.read_parquet(path, columns=["trace_id"]).column("trace_id").combine_chunks().cast(pa.string())
    return pa.array([str(x) for x in _jsonl_field(path, "trace_id")], pa.string())


#: The key of ``shared`` (:func:`_shuffle_shared` with a URL ``out``) naming the partition that
#: selects the rows of no partition's trace, and every trace file (:func:`_orphans_of`).
_ORPHANS_KEY = "evaltk_orphans"


def _orphans_of(shared: Mapping[str, str | None], key: str) -> list[str]:
    """Every trace file of the store when partition ``key`` is the one that also selects the rows of
    no partition's trace (a URL ``out``: :func:`_shuffle_shared`), else none."""
    d = json.loads(shared.get(_ORPHANS_KEY) or "{}")
    return list(d["traces"]) if d.get("first") == key else []


def _select_rows(source: str, trace_file: str, con: Any = None, *,
                 storage_options: Mapping[str, Any] | None = None, orphans: Sequence[str] = ()
                 ) -> tuple[pa.Table, list[str]]:
    """The rows of an answer source whose ``trace_id`` is in ``trace_file`` (a DuckDB semi-join),
    numbered (:func:`_numbered_sql`, its description as the table's metadata), and the source's
    files the numbers refer to.  ``orphans``: every trace file of the store; the rows whose trace is
    in none of them (or whose ``trace_id`` is no text) are selected too, as the shuffle sends them
    to the first partition, so that its ledger has them."""
    import duckdb

    own = con is None
    c = duckdb.connect() if own else con.cursor()
    try:
        ids = pa.table({"trace_id": _trace_ids(trace_file)})  # noqa: F841 - read by DuckDB
        c.register("evaltk_ids", ids)
        _remote.register(c, [source, *orphans], storage_options)
        where = "CAST(trace_id AS VARCHAR) IN (SELECT trace_id FROM evaltk_ids)"
        if orphans:
            every = _ids_sql(orphans, "CAST(trace_id AS VARCHAR) AS evaltk_tid")
            where += f" OR trace_id IS NULL OR CAST(trace_id AS VARCHAR) NOT IN (SELECT evaltk_tid FROM ({every}))"
        try:
            src, meta = _numbered_sql(source, c, storage_options)
            t = c.sql(f"SELECT * FROM {src} WHERE {where}").to_arrow_table()
        except duckdb.Error as e:  # not a table DuckDB reads (a bad quote, a deep line, not Parquet)
            raise UnreadableInput(f"not readable as an answer table ({str(e).splitlines()[0]})",
                                  file=source) from None
        c.unregister("evaltk_ids")
        return _with_sources(t, meta), meta["files"]
    finally:
        c.close()


def _is_staged(path: str | None) -> bool:
    """Whether ``path`` is a file :func:`_shuffle_shared` staged (its rows carry their source's
    description as schema metadata, :func:`_sources_metadata`)."""
    return path is not None and PurePosixPath(path).suffix == _STAGED_SUFFIX and _SHUFFLE_DIR in Path(path).parts


def _located_answers(table: pa.Table, source: str, files: Sequence[str], kind: str, strict: bool) -> Any:
    """``read_answers`` of rows selected or staged from a shared source (numbered by
    :func:`_numbered_sql`, its description as the table's metadata), in the order of their files
    and records, with the ledger, the duplicate reasons and a strict error naming each row's own
    file and record number: those ingest gives when it reads the file itself, never the staged copy's."""
    from ..ingest import AnswerRecords, answers_from_rows, ledger_sources, read_answers

    meta = json.loads((table.schema.metadata or {}).get(_SOURCES_KEY, b"{}"))
    fidx = table.column(_FILE_COL).to_numpy().astype(np.int64)
    rec = table.column(_RECORD_COL).to_numpy().astype(np.int64)
    if not bool(((fidx[1:] > fidx[:-1]) | ((fidx[1:] == fidx[:-1]) & (rec[1:] >= rec[:-1]))).all()):
        # (the shuffle usually writes a partition's rows in this order already: a sort of 500k rows
        # by both columns cost 34 ms, plus 21 ms for the take, where this check costs 1 ms)
        order = np.lexsort((rec, fidx))
        table, fidx, rec = table.take(order), fidx[order], rec[order]
    table = table.drop_columns([_FILE_COL, _RECORD_COL])
    names = np.asarray(list(files), dtype=object)
    try:
        if _ROW_COL in table.column_names:  # CSV or JSONL: the records as answer_rows read them
            recs = answers_from_rows(_file_rows(table, fidx, meta["schemas"]), strict=strict, kind=kind)
        else:
            recs = read_answers(_io.arrow_frame(table), strict=strict, kind=kind)
    except InputError as e:  # the first malformed row (strict), or the whole table (a column missing)
        at = e.record if isinstance(e.record, int | np.integer) and 1 <= e.record <= len(rec) else None
        where = ({"file": str(names[fidx[at - 1]]), "record": int(rec[at - 1])} if at is not None
                 else {"file": source, "record": None})
        extra = {"limit": e.limit} if isinstance(e, LimitExceeded) else {}
        raise type(e)(e.detail, field=e.field, **where, **extra) from None
    del table
    led = recs.ledger
    pos = led["record"].to_numpy(np.int64) - 1
    ledger = led.assign(source=ledger_sources(fidx[pos], names).set_axis(led.index), record=rec[pos])
    out = recs.table.assign(record=rec[recs.table["record"].to_numpy(np.int64) - 1])
    return AnswerRecords(table=out, ledger=ledger, kind=kind)


#: A strict run checks a shared source this many rows at a time (:func:`_check_strict`).
_STRICT_BATCH_ROWS = 1 << 18


def _check_strict(con: Any, src: str, meta: Mapping[str, Any], kind: str) -> None:
    """Raise at the first malformed row of a numbered source (:func:`_numbered_sql`), in the order of
    its files and records, as :func:`_located_answers` names it (``strict``): its rows come sorted
    from DuckDB in batches of :data:`_STRICT_BATCH_ROWS` (the checks are row by row), so only one
    batch is held beside DuckDB's own buffers, not the whole source."""
    reader = con.sql(f"SELECT * FROM {src} ORDER BY {_FILE_COL}, {_RECORD_COL}").to_arrow_reader(_STRICT_BATCH_ROWS)
    for batch in reader:
        _located_answers(_with_sources(pa.Table.from_batches([batch]), meta), meta["source"], meta["files"], kind,
                         True)


def _staged_answers(path: str, kind: str, strict: bool) -> Any:
    """A partition's staged shuffle file read as :func:`_located_answers` reads selected rows (the
    file is read once: its schema metadata describes the source)."""
    table = _io.read_ipc(path)
    meta = json.loads(table.schema.metadata[_SOURCES_KEY])
    return _located_answers(table, meta["source"], meta["files"], kind, strict)


def _label_measures(measures: Any) -> tuple[str, ...]:
    """Trace-level label measures whose blocks every partition carries (``x_task`` always: the
    human tier), passed to scoring as ``label_measures``: a partition with few or no labels
    then gets every block the whole store's labels give (:func:`evaltk.scoring.score_tables`)."""
    from ..values import ANSWER_VOCABULARIES, PER_STEP_MEASURES

    ms = {normalize_measure(m) for m in measures if m is not None and not pd.isna(m)}
    keep = {m for m in ms if m in ANSWER_VOCABULARIES and m not in PER_STEP_MEASURES}
    return tuple(sorted(keep | {"x_task"}))


def _plain_table(frame: pd.DataFrame, *, dictionaries: bool = False) -> pa.Table:
    """Arrow table with categoricals decoded to plain strings (or, with ``dictionaries``, as dictionary
    arrays of strings: Parquet writes those as its own dictionary encoding, without materialising
    every string) and text columns as ``string`` (C++ casts; a Python pass only for object columns
    that mix types)."""
    cols = {}
    for c in frame.columns:
        s = frame[c]
        arr = None
        if isinstance(s.dtype, pd.CategoricalDtype):
            arr = _decoded(s, dictionary=dictionaries)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError):
                a = pa.array(s, from_pandas=True)
                if pa.types.is_string(a.type) or pa.types.is_large_string(a.type) or pa.types.is_null(a.type):
                    arr = pc.cast(a, pa.string())
            if arr is None:
                arr = pa.array([None if (x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)))
                                else (x if isinstance(x, str) else str(x)) for x in s.tolist()], pa.string())
        else:
            arr = pa.Array.from_pandas(s)
        cols[c] = arr
    return pa.table(cols)


def _decoded(s: pd.Series, *, dictionary: bool = False) -> pa.Array:
    """A categorical column as an Arrow ``string`` array: the categories taken by the codes, in C++.

    (``pa.array(s).dictionary_decode()`` turned the categories into Python strings first, and a
    take with null indices is several times slower than one without: missing rows take an empty
    string and are marked missing in the validity bitmap instead.)
    """
    codes = s.cat.codes.to_numpy()
    values = pa.array(s.cat.categories.array)
    if isinstance(values, pa.ChunkedArray):  # a take from chunks resolves the chunk of every index: slow
        values = values.combine_chunks()
    values = pc.cast(values, pa.string())
    missing = codes < 0
    if dictionary:
        return pa.DictionaryArray.from_arrays(pa.array(codes, mask=missing if missing.any() else None), values)
    n_missing = int(missing.sum())
    if not n_missing:
        return values.take(pa.array(codes))
    values = pa.concat_arrays([values, pa.array([""], pa.string())])
    taken = values.take(pa.array(np.where(missing, len(values) - 1, codes)))
    valid = pa.array(~missing).buffers()[1]
    return pa.Array.from_buffers(pa.string(), len(taken), [valid, *taken.buffers()[1:]], null_count=n_missing)


def _as_meta(frame: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({c: (frame[c].astype(object).where(frame[c].notna(), None)
                            if SCORE_META[c].dtype == object else frame[c].astype(SCORE_META[c].dtype))
                        for c in SCORE_META.columns})
    return out.reset_index(drop=True)


def _write(frame: pd.DataFrame, out: Path, table: str, key: str) -> None:
    """One output file, atomically (``evaltk._io``).  Categorical columns (the score matrix's) go to
    Parquet as dictionary arrays, without the Arrow schema, so every reader reads them back as plain
    strings (as SCORE_META declares) and no string is materialised here.

    Column statistics (min/max) are written for the plain columns only: for a dictionary column
    Arrow computes them over the decoded values, half the Parquet writer's CPU time on a score
    partition (``benchmarks/scale_profile.py``), and no evaltk reader filters on these columns."""
    t = _plain_table(frame, dictionaries=True)
    path = out / table / f"{key}.parquet"
    if not any(pa.types.is_dictionary(f.type) for f in t.schema):
        write_parquet(t, path)
        return
    plain = [f.name for f in t.schema if not pa.types.is_dictionary(f.type)]
    with _io.atomic_path(path) as tmp:
        pq.write_table(t, tmp, store_schema=False, write_statistics=plain)


def _score_partition(part: Partition, *, out: str | None, by: Sequence[str], shared: Mapping[str, str | None],
                     label_measures: Sequence[str], options: Mapping[str, Any]) -> DatasetSummary:
    """Ingest, score, write and summarise one partition (runs on a worker)."""
    so = options.get("storage_options")
    with _remote.staged([part.traces, part.answers, part.labels], so) as (t, a, lb):
        staged = replace(part, traces=t, answers=a, labels=lb)  # type: ignore[arg-type]  # t: a local copy of part.traces
        return _score_local(staged, part, out=out, by=by, shared=shared,
                            label_measures=label_measures, options=options)


def _score_local(part: Partition, origin: Partition, *, out: str | None, by: Sequence[str],
                 shared: Mapping[str, str | None], label_measures: Sequence[str],
                 options: Mapping[str, Any]) -> DatasetSummary:
    """:func:`_score_partition` on local copies (``part``) of the partition ``origin`` names."""
    from ..ingest import ingest_traces, ledger_sources
    from ..scoring import score_traces

    so = options.get("storage_options")
    strict = bool(options.get("strict", False))
    sources: dict[str, Any] = {"answers": part.answers, "labels": part.labels}
    try:
        for name, kind in _KINDS.items():
            if shared.get(name):  # selected from the source here (a URL `out`: no shuffle)
                frame, files = _select_rows(shared[name], part.traces, storage_options=so,  # type: ignore[arg-type]
                                            orphans=_orphans_of(shared, origin.key))
                sources[name] = _located_answers(frame, shared[name], files, kind, strict)  # type: ignore[arg-type]
            elif _is_staged(getattr(part, name)):  # staged by the shuffle
                sources[name] = _staged_answers(getattr(part, name), kind, strict)
        answers, labels = sources["answers"], sources["labels"]
        ing = ingest_traces(part.traces, answers, labels, strict=options.get("strict", False),
                            domain_rule=options.get("domain_rule"))
    except pa.ArrowInvalid as e:  # a Parquet file Arrow cannot open: unreadable input, named
        raise UnreadableInput(f"a partition file cannot be read ({str(e).splitlines()[0]})",
                              file=origin.traces) from None
    ledger = ing.ledger
    if part != origin:  # the ledger names the files as the caller did, not the staged copies
        names = {getattr(part, f): getattr(origin, f) for f in ("traces", "answers", "labels") if getattr(part, f)}
        cat = ledger["source"].cat
        ledger = ledger.assign(source=ledger_sources(cat.codes.to_numpy(), [names.get(x, x) for x in cat.categories]
                                                     ).set_axis(ledger.index))
    if len(ing.runs) == 0:  # nothing kept: only the ledger says why (no empty score or run file)
        _write_outputs(origin, out, None, None, ledger, so)
        return _empty_summary(by)
    m = score_traces(ing, outcome_rules=options.get("outcome_rules"), population="partition",
                     label_measures=label_measures)
    scores = m.frame  # written with plain strings (SCORE_META's columns, in its order)
    runs = _with_hive_keys(m.runs, part.hive)
    runs = runs[[c for c in dict.fromkeys((*_RUN_OUT, *(k for k, _ in part.hive))) if c in runs.columns]]
    if "guide" in runs.columns:
        runs = runs.assign(guide=_guide_json(runs["guide"]))
    report = report_summary(scores, runs)  # written beside the partition; the Dask summary reuses it
    _write_outputs(origin, out, scores, runs, ledger, so, report=report)
    missing = [b for b in by if b not in runs.columns]
    if missing:
        raise InputError(f"`by` names {missing}, not a run column (have {list(runs.columns)})", field="by")
    summary = _summary_of(scores, runs, by, report)
    del ing, m, scores, runs
    _release_memory()
    return summary


def _guide_json(guide: pd.Series) -> np.ndarray:
    """The ``guide`` column as written: each served guide as sorted-key JSON, None where no guide was
    served (a Python pass over the guides only, not over every run)."""
    g = guide.to_numpy(dtype=object)
    out = np.full(len(g), None, dtype=object)
    has = np.flatnonzero(pd.notna(g))
    out[has] = [json.dumps(x, sort_keys=True) if isinstance(x, Mapping) else None for x in g[has]]
    return out


def _write_outputs(part: Partition, out: str | None, scores: pd.DataFrame | None, runs: pd.DataFrame | None,
                   ledger: pd.DataFrame, storage_options: Mapping[str, Any] | None = None, *,
                   report: ReportSummary | None = None) -> None:
    """Write a partition's files (each atomically: a temporary name renamed, or one PUT on object
    storage), then its marker ``_partitions/<key>.json`` with their digests: a partition is done
    exactly when its marker is there."""
    if out is None:
        return
    root = Root(out, storage_options)
    files = {}
    stage = tempfile.TemporaryDirectory(prefix="evaltk-out-") if root.remote else contextlib.nullcontext(root.root)
    with stage as d:
        for t, frame in (("scores", scores), ("runs", runs), ("ledger", ledger), (SUMMARIES_DIR, scores)):
            if frame is None:
                continue
            if t == SUMMARIES_DIR:  # the partition's mergeable summaries, read by `evaltk report --scored`
                summary = report_summary(frame, runs) if report is None else report  # type: ignore[arg-type]
                rel = write_partition_summary(Path(d), part.key, summary)
            else:
                _write(frame, Path(d), t, part.key)
                rel = f"{t}/{part.key}.parquet"
            files[rel] = "sha256:" + file_digest(Path(d) / rel)
            if root.remote:
                _remote.upload(Path(d) / rel, root.at(rel), storage_options)
    root.write_json(_marker_rel(part.key), {"key": part.key, "files": files})


def _marker_rel(key: str) -> str:
    return f"{_PARTS_DIR}/{key}.json"


def _done_partitions(root: Root, parts: Sequence[Partition]) -> dict[str, dict[str, str]]:
    """The partitions of an earlier run already done (their marker, and every file it lists unchanged)."""
    done = {}
    for p in parts:
        m = _marker_rel(p.key)
        if not root.isfile(m):
            continue
        try:
            doc = root.read_json(m)
            files = {str(k): str(v) for k, v in doc["files"].items()}
            for rel, digest in files.items():
                root.check_digest(rel, digest, recorded_in=root.at(m))
        except (InputError, KeyError, TypeError, AttributeError, OSError):
            continue  # torn or changed: scored again
        done[p.key] = files
    return done


def _pairs_of(root: Root, done: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """``(scores, runs)`` file pairs of the partitions done (a partition whose runs were all dropped has none)."""
    return [(root.at(f"scores/{k}.parquet"), root.at(f"runs/{k}.parquet"))
            for k, files in sorted(done.items()) if f"scores/{k}.parquet" in files]


def _combine_pair(a: DatasetSummary, b: DatasetSummary) -> DatasetSummary:
    return a.combine(b)


# =========================================================================== engines


def engine_kind(engine: Any) -> str:
    """The engine ``engine`` names: ``"pandas"``, ``"duckdb"`` or ``"dask"`` (a name, a DuckDB
    connection or a dask.distributed Client); anything else is refused."""
    if isinstance(engine, str):
        if engine not in ENGINES:
            raise ValueError(f"`engine` must be one of {', '.join(map(repr, ENGINES))}, a DuckDB connection "
                             f"or a dask.distributed Client; got {engine!r}.")
        return engine
    mod = type(engine).__module__
    if mod.startswith("duckdb") or mod.startswith("_duckdb"):
        return "duckdb"
    if mod.startswith("distributed"):
        return "dask"
    raise TypeError(f"`engine` must be one of {', '.join(map(repr, ENGINES))}, a DuckDB connection or a "
                    f"dask.distributed Client; got {type(engine).__name__}.")


def optional_module(module: str) -> Any:
    """Import an engine's optional dependency, or :class:`~evaltk.errors.MissingExtra` naming the
    extra that installs it (``pip install 'evaltk[scale]'``)."""
    return import_optional(module, purpose="this engine")


@contextlib.contextmanager
def _duckdb(engine: Any, memory_limit: str | None, threads: int | None, temp_directory: str | None
            ) -> Iterator[Any]:
    duckdb = optional_module("duckdb")
    own = isinstance(engine, str)
    con = duckdb.connect() if own else engine
    try:
        _settings(con, memory_limit=memory_limit, threads=threads, temp_directory=temp_directory)
        yield con
    finally:
        if own:
            con.close()


def _settings(con: Any, *, memory_limit: str | None = None, threads: int | None = None,
              temp_directory: str | None = None) -> None:
    """Set those of DuckDB's ``memory_limit``, ``threads`` and ``temp_directory`` that are given on
    ``con`` (the one place evaltk writes them: the engine's connection and :func:`_bounded`)."""
    if memory_limit is not None:
        con.execute(f"SET memory_limit = '{_check_size(memory_limit)}'")
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    if temp_directory is not None:  # a SQL string literal: forward slashes, a quote doubled
        con.execute("SET temp_directory = '{}'".format(str(temp_directory).replace("\\", "/").replace("'", "''")))


def _check_size(s: str) -> str:
    if not isinstance(s, str) or not re.fullmatch(r"\s*\d+(\.\d+)?\s*[KMGT]i?B\s*", s, re.IGNORECASE):
        raise ValueError(f"`memory_limit` must be a size such as '4GB' or '512MiB'; got {s!r}.")
    return s.strip()


#: Dask configuration of the workers of a ``LocalCluster`` evaltk starts (docs/scale.md, "Scaling
#: out", gives the same for ``dask worker``): the statistical profiler off.  It samples every
#: worker thread's stack every 10 ms and keeps a profile per second of work for
#: ``distributed.admin.low-level-log-length`` (1000) seconds: about 0.5 MiB a second of scoring
#: (the workers' resident memory grew by that per partition, up to some 500 MiB each, before
#: it levels off) and about a quarter of a scoring worker's CPU (0.7 of 2.9 s a 100k-trace partition);
#: a LocalCluster without dashboard shows none of it.
WORKER_CONFIG: dict[str, Any] = {"distributed.worker.profile.enabled": False}

#: Environment variables that the nannies of a ``LocalCluster`` evaltk starts do *not* set in
#: their workers, where Dask's ``distributed.nanny.pre-spawn-environ`` would (None unsets one):
#: ``MALLOC_TRIM_THRESHOLD_=65536``.  Setting any of glibc's malloc thresholds turns off its
#: dynamic mmap threshold, so every array over 128 KiB is a fresh ``mmap`` whose pages fault in
#: on first touch: a 100k-trace partition took 1.6-2.1 s of CPU in one process with it against
#: 1.2-1.9 s without (and 1.5-2.4 s in a Dask worker); evaltk returns a partition's memory
#: itself (:func:`evaltk._io.release_memory`, ``malloc_trim``), so the trimming buys nothing
#: here (docs/scale.md, "What a Dask worker spends").  Read by each nanny when it is made (it
#: keeps them for the workers it restarts), so set around the cluster's construction; the
#: workers' own environment is what a ``dask worker`` shell gives them.
NANNY_ENVIRON: dict[str, str | None] = {"MALLOC_TRIM_THRESHOLD_": None}


def nanny_config() -> dict[str, Any]:
    """The ``dask.config.set`` mapping that applies :data:`NANNY_ENVIRON` to the nannies made
    inside it (``LocalCluster`` makes them in its constructor)."""
    return {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in NANNY_ENVIRON.items()}


@contextlib.contextmanager
def _dask_client(engine: Any, memory_limit: str | None, n_workers: int | None) -> Iterator[Any]:
    distributed = optional_module("distributed")
    if not isinstance(engine, str):
        yield engine
        return
    try:
        client = distributed.get_client()
        yield client
        return
    except ValueError:
        pass
    _check_main_guard("engine='dask' (a LocalCluster)")
    unguarded = _unguarded_script_line()
    if unguarded is not None:  # refused here: some Dask releases (2026.1) then hang for ever instead of
        raise RuntimeError(    # "Nanny failed to start"
            "engine='dask' could not start its LocalCluster: it is called from the top level of the script "
            f"{unguarded}, not under `if __name__ == \"__main__\":`, and each worker process "
            "re-imports the script; put the call under that guard (docs/scale.md), or pass a running "
            "distributed.Client")
    try:
        # each nanny keeps `config` and sets it in every worker process it starts, a restarted one too (a
        # dask.config.set around LocalCluster reached only the first: the nannies hold the global config
        # shallowly, and leaving the block restored it under them)
        import dask

        with dask.config.set(nanny_config()):
            cluster = distributed.LocalCluster(n_workers=n_workers or 2, threads_per_worker=1, processes=True,
                                               memory_limit=memory_limit or "auto", dashboard_address=None,
                                               config=dict(WORKER_CONFIG))
    except RuntimeError as e:
        if "failed to start" not in str(e):
            raise
        raise RuntimeError(f"engine='dask' could not start its LocalCluster ({e}); when this runs from a "
                           "script, put the call under `if __name__ == \"__main__\":` (each worker process "
                           "re-imports the script; docs/scale.md), or pass a running distributed.Client") from None
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _ids_sql(files: Sequence[str], cols: str) -> str:
    """SQL selecting ``cols`` (``{i}`` is a file's number in ``files``) from the trace ids of the
    trace files ``files``: one read per format (``read_parquet`` or ``read_json`` of the list, each
    row's file name, as ``evaltk_filename`` (a trace may have a ``filename`` field), joined with
    the files' numbers).  A ``UNION ALL`` of one read per file held
    buffers per file: with 400 files the shuffle's join ran out of 1.8 GiB where one read of the
    list needs a fraction of it."""
    def lit(f: str) -> str:
        return "'" + f.replace("'", "''") + "'"

    reads = []
    for parquet in (True, False):
        group = [(i, f) for i, f in enumerate(files) if (PurePosixPath(f).suffix.lower() == ".parquet") == parquet]
        if not group:
            continue
        names = "[" + ", ".join(lit(f) for _, f in group) + "]"
        nums = "[" + ", ".join(str(i) for i, _ in group) + "]"
        if parquet:
            src = f"read_parquet({names}, hive_partitioning = false, filename = 'evaltk_filename')"
        else:
            src = (f"read_json({names}, format = 'newline_delimited', columns = {{'trace_id': 'VARCHAR'}}, "
                   "hive_partitioning = false, ignore_errors = true, filename = 'evaltk_filename')")
        numbered = f"(SELECT unnest({names}) AS evaltk_name, unnest({nums}) AS evaltk_i)"
        reads.append(f"SELECT {cols.format(i='evaltk_n.evaltk_i')} FROM {src} evaltk_t JOIN {numbered} evaltk_n "
                     "ON evaltk_t.evaltk_filename = evaltk_n.evaltk_name WHERE evaltk_t.trace_id IS NOT NULL")
    return " UNION ALL ".join(reads)


#: At most this many rows, and about :data:`_SHUFFLE_BATCH_BYTES`, does DuckDB hand the shuffle at a
#: time (:func:`_batch_rows`); each batch is split by partition and appended to the partitions'
#: staged files (:func:`_split_staged`).  The batch and its sorted copy are held beside DuckDB's
#: own memory, outside its limit, so wide rows (a long rationale per answer) get fewer per batch.
_SHUFFLE_BATCH_ROWS = 1 << 20
_SHUFFLE_BATCH_BYTES = 64 * 2**20
_SHUFFLE_SAMPLE_ROWS = 10_000
#: The shuffle writes at most this many staged files at once; with more partitions it splits in
#: levels, each writing every row once (a group's file, then its partitions' files).
_SHUFFLE_OPEN_FILES = 256
#: A partition's staged rows are an Arrow IPC file, ``_shuffle/<name>/part-<i>.arrow``, its
#: buffers compressed with this codec (when Arrow has it).
_STAGED_SUFFIX = ".arrow"
_STAGED_CODEC = "zstd"


def _shuffle_shared(parts: Sequence[Partition], shared: Mapping[str, str | None], root: Root, *,
                    memory_limit: str | None, temp_directory: str | None,
                    storage_options: Mapping[str, Any] | None, strict: bool = False
                    ) -> tuple[list[Partition], dict[str, str | None]]:
    """Answers and labels not stored beside the traces, repartitioned once by the partition of their
    trace into ``out/_shuffle/<name>/part-<i>.arrow``: one DuckDB join of the source with the store's
    trace ids, its rows streamed in batches that :func:`_split_staged` appends to each partition's
    file.  Each partition then reads only its own rows, so the cost is linear in the input whatever
    its layout (selecting each partition's rows from the whole source was a scan per partition:
    quadratic).  DuckDB's ``COPY ... PARTITION_BY`` did the same in about twice the time under the
    same memory limit (``benchmarks/shuffle_stage.py``; docs/scale.md has the numbers).
    Rows of no partition's trace (a record without a text trace id, a line that is no record, an
    answer without a run) go to the first partition, which ledgers them.  Only for a local ``out``
    (the workers see it); with a URL each partition selects its rows, and the first also those of
    no partition's trace (``shared[_ORPHANS_KEY]``: :func:`_orphans_of`).  ``strict``: the whole
    source is checked here first, so the error names its first malformed row (file, record, field),
    whichever partition it would have gone to."""
    names = [n for n in ("answers", "labels") if shared.get(n)]
    if not names or not parts:
        return list(parts), dict(shared)
    if root.remote:
        return list(parts), {**shared, _ORPHANS_KEY: json.dumps({"first": parts[0].key,
                                                                  "traces": [p.traces for p in parts]})}
    duckdb = optional_module("duckdb")
    files = [p.traces for p in parts]
    found: dict[str, dict[int, str]] = {}
    con = duckdb.connect()
    ok = False
    try:
        # rows in any order (each partition's reader sorts its own by file and record): less to hold
        con.execute("SET preserve_insertion_order = false")
        _remote.register(con, [*files, *(shared[n] for n in names)], storage_options)
        ids = _ids_sql(files, f"CAST(trace_id AS VARCHAR) AS evaltk_tid, {{i}} AS {_PART_COL}")
        for name in names:
            dest = Path(root.at(f"{_SHUFFLE_DIR}/{name}"))
            if dest.exists():
                import shutil

                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            sources: list[str] = []
            try:
                # each row keeps its file and record number (the ledger names them, not the copy)
                with _bounded(con, memory_limit, f"the shuffle of the shared {name} ({shared[name]})",
                              temp_directory):
                    src, described = _numbered_sql(shared[name], con, storage_options)  # type: ignore[arg-type]
                    sources = described["files"]
                    if strict:  # raises at the source's first malformed row
                        _check_strict(con, src, described, _KINDS[name])
                    # a row of no partition's trace (none, not text, not in the store) goes to the first
                    # partition, whose ingest ledgers it as ingest of the file does: nothing lost
                    rows = con.sql(f"SELECT a.*, CAST(coalesce(i.{_PART_COL}, 0) AS INTEGER) AS {_PART_COL} "
                                   f"FROM {src} a LEFT JOIN ({ids}) i ON CAST(a.trace_id AS VARCHAR) = i.evaltk_tid")
                    found[name] = _split_staged(_streamed(rows.to_arrow_reader(_batch_rows(con, src)), duckdb), 0,
                                                len(parts), dest, _sources_metadata(described))
            except duckdb.Error as e:  # DuckDB's message names the file it could not read
                bad = next((f for f in [*files, *sources] if f in str(e)), shared[name])
                raise UnreadableInput(f"cannot shuffle the {name} ({str(e).splitlines()[0]})", file=bad) from None
        ok = True
    finally:
        con.close()
        if not ok and root.exists(_SHUFFLE_DIR):
            root.remove(_SHUFFLE_DIR)
    new = [replace(p, **{n: found[n].get(i) for n in names}) for i, p in enumerate(parts)]  # type: ignore[arg-type]  # answers/labels are optional on a Partition
    return new, {**shared, **dict.fromkeys(names)}


#: The partition number of a shuffled row (the join's column, dropped from the staged files).
_PART_COL = "evaltk_part"

#: DuckDB's message prefixes of the errors its callers tell apart (:func:`_bounded`).
_STREAM_ERRORS = (("INTERRUPT Error", "InterruptException"), ("Out of Memory Error", "OutOfMemoryException"))


def _streamed(reader: Any, duckdb: Any) -> Iterator[pa.RecordBatch]:
    """The batches of a DuckDB query's Arrow reader.  An error DuckDB meets while it streams (a
    corrupt row group past the first batch, an interrupt by the ``memory_limit`` watchdog, running
    out of memory) reaches Python through Arrow as an ``OSError`` carrying DuckDB's message; it is
    raised as DuckDB's own exception type again, so what catches ``duckdb.Error`` (a named
    unreadable input; under ``memory_limit`` a refusal, exit 65) holds mid-stream too."""
    batches = iter(reader)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except OSError as e:
            msg = str(e)
            kind = next((getattr(duckdb, k) for prefix, k in _STREAM_ERRORS if msg.startswith(prefix)), duckdb.Error)
            raise kind(msg) from None
        yield batch


def _batch_rows(con: Any, src: str) -> int:
    """Rows per batch of the shuffle's stream: :data:`_SHUFFLE_BATCH_BYTES` over the Arrow bytes per
    row of the source's first :data:`_SHUFFLE_SAMPLE_ROWS` rows (its first file's first row
    group: no scan), between 1,024 and :data:`_SHUFFLE_BATCH_ROWS`."""
    sample = con.sql(f"SELECT * FROM {src} LIMIT {_SHUFFLE_SAMPLE_ROWS}").to_arrow_table()
    per_row = max(1, sample.nbytes // max(1, sample.num_rows))
    return int(min(_SHUFFLE_BATCH_ROWS, max(1024, _SHUFFLE_BATCH_BYTES // per_row)))


def _split_staged(batches: Iterable[pa.RecordBatch], lo: int, n: int, dest: Path,
                  metadata: Mapping[bytes, bytes]) -> dict[int, str]:
    """Append the rows of ``batches`` (partitions ``lo`` to ``lo + n - 1`` in ``evaltk_part``) to
    each partition's staged file ``dest/part-<i>.arrow`` (that column dropped, ``metadata`` on its
    schema); returns ``{i: path}`` for the partitions that got a row.  Each batch is sorted by
    partition (a stable sort: rows keep their order) and cut into one slice per partition.  With
    more than :data:`_SHUFFLE_OPEN_FILES` partitions the rows go first to that many group files,
    each split in turn, so no more files are open at once whatever the number of partitions."""
    import pyarrow.ipc as ipc

    width = 1 if n <= _SHUFFLE_OPEN_FILES else -(-n // _SHUFFLE_OPEN_FILES)
    options = ipc.IpcWriteOptions(compression=_STAGED_CODEC if pa.Codec.is_available(_STAGED_CODEC) else None)
    writers: dict[int, Any] = {}
    paths: dict[int, str] = {}
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            key = (batch.column(_PART_COL).to_numpy(zero_copy_only=False) - lo) // width
            order = np.argsort(key, kind="stable")
            key = key[order]
            table = pa.Table.from_batches([batch]).take(pa.array(order))
            if width == 1:
                table = table.drop_columns([_PART_COL]).replace_schema_metadata(metadata)
            cuts = np.flatnonzero(np.diff(key)) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(key)], strict=True):
                k = int(key[a])
                if k not in writers:
                    paths[k] = str(dest / (f"part-{lo + k}{_STAGED_SUFFIX}" if width == 1
                                           else f"group-{lo + k * width}-of-{width}{_STAGED_SUFFIX}"))
                    writers[k] = ipc.new_file(paths[k], table.schema, options=options)
                writers[k].write_table(table.slice(a, b - a))
    finally:
        for w in writers.values():
            w.close()
    if width == 1:
        return {lo + k: p for k, p in paths.items()}
    out: dict[int, str] = {}
    for k, path in sorted(paths.items()):  # each group on its own: one batch of it held at a time
        with pa.OSFile(path) as f:
            reader = ipc.open_file(f)
            out.update(_split_staged((reader.get_batch(i) for i in range(reader.num_record_batches)),
                                     lo + k * width, min(width, n - k * width), dest, metadata))
        Path(path).unlink()
    return out


@contextlib.contextmanager
def _removed_after(root: Root, rel: str) -> Iterator[None]:
    """Remove ``root/rel`` (the staged shuffle) when the block ends, whether it finished or raised:
    nothing outside the run points into it, and a rerun stages again."""
    try:
        yield
    finally:
        if root.exists(rel):
            root.remove(rel)


def _check_unique_ids(parts: Sequence[Partition], *, memory_limit: str | None = None,
                      temp_directory: str | None = None, storage_options: Mapping[str, Any] | None = None) -> None:
    """A trace id in two partitions would be scored twice: refuse, naming both files (SQL in DuckDB).

    Runs in its own short-lived DuckDB connection (closed afterwards, so its memory goes
    back) on 64-bit hashes of the ids tagged with a file number; only hashes seen in two
    files are then checked on the ids themselves.
    """
    if len(parts) < 2:
        return
    duckdb = optional_module("duckdb")
    files = [p.traces for p in parts]
    con = duckdb.connect()
    phase = f"the check that no trace id is in two partitions ({len(files)} trace files)"
    try:
        _remote.register(con, files, storage_options)
        con.execute("SET preserve_insertion_order = false")
        with _bounded(con, memory_limit, phase, temp_directory):
            row = _repeated_id(con, files)
    finally:
        con.close()
    if row is not None:
        a, b = files[int(row[1])], files[int(row[2])]
        raise InputError(f"trace_id {row[0]!r} occurs in two partitions ({a} and {b}); a trace's "
                         "steps must stay in one partition", file=a, record=str(row[0]), field="trace_id")


def _repeated_id(con: Any, files: Sequence[str]) -> tuple[Any, ...] | None:
    """``(trace_id, first file number, last file number)`` of the smallest trace id in two of
    ``files``, or None (the queries of :func:`_check_unique_ids`)."""
    duckdb = optional_module("duckdb")
    hashed = _ids_sql(files, "hash(CAST(trace_id AS VARCHAR)) AS h, {i} AS f")
    try:
        cand = [r[0] for r in con.execute(
            f"SELECT h FROM (SELECT DISTINCT h, f FROM ({hashed})) GROUP BY h HAVING count(*) > 1").fetchall()]
    except (duckdb.OutOfMemoryException, duckdb.InterruptException):
        raise  # the memory limit's (see _bounded)
    except duckdb.Error as e:  # a trace file DuckDB cannot read: name it (DuckDB's message does)
        bad = next((f for f in files if f in str(e)), files[0] if len(files) == 1 else None)
        kind = "Parquet" if bad is not None and str(bad).lower().endswith(".parquet") else "JSONL or Parquet"
        raise UnreadableInput(f"a trace file cannot be read: not a readable {kind} file "
                              f"({str(e).splitlines()[0]})",
                              file=bad) from None
    if not cand:
        return None
    con.register("evaltk_cand", pa.table({"h": pa.array(cand, pa.uint64())}))
    ids = _ids_sql(files, "CAST(trace_id AS VARCHAR) AS trace_id, {i} AS f")
    return con.execute(f"SELECT trace_id, min(f), max(f) FROM ({ids}) WHERE hash(trace_id) IN "
                       "(SELECT h FROM evaltk_cand) GROUP BY trace_id HAVING count(DISTINCT f) > 1 "
                       "ORDER BY trace_id LIMIT 1").fetchone()


def _write_manifest(root: Root, summary: DatasetSummary) -> None:
    from ..scoring import Manifest

    root.write_json("manifest.json", Manifest.default(summary.population).to_dict())


def _write_complete(root: Root, parts: Sequence[Partition]) -> None:
    """The completion record (:data:`COMPLETE_FILE`), written last: each partition's files and digests
    (from the partition markers, each checked against its file)."""
    done = _done_partitions(root, parts)
    lost = [p.key for p in parts if p.key not in done]
    if lost:  # pragma: no cover - a file changed under a running score_dataset
        raise SchemaViolation(f"integrity check `complete`: {len(lost)} partition(s) have no valid marker "
                              f"({lost[0]!r} first) after scoring", file=str(root))
    rows = [{"key": p.key, "files": done[p.key]} for p in parts]
    root.write_json(COMPLETE_FILE, {"format": COMPLETE_FORMAT, "manifest": root.digest("manifest.json"),
                                    "partitions": rows})


def check_dataset(out: str | Path, *, storage_options: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """Check a scored dataset before it is read; its ``(scores, runs)`` file pairs.

    Refuses (:class:`~evaltk.errors.SchemaViolation` naming the file and the check) a
    dataset without its completion record (``complete``: a ``score_dataset`` that failed
    or is still running), a file missing, changed or not recorded in it (``digest``,
    ``complete``), a missing or changed ``manifest.json``, and a scores partition that fails
    :func:`evaltk.scoring.check_score_table` (``duplicate``, ``range``, ``scorer_version``).
    ``out`` is a local folder or a URL (``storage_options`` go to fsspec).
    """
    from ..scoring import Manifest, check_score_table

    root = Root(out, storage_options)
    if not root.isdir():
        raise UnreadableInput("not a scored dataset (a folder written by `evaltk scale score` expected)",
                              file=str(root))
    marker = root.at(COMPLETE_FILE)
    if not root.isfile(COMPLETE_FILE):
        raise SchemaViolation(f"integrity check `complete`: no completion record {COMPLETE_FILE}: the "
                              "dataset is partial (a `scale score` that failed or is still running)",
                              file=str(root))
    doc = root.read_json(COMPLETE_FILE)
    try:
        if doc["format"] != COMPLETE_FORMAT:
            raise ValueError(f"format {doc['format']!r}")
        manifest_digest = str(doc["manifest"])
        listed = {str(k): str(v) for part in doc["partitions"] for k, v in part["files"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SchemaViolation(f"integrity check `complete`: not a completion record ({e})", file=marker) from None
    root.check_digest("manifest.json", manifest_digest, recorded_in=marker)
    manifest = Manifest.from_dict(root.read_json("manifest.json"), source=root.at("manifest.json"))
    for rel, digest in listed.items():
        if rel.split("/", 1)[0] not in (*_TABLES, SUMMARIES_DIR) or ".." in PurePosixPath(rel).parts or rel.startswith("/"):
            raise SchemaViolation(f"integrity check `complete`: {rel!r} is not a file of a scored dataset",
                                  file=marker, field="partitions")
        root.check_digest(rel, digest, recorded_in=marker)
    for t in _TABLES:
        for rel in root.find(t, (".parquet",)):
            if rel not in listed and not any(seg.startswith((".", "_")) for seg in rel.split("/")):
                raise SchemaViolation(f"integrity check `complete`: the file is not in the completion record "
                                      f"{COMPLETE_FILE}", file=root.at(rel))
    pairs = []
    for rel in sorted(r for r in listed if r.startswith("scores/")):
        runs = "runs/" + rel.split("/", 1)[1]
        check_score_table(_remote.read_table(root.at(rel), storage_options).to_pandas(), manifest,
                          file=root.at(rel))
        if runs not in listed:
            raise SchemaViolation("integrity check `complete`: a scores partition without its runs file",
                                  file=root.at(rel))
        pairs.append((root.at(rel), root.at(runs)))
    return pairs


def _store_label_measures(parts: Sequence[Partition], shared: Mapping[str, str | None],
                          storage_options: Mapping[str, Any] | None = None) -> set[str]:
    """The measure names in the store's label files (one column read per file)."""
    files = [p.labels for p in parts if p.labels]
    if shared.get("labels"):
        files += _listing(shared["labels"], _ANSWER_SUFFIXES, storage_options)[0]  # type: ignore[arg-type]
    out: set[str] = set()
    for url in files:
        with _remote.staged([url], storage_options) as (f,):
            out |= _label_measures_of(Path(f))  # type: ignore[arg-type]
    return out


def _label_measures_of(f: Path) -> set[str]:
    suf = f.suffix.lower()
    try:
        if suf == ".parquet":
            col = pq.read_table(f, columns=["measure"]).column("measure").to_pylist()
        elif suf == ".csv":
            col = pd.read_csv(f, usecols=["measure"], dtype=str)["measure"].tolist()
        else:
            col = []
            with open(f, "rb") as fh:
                for line in fh:
                    with contextlib.suppress(ValueError, AttributeError):
                        col.append(json.loads(line).get("measure"))
    except (ValueError, KeyError, OSError, pa.ArrowException):
        return set()  # unreadable or without a measure column: ingest reports it per partition
    return {str(x) for x in set(col) if x is not None}


def score_dataset(traces: str | Path, answers: str | Path | None = None, labels: str | Path | None = None, *,
                  out: str | Path, engine: Any = "pandas", by: str | Sequence[str] | None = None,
                  memory_limit: str | None = None, threads: int | None = None,
                  temp_directory: str | Path | None = None, n_workers: int | None = None,
                  strict: bool = False, domain_rule: Callable[[str], str | None] | None = None,
                  outcome_rules: Mapping[str, Callable[..., bool | None]] | None = None,
                  check_ids: bool = True, resume: bool = False, overwrite: bool = False,
                  progress: bool = False, storage_options: Mapping[str, Any] | None = None) -> ScoredDataset:
    """Score a trace store partition by partition, write the score matrix, and summarise it.

    Parameters
    ----------
    traces : path
        A JSONL or Parquet trace file, or a folder of them (hive-partitioned or not).
    answers, labels : path, optional
        Judges' answers and human labels: co-partitioned folders (a file per trace
        partition, same relative path) or one file or folder for the whole store.
    out : path
        Output folder: ``scores/``, ``runs/``, ``ledger/`` (Parquet, one file per
        partition, same folders as the store), ``manifest.json`` and last the completion
        record ``_complete.json`` (docs/outputs.md). An ``out`` that is or lies inside an input is refused
        (:class:`~evaltk.errors.OutputRefused`).
    engine : {"pandas", "duckdb", "dask"}, a DuckDB connection or a dask.distributed Client
        ``"dask"`` uses the current client when there is one, else starts a
        ``LocalCluster`` of ``n_workers`` (default 2) single-threaded workers.
    by : str or sequence of str, optional
        Run columns (``agent``, ``domain``, a hive key) to group the score summary by.
    memory_limit : str, optional
        ``"4GB"``, ``"512MiB"``.  With ``engine="duckdb"`` the whole run's bound: the id
        check and the shuffle of shared answers (this process: DuckDB gets half of what the
        limit leaves and spills the rest; past the limit DuckDB is stopped and
        :class:`~evaltk.errors.LimitExceeded` names the phase; with any engine), the scoring
        (this process plus its worker processes: partitions admitted largest first, as many
        at once as the measured worker peak fits; past the limit the workers are stopped and
        ``LimitExceeded`` names the partition) and DuckDB's SQL summary (its own limit).
        With Dask, each worker's limit in a cluster evaltk starts.
    threads, temp_directory : optional
        DuckDB's thread count and spill folder.
    n_workers : int, optional
        Workers of a ``LocalCluster`` evaltk starts; with ``engine="duckdb"``, the worker
        processes scoring partitions in parallel on this machine (default: every core).
    strict, domain_rule, outcome_rules
        As in :func:`evaltk.scoring.score_traces`.
    check_ids : bool, default True
        Refuse a store whose trace ids repeat across partitions (needs DuckDB; skipped
        without it).
    resume, overwrite : bool, default False
        An ``out`` that already holds a run (complete or interrupted) is refused
        (:class:`~evaltk.errors.OutputRefused`, saying how many partitions are done)
        unless ``resume`` (score only the partitions not done, same inputs and options
        required: scoring is deterministic, so the result equals one uninterrupted run)
        or ``overwrite`` (remove what an earlier run wrote, and only that, then start over).
    progress : bool, default False
        A tqdm bar over the partitions (every engine also logs each partition to the
        ``evaltk.scale`` logger at INFO).
    storage_options : mapping, optional
        For URLs (``s3://``, ``gs://``, ``memory://``): passed to fsspec on the driver and
        on every worker (credentials, ``client_kwargs={"endpoint_url": ...}``).

    Returns
    -------
    ScoredDataset
        ``summary`` combines the partitions' summaries in a fixed binary tree (with
        ``engine="duckdb"``, partitions done by an earlier run are summarised by SQL over
        their written files).

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> from evaltk.data import make_demo
    >>> d = make_demo(n_traces=40, rng=0)
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "t").mkdir(), (tmp / "a").mkdir()
    >>> pd.DataFrame(d.traces).to_json(tmp / "t" / "p0.jsonl", orient="records", lines=True)
    >>> d.answers.to_csv(tmp / "a" / "p0.csv", index=False)
    >>> res = score_dataset(tmp / "t", tmp / "a", out=tmp / "out")
    >>> res.summary.n_runs, sorted(p.name for p in (tmp / "out").iterdir())  # one run is in progress
    (39, ['_complete.json', '_partitions', 'ledger', 'manifest.json', 'runs', 'scores', 'summaries'])
    """
    kind = engine_kind(engine)
    if kind == "duckdb" or (kind == "dask" and isinstance(engine, str)):
        _check_main_guard(f"engine={kind!r}")
    if resume and overwrite:
        raise ValueError("pass at most one of `resume` and `overwrite`")
    if memory_limit is not None:
        _check_size(memory_limit)
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    so = dict(storage_options or {})
    traces, answers, labels = (None if x is None else _absolute(x) for x in (traces, answers, labels))  # type: ignore[assignment]  # traces is required, never None
    in_process = [str(x) for x in (traces, answers, labels, out) if x is not None and str(x).startswith("memory://")]
    if in_process and kind == "dask":
        raise ValueError(f"{in_process[0]} is fsspec's memory filesystem, which lives in this process only; Dask "
                         "workers cannot see it: use engine='pandas' or 'duckdb', or a shared filesystem")
    if in_process:
        n_workers = 1  # the DuckDB engine's worker processes would not see it either
    parts, shared = discover_partitions(traces, answers, labels, storage_options=so)
    root = _output_root(out, [traces, answers, labels], so)
    label_ms = _label_measures(_store_label_measures(parts, shared, so)) if labels is not None else ()
    run_doc = {"traces": str(traces), "answers": None if answers is None else str(answers),
               "labels": None if labels is None else str(labels), "label_measures": list(label_ms),
               "strict": bool(strict), "partitions": len(parts)}
    tmp_dir = None if temp_directory is None else str(temp_directory)
    if check_ids:  # first: a store it refuses spends no shuffle, and leaves `out` as it was (even with overwrite)
        _maybe_check_ids(parts, memory_limit, tmp_dir, so)
    done = _prepare_out(root, parts, run_doc, resume=resume, overwrite=overwrite)
    if len(done) < len(parts):
        parts_s, shared = _shuffle_shared(parts, shared, root, memory_limit=memory_limit, temp_directory=tmp_dir,
                                          storage_options=so, strict=strict)
    else:
        parts_s = list(parts)
    todo = [p for p in parts_s if p.key not in done]
    options = {"strict": strict, "domain_rule": domain_rule, "outcome_rules": outcome_rules, "storage_options": so}
    kw: dict[str, Any] = {"out": str(root), "by": keys, "shared": shared, "label_measures": label_ms, "options": options}
    done_pairs = _pairs_of(root, done)
    if done:
        _LOG.info("resuming: %d of %d partitions already done in %s", len(done), len(parts), root)
    memory: Mapping[str, Any] = {}
    with _progress(len(parts), len(done), progress) as tick, _removed_after(root, _SHUFFLE_DIR):
        if kind == "duckdb":
            with _duckdb(engine, memory_limit, threads, tmp_dir) as con:
                todo = _pool_order(todo, memory_limit)
                # added on the driver as they come, in a fixed tree (TreeCombiner: log2(n) partials held) in
                # the order sent (under memory_limit largest first: the last bits of a float sum may differ)
                tree = TreeCombiner()
                ordered = _InOrder([p.key for p in todo], tree.push)
                memory = _pool_run(todo, kw, n_workers, tick, ordered.put, memory_limit)
                ordered.check()
                if done_pairs:  # partitions of an earlier run: summarised from their files in SQL
                    _remote.register(con, [root.root], so)
                    with _bounded(con, memory_limit, _SUMMARY_PHASE, tmp_dir, outcome="every partition is scored "
                                  "and kept; rerun with resume=True / --resume to summarise them"):
                        tree.push(_summarize_duckdb(con, done_pairs, keys, root.path()))  # type: ignore[arg-type]  # a local or remote root
                summary = tree.result() if len(tree) else _empty_summary(keys)
        elif kind == "dask":
            with _dask_client(engine, memory_limit, n_workers) as client:
                summary = _dask_run(client, todo, done_pairs, kw, keys, tick)
        else:
            tree = TreeCombiner()
            for pr in done_pairs:
                tree.push(_summary_of_files(pr, keys, so))
            for p in todo:
                tree.push(_score_partition(p, **kw))
                tick(p.key)
            summary = tree.result() if len(tree) else _empty_summary(keys)
    _write_manifest(root, summary)
    _write_complete(root, parts)  # last: the dataset is complete
    return ScoredDataset(root.path(), summary, len(parts), kind, memory)  # type: ignore[arg-type]  # a local or remote root


_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def _size_bytes(s: str) -> int:
    """``"4GB"`` -> 4e9, ``"512MiB"`` -> 512 * 2**20 (DuckDB's reading of sizes)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?)B\s*", _check_size(s), re.IGNORECASE)
    assert m is not None  # _check_size accepted it
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


_WORKER_MODULES = ("pandas", "pyarrow.parquet", "evaltk.ingest", "evaltk.scoring", "evaltk.scale._scale")


def _descendants() -> list[int]:
    """Every process below this one (the forkserver, the workers it forked, the resource tracker),
    from ``/proc/<pid>/stat``."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [os.getpid()]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _pool_task(part: Partition, kw: Mapping[str, Any]) -> tuple[int, Kept, DatasetSummary]:
    """Score one partition in a worker process; returns the worker's resident peak (VmHWM, bytes),
    what it keeps once the partition is done (:class:`Kept`) and the partition's summary (the
    driver adds them: no second pass over the written files)."""
    summary = _score_partition(part, **kw)  # (which ends by handing freed memory back: release_memory)
    kept = Kept(part.key, os.getpid(), _proc_status("self", "VmRSS"), _io.released_rss())
    return _proc_status("self", "VmHWM"), kept, summary


def _fmt_mib(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def _input_bytes(p: Partition) -> int:
    return sum(os.path.getsize(f) for f in (p.traces, p.answers, p.labels)
               if f is not None and not is_remote(f) and os.path.isfile(f))


class _MemoryBudget:
    """``memory_limit`` over a phase: this process plus its worker processes (the scoring, below), or
    this process running DuckDB (the id check and the shuffle: :func:`_bounded`).

    Partitions are admitted largest first (input bytes): the first runs alone, or beside a
    companion when the limit is far off (:data:`_COMPANION_ROOM`), and the worker peak measured
    on them (VmHWM) sets how many may run at once, ``(limit - the rest) // peak``, at most
    ``n_workers``, where the rest is this process and its other descendants (the forkserver).  A
    watchdog thread sums the resident size (RSS) of this process and all its descendants (listed
    every 0.5 s) every 50 ms (pages they share are counted in each: conservative).  Past
    ``shed_above`` (set while a companion runs) the companion is stopped and its partition
    scored later; past the limit the workers are killed and the run refused
    (:class:`~evaltk.errors.LimitExceeded`, exit 65) naming the partitions that were running.
    """

    def __init__(self, limit: str) -> None:
        import threading

        self.text = limit
        self.limit = _size_bytes(limit)
        self.base = _proc_status("self", "VmRSS")
        self.peak_worker = 0
        self.peak_total = 0
        self.admissions: list[Admission] = []
        self.over: tuple[int, list[str]] | None = None
        self.shed_above: int | None = None  # while a companion runs: the total past which it is stopped
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check_fits(self) -> None:
        if self.base >= self.limit:
            raise LimitExceeded(f"memory_limit={self.text} is below what this process already holds "
                                f"({_fmt_mib(self.base)}) before any partition is scored; raise memory_limit",
                                limit="memory_limit")

    def rest(self, workers: Sequence[int]) -> int:
        """The resident size of this process and its descendants other than ``workers``."""
        return _proc_status("self", "VmRSS") + sum(_proc_status(p, "VmRSS") for p in _descendants()
                                                   if p not in workers)

    def admit(self, n_workers: int, workers: Sequence[int]) -> int:
        """How many partitions may run at once, from the largest worker peak measured so far."""
        if self.peak_worker == 0:
            return 1
        rest = self.rest(workers)
        width = max(1, min(n_workers, (self.limit - rest) // self.peak_worker))
        if not self.admissions or self.admissions[-1].width != width:
            self.admissions.append(Admission(width, rest, self.peak_worker))
        return width

    def watch(self, running: Callable[[], list[str]], kill: Callable[[], None],
              shed: Callable[[int], int] | None = None) -> None:
        """Watch the total from a thread: past :attr:`shed_above`, ``shed(total)`` (stop the companion,
        returning its resident size); past the limit, ``kill()`` and record :attr:`over`."""
        import threading

        def run() -> None:
            n = 0
            tree: list[int] = []
            armed = None
            while not self._stop.wait(0.05):
                above = self.shed_above
                if n % 10 == 0 or above != armed:  # the process tree every 0.5 s (a /proc scan is ~3 ms) and
                    tree = _descendants()          # when a companion starts; their sizes every 50 ms
                    armed = above
                n += 1
                total = _proc_status("self", "VmRSS") + sum(_proc_status(p, "VmRSS") for p in tree)
                self.peak_total = max(self.peak_total, total)
                if above is not None and total > above and shed is not None:
                    self.shed_above = None
                    total -= shed(total)  # the first partition keeps the room; past the limit even so: refused
                if total > self.limit and self.over is None:
                    self.over = (total, running())
                    kill()
                    return

        self._thread = threading.Thread(target=run, name="evaltk-memory-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def refusal(self, parts: Mapping[str, Partition]) -> LimitExceeded:
        assert self.over is not None
        total, keys = self.over
        names = ", ".join(f"{k} ({parts[k].traces})" for k in keys) or "(none running)"
        first = parts[keys[0]].traces if keys else None
        alone = " alone" if len(keys) == 1 else "s"
        return LimitExceeded(
            f"memory_limit={self.text} cannot hold the scoring of partition{alone} {names}: this process and "
            f"its workers reached {_fmt_mib(total)} (this process {_fmt_mib(self.base)} of it); the workers were "
            "stopped and nothing more is written. Raise memory_limit, or split the partition into smaller "
            "files; the partitions already done are kept (rerun with resume=True / --resume)",
            limit="memory_limit", file=first)


    def phase_refusal(self, phase: str, why: str, outcome: str = "nothing more was scored") -> LimitExceeded:
        """The refusal of a phase this process runs in DuckDB (the id check, the shuffle, the summary)."""
        return LimitExceeded(
            f"memory_limit={self.text} cannot hold {phase}: {why}; {outcome}. Raise "
            "memory_limit (DuckDB spills to temp_directory= beyond its share)", limit="memory_limit")


#: The share of what ``memory_limit`` leaves (after this process and its descendants) that DuckDB's
#: own ``memory_limit`` is set to in the phases it runs in this process (the trace-id check, the
#: shuffle of shared answers).  DuckDB's limit bounds its buffer manager only: its readers, the
#: Parquet writer and the allocator's slack come on top (``benchmarks/shuffle_memory.py`` measures
#: the process's VmHWM for several shares; docs/scale.md, *The memory limit*).
_DUCKDB_SHARE = 0.5
#: How a refusal names the SQL summary of the scored dataset (after scoring, and `summarize_dataset`).
_SUMMARY_PHASE = "the SQL summary of the scored dataset"
#: The least DuckDB is given in such a phase, and per DuckDB thread (one thread reading JSON Lines
#: needs 48 MiB, measured): a smaller share is refused before DuckDB starts, and DuckDB runs on at
#: most ``share // _DUCKDB_FLOOR`` threads.
_DUCKDB_FLOOR = 64 * 2**20


@contextlib.contextmanager
def _bounded(con: Any, memory_limit: str | None, phase: str, temp_directory: str | None = None, *,
             outcome: str = "nothing more was scored") -> Iterator[None]:
    """Hold a DuckDB phase of this process under ``memory_limit``: DuckDB's own limit is set to
    :data:`_DUCKDB_SHARE` of what the limit leaves, it spills to ``temp_directory`` (a temporary
    folder, removed afterwards, when none is given), and the watchdog of :class:`_MemoryBudget`
    (this process and its descendants, every 50 ms) interrupts the query past the limit.  Either way
    the run is refused with :class:`~evaltk.errors.LimitExceeded` (exit 65) naming ``phase``."""
    duckdb = optional_module("duckdb")
    if memory_limit is None:
        _settings(con, temp_directory=temp_directory)
        yield
        return
    budget = _MemoryBudget(memory_limit)
    budget.check_fits()
    rest = budget.base + sum(_proc_status(p, "VmRSS") for p in _descendants())
    room = budget.limit - rest
    give = int(room * _DUCKDB_SHARE)
    if give < _DUCKDB_FLOOR:
        raise budget.phase_refusal(phase, f"this process and its descendants hold {_fmt_mib(rest)}, which leaves "
                                          f"{_fmt_mib(max(room, 0))}, and DuckDB, given {_DUCKDB_SHARE:.0%} of that, "
                                          f"needs at least {_fmt_mib(_DUCKDB_FLOOR)}", outcome)
    spill = tempfile.TemporaryDirectory(prefix="evaltk-spill-") if temp_directory is None else None
    threads = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
    was_temp = str(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    try:
        # each DuckDB thread holds buffers of its own (a JSON reader's: 48 MiB, measured): fewer threads
        # when the share is small, rather than running out
        _settings(con, memory_limit=f"{give // 2**20}MiB", threads=max(1, min(threads, give // _DUCKDB_FLOOR)),
                  temp_directory=spill.name if spill else temp_directory)
        budget.watch(lambda: [phase], con.interrupt)
        try:
            yield
        except duckdb.OutOfMemoryException as e:  # DuckDB's own limit: what it holds does not spill
            raise budget.phase_refusal(phase, f"DuckDB, given {_fmt_mib(give)} of it ({_DUCKDB_SHARE:.0%} of what "
                                              f"this process and its descendants, {_fmt_mib(rest)}, leave), ran out "
                                              f"({str(e).splitlines()[0]})", outcome) from None
        except duckdb.Error:
            if budget.over is not None:  # the watchdog interrupted the query
                raise budget.phase_refusal(phase, _over(budget), outcome) from None
            raise
        finally:
            budget.stop()
        if budget.over is not None:
            raise budget.phase_refusal(phase, _over(budget), outcome)
    finally:  # the connection as it was (a caller's own connection has the whole run's limit again)
        with contextlib.suppress(duckdb.Error):  # a connection DuckDB gave up on keeps the refusal above
            _settings(con, memory_limit=memory_limit, threads=threads, temp_directory=was_temp)
        if spill is not None:
            spill.cleanup()


def _over(budget: _MemoryBudget) -> str:
    assert budget.over is not None
    return (f"this process and its descendants reached {_fmt_mib(budget.over[0])} (this process held "
            f"{_fmt_mib(budget.base)} before it), so DuckDB was stopped")


class _InOrder:
    """Hand each partition's summary to ``push`` in the order of ``keys``, whatever order they are
    scored in: one is held only until those before it are in (a few, as the pool runs them in
    that order), so a sum in a fixed tree needs no list of every summary.  :meth:`check` after
    the last: every key was put."""

    def __init__(self, keys: Sequence[str], push: Callable[[DatasetSummary], None]) -> None:
        self._keys, self._push, self._next = list(keys), push, 0
        self._held: dict[str, DatasetSummary] = {}

    def check(self) -> None:
        if self._next != len(self._keys):  # a partition scored and not added would be lost silently
            raise RuntimeError(f"{len(self._keys) - self._next} of {len(self._keys)} partitions' summaries were "
                               f"not added: {self._keys[self._next]}'s never came")

    def put(self, key: str, summary: DatasetSummary) -> None:
        self._held[key] = summary
        while self._next < len(self._keys) and self._keys[self._next] in self._held:
            self._push(self._held.pop(self._keys[self._next]))
            self._next += 1


def _pool_order(todo: Sequence[Partition], memory_limit: str | None) -> list[Partition]:
    """The order :func:`_pool_run` sends partitions in: under ``memory_limit`` the largest input
    first (the first measured sets the admission, so it must be the largest), else as given."""
    return list(todo) if memory_limit is None else sorted(todo, key=_input_bytes, reverse=True)


def _pool_run(todo: Sequence[Partition], kw: Mapping[str, Any], n_workers: int | None,
              tick: Callable[[str], None], collect: Callable[[str, DatasetSummary], None],
              memory_limit: str | None = None) -> dict[str, Any]:
    """Score ``todo`` in ``n_workers`` worker processes (default: every core; forkserver, else spawn),
    or here when there is one partition and no ``memory_limit``, one worker, or options that
    cannot be pickled (a lambda ``domain_rule``).  On a failure or Ctrl-C the partitions not
    started are cancelled and the running ones awaited, so nothing is written after this call
    has raised.  With ``memory_limit`` the scoring phase is held under it (:class:`_MemoryBudget`).
    Each partition's summary goes to ``collect(key, summary)`` as it is scored; ``todo`` is sent
    in its order, which must be :func:`_pool_order`'s (under a limit, the largest first).
    Returns the memory measured: ``worker`` (the largest worker's VmHWM), ``total``, ``kept``
    and, under a limit, ``admissions`` and ``companions`` (see :attr:`ScoredDataset.memory`);
    empty when scored here."""
    import concurrent.futures as cf
    import multiprocessing as mp
    import pickle
    import threading

    budget = None if memory_limit is None else _MemoryBudget(memory_limit)
    if budget is not None:
        budget.check_fits()
    n = min(len(todo), n_workers or os.cpu_count() or 1)
    try:
        pickle.dumps(dict(kw))
    except (pickle.PicklingError, TypeError, AttributeError):
        n = 0  # in this process
    if n == 0 or (n == 1 and budget is None):
        for p in todo:
            collect(p.key, _score_partition(p, **kw))
            tick(p.key)
            if budget is not None and _proc_status("self", "VmHWM") > budget.limit:
                budget.over = (_proc_status("self", "VmHWM"), [p.key])
                raise budget.refusal({p.key: p})
        return {}
    _check_main_guard("engine='duckdb' (its worker processes)")
    methods = mp.get_all_start_methods()
    ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods:  # the server imports scoring once and every worker forks with it loaded
        ctx.set_forkserver_preload(["__main__", *_WORKER_MODULES])  # (else ~1.5 CPU-s of imports per worker)
    ex = cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx)
    by_key = {p.key: p for p in todo}
    queue = list(reversed(todo))
    running: dict[cf.Future[tuple[int, Kept, DatasetSummary]], Partition] = {}
    peaks: list[int] = []
    kept: list[Kept] = []
    # Under a limit, until the first (largest) partition is measured: its future (`first`), the
    # peaks of partitions done before it (`held`: smaller, so they do not set the width), and its
    # companions, one at a time, in a one-process pool of their own (`spec`: stopping one breaks
    # that pool only).  Each companion is a dict: "part", "stopped_at" (the watchdog's, set
    # before the kill), "outcome" (this thread's: None scored, else the total it was stopped at).
    first: list[Any] = []
    held: list[int] = []
    spec: cf.ProcessPoolExecutor | None = None
    companions: list[dict[str, Any]] = []
    live: list[tuple[Any, dict[str, Any]]] = []  # the running companion: (future, its dict)
    shed_at: list[int | None] = []  # the total past which a companion is stopped; [None]: no companions
    # `live` and the companion's pool change under this lock, and the watchdog's stop holds it
    # from reading `live` to the kill: a companion is never started, nor its finish taken, between
    # the two (the kill would hit the next companion in the same process, or a finished one's pool)
    companion_lock = threading.Lock()

    def pool_pids(pool: cf.ProcessPoolExecutor | None) -> list[int]:
        return [int(pid) for pid in list(getattr(pool, "_processes", None) or {})]

    def pids() -> list[int]:
        return pool_pids(ex) + pool_pids(spec)

    def kill(which: list[int] | None = None) -> None:
        import signal

        for pid in pids() if which is None else which:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def shed(total: int) -> int:  # from the watchdog: stop the running companion, scored later
        with companion_lock:
            if not live:  # it had finished (the watchdog read the threshold before it was lifted)
                return 0
            fut, comp = live[0]
            ps = pool_pids(spec)
            size = sum(_proc_status(pid, "VmRSS") for pid in ps)
            if fut.done():  # finished meanwhile: its process is idle, and stopping it saves nothing
                return 0
            # The total that crossed may have been read while the companion before this one ran (same
            # process, which keeps what it grew to): stopping this one frees that memory all the same.
            comp["stopped_at"] = total  # before the kill: the main thread reads it on the broken future
            kill(ps)
            return size

    admitted: dict[str, None] = {}  # keys admitted and not finished, named before submit returns: the
    if budget is not None:          # first submit starts the forkserver, and the watchdog may fire meanwhile
        budget.watch(lambda: list(dict(admitted)), kill, shed)
    try:
        while queue or running:
            width = n if budget is None else budget.admit(n, pids())
            while queue and len(running) < width:
                p = queue.pop()
                admitted[p.key] = None
                fut = ex.submit(_pool_task, p, kw)
                running[fut] = p
                if budget is not None and not budget.peak_worker and not first:
                    first.append(fut)
            if budget is not None and first and not live and queue and n > 1 and shed_at != [None]:
                if not shed_at:  # once, now that the forkserver holds its preloaded modules
                    shed_at.append(_companion_room(budget, pool_pids(ex)) if _all_local(todo, kw) else None)
                if shed_at[0] is not None:
                    p = queue.pop()
                    companions.append({"part": p})
                    admitted[p.key] = None
                    with companion_lock:
                        spec = spec or cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx)
                        fut = spec.submit(_pool_task, p, kw)
                        live.append((fut, companions[-1]))
                    running[fut] = p
                    budget.shed_above = shed_at[0]  # now that shed() finds its process
            finished, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for f in finished:
                p = running.pop(f)
                admitted.pop(p.key, None)
                with companion_lock:
                    comp = live.pop()[1] if live and f is live[0][0] else None
                if comp is not None:
                    assert budget is not None
                    budget.shed_above = None
                try:
                    hwm, after, summary = f.result()
                except cf.process.BrokenProcessPool:
                    if budget is not None and budget.over is not None:
                        raise budget.refusal(by_key) from None
                    if comp is not None and "stopped_at" in comp:  # recorded before the kill
                        comp["outcome"] = comp["stopped_at"]
                        assert spec is not None
                        spec.shutdown(wait=True)  # broken: its one process was killed
                        spec = None
                        shed_at[:] = [None]  # the room is tight: no more companions
                        _remove_temporaries(kw["out"], p.key)  # what its files' atomic writes left
                        queue.append(p)  # next, admitted on the peak measured by then
                        continue
                    raise
                if comp is not None:
                    comp["outcome"] = None  # scored
                    if "stopped_at" in comp:  # stopped as it sent its result: scored, but its process
                        assert spec is not None  # is dead, so its pool is broken (no submit to it) and,
                        spec.shutdown(wait=True)  # the room being tight, no other companion follows
                        spec = None
                        shed_at[:] = [None]
                collect(p.key, summary)
                peaks.append(hwm)
                kept.append(after)
                if budget is not None and first and f is not first[0]:
                    held.append(hwm)  # the largest partition still runs: its peak, not this one's, sets the width
                elif budget is not None:
                    if first:  # measured: admission by peaks takes over from the companions
                        first.clear()
                        budget.shed_above = None
                    budget.peak_worker = max(budget.peak_worker, hwm, *held)
                    held.clear()
                if spec is not None and not live and not first:  # its last companion is done
                    spec.shutdown(wait=True)
                    spec = None
                tick(p.key)
    except BaseException:
        if budget is not None:
            budget.shed_above = None  # no stop during the shutdown below
        if spec is not None:
            spec.shutdown(wait=True, cancel_futures=True)
        ex.shutdown(wait=True, cancel_futures=True)
        if budget is not None:
            budget.stop()
        for c in companions:  # stopped, and the error came before its partition was requeued
            if "stopped_at" in c and "outcome" not in c:
                _remove_temporaries(kw["out"], c["part"].key)
        raise
    ex.shutdown(wait=True)
    if spec is not None:
        spec.shutdown(wait=True)
    if budget is None:
        return {"worker": max(peaks, default=0), "total": 0, "admissions": (), "kept": tuple(kept)}
    budget.stop()
    if budget.over is not None:  # passed the limit after the last partition finished
        raise budget.refusal(by_key)
    return {"worker": budget.peak_worker, "total": budget.peak_total, "admissions": tuple(budget.admissions),
            "companions": tuple(Companion(c["part"].key, c.get("outcome")) for c in companions),
            "kept": tuple(kept)}


#: Under ``memory_limit`` the first partition runs beside a companion (a second partition, in a pool
#: of its own) when what the limit leaves holds this many workers as they start: every worker is
#: forked from the forkserver, so none is smaller than it.  On the benchmark's 100k-trace
#: partitions a worker peaks at about 4x that start (docs/scale.md), so 8 leaves room for two.
_COMPANION_ROOM = 8
#: The share of that room past which the watchdog stops the companion (and its partition is
#: scored later): the first partition then has the whole room, as if it had run alone.
_COMPANION_SHED = 0.75


def _companion_room(budget: _MemoryBudget, workers: list[int]) -> int | None:
    """The total past which the first partition's companion is stopped, or None when the limit is
    not far off (:data:`_COMPANION_ROOM`).  Called after the first partition's submit, so the
    forkserver has started and holds its preloaded modules."""
    rest = budget.rest(workers)
    start = rest - _proc_status("self", "VmRSS")  # the forkserver (and the resource tracker)
    room = budget.limit - rest
    if start <= 0 or room < _COMPANION_ROOM * start:
        return None
    return rest + int(_COMPANION_SHED * room)


def _remove_temporaries(out: str | None, key: str) -> None:
    """Remove the temporaries a killed worker's atomic writes of partition ``key`` left in a local ``out``."""
    if out is None or is_remote(out):
        return  # on object storage each file is one PUT: nothing partial is visible
    rels = [f"{t}/{key}.parquet" for t in _TABLES]
    for rel in (*rels, f"{SUMMARIES_DIR}/{key}.json", _marker_rel(key)):
        for tmp in _io.temporaries_of(Path(out) / rel):
            with contextlib.suppress(OSError):
                tmp.unlink()


def _all_local(todo: Sequence[Partition], kw: Mapping[str, Any]) -> bool:
    """Whether the output and every partition's inputs are local: only then has the first
    partition a companion (a stopped companion's staged copies of remote inputs, in a folder
    of the worker's own, would be left behind)."""
    out = kw.get("out")
    return not (out is not None and is_remote(out)) and not any(
        f is not None and is_remote(f) for p in todo for f in (p.traces, p.answers, p.labels))


def _unguarded_script_line() -> str | None:
    """``file:line`` of the call when it runs in a script's top-level code (``__main__`` with a
    file, which spawned processes re-import) outside the body of an ``if __name__ == "__main__":``
    (or the ``else`` of a ``!=`` test), else None: a guarded call, a notebook, ``-c``, a package's
    ``__main__`` run by ``python -m`` (spawn does not re-import it), Dask set to fork its workers,
    a source that cannot be read or parsed (nothing is refused on a guess)."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return None
    spec_name = getattr(getattr(main, "__spec__", None), "name", "") or ""
    if spec_name == "__main__" or spec_name.endswith(".__main__"):  # as multiprocessing.spawn decides
        return None
    with contextlib.suppress(Exception):
        import dask

        if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
            return None
    frame: Any = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        tree = ast.parse(Path(path).read_bytes())  # bytes: the source's own coding (PEP 263)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    name = {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}

    def compares_name(test: ast.expr, op: type) -> bool:  # `__name__ == "__main__"` (either side) for ast.Eq
        return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op) \
            and {ast.dump(test.left), ast.dump(test.comparators[0])} == name

    def guarded_body(node: ast.AST) -> list[ast.stmt]:
        """The statements of ``node`` that run only in the main process, if it is a guard."""
        if not isinstance(node, ast.If):
            return []
        t = node.test
        terms = t.values if isinstance(t, ast.BoolOp) and isinstance(t.op, ast.And) else [t]
        if any(compares_name(v, ast.Eq) for v in terms):
            return node.body
        return node.orelse if compares_name(t, ast.NotEq) else []

    def spans(node: ast.stmt) -> bool:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return first <= line <= (node.end_lineno or node.lineno)

    def under_guard(stmts: list[ast.stmt]) -> bool:
        for node in stmts:
            if not spans(node):
                continue
            if any(spans(b) for b in guarded_body(node)):
                return True
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return False  # top-level code running a decorator or a class body
            inner = [getattr(node, f, []) for f in ("body", "orelse", "finalbody")]
            inner += [h.body for h in getattr(node, "handlers", [])]
            inner += [c.body for c in getattr(node, "cases", [])]
            return any(under_guard(b) for b in inner)
        return False

    return None if under_guard(tree.body) else f"{path}:{line}"


def _check_main_guard(what: str) -> None:
    """Refuse to start worker processes from a process that is itself a worker re-running a script's
    top level: a script without ``if __name__ == "__main__":`` (Dask's "Nanny failed to start")."""
    import multiprocessing as mp

    if mp.parent_process() is not None and mp.current_process().name != "MainProcess":
        raise RuntimeError(f"{what} starts worker processes, and each one re-imports your script: put the "
                           "call under `if __name__ == \"__main__\":` (docs/scale.md), or pass a running "
                           "distributed.Client as the engine")


def _output_root(out: str | Path, inputs: Sequence[Any], so: Mapping[str, Any]) -> Root:
    """The output folder, checked against the inputs (never inside one, never one of them)."""
    if not is_remote(out):
        return Root(check_output(_absolute(out), [x for x in inputs if x is not None and not is_remote(x)],
                                 kind="dir", writes=_WRITES), so)
    o = str(out).rstrip("/")
    for x in inputs:
        if x is not None and is_remote(x):
            xi = str(x).rstrip("/")
            if o == xi or o.startswith(xi + "/") or any(xi == o + "/" + w or xi.startswith(o + "/" + w + "/")
                                                         for w in _WRITES):
                raise OutputRefused(f"output {o} is or lies inside the input {x}, or would overwrite it; "
                                    "choose another output path", output=o, input=str(x))
    return Root(o, so)


def _absolute(path: str | Path) -> str | Path:
    """A local path (or ``file://`` URL) made absolute here, on the driver, before any task is sent
    (a worker's working folder is not the driver's); another URL as it is."""
    return str(path) if is_remote(path) else Path(_remote.local(path))


def partitions_done(out: str | Path, *, storage_options: Mapping[str, Any] | None = None) -> int:
    """How many partitions a :func:`score_dataset` run (interrupted or not) finished in ``out``
    (their markers are there)."""
    root = Root(out if is_remote(out) else _absolute(out), storage_options)
    return sum(1 for rel in root.find(_PARTS_DIR, (".json",)) if rel != f"{_PARTS_DIR}/{_RUN_FILE}")


def _prepare_out(root: Root, parts: Sequence[Partition], run_doc: Mapping[str, Any], *, resume: bool,
                 overwrite: bool) -> dict[str, dict[str, str]]:
    """Make ``out`` ready: refuse an earlier result unless ``resume`` or ``overwrite``; the partitions done."""
    present = [w for w in _WRITES if root.exists(w)]
    done: dict[str, dict[str, str]] = {}
    run_rel = f"{_PARTS_DIR}/{_RUN_FILE}"
    if present and overwrite:
        for w in present:  # only what score_dataset writes
            root.remove(w)
    elif present and resume:
        earlier = root.read_json(run_rel) if root.isfile(run_rel) else None
        if earlier != dict(run_doc):
            raise OutputRefused(f"`out` {root} holds a run of other inputs or options ({root.at(run_rel)}: "
                                f"{earlier}); resume needs the same store, answers, labels and options, or pass "
                                "overwrite=True (--overwrite) to start over", output=str(root))
        done = _done_partitions(root, parts)
    elif present:
        n = partitions_done(root.root, storage_options=root.so)
        state = "a complete scored dataset" if root.isfile(COMPLETE_FILE) else \
            f"an unfinished run ({n} of {len(parts)} partitions done)"
        raise OutputRefused(f"`out` {root} already holds {state}; pass resume=True (--resume) to score only "
                            "the partitions not done, or overwrite=True (--overwrite) to start over",
                            output=str(root))
    root.mkdir()
    if root.exists(COMPLETE_FILE):
        root.remove(COMPLETE_FILE)
    root.write_json(run_rel, dict(run_doc))
    return done


@contextlib.contextmanager
def _progress(total: int, initial: int, show: bool) -> Iterator[Callable[[str], None]]:
    """A tick per partition scored: a log line (``evaltk.scale``, INFO) and, with ``show``, a tqdm bar."""
    bar = None
    if show:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is optional
            tqdm = None
        if tqdm is not None:
            bar = tqdm(total=total, initial=initial, unit="partition", desc="scoring", leave=False)
    count = [initial]
    interrupted = _InterruptSeen()

    def tick(key: str) -> None:
        count[0] += 1
        _LOG.info("partition %s scored (%d of %d)", key, count[0], total)
        if bar is not None:
            bar.update(1)
        if interrupted.seen:  # a Ctrl-C that some callback swallowed still stops the run here
            raise KeyboardInterrupt

    try:
        with interrupted:
            yield tick
        if interrupted.seen:  # swallowed after the last tick: the run still stops (exit 130, resumable)
            raise KeyboardInterrupt
    finally:
        if bar is not None:
            bar.close()


class _InterruptSeen:
    """While active (in the main thread, where Ctrl-C has Python's default handler), SIGINT
    is remembered as well as raised.  Python ignores an exception raised inside a weakref
    callback or a finaliser: it hands it to :func:`sys.unraisablehook`, which prints
    "Exception ignored ... Traceback", and the run goes on.  So while active, an ignored
    KeyboardInterrupt that this handler raised is kept quiet (every other unraisable
    exception still reaches the hook there was before), and the progress tick checks
    :attr:`seen` after every partition and raises it again: the user sees one clean "Rerun
    with --resume" message and exit 130, never a traceback."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None
        self._hook: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def _unraisable(self, info: Any) -> None:
        if self.seen and isinstance(info.exc_value, KeyboardInterrupt):
            return  # remembered; the next tick raises it where it can stop the run
        self._hook(info)

    def __enter__(self) -> _InterruptSeen:
        import signal
        import sys
        import threading

        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            import signal
            import sys

            signal.signal(signal.SIGINT, self._previous)
            if sys.unraisablehook == self._unraisable:  # nobody replaced it meanwhile
                sys.unraisablehook = self._hook


def _dask_run(client: Any, todo: Sequence[Partition], done_pairs: Sequence[tuple[str, str]],
              kw: Mapping[str, Any], keys: Sequence[str], tick: Callable[[str], None]) -> DatasetSummary:
    """Score ``todo`` on the cluster; on any failure (or Ctrl-C) cancel every task sent and wait
    until none is still running, so nothing is written after this call has raised.

    The reduction tree is sent with the partitions, and this function keeps a reference only to
    its root and to the partitions not finished yet: a partition's summary is dropped from the
    worker's memory as soon as the combine above it has run, not held to the end of the run (Dask
    frees a result nobody holds once its dependents are done)."""
    import uuid

    distributed = optional_module("distributed")
    prefix = f"evaltk-scale-{uuid.uuid4().hex}"
    key_of = {f"{prefix}-score-{i}": p.key for i, p in enumerate(todo)}
    live: dict[str, Any] = {}  # partitions (and earlier runs' summaries) not finished yet, by task key
    root: list[Any] = []
    try:
        leaves = client.map(_score_partition, list(todo), pure=False, key=list(key_of), **kw)
        if done_pairs:
            leaves += client.map(_summary_of_files, list(done_pairs), by=list(keys), pure=False,
                                 storage_options=kw["options"].get("storage_options"),
                                 key=[f"{prefix}-done-{i}" for i in range(len(done_pairs))])
        if not leaves:
            return _empty_summary(keys)
        live.update((f.key, f) for f in leaves)
        root.append(_tree_reduce(client, leaves, split_every=8, prefix=prefix, wait=False))
        done = distributed.as_completed(leaves)
        del leaves
        for f in done:
            if f.status == "error":
                f.result()  # raises the task's exception here
            if f.key in key_of:
                tick(key_of[f.key])
            del live[f.key]
        del f
        return cast(DatasetSummary, root[0].result())
    except BaseException as e:
        _cancel_dask(client, [*root, *live.values()], prefix)
        if isinstance(e, _lost_worker_errors()):
            so = kw["options"].get("storage_options")
            task = getattr(e, "task", None)  # KilledWorker names the task
            at = f" scoring partition {key_of[task]!r}" if task in key_of else ""
            raise WorkersLost(f"the Dask cluster lost its workers{at} ({type(e).__name__}: {e}); "
                              f"{partitions_done(kw['out'], storage_options=so)} partition(s) done in "
                              f"{kw['out']}: rerun with resume=True (--resume) to score only the rest") from e
        raise


class WorkersLost(RuntimeError):
    """A Dask run failed because its workers died: a partition's task outlived
    ``distributed.scheduler.allowed-failures`` + 1 workers (``KilledWorker``, often a worker
    over its memory limit), or no (suitable) worker was left for the scheduler's
    ``no-workers-timeout`` (``NoWorkerError``, ``NoValidWorkerError``).  The partitions
    done keep their markers: resume the run."""


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Dask's errors for a task that lost its workers (raised by its future's ``result()``)."""
    from distributed.scheduler import KilledWorker, NoValidWorkerError, NoWorkerError

    return (KilledWorker, NoWorkerError, NoValidWorkerError)


def _running_keys(prefix: str, dask_worker: Any = None) -> list[str]:
    """The keys starting with ``prefix`` still executing on this worker (cancelled ones included)."""
    st = dask_worker.state
    tasks = [*st.executing, *getattr(st, "long_running", ())]
    return [str(ts.key) for ts in tasks if str(ts.key).startswith(prefix)]


def _scheduler_keys(prefix: str, dask_scheduler: Any = None) -> list[str]:
    """The keys starting with ``prefix`` the scheduler still holds."""
    return [str(k) for k in dask_scheduler.tasks if str(k).startswith(prefix)]


def _cancel_dask(client: Any, sent: Sequence[Any], prefix: str, timeout: float = 300.0) -> None:
    """Cancel ``sent`` and wait (up to ``timeout`` s) until no task of this run executes on any
    worker and the scheduler holds none.  ``client.cancel`` only sends a message: with every
    worker gone, ``client.run`` answers at once while the scheduler may not have dropped the
    run's tasks yet."""
    import time

    with contextlib.suppress(Exception):
        client.cancel(list(sent), force=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            running = client.run(_running_keys, prefix)
            held = client.run_on_scheduler(_scheduler_keys, prefix)
        except Exception:  # the cluster is gone: nothing runs
            return
        if not any(running.values()) and not held:
            return
        time.sleep(0.1)


def _maybe_check_ids(parts: Sequence[Partition], memory_limit: str | None = None,
                    temp_directory: str | None = None, storage_options: Mapping[str, Any] | None = None) -> None:
    try:
        import duckdb  # noqa: F401
    except ImportError:  # pragma: no cover - the check needs the extra
        return
    _check_unique_ids(parts, memory_limit=memory_limit, temp_directory=temp_directory,
                      storage_options=storage_options)


def _tree_reduce(client: Any, futures: list[Any], split_every: int = 2, *, prefix: str | None = None,
                 wait: bool = True) -> Any:
    """Combine summaries on the cluster, ``split_every`` at a time, as a balanced tree of a fixed
    shape (the same order of additions every run); only the root comes back: its result, or with
    ``wait=False`` its future.  Every combine is sent at once and runs when its inputs are done;
    only the root is referenced here, so Dask frees each intermediate result once it is used."""
    level = 0
    while len(futures) > 1:
        nxt = []
        for i in range(0, len(futures), split_every):
            group = futures[i:i + split_every]
            if len(group) == 1:
                nxt.append(group[0])
                continue
            extra = {} if prefix is None else {"key": f"{prefix}-combine-{level}-{i}"}
            nxt.append(client.submit(_combine_many, *group, pure=False, **extra))
        futures = nxt
        level += 1
    return futures[0].result() if wait else futures[0]


def _combine_many(*items: DatasetSummary) -> DatasetSummary:
    return combine_all(items)


def _with_hive_keys(runs: pd.DataFrame, hive: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """``key=value`` folder names as run columns where the records do not carry them;
    ``__HIVE_DEFAULT_PARTITION__`` is a missing value (the run keeps its missing key)."""
    for k, v in hive:
        if v == _HIVE_MISSING:
            if k not in runs.columns:
                runs = runs.assign(**{k: pd.Series([None] * len(runs), index=runs.index, dtype=object)})
        elif k not in runs.columns:
            runs = runs.assign(**{k: v})
        else:
            runs[k] = runs[k].where(runs[k].notna(), v)
    return runs


# =========================================================================== summaries of a scored dataset


def _summary_of_files(pair: tuple[str, str], by: Sequence[str],
                      storage_options: Mapping[str, Any] | None = None) -> DatasetSummary:
    s = _remote.read_table(pair[0], storage_options).to_pandas()
    r = _remote.read_table(pair[1], storage_options).to_pandas()
    if len(r) == 0:
        return _empty_summary(by)
    missing = [b for b in by if b not in r.columns]
    if missing:
        raise InputError(f"`by` names {missing}, not a run column", file=pair[1], field="by")
    return _summary_of(s, r, by)


def _sql_list(files: Sequence[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


#: Partitions aggregated by one SQL query: joins stay partition-local, so memory does not grow with the store.
_FILES_PER_QUERY = 8


def _summarize_duckdb(con: Any, pairs: Sequence[tuple[str, str]], by: Sequence[str], out: Path) -> DatasetSummary:
    """Every summary with SQL pushed into DuckDB (scans, joins and group-bys spill under the memory limit).

    A trace's rows never leave its partition, so the joins (scores with runs, judge tier
    with human tier) run on a few partitions at a time and their summaries are added:
    the hash tables are bounded by the partition size, not by the store.
    """
    if not pairs:
        return _empty_summary(by)
    return combine_all([_summarize_duckdb_files(con, pairs[i:i + _FILES_PER_QUERY], out, by)
                        for i in range(0, len(pairs), _FILES_PER_QUERY)])


def _summarize_duckdb_files(con: Any, pairs: Sequence[tuple[str, str]], out: Path, by: Sequence[str]
                            ) -> DatasetSummary:
    sf = _sql_list([s for s, _ in pairs])
    rf = _sql_list([r for _, r in pairs])
    scores = f"read_parquet({sf}, union_by_name = true, hive_partitioning = false)"
    runs = f"read_parquet({rf}, union_by_name = true, hive_partitioning = false)"
    valued = "(s.value IS NOT NULL AND NOT isnan(s.value))"
    cause_cols = ", ".join(f"count(*) FILTER (WHERE s.cause = '{c}') AS n_{c}" for c in CAUSES)
    by_sel = "".join(f", r.\"{b}\" AS \"{b}\"" for b in by)
    join = f" JOIN {runs} r ON r.trace_id = s.trace_id" if by else ""
    where = ""  # a run whose `by` key is NULL is a group of its own (GROUP BY keeps NULL), as in memory
    q = (f"SELECT s.measure AS measure, s.tier AS tier{by_sel}, count(*) AS n, "
         f"count(*) FILTER (WHERE {valued}) AS n_valued, "
         f"coalesce(sum(s.value) FILTER (WHERE {valued}), 0.0) AS total, "
         f"coalesce(sum(s.value * s.value) FILTER (WHERE {valued}), 0.0) AS total_sq, {cause_cols} "
         f"FROM {scores} s{join}{where} GROUP BY ALL")
    try:
        part = con.execute(q).df()
    except Exception as e:  # a `by` column no run file has: DuckDB's binder names it
        if by and type(e).__name__ == "BinderException":
            raise InputError(f"`by` names a column the runs do not have ({e})", file=str(out / "runs"),
                             field="by") from None
        raise
    keys = ["measure", "tier", *by]
    s = ScoreSummary.from_partials(part[[*keys, *PARTIAL_COLUMNS]], keys)
    cal = {}
    for m, cats in CALIBRATION_CATEGORIES.items():
        g = con.execute(
            f"SELECT a.value AS va, a.cause AS ca, h.value AS vb, h.cause AS cb, count(*) AS n "
            f"FROM (SELECT trace_id, value, cause FROM {scores} WHERE tier = 'human' AND measure = '{m}') h "
            f"LEFT JOIN (SELECT trace_id, value, cause FROM {scores} WHERE tier = 'automatic' AND measure = '{m}') a "
            "ON a.trace_id = h.trace_id GROUP BY ALL").df()
        cal[m] = _confusion_from_grouped(g, cats)
    pc = con.execute(
        f"SELECT r.task AS task, count(*) FILTER (WHERE {valued}) AS n, "
        f"count(*) FILTER (WHERE {valued} AND s.value >= 1.0) AS c, "
        f"count(*) FILTER (WHERE NOT {valued}) AS a "
        f"FROM (SELECT trace_id, value FROM {scores} WHERE tier = 'automatic' AND measure = 'x_task') s "
        f"JOIN {runs} r ON r.trace_id = s.trace_id GROUP BY ALL").df()
    counts = {str(t): (int(n), int(c), int(a)) for t, n, c, a in pc.itertuples(index=False)}
    tasks = frozenset(str(t) for (t,) in con.execute(f"SELECT DISTINCT task FROM {runs}").fetchall())
    n_runs = int(con.execute(f"SELECT count(*) FROM {runs}").fetchone()[0])
    return DatasetSummary(s, cal, PassCounts(counts), tasks, n_runs)


def _confusion_from_grouped(g: pd.DataFrame, cats: tuple[Any, ...]) -> ConfusionTable:
    """A ConfusionTable from grouped rows ``va, ca, vb, cb, n`` (one row per distinct combination)."""
    q = len(cats)
    index = {float(c): i for i, c in enumerate(cats)}
    counts = np.zeros((q, q), np.int64)
    ex_a = dict.fromkeys(CAUSES, 0)
    ex_b = dict.fromkeys(CAUSES, 0)
    total = 0
    for va, ca, vb, cb, n in g[["va", "ca", "vb", "cb", "n"]].itertuples(index=False):
        n = int(n)
        total += n
        a_ok = va is not None and not pd.isna(va)
        b_ok = vb is not None and not pd.isna(vb)
        if not a_ok:
            ex_a[ca if isinstance(ca, str) else "missing_evidence"] += n
        if not b_ok:
            ex_b[cb if isinstance(cb, str) else "missing_evidence"] += n
        if a_ok and b_ok:
            if float(va) not in index or float(vb) not in index:
                raise InputError(f"value {va!r} or {vb!r} is not among the categories {list(cats)}",
                                 field="value")
            counts[index[float(va)], index[float(vb)]] += n
    return ConfusionTable(cats, counts, total, ex_a, ex_b)


def summarize_dataset(out: str | Path, *, by: str | Sequence[str] | None = None, engine: Any = "pandas",
                      memory_limit: str | None = None, threads: int | None = None,
                      temp_directory: str | Path | None = None, n_workers: int | None = None,
                      storage_options: Mapping[str, Any] | None = None) -> DatasetSummary:
    """Summarise a scored dataset (the ``out`` folder of :func:`score_dataset`) with any engine.

    ``engine="duckdb"`` runs the aggregation as SQL in DuckDB (a join of scores and
    runs when ``by`` is given), under ``memory_limit``; ``"dask"`` summarises each
    partition on the workers and combines by a tree reduction; ``"pandas"`` reads one
    partition at a time.  All three return equal summaries.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> from evaltk.data import make_demo
    >>> d = make_demo(n_traces=40, rng=0)
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame(d.traces).to_json(tmp / "t.jsonl", orient="records", lines=True)
    >>> _ = score_dataset(tmp / "t.jsonl", out=tmp / "out")
    >>> s = summarize_dataset(tmp / "out", by="agent")
    >>> s.n_runs, int(s.to_frame()["n"].sum()) == 39 * 8
    (39, True)
    """
    kind = engine_kind(engine)
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    so = dict(storage_options or {})
    o = _absolute(out)  # absolute on the driver: workers read these paths
    pairs = check_dataset(o, storage_options=so)  # complete, unchanged, and every scores partition checked
    if kind == "duckdb":
        with _duckdb(engine, memory_limit, threads, None if temp_directory is None else str(temp_directory)) as con:
            _remote.register(con, [str(o)], so)
            with _bounded(con, memory_limit, _SUMMARY_PHASE, None if temp_directory is None else str(temp_directory),
                          outcome="nothing was summarised"):
                return _summarize_duckdb(con, pairs, keys, o)  # type: ignore[arg-type]  # a local or remote root
    if not pairs:
        return _empty_summary(keys)
    if kind == "dask":
        with _dask_client(engine, memory_limit, n_workers) as client:
            futures = client.map(_summary_of_files, pairs, by=keys, storage_options=so, pure=False)
            return _tree_reduce(client, futures)
    return combine_all([_summary_of_files(p, keys, so) for p in pairs])


# =========================================================================== Dask DataFrame API


def _score_frames(traces: pd.DataFrame, answers: pd.DataFrame | None = None, labels: pd.DataFrame | None = None,
                  *, label_measures: Sequence[str] = ()) -> pd.DataFrame:
    from ..ingest import ingest_traces
    from ..scoring import score_traces

    if len(traces) == 0:
        return SCORE_META.iloc[0:0].copy()
    steps = traces["steps"].dropna() if "steps" in traces.columns else pd.Series(dtype=object)
    if len(steps) and isinstance(steps.iloc[0], str):
        raise InputError("the `steps` column holds strings, not lists of step objects: Dask turned the "
                         "nested column into text; build the DataFrame under "
                         "dask.config.set({'dataframe.convert-string': False})", field="steps")
    ing = ingest_traces(traces, answers if answers is not None and len(answers) else None,
                 labels if labels is not None and len(labels) else None)
    if len(ing.runs) == 0:
        return SCORE_META.iloc[0:0].copy()
    return _as_meta(score_traces(ing, population="partition", label_measures=label_measures).frame)


def score_partitions(traces: Any, answers: Any = None, labels: Any = None) -> Any:
    """Score a Dask DataFrame of trace records with ``map_partitions`` and the declared schema :data:`SCORE_META`.

    Parameters
    ----------
    traces : dask.dataframe.DataFrame
        One row per trace record (``trace_id, task, status, steps, ...``), partitioned
        by trace: every step of a trace is in its row.
    answers, labels : dask.dataframe.DataFrame, optional
        Long answer tables with the same number of partitions, *co-partitioned*:
        partition ``i`` holds the answers of the traces in partition ``i`` of ``traces``.

    Returns
    -------
    dask.dataframe.DataFrame
        The long score matrix (lazy), columns of :data:`SCORE_META`.

    Notes
    -----
    Build ``traces`` with ``dask.config.set({"dataframe.convert-string": False})``:
    by default Dask turns object columns (the nested ``steps``) into text.
    """
    dd = optional_module("dask.dataframe")
    args = [traces]
    for name, x in (("answers", answers), ("labels", labels)):
        if x is not None and x.npartitions != traces.npartitions:
            raise ValueError(f"`{name}` has {x.npartitions} partitions and `traces` {traces.npartitions}; "
                             "they must be co-partitioned (partition i holds the answers of partition i).")
    label_ms: tuple[str, ...] = ()
    if labels is not None:  # the label measures of the whole table: one small distributed unique()
        label_ms = _label_measures(labels["measure"].dropna().astype(str).unique().compute().tolist())
    if answers is not None:
        args.append(answers)
    if labels is not None:
        if answers is None:
            return dd.map_partitions(_score_labels_only, traces, labels, meta=SCORE_META, align_dataframes=False,
                                     enforce_metadata=False, label_measures=label_ms)
        args.append(labels)
    return dd.map_partitions(_score_frames, *args, meta=SCORE_META, align_dataframes=False, enforce_metadata=False,
                             label_measures=label_ms)


def _score_labels_only(traces: pd.DataFrame, labels: pd.DataFrame, *, label_measures: Sequence[str] = ()
                       ) -> pd.DataFrame:
    return _score_frames(traces, None, labels, label_measures=label_measures)


def _partials_chunk(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    return score_partials(frame, list(keys))


def _partials_agg(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    if len(frame) == 0:
        return frame
    return frame.groupby(list(keys), sort=True, observed=True, dropna=False)[list(PARTIAL_COLUMNS)].sum().reset_index()


def dask_score_summary(scores: Any, by: str | Sequence[str] = ("measure", "tier"), *, split_every: int = 8,
                       compute: bool = True) -> Any:
    """The :class:`~evaltk.stats.ScoreSummary` of a Dask score DataFrame, by a tree reduction.

    Each partition yields its partial table (:func:`evaltk.stats.score_partials`);
    partial tables are summed ``split_every`` at a time up a tree; the root becomes a
    ``ScoreSummary``.  ``compute=False`` returns the lazy partial table instead.
    """
    keys = [by] if isinstance(by, str) else list(by)
    meta = pd.DataFrame({**{k: pd.Series(dtype=object) for k in keys},
                         **{c: pd.Series(dtype=np.float64 if c.startswith("total") else np.int64)
                            for c in PARTIAL_COLUMNS}})
    red = scores.reduction(chunk=_partials_chunk, aggregate=_partials_agg, combine=_partials_agg,
                           chunk_kwargs={"keys": keys}, aggregate_kwargs={"keys": keys},
                           combine_kwargs={"keys": keys}, split_every=split_every, meta=meta)
    if not compute:
        return red
    return ScoreSummary.from_partials(red.compute(), keys)


# --------------------------------------------------------------------------- helpers for writing a store


def write_store(traces: Sequence[Mapping[str, Any]], answers: pd.DataFrame | None, folder: str | Path, *,
                partition_by: str, labels: pd.DataFrame | None = None, fmt: str = "parquet") -> Path:
    """Write trace records (and their answers and labels) as a co-partitioned, hive-partitioned store.

    ``folder/traces/<partition_by>=<value>/part-0.<fmt>`` and the same paths under
    ``answers/`` and ``labels/``; answers of traces absent from ``traces`` go to a
    partition of their own (``<partition_by>=__orphan__``, beside an empty Parquet trace file) so
    ingest records them in the ledger ("answer without run").
    A record without ``partition_by`` (absent or null) goes to
    ``<partition_by>=__HIVE_DEFAULT_PARTITION__`` (``_HIVE_MISSING``), which every
    engine reads back as a missing key.
    """
    if fmt not in ("parquet", "jsonl"):
        raise ValueError(f"`fmt` must be 'parquet' or 'jsonl'; got {fmt!r}.")
    root = Path(folder)
    recs = list(traces)
    key_of = {str(r["trace_id"]): _hive_value(r.get(partition_by)) for r in recs}
    by_part: dict[str, list[Mapping[str, Any]]] = {}
    for r in recs:
        by_part.setdefault(key_of[str(r["trace_id"])], []).append(r)
    for v, rs in by_part.items():
        p = root / "traces" / f"{partition_by}={v}" / f"part-0.{fmt}"
        if fmt == "jsonl":
            write_jsonl(p, rs, default=_json_default)
        else:
            write_parquet(_records_table(rs), p)  # every key
    orphan = f"{partition_by}=__orphan__"
    for name, table in (("answers", answers), ("labels", labels)):
        if table is None:
            continue
        part = table["trace_id"].astype(str).map(key_of).fillna("__orphan__")
        if (part == "__orphan__").any() and not (root / "traces" / orphan).exists():
            # an empty trace partition for them (Parquet: an empty JSONL file is unreadable input), so
            # ingest records each orphan answer in the ledger ("answer without run")
            write_parquet(_records_table(recs[:1]).slice(0, 0),
                          root / "traces" / orphan / "part-0.parquet")
        for v, sub in table.groupby(part, sort=True):
            p = root / name / f"{partition_by}={v}" / f"part-0.{'parquet' if fmt == 'parquet' else 'jsonl'}"
            if fmt == "parquet":
                write_parquet(sub, p)
            else:
                with atomic_path(p) as tmp:
                    sub.to_json(tmp, orient="records", lines=True)
    return root


def _hive_value(v: Any) -> str:
    """A record's partition value as a folder name: ``__HIVE_DEFAULT_PARTITION__`` when it is absent or null."""
    return _HIVE_MISSING if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v)


def _records_table(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Records as an Arrow table, a column per key (``Table.from_struct_array`` is not in pyarrow
    14, the floor pyproject declares); a batch per chunk (``pa.array`` chunks past 2 GiB of text)."""
    arr = pa.array([dict(r) for r in records])
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(c) for c in chunks])


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# =========================================================================== CLI
