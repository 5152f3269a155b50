"""Checking a summary another host produced for a run: every RFC 0246 violation, listed."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _io
from ..errors import SchemaViolation
from ..stats import pass_at_k, pass_hat_k
from ._gate import validate_summary
from ._model import SuiteRun
from ._read import load_suite_run
from ._scores import _close, _num
from ._summary import EvalSummary, _fmt, summarize_suite

# --------------------------------------------------------------------------- the checker


@dataclass(frozen=True)
class Violation:
    """One way a host's summary breaks RFC 0246 (or misreports the run's numbers).

    Attributes
    ----------
    rule : str
        ``"0246.A"`` (gating value), ``"0246.B"`` (a pass decision), ``"0246.C"``
        (a score zeroed or altered instead of gated), ``"0246.D"`` (a missing or
        stray gated field), ``"0244.B"`` (a reported number that does not follow
        from the trials), ``"shape"`` (the summary breaks the schema or the task
        list does not match the run), ``"events"`` (an ``eval.scored`` event).
    where : str
        ``"suite"``, ``"task refund-1"`` or ``"event task refund-1 trial 0"``.
    field : str
        The field at fault (``"gatedScore"``, ``"trials.meanScore"``).
    message : str
        What is wrong, with the expected and reported numbers.
    """

    rule: str
    where: str
    field: str
    message: str
    expected: Any = None
    reported: Any = None

    def __str__(self) -> str:
        return f"[{self.rule}] {self.where}: {self.field}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "where": self.where, "field": self.field, "message": self.message,
                "expected": self.expected, "reported": self.reported}


def check_summary(run: SuiteRun | Mapping[str, Any] | str | Path,
                  host_summary: Mapping[str, Any] | str | Path, *,
                  events: Iterable[Mapping[str, Any]] | str | Path | None = None) -> list[Violation]:
    """List every RFC 0246 violation in a summary a host produced for ``run``.

    Parameters
    ----------
    run : SuiteRun, mapping or path
        The run the host graded.
    host_summary : mapping or path
        The host's EvalSummary.  Read leniently: only the fields the RFCs define are
        checked (``aggregateScore``, ``gatedAggregateScore``, ``passed``, ``taskCount``,
        ``passedCount``, ``tasks[].taskId / score / gatedScore / passed /
        trials.meanScore / passAtK / passHatK / trialStats``).  ``passAtK`` and
        ``passHatK`` are read at the task level or inside ``trials``.
    events : iterable of mapping or path, optional
        The host's ``eval.scored`` events (or a JSON Lines file of them); each must
        carry the trial's output score (not zeroed) and its verdict.

    Returns
    -------
    list of Violation
        Empty when the summary conforms.

    Examples
    --------
    An unmigrated host passes the RFC's suite example on the ungated aggregate:

    >>> run = {"suite": "ex", "thresholds": {"passScore": 0.7}, "tasks": [
    ...     {"id": "t1", "expected": {"trajectory": {"tools": ["a"]}},
    ...      "trials": [{"score": 0.9, "toolCalls": ["a"]}]},
    ...     {"id": "t2", "expected": {"trajectory": {"tools": ["a"]}},
    ...      "trials": [{"score": 0.9, "toolCalls": ["b"]}]}]}
    >>> old_host = {"suite": "ex", "aggregateScore": 0.9, "passed": True, "tasks": [
    ...     {"taskId": "t1", "score": 0.9, "passed": True},
    ...     {"taskId": "t2", "score": 0.9, "passed": True}]}
    >>> sorted({v.rule for v in check_summary(run, old_host)})
    ['0246.B', '0246.D']
    """
    if not isinstance(run, SuiteRun):
        run = load_suite_run(run)
    if isinstance(host_summary, (str, Path)):
        host = _io.read_document(Path(host_summary))
        hfile = str(host_summary)
    else:
        host, hfile = host_summary, None
    if isinstance(events, (str, Path)):
        events = _io.read_jsonl(events)
    check = _Checker(run, summarize_suite(run))
    if not check.shape(host, hfile):
        return check.out
    by_id = check.task_entries(host)
    host_k = _declared_k(host, run.count)
    for i, tid in enumerate(run.task_ids):
        t = by_id.get(tid)
        if t is None:
            check.add("shape", f"task {tid}", "taskId", "the run has this task but the summary does not report it")
        else:
            check.task(i, t, host_k)
    check.suite(host)
    if events is not None:
        check.out.extend(_check_events(check.ours, events))
    return check.out


def _declared_k(host: Mapping[str, Any], count: int) -> int | None:
    """The k the host declares in its ``trials`` block, when it is one of 1..count."""
    trials = host["trials"] if isinstance(host.get("trials"), Mapping) else {}
    k = trials.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= count:
        return None
    return k


class _Checker:
    """The violations found so far in one host summary, one method per leg of the check."""

    def __init__(self, run: SuiteRun, ours: EvalSummary) -> None:
        self.run, self.ours = run, ours
        self.out: list[Violation] = []

    def add(self, rule: str, where: str, fld: str, msg: str, exp: Any = None, rep: Any = None) -> None:
        self.out.append(Violation(rule, where, fld, msg, exp, rep))

    # ----------------------------------------------------------------------- shape

    def shape(self, host: Any, hfile: str | None) -> bool:
        """The EvalSummary schema; False when the summary is not even an object."""
        try:
            validate_summary(host, file=hfile)
        except SchemaViolation as e:
            where = "suite" if e.record is None else f"task {e.record}"
            self.add("shape", where, e.field or "(document)", f"does not follow the EvalSummary schema: {e.detail}")
            if not isinstance(host, Mapping):
                return False
        return True

    def task_entries(self, host: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
        """The reported task entries by id; an entry without an id, one reported twice and
        one not in the run are shape violations."""
        rep_tasks = host["tasks"] if isinstance(host.get("tasks"), list) else []
        by_id: dict[str, Mapping[str, Any]] = {}
        for i, t in enumerate(rep_tasks):
            if not isinstance(t, Mapping):
                continue
            tid = t.get("taskId", t.get("id"))
            if not isinstance(tid, str):
                self.add("shape", f"tasks[{i}]", "taskId", "a task entry has no taskId")
                continue
            if tid in by_id:
                self.add("shape", f"task {tid}", "taskId", "reported twice")
            by_id[tid] = t
        ids = set(self.run.task_ids)
        for tid in by_id:
            if tid not in ids:
                self.add("shape", f"task {tid}", "taskId", "reported but not in the run")
        return by_id

    # ----------------------------------------------------------------------- per task

    def task(self, i: int, t: Mapping[str, Any], host_k: int | None) -> None:
        where = f"task {self.run.task_ids[i]}"
        trials = t["trials"] if isinstance(t.get("trials"), Mapping) else {}
        self.task_score(i, where, t, trials)
        self.gated_score(i, where, t.get("gatedScore"))
        self.task_passed(i, where, t.get("passed"))
        self.pass_k(i, where, t, trials, host_k)
        stats = t.get("trialStats")
        if isinstance(stats, Mapping):
            _check_stats(self.add, where, stats, self.ours, i)

    def task_score(self, i: int, where: str, t: Mapping[str, Any], trials: Mapping[str, Any]) -> None:
        """Section C: ``score`` and ``trials.meanScore`` stay the mean of the trial scores; a
        host that reports the gated value there zeroed a score instead of gating it."""
        exp_score = float(self.ours.task_score[i])
        exp_gated = float(self.ours.task_gated_score[i])
        rs = _num(t.get("score"))
        if rs is None:
            self.add("shape", where, "score", "missing or not a number", exp_score, t.get("score"))
        elif not _close(rs, exp_score):
            if exp_gated < exp_score and (_close(rs, exp_gated) or rs == 0.0):
                self.add("0246.C", where, "score",
                         f"reports {_fmt(rs)}, the gated value, instead of the output score {_fmt(exp_score)}: "
                         "section C forbids zeroing a reported score; the gate belongs in gatedScore",
                         exp_score, rs)
            else:
                self.add("0244.B", where, "score", f"reports {_fmt(rs)}; the trials give {_fmt(exp_score)}",
                         exp_score, rs)
        ms = trials.get("meanScore")
        if ms is not None:
            msf = _num(ms)
            if msf is None or not _close(msf, exp_score):
                rule = "0246.C" if msf is not None and exp_gated < exp_score and _close(msf, exp_gated) \
                    else "0244.B"
                self.add(rule, where, "trials.meanScore",
                         f"reports {ms!r}; the mean of the trial scores is {_fmt(exp_score)}", exp_score, ms)

    def gated_score(self, i: int, where: str, gs: Any) -> None:
        """Sections A and D: ``gatedScore`` is the mean of the gating scores, present on every
        trajectory task and, on another task, only where it differs from ``score``."""
        has = bool(self.run.has_trajectory[i])
        exp_score = float(self.ours.task_score[i])
        exp_gated = float(self.ours.task_gated_score[i])
        if gs is None:
            if has:
                self.add("0246.D", where, "gatedScore",
                         f"missing on a task with expected.trajectory (must be present whether or not it "
                         f"differs; expected {_fmt(exp_gated)})", exp_gated, None)
            return
        gsf = _num(gs)
        if gsf is None or not _close(gsf, exp_gated):
            self.add("0246.A", where, "gatedScore",
                     f"reports {gs!r}; the mean of the trials' gating scores is {_fmt(exp_gated)}", exp_gated, gs)
        elif not has and _close(exp_gated, exp_score):
            self.add("0246.D", where, "gatedScore",
                     "carried on a task without expected.trajectory where it equals score "
                     "(section D: otherwise omitted)", None, gs)

    def task_passed(self, i: int, where: str, rp: Any) -> None:
        """Section B: under ``mean`` the task gating score decides; ``all`` / ``any`` count verdicts."""
        run = self.run
        exp_passed = bool(self.ours.task_passed[i])
        if not isinstance(rp, bool):
            self.add("shape", where, "passed", "missing or not a boolean", exp_passed, rp)
            return
        if rp == exp_passed:
            return
        if run.pass_rule == "mean":
            why = (f"passRule mean reads the task gating score {_fmt(float(self.ours.task_gated_score[i]))} "
                   f"against passScore {_fmt(run.thresholds.pass_score)}")
        else:
            why = (f"passRule {run.pass_rule} counts trial verdicts: "
                   f"{int(self.ours.trial_passed[i].sum())} of {run.count} passed")
        self.add("0246.B", where, "passed",
                 f"reports {json.dumps(rp)}; {why}, so passed is {json.dumps(exp_passed)}", exp_passed, rp)

    def pass_k(self, i: int, where: str, t: Mapping[str, Any], trials: Mapping[str, Any],
               host_k: int | None) -> None:
        """RFC 0244 B: ``passAtK`` and ``passHatK`` follow from n trials with c passing verdicts;
        without a declared k, any k in 1..n that reproduces the value follows."""
        n = self.run.count
        c = int(self.ours.trial_passed[i].sum())
        k = host_k if host_k is not None else self.run.k
        ks = [k] if host_k is not None else range(1, n + 1)
        for key, fn in (("passAtK", pass_at_k), ("passHatK", pass_hat_k)):
            val = t.get(key, trials.get(key))
            if val is None:
                continue
            if _num(val) is None or not any(_close(float(val), fn(n, c, kk)) for kk in ks):
                self.add("0244.B", where, key,
                         f"reports {val!r}; with n={n} trials of which c={c} passed, k={k} gives "
                         f"{_fmt(fn(n, c, k))}" + ("" if host_k is not None else
                                                   " (and no k in 1..n reproduces it)"),
                         fn(n, c, k), val)

    # ----------------------------------------------------------------------- the suite

    def suite(self, host: Mapping[str, Any]) -> None:
        self.aggregate(_num(host.get("aggregateScore")), host.get("aggregateScore"))
        self.gated_aggregate(host.get("gatedAggregateScore"))
        self.suite_passed(host.get("passed"))
        self.counts(host)

    def aggregate(self, agg: float | None, reported: Any) -> None:
        """Section C: ``aggregateScore`` is the aggregation of the task scores, unchanged."""
        ours, run = self.ours, self.run
        if agg is None:
            self.add("shape", "suite", "aggregateScore", "missing or not a number", ours.aggregate_score, reported)
        elif not _close(agg, ours.aggregate_score):
            if ours.gated_aggregate_score < ours.aggregate_score and _close(agg, ours.gated_aggregate_score):
                self.add("0246.C", "suite", "aggregateScore",
                         f"reports {_fmt(agg)}, the gated aggregate, instead of the aggregation of task scores "
                         f"{_fmt(ours.aggregate_score)} (section C: aggregateScore is unchanged)",
                         ours.aggregate_score, agg)
            else:
                self.add("0244.B", "suite", "aggregateScore",
                         f"reports {_fmt(agg)}; the {run.aggregation} of the task scores is "
                         f"{_fmt(ours.aggregate_score)}", ours.aggregate_score, agg)

    def gated_aggregate(self, gagg: Any) -> None:
        """Sections A and D: ``gatedAggregateScore`` is the aggregation of the task gating
        scores, present whenever a task has expected.trajectory, absent on a suite with no
        trajectory and no fixture miss (with a miss, a host may carry it)."""
        ours, run = self.ours, self.run
        has = run.has_trajectory
        if gagg is None:
            if has.any():
                self.add("0246.D", "suite", "gatedAggregateScore",
                         f"missing although {int(has.sum())} task(s) have expected.trajectory (expected "
                         f"{_fmt(ours.gated_aggregate_score)})", ours.gated_aggregate_score, None)
            return
        g = _num(gagg)
        # section D: only a suite with no trajectory *and no fixture miss* carries neither field
        stray = not ours.gated_aggregate_present and not run.fixture_miss.any()
        if stray and g is not None and _close(g, ours.gated_aggregate_score):
            self.add("0246.D", "suite", "gatedAggregateScore",
                     "carried on a suite with no expected.trajectory and no gated task (section D: a suite "
                     "with no trajectory and no fixture miss carries neither field)", None, gagg)
        elif g is None or not _close(g, ours.gated_aggregate_score):
            self.add("0246.A", "suite", "gatedAggregateScore",
                     f"reports {gagg!r}; the {run.aggregation} of the task gating scores is "
                     f"{_fmt(ours.gated_aggregate_score)}", ours.gated_aggregate_score, gagg)

    def suite_passed(self, rp: Any) -> None:
        """Section B: the suite passes on the gating aggregate and the cost and latency conditions."""
        if not isinstance(rp, bool):
            self.add("shape", "suite", "passed", "missing or not a boolean", self.ours.passed, rp)
        elif rp != self.ours.passed:
            self.add("0246.B", "suite", "passed", f"reports {json.dumps(rp)}; {'; '.join(self.ours.reasons)}",
                     self.ours.passed, rp)

    def counts(self, host: Mapping[str, Any]) -> None:
        """``taskCount``, ``passedCount`` and ``totalCost`` follow from the run."""
        ours = self.ours
        for key, exp in (("taskCount", self.run.task_count), ("passedCount", ours.passed_count)):
            val = host.get(key)
            if val is not None and val != exp:
                self.add("0244.B" if key == "passedCount" else "shape", "suite", key,
                         f"reports {val!r}; expected {exp}", exp, val)
        tc = _num(host.get("totalCost", host.get("totalCostUsd")))
        if tc is not None and ours.total_cost is not None and not _close(tc, ours.total_cost):
            self.add("0244.B", "suite", "totalCost", f"reports {_fmt(tc)}; the trials cost {_fmt(ours.total_cost)}",
                     ours.total_cost, tc)


def _check_stats(v: Any, where: str, stats: Mapping[str, Any], ours: EvalSummary, i: int) -> None:
    ts = ours._extras["trial_stats"]
    n = ours.run.count
    expected = {"count": n, "passedCount": int(ts["passed"][i]), "minScore": float(ts["min"][i]),
                "maxScore": float(ts["max"][i])}
    if n > 1:
        expected["stdDev"] = float(ts["std"][i])
    for key, exp in expected.items():
        if key in stats and stats[key] is not None:
            val = _num(stats[key])
            if key == "stdDev" and val is not None and _close(val, exp * math.sqrt((n - 1) / n)):
                continue  # a population standard deviation (n rather than n - 1) also follows
            if val is None or not _close(val, float(exp)):
                v("0244.B", where, f"trialStats.{key}", f"reports {stats[key]!r}; the trials give "
                  f"{_fmt(float(exp))}", exp, stats[key])


def _check_events(ours: EvalSummary, events: Iterable[Mapping[str, Any]]) -> list[Violation]:
    run = ours.run
    out: list[Violation] = []
    index = {tid: i for i, tid in enumerate(run.task_ids)}
    seen: dict[tuple[int, int], int] = {}
    per_task: dict[int, int] = {}
    for e in events:
        if not isinstance(e, Mapping) or e.get("type", "eval.scored") != "eval.scored":
            continue
        tid = e.get("taskId")
        if tid not in index:
            out.append(Violation("events", f"event task {tid}", "taskId", "not a task of the run"))
            continue
        i = index[tid]
        j = e.get("trialIndex")  # 0-based; without it, events are taken in order per task
        if not isinstance(j, int) or isinstance(j, bool):
            j = per_task.get(i, 0)
        per_task[i] = per_task.get(i, 0) + 1
        if not 0 <= j < run.count:
            out.append(Violation("events", f"event task {tid}", "trialIndex",
                                 f"{j} is outside 0..{run.count - 1}"))
            continue
        seen[(i, j)] = seen.get((i, j), 0) + 1
        where = f"event task {tid} trial {j}"
        s = _num(e.get("score"))
        exp_s = float(run.score[i, j])
        if s is None or not _close(s, exp_s):
            rule = "0246.C" if s is not None and s == 0.0 and ours.trial_gating_score[i, j] == 0.0 else "events"
            out.append(Violation(rule, where, "score",
                                 f"reports {e.get('score')!r}; eval.scored.score stays the output score "
                                 f"{_fmt(exp_s)}", exp_s, e.get("score")))
        p = e.get("passed")
        exp_p = bool(ours.trial_passed[i, j])
        if p is not exp_p:
            out.append(Violation("0246.B" if p is True else "events", where, "passed",
                                 f"reports {json.dumps(p)}; the trial verdict is {json.dumps(exp_p)}",
                                 exp_p, p))
    for i, tid in enumerate(run.task_ids):
        for j in range(run.count):
            if seen.get((i, j), 0) == 0:
                out.append(Violation("events", f"event task {tid} trial {j}", "eval.scored",
                                     "no eval.scored event for this trial"))
            elif seen[(i, j)] > 1:
                out.append(Violation("events", f"event task {tid} trial {j}", "eval.scored",
                                     f"{seen[(i, j)]} eval.scored events for one trial"))
    return out
