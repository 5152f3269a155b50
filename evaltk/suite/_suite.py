"""Suite gating (RFC 0246): trials, pass rules, pass@k and pass^k, the gating score.

A *suite run* records, for every task of an eval suite, the outcome of each of its
trials: the output score, the tool calls (or the host's own trajectory verdict) and
whether the trial failed closed on a fixture miss.  :func:`summarize_suite` turns it
into an ``EvalSummary`` exactly as RFC 0246 states:

* **Scores stay measurements** (section C).  A trial's ``score``, a task's
  ``trials.meanScore`` and ``score``, ``aggregateScore``, ``passAtK``, ``passHatK``
  and ``trialStats`` are computed from the output scores, never zeroed.
* **The gate reads gating scores** (sections A and B).  A trial's gating score is 0
  when its task has ``expected.trajectory`` and the trajectory did not match
  (a forbidden call included), 0 when it failed closed on a fixture miss, and its
  score otherwise.  A task's gating score is the mean of its trials' gating scores;
  ``passRule: "mean"`` passes a task when that mean reaches ``passScore``; the suite
  passes when the gating aggregate reaches ``passScore`` and the cost and latency
  conditions hold.  ``all`` / ``any`` count trial verdicts.
* **The gate is readable** (section D).  ``gatedScore`` on every task with a
  trajectory, ``gatedAggregateScore`` whenever any task has one, and a list of
  reasons that says which condition decided, with the numbers.

:func:`check_summary` checks a summary that *another host* produced for a run and
lists every RFC 0246 violation.  See ``docs/suite.md`` for the formats.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DuplicateKeyError, SchemaViolation, UnreadableInput, no_duplicate_keys
from ..stats import pass_at_k, pass_hat_k
from ..values import Cause

__all__ = [
    "PASS_RULES",
    "MATCH_MODES",
    "AGGREGATIONS",
    "SCORE_TOLERANCE",
    "pass_at_k",
    "pass_hat_k",
    "TrajectorySpec",
    "trajectory_matches",
    "SuiteThresholds",
    "SuiteRun",
    "load_suite_run",
    "suite_run_from_frame",
    "EvalSummary",
    "summarize_suite",
    "scored_events",
    "Violation",
    "check_summary",
    "GateDecision",
    "gate_summary",
    "load_summary",
    "validate_summary",
    "schema",
]

#: How a task's trials decide whether the task passed (RFC 0244 section B, RFC 0246 section B).
PASS_RULES: tuple[str, ...] = ("mean", "all", "any")
#: Trajectory match modes; see :class:`TrajectorySpec`.
MATCH_MODES: tuple[str, ...] = ("strict", "unordered", "subset", "superset")
#: Aggregations of task scores into ``aggregateScore`` (``mean`` by default).
AGGREGATIONS: tuple[str, ...] = ("mean", "median", "min")
#: Two scores closer than this compare equal in a threshold decision.  Scores are
#: recorded to a few decimals; this only absorbs binary floating-point error (the
#: float mean of three trials scoring 0.7 is 0.6999999999999998 in naive arithmetic).
SCORE_TOLERANCE = 1e-12


# --------------------------------------------------------------------------- estimators


@cache
def _k_tables(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """pass@k and pass^k for every c in 0..n (exact, so the vectorised path agrees)."""
    at = np.array([pass_at_k(n, c, k) for c in range(n + 1)], dtype=float)
    hat = np.array([pass_hat_k(n, c, k) for c in range(n + 1)], dtype=float)
    return at, hat


# --------------------------------------------------------------------------- exact means


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = 134217729.0 * a
    hi = t - (t - a)
    return hi, a - hi


def _dd_div_int(s: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    """(s + c) / n for a double-double (s, c), rounded once (error well under 1 ulp)."""
    q = s / n
    qh, ql = _split(q)
    nh, nl = _split(np.float64(n))
    p = q * n
    perr = ((qh * nh - p) + qh * nl + ql * nh) + ql * nl
    r = ((s - p) - perr) + c
    return q + r / n


def _mean_rows(a: np.ndarray) -> np.ndarray:
    """Mean of each row, as close to the exact mean as a float can be.

    Naive float means break threshold decisions at the boundary (three trials of 0.7
    average to 0.6999999999999998); summing in double-double and dividing once gives
    the correctly rounded mean, so equal trials average to themselves.
    """
    s = a[:, 0].copy()
    c = np.zeros_like(s)
    for j in range(1, a.shape[1]):
        s, e = _two_sum(s, a[:, j])
        c += e
    return _dd_div_int(s, c, a.shape[1])


def _mean(x: np.ndarray) -> float:
    """Correctly rounded mean of a 1-D array (``math.fsum`` plus its residual)."""
    if x.size == 1:
        return float(x[0])
    s = math.fsum(x)
    r = math.fsum(np.append(x, -s)) if math.isfinite(s) else 0.0
    return float(_dd_div_int(np.array([s]), np.array([r]), x.size)[0])


def _aggregate(x: np.ndarray, how: str) -> float:
    if how == "mean":
        return _mean(x)
    if how == "min":
        return float(x.min())
    srt = np.sort(x)
    mid = srt.size // 2
    if srt.size % 2:
        return float(srt[mid])
    return _mean(srt[mid - 1 : mid + 1])


_MAX_DECIMALS = 9


def _decimal_scale(arrays: Iterable[np.ndarray], terms: int) -> int | None:
    """Smallest ``d`` such that every value is the float of a decimal with ``d`` places.

    ``None`` when there is none up to :data:`_MAX_DECIMALS`, or when sums of ``terms``
    such integers could leave the range where floats hold integers exactly.
    """
    arrays = list(arrays)
    for d in range(_MAX_DECIMALS + 1):
        q = 10.0**d
        if 2 * terms * q >= 2.0**53:
            return None
        if all(np.array_equal(np.rint(a * q) / q, a) for a in arrays):
            return d
    return None


def _decimal_path(run: SuiteRun, gated_out: np.ndarray) -> tuple[Any, ...] | None:
    """Scores, means and decisions in exact decimal arithmetic.

    Scores in a run file are decimals (``0.7``); their binary floats are not, so a
    float mean can land a hair off the decimal one (0.8, 0.8, 0.2 and 1.0 average to
    0.7000000000000001 in floats).  When every score and ``passScore`` has at most
    nine decimal places, each is scaled to an integer, sums are exact, every
    threshold comparison is an exact integer comparison, and each reported mean is
    one correctly rounded division of two exact integers.
    """
    t, n = run.score.shape
    ps = run.thresholds.pass_score
    d = _decimal_scale([run.score, np.array([ps])], t * n)
    if d is None:
        return None
    q = 10**d
    ints = np.rint(run.score * q).astype(np.int64)
    gints = np.where(gated_out, 0, ints)
    pq = round(ps * q)
    trial_passed = (ints >= pq) & ~gated_out
    ss, gs = ints.sum(axis=1), gints.sum(axis=1)
    denom = n * q
    task_score, task_gated = ss / denom, gs / denom
    mean_ok = gs >= pq * n

    def agg(sums: np.ndarray) -> tuple[float, int, int]:
        """(value, numerator, denominator) with value = numerator / denominator exactly rounded."""
        if run.aggregation == "mean":
            num, den = int(sums.sum()), t * denom
        elif run.aggregation == "min":
            num, den = int(sums.min()), denom
        else:
            srt = np.sort(sums)
            mid = t // 2
            num, den = (int(srt[mid]), denom) if t % 2 else (int(srt[mid - 1]) + int(srt[mid]), 2 * denom)
        return num / den, num, den

    a, _, _ = agg(ss)
    g, gnum, gden = agg(gs)
    met = gnum * q >= pq * gden
    return task_score, task_gated, trial_passed, mean_ok, a, g, bool(met)


def _geq(a: Any, b: float) -> Any:
    return a >= b - SCORE_TOLERANCE


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(SCORE_TOLERANCE, 1e-9 * max(abs(a), abs(b)))


# --------------------------------------------------------------------------- trajectories


def _tool_name(call: Any, *, where: str) -> str:
    if isinstance(call, str):
        return call
    if isinstance(call, Mapping):
        for key in ("name", "tool"):
            v = call.get(key)
            if isinstance(v, str):
                return v
    raise ValueError(f"{where}: a tool call must be a string or an object with `name`; got {call!r}.")


@dataclass(frozen=True)
class TrajectorySpec:
    """An expected trajectory (``expected.trajectory`` of a task).

    Parameters
    ----------
    match : {"strict", "unordered", "subset", "superset"}
        How the actual tool calls are compared with ``tools`` (calls are compared by
        tool name; arguments are not compared, and repeated calls count):

        ``strict``
            the same calls in the same order.
        ``unordered``
            the same calls, any order (equal multisets).
        ``subset``
            every expected call appears among the actual ones (the expected multiset
            is contained in the actual one; extra calls allowed).
        ``superset``
            every actual call is an expected one (the actual multiset is contained
            in the expected one; expected calls may be skipped).
    tools : tuple of str or None
        The expected calls.  ``None`` when only ``forbidden`` constrains the path.
    forbidden : tuple of str
        Tools whose call fails the trajectory whatever the mode.

    Examples
    --------
    >>> spec = TrajectorySpec("subset", ("lookup_order", "refund"), ("delete_account",))
    >>> spec.matches(["lookup_order", "check_stock", "refund"])
    True
    >>> spec.matches(["lookup_order", "refund", "delete_account"])
    False
    """

    match: str = "strict"
    tools: tuple[str, ...] | None = None
    forbidden: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.match not in MATCH_MODES:
            raise ValueError(f"`match` must be one of {', '.join(MATCH_MODES)}; got {self.match!r}.")
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "forbidden", tuple(self.forbidden))

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any]) -> TrajectorySpec:
        """Build from the JSON form ``{"match": ..., "tools": [...], "forbidden": [...]}``."""
        tools = spec.get("tools")
        return cls(
            match=spec.get("match", "strict"),
            tools=None if tools is None else tuple(_tool_name(t, where="tools") for t in tools),
            forbidden=tuple(spec.get("forbidden", ())),
        )

    def matches(self, tool_calls: Iterable[Any]) -> bool:
        """True when ``tool_calls`` (names, or objects with ``name``) follow this trajectory."""
        calls = [_tool_name(c, where="toolCalls") for c in tool_calls]
        if self.forbidden and not set(self.forbidden).isdisjoint(calls):
            return False
        if self.tools is None:
            return True
        if self.match == "strict":
            return calls == list(self.tools)
        actual, expected = Counter(calls), Counter(self.tools)
        if self.match == "unordered":
            return actual == expected
        if self.match == "subset":
            return not (expected - actual)
        return not (actual - expected)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"match": self.match}
        if self.tools is not None:
            out["tools"] = list(self.tools)
        if self.forbidden:
            out["forbidden"] = list(self.forbidden)
        return out


def trajectory_matches(expected: TrajectorySpec | Mapping[str, Any], tool_calls: Iterable[Any]) -> bool:
    """Whether ``tool_calls`` match an expected trajectory (RFC 0244 section A).

    Parameters
    ----------
    expected : TrajectorySpec or mapping
        ``{"match": "strict" | "unordered" | "subset" | "superset", "tools": [...],
        "forbidden": [...]}``; ``match`` defaults to ``strict``.
    tool_calls : iterable
        The calls the trial made, as tool names or objects with a ``name``.

    Examples
    --------
    >>> trajectory_matches({"match": "strict", "tools": ["a", "b"]}, ["a", "b"])
    True
    >>> trajectory_matches({"match": "strict", "tools": ["a", "b"]}, ["b", "a"])
    False
    >>> trajectory_matches({"match": "unordered", "tools": ["a", "b"]}, ["b", "a"])
    True
    >>> trajectory_matches({"tools": ["a"], "forbidden": ["rm"]}, ["a", "rm"])
    False
    """
    spec = expected if isinstance(expected, TrajectorySpec) else TrajectorySpec.from_mapping(expected)
    return spec.matches(tool_calls)


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class SuiteThresholds:
    """``thresholds`` of a suite: ``passScore`` (required), ``maxCost``, ``maxLatencyMs``."""

    pass_score: float
    max_cost: float | None = None
    max_latency_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passScore": self.pass_score}
        if self.max_cost is not None:
            out["maxCost"] = self.max_cost
        if self.max_latency_ms is not None:
            out["maxLatencyMs"] = _int_if_whole(self.max_latency_ms)
        return out


@dataclass(frozen=True, eq=False)
class SuiteRun:
    """A validated suite run, stored column-wise (one row per task, one column per trial).

    Build it with :func:`load_suite_run`.  Arrays have shape ``(task_count, count)``.

    Attributes
    ----------
    suite, version : str, str or None
        The suite's name and version.
    thresholds : SuiteThresholds
    count : int
        Trials per task (``trials.count``; 1 when the run has no ``trials`` block).
    pass_rule : {"mean", "all", "any"}
    k : int
        The ``k`` of pass@k and pass^k (``trials.k``, default ``count``).
    aggregation : {"mean", "median", "min"}
    task_ids, task_types : tuple of str
    trajectories : tuple of TrajectorySpec or None
    score : ndarray of float
        Output scores in [0, 1].
    trajectory_matched : ndarray of bool
        True where the trajectory matched *or the task has no expected trajectory*.
    fixture_miss : ndarray of bool
    cost, latency_ms : ndarray of float
        NaN where the trial did not record it.
    source : str or None
        Where the run was read from (for error messages).
    trajectory_declared : ndarray of bool or None
        Per task, whether it has an expected trajectory, for runs built from a table
        (:func:`suite_run_from_frame`), whose ``trajectories`` are ``None``: the
        table carries the host's verdicts, not the specification.
    """

    suite: str
    version: str | None
    thresholds: SuiteThresholds
    count: int
    pass_rule: str
    k: int
    aggregation: str
    task_ids: tuple[str, ...]
    task_types: tuple[str | None, ...]
    trajectories: tuple[TrajectorySpec | None, ...]
    score: np.ndarray
    trajectory_matched: np.ndarray
    fixture_miss: np.ndarray
    cost: np.ndarray
    latency_ms: np.ndarray
    source: str | None = None
    trajectory_declared: np.ndarray | None = None

    @property
    def task_count(self) -> int:
        return len(self.task_ids)

    @property
    def has_trajectory(self) -> np.ndarray:
        """Per task: whether it declares ``expected.trajectory``."""
        if self.trajectory_declared is not None:
            return self.trajectory_declared
        return np.array([t is not None for t in self.trajectories], dtype=bool)

    def to_frame(self) -> pd.DataFrame:
        """Tidy trial table: ``task_id, trial, score, trajectory_matched, fixture_miss, cost, latency_ms``.

        ``trajectory_matched`` is missing (``<NA>``) for tasks without an expected trajectory.
        """
        t, n = self.score.shape
        has = np.repeat(self.has_trajectory, n)
        matched = pd.array(self.trajectory_matched.ravel(), dtype="boolean")
        matched[~has] = pd.NA
        return pd.DataFrame(
            {
                "task_id": np.repeat(np.array(self.task_ids, dtype=object), n),
                "trial": np.tile(np.arange(n), t),
                "score": self.score.ravel(),
                "trajectory_matched": matched,
                "fixture_miss": self.fixture_miss.ravel(),
                "cost": self.cost.ravel(),
                "latency_ms": self.latency_ms.ravel(),
            }
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


def _read_document(path: Path) -> Any:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UnreadableInput("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise UnreadableInput("is a directory, not a file", file=str(path)) from None
    except PermissionError:
        raise UnreadableInput("permission denied", file=str(path)) from None
    except UnicodeDecodeError as e:
        raise UnreadableInput(f"not UTF-8 ({e.reason} at byte {e.start})", file=str(path)) from None
    yaml_first = path.suffix.lower() in (".yaml", ".yml")
    if not yaml_first:
        try:
            return json.loads(text, object_pairs_hook=no_duplicate_keys)
        except DuplicateKeyError as e:
            raise SchemaViolation(f"duplicate key {e.args[0]!r} in one object (which value counts "
                                  "would be a guess)", file=str(path), field=e.args[0]) from None
        except json.JSONDecodeError as e:
            if path.suffix.lower() == ".json":
                raise UnreadableInput(f"not JSON: {e.msg} (column {e.colno})", file=str(path),
                                      record=e.lineno) from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise UnreadableInput(f"not JSON or YAML: {getattr(e, 'problem', None) or e}", file=str(path),
                              record=None if mark is None else mark.line + 1) from None


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

    Examples
    --------
    >>> run = load_suite_run({"suite": "demo", "thresholds": {"passScore": 0.7},
    ...     "tasks": [{"id": "t1", "trials": [{"score": 0.9}]}]})
    >>> run.count, run.pass_rule, run.task_ids
    (1, 'mean', ('t1',))
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        doc = _read_document(path)
        file = str(path)
    else:
        doc = source
    ctx = _Ctx(file)
    doc = ctx.mapping(doc, record=None, field="(document)")
    ctx.keys(doc, _TOP_KEYS, record=None, where="", lenient=True)
    suite = doc.get("suite", doc.get("suiteId", doc.get("name")))
    if suite is None:  # a name is for reading only; without one, the file's stem stands in
        suite = Path(file).stem if file else "unnamed-suite"
    suite = ctx.string(suite, record=None, field="suite")
    version = doc.get("version", doc.get("suiteVersion"))
    if version is not None:
        version = ctx.string(version, record=None, field="version")

    th = ctx.mapping(doc.get("thresholds"), record=None, field="thresholds")
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
    thresholds = SuiteThresholds(pass_score, max_cost, max_lat)

    trials_block = doc.get("trials")
    if trials_block is None:
        count, pass_rule, k = 1, "mean", None
    else:
        trials_block = ctx.mapping(trials_block, record=None, field="trials")
        ctx.keys(trials_block, _TRIALS_KEYS, record=None, where="trials.")
        count = trials_block.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ctx.fail(f"must be an integer >= 1; got {count!r}", field="trials.count")
        pass_rule = trials_block.get("passRule", "mean")
        if pass_rule not in PASS_RULES:
            raise ctx.fail(f"unknown pass rule {pass_rule!r}; allowed: {', '.join(PASS_RULES)}",
                           field="trials.passRule")
        k = trials_block.get("k")
    if k is None:
        k = count
    elif isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= count:
        raise ctx.fail(f"must be an integer in [1, count] = [1, {count}]; got {k!r}", field="trials.k")
    aggregation = doc.get("aggregation", "mean")
    if aggregation not in AGGREGATIONS:
        raise ctx.fail(f"unknown aggregation {aggregation!r}; allowed: {', '.join(AGGREGATIONS)}",
                       field="aggregation")

    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ctx.fail("must be a non-empty list of tasks", field="tasks")
    t = len(tasks)
    score = np.empty((t, count))
    matched = np.ones((t, count), dtype=bool)
    miss = np.zeros((t, count), dtype=bool)
    cost = np.full((t, count), np.nan)
    lat = np.full((t, count), np.nan)
    ids: list[str] = []
    types: list[str | None] = []
    trajs: list[TrajectorySpec | None] = []
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        task = ctx.mapping(task, record=f"tasks[{i}]", field="(task)")
        tid = task.get("id", task.get("taskId"))
        if not isinstance(tid, str) or not tid:
            raise ctx.fail(f"every task needs a non-empty string `id`; got {tid!r}",
                           record=f"tasks[{i}]", field="id")
        if tid in seen:
            raise ctx.fail(f"duplicate task id (also tasks[{seen[tid]}])", record=tid, field="id")
        seen[tid] = i
        if "trials" in task:
            both = sorted(k for k in _TRIAL_KEYS if k in task and k != "metadata")
            if both:
                raise ctx.fail("a task carries either `trials` or its single trial's fields, not both",
                               record=tid, field=both[0])
        ctx.keys(task, _TASK_KEYS if "trials" in task else _SHORT_TASK_KEYS, record=tid, where="",
                 lenient=True)
        ttype = task.get("type", task.get("kind"))
        if ttype is not None and (not isinstance(ttype, str) or not ttype):
            raise ctx.fail(f"must be a non-empty string (golden, rubric, ...); got {ttype!r}",
                           record=tid, field="type")
        expected = task.get("expected")
        spec = None
        if expected is not None:
            expected = ctx.mapping(expected, record=tid, field="expected")
            if "trajectory" in expected and expected["trajectory"] is None:
                # a null trajectory would silently un-gate the task: say what was meant instead
                raise ctx.fail("is null: omit `trajectory` for a task without one, or give the spec",
                               record=tid, field="expected.trajectory")
            traj = expected.get("trajectory")
            if traj is not None:
                spec = _parse_trajectory(ctx, traj, tid)
        trials = task.get("trials")
        if trials is None:
            if "score" not in task and task.get("fixtureMiss") is not True:
                raise ctx.fail("every task needs `trials` (a list of trial records)", record=tid,
                               field="trials")
            trials = [{key: task[key] for key in _TRIAL_KEYS if key in task}]
        if not isinstance(trials, list):
            raise ctx.fail(f"must be a list of trials; got {type(trials).__name__}", record=tid,
                           field="trials")
        if len(trials) != count:
            what = "no trials" if not trials else f"{len(trials)} trial(s)"
            raise ctx.fail(
                f"has {what} but trials.count is {count}: every (task, trial) slot must be present, "
                "a missing or extra trial is not a smaller or larger denominator", record=tid, field="trials")
        for j, trial in enumerate(trials):
            # Fast path for well-formed trials; anything unusual goes through the checks
            # that build the error message (they name the task and the field).
            if trial.__class__ is not dict or not trial.keys() <= _TRIAL_KEYS:
                trial = ctx.mapping(trial, record=tid, field=f"trials[{j}]")
                ctx.keys(trial, _TRIAL_KEYS, record=tid, where=f"trials[{j}].", lenient=True)
            sc = trial.get("score", _MISSING)
            if sc.__class__ is float and 0.0 <= sc <= 1.0:
                score[i, j] = sc
            elif (sc is _MISSING or sc is None) and trial.get("fixtureMiss") is True:
                score[i, j] = 0.0  # a trial that failed closed scores 0 (RFC 0244 D as amended)
            elif sc is _MISSING:
                raise ctx.fail("is required", record=tid, field=f"trials[{j}].score")
            else:
                score[i, j] = ctx.unit(sc, record=tid, field=f"trials[{j}].score")
            fm = trial.get("fixtureMiss")
            if fm is True:
                miss[i, j] = True
            elif fm is not None and fm is not False:
                ctx.boolean(fm, record=tid, field=f"trials[{j}].fixtureMiss")
            c = trial.get("cost")
            if c is None:
                c = trial.get("costUsd")
            if c is not None:
                cost[i, j] = c if (c.__class__ is float and 0.0 <= c < math.inf) else \
                    ctx.nonneg(c, record=tid, field=f"trials[{j}].cost")
            lt = trial.get("latencyMs")
            if lt is not None:
                lat[i, j] = lt if (lt.__class__ is int and lt >= 0) else \
                    ctx.nonneg(lt, record=tid, field=f"trials[{j}].latencyMs")
            host = trial.get("trajectoryMatched")
            if host is not None and host.__class__ is not bool:
                ctx.boolean(host, record=tid, field=f"trials[{j}].trajectoryMatched")
            calls = trial.get("toolCalls")
            if calls is not None and calls.__class__ is not list:
                raise ctx.fail(f"must be a list of tool calls; got {type(calls).__name__}", record=tid,
                               field=f"trials[{j}].toolCalls")
            if spec is not None:
                if calls is None and host is None:
                    raise ctx.fail(
                        "the task has expected.trajectory, so each trial needs `toolCalls` or the "
                        "host's `trajectoryMatched`", record=tid, field=f"trials[{j}].toolCalls")
                ok = True
                if calls is not None:
                    try:
                        ok = _match_cached(spec, calls)
                    except ValueError as e:
                        raise ctx.fail(str(e), record=tid, field=f"trials[{j}].toolCalls") from None
                # Both present: the trajectory matched only if both say so (a gate fails safe).
                if not ok or host is False:
                    matched[i, j] = False
            elif calls:
                for c_ in calls:
                    if c_.__class__ is not str:
                        try:
                            _tool_name(c_, where="toolCalls")
                        except ValueError as e:
                            raise ctx.fail(str(e), record=tid, field=f"trials[{j}].toolCalls") from None
        ids.append(tid)
        types.append(ttype)
        trajs.append(spec)
    return SuiteRun(suite=suite, version=version, thresholds=thresholds, count=count, pass_rule=pass_rule,
                    k=k, aggregation=aggregation, task_ids=tuple(ids), task_types=tuple(types),
                    trajectories=tuple(trajs), score=score, trajectory_matched=matched,
                    fixture_miss=miss, cost=cost, latency_ms=lat, source=file)


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
    >>> s = summarize_suite(suite_run_from_frame(t, suite="demo", pass_score=0.7))
    >>> s.aggregate_score, s.gated_aggregate_score, s.passed
    (0.9, 0.45, False)
    """
    ctx = _Ctx("(table)")
    if not isinstance(trials, pd.DataFrame):
        raise TypeError(f"`trials` must be a pandas DataFrame; got {type(trials).__name__}.")
    for col in (task, trial, score):
        if col not in trials.columns:
            raise ctx.fail(f"column is missing; columns: {', '.join(map(str, trials.columns))}",
                           field=col)
    if trials.empty:
        raise ctx.fail("the table has no rows", field=task)
    ps = ctx.unit(pass_score, record=None, field="pass_score")
    if pass_rule not in PASS_RULES:
        raise ctx.fail(f"unknown pass rule {pass_rule!r}; allowed: {', '.join(PASS_RULES)}",
                       field="pass_rule")
    if aggregation not in AGGREGATIONS:
        raise ctx.fail(f"unknown aggregation {aggregation!r}; allowed: {', '.join(AGGREGATIONS)}",
                       field="aggregation")
    if max_cost is not None:
        max_cost = ctx.nonneg(max_cost, record=None, field="max_cost")
    if max_latency_ms is not None:
        max_latency_ms = ctx.nonneg(max_latency_ms, record=None, field="max_latency_ms")
    codes, uniques = pd.factorize(trials[task], sort=False)  # codes in order of first appearance
    if (codes < 0).any():
        raise ctx.fail("a row has no task id", field=task)
    ids = [str(x) for x in np.asarray(uniques, dtype=object)]
    try:
        order = np.lexsort((trials[trial].to_numpy(), codes))
    except TypeError:
        raise ctx.fail("trial labels must be comparable (all numbers or all strings)", field=trial) from None
    frame = trials.iloc[order]
    codes = codes[order]
    sizes = np.bincount(codes)
    count = int(sizes[0])
    bad = np.flatnonzero(sizes != count)
    if bad.size:
        i = int(bad[0])
        raise ctx.fail(f"has {int(sizes[i])} trial(s) but task {ids[0]!r} has {count}: every task needs "
                       "the same number of trials (no missing or extra trial)", record=ids[i], field=trial)
    dup = frame.duplicated([task, trial]).to_numpy()
    if dup.any():
        r = int(np.flatnonzero(dup)[0])
        raise ctx.fail(f"trial {frame[trial].iloc[r]!r} appears twice", record=ids[int(codes[r])],
                       field=trial)
    t = len(ids)

    def where(mask: np.ndarray) -> tuple[str, Any]:
        r = int(np.flatnonzero(mask)[0])
        return ids[int(codes[r])], frame[trial].iloc[r]

    raw = frame[score]
    vals = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    is_bool = raw.map(lambda x: isinstance(x, (bool, np.bool_))).to_numpy() if raw.dtype == object \
        else np.full(len(raw), raw.dtype == bool)
    bad = np.isnan(vals) | (vals < 0) | (vals > 1) | is_bool
    if bad.any():
        tid, tr = where(bad)
        r = int(np.flatnonzero(bad)[0])
        raise ctx.fail(f"trial {tr!r}: must be a number in [0, 1]; got {raw.iloc[r]!r}", record=tid,
                       field=score)
    score_arr = vals.reshape(t, count)

    def optional_float(col: str, name: str) -> np.ndarray:
        if col not in frame.columns:
            return np.full((t, count), np.nan)
        x = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)
        badx = (frame[col].notna().to_numpy() & np.isnan(x)) | (x < 0) | np.isinf(x)
        if badx.any():
            tid, tr = where(badx)
            raise ctx.fail(f"trial {tr!r}: must be a finite number >= 0; got "
                           f"{frame[col].iloc[int(np.flatnonzero(badx)[0])]!r}", record=tid, field=name)
        return x.reshape(t, count)

    miss = np.zeros((t, count), dtype=bool)
    if fixture_miss in frame.columns:
        fm = frame[fixture_miss]
        if fm.dtype == bool:
            ok = np.ones(len(fm), dtype=bool)
        else:
            ok = fm.map(lambda x: isinstance(x, (bool, np.bool_))).to_numpy()
        if not ok.all():
            tid, tr = where(~ok)
            raise ctx.fail(f"trial {tr!r}: must be true or false", record=tid, field=fixture_miss)
        miss = fm.to_numpy(dtype=bool).reshape(t, count)
    matched = np.ones((t, count), dtype=bool)
    declared = np.zeros(t, dtype=bool)
    if trajectory_matched in frame.columns:
        tm = frame[trajectory_matched]
        known = tm.notna().to_numpy().reshape(t, count)
        mixed = known.any(axis=1) & ~known.all(axis=1)
        if mixed.any():
            raise ctx.fail("mixes known and missing trajectory verdicts: a task either has an expected "
                           "trajectory (every trial True/False) or not (every trial missing)",
                           record=ids[int(np.flatnonzero(mixed)[0])], field=trajectory_matched)
        if tm.dtype == bool or isinstance(tm.dtype, pd.BooleanDtype):
            okb = np.ones(len(tm), dtype=bool)
        else:
            okb = np.array([x is None or x is pd.NA or isinstance(x, (bool, np.bool_))
                            or (isinstance(x, float) and math.isnan(x)) for x in tm.to_numpy(dtype=object)])
        if not okb.all():
            tid, tr = where(~okb)
            raise ctx.fail(f"trial {tr!r}: must be true, false or missing", record=tid,
                           field=trajectory_matched)
        declared = known.all(axis=1)
        matched = np.where(known, tm.fillna(True).to_numpy(dtype=bool).reshape(t, count), True)
    if k is None:
        k = count
    elif isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= count:
        raise ctx.fail(f"must be an integer in [1, count] = [1, {count}]; got {k!r}", field="k")
    return SuiteRun(suite=ctx.string(suite, record=None, field="suite"), version=version,
                    thresholds=SuiteThresholds(ps, max_cost, max_latency_ms), count=count,
                    pass_rule=pass_rule, k=k, aggregation=aggregation, task_ids=tuple(ids),
                    task_types=(None,) * t, trajectories=(None,) * t, score=score_arr,
                    trajectory_matched=matched, fixture_miss=miss,
                    cost=optional_float(cost, cost), latency_ms=optional_float(latency_ms, latency_ms),
                    source=None, trajectory_declared=declared)


def _parse_trajectory(ctx: _Ctx, traj: Any, tid: str) -> TrajectorySpec:
    traj = ctx.mapping(traj, record=tid, field="expected.trajectory")
    ctx.keys(traj, _TRAJ_KEYS, record=tid, where="expected.trajectory.")
    match = traj.get("match", "strict")
    if match not in MATCH_MODES:
        raise ctx.fail(f"unknown match mode {match!r}; allowed: {', '.join(MATCH_MODES)}", record=tid,
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


# --------------------------------------------------------------------------- the summary


def _cost_sums(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-task and total sums of recorded costs, exact on decimals (0.02 + 0.015 + 0.021 = 0.056)."""
    known = np.where(np.isnan(cost), 0.0, cost)
    d = _decimal_scale([known], known.size)
    if d is None:
        return known.sum(axis=1), math.fsum(known.ravel())
    q = 10**d
    ints = np.rint(known * q).astype(np.int64)
    return ints.sum(axis=1) / q, int(ints.sum()) / q


def _p95(x: np.ndarray) -> float:
    """Nearest-rank 95th percentile: an observed value, the maximum below 20 values."""
    srt = np.sort(x)
    return float(srt[max(math.ceil(0.95 * srt.size), 1) - 1])


def _int_if_whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass(frozen=True, eq=False)
class EvalSummary:
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
        run, ex = self.run, self._extras
        n = run.count
        ts = ex["trial_stats"]
        has_traj = run.has_trajectory
        entries = []
        score = self.task_score.tolist()
        gated = self.task_gated_score.tolist()
        present = self.gated_score_present.tolist()
        passed = self.task_passed.tolist()
        pak, phk = self.pass_at_k.tolist(), self.pass_hat_k.tolist()
        npass, traj_fail, misses = ts["passed"].tolist(), ts["traj_failed"].tolist(), ts["misses"].tolist()
        mn, mx, sd = ts["min"].tolist(), ts["max"].tolist(), ts["std"].tolist()
        tcost = ex["task_cost"].tolist()
        for i, tid in enumerate(run.task_ids):
            e: dict[str, Any] = {"taskId": tid, "id": tid}
            if run.task_types[i] is not None:
                e["type"] = run.task_types[i]
            e["score"] = score[i]
            if present[i]:
                e["gatedScore"] = gated[i]
            e["passed"] = passed[i]
            e["hasTrajectory"] = bool(has_traj[i])
            e["trials"] = {"count": n, "passRule": run.pass_rule, "meanScore": score[i]}
            e["passAtK"] = pak[i]
            e["passHatK"] = phk[i]
            stats: dict[str, Any] = {
                "count": n, "passedCount": npass[i], "trajectoryFailedCount": traj_fail[i],
                "fixtureMissCount": misses[i], "minScore": mn[i], "maxScore": mx[i],
            }
            if n > 1:
                stats["stdDev"] = sd[i]
            else:
                stats["stdDev"] = None
                stats["stdDevCause"] = Cause.MISSING_EVIDENCE.value
            e["trialStats"] = stats
            if not math.isnan(tcost[i]):
                e["cost"] = tcost[i]
            entries.append(e)
        return entries

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
    fails closed).  When every score and ``passScore`` is a decimal with at most nine
    places (the usual case), sums and threshold comparisons are exact integer
    arithmetic on the decimals and each reported mean is rounded once; otherwise
    means are double-double and comparisons absorb binary rounding error
    (:data:`SCORE_TOLERANCE`).

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
    ps = run.thresholds.pass_score
    score, miss = run.score, run.fixture_miss
    has = run.has_trajectory
    traj_failed = has[:, None] & ~run.trajectory_matched
    gated_out = traj_failed | miss
    gating = np.where(gated_out, 0.0, score)
    exact = _decimal_path(run, gated_out)
    if exact is not None:
        task_score, task_gated, trial_passed, mean_ok, agg, gagg, met = exact
    else:
        trial_passed = _geq(score, ps) & ~gated_out
        task_score = _mean_rows(score)
        task_gated = _mean_rows(gating)
        mean_ok = _geq(task_gated, ps)
        agg = _aggregate(task_score, run.aggregation)
        gagg = _aggregate(task_gated, run.aggregation)
        met = bool(_geq(gagg, ps))
    n_pass = trial_passed.sum(axis=1)
    if run.pass_rule == "mean":
        task_passed = mean_ok
    elif run.pass_rule == "all":
        task_passed = n_pass == run.count
    else:
        task_passed = n_pass > 0
    at, hat = _k_tables(run.count, run.k)
    present = has | (task_gated != task_score)
    gagg_present = bool(present.any())

    conditions: list[dict[str, Any]] = []
    reasons: list[str] = []
    n_gated_tasks = int(gated_out.any(axis=1).sum())
    # name the field the summary carries: with no trajectory and no miss there is no gated field,
    # and the gating score equals aggregateScore
    read = "gatedAggregateScore" if gagg_present else "aggregateScore"
    detail = (f"{read} {_fmt(gagg)} {'>=' if met else '<'} passScore {_fmt(ps)} "
              f"({run.aggregation} of {run.task_count} task gating scores; aggregateScore {_fmt(agg)}")
    if n_gated_tasks:
        names = [run.task_ids[i] for i in np.flatnonzero(gated_out.any(axis=1))[:5]]
        more = "" if n_gated_tasks <= 5 else f" and {n_gated_tasks - 5} more"
        detail += (f"; {n_gated_tasks} task(s) had trials gated to 0 by a failed trajectory or a "
                   f"fixture miss: {', '.join(names)}{more}")
    detail += ")"
    conditions.append({"condition": "gatedAggregateScore >= passScore", "value": gagg, "threshold": ps,
                       "met": met, "detail": detail})

    total_cost = None
    cost_known = ~np.isnan(run.cost)
    task_cost, total = _cost_sums(run.cost)
    if cost_known.all():
        total_cost = total
    lat_known = ~np.isnan(run.latency_ms)
    p95 = _p95(run.latency_ms.ravel()) if lat_known.all() else None
    mc, ml = run.thresholds.max_cost, run.thresholds.max_latency_ms
    if mc is not None:
        if total_cost is None:
            k_ = int((~cost_known).sum())
            conditions.append({"condition": "totalCost <= maxCost", "value": None,
                               "cause": Cause.MISSING_EVIDENCE.value, "threshold": mc, "met": False,
                               "detail": f"cannot check maxCost {_fmt(mc)}: {k_} trial(s) record no "
                               "cost (fails closed)"})
        else:
            ok = total_cost <= mc
            conditions.append({"condition": "totalCost <= maxCost", "value": total_cost, "threshold": mc,
                               "met": bool(ok), "detail": f"totalCost {_fmt(total_cost)} "
                               f"{'<=' if ok else '>'} maxCost {_fmt(mc)}"})
    if ml is not None:
        if p95 is None:
            k_ = int((~lat_known).sum())
            conditions.append({"condition": "p95LatencyMs <= maxLatencyMs", "value": None,
                               "cause": Cause.MISSING_EVIDENCE.value, "threshold": ml, "met": False,
                               "detail": f"cannot check maxLatencyMs {_fmt(ml)}: {k_} trial(s) record "
                               "no latencyMs (fails closed)"})
        else:
            ok = p95 <= ml
            conditions.append({"condition": "p95LatencyMs <= maxLatencyMs", "value": _int_if_whole(p95),
                               "threshold": _int_if_whole(ml),
                               "met": bool(ok), "detail": f"p95 trial latency {_fmt(p95)} ms "
                               f"{'<=' if ok else '>'} maxLatencyMs {_fmt(ml)}"})
    passed = all(c["met"] for c in conditions)
    failed = [c for c in conditions if not c["met"]]
    if passed:
        reasons.append("passed: " + "; ".join(c["detail"] for c in conditions))
    else:
        reasons.extend("not passed: " + c["detail"] for c in failed)

    t = run.task_count
    if run.count > 1:
        std = score.std(axis=1, ddof=1)
        # identical trial scores spread exactly 0 (the mean's rounding would print 1e-17)
        std = np.where(score.max(axis=1) == score.min(axis=1), 0.0, std)
    else:
        std = np.full(t, np.nan)
    trial_stats = {
        "passed": n_pass,
        "traj_failed": traj_failed.sum(axis=1),
        "misses": miss.sum(axis=1),
        "min": score.min(axis=1),
        "max": score.max(axis=1),
        "std": std,
    }
    task_cost = np.where(cost_known.all(axis=1), task_cost, np.nan)
    return EvalSummary(
        run=run, aggregate_score=agg, gated_aggregate_score=gagg, gated_aggregate_present=gagg_present,
        passed=passed, reasons=tuple(reasons), conditions=tuple(conditions), task_score=task_score,
        task_gated_score=task_gated, gated_score_present=present, task_passed=task_passed,
        pass_at_k=at[n_pass], pass_hat_k=hat[n_pass], trial_gating_score=gating,
        trial_passed=trial_passed, total_cost=total_cost, p95_latency_ms=p95,
        _extras={"trial_stats": trial_stats, "task_cost": task_cost},
    )


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


# --------------------------------------------------------------------------- schemas


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``evaltk/schemas``: ``"suite-run"`` or ``"eval-summary"``."""
    if name not in ("suite-run", "eval-summary", "eval-scored-event"):
        raise ValueError(f"`name` must be 'suite-run', 'eval-summary' or 'eval-scored-event'; got {name!r}.")
    text = resources.files("evaltk").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)


def _path_str(path: Iterable[Any]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def validate_summary(doc: Any, *, file: str | None = None) -> None:
    """Raise :class:`SchemaViolation` unless ``doc`` follows the EvalSummary schema.

    The error names the task (``tasks[1]`` / its ``taskId``) and the field.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema("eval-summary"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = list(e.absolute_path)
        record = None
        if len(path) >= 2 and path[0] == "tasks" and isinstance(path[1], int):
            task = doc["tasks"][path[1]]
            tid = task.get("taskId", task.get("id")) if isinstance(task, Mapping) else None
            record = tid if isinstance(tid, str) else f"tasks[{path[1]}]"
            path = path[2:]
        raise SchemaViolation(e.message, file=file, record=record, field=_path_str(path))


def load_summary(source: str | Path | Mapping[str, Any], *, file: str | None = None) -> dict[str, Any]:
    """Read an EvalSummary (JSON/YAML file or mapping) and validate it against the schema."""
    if isinstance(source, (str, Path)):
        doc = _read_document(Path(source))
        file = str(source)
    else:
        doc = source
    validate_summary(doc, file=file)
    return dict(doc)


# --------------------------------------------------------------------------- the gate


@dataclass(frozen=True)
class GateDecision:
    """What a deployment gate concludes from a summary: ``passed`` and why."""

    passed: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": list(self.reasons)}


def gate_summary(summary: EvalSummary | Mapping[str, Any] | str | Path) -> GateDecision:
    """Read ``passed`` from a summary, failing closed on a summary that cannot back it.

    The gate passes only when the summary says ``passed: true`` and nothing in the
    summary contradicts it: no recorded ``thresholds.passScore`` (the pass cannot be
    verified), ``gatedAggregateScore`` below it, a task carrying ``gatedScore`` or
    ``hasTrajectory: true`` while the summary lacks ``gatedAggregateScore`` or the task
    its ``gatedScore`` (RFC 0246 section D: absent never means ungated), a
    ``gatedAggregateScore`` that is not the mean of the tasks' gating scores (mean
    aggregation), or a decision condition recorded as unmet.

    Examples
    --------
    >>> gate_summary({"suite": "s", "aggregateScore": 0.9, "gatedAggregateScore": 0.45,
    ...     "passed": True, "thresholds": {"passScore": 0.7},
    ...     "tasks": [{"taskId": "a", "score": 0.9, "gatedScore": 0.45, "passed": False}]}).passed
    False
    """
    if isinstance(summary, EvalSummary):
        doc = summary.to_dict()
    else:
        doc = load_summary(summary)
    reasons: list[str] = []
    contradictions: list[str] = []
    ps = (doc.get("thresholds") or {}).get("passScore")
    gagg = doc.get("gatedAggregateScore")
    agg = doc.get("aggregateScore")
    tasks = doc.get("tasks") or []
    if ps is not None and gagg is not None and not _geq(gagg, ps):
        contradictions.append(f"gatedAggregateScore {_fmt(gagg)} < passScore {_fmt(ps)}")
    if gagg is None and any(isinstance(t, Mapping) and "gatedScore" in t for t in tasks):
        contradictions.append("tasks carry gatedScore but the summary has no gatedAggregateScore "
                              "(RFC 0246 section D): cannot tell what the gate read")
    if ps is not None and gagg is None and agg is not None and not _geq(agg, ps):
        contradictions.append(f"aggregateScore {_fmt(agg)} < passScore {_fmt(ps)}")
    if ps is None:
        contradictions.append("the summary records no thresholds.passScore: the pass cannot be verified")
    traj = [t for t in tasks if isinstance(t, Mapping) and t.get("hasTrajectory") is True]
    if traj and gagg is None:
        contradictions.append(f"{len(traj)} task(s) have an expected trajectory but the summary has no "
                              "gatedAggregateScore (RFC 0246 section D: absent never means ungated)")
    missing = [str(t.get("taskId")) for t in traj if "gatedScore" not in t]
    if missing:
        contradictions.append(f"trajectory task(s) {', '.join(missing[:5])} carry no gatedScore "
                              "(RFC 0246 section D)")
    gated = [t.get("gatedScore", t.get("score")) for t in tasks if isinstance(t, Mapping)]
    if (gagg is not None and gated and all(_num(x) is not None for x in gated)
            and doc.get("aggregation", "mean") == "mean"):
        mean_gated = sum(float(x) for x in gated) / len(gated)
        if abs(mean_gated - float(gagg)) > 1e-9:
            contradictions.append(f"gatedAggregateScore {_fmt(gagg)} is not the mean of the tasks' gating "
                                  f"scores ({mean_gated:.6g})")
    for c in doc.get("decision") or []:
        if isinstance(c, Mapping) and c.get("met") is False:
            contradictions.append(str(c.get("detail") or c.get("condition")))
    if doc["passed"] is True and not contradictions:
        reasons.extend(doc.get("reasons") or [
            "passed: " + (f"gatedAggregateScore {_fmt(gagg)}" if gagg is not None
                          else f"aggregateScore {_fmt(agg)}")
            + (f" >= passScore {_fmt(ps)}" if ps is not None else " (summary says passed)")])
        return GateDecision(True, tuple(reasons))
    if doc["passed"] is not True:
        reasons.extend(doc.get("reasons") or ["not passed: the summary says passed: false"])
        return GateDecision(False, tuple(reasons))
    reasons.append("not passed (fail-closed): the summary says passed: true but contradicts it")
    reasons.extend("  " + c for c in contradictions)
    return GateDecision(False, tuple(reasons))


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


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def check_summary(run: SuiteRun | Mapping[str, Any] | str | Path,
                  host_summary: Mapping[str, Any] | str | Path, *,
                  events: Iterable[Mapping[str, Any]] | None = None) -> list[Violation]:
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
    events : iterable of mapping, optional
        The host's ``eval.scored`` events; each must carry the trial's output score
        (not zeroed) and its verdict.

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
        host = _read_document(Path(host_summary))
        hfile = str(host_summary)
    else:
        host, hfile = host_summary, None
    ours = summarize_suite(run)
    out: list[Violation] = []

    def v(rule: str, where: str, fld: str, msg: str, exp: Any = None, rep: Any = None) -> None:
        out.append(Violation(rule, where, fld, msg, exp, rep))

    try:
        validate_summary(host, file=hfile)
    except SchemaViolation as e:
        where = "suite" if e.record is None else f"task {e.record}"
        v("shape", where, e.field or "(document)", f"does not follow the EvalSummary schema: {e.detail}")
        if not isinstance(host, Mapping):
            return out
    rep_tasks = host.get("tasks") if isinstance(host.get("tasks"), list) else []
    by_id: dict[str, Mapping[str, Any]] = {}
    for i, t in enumerate(rep_tasks):
        if not isinstance(t, Mapping):
            continue
        tid = t.get("taskId", t.get("id"))
        if not isinstance(tid, str):
            v("shape", f"tasks[{i}]", "taskId", "a task entry has no taskId")
            continue
        if tid in by_id:
            v("shape", f"task {tid}", "taskId", "reported twice")
        by_id[tid] = t
    extra = [t for t in by_id if t not in set(run.task_ids)]
    for tid in extra:
        v("shape", f"task {tid}", "taskId", "reported but not in the run")

    ps = run.thresholds.pass_score
    has = run.has_trajectory
    host_trials = host.get("trials") if isinstance(host.get("trials"), Mapping) else {}
    host_k = host_trials.get("k")
    if not isinstance(host_k, int) or isinstance(host_k, bool) or not 1 <= host_k <= run.count:
        host_k = None
    for i, tid in enumerate(run.task_ids):
        where = f"task {tid}"
        t = by_id.get(tid)
        if t is None:
            v("shape", where, "taskId", "the run has this task but the summary does not report it")
            continue
        exp_score = float(ours.task_score[i])
        exp_gated = float(ours.task_gated_score[i])
        exp_passed = bool(ours.task_passed[i])
        rs = _num(t.get("score"))
        if rs is None:
            v("shape", where, "score", "missing or not a number", exp_score, t.get("score"))
        elif not _close(rs, exp_score):
            if exp_gated < exp_score and (_close(rs, exp_gated) or rs == 0.0):
                v("0246.C", where, "score",
                  f"reports {_fmt(rs)}, the gated value, instead of the output score {_fmt(exp_score)}: "
                  "section C forbids zeroing a reported score; the gate belongs in gatedScore",
                  exp_score, rs)
            else:
                v("0244.B", where, "score", f"reports {_fmt(rs)}; the trials give {_fmt(exp_score)}",
                  exp_score, rs)
        trials = t.get("trials") if isinstance(t.get("trials"), Mapping) else {}
        ms = trials.get("meanScore")
        if ms is not None:
            msf = _num(ms)
            if msf is None or not _close(msf, exp_score):
                rule = "0246.C" if msf is not None and exp_gated < exp_score and _close(msf, exp_gated) \
                    else "0244.B"
                v(rule, where, "trials.meanScore",
                  f"reports {ms!r}; the mean of the trial scores is {_fmt(exp_score)}", exp_score, ms)

        gs = t.get("gatedScore")
        if gs is None:
            if has[i]:
                v("0246.D", where, "gatedScore",
                  f"missing on a task with expected.trajectory (must be present whether or not it "
                  f"differs; expected {_fmt(exp_gated)})", exp_gated, None)
        else:
            gsf = _num(gs)
            if gsf is None or not _close(gsf, exp_gated):
                v("0246.A", where, "gatedScore",
                  f"reports {gs!r}; the mean of the trials' gating scores is {_fmt(exp_gated)}",
                  exp_gated, gs)
            elif not has[i] and _close(exp_gated, exp_score):
                v("0246.D", where, "gatedScore",
                  "carried on a task without expected.trajectory where it equals score "
                  "(section D: otherwise omitted)", None, gs)
        rp = t.get("passed")
        if not isinstance(rp, bool):
            v("shape", where, "passed", "missing or not a boolean", exp_passed, rp)
        elif rp != exp_passed:
            if run.pass_rule == "mean":
                why = (f"passRule mean reads the task gating score {_fmt(exp_gated)} against passScore "
                       f"{_fmt(ps)}")
            else:
                why = (f"passRule {run.pass_rule} counts trial verdicts: "
                       f"{int(ours.trial_passed[i].sum())} of {run.count} passed")
            v("0246.B", where, "passed",
              f"reports {json.dumps(rp)}; {why}, so passed is {json.dumps(exp_passed)}", exp_passed, rp)
        c = int(ours.trial_passed[i].sum())
        for key, fn in (("passAtK", pass_at_k), ("passHatK", pass_hat_k)):
            val = t.get(key, trials.get(key))
            if val is None:
                continue
            k = host_k if host_k is not None else run.k
            # Without a declared k, any k in 1..n that reproduces the value follows from the trials.
            ks = [k] if host_k is not None else range(1, run.count + 1)
            if _num(val) is None or not any(_close(float(val), fn(run.count, c, kk)) for kk in ks):
                v("0244.B", where, key,
                  f"reports {val!r}; with n={run.count} trials of which c={c} passed, k={k} gives "
                  f"{_fmt(fn(run.count, c, k))}" + ("" if host_k is not None else
                                                   " (and no k in 1..n reproduces it)"),
                  fn(run.count, c, k), val)
        stats = t.get("trialStats")
        if isinstance(stats, Mapping):
            _check_stats(v, where, stats, ours, i)

    # suite level
    agg = _num(host.get("aggregateScore"))
    if agg is None:
        v("shape", "suite", "aggregateScore", "missing or not a number", ours.aggregate_score,
          host.get("aggregateScore"))
    elif not _close(agg, ours.aggregate_score):
        if ours.gated_aggregate_score < ours.aggregate_score and _close(agg, ours.gated_aggregate_score):
            v("0246.C", "suite", "aggregateScore",
              f"reports {_fmt(agg)}, the gated aggregate, instead of the aggregation of task scores "
              f"{_fmt(ours.aggregate_score)} (section C: aggregateScore is unchanged)",
              ours.aggregate_score, agg)
        else:
            v("0244.B", "suite", "aggregateScore",
              f"reports {_fmt(agg)}; the {run.aggregation} of the task scores is "
              f"{_fmt(ours.aggregate_score)}", ours.aggregate_score, agg)
    gagg = host.get("gatedAggregateScore")
    if gagg is None:
        if has.any():
            v("0246.D", "suite", "gatedAggregateScore",
              f"missing although {int(has.sum())} task(s) have expected.trajectory (expected "
              f"{_fmt(ours.gated_aggregate_score)})", ours.gated_aggregate_score, None)
    else:
        g = _num(gagg)
        if not ours.gated_aggregate_present and g is not None and _close(g, ours.gated_aggregate_score):
            v("0246.D", "suite", "gatedAggregateScore",
              "carried on a suite with no expected.trajectory and no gated task (section D: a suite "
              "with no trajectory and no fixture miss carries neither field)", None, gagg)
        elif g is None or not _close(g, ours.gated_aggregate_score):
            v("0246.A", "suite", "gatedAggregateScore",
              f"reports {gagg!r}; the {run.aggregation} of the task gating scores is "
              f"{_fmt(ours.gated_aggregate_score)}", ours.gated_aggregate_score, gagg)
    rp = host.get("passed")
    if not isinstance(rp, bool):
        v("shape", "suite", "passed", "missing or not a boolean", ours.passed, rp)
    elif rp != ours.passed:
        v("0246.B", "suite", "passed", f"reports {json.dumps(rp)}; {'; '.join(ours.reasons)}", ours.passed,
          rp)
    for key, exp in (("taskCount", run.task_count), ("passedCount", ours.passed_count)):
        val = host.get(key)
        if val is not None and val != exp:
            v("0244.B" if key == "passedCount" else "shape", "suite", key, f"reports {val!r}; expected {exp}",
              exp, val)
    tc = _num(host.get("totalCost", host.get("totalCostUsd")))
    if tc is not None and ours.total_cost is not None and not _close(tc, ours.total_cost):
        v("0244.B", "suite", "totalCost", f"reports {_fmt(tc)}; the trials cost {_fmt(ours.total_cost)}",
          ours.total_cost, tc)

    if events is not None:
        out.extend(_check_events(ours, events))
    return out


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


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_bytes().decode("utf-8").splitlines()
    except FileNotFoundError:
        raise UnreadableInput("no such file", file=str(path)) from None
    except UnicodeDecodeError as e:
        raise UnreadableInput(f"not UTF-8 ({e.reason})", file=str(path)) from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise UnreadableInput(f"not JSON: {e.msg}", file=str(path), record=n) from None
    return out
