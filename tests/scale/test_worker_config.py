"""The Dask workers' configuration (issue 19): Dask's statistical profiler off.

It samples every worker thread's stack every 10 ms and cost a quarter of a scoring
worker's CPU (docs/scale.md).  The workers of the ``LocalCluster`` evaltk starts get
:data:`evaltk.scale.WORKER_CONFIG` through their nannies, so a worker the nanny restarts
(killed here by its PID) comes back with it too (a ``dask.config.set`` around the
cluster reached only the first worker process); a ``dask worker`` started with the
documented ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False`` has it off, restarted or not.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

distributed = pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")

from evaltk.scale import WORKER_CONFIG  # noqa: E402
from evaltk.scale._scale import _dask_client  # noqa: E402

from .conftest import cluster  # noqa: E402

pytestmark = pytest.mark.slow  # starts worker processes


def _profiling(client) -> dict[str, tuple[int, bool]]:
    """Worker address -> (PID of the process running its tasks, whether Dask's profiler samples it)."""
    def state(dask_worker):
        import os

        return os.getpid(), "profile" in dask_worker.periodic_callbacks

    return client.run(state)


def _restarted(client, address: str, pid: int, timeout: float = 120) -> dict[str, tuple[int, bool]]:
    """SIGKILL the process behind ``address`` and wait until its nanny has a new worker in its place."""
    n = len(client.scheduler_info()["workers"])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        with __import__("contextlib").suppress(Exception):
            now = _profiling(client)
            if len(now) == n and address not in now:
                return now
    raise AssertionError("the nanny did not restart the killed worker in time")


def test_worker_config_turns_the_profiler_off():
    assert WORKER_CONFIG == {"distributed.worker.profile.enabled": False}


def test_local_cluster_workers_keep_the_profiler_off_after_a_restart():
    with _dask_client("dask", None, 1) as client:
        before = _profiling(client)
        assert [on for _, on in before.values()] == [False]
        (address, (pid, _)), = before.items()
        after = _restarted(client, address, pid)
        assert [on for _, on in after.values()] == [False], after


def test_dask_worker_with_the_documented_variable_runs_without_the_profiler(tmp_path):
    with cluster(tmp_path, 1, config={"DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}) as c:
        with distributed.Client(c.address, timeout=60) as client:
            (address, (pid, on)), = _profiling(client).items()
            assert not on
            assert [on for _, on in _restarted(client, address, pid).values()] == [False]
            c.env = {k: v for k, v in c.env.items() if k != "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"}
            c.add_worker()  # without the variable: Dask's default, profiler on (the check sees it)
            client.wait_for_workers(2, timeout=120)
            assert sorted(on for _, on in _profiling(client).values()) == [False, True]
