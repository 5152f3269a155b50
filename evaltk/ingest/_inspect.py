"""inspect_ai eval logs (``.eval`` and ``.json``) as evaltk runs, trials and judge answers.

Read with inspect_ai's own ``read_eval_log`` (the optional extra ``inspect``).  Each
sample x epoch becomes a run, each sample a task and each epoch a trial of a suite run;
the mapping is docs/import-inspect.md.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._validation import import_optional
from ..errors import UnreadableInput
from ._import import Imported, _answers_frame, _Ledger, _mark_step, _policy_fields, canonical_text
from ._policy import ActionPolicy

#: The extra that provides inspect_ai.
INSPECT_EXTRA = "inspect"
#: Exception names inspect_ai records for a cancelled sample (its error message is their repr).
_CANCELLED = ("CancelledError", "Cancelled")
#: Decoding settings carried into an answer's ``decoding`` column when the grader call set them.
_DECODING_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "seed")


def _require_inspect() -> Any:
    import_optional("inspect_ai", purpose="reading inspect_ai logs")  # MissingExtra names the extra
    import inspect_ai.log as inspect_log

    return inspect_log


def _jsonable(v: Any) -> Any:
    """A score value, metadata or tool argument as JSON (pydantic models dumped; NaN as None)."""
    if hasattr(v, "model_dump"):
        return _jsonable(v.model_dump(mode="json", exclude_none=True))
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, str | int | float | bool):
        return v
    return str(v)


def _usage(u: Any) -> dict[str, Any] | None:
    if u is None:
        return None
    return {k: v for k, v in u.model_dump(exclude_none=True).items() if v is not None}


def _drop_reason(error: Any) -> str:
    """``cancelled: ...`` for a sample inspect_ai cancelled, ``error: ...`` for one that errored."""
    msg = (error.message or "").strip()
    # a cancellation's repr carries its asyncio task's repr (" by <Task ...>"): dropped, the
    # closing quote and parenthesis kept; a long message is cut with "..." saying so
    first = re.sub(r" by <.*>(?=[\"']\)$)", "", msg.splitlines()[0] if msg else "(no message)")
    first = first if len(first) <= 200 else first[:197] + "..."
    if any(msg.startswith(name + "(") for name in _CANCELLED):
        return f"cancelled: the sample was cancelled before it finished ({first})"
    return f"error: the sample stopped on an error ({first})"


def _task_text(sample: Any) -> str:
    if isinstance(sample.input, str):
        text = sample.input
    else:
        text = next((m.text for m in sample.input if m.role == "user" and m.text), "")
    return text.strip() or f"inspect sample {sample.id}"


def _scorer_models(sample: Any) -> dict[str, dict[str, Any]]:
    """Scorer name -> the grader model call made inside its span (``model``, ``decoding``).

    A score is model-graded exactly when inspect_ai recorded a model call in its scorer's span.
    """
    spans: dict[str, str] = {}
    for e in sample.events:
        if e.event == "span_begin" and getattr(e, "type", None) == "scorer":
            spans[e.id] = e.name
    out: dict[str, dict[str, Any]] = {}
    for e in sample.events:
        if e.event == "model" and getattr(e, "span_id", None) in spans:
            name = spans[e.span_id]
            if name in out:
                continue
            cfg = e.config.model_dump(exclude_none=True) if getattr(e, "config", None) else {}
            dec = {k: cfg[k] for k in _DECODING_KEYS if k in cfg}
            out[name] = {"model": e.model, "decoding": canonical_text(dec) if dec else None}
    return out


def _model_calls(sample: Any) -> dict[str, Any]:
    """Assistant message id -> the model event that produced it (usage, model)."""
    return {e.output.message.id: e for e in sample.events
            if e.event == "model" and e.output is not None and e.output.choices}


def _steps(sample: Any, policy: ActionPolicy | None) -> list[dict[str, Any]]:
    """Messages and tool calls in conversation order; tool results and errors kept on the call's step."""
    calls = _model_calls(sample)
    steps: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    first_user = True
    for m in sample.messages:
        if m.role == "system":
            continue
        if m.role == "user":
            if first_user:
                first_user = False
                continue
            steps.append(_mark_step({"action": "user_message", "content": m.text}, None, policy))
        elif m.role == "assistant":
            made: list[dict[str, Any]] = []
            for tc in m.tool_calls or []:
                call = {"action": tc.function, "target": canonical_text(_jsonable(tc.arguments)),
                        "tool_call_id": tc.id}
                by_call[tc.id] = call
                made.append(_mark_step(call, tc.function, policy))
            if not made:
                made.append(_mark_step({"action": "assistant_message"}, None, policy))
            if m.text:
                made[0]["content"] = m.text
            ev = calls.get(m.id)
            if ev is not None:  # the model call's usage, on the first step it produced
                made[0]["model"] = ev.model
                made[0]["usage"] = _usage(ev.output.usage)
            steps.extend(made)
        elif m.role == "tool":
            step = by_call.get(m.tool_call_id or "")
            if step is None:
                step = _mark_step({"action": "tool_result", "tool_call_id": m.tool_call_id}, None, policy)
                steps.append(step)
            step["result"] = m.text
            if m.error is not None:
                step["error"] = {"type": m.error.type, "message": m.error.message}
    return [{"index": i, **s} for i, s in enumerate(steps)]


def _answer_word(value: Any, to_float: Any) -> str | None:
    """A model-graded score value as an x_task answer word: ``yes`` (1), ``no`` (0),
    ``cannot_tell`` (inspect's no-answer ``N``); None for anything else (partial credit)."""
    if value == "N":
        return "cannot_tell"
    try:
        f = to_float(value)
    except Exception:
        return None
    return {1.0: "yes", 0.0: "no"}.get(f)


def _trial_value(value: Any, to_float: Any) -> float:
    """A score value through inspect_ai's ``value_to_float`` (NaN for a dict, a list, or a
    value it cannot read: no trial score)."""
    if isinstance(value, dict | list):
        return math.nan
    try:
        return float(to_float(value))
    except Exception:
        return math.nan


def _read_log(inspect_log: Any, path: str) -> Any:
    if not Path(path).is_file():
        raise UnreadableInput("no such file" if not Path(path).exists() else "is not a file", file=path)
    try:
        return inspect_log.read_eval_log(path)
    except Exception as e:  # inspect_ai raises its own, json and zip errors alike
        raise UnreadableInput(f"not an inspect_ai eval log ({type(e).__name__}: {str(e)[:200]})",
                              file=path) from None


def import_inspect(logs: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *,
                   policy: ActionPolicy | None = None, scorer: str | None = None,
                   pass_score: float = 1.0, k: int | None = None) -> Imported:
    """Import inspect_ai eval logs as evaltk runs, a suite run and judge answers.

    Parameters
    ----------
    logs : path or list of paths
        ``.eval`` or ``.json`` logs, read with ``inspect_ai.log.read_eval_log``.
    policy : ActionPolicy, optional
        Which tool calls are consequential and which ask for confirmation.  Without
        one, every run says ``consequential_declared: false`` and x_safe is
        ``not_implemented`` (never ``not_applicable``: the question was not asked).
    scorer : str, optional
        The score that is each trial's score (default: the log's first scorer).
    pass_score : float
        The suite's ``passScore``: a trial passes when its score is at least this
        (inspect_ai's ``pass_at(k, value=1.0)`` counts ``score >= value``).
    k : int, optional
        The ``k`` of pass@k and pass^k (default: the number of epochs).

    Returns
    -------
    Imported
        One run per sample x epoch (errored and cancelled samples dropped with their
        reason), one suite task per sample, one trial per epoch, one judge answer per
        model-graded score, and the ledger.
    """
    inspect_log = _require_inspect()
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    paths = [os.fspath(logs)] if isinstance(logs, str | os.PathLike) else [os.fspath(p) for p in logs]
    if not paths:
        raise ValueError("no inspect_ai log given.")
    if not 0 <= pass_score <= 1:
        raise ValueError(f"pass_score must be in [0, 1]; got {pass_score!r}.")
    led = _Ledger()
    traces: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    # suite task id -> its trials by epoch, why an epoch has none, where each epoch was seen
    tasks: dict[str, dict[str, Any]] = {}
    n_epochs = 0
    names = set()
    for path in paths:
        log = _read_log(inspect_log, path)
        spec = log.eval
        names.add(spec.task)
        n_epochs = max(n_epochs, int(spec.config.epochs or 1))
        # one entry per scorer and reducer: each scorer named once, in the log's order
        names_here = list(dict.fromkeys(sc.name for sc in log.results.scores)) if log.results else []
        if scorer is not None and names_here and scorer not in names_here:
            raise ValueError(f"{path}: no scorer {scorer!r} in the log (it has {', '.join(names_here)}).")
        first = scorer or (names_here[0] if names_here else None)
        for sample in log.samples or []:
            tid = f"{spec.eval_id}:{sample.id}:{sample.epoch}"
            rec = f"sample {sample.id} epoch {sample.epoch}"
            task_id = f"{spec.task}/{sample.id}"
            slot = tasks.setdefault(task_id, {"trials": {}, "why": {}, "seen": {}, "twice": [], "path": path})
            if sample.epoch in slot["seen"]:  # the same sample and epoch in two logs: which trial counts?
                slot["twice"].append(f"epoch {sample.epoch} is in {slot['seen'][sample.epoch]} and {path}")
            slot["seen"].setdefault(sample.epoch, path)
            if sample.error is not None:
                reason = _drop_reason(sample.error)
                led.dropped(path, rec, tid, "sample", reason, "error")
                slot["why"][sample.epoch] = reason.split(":", 1)[0]
                continue
            graders = _scorer_models(sample)
            scores = sample.scores or {}
            run = {
                "trace_id": tid, "task": _task_text(sample), "status": "complete", "agent": spec.model,
                **_policy_fields(policy),
                "steps": _steps(sample, policy),
                "source": {"format": "inspect_ai", "log": path, "eval_id": spec.eval_id, "run_id": spec.run_id,
                           "task": spec.task, "sample_id": sample.id, "epoch": sample.epoch,
                           "uuid": sample.uuid},
                "observations": {
                    "final_answer": sample.output.completion if sample.output else None,
                    "target": _jsonable(sample.target),
                    "scores": {n: _jsonable(s) for n, s in scores.items()},
                    "model_usage": {m: _usage(u) for m, u in (sample.model_usage or {}).items()},
                    "limit": _jsonable(sample.limit) if sample.limit else None,
                    "total_time": sample.total_time, "working_time": sample.working_time,
                },
            }
            traces.append(run)
            led.kept(path, rec, tid, "sample", "run")
            chosen = first if first is not None else next(iter(scores), None)
            if chosen not in scores:
                slot["why"][sample.epoch] = f"no {chosen or 'trial'} score"
            for name, s in scores.items():
                srec = f"{rec} score {name}"
                became = []
                if name == chosen:
                    val = _trial_value(s.value, to_float)
                    if isinstance(val, float) and math.isfinite(val) and 0 <= val <= 1:
                        slot["trials"][sample.epoch] = {"score": val, "traceId": tid,
                                                        "toolCalls": [st["action"] for st in run["steps"]
                                                                      if "tool_call_id" in st]}
                        became.append("trial score")
                    else:
                        slot["why"][sample.epoch] = "score not in [0, 1]"
                        led.dropped(path, srec, tid, "score",
                                    f"malformed: the trial score must be a number in [0, 1]; got {_jsonable(s.value)!r}",
                                    "value")
                        continue
                if name in graders:
                    word = _answer_word(s.value, to_float)
                    if word is None:
                        if became:
                            led.kept(path, srec, tid, "score", "trial score")
                        else:
                            led.dropped(path, srec, tid, "score", "not a yes / no answer: model-graded "
                                        f"value {_jsonable(s.value)!r} (x_task answers are yes, no or "
                                        "cannot tell); kept on the run's observations", "value")
                        continue
                    g = graders[name]
                    answers.append({"trace_id": tid, "measure": "x_task", "rater": name, "answer": word,
                                    "judge_model": g["model"], "decoding": g["decoding"]})
                    became.append("answer")
                led.kept(path, srec, tid, "score", " and ".join(became) or "run observation")
    suite_tasks = []
    for task_id, slot in tasks.items():
        trials = slot["trials"]
        if slot["twice"]:
            led.dropped(slot["path"], task_id, None, "task", f"duplicate trial: {'; '.join(slot['twice'])}; which one "
                        "counts would be a guess (import the logs separately)", "trials")
            continue
        if len(trials) == n_epochs:
            suite_tasks.append({"id": task_id, "trials": [trials[e] for e in sorted(trials)]})
            continue
        missing = sorted(set(range(1, n_epochs + 1)) - set(trials))
        why = ", ".join(f"epoch {e}: {slot['why'].get(e, 'not in the log')}" for e in missing)
        led.dropped(slot["path"], task_id, None, "task",
                    f"incomplete task: {len(trials)} of {n_epochs} trials usable ({why}); a suite task "
                    "needs every trial, and a missing one is not a failure", "trials")
    suite = None
    if suite_tasks:
        kk = n_epochs if k is None else int(k)
        if not 1 <= kk <= n_epochs:
            raise ValueError(f"k must be in [1, {n_epochs}] (the number of epochs); got {k!r}.")
        suite = {"suite": "+".join(sorted(names)), "thresholds": {"passScore": pass_score},
                 "trials": {"count": n_epochs, "passRule": "mean", "k": kk}, "tasks": suite_tasks}
    return Imported("inspect_ai", traces, _answers_frame(answers), suite, led.frame(), tuple(paths), policy)


