"""Stores and outputs on object storage (issue 19): a real S3-protocol server on 127.0.0.1
(moto's server mode, started by the test) and fsspec's memory filesystem.

The same store scored from a local folder and from ``s3://`` / ``memory://`` gives the
same rows and summaries; ``storage_options`` reach every worker; ``out="s3://..."``
never creates a local folder named ``s3:``; the completion record is checked there too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("duckdb", reason="the scale engines need the `scale` extra")
fsspec = pytest.importorskip("fsspec", reason="object storage needs fsspec (with the `scale` extra)")

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.errors import OutputRefused, SchemaViolation  # noqa: E402
from evaltk.scale import partitions_done, score_dataset, summarize_dataset  # noqa: E402

from .conftest import moto_s3, write_parts  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=120, rng=4)


@pytest.fixture(scope="module")
def local_store(demo, tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("store"), demo, 3)


@pytest.fixture(scope="module")
def reference(local_store, tmp_path_factory):
    return score_dataset(local_store / "traces", local_store / "answers", local_store / "labels.csv",
                         out=tmp_path_factory.mktemp("ref") / "out")


@pytest.fixture(scope="module")
def s3(local_store):
    """``(storage_options, "s3://bucket")`` of a moto S3 server on 127.0.0.1 holding the store."""
    with moto_s3("evaltk") as so:
        fs = fsspec.filesystem("s3", **so)
        fs.put(str(local_store) + "/", "evaltk/store/", recursive=True)
        yield so, "s3://evaltk"


def _rows(out, so=None):
    from evaltk.scale._remote import read_table

    return {k: read_table(f"{out}/scores/{k}.parquet", so).to_pandas() for k in ("part-0", "part-1", "part-2")}


def _same(res, reference):
    assert res.summary.n_runs == reference.summary.n_runs
    import pandas as pd

    pd.testing.assert_frame_equal(res.summary.to_frame(), reference.summary.to_frame(), check_exact=False,
                                  rtol=1e-12, atol=1e-12)  # DuckDB adds in another order
    assert res.summary.population == reference.summary.population


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_s3_store_and_output_give_the_local_numbers(s3, reference, engine, tmp_path, monkeypatch):
    so, bucket = s3
    monkeypatch.chdir(tmp_path)
    out = f"{bucket}/scored-{engine}"
    res = score_dataset(f"{bucket}/store/traces", f"{bucket}/store/answers", f"{bucket}/store/labels.csv",
                        out=out, engine=engine, storage_options=so)
    _same(res, reference)
    assert res.out == out and not Path("s3:").exists() and not any(tmp_path.iterdir())
    got, exp = _rows(out, so), _rows(reference.out)
    assert all(got[k].equals(exp[k]) for k in exp)
    for eng in ("pandas", "duckdb"):
        s = summarize_dataset(out, engine=eng, by="agent", storage_options=so)
        assert s.to_frame()["n"].tolist() == summarize_dataset(reference.out, by="agent").to_frame()["n"].tolist()
    ledger = _rows_of(out, so, "ledger")
    assert not any("evaltk-stage-" in str(x) for x in ledger["source"].dropna()), set(ledger["source"])  # not the staged copies
    with pytest.raises(OutputRefused, match="--resume"):
        score_dataset(f"{bucket}/store/traces", out=out, storage_options=so)


def _rows_of(out, so, table):
    import pandas as pd

    from evaltk.scale._remote import read_table

    return pd.concat([read_table(f"{out}/{table}/part-{i}.parquet", so).to_pandas() for i in range(3)])


def test_s3_partial_dataset_is_refused_and_resumed(s3, reference):
    so, bucket = s3
    fs = fsspec.filesystem("s3", **so)
    out = f"{bucket}/partial"
    score_dataset(f"{bucket}/store/traces", f"{bucket}/store/answers", f"{bucket}/store/labels.csv", out=out,
                  storage_options=so)
    fs.rm("evaltk/partial/_complete.json")
    fs.rm("evaltk/partial/_partitions/part-2.json")
    assert partitions_done(out, storage_options=so) == 2
    with pytest.raises(SchemaViolation, match="partial"):
        summarize_dataset(out, storage_options=so)
    res = score_dataset(f"{bucket}/store/traces", f"{bucket}/store/answers", f"{bucket}/store/labels.csv",
                        out=out, storage_options=so, resume=True)
    _same(res, reference)
    fs.pipe_file("evaltk/partial/scores/part-0.parquet", b"changed")
    with pytest.raises(SchemaViolation, match="digest"):
        summarize_dataset(out, storage_options=so)


def test_memory_filesystem_store_and_output(local_store, reference):
    mem = fsspec.filesystem("memory")
    mem.put(str(local_store) + "/", "/evaltk-store/", recursive=True)
    res = score_dataset("memory:///evaltk-store/traces", "memory:///evaltk-store/answers",
                        "memory:///evaltk-store/labels.csv", out="memory:///evaltk-out", engine="duckdb")
    _same(res, reference)
    assert mem.exists("/evaltk-out/_complete.json") and not os.path.exists("memory:")
    assert summarize_dataset("memory:///evaltk-out").n_runs == reference.summary.n_runs
    with pytest.raises(ValueError, match="memory filesystem"):
        score_dataset("memory:///evaltk-store/traces", out="memory:///evaltk-out2", engine="dask")


def test_file_urls_are_local_paths(local_store, reference, tmp_path):
    res = score_dataset(f"file://{local_store}/traces", f"file://{local_store}/answers",
                        f"file://{local_store}/labels.csv", out=f"file://{tmp_path}/out")
    _same(res, reference)
    assert res.out == tmp_path / "out" and summarize_dataset(tmp_path / "out").n_runs == reference.summary.n_runs


def test_an_output_inside_a_remote_input_is_refused(s3):
    so, bucket = s3
    with pytest.raises(OutputRefused, match="inside the input"):
        score_dataset(f"{bucket}/store/traces", out=f"{bucket}/store/traces/out", storage_options=so)


@pytest.mark.slow
def test_s3_with_real_dask_workers_gets_the_storage_options(s3, reference, dask_cluster):
    distributed = pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")
    so, bucket = s3
    address, worker_cwd = dask_cluster
    with distributed.Client(address) as client:
        res = score_dataset(f"{bucket}/store/traces", f"{bucket}/store/answers", f"{bucket}/store/labels.csv",
                            out=f"{bucket}/scored-dask", engine=client, storage_options=so)
        _same(res, reference)
        assert summarize_dataset(res.out, engine=client, storage_options=so).n_runs == reference.summary.n_runs
    assert not (worker_cwd / "s3:").exists()
