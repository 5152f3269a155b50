"""Stores and a real Dask cluster for the scale tests.

``dask_cluster`` starts ``dask scheduler`` and two ``dask worker`` processes (the
``dask`` command that comes with ``distributed``) on 127.0.0.1, in a working folder of
their own (not the test's), and ends them by PID afterwards: pickling, worker processes
and paths are exercised as on a real cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """``(address, worker_cwd)`` of a scheduler and two single-threaded worker processes."""
    pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")
    cwd = tmp_path_factory.mktemp("dask-worker-cwd")
    sched_file = cwd / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = open(cwd / "dask.log", "wb")  # noqa: SIM115 - closed below
    procs = [subprocess.Popen([_dask_exe(), "scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              cwd=cwd, env=env, stdout=log, stderr=log)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen([_dask_exe(), "worker", address, "--nthreads", "1", "--no-dashboard",
                                           "--host", "127.0.0.1", "--memory-limit", "2GB"],
                                          cwd=cwd, env=env, stdout=log, stderr=log))
        import distributed

        with distributed.Client(address, timeout=60) as c:
            c.wait_for_workers(2, timeout=120)
        yield address, cwd
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def count_files(out: Path) -> int:
    return sum(1 for t in ("scores", "runs", "ledger") if (out / t).is_dir() for f in (out / t).rglob("*.parquet"))


__all__ = ["write_parts", "count_files", "pd"]
