"""Stores and a real Dask cluster for the scale tests.

``dask_cluster`` starts ``dask scheduler`` and two ``dask worker`` processes (the
``dask`` command that comes with ``distributed``) on 127.0.0.1, in a working folder of
their own (not the test's), and ends them by PID afterwards: pickling, worker processes
and paths are exercised as on a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def moto_s3(bucket: str) -> Iterator[dict]:
    """The ``storage_options`` of a moto S3 server on 127.0.0.1 holding an empty ``bucket``
    (skips with the reason when moto[server], s3fs or boto3 is absent); stopped on exit."""
    pytest.importorskip("s3fs", reason="s3:// needs s3fs")
    boto3 = pytest.importorskip("boto3", reason="creating the test bucket needs boto3")
    server = pytest.importorskip("moto.server", reason="the S3 server needs moto[server]")
    srv = server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    srv.start()
    try:
        host, port = srv.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s",
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        yield {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
    finally:
        srv.stop()


def write_parts(root: Path, demo, n_parts: int, *, shared_answers: bool = False) -> Path:
    """``root/traces/part-<i>.jsonl`` (``n_parts`` chunks of the demo traces) with co-partitioned
    ``root/answers/part-<i>.csv`` (or one shared ``root/answers.parquet``) and shared labels."""
    traces = list(demo.traces)
    size = -(-len(traces) // n_parts)
    (root / "traces").mkdir(parents=True, exist_ok=True)
    for i in range(n_parts):
        chunk = traces[i * size:(i + 1) * size]
        with open(root / "traces" / f"part-{i}.jsonl", "w", encoding="utf-8") as fh:
            for r in chunk:
                fh.write(json.dumps(r) + "\n")
        if not shared_answers:
            ids = {str(r["trace_id"]) for r in chunk}
            a = demo.answers[demo.answers["trace_id"].astype(str).isin(ids)]
            (root / "answers").mkdir(exist_ok=True)
            a.to_csv(root / "answers" / f"part-{i}.csv", index=False)
    if shared_answers:
        demo.answers.to_parquet(root / "answers.parquet", index=False)
    demo.labels.to_csv(root / "labels.csv", index=False)
    return root


def _dask_exe() -> str:
    exe = Path(sys.executable).with_name("dask")
    return str(exe) if exe.exists() else (shutil.which("dask") or "dask")


class Cluster:
    """A ``dask scheduler`` and ``dask worker`` processes started in ``cwd`` (see :func:`cluster`)."""

    def __init__(self, cwd: Path, *, nanny: bool, env: dict[str, str]):
        self.cwd, self.nanny, self.env = cwd, nanny, env
        self.log = open(cwd / "dask.log", "ab")  # noqa: SIM115 - closed by stop()
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        sched_file = cwd / "scheduler.json"
        self.procs.append(subprocess.Popen([_dask_exe(), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                            "--no-dashboard", "--scheduler-file", str(sched_file)],
                                           cwd=cwd, env=env, stdout=self.log, stderr=self.log))
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.address = json.loads(sched_file.read_text())["address"]

    def add_worker(self) -> subprocess.Popen:
        """One more single-threaded worker (its own process, or a nanny's child with ``nanny``)."""
        p = subprocess.Popen([_dask_exe(), "worker", self.address, "--nthreads", "1", "--no-dashboard",
                              "--host", "127.0.0.1", "--memory-limit", "2GB",
                              "--nanny" if self.nanny else "--no-nanny"],
                             cwd=self.cwd, env=self.env, stdout=self.log, stderr=self.log)
        self.procs.append(p)
        self.workers.append(p)
        return p

    def wait_for_workers(self, n: int) -> None:
        """Until ``n`` workers are registered and, with ``nanny``, every nanny has finished
        starting: a worker registers with the scheduler before its nanny's start returns,
        and a worker killed in that gap is a failed start (the nanny exits, nothing
        restarts it; seen in CI under load)."""
        import distributed

        with distributed.Client(self.address, timeout=60) as c:
            c.wait_for_workers(n, timeout=120)
            deadline = time.monotonic() + 120
            while self.nanny:
                try:
                    states = c.run(lambda dask_worker: dask_worker.status.name, nanny=True)
                except (OSError, distributed.comm.CommClosedError) as e:  # a nanny not listening yet
                    states = {"?": repr(e)}
                if len(states) >= n and set(states.values()) == {"running"}:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"the nannies did not finish starting: {states}")
                time.sleep(0.1)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.log.close()


@contextlib.contextmanager
def cluster(cwd: Path, n_workers: int, *, nanny: bool = True, config: dict[str, str] | None = None
            ) -> Iterator[Cluster]:
    """A real cluster on 127.0.0.1 with ``n_workers`` workers, ended by PID afterwards.

    ``config`` sets Dask options on every process through ``DASK_...`` environment variables
    (``{"DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}``).
    """
    pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **{f"DASK_{k}": v for k, v in (config or {}).items()}}
    c = Cluster(cwd, nanny=nanny, env=env)
    try:
        for _ in range(n_workers):
            c.add_worker()
        c.wait_for_workers(n_workers)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """``(address, worker_cwd)`` of a scheduler and two single-threaded worker processes."""
    cwd = tmp_path_factory.mktemp("dask-worker-cwd")
    with cluster(cwd, 2) as c:
        yield c.address, cwd


def count_files(out: Path) -> int:
    return sum(1 for t in ("scores", "runs", "ledger") if (out / t).is_dir() for f in (out / t).rglob("*.parquet"))


def assert_rows_as_in_memory(out: Path, whole) -> None:
    """The score rows written in ``out`` are, bit for bit, the rows ``whole`` (``score_traces`` on
    the whole store in memory) holds; the runs written are its runs."""
    import numpy as np

    exp = whole.frame.astype({c: object for c in ("trace_id", "measure", "tier", "cause", "reason")})
    exp = exp.sort_values(["trace_id", "measure", "tier"]).reset_index(drop=True)
    got = pd.concat([pd.read_parquet(p) for p in sorted((out / "scores").rglob("*.parquet"))])
    got = got.sort_values(["trace_id", "measure", "tier"]).reset_index(drop=True)
    for c in ("trace_id", "measure", "tier"):
        assert got[c].astype(str).tolist() == exp[c].astype(str).tolist(), c
    np.testing.assert_array_equal(got["value"].to_numpy(float), exp["value"].to_numpy(float))
    for c in ("cause", "reason"):
        assert [None if pd.isna(v) else str(v) for v in got[c]] == [None if pd.isna(v) else str(v) for v in exp[c]], c
    runs = pd.concat([pd.read_parquet(p) for p in sorted((out / "runs").rglob("*.parquet"))])
    assert sorted(runs["trace_id"].astype(str)) == sorted(whole.runs["trace_id"].astype(str))


__all__ = ["write_parts", "count_files", "cluster", "assert_rows_as_in_memory", "pd"]
