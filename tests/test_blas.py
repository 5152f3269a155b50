"""evaltk._blas: the estimators run with one BLAS thread and give the previous limits back."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import evaltk
from evaltk._blas import serial_blas


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control is loaded")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_inside_one_thread_then_the_previous_limits(two_blas_threads):
    seen = []

    @serial_blas
    def inner():
        seen.append(_blas_threads())
        return float(np.ones(20_000) @ np.ones(20_000))

    @serial_blas
    def outer():
        v = inner()           # nested: one limit, kept until the outer call ends
        seen.append(_blas_threads())
        return v

    assert outer() == 20_000.0
    assert all(t == 1 for s in seen for t in s)
    assert set(_blas_threads()) == {2}


def test_concurrent_calls_leave_the_limits_as_they_found_them(two_blas_threads):
    # Two threads inside estimators at once: one limit is shared and the last call to end
    # restores it, so the process ends with the limits it had (whether OpenBLAS reports a
    # limit set in another thread is its own business: the invariant is the end state).
    inside, release = threading.Event(), threading.Event()
    results = []

    @serial_blas
    def slow():
        inside.set()
        release.wait(10)
        results.append(float(np.ones(20_000) @ np.ones(20_000)))

    t = threading.Thread(target=slow)
    t.start()
    assert inside.wait(10)
    assert serial_blas(lambda: float(np.ones(3) @ np.ones(3)))() == 3.0
    release.set()
    t.join(10)
    assert results == [20_000.0]
    assert set(_blas_threads()) == {2}


def test_an_exception_restores_the_limits(two_blas_threads):
    @serial_blas
    def boom():
        raise ValueError("x")

    with pytest.raises(ValueError):
        boom()
    assert set(_blas_threads()) == {2}


def test_keep_leaves_blas_alone(two_blas_threads, monkeypatch):
    monkeypatch.setenv("EVALTK_BLAS_THREADS", "keep")
    assert set(serial_blas(_blas_threads)()) == {2}


@pytest.mark.parametrize("name", ["cohen_kappa", "scott_pi", "pabak", "fleiss_kappa", "conger_kappa", "gwet_ac1",
                                  "gwet_ac2", "brennan_prediger", "percent_agreement", "krippendorff_alpha",
                                  "agreement_difference", "bootstrap_table"])
def test_every_agreement_estimator_runs_with_one_blas_thread(name):
    # the wrapper is the one from evaltk._blas (not a copy of the rule)
    fn = getattr(evaltk, name)
    assert fn.__code__ is serial_blas(lambda: None).__code__ and callable(fn.__wrapped__)


def test_an_estimator_gives_the_same_numbers_and_the_limits_back(two_blas_threads, monkeypatch):
    rng = np.random.default_rng(0)
    data = rng.integers(1, 6, (2_000, 8)).astype(float)
    data[rng.random(data.shape) < 0.1] = np.nan
    limited = evaltk.krippendorff_alpha(data, level="interval")
    assert set(_blas_threads()) == {2}
    monkeypatch.setenv("EVALTK_BLAS_THREADS", "keep")
    threaded = evaltk.krippendorff_alpha(data, level="interval")
    assert limited.statistic == pytest.approx(threaded.statistic, abs=1e-12)
    assert limited.standard_error == pytest.approx(threaded.standard_error, rel=1e-10)
