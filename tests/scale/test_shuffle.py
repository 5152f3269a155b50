"""Shared answers joined by a shuffle, not a scan (issue 19).

Answers and labels not stored beside the traces are repartitioned once by their
trace's partition (one DuckDB join, ``COPY ... PARTITION_BY``); each partition then
reads only its own rows.  Before, every partition scanned the whole answer source
(quadratic: 1.92 s per partition at 50M answer rows).
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("duckdb", reason="the shuffle runs in DuckDB (the `scale` extra)")

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.scale import discover_partitions, score_dataset, summarize_dataset  # noqa: E402
from evaltk.scale._remote import Root  # noqa: E402
from evaltk.scale._scale import _shuffle_shared  # noqa: E402

from .conftest import write_parts  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=200, rng=21)


def test_each_partition_gets_exactly_its_traces_answers(demo, tmp_path):
    store = write_parts(tmp_path / "store", demo, 4, shared_answers=True)
    parts, shared = discover_partitions(store / "traces", store / "answers.parquet", store / "labels.csv")
    assert shared["answers"] and shared["labels"]
    new, left = _shuffle_shared(parts, shared, Root(tmp_path / "out"), memory_limit="256MB", temp_directory=None,
                                storage_options=None)
    assert left == {"answers": None, "labels": None}
    ids_of = [{json.loads(line)["trace_id"] for line in open(p.traces)} for p in parts]
    all_ids = set().union(*ids_of)
    n = 0
    for p, ids in zip(new, ids_of, strict=True):
        got = pq.read_table(p.answers).to_pandas()
        assert set(got["trace_id"].astype(str)) <= ids and "evaltk_part" not in got.columns
        exp = demo.answers[demo.answers["trace_id"].astype(str).isin(ids)]
        assert len(got) == len(exp)
        n += len(got)
    assert n == int(demo.answers["trace_id"].astype(str).isin(all_ids).sum())  # orphans: no run to join


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_shared_answers_score_as_co_partitioned_ones(demo, tmp_path, engine):
    co = write_parts(tmp_path / "co", demo, 4)
    sh = write_parts(tmp_path / "sh", demo, 4, shared_answers=True)
    a = score_dataset(co / "traces", co / "answers", co / "labels.csv", out=tmp_path / "a", engine=engine)
    b = score_dataset(sh / "traces", sh / "answers.parquet", sh / "labels.csv", out=tmp_path / "b", engine=engine)
    pd.testing.assert_frame_equal(a.summary.to_frame(), b.summary.to_frame(), check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(a.summary.to_frame(tier="human"), b.summary.to_frame(tier="human"),
                                  check_exact=False, rtol=1e-12)
    for k in ("part-0", "part-3"):
        x = pq.read_table(tmp_path / "a" / "scores" / f"{k}.parquet").to_pandas()
        y = pq.read_table(tmp_path / "b" / "scores" / f"{k}.parquet").to_pandas()
        pd.testing.assert_frame_equal(x, y)
    assert not (tmp_path / "b" / "_shuffle").exists()
    assert summarize_dataset(tmp_path / "b").n_runs == a.summary.n_runs


def test_an_unreadable_trace_file_is_named_by_the_shuffle(demo, tmp_path):
    from evaltk.errors import UnreadableInput

    store = write_parts(tmp_path / "store", demo, 3, shared_answers=True)
    (store / "traces" / "part-1.jsonl").unlink()
    (store / "traces" / "part-1.parquet").write_bytes(b"corrupt")
    with pytest.raises(UnreadableInput, match="part-1.parquet"):
        score_dataset(store / "traces", store / "answers.parquet", out=tmp_path / "o", check_ids=False)
