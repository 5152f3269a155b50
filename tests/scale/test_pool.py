"""Every core on one machine (issue 19): the DuckDB engine scores partitions in worker processes.

Before, DuckDB's CPU time equalled its wall time (one core).  The partitions now go to a
``ProcessPoolExecutor`` (forkserver, else spawn) of ``n_workers`` processes (default:
every core); the children's CPU time shows the work ran there, the numbers are those of
the in-process engine, and a failure cancels what was not started and waits for the rest.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

import pandas as pd
import pytest

pytest.importorskip("duckdb", reason="the DuckDB engine needs the `scale` extra")

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.errors import InputError  # noqa: E402
from evaltk.scale import score_dataset  # noqa: E402

from .conftest import count_files, write_parts  # noqa: E402

pytestmark = pytest.mark.slow  # starts worker processes


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=400, rng=12)


def test_duckdb_engine_scores_in_worker_processes_with_the_same_numbers(demo, tmp_path):
    store = write_parts(tmp_path / "store", demo, 4)
    ref = score_dataset(store / "traces", store / "answers", store / "labels.csv", out=tmp_path / "ref")
    psutil = pytest.importorskip("psutil", reason="watching the worker processes needs psutil")
    cpu: dict[int, float] = {}
    parent: dict[int, int] = {}
    stop = threading.Event()

    def watch() -> None:  # CPU seconds of every descendant process, sampled while the run goes on
        me = psutil.Process()
        while not stop.is_set():
            for c in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    t = c.cpu_times()
                    cpu[c.pid] = t.user + t.system
                    parent[c.pid] = c.ppid()
            time.sleep(0.05)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    try:
        res = score_dataset(store / "traces", store / "answers", store / "labels.csv", out=tmp_path / "pool",
                            engine="duckdb", n_workers=2)
    finally:
        stop.set()
        th.join()
    # leaves only: the forkserver (the workers' parent) does the imports, the workers the scoring
    busy = [pid for pid, t in cpu.items() if t > 0.2 and pid not in set(parent.values())]
    assert len(busy) >= 2, (cpu, parent)  # two worker processes did the scoring
    kept = res.memory["kept"]  # what each worker held once its partition was done: one per partition
    assert sorted(k.key for k in kept) == [f"part-{k}" for k in range(4)]
    assert {k.pid for k in kept} <= set(cpu) and os.getpid() not in {k.pid for k in kept}
    assert all(0 < k.rss <= res.memory["worker"] and 0 < k.floor <= res.memory["worker"] for k in kept), (
        kept, res.memory["worker"])  # (each worker released after its first partition: it had grown from 0)
    pd.testing.assert_frame_equal(res.summary.to_frame(), ref.summary.to_frame(), check_exact=False, rtol=1e-12)
    for k in range(4):
        a = pd.read_parquet(tmp_path / "ref" / "scores" / f"part-{k}.parquet")
        b = pd.read_parquet(tmp_path / "pool" / "scores" / f"part-{k}.parquet")
        pd.testing.assert_frame_equal(a, b)


def test_a_failed_pool_run_writes_nothing_after_it_raised(demo, tmp_path):
    store = write_parts(tmp_path / "store", demo, 8)
    (store / "traces" / "part-0.jsonl").unlink()
    (store / "traces" / "part-0.parquet").write_bytes(b"corrupt")
    out = tmp_path / "out"
    with pytest.raises(InputError):
        score_dataset(store / "traces", store / "answers", out=out, engine="duckdb", n_workers=2, check_ids=False)
    at_raise = count_files(out)
    time.sleep(2.0)
    assert count_files(out) == at_raise and not (out / "_complete.json").exists()
