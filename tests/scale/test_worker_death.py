"""Dask workers killed mid-run (issue 19), on real ``dask scheduler`` / ``dask worker``
processes started by each test (conftest ``cluster``) and killed by their PID with SIGKILL.

* one worker of two killed while it runs a partition: Dask reruns its tasks on the other,
  and the result is the in-memory result bit for bit, completion record written, no file
  half-written or unrecorded;
* a worker that dies with ``allowed-failures`` used up (``KilledWorker``) or no worker left
  (``NoWorkerError`` after the scheduler's ``no-workers-timeout``): the run fails with
  :class:`evaltk.scale.WorkersLost` (``evaltk scale score`` exits 75, saying how many
  partitions are done and to rerun with ``--resume``), its tasks are cancelled, nothing is
  written after it failed, no completion record; ``--resume`` then finishes the dataset
  without rescoring the partitions done.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")
pytest.importorskip("duckdb", reason="the Dask engine's id check needs the `scale` extra")

from evaltk._io import TEMP_SUFFIX  # noqa: E402
from evaltk.cli import main  # noqa: E402
from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.scale import (  # noqa: E402
    COMPLETE_FILE,
    SUMMARIES_DIR,
    WorkersLost,
    check_dataset,
    partitions_done,
    score_dataset,
    summarize_dataset,
)
from evaltk.scoring import score_traces  # noqa: E402

from .conftest import assert_rows_as_in_memory, cluster, count_files, write_parts  # noqa: E402

pytestmark = pytest.mark.slow  # each test starts a scheduler and worker processes

N_PARTS = 8


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=2400, rng=11)


@pytest.fixture(scope="module")
def whole(demo):
    return score_traces(demo.traces, demo.answers, demo.labels)


@pytest.fixture(scope="module")
def store(demo, tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("store"), demo, N_PARTS)


@pytest.fixture(scope="module")
def reference(store, tmp_path_factory):
    """One uninterrupted run (pandas engine, in this process)."""
    return score_dataset(store / "traces", store / "answers", store / "labels.csv",
                         out=tmp_path_factory.mktemp("ref") / "out")


def _args(store: Path) -> tuple[Path, Path, Path]:
    return store / "traces", store / "answers", store / "labels.csv"


def _worker_pids(client) -> dict[str, int]:
    """Worker address -> the PID of the process that runs its tasks (a nanny's child, when nannied)."""
    return client.run(os.getpid)


def _kill_mid_run(client, out: Path, victims: list[str], run: cf.Future, timeout: float = 300) -> int:
    """Once a partition is done and every worker in ``victims`` has a task of the run assigned,
    SIGKILL those workers' processes; the number of partitions done at that moment."""
    pids = _worker_pids(client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert not run.done(), f"the run ended before a worker was killed: {run.exception() or run.result()!r}"
        busy = client.processing(workers=victims)
        if partitions_done(out) >= 1 and all(busy.get(w) for w in victims):
            for w in victims:
                os.kill(pids[w], signal.SIGKILL)
            return partitions_done(out)
        time.sleep(0.02)
    raise AssertionError("no partition was done and the workers busy in time")


def _run_tasks(client) -> list[str]:
    """The keys of evaltk scale tasks the scheduler still holds."""
    return client.run_on_scheduler(
        lambda dask_scheduler: [str(k) for k in dask_scheduler.tasks if str(k).startswith("evaltk-scale-")])


def _stamps(out: Path) -> dict[str, tuple[int, int]]:
    """Inode and mtime of the files of every partition marked done (rewriting one changes both).
    A partition whose files were written but whose marker was not (its worker died in between)
    is not done: a resume rescores it, so it is left out."""
    done = {f.stem for f in (out / "_partitions").glob("*.json") if f.stem != "_run"}
    return {str(f.relative_to(out)): (f.stat().st_ino, f.stat().st_mtime_ns)
            for t in ("scores", "runs", "ledger") if (out / t).is_dir()
            for f in sorted((out / t).rglob("*.parquet")) if f.stem in done}


def _tables(out: Path) -> dict[str, object]:
    """Every partition file's table; in the ledgers, ``out`` itself written as ``OUT`` (a shared
    labels file's rows name the staged copy under ``out/_shuffle/``)."""
    import pyarrow.compute as pc

    tables = {}
    for t in ("scores", "runs", "ledger"):
        for f in sorted((out / t).rglob("*.parquet")):
            tab = pq.read_table(f)
            if t == "ledger":
                i = tab.schema.get_field_index("source")
                tab = tab.set_column(i, "source", pc.replace_substring(tab["source"], str(out), "OUT"))
            tables[str(f.relative_to(out))] = tab
    return tables


def _assert_whole_and_recorded(out: Path, reference) -> None:
    """Complete, every file recorded with its digest (check_dataset), equal to the uninterrupted
    run; anything else in ``out`` is a temporary file a killed writer left (hidden, never read)."""
    assert (out / COMPLETE_FILE).is_file()
    pairs = check_dataset(out)
    assert len(pairs) == N_PARTS
    got, exp = _tables(out), _tables(reference.out)
    assert sorted(got) == sorted(exp)
    assert [k for k in exp if not got[k].equals(exp[k])] == []
    summaries = {str(f.relative_to(reference.out)) for f in (reference.out / SUMMARIES_DIR).glob("*.json")}
    for rel in summaries:  # the report's mergeable summaries: the same numbers as the uninterrupted run's
        assert json.loads((out / rel).read_text()) == json.loads((reference.out / rel).read_text()), rel
    known = {*exp, *summaries, "manifest.json", COMPLETE_FILE, "_partitions/_run.json",
             *(f"_partitions/part-{i}.json" for i in range(N_PARTS))}
    other = [f for f in out.rglob("*") if f.is_file() and str(f.relative_to(out)) not in known]
    assert all(f.name.startswith(".") and f.name.endswith(TEMP_SUFFIX) for f in other), other


def _assert_same_summary(got, exp) -> None:
    """Counts identical; means as the partial sums allow (the cluster adds them in another order)."""
    import pandas as pd

    assert got.n_runs == exp.n_runs
    pd.testing.assert_frame_equal(got.to_frame(), exp.to_frame(), check_exact=False, rtol=1e-12, atol=1e-12)


def _assert_failed_cleanly(client, out: Path) -> dict[str, tuple[int, int]]:
    """No completion record, no task of the run left on the scheduler, nothing written after."""
    assert not (out / COMPLETE_FILE).exists()
    assert _run_tasks(client) == []
    done, files = partitions_done(out), count_files(out)
    time.sleep(2.0)
    assert (partitions_done(out), count_files(out)) == (done, files)
    assert 1 <= done < N_PARTS
    with pytest.raises(Exception, match="partial"):
        summarize_dataset(out)
    return _stamps(out)


def test_one_worker_killed_mid_run_is_recovered_from(store, whole, reference, tmp_path):
    out = tmp_path / "out"
    with cluster(tmp_path, 2, nanny=False) as c, distributed.Client(c.address) as client, \
            cf.ThreadPoolExecutor(1) as pool:
        victim, survivor = sorted(_worker_pids(client))
        run = pool.submit(score_dataset, *_args(store), out=out, engine=client)
        done_at_kill = _kill_mid_run(client, out, [victim], run)
        res = run.result(timeout=600)
        (proc,) = [p for p in c.workers if p.poll() is not None]
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert list(client.scheduler_info()["workers"]) == [survivor]
    assert done_at_kill < N_PARTS  # killed mid-run, with partitions left
    assert_rows_as_in_memory(out, whole)
    _assert_whole_and_recorded(out, reference)
    _assert_same_summary(res.summary, reference.summary)
    _assert_same_summary(summarize_dataset(out), reference.summary)


def test_a_killed_worker_with_no_failures_allowed_exits_75_and_resumes(store, reference, tmp_path, capsys):
    out = tmp_path / "out"
    traces, answers, labels = map(str, _args(store))
    cli = ["scale", "score", traces, "--answers", answers, "--labels", labels, "--out", str(out)]
    config = {"DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    with cluster(tmp_path, 1, nanny=True, config=config) as c, distributed.Client(c.address) as client, \
            cf.ThreadPoolExecutor(1) as pool:
        (worker,) = _worker_pids(client)
        capsys.readouterr()
        run = pool.submit(main, [*cli, "--scheduler", c.address])
        _kill_mid_run(client, out, [worker], run)
        assert run.result(timeout=600) == 75
        err = capsys.readouterr().err
        assert "lost its workers scoring partition 'part-" in err and "KilledWorker" in err, err
        assert f"partition(s) done in {out}" in err and "--resume" in err and "Traceback" not in err, err
        stamps = _assert_failed_cleanly(client, out)
        assert main([*cli, "--scheduler", c.address]) == 64  # an unfinished run is not scored over
        client.wait_for_workers(1, timeout=120)  # the nanny started a new worker process
        assert main([*cli, "--scheduler", c.address, "--resume"]) == 0
    assert {k: v for k, v in _stamps(out).items() if k in stamps} == stamps  # the partitions done: not rescored
    _assert_whole_and_recorded(out, reference)


def test_every_worker_dead_fails_after_no_workers_timeout_and_resumes(store, reference, tmp_path):
    out = tmp_path / "out"
    config = {"DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT": "2s"}
    with cluster(tmp_path, 2, nanny=False, config=config) as c, distributed.Client(c.address) as client, \
            cf.ThreadPoolExecutor(1) as pool:
        run = pool.submit(score_dataset, *_args(store), out=out, engine=client)
        _kill_mid_run(client, out, sorted(_worker_pids(client)), run)
        with pytest.raises(WorkersLost, match=r"NoWorkerError.*partition\(s\) done in .*resume=True"):
            run.result(timeout=600)
        assert isinstance(run.exception().__cause__, distributed.scheduler.NoWorkerError)
        stamps = _assert_failed_cleanly(client, out)
        c.add_worker()
        client.wait_for_workers(1, timeout=120)
        res = score_dataset(*_args(store), out=out, engine=client, resume=True)
    assert {k: v for k, v in _stamps(out).items() if k in stamps} == stamps
    _assert_whole_and_recorded(out, reference)
    _assert_same_summary(res.summary, reference.summary)
