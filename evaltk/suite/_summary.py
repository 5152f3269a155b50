"""The RFC 0246 summary of a run: scores stay measurements, the gate reads gating scores,
and the summary says why (sections A to D)."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._display import HtmlTable
from ..stats import pass_at_k, pass_hat_k
from ..values import Cause
from ._model import SuiteRun
from ._read import load_suite_run
from ._scores import _decimal_ints, _exact_scores, _int_if_whole, _Scores

# --------------------------------------------------------------------------- the summary


def _cost_sums(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-task and total sums of recorded costs, exact on decimals (0.02 + 0.015 + 0.021 = 0.056)."""
    known = np.where(np.isnan(cost), 0.0, cost)
    d, (ints,) = _decimal_ints([known], known.size)
    q = 10**d
    return np.asarray(ints.sum(axis=1) / q, dtype=float), int(ints.sum()) / q


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while a summary builds its entries: a few hundred
    thousand small dicts, none of which can be part of a cycle, would otherwise set it off
    every 700 allocations to walk every object of the process (half the time of ``to_dict``
    at 100k tasks).  The new entries are then moved to the oldest generation
    (``gc.freeze`` then ``gc.unfreeze``: no object is visited), so the young-generation
    collection the next allocations start does not walk them either; the process's other
    tracked objects move there with them and are still collected, by the next full
    collection.  Its earlier state is restored."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()


def _p95(x: np.ndarray) -> float:
    """Nearest-rank 95th percentile: an observed value, the maximum below 20 values."""
    srt = np.sort(x)
    return float(srt[max(math.ceil(0.95 * srt.size), 1) - 1])


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _max_condition(name: str, value: float | None, threshold: float | None, *, unknown: int, limit: str,
                   what: str, shown: str, exact: bool) -> dict[str, Any] | None:
    """The cost and the latency condition (RFC 0246 section B: unchanged): ``value <= threshold``
    when a threshold is set; when some trial did not record the number, the condition cannot
    be checked and fails closed.  ``exact`` reports whole numbers as integers (milliseconds)."""
    if threshold is None:
        return None
    if value is None:
        return {"condition": name, "value": None, "cause": Cause.MISSING_EVIDENCE.value,
                "threshold": threshold, "met": False,
                "detail": f"cannot check {limit} {_fmt(threshold)}: {unknown} trial(s) record no {what} "
                "(fails closed)"}
    ok = value <= threshold
    return {"condition": name, "value": _int_if_whole(value) if exact else value,
            "threshold": _int_if_whole(threshold) if exact else threshold, "met": bool(ok),
            "detail": shown.format(_fmt(value), "<=" if ok else ">", _fmt(threshold))}


@dataclass(frozen=True, eq=False)
class EvalSummary(HtmlTable):
    """The RFC 0246 summary of a suite run.  Build it with :func:`summarize_suite`.

    Attributes
    ----------
    run : SuiteRun
        The run it summarises.
    aggregate_score : float
        The aggregation of task scores (section C: a measurement, never gated).
    gated_aggregate_score : float
        The same aggregation of task gating scores (section A); the gate reads it.
    passed : bool
        ``gated_aggregate_score >= passScore`` and the cost and latency conditions.
    reasons : tuple of str
        Why it passed or not: each condition, with the numbers.
    conditions : tuple of dict
        The same, machine-readable: ``condition, value, threshold, met, detail``.
    task_score, task_gated_score, pass_at_k, pass_hat_k : ndarray of float
        Per task.
    task_passed, gated_score_present : ndarray of bool
        Per task; ``gated_score_present`` says where ``gatedScore`` is reported.
    trial_gating_score : ndarray of float
        Per trial (shape ``(tasks, count)``).
    trial_passed : ndarray of bool
        Per trial verdict: score >= passScore, trajectory matched where expected,
        no fixture miss.
    total_cost, p95_latency_ms : float or None
        ``None`` when some trial did not record it.
    """

    run: SuiteRun
    aggregate_score: float
    gated_aggregate_score: float
    gated_aggregate_present: bool
    passed: bool
    reasons: tuple[str, ...]
    conditions: tuple[Mapping[str, Any], ...]
    task_score: np.ndarray
    task_gated_score: np.ndarray
    gated_score_present: np.ndarray
    task_passed: np.ndarray
    pass_at_k: np.ndarray
    pass_hat_k: np.ndarray
    trial_gating_score: np.ndarray
    trial_passed: np.ndarray
    total_cost: float | None
    p95_latency_ms: float | None
    _extras: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def statistic(self) -> float:
        """The number the gate reads: the gated aggregate score."""
        return self.gated_aggregate_score

    @property
    def passed_count(self) -> int:
        return int(self.task_passed.sum())

    def to_dict(self) -> dict[str, Any]:
        """The EvalSummary JSON (``evaltk/schemas/eval-summary.schema.json``)."""
        run = self.run
        out: dict[str, Any] = {"suite": run.suite}
        if run.version is not None:
            out["suiteVersion"] = run.version
        out["thresholds"] = run.thresholds.to_dict()
        out["trials"] = {"count": run.count, "passRule": run.pass_rule, "k": run.k}
        out["aggregation"] = run.aggregation
        out["aggregateScore"] = self.aggregate_score
        if self.gated_aggregate_present:
            out["gatedAggregateScore"] = self.gated_aggregate_score
        out["passed"] = self.passed
        out["taskCount"] = run.task_count
        out["passedCount"] = self.passed_count
        if self.total_cost is not None:
            out["totalCost"] = self.total_cost
        if self.p95_latency_ms is not None:
            out["p95LatencyMs"] = _int_if_whole(self.p95_latency_ms)
        out["decision"] = [dict(c) for c in self.conditions]
        out["reasons"] = list(self.reasons)
        out["tasks"] = self._task_entries()
        out["generator"] = {"name": "evaltk", "rfc": "0246"}
        return out

    def _task_entries(self) -> list[dict[str, Any]]:
        """One entry per task, built column-wise: every entry with all its keys in one
        literal, then the keys a task does not report (no type, no gating score, an
        unrecorded cost) taken out again, so the key order is the same on every entry."""
        run, ex = self.run, self._extras
        n, rule = run.count, run.pass_rule
        ts = ex["trial_stats"]
        tcost = ex["task_cost"]
        sd = ts["std"].tolist() if n > 1 else [None] * run.task_count
        with _no_cycle_collection():
            entries = self._entries(n, rule, sd, tcost)
        for i in np.flatnonzero(np.array([t is None for t in run.task_types], dtype=bool)).tolist():
            del entries[i]["type"]
        for i in np.flatnonzero(~self.gated_score_present).tolist():
            del entries[i]["gatedScore"]
        for i in np.flatnonzero(np.isnan(tcost)).tolist():
            del entries[i]["cost"]
        if n == 1:
            for e in entries:
                e["trialStats"]["stdDevCause"] = Cause.MISSING_EVIDENCE.value
        return entries

    def _entries(self, n: int, rule: str, sd: list[Any], tcost: np.ndarray) -> list[dict[str, Any]]:
        run, ts = self.run, self._extras["trial_stats"]
        return [
            {"taskId": tid, "id": tid, "type": ty, "score": sc, "gatedScore": gs, "passed": ok, "hasTrajectory": ht,
             "trials": {"count": n, "passRule": rule, "meanScore": sc}, "passAtK": pak, "passHatK": phk,
             "trialStats": {"count": n, "passedCount": npass, "trajectoryFailedCount": tf,
                            "fixtureMissCount": fm, "minScore": mn, "maxScore": mx, "stdDev": std},
             "cost": c}
            for tid, ty, sc, gs, ok, ht, pak, phk, npass, tf, fm, mn, mx, std, c in zip(
                run.task_ids, run.task_types, self.task_score.tolist(), self.task_gated_score.tolist(),
                self.task_passed.tolist(), run.has_trajectory.tolist(), self.pass_at_k.tolist(),
                self.pass_hat_k.tolist(), ts["passed"].tolist(), ts["traj_failed"].tolist(),
                ts["misses"].tolist(), ts["min"].tolist(), ts["max"].tolist(), sd, tcost.tolist(), strict=True)
        ]

    def to_frame(self, level: str = "task") -> pd.DataFrame:
        """Tidy view for notebooks.

        Parameters
        ----------
        level : {"task", "trial"}
            ``task``: one row per task with ``task_id, type, has_trajectory, score,
            gated_score, gated_score_reported, passed, pass_at_k, pass_hat_k,
            n_trials, n_passed, n_trajectory_failed, n_fixture_miss, min_score,
            max_score, std_score, std_score_cause, cost``.
            ``trial``: one row per trial with ``task_id, trial, score, gating_score,
            passed, trajectory_matched, fixture_miss, cost, latency_ms``.
        """
        run, ts = self.run, self._extras["trial_stats"]
        if level == "trial":
            frame = run.to_frame()
            frame.insert(3, "gating_score", self.trial_gating_score.ravel())
            frame.insert(4, "passed", self.trial_passed.ravel())
            return frame
        if level != "task":
            raise ValueError(f"`level` must be 'task' or 'trial'; got {level!r}.")
        n = run.count
        return pd.DataFrame(
            {
                "task_id": list(run.task_ids),
                "type": pd.Series(run.task_types, dtype=object),
                "has_trajectory": run.has_trajectory,
                "score": self.task_score,
                "gated_score": self.task_gated_score,
                "gated_score_reported": self.gated_score_present,
                "passed": self.task_passed,
                "pass_at_k": self.pass_at_k,
                "pass_hat_k": self.pass_hat_k,
                "n_trials": n,
                "n_passed": ts["passed"],
                "n_trajectory_failed": ts["traj_failed"],
                "n_fixture_miss": ts["misses"],
                "min_score": ts["min"],
                "max_score": ts["max"],
                "std_score": ts["std"] if n > 1 else np.full(run.task_count, np.nan),
                "std_score_cause": pd.Series(
                    [None if n > 1 else Cause.MISSING_EVIDENCE.value] * run.task_count, dtype=object),
                "cost": self._extras["task_cost"],
            }
        )


def summarize_suite(run: SuiteRun | Mapping[str, Any] | str | Path) -> EvalSummary:
    """Summarise a suite run under RFC 0246 (vectorised over tasks and trials).

    Parameters
    ----------
    run : SuiteRun, mapping or path
        A run from :func:`load_suite_run` (a mapping or path is loaded first).

    Returns
    -------
    EvalSummary

    Notes
    -----
    Per trial: verdict ``score >= passScore and trajectory matched (where expected)
    and not fixtureMiss``; gating score 0 on a failed trajectory or a fixture miss,
    the score otherwise.  Per task: ``score = trials.meanScore = mean(trial scores)``;
    ``gatedScore = mean(gating scores)``; ``passAtK = 1 - C(n-c, k)/C(n, k)`` and
    ``passHatK = C(c, k)/C(n, k)`` over ``n`` trials with ``c`` passing verdicts;
    ``passed`` by ``passRule`` (``mean``: ``gatedScore >= passScore``; ``all`` /
    ``any``: every / some trial verdict).  Suite: ``aggregateScore`` and
    ``gatedAggregateScore`` by ``aggregation``; ``passed`` when
    ``gatedAggregateScore >= passScore`` and ``totalCost <= maxCost`` and the
    nearest-rank p95 of trial latencies ``<= maxLatencyMs`` (each only when set; a
    condition that cannot be checked because a trial did not record the number
    fails closed).  Every score and ``passScore`` is read as the decimal it was
    written as: sums and threshold comparisons are exact integer arithmetic on the
    decimals (no tolerance: 0.6999999999995 does not reach 0.7), each reported mean
    is rounded once, and the reason names the exact numbers compared.

    References
    ----------
    RFC 0246, "A trial that fails its trajectory cannot carry a task or a suite to a
    pass", sections A-D (``../shared/seeds/000_daedeefabf03a1f5.txt``).

    Examples
    --------
    The RFC's suite example: two tasks scoring 0.9, the second on the wrong path.

    >>> s = summarize_suite({"suite": "ex", "thresholds": {"passScore": 0.7}, "tasks": [
    ...     {"id": "t1", "expected": {"trajectory": {"tools": ["a"]}},
    ...      "trials": [{"score": 0.9, "toolCalls": ["a"]}]},
    ...     {"id": "t2", "expected": {"trajectory": {"tools": ["a"]}},
    ...      "trials": [{"score": 0.9, "toolCalls": ["b"]}]}]})
    >>> s.aggregate_score, s.gated_aggregate_score, s.passed
    (0.9, 0.45, False)
    """
    if not isinstance(run, SuiteRun):
        run = load_suite_run(run)
    # section A: a failed trajectory or a fixture miss gates the trial to 0; its score stays
    traj_failed = run.has_trajectory[:, None] & ~run.trajectory_matched
    gated_out = traj_failed | run.fixture_miss
    gating = np.where(gated_out, 0.0, run.score)
    sc = _exact_scores(run, gated_out)
    n_pass = sc.trial_passed.sum(axis=1)
    at, hat = _k_tables(run.count, run.k)
    present = run.has_trajectory | (sc.task_gated != sc.task_score)  # section D
    gagg_present = bool(present.any())
    usage = _Usage(run)
    conditions = [_gate_condition(run, sc, gated_out, gagg_present), *usage.conditions(run.thresholds)]
    passed = all(c["met"] for c in conditions)
    return EvalSummary(
        run=run, aggregate_score=sc.aggregate, gated_aggregate_score=sc.gated_aggregate,
        gated_aggregate_present=gagg_present, passed=passed, reasons=_reasons(conditions, passed),
        conditions=tuple(conditions), task_score=sc.task_score, task_gated_score=sc.task_gated,
        gated_score_present=present, task_passed=_task_passed(run, sc.mean_ok, n_pass),
        pass_at_k=at[n_pass], pass_hat_k=hat[n_pass], trial_gating_score=gating,
        trial_passed=sc.trial_passed, total_cost=usage.total_cost, p95_latency_ms=usage.p95,
        _extras={"trial_stats": _trial_stats(run.score, n_pass, traj_failed, run.fixture_miss),
                 "task_cost": usage.task_cost},
    )


def _task_passed(run: SuiteRun, mean_ok: np.ndarray, n_pass: np.ndarray) -> np.ndarray:
    """Section B: under ``mean`` the task gating score against passScore; ``all`` / ``any``
    count trial verdicts (unchanged)."""
    if run.pass_rule == "mean":
        return mean_ok
    if run.pass_rule == "all":
        return n_pass == run.count
    return n_pass > 0


def _gate_condition(run: SuiteRun, sc: _Scores, gated_out: np.ndarray, gagg_present: bool) -> dict[str, Any]:
    """Section B: the gating aggregate against passScore, naming the field the summary
    carries (with no trajectory and no miss there is no gated field, and the gating
    aggregate equals aggregateScore) and the first tasks a gate reached."""
    ps = run.thresholds.pass_score
    read = "gatedAggregateScore" if gagg_present else "aggregateScore"
    shown, ps_shown = sc.compared  # the exact decimals compared, never a rounding of them
    detail = (f"{read} {shown} {'>=' if sc.met else '<'} passScore {ps_shown} "
              f"({run.aggregation} of {run.task_count} task gating scores; aggregateScore {_fmt(sc.aggregate)}")
    gated_tasks = np.flatnonzero(gated_out.any(axis=1))
    if gated_tasks.size:
        names = [run.task_ids[i] for i in gated_tasks[:5]]
        more = "" if gated_tasks.size <= 5 else f" and {gated_tasks.size - 5} more"
        detail += (f"; {gated_tasks.size} task(s) had trials gated to 0 by a failed trajectory or a "
                   f"fixture miss: {', '.join(names)}{more}")
    detail += ")"
    return {"condition": "gatedAggregateScore >= passScore", "value": sc.gated_aggregate, "threshold": ps,
            "met": sc.met, "detail": detail}


class _Usage:
    """The run's cost and latency: per-task and total cost, the p95 trial latency (None
    where some trial did not record the number) and their conditions."""

    def __init__(self, run: SuiteRun) -> None:
        self.cost_known = ~np.isnan(run.cost)
        task_cost, total = _cost_sums(run.cost)
        self.total_cost = total if self.cost_known.all() else None
        self.task_cost = np.where(self.cost_known.all(axis=1), task_cost, np.nan)
        self.lat_known = ~np.isnan(run.latency_ms)
        self.p95 = _p95(run.latency_ms.ravel()) if self.lat_known.all() else None

    def conditions(self, thresholds: Any) -> list[dict[str, Any]]:
        """The cost and latency conditions that have a threshold (section B: unchanged)."""
        cost = _max_condition(
            "totalCost <= maxCost", self.total_cost, thresholds.max_cost,
            unknown=int((~self.cost_known).sum()), limit="maxCost", what="cost",
            shown="totalCost {} {} maxCost {}", exact=False)
        latency = _max_condition(
            "p95LatencyMs <= maxLatencyMs", self.p95, thresholds.max_latency_ms,
            unknown=int((~self.lat_known).sum()), limit="maxLatencyMs", what="latencyMs",
            shown="p95 trial latency {} ms {} maxLatencyMs {}", exact=True)
        return [c for c in (cost, latency) if c is not None]


def _reasons(conditions: list[dict[str, Any]], passed: bool) -> tuple[str, ...]:
    """Why the suite passed (every condition) or not (each failed one)."""
    if passed:
        return ("passed: " + "; ".join(c["detail"] for c in conditions),)
    return tuple("not passed: " + c["detail"] for c in conditions if not c["met"])


def _trial_stats(score: np.ndarray, n_pass: np.ndarray, traj_failed: np.ndarray,
                 miss: np.ndarray) -> dict[str, np.ndarray]:
    """Per task: verdict, trajectory-failure and miss counts, min, max and the sample standard
    deviation of the trial scores (NaN with one trial)."""
    if score.shape[1] > 1:
        std = score.std(axis=1, ddof=1)
        # identical trial scores spread exactly 0 (the mean's rounding would print 1e-17)
        std = np.where(score.max(axis=1) == score.min(axis=1), 0.0, std)
    else:
        std = np.full(score.shape[0], np.nan)
    return {"passed": n_pass, "traj_failed": traj_failed.sum(axis=1), "misses": miss.sum(axis=1),
            "min": score.min(axis=1), "max": score.max(axis=1), "std": std}


def scored_events(summary: EvalSummary) -> list[dict[str, Any]]:
    """Per-trial ``eval.scored`` events (one JSON object each, for a JSONL file).

    Each carries ``type, suite, taskId, trialIndex`` (0-based), ``score`` (the output
    score, unchanged: RFC 0246 section C) and ``passed`` (the trial verdict), plus
    ``cost`` and ``latencyMs`` when the trial recorded them.  No gating field is
    added: the RFC changes no event shape.
    """
    run = summary.run
    out = []
    score, passed = run.score.tolist(), summary.trial_passed.tolist()
    cost, lat = run.cost.tolist(), run.latency_ms.tolist()
    for i, tid in enumerate(run.task_ids):
        for j in range(run.count):
            e: dict[str, Any] = {"type": "eval.scored", "suite": run.suite, "taskId": tid, "trialIndex": j,
                                 "score": score[i][j], "passed": passed[i][j]}
            if not math.isnan(cost[i][j]):
                e["cost"] = cost[i][j]
            if not math.isnan(lat[i][j]):
                e["latencyMs"] = _int_if_whole(lat[i][j])
            out.append(e)
    return out


@cache
def _k_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """pass@k and pass^k for every c in 0..n (exact, so the vectorised path agrees)."""
    at = np.array([pass_at_k(n, c, k) for c in range(n + 1)], dtype=float)
    hat = np.array([pass_hat_k(n, c, k) for c in range(n + 1)], dtype=float)
    return at, hat
