"""The published schemas and the gate on a summary document (`evaltk suite gate`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .. import _io
from ..errors import SchemaViolation
from ._scores import _num, _shortest
from ._summary import EvalSummary, _fmt

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


@cache
def _summary_validator() -> Any:
    """The EvalSummary schema's validator, built once (as the trajectory documents' are)."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    # JSON has no NaN or infinity: a "number" of the schema is finite, so a NaN gatedScore
    # cannot pass `minimum: 0, maximum: 1` by comparing False to both (RFC 0246 gated-fields-shape)
    finite = base.TYPE_CHECKER.redefine(
        "number", lambda checker, x: base.TYPE_CHECKER.is_type(x, "number") and math.isfinite(x))
    return jsonschema.validators.extend(base, type_checker=finite)(schema("eval-summary"))


def validate_summary(doc: Any, *, file: str | None = None) -> None:
    """Raise :class:`SchemaViolation` unless ``doc`` follows the EvalSummary schema.

    The error names the task (``tasks[1]`` / its ``taskId``) and the field.
    """
    errors = sorted(_summary_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = list(e.absolute_path)
        record = None
        if len(path) >= 2 and path[0] == "tasks" and isinstance(path[1], int):
            task = doc["tasks"][path[1]]
            tid = task.get("taskId", task.get("id")) if isinstance(task, Mapping) else None
            record = tid if isinstance(tid, str) else f"tasks[{path[1]}]"
            path = path[2:]
        msg = e.message
        if isinstance(e.instance, float) and not math.isfinite(e.instance):
            msg = f"{e.instance!r} is not a finite number (a score here is a number in 0-1)"
        raise SchemaViolation(msg, file=file, record=record, field=_path_str(path))


def load_summary(source: str | Path | Mapping[str, Any], *, file: str | None = None) -> dict[str, Any]:
    """Read an EvalSummary (JSON/YAML file or mapping) and validate it against the schema."""
    if isinstance(source, (str, Path)):
        doc = _io.read_document(Path(source))
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
    # two numbers read from the document compare exactly: a float orders as its shortest decimal
    if ps is not None and gagg is not None and not gagg >= ps:
        contradictions.append(f"gatedAggregateScore {_shortest(gagg)} < passScore {_shortest(ps)}")
    read_instead = "the summary has no gatedAggregateScore, so aggregateScore was read"
    carrying = sum(1 for t in tasks if isinstance(t, Mapping) and "gatedScore" in t)
    if gagg is None and carrying:
        contradictions.append(f"gatedAggregateScore is missing although {carrying} task(s) carry gatedScore "
                              "(RFC 0246 section D): the summary does not say which aggregate decided its pass")
    if ps is not None and gagg is None and agg is not None and not agg >= ps:
        contradictions.append(f"aggregateScore {_shortest(agg)} < passScore {_shortest(ps)} ({read_instead})")
    if ps is None:
        contradictions.append("the summary records no thresholds.passScore: the pass cannot be verified")
    traj = [t for t in tasks if isinstance(t, Mapping) and t.get("hasTrajectory") is True]
    if traj and gagg is None:
        contradictions.append(f"gatedAggregateScore is missing although {len(traj)} task(s) have an expected "
                              "trajectory (RFC 0246 section D: absent never means ungated)")
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
            "passed: " + (f"gatedAggregateScore {_shortest(gagg)}" if gagg is not None
                          else f"aggregateScore {_shortest(agg)}")  # type: ignore[arg-type]  # the schema requires it
            + (f" >= passScore {_shortest(ps)}" if ps is not None else " (summary says passed)")
            + ("" if gagg is not None else f" ({read_instead})")])
        return GateDecision(True, tuple(reasons))
    if doc["passed"] is not True:
        reasons.extend(doc.get("reasons") or ["not passed: the summary says passed: false"])
        return GateDecision(False, tuple(reasons))
    reasons.append("not passed (fail-closed): the summary says passed: true but contradicts it")
    reasons.extend("  " + c for c in contradictions)
    return GateDecision(False, tuple(reasons))
