"""Reading a suite run: JSON or YAML documents, mappings and long frames, validated with
errors naming the task and field."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .. import _io
from .._validation import as_frame, plain
from ..errors import SchemaViolation
from ._model import (
    AGGREGATIONS,
    MATCH_MODES,
    PASS_RULES,
    SuiteRun,
    SuiteThresholds,
    TrajectorySpec,
    _tool_name,
)

_TOP_KEYS = {"suite", "suiteId", "version", "suiteVersion", "description", "name", "metadata",
             "modes", "targetAgentId", "allowedModels", "evaluatedModelClass", "aggregation",
             "thresholds", "trials", "tasks"}
_THRESHOLD_KEYS = {"passScore", "maxCost", "maxCostUsd", "maxLatencyMs", "maxP95LatencyMs"}
_TRIALS_KEYS = {"count", "passRule", "k"}
_TASK_KEYS = {"id", "taskId", "type", "kind", "expected", "trials", "input", "description", "name",
              "metadata", "fixtures"}
_TRIAL_KEYS = {"score", "toolCalls", "trajectoryMatched", "fixtureMiss", "cost", "costUsd",
               "latencyMs", "trialIndex", "metadata"}
_TRAJ_KEYS = {"match", "tools", "forbidden"}
_SHORT_TASK_KEYS = _TASK_KEYS | _TRIAL_KEYS


def _norm_key(k: str) -> str:
    return "".join(ch for ch in k.lower() if ch.isalnum())


def _near_miss(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` looks like a misspelling of, if any."""
    import difflib

    norm = {_norm_key(k): k for k in known}
    nk = _norm_key(key)
    if nk in norm:
        return norm[nk]
    close = difflib.get_close_matches(nk, list(norm), n=1, cutoff=0.8)
    return norm[close[0]] if close else None


class _Ctx:
    """Names the file for every error raised while reading one run."""

    def __init__(self, file: str | None) -> None:
        self.file = file

    def fail(self, message: str, *, record: Any = None, field: str | None = None) -> SchemaViolation:
        return SchemaViolation(message, file=self.file, record=record, field=field)

    def keys(self, obj: Mapping[str, Any], allowed: set[str], *, record: Any, where: str,
             lenient: bool = False) -> None:
        """Refuse unknown keys; ``lenient`` refuses only near-misses of known keys.

        Lenient objects (the document, tasks, trials) may carry extra information
        (``output``, ``notes``); a misspelt decision field (``fixturemiss``,
        ``tool_calls``, ``scores``) is refused either way, since ignoring it would
        silently change a gate.
        """
        if obj.keys() <= allowed:
            return
        extra = [k for k in obj if k not in allowed and not str(k).startswith("x-")]
        if lenient:
            extra = [k for k in extra if _near_miss(str(k), allowed)]
            if extra:
                k = extra[0]
                raise self.fail(f"unknown field; did you mean `{_near_miss(str(k), allowed)}`?",
                                record=record, field=f"{where}{k}")
        if extra:
            raise self.fail(
                f"unknown field(s) {sorted(map(str, extra))}; allowed: {', '.join(sorted(allowed))} "
                "(and `x-` extensions)", record=record, field=f"{where}{extra[0]}")

    def mapping(self, v: Any, *, record: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(v, Mapping):
            raise self.fail(f"must be an object; got {type(v).__name__}", record=record, field=field)
        return v

    def unit(self, v: Any, *, record: Any, field: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(f"must be a number in [0, 1]; got {v!r}", record=record, field=field)
        f = float(v)
        if math.isnan(f):
            raise self.fail("is NaN; a score must be a number in [0, 1]", record=record, field=field)
        if not 0.0 <= f <= 1.0:
            raise self.fail(f"must be in [0, 1]; got {f!r}", record=record, field=field)
        return f

    def nonneg(self, v: Any, *, record: Any, field: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(float(v)) \
                or not 0.0 <= float(v) < math.inf:
            raise self.fail(f"must be a finite number >= 0; got {v!r}", record=record, field=field)
        return float(v)

    def boolean(self, v: Any, *, record: Any, field: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(f"must be true or false; got {v!r}", record=record, field=field)
        return v

    def string(self, v: Any, *, record: Any, field: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(f"must be a non-empty string; got {v!r}", record=record, field=field)
        return v


def load_suite_run(source: str | Path | Mapping[str, Any], *, file: str | None = None) -> SuiteRun:
    """Read and validate a suite run (JSON or YAML file, or an already-parsed mapping).

    Parameters
    ----------
    source : path or mapping
        A ``.json`` / ``.yaml`` / ``.yml`` file (YAML read with ``yaml.safe_load``), or
        the parsed document.  The format is ``evaltk/schemas/suite-run.schema.json``.
    file : str, optional
        Name to use in error messages when ``source`` is a mapping.

    Returns
    -------
    SuiteRun

    Raises
    ------
    UnreadableInput
        The file is missing, not UTF-8, or not JSON / YAML.
    SchemaViolation
        The document breaks the format; the message names the file, the task id
        (``record``) and the field (``trials[2].score``).

    Notes
    -----
    A JSON file is read column-wise (Arrow's JSON reader after the nesting screen of
    ``evaltk._io``; no Python object per trial, every rule checked on whole columns).
    Whenever that reader cannot decide (a ``null`` where the format tells a null key
    from an absent one, values of two types under one key, object tool calls, a
    ``\\u`` escape where it matters, a ``NaN``, a bad record) the document is read by
    the per-record reader instead, which gives the same run and names what is wrong;
    ``tests/suite/test_read_columnar.py`` holds the two to the same result.

    Examples
    --------
    >>> run = load_suite_run({"suite": "demo", "thresholds": {"passScore": 0.7},
    ...     "tasks": [{"id": "t1", "trials": [{"score": 0.9}]}]})
    >>> run.count, run.pass_rule, run.task_ids
    (1, 'mean', ('t1',))
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        file = str(path)
        if path.suffix.lower() not in (".yaml", ".yml"):
            fast = _columnar_run(_io.read_bytes(path), file)
            if fast is not None:
                return fast
        doc = _io.read_document(path)  # the reference reader: it names whatever is wrong
    else:
        doc = source
    ctx = _Ctx(file)
    doc = ctx.mapping(doc, record=None, field="(document)")
    ctx.keys(doc, _TOP_KEYS, record=None, where="", lenient=True)
    suite, version = _read_names(ctx, doc, file)
    thresholds = _read_thresholds(ctx, doc.get("thresholds"))
    trials = _read_trials_block(ctx, doc.get("trials"))
    aggregation = _choice(ctx, doc.get("aggregation", "mean"), AGGREGATIONS, "aggregation",
                          field="aggregation")
    tasks = _read_tasks(ctx, doc.get("tasks"), trials.count)
    return _suite_run(file, suite, version, thresholds, trials, aggregation, tasks)


def _suite_run(file: Any, suite: Any, version: Any, thresholds: Any, trials: Any, aggregation: Any,
               tasks: Any) -> SuiteRun:
    """The :class:`SuiteRun` of a read document: one assembly for the per-record and the columnar reader."""
    return SuiteRun(suite=suite, version=version, thresholds=thresholds, count=trials.count,
                    pass_rule=trials.pass_rule, k=trials.k, aggregation=aggregation,
                    task_ids=tuple(tasks.ids), task_types=tuple(tasks.types),
                    trajectories=tuple(tasks.trajectories), score=tasks.score,
                    trajectory_matched=tasks.matched, fixture_miss=tasks.miss, cost=tasks.cost,
                    latency_ms=tasks.latency_ms, source=file)


# --------------------------------------------------------------------------- the document's header


def _read_names(ctx: _Ctx, doc: Mapping[str, Any], file: str | None) -> tuple[str, str | None]:
    """The suite's name and version; a name is for reading only, so without one the file's
    stem stands in."""
    suite = doc.get("suite", doc.get("suiteId", doc.get("name")))
    if suite is None:
        suite = Path(file).stem if file else "unnamed-suite"
    suite = ctx.string(suite, record=None, field="suite")
    version = doc.get("version", doc.get("suiteVersion"))
    if version is not None:
        version = ctx.string(version, record=None, field="version")
    return suite, version


def _read_thresholds(ctx: _Ctx, th: Any) -> SuiteThresholds:
    """``thresholds``: ``passScore`` required in [0, 1]; ``maxCost`` and ``maxLatencyMs``
    (or their aliases) optional, finite and >= 0."""
    th = ctx.mapping(th, record=None, field="thresholds")
    ctx.keys(th, _THRESHOLD_KEYS, record=None, where="thresholds.")
    if "passScore" not in th:
        raise ctx.fail("is required (the bar the gating aggregate must reach)", field="thresholds.passScore")
    pass_score = ctx.unit(th["passScore"], record=None, field="thresholds.passScore")
    max_cost = th.get("maxCost", th.get("maxCostUsd"))
    if max_cost is not None:
        max_cost = ctx.nonneg(max_cost, record=None, field="thresholds.maxCost")
    max_lat = th.get("maxLatencyMs", th.get("maxP95LatencyMs"))
    if max_lat is not None:
        max_lat = ctx.nonneg(max_lat, record=None, field="thresholds.maxLatencyMs")
    return SuiteThresholds(pass_score, max_cost, max_lat)


# --------------------------------------------------------------------------- the trials block


class _TrialsBlock(NamedTuple):
    """``trials``: trials per task, the pass rule and the k of pass@k / pass^k."""

    count: int  # type: ignore[assignment]  # the field shadows tuple.count (unused here)
    pass_rule: str
    k: int


def _read_trials_block(ctx: _Ctx, block: Any) -> _TrialsBlock:
    """``trials``: ``count`` an integer >= 1 (default 1), ``passRule`` one of
    :data:`PASS_RULES` (default ``mean``), ``k`` in [1, count] (default ``count``); a run
    without the block has one trial per task under ``mean``."""
    if block is None:
        return _TrialsBlock(1, "mean", 1)
    block = ctx.mapping(block, record=None, field="trials")
    ctx.keys(block, _TRIALS_KEYS, record=None, where="trials.")
    count = block.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ctx.fail(f"must be an integer >= 1; got {count!r}", field="trials.count")
    pass_rule = _choice(ctx, block.get("passRule", "mean"), PASS_RULES, "pass rule", field="trials.passRule")
    return _TrialsBlock(count, pass_rule, _k(ctx, block.get("k"), count, field="trials.k"))


def _choice(ctx: _Ctx, value: Any, allowed: tuple[str, ...], what: str, *, field: str,
            record: Any = None) -> str:
    """``value`` when it is one of ``allowed`` (a pass rule, an aggregation, a match mode)."""
    if value not in allowed:
        raise ctx.fail(f"unknown {what} {value!r}; allowed: {', '.join(allowed)}", record=record, field=field)
    return value


def _k(ctx: _Ctx, k: Any, count: int, *, field: str) -> int:
    """The k of pass@k and pass^k: an integer in [1, count], ``count`` when not given."""
    if k is None:
        return count
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= count:
        raise ctx.fail(f"must be an integer in [1, count] = [1, {count}]; got {k!r}", field=field)
    return k


# --------------------------------------------------------------------------- tasks and trials


class _Tasks:
    """The tasks read so far, column-wise: one row per task, one column per trial."""

    def __init__(self, t: int, count: int) -> None:
        self.score = np.empty((t, count))
        self.matched = np.ones((t, count), dtype=bool)
        self.miss = np.zeros((t, count), dtype=bool)
        self.cost = np.full((t, count), np.nan)
        self.latency_ms = np.full((t, count), np.nan)
        self.ids: list[str] = []
        self.types: list[str | None] = []
        self.trajectories: list[TrajectorySpec | None] = []
        self.seen: dict[str, int] = {}


def _read_tasks(ctx: _Ctx, tasks: Any, count: int) -> _Tasks:
    """Every task in order: its id, type and expected trajectory, and its ``count`` trials."""
    if not isinstance(tasks, list) or not tasks:
        raise ctx.fail("must be a non-empty list of tasks", field="tasks")
    out = _Tasks(len(tasks), count)
    for i, task in enumerate(tasks):
        task = ctx.mapping(task, record=f"tasks[{i}]", field="(task)")
        tid = _task_id(ctx, task, i, out.seen)
        _task_keys(ctx, task, tid)
        ttype = task.get("type", task.get("kind"))
        if ttype is not None and (not isinstance(ttype, str) or not ttype):
            raise ctx.fail(f"must be a non-empty string (golden, rubric, ...); got {ttype!r}",
                           record=tid, field="type")
        spec = _expected_trajectory(ctx, task.get("expected"), tid)
        for j, trial in enumerate(_task_trials(ctx, task, tid, count)):
            _read_trial(ctx, out, i, j, trial, tid, spec)
        out.ids.append(tid)
        out.types.append(ttype)
        out.trajectories.append(spec)
    return out


def _task_id(ctx: _Ctx, task: Mapping[str, Any], i: int, seen: dict[str, int]) -> str:
    """A non-empty string ``id`` (or ``taskId``), unique in the run."""
    tid = task.get("id", task.get("taskId"))
    if not isinstance(tid, str) or not tid:
        raise ctx.fail(f"every task needs a non-empty string `id`; got {tid!r}", record=f"tasks[{i}]",
                       field="id")
    if tid in seen:
        raise ctx.fail(f"duplicate task id (also tasks[{seen[tid]}])", record=tid, field="id")
    seen[tid] = i
    return tid


def _task_keys(ctx: _Ctx, task: Mapping[str, Any], tid: str) -> None:
    """A task carries either ``trials`` or its single trial's fields, and no misspelt field."""
    if "trials" in task:
        both = sorted(k for k in _TRIAL_KEYS if k in task and k != "metadata")
        if both:
            raise ctx.fail("a task carries either `trials` or its single trial's fields, not both",
                           record=tid, field=both[0])
        ctx.keys(task, _TASK_KEYS, record=tid, where="", lenient=True)
    else:
        ctx.keys(task, _SHORT_TASK_KEYS, record=tid, where="", lenient=True)


def _expected_trajectory(ctx: _Ctx, expected: Any, tid: str) -> TrajectorySpec | None:
    """``expected.trajectory``, or None for a task without one; a null trajectory would
    silently un-gate the task, so it is refused with what was meant instead."""
    if expected is None:
        return None
    expected = ctx.mapping(expected, record=tid, field="expected")
    if "trajectory" in expected and expected["trajectory"] is None:
        raise ctx.fail("is null: omit `trajectory` for a task without one, or give the spec",
                       record=tid, field="expected.trajectory")
    traj = expected.get("trajectory")
    return None if traj is None else _parse_trajectory(ctx, traj, tid)


def _task_trials(ctx: _Ctx, task: Mapping[str, Any], tid: str, count: int) -> list[Any]:
    """The task's trials: ``trials``, or the task's own fields as its single trial; exactly
    ``count`` of them (a missing or extra trial is not a smaller or larger denominator)."""
    trials = task.get("trials")
    if trials is None:
        if "score" not in task and task.get("fixtureMiss") is not True:
            raise ctx.fail("every task needs `trials` (a list of trial records)", record=tid, field="trials")
        trials = [{key: task[key] for key in _TRIAL_KEYS if key in task}]
    if not isinstance(trials, list):
        raise ctx.fail(f"must be a list of trials; got {type(trials).__name__}", record=tid, field="trials")
    if len(trials) != count:
        what = "no trials" if not trials else f"{len(trials)} trial(s)"
        raise ctx.fail(
            f"has {what} but trials.count is {count}: every (task, trial) slot must be present, "
            "a missing or extra trial is not a smaller or larger denominator", record=tid, field="trials")
    return trials


def _read_trial(ctx: _Ctx, out: _Tasks, i: int, j: int, trial: Any, tid: str,
                spec: TrajectorySpec | None) -> None:
    """Trial ``j`` of task ``i`` into the columns.  Well-formed trials take the fast checks;
    anything unusual goes through the checks that build the error message (they name the
    task and the field)."""
    if trial.__class__ is not dict or not trial.keys() <= _TRIAL_KEYS:
        trial = ctx.mapping(trial, record=tid, field=f"trials[{j}]")
        ctx.keys(trial, _TRIAL_KEYS, record=tid, where=f"trials[{j}].", lenient=True)
    out.score[i, j] = _trial_score(ctx, trial, tid, j)
    fm = trial.get("fixtureMiss")
    if fm is True:
        out.miss[i, j] = True
    elif fm is not None and fm is not False:
        ctx.boolean(fm, record=tid, field=f"trials[{j}].fixtureMiss")
    c = trial.get("cost")
    if c is None:
        c = trial.get("costUsd")
    if c is not None:
        out.cost[i, j] = c if (c.__class__ is float and 0.0 <= c < math.inf) else \
            ctx.nonneg(c, record=tid, field=f"trials[{j}].cost")
    lt = trial.get("latencyMs")
    if lt is not None:
        out.latency_ms[i, j] = lt if (lt.__class__ is int and lt >= 0) else \
            ctx.nonneg(lt, record=tid, field=f"trials[{j}].latencyMs")
    if not _trial_trajectory(ctx, trial, tid, j, spec):
        out.matched[i, j] = False


def _trial_score(ctx: _Ctx, trial: Mapping[str, Any], tid: str, j: int) -> float:
    """The output score in [0, 1]; a trial that failed closed on a fixture miss without a
    score scores 0 (RFC 0244 D as amended)."""
    sc = trial.get("score", _MISSING)
    if sc.__class__ is float and 0.0 <= sc <= 1.0:
        return sc
    if (sc is _MISSING or sc is None) and trial.get("fixtureMiss") is True:
        return 0.0
    if sc is _MISSING:
        raise ctx.fail("is required", record=tid, field=f"trials[{j}].score")
    return ctx.unit(sc, record=tid, field=f"trials[{j}].score")


def _trial_trajectory(ctx: _Ctx, trial: Mapping[str, Any], tid: str, j: int,
                      spec: TrajectorySpec | None) -> bool:
    """Whether the trial's trajectory matched (True on a task without one).  The calls are
    matched against ``spec``; the host's ``trajectoryMatched`` may stand in for them, and
    with both present the trajectory matched only if both say so (a gate fails safe).  A
    fixture-miss trial with neither needs no path: its gating score is 0 whatever its path
    (RFC 0246 A), so it is not counted as a trajectory failure."""
    host = trial.get("trajectoryMatched")
    if host is not None and host.__class__ is not bool:
        ctx.boolean(host, record=tid, field=f"trials[{j}].trajectoryMatched")
    calls = trial.get("toolCalls")
    if calls is not None and calls.__class__ is not list:
        raise ctx.fail(f"must be a list of tool calls; got {type(calls).__name__}", record=tid,
                       field=f"trials[{j}].toolCalls")
    if spec is None:
        if calls:
            _check_tool_names(ctx, calls, tid, j)
        return True
    if calls is None:
        if host is None and trial.get("fixtureMiss") is True:
            return True  # failed closed before any path: gated to 0 by the miss, not a trajectory failure
        if host is None:
            raise ctx.fail("the task has expected.trajectory, so each trial needs `toolCalls` or the "
                           "host's `trajectoryMatched`", record=tid, field=f"trials[{j}].toolCalls")
        return host
    try:
        ok = _match_cached(spec, calls)
    except ValueError as e:
        raise ctx.fail(str(e), record=tid, field=f"trials[{j}].toolCalls") from None
    return ok and host is not False


def _check_tool_names(ctx: _Ctx, calls: list[Any], tid: str, j: int) -> None:
    """Every call of a task without a trajectory is still a tool name or an object with one."""
    for c in calls:
        if c.__class__ is not str:
            try:
                _tool_name(c, where="toolCalls")
            except ValueError as e:
                raise ctx.fail(str(e), record=tid, field=f"trials[{j}].toolCalls") from None


_MISSING = object()
_MATCH_CACHE: dict[tuple[TrajectorySpec, tuple[str, ...]], bool] = {}


def _match_cached(spec: TrajectorySpec, calls: list[Any]) -> bool:
    """:meth:`TrajectorySpec.matches`, memoised on (spec, calls) for string calls."""
    if not all(c.__class__ is str for c in calls):
        return spec.matches(calls)
    key = (spec, tuple(calls))
    hit = _MATCH_CACHE.get(key)
    if hit is None:
        if len(_MATCH_CACHE) > 100_000:
            _MATCH_CACHE.clear()
        hit = _MATCH_CACHE[key] = spec.matches(calls)
    return hit


def suite_run_from_frame(
    trials: pd.DataFrame,
    *,
    suite: str,
    pass_score: float,
    pass_rule: str = "mean",
    k: int | None = None,
    aggregation: str = "mean",
    max_cost: float | None = None,
    max_latency_ms: float | None = None,
    version: str | None = None,
    task: str = "task_id",
    trial: str = "trial",
    score: str = "score",
    trajectory_matched: str = "trajectory_matched",
    fixture_miss: str = "fixture_miss",
    cost: str = "cost",
    latency_ms: str = "latency_ms",
) -> SuiteRun:
    """Build a suite run from a tidy trial table (one row per task and trial), vectorised.

    The columnar way in for large runs (a Parquet file, a warehouse query).  The table
    carries the trajectory *verdicts*, not the specifications: ``trajectory_matched``
    is True / False on every trial of a task with an expected trajectory and missing
    (``<NA>`` / None) on every trial of a task without one.  ``SuiteRun.to_frame()``
    gives the same table back.

    Parameters
    ----------
    trials : DataFrame
        Columns ``task`` and ``trial`` (unique together), ``score`` in [0, 1]; optional
        ``trajectory_matched`` (nullable bool), ``fixture_miss`` (bool, default False),
        ``cost`` and ``latency_ms`` (>= 0, NaN where not recorded).
    suite, pass_score, pass_rule, k, aggregation, max_cost, max_latency_ms, version
        As in the run file (``k`` defaults to the trial count).
    task, trial, score, trajectory_matched, fixture_miss, cost, latency_ms : str
        Column names.

    Raises
    ------
    SchemaViolation
        A bad value or shape, naming the task, the trial and the column: a score
        outside [0, 1] or missing, a task whose trial count differs from the others,
        a repeated (task, trial), a task mixing known and missing trajectory verdicts.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"task_id": ["a", "a", "b", "b"], "trial": [0, 1, 0, 1],
    ...                   "score": [0.9, 0.9, 0.9, 0.9],
    ...                   "trajectory_matched": [True, True, False, False]})
    >>> from evaltk.suite import summarize_suite
    >>> s = summarize_suite(suite_run_from_frame(t, suite="demo", pass_score=0.7))
    >>> s.aggregate_score, s.gated_aggregate_score, s.passed
    (0.9, 0.45, False)
    """
    ctx = _Ctx("(table)")
    _check_table(ctx, trials, (task, trial, score))
    ps = ctx.unit(pass_score, record=None, field="pass_score")
    pass_rule = _choice(ctx, pass_rule, PASS_RULES, "pass rule", field="pass_rule")
    aggregation = _choice(ctx, aggregation, AGGREGATIONS, "aggregation", field="aggregation")
    thresholds = SuiteThresholds(ps, _optional_nonneg(ctx, max_cost, field="max_cost"),
                                 _optional_nonneg(ctx, max_latency_ms, field="max_latency_ms"))
    grid = _TrialGrid(ctx, trials, task, trial)
    score_arr = grid.scores(score)
    miss = grid.fixture_miss(fixture_miss)
    verdicts = grid.trajectory_verdicts(trajectory_matched)
    k = _k(ctx, k, grid.count, field="k")
    t = len(grid.ids)
    return SuiteRun(suite=ctx.string(suite, record=None, field="suite"), version=version,
                    thresholds=thresholds, count=grid.count, pass_rule=pass_rule, k=k,
                    aggregation=aggregation, task_ids=tuple(grid.ids), task_types=(None,) * t,
                    trajectories=(None,) * t, score=score_arr, trajectory_matched=verdicts.matched,
                    fixture_miss=miss, cost=grid.optional_float(cost), latency_ms=grid.optional_float(latency_ms),
                    source=None, trajectory_declared=verdicts.declared)


def _check_table(ctx: _Ctx, trials: Any, required: tuple[str, ...]) -> None:
    """A DataFrame with rows and the task, trial and score columns."""
    trials = as_frame(trials)
    if not isinstance(trials, pd.DataFrame):
        raise TypeError(f"`trials` must be a pandas DataFrame; got {type(trials).__name__}.")
    for col in required:
        if col not in trials.columns:
            raise ctx.fail(f"column is missing; columns: {', '.join(map(str, trials.columns))}", field=col)
    if trials.empty:
        raise ctx.fail("the table has no rows", field=required[0])


def _optional_nonneg(ctx: _Ctx, v: Any, *, field: str) -> float | None:
    return None if v is None else ctx.nonneg(v, record=None, field=field)


class _Verdicts(NamedTuple):
    """The table's trajectory verdicts: per trial, matched (True where the task has no
    expected trajectory); per task, whether it declares one."""

    matched: np.ndarray
    declared: np.ndarray


def _is_bool(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_))


class _TrialGrid:
    """A trial table sorted into the run's grid: tasks in order of first appearance, trials
    sorted within each, every task with the same number of trials and no (task, trial)
    twice.  Each column is then read into a ``(tasks, count)`` array, an error naming the
    first bad row's task and trial."""

    def __init__(self, ctx: _Ctx, trials: pd.DataFrame, task: str, trial: str) -> None:
        self.ctx, self.trial = ctx, trial
        codes, uniques = pd.factorize(trials[task], sort=False)  # codes in order of first appearance
        if (codes < 0).any():
            raise ctx.fail("a row has no task id", field=task)
        self.ids = [str(x) for x in np.asarray(uniques, dtype=object)]
        try:
            order = np.lexsort((trials[trial].to_numpy(), codes))
        except TypeError:
            raise ctx.fail("trial labels must be comparable (all numbers or all strings)", field=trial) from None
        self.frame = frame = trials.iloc[order]
        self.codes = codes = codes[order]
        sizes = np.bincount(codes)
        self.count = count = int(sizes[0])
        bad = np.flatnonzero(sizes != count)
        if bad.size:
            i = int(bad[0])
            raise ctx.fail(f"has {int(sizes[i])} trial(s) but task {self.ids[0]!r} has {count}: every task "
                           "needs the same number of trials (no missing or extra trial)", record=self.ids[i],
                           field=trial)
        dup = frame.duplicated([task, trial]).to_numpy()
        if dup.any():
            r = int(np.flatnonzero(dup)[0])
            raise ctx.fail(f"trial {plain(frame[trial].iloc[r])!r} appears twice", record=self.ids[int(codes[r])],
                           field=trial)
        self.shape = (len(self.ids), count)

    def _fail_at(self, mask: np.ndarray, message: str, *, field: str) -> SchemaViolation:
        """The error for the first row in ``mask``; ``message`` may name its ``{value}``."""
        r = int(np.flatnonzero(mask)[0])
        value = plain(self.frame[field].iloc[r])
        return self.ctx.fail(f"trial {plain(self.frame[self.trial].iloc[r])!r}: " + message.format(value=value),
                             record=self.ids[int(self.codes[r])], field=field)

    def scores(self, col: str) -> np.ndarray:
        """Output scores: numbers in [0, 1], never booleans or missing."""
        raw = self.frame[col]
        vals = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        is_bool = raw.map(_is_bool).to_numpy() if raw.dtype == object else np.full(len(raw), raw.dtype == bool)
        bad = np.isnan(vals) | (vals < 0) | (vals > 1) | is_bool
        if bad.any():
            raise self._fail_at(bad, "must be a number in [0, 1]; got {value!r}", field=col)
        return vals.reshape(self.shape)

    def optional_float(self, col: str) -> np.ndarray:
        """A cost or latency column: finite numbers >= 0, NaN where not recorded (all NaN
        without the column)."""
        if col not in self.frame.columns:
            return np.full(self.shape, np.nan)
        x = pd.to_numeric(self.frame[col], errors="coerce").to_numpy(dtype=float)
        bad = (self.frame[col].notna().to_numpy() & np.isnan(x)) | (x < 0) | np.isinf(x)
        if bad.any():
            raise self._fail_at(bad, "must be a finite number >= 0; got {value!r}", field=col)
        return x.reshape(self.shape)

    def fixture_miss(self, col: str) -> np.ndarray:
        """Booleans; False without the column."""
        if col not in self.frame.columns:
            return np.zeros(self.shape, dtype=bool)
        fm = self.frame[col]
        ok = np.ones(len(fm), dtype=bool) if fm.dtype == bool else fm.map(_is_bool).to_numpy()
        if not ok.all():
            raise self._fail_at(~ok, "must be true or false", field=col)
        return fm.to_numpy(dtype=bool).reshape(self.shape)

    def trajectory_verdicts(self, col: str) -> _Verdicts:
        """True / False on every trial of a task with an expected trajectory, missing on
        every trial of a task without one; no column means no task has one."""
        t, _ = self.shape
        if col not in self.frame.columns:
            return _Verdicts(np.ones(self.shape, dtype=bool), np.zeros(t, dtype=bool))
        tm = self.frame[col]
        known = tm.notna().to_numpy().reshape(self.shape)
        mixed = known.any(axis=1) & ~known.all(axis=1)
        if mixed.any():
            raise self.ctx.fail("mixes known and missing trajectory verdicts: a task either has an expected "
                                "trajectory (every trial True/False) or not (every trial missing)",
                                record=self.ids[int(np.flatnonzero(mixed)[0])], field=col)
        if tm.dtype == bool or isinstance(tm.dtype, pd.BooleanDtype):
            ok = np.ones(len(tm), dtype=bool)
        else:
            ok = np.array([x is None or x is pd.NA or _is_bool(x) or (isinstance(x, float) and math.isnan(x))
                           for x in tm.to_numpy(dtype=object)])
        if not ok.all():
            raise self._fail_at(~ok, "must be true, false or missing", field=col)
        matched = np.where(known, tm.fillna(True).to_numpy(dtype=bool).reshape(self.shape), True)
        return _Verdicts(matched, known.all(axis=1))  # type: ignore[arg-type]  # numpy stubs: all(axis) of 2-d is an array


def _parse_trajectory(ctx: _Ctx, traj: Any, tid: str) -> TrajectorySpec:
    traj = ctx.mapping(traj, record=tid, field="expected.trajectory")
    ctx.keys(traj, _TRAJ_KEYS, record=tid, where="expected.trajectory.")
    match = _choice(ctx, traj.get("match", "strict"), MATCH_MODES, "match mode", record=tid,
                    field="expected.trajectory.match")
    tools = traj.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise ctx.fail("must be a list of tool names", record=tid, field="expected.trajectory.tools")
        try:
            tools = tuple(_tool_name(x, where="tools") for x in tools)
        except ValueError as e:
            raise ctx.fail(str(e), record=tid, field="expected.trajectory.tools") from None
    forbidden = traj.get("forbidden", [])
    if not isinstance(forbidden, list) or not all(isinstance(x, str) and x for x in forbidden):
        raise ctx.fail("must be a list of tool names", record=tid, field="expected.trajectory.forbidden")
    return TrajectorySpec(match=match, tools=tools, forbidden=tuple(forbidden))


# --------------------------------------------------------------------------- the columnar reader
#
# A run file is read column-wise through Arrow's JSON reader: no Python object per trial.
# It is exact by construction: it returns a run only for a document the reference reader
# above accepts, and then the same run; at the first doubt (a null where a key may be
# absent, a shape Arrow cannot hold in one column, a value that breaks a rule) it gives up
# and the reference reader reads the document and names the file, record and field.


class _Refer(Exception):
    """The columnar reader cannot decide: the reference reader reads the document."""


#: A ``\\uD800``-``\\uDFFF`` escape (the reference reader refuses a lone one).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: The text opens an object (Arrow's reader dies on a document that is a bare ``null``).
_OPENS_OBJECT = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\{")
#: Separators of the keys the specs and calls are grouped by: control characters, which a
#: JSON string holds only through a ``\\u`` escape.
_SEP, _PART = "\x1f", "\x1e"


def _columnar_run(raw: bytes, file: str) -> SuiteRun | None:
    """The run in the JSON bytes ``raw``, read column-wise, or None when the reference
    reader must read it (see the note above)."""
    import pyarrow as pa

    try:
        return _columnar(raw, file)
    except (_Refer, pa.ArrowException, KeyError, IndexError, TypeError, ValueError):
        return None  # whatever it cannot read, the reference reader reads (the tests check that
        # every fixture and every clean generated run is read here)


def _columnar(raw: bytes, file: str) -> SuiteRun:
    import pyarrow as pa
    import pyarrow.json as pj

    # one-byte searches (memchr) first: most runs hold no backslash, no "N" and no "I" at all
    escapes = b"\\" in raw and b"\\u" in raw
    if (not _OPENS_OBJECT.match(raw) or (b"N" in raw and b"NaN" in raw)
            or (b"I" in raw and b"Infinity" in raw) or len(raw) >= 2**31 - 1
            or b"\x1e" in raw or b"\x1f" in raw or (escapes and _SURROGATE_ESCAPE.search(raw))
            or not (raw.isascii() or _utf8(raw))):
        raise _Refer  # the reference reader names the field holding a NaN, or refuses the text
    if _io.json_depth(raw) > min(_io.current_limits().depth, _io.NATIVE_DEPTH):
        raise _Refer  # never handed to a native parser; the reference reader refuses it
    line = _io.json_one_line(raw)  # one line parses faster than values Arrow is told span lines
    try:
        table = pj.read_json(pa.py_buffer(raw if line is None else line),
                             read_options=pj.ReadOptions(use_threads=False, block_size=max(len(raw) + 1, 1 << 16)),
                             parse_options=pj.ParseOptions(newlines_in_values=line is None))
        del line
    except (pa.ArrowException, UnicodeDecodeError, ValueError):
        raise _Refer from None  # not JSON, a repeated key, or a field of two types
    if table.num_rows != 1 or "tasks" not in table.column_names:
        raise _Refer
    # the header is one object, so Arrow's fields are exactly its keys
    header = {name: table.column(name)[0].as_py() for name in table.column_names if name != "tasks"}
    ctx = _Ctx(file)
    try:
        ctx.keys({**header, "tasks": None}, _TOP_KEYS, record=None, where="", lenient=True)
        suite, version = _read_names(ctx, header, file)
        thresholds = _read_thresholds(ctx, header.get("thresholds"))
        block = _read_trials_block(ctx, header.get("trials"))
        aggregation = _choice(ctx, header.get("aggregation", "mean"), AGGREGATIONS, "aggregation",
                              field="aggregation")
    except SchemaViolation:
        raise _Refer from None
    try:
        col = table.column("tasks")  # one block, so one chunk: taken as it is (combining copies it)
        tasks = _ColumnarTasks(raw, col.chunk(0) if col.num_chunks == 1 else col.combine_chunks(), block.count,
                               escapes)
    except pa.ArrowException:
        raise _Refer from None
    return _suite_run(file, suite, version, thresholds, block, aggregation, tasks)


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _fields(arr: Any) -> dict[str, Any]:
    """A struct column's fields by name (each null where the struct is)."""
    return dict(zip([f.name for f in arr.type], arr.flatten(), strict=True))


def _misspelt(names: Iterable[str], allowed: set[str]) -> bool:
    """Whether a lenient object's keys hold a near-miss of a known key (refused)."""
    return any(k not in allowed and not k.startswith("x-") and _near_miss(k, allowed) for k in names)


class _ColumnarTasks:
    """The ``tasks`` column (a list of task structs) checked and read into the run's columns."""

    def __init__(self, raw: bytes, col: Any, count: int, escapes: bool) -> None:
        import pyarrow as pa

        self.pa, self.raw, self.escapes = pa, raw, escapes
        if not (pa.types.is_list(col.type) and pa.types.is_struct(col.type.value_type)) or col.null_count:
            raise _Refer
        tasks = col.flatten()
        t = len(tasks)
        if not t or tasks.null_count:
            raise _Refer
        f = _fields(tasks)
        # a task carries `trials` (its single trial's fields on the task: the reference reader)
        if set(f) & (_TRIAL_KEYS - {"metadata"}) or _misspelt(f, _TASK_KEYS):
            raise _Refer
        self.ids = self._ids(f, t)
        self.types = self._types(f, t)
        spec_code, specs = self._specs(f.get("expected"), t)
        self.trajectories = [specs[c] if c >= 0 else None for c in spec_code.tolist()]
        self._trials(f.get("trials"), t, count, np.repeat(spec_code, count), specs)

    # -- small readers of one column each

    def _absent(self, key: str, present: int) -> bool:
        """Whether no object holds ``key`` as null: the text spells ``"key"`` no more often than
        values are present (an escaped key could hide one, so with escapes: unknown)."""
        return not self.escapes and self.raw.count(b'"' + key.encode() + b'"') == present

    def _strings(self, a: Any) -> Any:
        """A column of strings (or of nulls only); none empty."""
        pa = self.pa
        if pa.types.is_null(a.type):
            return a
        if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
            raise _Refer
        import pyarrow.compute as pc

        if a.null_count < len(a) and pc.min(pc.binary_length(a)).as_py() == 0:
            raise _Refer
        return a

    def _numbers(self, a: Any, n: int) -> np.ndarray:
        """A numeric column as floats, NaN where absent (a NaN in the text never gets here)."""
        pa = self.pa
        if a is None or pa.types.is_null(a.type):
            return np.full(n, np.nan)
        if not (pa.types.is_integer(a.type) or pa.types.is_floating(a.type)):
            raise _Refer
        import pyarrow.compute as pc

        return np.array(pc.cast(a, pa.float64(), safe=False).to_numpy(zero_copy_only=False), dtype=float)

    def _flags(self, a: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
        """A boolean column: (present, true)."""
        pa = self.pa
        if a is None or pa.types.is_null(a.type):
            return np.zeros(n, bool), np.zeros(n, bool)
        if not pa.types.is_boolean(a.type):
            raise _Refer
        present = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return present, np.array(a.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)

    def _names(self, a: Any) -> Any:
        """A column of lists of tool names (null where absent), or None when no object has it."""
        pa = self.pa
        if a is None or pa.types.is_null(a.type):
            return None
        if not pa.types.is_list(a.type):
            raise _Refer
        vt = a.type.value_type
        if not (pa.types.is_null(vt) or pa.types.is_string(vt) or pa.types.is_large_string(vt)) \
                or a.flatten().null_count:
            raise _Refer  # an object call (`{"name": ...}`) or a null: the reference reader
        if self.escapes and pa.types.is_string(vt):
            import pyarrow.compute as pc

            if pc.any(pc.match_substring_regex(a.flatten(), f"[{_PART}{_SEP}]")).as_py():
                raise _Refer
        return a

    def _valid(self, a: Any) -> np.ndarray:
        return np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)

    # -- the task columns

    def _ids(self, f: dict[str, Any], t: int) -> list[str]:
        """``id`` (else ``taskId``): a non-empty string on every task, unique."""
        a = f["id"] if "id" in f else f.get("taskId")
        if a is None or a.null_count:
            raise _Refer
        import pyarrow.compute as pc

        if pc.count_distinct(self._strings(a)).as_py() != t:
            raise _Refer
        return a.to_pylist()

    def _types(self, f: dict[str, Any], t: int) -> list[str | None]:
        """``type`` (else ``kind``); where ``type`` is null and ``kind`` is set the key may
        be null (which hides ``kind``) or absent: unknown."""
        ty, kind = f.get("type"), f.get("kind")
        if ty is None and kind is None:
            return [None] * t
        if ty is not None and kind is not None and (~self._valid(ty) & self._valid(kind)).any():
            raise _Refer
        types = [] if ty is None else self._strings(ty).to_pylist()
        other = [] if kind is None else self._strings(kind).to_pylist()
        return other if ty is None else types if kind is None else [a if a is not None else b
                                                                   for a, b in zip(types, other, strict=True)]

    def _specs(self, e: Any, t: int) -> tuple[np.ndarray, list[TrajectorySpec]]:
        """Per task the code of its expected trajectory among the distinct ``specs`` (-1 for none)."""
        pa = self.pa
        import pyarrow.compute as pc

        code = np.full(t, -1, np.int64)
        if e is None or pa.types.is_null(e.type):
            return code, []
        if not pa.types.is_struct(e.type):
            raise _Refer
        tr = _fields(e).get("trajectory")
        if tr is None:
            return code, []
        has = self._valid(tr)
        if (self._valid(e) & ~has).any() and not self._absent("trajectory", int(has.sum())):
            raise _Refer  # `"trajectory": null` is refused, an absent one is no trajectory
        if not has.any():
            return code, []
        if not pa.types.is_struct(tr.type):
            raise _Refer
        g = _fields(tr)
        if any(k not in _TRAJ_KEYS and not k.startswith("x-") for k in g):
            raise _Refer
        idx = np.flatnonzero(has)
        n = idx.size
        m = g.get("match")
        if m is None:
            match = pa.array(["strict"] * n)
        else:
            m = self._strings(m).take(idx)
            if m.null_count and not self._absent("match", len(m) - m.null_count):
                raise _Refer
            match = pc.fill_null(m.cast(pa.string()), "strict")
            if not pc.all(pc.is_in(match, pa.array(MATCH_MODES))).as_py():
                raise _Refer
        tools = self._names(g.get("tools"))
        forbidden = self._names(g.get("forbidden"))
        tools = None if tools is None else tools.take(idx)
        if forbidden is not None:
            forbidden = forbidden.take(idx)
            if forbidden.null_count and not self._absent("forbidden", n - forbidden.null_count):
                raise _Refer
            if pa.types.is_string(forbidden.type.value_type) and len(forbidden.flatten()) \
                    and pc.min(pc.binary_length(forbidden.flatten())).as_py() == 0:
                raise _Refer
        codes, first = _group(pa, [match, _list_key(pa, tools, n), _list_key(pa, forbidden, n)])
        tl = None if tools is None else tools.take(pa.array(first)).to_pylist()
        fb = None if forbidden is None else forbidden.take(pa.array(first)).to_pylist()
        ms = match.take(pa.array(first)).to_pylist()
        specs = [TrajectorySpec(match=ms[u], tools=None if tl is None or tl[u] is None else tuple(tl[u]),
                                forbidden=() if fb is None or fb[u] is None else tuple(fb[u]))
                 for u in range(len(first))]
        code[idx] = codes
        return code, specs

    # -- the trials

    def _trials(self, col: Any, t: int, count: int, spec: np.ndarray, specs: list[TrajectorySpec]) -> None:
        pa = self.pa
        import pyarrow.compute as pc

        if col is None or not (pa.types.is_list(col.type) and pa.types.is_struct(col.type.value_type)) \
                or col.null_count:
            raise _Refer
        if (np.asarray(pc.list_value_length(col).to_numpy(zero_copy_only=False)) != count).any():
            raise _Refer  # a missing or extra trial
        trials = col.flatten()
        if trials.null_count:
            raise _Refer
        g = _fields(trials)
        if _misspelt(g, _TRIAL_KEYS):
            raise _Refer
        n = t * count
        score = self._numbers(g.get("score"), n)
        _, miss = self._flags(g.get("fixtureMiss"), n)
        unscored = np.isnan(score)
        if (unscored & ~miss).any():
            raise _Refer  # a score is required unless the trial failed closed on a miss
        score[unscored] = 0.0
        cost = self._numbers(g.get("cost"), n)
        cost = np.where(np.isnan(cost), self._numbers(g.get("costUsd"), n), cost)
        latency = self._numbers(g.get("latencyMs"), n)
        if (score < 0).any() or (score > 1).any() or (cost < 0).any() or (latency < 0).any() \
                or np.isinf(cost).any() or np.isinf(latency).any():
            raise _Refer
        host_set, host = self._flags(g.get("trajectoryMatched"), n)
        calls = self._names(g.get("toolCalls"))
        matched = np.ones(n, bool)
        gated = spec >= 0
        if gated.any():
            has_calls = np.zeros(n, bool) if calls is None else self._valid(calls)
            bare = gated & ~has_calls
            if (bare & ~host_set & ~miss).any():
                raise _Refer  # neither calls nor the host's verdict (and no miss)
            matched[bare & host_set] = host[bare & host_set]
            with_calls = np.flatnonzero(gated & has_calls)
            if with_calls.size:
                assert calls is not None
                ok = _match_calls(pa, calls.take(pa.array(with_calls)), spec[with_calls], specs)
                matched[with_calls] = ok & ~(host_set[with_calls] & ~host[with_calls])
        shape = (t, count)
        self.score, self.miss = score.reshape(shape), miss.reshape(shape)
        self.cost, self.latency_ms = cost.reshape(shape), latency.reshape(shape)
        self.matched = matched.reshape(shape)


def _list_key(pa: Any, lists: Any, n: int) -> Any:
    """Each list of names as one string (``n`` nulls' worth when no object has the key):
    the length, then the names, so that no two lists share a key."""
    import pyarrow.compute as pc

    if lists is None:
        return pa.array(["-"] * n)
    length = pc.cast(pc.fill_null(pc.list_value_length(lists), -1), pa.string())
    if pa.types.is_null(lists.type.value_type):
        return length
    return pc.binary_join_element_wise(length, pc.fill_null(pc.binary_join(lists, _SEP), ""), _PART)


def _group(pa: Any, keys: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(group code per row, first row of each group) of rows keyed by string columns."""
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(*keys, _PART) if len(keys) > 1 else keys[0]
    codes = np.asarray(pc.dictionary_encode(joined).indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    return codes, first


def _list_codes(pa: Any, lists: Any) -> np.ndarray | None:
    """Each list of names as one exact integer, or None when the integers would not fit in 62 bits.

    A name is its code among the distinct names plus one, a list the number whose digits in
    base (distinct names + 1) are its names: every digit is nonzero, so two lists share a
    number only when they hold the same names in the same order.  Vectorised: the digits'
    place values summed by a cumulative sum, whose wrap-around in int64 cancels in the
    difference because every list's number is below 2**62."""
    import pyarrow.compute as pc

    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    flat = lists.flatten()
    lengths = np.asarray(pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if not len(flat):
        return np.zeros(len(lists), np.int64)
    names = pc.dictionary_encode(flat)
    base = len(names.dictionary) + 1
    if int(lengths.max()) * math.log2(base) > 62:
        return None
    digits = np.asarray(names.indices.to_numpy(zero_copy_only=False), dtype=np.int64) + 1
    starts = np.cumsum(lengths) - lengths
    position = np.arange(len(flat), dtype=np.int64) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):
        terms = digits * np.power(np.int64(base), position)
        cum = np.concatenate(([0], np.cumsum(terms)))
        return cum[starts + lengths] - cum[starts]


def _match_calls(pa: Any, calls: Any, spec: np.ndarray, specs: list[TrajectorySpec]) -> np.ndarray:
    """Whether each list of calls follows its trial's spec, matched once per distinct pair."""
    numbers = _list_codes(pa, calls)
    if numbers is None:
        codes, _ = _group(pa, [_list_key(pa, calls, len(calls))])
    else:
        codes = np.asarray(pd.factorize(numbers)[0], dtype=np.int64)
    pair = spec * (int(codes.max()) + 1) + codes
    _, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    reps = calls.take(pa.array(first)).to_pylist()
    ok = np.array([_match_cached(specs[int(spec[r])], c) for r, c in zip(first.tolist(), reps, strict=True)],
                  dtype=bool)
    return ok[inverse.ravel()]
