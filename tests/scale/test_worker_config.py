"""The Dask workers' configuration (issue 19): Dask's statistical profiler off, and no
``MALLOC_TRIM_THRESHOLD_`` from the nannies (:data:`evaltk.scale.NANNY_ENVIRON`).

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

from evaltk.scale import NANNY_ENVIRON, WORKER_CONFIG, nanny_config  # noqa: E402
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


def _trim_threshold(client) -> dict[str, str | None]:
    return client.run(lambda: __import__("os").environ.get("MALLOC_TRIM_THRESHOLD_"))


def test_local_cluster_workers_get_no_malloc_trim_threshold_even_after_a_restart(monkeypatch):
    """Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in their workers (and in the process that
    runs them: a LocalCluster's driver, whence later children inherit it, so it is removed here
    first); set, it turns off glibc's dynamic mmap threshold, which cost a partition a third more
    CPU. The nannies of evaltk's LocalCluster set nothing, for the first worker and a restarted one."""
    import dask

    assert NANNY_ENVIRON == {"MALLOC_TRIM_THRESHOLD_": None}
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask.config.set(nanny_config()):  # what evaltk's cluster reads, and nothing else changed
        assert dask.config.get("distributed.nanny.pre-spawn-environ")["MALLOC_TRIM_THRESHOLD_"] is None
    assert dask.config.get("distributed.nanny.pre-spawn-environ")["MALLOC_TRIM_THRESHOLD_"] is not None
    with _dask_client("dask", None, 1) as client:
        assert list(_trim_threshold(client).values()) == [None]
        (address, (pid, _)), = _profiling(client).items()
        _restarted(client, address, pid)
        assert list(_trim_threshold(client).values()) == [None]
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ  # nor set in this process by the nannies
    # Dask's own default, for contrast (the check above can see the variable); its nanny sets the
    # variable in this process too, which is taken back afterwards
    try:
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as c, distributed.Client(c) as client:
            assert list(_trim_threshold(client).values()) == ["65536"]
    finally:
        os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)


def test_dask_worker_with_the_documented_yaml_gets_no_malloc_trim_threshold(tmp_path, monkeypatch):
    """docs/scale.md: a ``dask worker`` started by hand gets Dask's ``MALLOC_TRIM_THRESHOLD_`` from
    its nanny unless Dask's config on that machine says otherwise, with the YAML it quotes (here
    in a folder named by ``DASK_CONFIG``, where Dask also looks); without it, the variable is set
    (the check can see it)."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)  # a LocalCluster's nanny may have left it
    conf = tmp_path / "dask-config"
    conf.mkdir()
    (conf / "evaltk.yaml").write_text(
        "distributed: {nanny: {pre-spawn-environ: {MALLOC_TRIM_THRESHOLD_: null}}}\n", encoding="utf-8")
    with cluster(tmp_path, 1, config={"CONFIG": str(conf)}) as c:
        with distributed.Client(c.address, timeout=60) as client:
            assert list(_trim_threshold(client).values()) == [None]
            c.env = {k: v for k, v in c.env.items() if k != "DASK_CONFIG"}
            c.add_worker()  # Dask's default: its nanny sets the variable
            client.wait_for_workers(2, timeout=120)
            assert sorted(_trim_threshold(client).values(), key=str) == ["65536", None]
