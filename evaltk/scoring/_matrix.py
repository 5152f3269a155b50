"""The score matrix: every (trace, measure, tier) as a value or an abstention with its cause."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .._display import HtmlTable
from .._io import check_digest, file_digest, json_text, read_json, write_parquet, write_text_atomic
from ..errors import OutputRefused, SchemaViolation
from ..stats import score_summary
from ..values import (
    MeanSummary,
    check_value_cause,
    summarize,
)
from ._manifest import Manifest
from ._measures import (
    MEASURES,
    TIERS,
)

# --------------------------------------------------------------------------- the matrix


@dataclass(frozen=True)
class ScoreMatrix(HtmlTable):
    """Scores of every (trace, measure, tier), with the manifest and the ingest ledger.

    Attributes
    ----------
    frame : DataFrame
        Long table ``trace_id, measure, tier, value, cause, reason, scorer,
        scorer_version, n_raters``; ``value`` is missing exactly when ``cause`` is set.
    manifest : Manifest
    ledger : DataFrame
        Every input record, kept or dropped with a reason (from ingest).
    runs : DataFrame
        Observations about each kept run (never scores).
    diagnostics : DataFrame
        Derived diagnostics per run (tier ``diagnostic``): x_ctx step counts, review
        flags from heuristic detectors.  They route to review; they are never a score.
    participation : DataFrame
        Which raters answered which (trace, measure, tier).
    unconfirmed : DataFrame
        The consequential steps with no confirmation before them (``trace_id, index, action, target``).
    unscored : DataFrame
        Answers ingest kept that no scorer read, counted per ``tier, measure`` with the
        reason (judges' ``x_safe`` answers: x_safe is computed from the record; answers
        to a guide measure: the guide family is computed from the guide; per-step answers
        whose step is not in the run).  Nothing is dropped silently.
    """

    frame: pd.DataFrame
    manifest: Manifest
    ledger: pd.DataFrame = field(default_factory=pd.DataFrame)
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    diagnostics: pd.DataFrame = field(default_factory=pd.DataFrame)
    participation: pd.DataFrame = field(default_factory=pd.DataFrame)
    unconfirmed: pd.DataFrame = field(default_factory=pd.DataFrame)
    unscored: pd.DataFrame = field(default_factory=lambda: _unscored_frame([]))

    def __post_init__(self) -> None:
        check_value_cause(self.frame, where="score matrix")
        missing = self.missing_measures()
        if len(missing):
            r = missing.iloc[0]
            raise ValueError(
                f"score matrix: {len(missing)} measure(s) are not present on every trace, e.g. "
                f"{r['measure']} is missing on {r['n_traces_missing']} of {r['n_traces']} trace(s) "
                f"(first {r['first_trace']!r}); seed 002 requires every measure to be present, as a value "
                "or an explicit abstention (`not_implemented` where no scorer exists)")

    def missing_measures(self) -> pd.DataFrame:
        """Measures of :data:`MEASURES` absent from the ``automatic`` tier for some trace.

        Seed 002, "The vector is four, the record is not": a conforming implementation
        requires every measure to be present, including as an explicit abstention,
        "what stops a dimension disappearing from a report by being silently unscored".
        Returns ``measure, n_traces_missing, n_traces, first_trace`` (empty when complete).
        """
        f = self.frame
        auto = (f["tier"] == "automatic").to_numpy(bool)
        t_codes, t_uniq = _codes(f["trace_id"][auto])
        m_codes, m_uniq = _codes(f["measure"][auto])
        m_of = np.append(pd.Index(MEASURES).get_indexer(pd.Index(m_uniq).astype(str)), -1)
        m_idx = m_of[m_codes]  # a missing code (-1) reads the appended -1
        seen = np.zeros(len(t_uniq), bool)
        seen[t_codes[t_codes >= 0]] = True
        present = np.zeros((len(t_uniq), len(MEASURES)), bool)
        ok = (m_idx >= 0) & (t_codes >= 0)
        present[t_codes[ok], m_idx[ok]] = True
        rows = []
        for j, m in enumerate(MEASURES):
            miss = np.flatnonzero(seen & ~present[:, j])
            if miss.size:
                rows.append((m, int(miss.size), int(seen.sum()), str(t_uniq[miss[0]])))
        return pd.DataFrame(rows, columns=["measure", "n_traces_missing", "n_traces", "first_trace"])

    def __len__(self) -> int:
        return len(self.frame)

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        """In a notebook: the summary per measure, then the first rows of the matrix."""
        n = self.frame["trace_id"].nunique()
        return [(f"ScoreMatrix: {n:,} traces, population {self.manifest.population}: summary per measure",
                 self.summary()),
                ("scores (long table)", self.frame)]

    def scores(self, tier: str = "automatic") -> pd.DataFrame:
        """The long table for one tier (``automatic`` by default; ``human`` for anchors)."""
        if tier not in TIERS:
            raise ValueError(f"`tier` must be one of {', '.join(TIERS)}; got {tier!r}.")
        return self.frame[self.frame["tier"] == tier].reset_index(drop=True)

    def wide(self, tier: str = "automatic") -> pd.DataFrame:
        """One row per trace: a value column and a ``<measure>_cause`` column per measure."""
        f = self.scores(tier)
        v = f.pivot(index="trace_id", columns="measure", values="value")
        c = f.pivot(index="trace_id", columns="measure", values="cause").add_suffix("_cause")
        out = v.join(c)
        out.columns.name = None
        order = [m for m in MEASURES if m in v.columns]
        return out[[x for m in order for x in (m, f"{m}_cause")]].reset_index()

    def summary(self, by: str | Sequence[str] | None = None, *, tier: str = "automatic") -> pd.DataFrame:
        """Mean per measure (and per ``by`` columns of ``runs``), with n, excluded per cause, coverage.

        Runs whose ``by`` key is missing are a group of their own, with the key missing
        (:data:`evaltk.stats.MISSING_KEY`), sorted last: the per-group ``n`` add up to the
        overall ``n``.  The DuckDB and Dask summaries of :mod:`evaltk.scale` agree.
        """
        f = self.scores(tier)
        keys = ["measure"]
        if by is not None:
            extra = [by] if isinstance(by, str) else list(by)
            f = f.merge(self.runs[["trace_id", *extra]], on="trace_id", how="left")
            keys += extra
        f = f.assign(measure=f["measure"].astype(str))
        return score_summary(f, keys).to_frame()  # the mergeable summary every engine uses (evaltk.scale)

    def mean_summary(self, measure: str, *, tier: str = "automatic") -> MeanSummary:
        """One measure's :class:`~evaltk.values.MeanSummary`, through :func:`evaltk.values.summarize`."""
        f = self.scores(tier)
        f = f[f["measure"] == measure]
        return summarize(f["value"], f["cause"])

    def with_manifest(self, manifest: Manifest) -> ScoreMatrix:
        return replace(self, manifest=manifest)

    # ---- persistence: Parquet tables + manifest JSON, lossless, checked on load (docs/outputs.md)
    def save(self, directory: str | Path) -> Path:
        """Write the tables (Parquet) and ``manifest.json`` to ``directory``.

        Each file is written atomically; the manifest, which records the SHA-256 of
        every table under ``tables``, is removed first and written last, so a folder
        whose writing failed half-way holds no manifest and does not load.
        """
        d = Path(directory)
        if d.exists() and not d.is_dir():
            raise OutputRefused(f"output {d} is an existing file; a folder is expected here", output=str(d))
        d.mkdir(parents=True, exist_ok=True)
        (d / MANIFEST_FILE).unlink(missing_ok=True)
        digests = {}
        for name in SCORE_TABLES:
            t = self.frame if name == "scores" else getattr(self, name)
            if name == "runs" and "guide" in t.columns:
                t = t.assign(guide=t["guide"].map(lambda g: json.dumps(g, sort_keys=True) if isinstance(g, Mapping) else None))
            path = d / f"{name}.parquet"
            write_parquet(t if name == "scores" else _plain_objects(t), path)
            digests[path.name] = "sha256:" + file_digest(path)
        doc = {**self.manifest.to_dict(), "tables": digests}
        write_text_atomic(d / MANIFEST_FILE, json_text(doc, sort_keys=True))
        return d

    @classmethod
    def load(cls, directory: str | Path) -> ScoreMatrix:
        """Read a folder :meth:`save` wrote, refusing one that fails an integrity check.

        Raises :class:`~evaltk.errors.SchemaViolation` naming the file and the check when
        a table's SHA-256 differs from the one the manifest records (``digest``), a
        table is missing from or unknown to the manifest, a (trace, measure, tier) key
        repeats (``duplicate``), a value leaves [0, 1] (``range``), or a row's scorer or
        scorer version disagrees with the manifest (``scorer_version``); see
        :func:`check_score_table`.
        """
        d = Path(directory)
        from ..errors import UnreadableInput

        if not (d / "scores.parquet").is_file() or not (d / MANIFEST_FILE).is_file():
            raise UnreadableInput("not a saved score matrix (scores.parquet and manifest.json expected)",
                                  file=str(d))
        raw = read_json(d / MANIFEST_FILE)  # strict: a repeated key is refused
        _check_tables(d, raw)
        frame = pd.read_parquet(d / "scores.parquet")
        manifest = Manifest.from_dict(raw, source=str(d / MANIFEST_FILE))
        check_score_table(frame, manifest, file=str(d / "scores.parquet"))
        parts = {}
        for name in SCORE_TABLES[1:]:
            p = d / f"{name}.parquet"
            parts[name] = pd.read_parquet(p) if p.is_file() else (
                _unscored_frame([]) if name == "unscored" else pd.DataFrame())
        runs = parts["runs"]
        if "guide" in runs.columns:
            runs["guide"] = runs["guide"].map(lambda s: json.loads(s) if isinstance(s, str) else None).astype(object)
        from ..errors import SchemaViolation

        try:
            return cls(frame=frame, manifest=manifest, **parts)
        except ValueError as e:
            raise SchemaViolation(str(e), file=str(d / "scores.parquet"), field="measure") from None


def _codes(s: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes of a column and the values they stand for (a categorical's own codes)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy(np.int64), s.cat.categories
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    return codes.astype(np.int64), pd.Index(uniq)

#: The manifest of a saved score matrix (and, under ``tables``, the digest of each table).
MANIFEST_FILE = "manifest.json"
#: The tables of a saved score matrix, ``<name>.parquet`` each.
SCORE_TABLES = ("scores", "ledger", "runs", "diagnostics", "participation", "unconfirmed", "unscored")


def _check_tables(d: Path, raw: object) -> None:
    """Every table the manifest lists exists with its recorded SHA-256, and no table is unlisted."""
    mpath = str(d / MANIFEST_FILE)
    tables = raw.get("tables") if isinstance(raw, Mapping) else None
    if not isinstance(tables, Mapping) or "scores.parquet" not in tables:
        raise SchemaViolation("integrity check `digest`: the manifest records no table digests (`tables`); "
                              "it was edited or not written by `ScoreMatrix.save` (re-run `evaltk score`)",
                              file=mpath, field="tables")
    known = {f"{n}.parquet" for n in SCORE_TABLES}
    for name, digest in tables.items():
        if name not in known or not isinstance(digest, str):
            raise SchemaViolation(f"integrity check `digest`: {name!r} is not a table of a score matrix",
                                  file=mpath, field=f"tables.{name}")
        check_digest(d / name, digest, recorded_in=mpath)
    for name in sorted(known - set(tables)):
        if (d / name).exists():
            raise SchemaViolation("integrity check `digest`: the table is not recorded in the manifest",
                                  file=str(d / name))


def check_score_table(frame: pd.DataFrame, manifest: Manifest, *, file: str | None = None) -> None:
    """Refuse a scores table that no scorer of evaltk wrote, naming the file, the record and the check.

    Checks, in order: ``duplicate`` (a ``trace_id, measure, tier`` key on two rows),
    ``range`` (a value outside [0, 1]), ``scorer`` and ``scorer_version`` (a row whose
    scorer or version differs from the manifest's for its measure).  Raises
    :class:`~evaltk.errors.SchemaViolation`.  :meth:`ScoreMatrix.load` and
    :func:`evaltk.scale.summarize_dataset` (per partition) call it.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame({"trace_id": ["a", "a"], "measure": ["x_task"] * 2, "tier": ["automatic"] * 2,
    ...                   "value": [1.0, 1.0]})
    >>> check_score_table(f, Manifest.default("p"), file="scores.parquet")
    Traceback (most recent call last):
    ...
    evaltk.errors.SchemaViolation: scores.parquet: record a: field `trace_id`: integrity check `duplicate`: 2 rows share a (trace_id, measure, tier) key, first (a, x_task, automatic)
    """
    key = ["trace_id", "measure", "tier"]
    missing = [c for c in (*key, "value") if c not in frame.columns]
    if missing:
        raise SchemaViolation(f"not a scores table: column(s) {missing} missing", file=file, field=missing[0])
    dup = frame.duplicated(key, keep=False).to_numpy(bool)
    if dup.any():
        first = frame.loc[dup, key].iloc[0]
        raise SchemaViolation(f"integrity check `duplicate`: {int(dup.sum())} rows share a (trace_id, measure, "
                              f"tier) key, first ({first['trace_id']}, {first['measure']}, {first['tier']})",
                              file=file, record=str(first["trace_id"]), field="trace_id")
    v = pd.to_numeric(frame["value"], errors="coerce").to_numpy(float)
    out = ~np.isnan(v) & ((v < 0.0) | (v > 1.0))
    if out.any():
        i = int(np.flatnonzero(out)[0])
        row = frame.iloc[i]
        raise SchemaViolation(f"integrity check `range`: value {v[i]!r} of {row['measure']} ({row['tier']}) is "
                              f"outside [0, 1] ({int(out.sum())} such rows)", file=file,
                              record=str(row["trace_id"]), field="value")
    measure = frame["measure"].astype(str)
    for col in ("scorer", "scorer_version"):
        if col not in frame.columns:
            continue
        have = frame[col].astype(object)
        for m, st in manifest.measures.items():
            rows = (measure == m).to_numpy(bool)
            want = str(getattr(st, col))
            bad = rows & (have.map(lambda x: str(x) if x is not None and x == x else None) != want).to_numpy(bool)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise SchemaViolation(f"integrity check `{col}`: {m} rows say {col} {have.iloc[i]!r}, the manifest "
                                      f"says {want!r} ({int(bad.sum())} such rows)", file=file,
                                      record=str(frame["trace_id"].iloc[i]), field=col)


def _plain_objects(t: pd.DataFrame) -> pd.DataFrame:
    """Object columns that mix types as text (Parquet needs one type per column)."""
    t = t.copy()
    for c in t.columns:
        if t[c].dtype == object:
            non_null = t[c].dropna()
            if len(non_null) and not all(isinstance(x, str) for x in non_null):
                t[c] = t[c].map(lambda x: None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x))
    return t


def _unscored_frame(rows: Sequence[tuple[str, str, int, str]]) -> pd.DataFrame:
    return pd.DataFrame({"tier": pd.Series([r[0] for r in rows], dtype=str),
                         "measure": pd.Series([r[1] for r in rows], dtype=str),
                         "n_answers": pd.Series([r[2] for r in rows], dtype=np.int64),
                         "reason": pd.Series([r[3] for r in rows], dtype=str)})
