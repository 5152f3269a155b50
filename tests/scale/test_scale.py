"""Engines: pandas, DuckDB and Dask give the in-memory numbers (issue 9, sections 2 and 3).

A real DuckDB database in ``tmp_path`` and a real ``dask.distributed.LocalCluster``
(2 workers, one per test session) score a partitioned store built from
``make_demo``; every aggregate (means with abstentions per cause and coverage, by
measure, tier and run group; judge-vs-human confusion tables; pass counts; the
population digest) and a bootstrap interval (same seed) must equal what
``score_traces`` gives on the whole store in memory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb", reason="the DuckDB engine needs the `scale` extra (pip install evaltk[scale])")
distributed = pytest.importorskip("distributed",
                                  reason="the Dask engine needs the `scale` extra (pip install evaltk[scale])")
dd = pytest.importorskip("dask.dataframe", reason="the Dask engine needs the `scale` extra")

import dask  # noqa: E402

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.errors import InputError, OutputRefused  # noqa: E402
from evaltk.scale import (  # noqa: E402
    SCORE_META,
    dask_score_summary,
    discover_partitions,
    score_dataset,
    score_partitions,
    summarize_dataset,
    write_store,
)
from evaltk.scoring import score_traces  # noqa: E402
from evaltk.stats import score_summary  # noqa: E402
from evaltk.values import CAUSES  # noqa: E402

pytestmark = pytest.mark.slow  # every test starts DuckDB or a Dask cluster

N_TRACES = 240


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=N_TRACES, rng=11)


@pytest.fixture(scope="module")
def whole(demo):
    return score_traces(demo.traces, demo.answers, demo.labels)


@pytest.fixture(scope="module")
def store(demo, tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    write_store(demo.traces, demo.answers, root, partition_by="agent", labels=demo.labels)
    return root


def _week(i: int) -> str:
    return f"2026-W{40 + i % 3:02d}"


@pytest.fixture(scope="module")
def week_store(demo, tmp_path_factory):
    """JSONL traces hive-partitioned by week (a key the records do not carry); answers and labels
    each one shared file, selected per partition by trace id."""
    root = tmp_path_factory.mktemp("weekstore")
    for i, r in enumerate(demo.traces):
        p = root / "traces" / f"week={_week(i)}" / "part-0.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(r) + "\n")
    demo.answers.to_parquet(root / "answers.parquet", index=False)
    demo.labels.to_csv(root / "labels.csv", index=False)
    return root


# --------------------------------------------------------------------------- comparison helpers


def assert_frames_equal(got: pd.DataFrame, exp: pd.DataFrame) -> None:
    assert list(got.columns) == list(exp.columns)
    assert len(got) == len(exp)
    got, exp = got.reset_index(drop=True), exp.reset_index(drop=True)
    for c in got.columns:
        if c in ("mean", "coverage"):
            np.testing.assert_allclose(got[c].to_numpy(float), exp[c].to_numpy(float), rtol=1e-12, atol=1e-12,
                                       err_msg=c)
        elif c.startswith("n"):
            assert got[c].astype(np.int64).tolist() == exp[c].astype(np.int64).tolist(), c
        else:
            norm = [[None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in f[c]]
                    for f in (got, exp)]
            assert norm[0] == norm[1], c


def assert_same_summary(s, whole, by=None, tiers=("automatic", "human")):
    for tier in tiers:
        assert_frames_equal(s.to_frame(tier=tier), whole.summary(by=by, tier=tier))


def assert_same_calibration(a, b):
    assert set(a.calibration) == set(b.calibration)
    for m in a.calibration:
        x, y = a.calibration[m], b.calibration[m]
        assert x.categories == y.categories
        assert np.array_equal(x.counts, y.counts), m
        assert (x.n_units, x.excluded_a, x.excluded_b) == (y.n_units, y.excluded_a, y.excluded_b), m


def in_memory_calibration(whole):
    from evaltk.scale import CALIBRATION_CATEGORIES
    from evaltk.stats import calibration_table

    return {m: calibration_table(whole.frame, m, categories=c) for m, c in CALIBRATION_CATEGORIES.items()}


# --------------------------------------------------------------------------- engines agree


@pytest.fixture(scope="module")
def results(store, client, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    con = duckdb.connect(str(out / "evaltk.duckdb"))
    res = {
        "pandas": score_dataset(store / "traces", store / "answers", store / "labels", out=out / "pandas"),
        "duckdb": score_dataset(store / "traces", store / "answers", store / "labels", out=out / "duckdb",
                                engine=con, memory_limit="2GiB", temp_directory=out / "the run's spill"),
        "dask": score_dataset(store / "traces", store / "answers", store / "labels", out=out / "dask",
                              engine=client),
    }
    yield res, con
    con.close()


def test_partitions_are_discovered_co_partitioned(store):
    parts, shared = discover_partitions(store / "traces", store / "answers", store / "labels")
    # three agents, and the answers whose trace is lost (write_store keeps them: agent=__orphan__)
    assert len(parts) == 4 and shared == {"answers": None, "labels": None}
    assert all(p.answers and p.hive[0][0] == "agent" for p in parts)
    assert [p.hive[0][1] for p in parts if not p.labels] == ["__orphan__"]


def test_every_engine_gives_the_in_memory_summary(results, whole):
    res, _ = results
    for name, r in res.items():
        assert r.engine == name and r.n_partitions == 4
        s = r.summary
        assert s.n_runs == len(whole.runs)
        assert s.population == whole.manifest.population
        assert_same_summary(s, whole)
        cal = in_memory_calibration(whole)
        for m, t in cal.items():
            assert np.array_equal(s.calibration[m].counts, t.counts), (name, m)
            assert (s.calibration[m].excluded_a, s.calibration[m].excluded_b) == (t.excluded_a, t.excluded_b)
        manifest = json.loads((r.out / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["population"] == whole.manifest.population


def test_written_score_matrix_equals_in_memory_rows(results, whole):
    res, _ = results
    exp = whole.frame.astype({c: object for c in ("trace_id", "measure", "tier", "cause", "reason")})
    exp = exp.sort_values(["trace_id", "measure", "tier"]).reset_index(drop=True)
    for name, r in res.items():
        got = pd.concat([pd.read_parquet(p) for p in sorted((r.out / "scores").rglob("*.parquet"))])
        got = got.sort_values(["trace_id", "measure", "tier"]).reset_index(drop=True)
        assert list(got.columns) == list(SCORE_META.columns)
        assert got[["trace_id", "measure", "tier"]].astype(str).equals(exp[["trace_id", "measure", "tier"]].astype(str))
        np.testing.assert_array_equal(got["value"].to_numpy(float), exp["value"].to_numpy(float), err_msg=name)
        assert ([None if pd.isna(c) else str(c) for c in got["cause"]]
                == [None if pd.isna(c) else str(c) for c in exp["cause"]]), name
        assert got["reason"].fillna("").tolist() == exp["reason"].astype(object).fillna("").astype(str).tolist()
        runs = pd.concat([pd.read_parquet(p) for p in sorted((r.out / "runs").rglob("*.parquet"))])
        assert sorted(runs["trace_id"]) == sorted(whole.runs["trace_id"])


@pytest.mark.parametrize("by", ["agent", "domain", ["agent", "domain"]])
def test_summaries_by_group_agree_across_engines(results, whole, client, by):
    res, con = results
    out = res["pandas"].out
    got = {"pandas": summarize_dataset(out, by=by),
           "duckdb": summarize_dataset(out, by=by, engine=con),
           "dask": summarize_dataset(out, by=by, engine=client)}
    for name, s in got.items():
        assert_same_summary(s, whole, by=by, tiers=("automatic",))
        assert_same_calibration(s, got["pandas"])
        assert dict(s.pass_counts.counts) == dict(got["pandas"].pass_counts.counts), name
        assert s.tasks == got["pandas"].tasks and s.n_runs == len(whole.runs)


def test_pass_counts_match_in_memory(results, whole):
    res, _ = results
    x = whole.scores().merge(whole.runs[["trace_id", "task"]], on="trace_id")
    x = x[x["measure"] == "x_task"]
    from evaltk.stats import pass_counts

    exp = pass_counts(x["task"], x["value"])
    for r in res.values():
        assert dict(r.summary.pass_counts.counts) == dict(exp.counts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert r.summary.pass_counts.pass_at_k(2) == pytest.approx(exp.pass_at_k(2), abs=1e-12)
            assert r.summary.pass_counts.pass_hat_k(2) == pytest.approx(exp.pass_hat_k(2), abs=1e-12)


def test_bootstrap_interval_is_identical_across_engines(results, whole):
    """Replicates are drawn from the combined count tables: same seed, same interval, in every engine,
    and the same as the row bootstrap of evaltk.stats._agreement on the in-memory pairs."""
    from evaltk.stats import cohen_kappa

    res, _ = results
    frames = {n: r.summary.calibration_frame(rng=2026, n_resamples=500) for n, r in res.items()}
    for f in frames.values():
        pd.testing.assert_frame_equal(f, frames["pandas"])
    w = whole.wide("automatic").merge(whole.wide("human"), on="trace_id", suffixes=("_j", "_h"))
    both = w["x_task_j"].notna() & w["x_task_h"].notna()
    ref = cohen_kappa(w.loc[both, "x_task_j"].to_numpy(float), w.loc[both, "x_task_h"].to_numpy(float),
                      categories=[0.0, 1.0], method="percentile", n_resamples=500, rng=7)
    t = res["dask"].summary.calibration["x_task"].bootstrap("cohen_kappa", n_resamples=500, rng=7)
    assert t.confidence_interval == ref.confidence_interval
    assert t.statistic == pytest.approx(ref.statistic, abs=1e-12)


def test_duckdb_settings_are_set_on_the_connection(results):
    _, con = results
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    # the whole run's bound (this process and its workers), so above this process's own size: the
    # bounded phases (id check, summary) gave DuckDB a share of it and set it back
    assert limit.replace(" ", "").upper() in ("2.0GIB", "2GIB", "2048.0MIB", "2048MIB")
    # a folder name with a quote in it is a SQL string literal, not a syntax error
    spill = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
    assert spill.endswith("the run's spill")


def test_jsonl_week_store_with_shared_answers(week_store, demo, whole, client, tmp_path):
    parts, shared = discover_partitions(week_store / "traces", week_store / "answers.parquet",
                                        week_store / "labels.csv")
    assert len(parts) == 3 and shared["answers"] and shared["labels"]
    # the in-memory grouping by week: map each kept run to its partition
    week_of = {r["trace_id"]: _week(i) for i, r in enumerate(demo.traces)}
    exp = dataclasses.replace(whole, runs=whole.runs.assign(week=whole.runs["trace_id"].map(week_of)))
    for engine in ("duckdb", client):
        r = score_dataset(week_store / "traces", week_store / "answers.parquet", week_store / "labels.csv",
                          out=tmp_path / str(type(engine).__name__), engine=engine, by="week")
        assert_same_summary(r.summary, exp, by="week", tiers=("automatic",))
        assert_same_calibration(r.summary, type(r.summary)(r.summary.scores, in_memory_calibration(whole)))


def test_dask_dataframe_map_partitions(demo, whole, client):
    tr = pd.DataFrame(demo.traces)
    part = np.arange(len(tr)) % 3
    key = dict(zip(tr["trace_id"], part, strict=True))
    with dask.config.set({"dataframe.convert-string": False}):
        tdd = dd.from_delayed([dask.delayed(tr[part == i]) for i in range(3)], meta=tr.iloc[0:0])
        a = demo.answers
        add = dd.from_delayed([dask.delayed(a[a["trace_id"].map(key) == i]) for i in range(3)], meta=a.iloc[0:0])
        lb = demo.labels
        ldd = dd.from_delayed([dask.delayed(lb[lb["trace_id"].map(key) == i]) for i in range(3)],
                              meta=lb.iloc[0:0])
        scores = score_partitions(tdd, add, ldd)
        assert list(scores.columns) == list(SCORE_META.columns)
        got = dask_score_summary(scores, ["measure", "tier"], split_every=2)
    exp = score_summary(whole.frame, ["measure", "tier"])
    assert set(got.groups) == set(exp.groups)
    for k, s in exp.groups.items():
        g = got.groups[k]
        assert (g.n, g.n_valued, g.excluded) == (s.n, s.n_valued, s.excluded)
        assert g.total == pytest.approx(s.total, abs=1e-12) and g.total_sq == pytest.approx(s.total_sq, abs=1e-12)
    with pytest.raises(ValueError, match="co-partitioned"):
        score_partitions(tdd, add.repartition(npartitions=1))


def test_trace_in_two_partitions_is_refused(demo, tmp_path):
    for k in ("a", "b"):
        p = tmp_path / "t" / f"k={k}" / "part-0.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("\n".join(json.dumps(r) for r in demo.traces[:5]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="two partitions"):
        score_dataset(tmp_path / "t", out=tmp_path / "o", engine="duckdb")


def test_bad_engine_and_options_are_refused(store, tmp_path, results):
    with pytest.raises(ValueError, match="`engine`"):
        score_dataset(store / "traces", out=tmp_path / "o", engine="spark")
    with pytest.raises(TypeError, match="`engine`"):
        score_dataset(store / "traces", out=tmp_path / "o", engine=3)
    with pytest.raises(ValueError, match="`memory_limit`"):
        score_dataset(store / "traces", out=tmp_path / "o", engine="duckdb", memory_limit="lots")
    res, _ = results
    with pytest.raises(OutputRefused, match="already holds a complete scored dataset.*--resume.*--overwrite"):
        score_dataset(store / "traces", out=res["pandas"].out)
    assert set(CAUSES) <= {c[2:] for c in res["pandas"].summary.to_frame().columns if c.startswith("n_")}


def test_written_dataset_is_hive_partitioned(results):
    res, _ = results
    for sub in ("scores", "runs", "ledger"):
        dirs = sorted(p.parent.name for p in (res["duckdb"].out / sub).rglob("*.parquet"))
        agents = ["agent=agent-v1", "agent=agent-v2", "agent=agent-v3"]
        assert dirs == (["agent=__orphan__", *agents] if sub == "ledger" else agents), sub
    rel = duckdb.connect().execute(
        f"SELECT agent, count(*) FROM read_parquet('{Path(res['duckdb'].out) / 'runs'}/**/*.parquet', "
        "hive_partitioning = false) GROUP BY ALL ORDER BY 1").fetchall()
    assert sum(n for _, n in rel) == res["pandas"].summary.n_runs and all(n > 0 for _, n in rel)


def test_partition_without_labels_keeps_the_human_tier(demo, whole, tmp_path):
    """Labels are sparse: a partition holding none still gets the human tier (abstaining), as in memory."""
    labelled = set(demo.labels["trace_id"])
    bare = [r for r in demo.traces if r["trace_id"] not in labelled][:40]
    rest = [r for r in demo.traces if r not in bare]
    for name, recs in (("p=bare", bare), ("p=rest", rest)):
        p = tmp_path / "t" / name / "part-0.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    r = score_dataset(tmp_path / "t", out=tmp_path / "o0")
    assert "human" not in {k[1] for k in r.summary.scores.groups}  # no labels at all: no human tier
    demo.answers.to_parquet(tmp_path / "answers.parquet", index=False)
    demo.labels.to_parquet(tmp_path / "labels.parquet", index=False)
    r = score_dataset(tmp_path / "t", tmp_path / "answers.parquet", tmp_path / "labels.parquet", out=tmp_path / "o1")
    assert_same_summary(r.summary, whole)
    scores = pd.read_parquet(tmp_path / "o1" / "scores" / "p=bare" / "part-0.parquet")
    assert set(scores["tier"]) == {"automatic", "human"}
    assert _no_marker(tmp_path / "o1")


def _no_marker(out: Path) -> bool:
    """The tier marker never reaches a written table."""
    for sub in ("ledger", "scores", "runs"):
        t = pd.concat([pd.read_parquet(p) for p in (out / sub).rglob("*.parquet")])
        if t.astype(str).apply(lambda c: c.str.contains("tier-marker")).any().any():
            return False
    return True


def test_unknown_by_column_and_empty_partition(demo, tmp_path, results):
    res, con = results
    for engine in ("pandas", con):
        with pytest.raises(InputError, match="`by`"):
            summarize_dataset(res["pandas"].out, by="colour", engine=engine)
    p = tmp_path / "t" / "k=a" / "part-0.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({**demo.traces[0], "status": "in_progress"}) + "\n", encoding="utf-8")
    q = tmp_path / "t" / "k=b" / "part-0.jsonl"
    q.parent.mkdir(parents=True)
    q.write_text(json.dumps(demo.traces[1]) + "\n", encoding="utf-8")
    for engine in ("pandas", "duckdb"):
        r = score_dataset(tmp_path / "t", out=tmp_path / f"o-{engine}", engine=engine)
        assert r.summary.n_runs == 1 and r.n_partitions == 2
        assert summarize_dataset(tmp_path / f"o-{engine}", engine="duckdb").n_runs == 1
        assert (tmp_path / f"o-{engine}" / "ledger" / "k=a" / "part-0.parquet").is_file()


def test_cli_score_and_summarize(store, whole, tmp_path, capsys):
    from evaltk.cli._main import main

    out = tmp_path / "cli-out"
    code = main(["scale", "score", str(store / "traces"), "--answers", str(store / "answers"), "--labels",
                 str(store / "labels"), "--out", str(out), "--engine", "duckdb", "--memory-limit", "2GiB",
                 "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_runs"] == len(whole.runs) and doc["partitions"] == 4 and doc["engine"] == "duckdb"
    assert doc["population"] == whole.manifest.population
    exp = whole.summary()
    assert [r["n_valued"] for r in doc["measures"]] == exp["n_valued"].tolist()
    assert {r["measure"] for r in doc["calibration"]} == {"x_task", "x_eff"}
    assert main(["scale", "summarize", str(out), "--by", "agent", "--engine", "pandas"]) == 0
    text = capsys.readouterr().out
    assert f"{len(whole.runs)} runs" in text and "agent-v1" in text
    assert main(["scale", "score", str(store / "traces"), "--out", str(out)]) == 64  # out already scored
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err and "Traceback" not in err
    assert main(["scale", "summarize", str(tmp_path / "nowhere")]) == 66
    assert main(["scale", "score", str(store / "traces")]) == 64  # --out is required
    capsys.readouterr()


def test_duckdb_summaries_are_partition_local(results, whole, monkeypatch):
    """One SQL query per partition (joins bounded by the partition), summaries added: same numbers."""
    import evaltk.scale._scale as scale

    res, con = results
    monkeypatch.setattr(scale, "_FILES_PER_QUERY", 1)
    s = summarize_dataset(res["pandas"].out, by="agent", engine=con)
    assert_same_summary(s, whole, by="agent", tiers=("automatic",))
    assert_same_calibration(s, res["pandas"].summary)
    assert dict(s.pass_counts.counts) == dict(res["pandas"].summary.pass_counts.counts)


def test_duckdb_run_adds_the_workers_summaries_as_the_sql_summary_of_its_files(results):
    """The DuckDB engine adds the summaries its workers return (a fixed tree, no second pass over
    the written files); summarising those files in SQL gives the same counts and means."""
    res, con = results
    tree, sql = res["duckdb"].summary, summarize_dataset(res["duckdb"].out, engine=con)
    assert tree.n_runs == sql.n_runs and tree.tasks == sql.tasks
    assert dict(tree.pass_counts.counts) == dict(sql.pass_counts.counts)
    assert_same_calibration(tree, sql)
    a, b = tree.to_frame(), sql.to_frame()
    pd.testing.assert_frame_equal(a.drop(columns=["mean"]), b.drop(columns=["mean"]))
    np.testing.assert_allclose(a["mean"].to_numpy(float), b["mean"].to_numpy(float), rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- runs with no group key


@pytest.fixture(scope="module")
def agentless(demo, tmp_path_factory):
    """The demo with every fourth run's agent missing (absent or null), stored by domain."""
    recs = []
    for i, r in enumerate(demo.traces):
        r = dict(r)
        if i % 4 == 0:
            r.pop("agent")
        elif i % 4 == 1 and i % 8 == 1:
            r["agent"] = None
        recs.append(r)
    root = tmp_path_factory.mktemp("agentless")
    write_store(recs, demo.answers, root, partition_by="domain", labels=demo.labels)
    return recs, root


def _summaries_by_engine(root, out, client, *, by):
    """The store at ``root`` scored into ``out``, then summarised by each engine."""
    out = score_dataset(root / "traces", root / "answers", root / "labels", out=out).out
    con = duckdb.connect()
    try:
        return {"pandas": summarize_dataset(out, by=by), "duckdb": summarize_dataset(out, by=by, engine=con),
                "dask": summarize_dataset(out, by=by, engine=client)}
    finally:
        con.close()


def test_runs_with_a_missing_group_key_are_their_own_group_in_every_engine(agentless, demo, client, tmp_path):
    """No engine drops a run because its `by` key is missing (issue #13): one NA group, same numbers."""
    recs, root = agentless
    whole = score_traces(recs, demo.answers, demo.labels)
    n_missing = int(whole.runs["agent"].isna().sum())  # kept runs with no agent
    assert n_missing >= 40
    mem = whole.summary(by="agent")
    overall = whole.summary().set_index("measure")["n"]
    assert (mem.groupby("measure")["n"].sum() == overall).all()  # the denominator is kept
    na = mem[mem["agent"].isna()]
    assert len(na) == mem["measure"].nunique() and (na["n"] == n_missing).all()
    assert mem.groupby("measure").tail(1)["agent"].isna().all()  # the missing group sorts last
    got = _summaries_by_engine(root, tmp_path / "o", client, by="agent")
    for name, s in got.items():
        assert s.n_runs == len(whole.runs), name
        assert_same_summary(s, whole, by="agent", tiers=("automatic",))
        assert (None,) in {k[2:] for k in s.scores.groups}, name


def test_a_store_partitioned_by_a_missing_key_keeps_it_missing_in_every_engine(agentless, demo, client,
                                                                              tmp_path):
    """write_store by a key some runs lack: they go to Hive's default partition, which every engine
    reads back as the missing key (not as a value "__none__" or "None"; issue #13)."""
    recs, _ = agentless
    root = tmp_path / "store"
    write_store(recs, demo.answers, root, partition_by="agent", labels=demo.labels)
    folders = sorted(p.name for p in (root / "traces").iterdir())
    assert "agent=__HIVE_DEFAULT_PARTITION__" in folders
    assert not any(f in ("agent=__none__", "agent=None") for f in folders)
    # DuckDB's and Arrow's own hive readers read the folder as NULL too
    got = duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/traces/*/*.parquet', hive_partitioning = true) "
                     "WHERE agent IS NULL").fetchall()[0][0]
    assert got == sum(r.get("agent") is None for r in recs)
    import pyarrow.dataset as pads
    hive = pads.dataset(root / "traces", partitioning="hive").to_table(columns=["agent"])
    assert hive.column("agent").null_count == got
    whole = score_traces(recs, demo.answers, demo.labels)
    summaries = _summaries_by_engine(root, tmp_path / "o", client, by="agent")
    mem = whole.summary(by="agent")
    assert mem["agent"].isna().any()
    for name, s in summaries.items():
        assert s.n_runs == len(whole.runs), name
        assert_same_summary(s, whole, by="agent", tiers=("automatic",))
        keys = {k[2] for k in s.scores.groups}
        assert None in keys and "__HIVE_DEFAULT_PARTITION__" not in keys, name


def test_a_hive_key_the_records_lack_reads_the_default_partition_as_missing(demo, tmp_path):
    """A key only in the folder names (``week=``): Hive's default partition is a missing week."""
    from evaltk.stats import MISSING_KEY

    weeks = ["2026-W40", "__HIVE_DEFAULT_PARTITION__"]
    for i, r in enumerate(demo.traces[:60]):
        p = tmp_path / "t" / f"week={weeks[i % 2]}" / "part-0.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(r) + "\n")
    res = score_dataset(tmp_path / "t", out=tmp_path / "o", by="week")
    groups = {k[2:] for k in res.summary.scores.groups}
    assert groups == {("2026-W40",), (MISSING_KEY,)}
    runs = pd.read_parquet(tmp_path / "o" / "runs" / "week=__HIVE_DEFAULT_PARTITION__" / "part-0.parquet")
    assert len(runs) and runs["week"].isna().all()


def test_score_summary_and_summarize_frame_keep_missing_keys_once():
    from evaltk.stats import MISSING_KEY, summarize_frame

    f = pd.DataFrame({"measure": "x_task", "agent": ["a", None, np.nan, pd.NA, "a"],
                      "value": [1.0, 0.0, np.nan, 1.0, 0.0], "cause": [None, None, "abstained", None, None]})
    s = score_summary(f, ["measure", "agent"])
    assert set(s.groups) == {("x_task", "a"), ("x_task", MISSING_KEY)}
    assert s[("x_task", MISSING_KEY)].n == 3 and s[("x_task", MISSING_KEY)].n_valued == 2
    t = summarize_frame(f, ["measure", "agent"])
    assert t["n"].tolist() == [2, 3] and t["agent"].isna().tolist() == [False, True]
    halves = score_summary(f.iloc[:2], ["measure", "agent"]) + score_summary(f.iloc[2:], ["measure", "agent"])
    assert halves[("x_task", MISSING_KEY)].n == 3


def test_scoring_a_store_reports_progress_through_logging_not_print(store, tmp_path, caplog, capsys):
    import logging

    with caplog.at_level(logging.INFO, logger="evaltk.scale"):
        res = score_dataset(store / "traces", store / "answers", store / "labels", out=tmp_path / "out")
    lines = [r.getMessage() for r in caplog.records if r.name == "evaltk.scale"]
    scored = [x for x in lines if " scored (" in x]  # one line per partition: "partition <key> scored (i of n)"
    assert len(scored) == res.n_partitions and scored[-1].endswith(f"({res.n_partitions} of {res.n_partitions})")
    assert capsys.readouterr().out == ""


def test_label_measures_give_a_part_the_whole_tables_blocks():
    """A part without labels, told the whole table's label measures, gets exactly the human-tier rows
    (x_safe's block included) that scoring the whole table gives its runs; without them it gets none."""
    d = make_demo(n_traces=200, rng=3)
    assert "x_safe" in set(d.labels["measure"])
    labelled = set(d.labels["trace_id"])
    bare = [r for r in d.traces if r["trace_id"] not in labelled][:30]
    ids = {r["trace_id"] for r in bare}
    whole = score_traces(d.traces, d.answers, d.labels).frame
    want = whole[whole["trace_id"].astype(str).isin(ids)].astype(str).reset_index(drop=True)
    answers = d.answers[d.answers["trace_id"].isin(ids)]
    part = score_traces(bare, answers, d.labels.iloc[0:0], label_measures=("x_eff", "x_safe", "x_task")).frame
    got = part.astype(str).reset_index(drop=True)
    assert {"human"} <= set(got["tier"]) and not got[(got["tier"] == "human") & (got["measure"] == "x_safe")].empty
    pd.testing.assert_frame_equal(got, want)
    alone = score_traces(bare, answers, d.labels.iloc[0:0]).frame
    assert "human" not in set(alone["tier"].astype(str))
