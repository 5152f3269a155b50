"""The weekly report's numbers from a scored dataset's per-partition summaries, without its rows.

A demo corpus is written as a store of several partitions and scored with
``score_dataset``; the summaries read back from ``summaries/`` give the weekly page's
score sections exactly as the in-memory page computes them from ``score_traces`` on the
same traces (counts exactly, means to 1e-12, the judge-vs-human kappa interval
identical for the same seed), and still do after every score, run and ledger file has
been deleted: the path reads summaries only.
"""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pandas as pd
import pytest

from evaltk import report
from evaltk.data import make_demo
from evaltk.errors import SchemaViolation, UnreadableInput
from evaltk.report._format import measure_summary
from evaltk.scale import (
    ReportSummary,
    check_complete,
    read_report_summary,
    report_summary,
    score_dataset,
)
from evaltk.scoring import score_traces
from evaltk.stats import calibration_table

from .conftest import moto_s3, write_parts

COUNTS = ["n", "n_valued", "n_excluded", "n_not_applicable", "n_missing_evidence", "n_not_implemented",
          "n_abstained"]


@pytest.fixture(scope="module")
def demo():
    """The demo corpus with a fifth of its runs without an agent: the missing-key group."""
    d = make_demo(n_traces=400, rng=3)
    traces = [{k: v for k, v in t.items() if k != "agent"} if i % 5 == 0 else t for i, t in enumerate(d.traces)]
    return dataclasses.replace(d, traces=traces)


@pytest.fixture(scope="module")
def memory(demo):
    return score_traces(demo.traces, demo.answers, demo.labels)


@pytest.fixture(scope="module")
def scored(demo, tmp_path_factory):
    root = write_parts(tmp_path_factory.mktemp("store"), demo, 4)
    out = root / "scored"
    score_dataset(root / "traces", root / "answers", root / "labels.csv", out=out)
    return out


def _same_summary(got: pd.DataFrame, want: pd.DataFrame, keys: list[str]) -> None:
    got, want = got.reset_index(drop=True), want.reset_index(drop=True)
    assert got[keys].astype(object).where(got[keys].notna(), None).values.tolist() == \
        want[keys].astype(object).where(want[keys].notna(), None).values.tolist()
    assert got[COUNTS].values.tolist() == want[COUNTS].values.tolist()  # exactly
    assert got["coverage"].tolist() == want["coverage"].tolist()
    np.testing.assert_allclose(got["mean"].to_numpy(float), want["mean"].to_numpy(float), rtol=0, atol=1e-12)


def test_every_partition_writes_its_summary_recorded_in_the_completion_record(scored):
    doc = check_complete(scored)
    assert len(doc["partitions"]) == 4
    for p in doc["partitions"]:
        rel = f"summaries/{p['key']}.json"
        assert rel in p["files"] and (scored / rel).is_file()


def test_summaries_give_the_in_memory_weekly_numbers(scored, memory):
    s, manifest = read_report_summary(scored)
    auto = memory.scores("automatic")
    wk = report.weekly_scores(report.data_sources(""), None, scored=str(scored))
    # coverage, abstentions per cause, means per measure: the page's "Coverage" chart and glance line
    _same_summary(wk.measure_summary(), measure_summary(auto), ["measure"])
    # agents side by side, the runs without an agent as their own group (sorted last)
    _same_summary(wk.summary(by="agent"), memory.summary(by="agent"), ["measure", "agent"])
    assert wk.summary(by="agent")["agent"].isna().sum() == wk.summary()["measure"].nunique()
    # runs scored
    assert (s.n_traces, s.n_scores) == (auto["trace_id"].nunique(), len(auto))
    assert s.scorer_versions == set(auto["scorer_version"].astype(str))
    # verdicts at an unvalidated and a validated threshold
    for source in ("", "decision-cost record 2026-11"):
        th = report.thresholds_of({"x_safe": 1.0, "x_task": 0.5}, source)
        pd.testing.assert_frame_equal(wk.verdicts(th), report.verdict_table(auto, th), check_dtype=False)
    # judge vs human: the same table, so the same kappa and the identical bootstrap interval
    for m, t in s.calibration.items():
        mem = calibration_table(memory.frame, m, categories=t.categories)
        assert np.array_equal(t.counts, mem.counts) and t.excluded_a == mem.excluded_a
        a = t.bootstrap("cohen_kappa", n_resamples=300, rng=7)
        b = mem.bootstrap("cohen_kappa", n_resamples=300, rng=7)
        assert a.statistic == b.statistic and tuple(a.confidence_interval) == tuple(b.confidence_interval)
    assert manifest.population  # the manifest the dataset wrote


def test_the_in_memory_page_goes_through_the_same_summary(memory, demo, scored):
    wk = report.weekly_scores(report.data_sources(""), demo)
    direct = report_summary(memory.frame, memory.runs)
    assert wk.summaries.to_dict() == direct.to_dict()
    # the page's judges-against-humans line: the identical kappa and interval from the dataset's summaries
    from_ds = report.weekly_scores(report.data_sources(""), None, scored=str(scored))
    got, want = (w.calibration(n_resamples=200, rng=5) for w in (from_ds, wk))
    pd.testing.assert_frame_equal(got, want)
    assert got["n_pairable"].gt(0).all() and got["ci_low"].notna().all()
    _same_summary(wk.measure_summary(), measure_summary(memory.scores("automatic")), ["measure"])


def test_summary_round_trips_through_its_json_document(memory):
    s = report_summary(memory.frame, memory.runs)
    back = ReportSummary.from_dict(s.to_dict())
    assert back.to_dict() == s.to_dict()
    assert back.to_frame().equals(s.to_frame())


def test_reads_no_score_row_file(scored, memory, tmp_path):
    """Delete every scores, runs and ledger file: the summaries alone give the same numbers."""
    copy = tmp_path / "scored"
    shutil.copytree(scored, copy)
    for t in ("scores", "runs", "ledger"):
        shutil.rmtree(copy / t)
    before, _ = read_report_summary(scored)
    after, _ = read_report_summary(copy)
    assert after.to_dict() == before.to_dict()
    wk = report.weekly_scores(report.data_sources(""), None, scored=str(copy))
    _same_summary(wk.measure_summary(), measure_summary(memory.scores("automatic")), ["measure"])


def test_a_changed_summary_is_refused(scored, tmp_path):
    copy = tmp_path / "scored"
    shutil.copytree(scored, copy)
    f = sorted((copy / "summaries").glob("*.json"))[0]
    f.write_text(f.read_text().replace('"n_traces": ', '"n_traces": 1'))
    with pytest.raises(SchemaViolation, match="integrity check `digest`"):
        read_report_summary(copy)


def test_a_dataset_without_completion_record_names_partitions_done_and_missing(scored, tmp_path):
    copy = tmp_path / "scored"
    shutil.copytree(scored, copy)
    (copy / "_complete.json").unlink()
    (copy / "_partitions" / "part-2.json").unlink()
    (copy / "_partitions" / "part-3.json").unlink()
    with pytest.raises(SchemaViolation) as e:
        read_report_summary(copy)
    msg = str(e.value)
    assert "no completion record _complete.json" in msg
    assert "2 of 4 partition(s) done (part-0, part-1)" in msg and "missing: part-2, part-3" in msg
    assert "--resume" in msg


def test_a_dataset_written_without_summaries_is_refused_saying_how_to_fix_it(scored, tmp_path):
    import json

    copy = tmp_path / "scored"
    shutil.copytree(scored, copy)
    doc = json.loads((copy / "_complete.json").read_text())
    for p in doc["partitions"]:
        p["files"] = {k: v for k, v in p["files"].items() if not k.startswith("summaries/")}
    (copy / "_complete.json").write_text(json.dumps(doc))
    with pytest.raises(SchemaViolation, match="no summary file .*--overwrite"):
        check_complete(copy)


def test_not_a_folder_is_unreadable(tmp_path):
    with pytest.raises(UnreadableInput, match="not a scored dataset"):
        read_report_summary(tmp_path / "nowhere")


def test_summaries_on_object_storage(demo, tmp_path):
    """The same summaries through an fsspec URL (the memory filesystem, in this process)."""
    pytest.importorskip("fsspec")
    import uuid

    root = write_parts(tmp_path / "store", demo, 2)
    url = f"memory://evaltk-{uuid.uuid4().hex}/scored"
    score_dataset(root / "traces", root / "answers", root / "labels.csv", out=url)
    local = tmp_path / "scored"
    score_dataset(root / "traces", root / "answers", root / "labels.csv", out=local)
    assert read_report_summary(url)[0].to_dict() == read_report_summary(local)[0].to_dict()


@pytest.fixture(scope="module")
def s3_scored(demo, tmp_path_factory):
    """``(storage_options, url)``: the demo scored into a bucket of a moto S3 server on 127.0.0.1."""
    with moto_s3("lake") as so:
        root = write_parts(tmp_path_factory.mktemp("s3store"), demo, 2)
        score_dataset(root / "traces", root / "answers", root / "labels.csv", out="s3://lake/scored",
                      storage_options=so)
        yield so, "s3://lake/scored"


def test_summaries_from_s3_equal_the_local_ones(s3_scored, scored, caplog):
    """...and the server's request log shows only the completion record, the manifest and the
    summaries read (no score, run or ledger object)."""
    import logging
    import re

    so, url = s3_scored
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        s, _ = read_report_summary(url, storage_options=so)
    objects = set(re.findall(r'"(?:GET|HEAD) /lake/scored/([^ ?"]+)', caplog.text))
    assert {"_complete.json", "manifest.json", "summaries/part-0.json", "summaries/part-1.json"} <= objects
    assert all(o in ("_complete.json", "manifest.json") or o.startswith("summaries/") for o in objects), objects
    local, _ = read_report_summary(scored)
    _same_summary(s.to_frame(), local.to_frame(), ["measure"])  # 2 partitions there, 4 here: the same numbers
    assert (s.n_traces, s.calibration["x_task"].counts.tolist()) == (local.n_traces,
                                                                    local.calibration["x_task"].counts.tolist())


@pytest.mark.slow
def test_weekly_report_from_s3(s3_scored, demo, tmp_path, monkeypatch):
    """``evaltk report --scored s3://...``: fsspec's configuration (here FSSPEC_S3 for the
    kernel, fsspec.config.conf for this process) carries the credentials, not a parameter."""
    import json

    import fsspec.config

    so, url = s3_scored
    monkeypatch.setitem(fsspec.config.conf, "s3", so)
    monkeypatch.setenv("FSSPEC_S3", json.dumps(so))
    index = report.render_report(week="2026-W48", scored=url, notebooks=["weekly"], out=tmp_path,
                                 params={"n_traces": 300, "n_resamples": 100})
    text = index.read_text(encoding="utf-8")
    auto = score_traces(demo.traces, demo.answers, demo.labels).scores("automatic")
    assert f"{auto['trace_id'].nunique()} traces, {len(auto)} scores" in text
    assert f"the scored dataset {url}" in text
    assert "secret" not in text.replace("secret_", "")  # no credential on the page
