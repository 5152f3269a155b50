"""The suite run model: pass rules, trajectory specs and their matching, thresholds and the
column-wise :class:`SuiteRun`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .._display import HtmlTable
from ._scores import _int_if_whole

#: How a task's trials decide whether the task passed (RFC 0244 section B, RFC 0246 section B).
PASS_RULES: tuple[str, ...] = ("mean", "all", "any")
#: Trajectory match modes; see :class:`TrajectorySpec`.
MATCH_MODES: tuple[str, ...] = ("strict", "unordered", "subset", "superset")
#: Aggregations of task scores into ``aggregateScore`` (``mean`` by default).
AGGREGATIONS: tuple[str, ...] = ("mean", "median", "min")
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
class SuiteRun(HtmlTable):
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

    @cached_property
    def has_trajectory(self) -> np.ndarray:
        """Per task: whether it declares ``expected.trajectory`` (computed once, read-only:
        the summary, ``to_dict`` and the checker read it per task)."""
        if self.trajectory_declared is not None:
            return self.trajectory_declared
        has = np.array([t is not None for t in self.trajectories], dtype=bool)
        has.flags.writeable = False
        return has

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
