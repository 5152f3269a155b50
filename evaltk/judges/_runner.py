"""The judge runner: traces and a rubric in, the answers table ingest reads out.

Seed 002, "The pipeline": judges produce the answers that the panel fold turns into
verdicts, and "Comparing across scorer versions: No": so every answer carries the
instrument that produced it (:data:`evaltk.ingest.INSTRUMENT_COLUMNS`: the judge's model
and version, the rubric id and digest, the template digest, the decoding settings) and
the digest of the prompt it was asked.

What happens to each unit (a terminal screen, a run, a gradable step, a guide):

* **no evidence to ask on** (no terminal screen captured, no gradable step, no guide):
  no call; listed in :attr:`JudgeRun.skipped` with its cause;
* **a reply read into the vocabulary**: an answer row;
* **a reply that cannot be read** (prose, a word of another measure's vocabulary): an
  answer row ``cannot_tell`` with the reason ``"unreadable reply: ..."``; seed 002
  reserves the abstained value for exactly that;
* **a call that fails after its retries** (timeouts, 5xx, a dropped connection, a 429
  whose Retry-After exceeds the bound): no answer row; listed in
  :attr:`JudgeRun.failures` with the reason, so the panel fold records a skip.  Nothing
  becomes a 0.

Replies are cached on disk (sqlite3) under the full instrument and the rendered
prompt's digest: a changed judge, model version, rubric, template or decoding setting
never reuses a grade, and a run that was interrupted resumes with no second call for an
item already graded.
"""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import _columns
from .._io import canonical_json, sha256_digest
from ..errors import SchemaViolation
from ..ingest import INSTRUMENT_COLUMNS, TraceRecords, read_traces
from ..values import ANSWER_TABLE_COLUMNS, CANNOT_TELL, Cause
from ._client import CallFailed, ChatClient, ChatReply, OpenAIChatClient, Price
from ._rubric import Rubric, load_rubric, require

#: The columns of :attr:`JudgeRun.answers`: the answer-table profile, what the answer cost,
#: the instrument (:data:`evaltk.ingest.INSTRUMENT_COLUMNS`), the rendered prompt's digest,
#: and why an answer abstained.
JUDGE_ANSWER_COLUMNS: tuple[str, ...] = (*ANSWER_TABLE_COLUMNS, "rater_version", "cost", "latency_ms",
                                         *INSTRUMENT_COLUMNS, "prompt_digest", "reason")
#: The columns of :attr:`JudgeRun.failures`: one row per unit whose call failed after its retries.
FAILURE_COLUMNS: tuple[str, ...] = ("trace_id", "measure", "step", "rater", "reason", "attempts",
                                    "prompt_digest")
#: The columns of :attr:`JudgeRun.skipped`: one row per unit with nothing to ask on.
SKIPPED_COLUMNS: tuple[str, ...] = ("trace_id", "measure", "step", "cause", "reason")

_FORBIDDEN_DECODING = ("model", "messages", "stream", "n")
_KEY_ENV = re.compile(r"^[A-Z][A-Z0-9_]*(API_KEY|_TOKEN)$")
_JUDGE_KEYS = ("name", "model", "model_version", "base_url", "api_key_env", "decoding", "price")


# --------------------------------------------------------------------------- the judge


@dataclass(frozen=True)
class JudgeConfig:
    """One candidate judge: who answers (``name``, the answers' ``rater``), which model and
    version, its decoding settings, where it is served and its declared price.

    ``decoding`` is sent with every request (``temperature``, ``max_tokens``, ``seed``...)
    and recorded as canonical JSON.  ``model_version`` is what you pin the model to (a
    dated snapshot, a weights digest); empty when you cannot, which the instrument then
    shows.  ``api_key_env`` names the environment variable that holds the key (a key is
    never written in a file or recorded); without it the default client sends
    ``EVALTK_JUDGE_API_KEY`` or ``OPENAI_API_KEY`` when ``ambient_key`` (a judge read from
    a file, :func:`judge_config`, gets only the key it names: the file also says where it
    is sent).
    """

    name: str
    model: str
    model_version: str = ""
    decoding: Mapping[str, Any] = field(default_factory=lambda: {"temperature": 0})
    price: Price | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    ambient_key: bool = True

    def __post_init__(self) -> None:
        for k in ("name", "model"):
            v = getattr(self, k)
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"a judge's `{k}` must be a non-empty string; got {v!r}.")
        if not isinstance(self.model_version, str):
            raise ValueError(f"`model_version` must be a string; got {self.model_version!r}.")
        if not isinstance(self.decoding, Mapping):
            raise ValueError(f"`decoding` must be a mapping of settings; got {self.decoding!r}.")
        bad = [k for k in self.decoding if k in _FORBIDDEN_DECODING]
        if bad:
            raise ValueError(f"`decoding` may not set {', '.join(bad)} (the runner sends one "
                             "non-streamed completion per prompt).")
        canonical_json(dict(self.decoding))  # JSON values only: refused here, not mid-run
        object.__setattr__(self, "decoding", dict(self.decoding))
        if self.api_key_env is not None and not _KEY_ENV.match(str(self.api_key_env)):
            raise ValueError(f"`api_key_env` must name an environment variable ending in API_KEY or _TOKEN "
                             f"(a judges file decides where the key is sent); got {self.api_key_env!r}.")

    def instrument(self, rubric: Rubric) -> dict[str, str]:
        """The instrument columns (:data:`evaltk.ingest.INSTRUMENT_COLUMNS`) for ``rubric``."""
        values = (self.model, self.model_version, rubric.id, rubric.digest, rubric.template_digest,
                  canonical_json(self.decoding).decode("utf-8"))
        return dict(zip(INSTRUMENT_COLUMNS, values, strict=True))

    def client(self, *, timeout: float = 60.0, max_connections: int = 64) -> OpenAIChatClient:
        """The default client for this judge (:class:`OpenAIChatClient`)."""
        import os

        key = os.environ.get(self.api_key_env) if self.api_key_env else (None if self.ambient_key else "")
        if self.api_key_env and not key:
            raise ValueError(f"judge {self.name!r}: the environment variable {self.api_key_env} "
                             "(api_key_env) is not set.")
        return OpenAIChatClient(self.base_url, api_key=key, timeout=timeout, max_connections=max_connections)


def judge_config(spec: Mapping[str, Any], *, file: str | None = None, record: int | None = None) -> JudgeConfig:
    """A :class:`JudgeConfig` from a mapping (one entry of a sweep's judges file).

    Keys: ``name, model`` (required), ``model_version, decoding, price`` (``{input_per_million,
    output_per_million}``, US dollars), ``base_url, api_key_env``.  Errors name the file,
    the entry and the field.

    Examples
    --------
    >>> j = judge_config({"name": "j1", "model": "m", "decoding": {"max_tokens": 8, "temperature": 0}})
    >>> j.instrument(load_rubric("x_task"))["decoding"]
    '{"max_tokens":8,"temperature":0}'
    """
    if not isinstance(spec, Mapping):
        raise SchemaViolation(f"a judge must be a mapping; got {type(spec).__name__}", file=file, record=record)
    unknown = [k for k in spec if k not in _JUDGE_KEYS]
    if unknown:
        raise SchemaViolation(f"unknown key {unknown[0]!r} (a judge has {', '.join(_JUDGE_KEYS)})",
                              file=file, record=record, field=str(unknown[0]))
    for k in ("name", "model"):
        if k not in spec:
            raise SchemaViolation("is required", file=file, record=record, field=k)
    kw: dict[str, Any] = {k: spec[k] for k in _JUDGE_KEYS if k in spec and k != "price"}
    kw["ambient_key"] = False  # the file says where the key goes: it gets only the key it names
    fld = "name"
    try:
        if "price" in spec:
            fld = "price"
            p = spec["price"]
            if not isinstance(p, Mapping) or set(p) != {"input_per_million", "output_per_million"}:
                raise ValueError("`price` must be {input_per_million: USD, output_per_million: USD}")
            kw["price"] = Price(p["input_per_million"], p["output_per_million"])
        fld = "decoding"
        return JudgeConfig(**kw)
    except (ValueError, TypeError) as e:
        msg = str(e)
        named = next((k for k in _JUDGE_KEYS if f"`{k}`" in msg), fld)
        raise SchemaViolation(msg, file=file, record=record, field=named) from None


# --------------------------------------------------------------------------- the cache


class GradeCache:
    """Replies on disk (sqlite3), keyed by the instrument and the rendered prompt's digest.

    One row per graded unit: the reply text (re-read by the rubric when used), the token
    usage and the latency the call took.  Each grade is committed as it arrives, so an
    interrupted run keeps every grade it finished.  Failed calls are never cached.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS grades_v1 (key TEXT PRIMARY KEY, reply TEXT, "
                             "input_tokens INTEGER, output_tokens INTEGER, latency_ms REAL, "
                             "served_model TEXT, created REAL)")
            self._db.commit()
        except sqlite3.DatabaseError as e:
            from ..errors import UnreadableInput

            raise UnreadableInput(f"not a grade cache ({e})", file=str(self.path)) from None

    @staticmethod
    def key(instrument: Mapping[str, str], prompt_digest: str) -> str:
        """The cache key: the digest of the instrument and the prompt digest together."""
        return sha256_digest({"instrument": dict(instrument), "prompt_digest": prompt_digest})

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[ChatReply, float]]:
        out: dict[str, tuple[ChatReply, float]] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            q = ("SELECT key, reply, input_tokens, output_tokens, latency_ms, served_model FROM grades_v1 "
                 f"WHERE key IN ({','.join('?' * len(chunk))})")
            for k, reply, ti, to, lat, served in self._db.execute(q, chunk):
                out[k] = (ChatReply(reply, ti, to, served), float(lat))
        return out

    def put(self, key: str, reply: ChatReply, latency_ms: float) -> None:
        self._db.execute("INSERT OR REPLACE INTO grades_v1 VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (key, reply.text, reply.input_tokens, reply.output_tokens, latency_ms,
                          reply.served_model, time.time()))
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM grades_v1").fetchone()[0])

    def close(self) -> None:
        self._db.close()


# --------------------------------------------------------------------------- units


@dataclass(frozen=True)
class _Unit:
    trace_id: str
    step: int | None
    facts: Mapping[str, Any]


def _cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _units(tr: TraceRecords, rubric: Rubric) -> tuple[list[_Unit], list[dict[str, Any]]]:
    """The units to ask and the units with nothing to ask on (trace facts only: no labels)."""
    runs, steps = tr.runs, tr.steps
    gradable = _columns.present(steps["screen"]) & _columns.present(steps["target"])
    cols = {c: [_cell(v) for v in steps[c].tolist()] for c in ("index", "action", "target", "screen")}
    by_run: list[list[dict[str, Any]]] = [[] for _ in range(len(runs))]
    grad_by_run: list[list[bool]] = [[] for _ in range(len(runs))]
    for i, pos in enumerate(steps["run_pos"].to_numpy()):
        by_run[int(pos)].append({c: cols[c][i] for c in cols})
        grad_by_run[int(pos)].append(bool(gradable[i]))
    units: list[_Unit] = []
    skipped: list[dict[str, Any]] = []
    m = rubric.measure

    def skip(tid: str, cause: Cause, reason: str) -> None:
        skipped.append({"trace_id": tid, "measure": m, "step": None, "cause": cause.value, "reason": reason})

    for r, run in enumerate(runs.itertuples(index=False)):
        tid = str(run.trace_id)
        ss = by_run[r]
        guide = run.guide if isinstance(run.guide, Mapping) else None
        base = {"task": str(run.task), "domain": _cell(run.domain), "n_steps": int(run.n_steps)}  # type: ignore[arg-type]  # pandas-stubs: a row cell
        if rubric.unit == "screen":
            last = ss[-1]["screen"] if ss else None
            if last is None or not str(last).strip():
                skip(tid, Cause.MISSING_EVIDENCE, "no terminal screen captured")
            else:
                units.append(_Unit(tid, None, {**base, "screen": last}))
        elif rubric.unit == "run":
            if not ss:
                skip(tid, Cause.MISSING_EVIDENCE, "no steps recorded")
            else:
                units.append(_Unit(tid, None, {**base, "steps": ss, "guide": _served(guide)}))
        elif rubric.unit == "step":
            if not any(grad_by_run[r]):
                skip(tid, Cause.MISSING_EVIDENCE, "no gradable step (a step needs a captured screen "
                                                  "and an action target)")
            for k, s in enumerate(ss):
                if grad_by_run[r][k]:
                    prev = [{"index": p["index"], "action": p["action"], "target": p["target"]} for p in ss[:k]]
                    units.append(_Unit(tid, int(s["index"]), {**base, "step": s, "previous": prev}))
        else:  # guide
            if guide is None:
                skip(tid, Cause.NOT_APPLICABLE, "no guide served")
            else:
                units.append(_Unit(tid, None, {**base, "steps": ss, "guide": _served(guide)}))
    return units, skipped


def _served(guide: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The guide as served to the agent: its labelled ``reference_id`` (g_retrieval's label) removed."""
    if guide is None:
        return None
    return {k: v for k, v in guide.items() if k != "reference_id"}


def _select(units: list[_Unit], skipped: list[dict[str, Any]], items: Any) -> tuple[list[_Unit], list[dict[str, Any]]]:
    """Only the units ``items`` names: trace ids (every unit of the run), or a table of
    ``trace_id`` and ``step`` (a missing step: every unit of the run)."""
    if items is None:
        return units, skipped
    if isinstance(items, pd.DataFrame):
        tids = items["trace_id"].astype(str).tolist()
        steps = items["step"].tolist() if "step" in items.columns else [None] * len(tids)
    else:
        tids = [str(t) for t in items]
        steps = [None] * len(tids)
    whole = {t for t, s in zip(tids, steps, strict=True) if s is None or pd.isna(s)}
    exact = {(t, int(s)) for t, s in zip(tids, steps, strict=True) if not (s is None or pd.isna(s))}
    named = whole | {t for t, _ in exact}
    return ([u for u in units if u.trace_id in whole or (u.trace_id, u.step) in exact],
            [s for s in skipped if s["trace_id"] in named])


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class JudgeRun:
    """What :func:`run_judge` produced.

    Attributes
    ----------
    answers : DataFrame
        :data:`JUDGE_ANSWER_COLUMNS`: exactly what :func:`evaltk.ingest.read_answers`
        reads, with the instrument on every row.
    failures : DataFrame
        :data:`FAILURE_COLUMNS`: units whose call failed after its retries (no answer).
    skipped : DataFrame
        :data:`SKIPPED_COLUMNS`: units with nothing to ask on (no call).
    instrument : dict
        The instrument columns' values.
    n_calls : int
        HTTP attempts made by this run (retries included).
    n_cached : int
        Units answered from the cache, with no call.
    """

    answers: pd.DataFrame
    failures: pd.DataFrame
    skipped: pd.DataFrame
    instrument: Mapping[str, str]
    n_calls: int
    n_cached: int

    def summary(self) -> dict[str, Any]:
        """Counts: units answered (fresh and cached), unreadable, failed, skipped; calls made."""
        unreadable = int(self.answers["reason"].fillna("").str.startswith("unreadable reply").sum())
        return {"n_answers": len(self.answers), "n_cached": self.n_cached,
                "n_unreadable": unreadable, "n_failed": len(self.failures), "n_skipped": len(self.skipped),
                "n_calls": self.n_calls}


@dataclass
class _Outcome:
    unit: _Unit
    prompt_digest: str
    reply: ChatReply | None = None
    latency_ms: float = math.nan
    cached: bool = False
    failure: str | None = None
    attempts: int = 0


def run_judge(traces: Any, rubric: Rubric | str | Path | Mapping[str, Any], client: ChatClient | None = None, *,
              judge: JudgeConfig | Mapping[str, Any], cache: str | Path | GradeCache | None = None,
              items: Any = None, concurrency: int = 8, timeout: float = 60.0, retries: int = 3,
              backoff: float = 0.5, max_retry_after: float = 60.0, progress: bool = False) -> JudgeRun:
    """Ask one judge one rubric's question on every unit of ``traces``.

    Parameters
    ----------
    traces : path, DataFrame, list of dict, or TraceRecords
        Read by :func:`evaltk.ingest.read_traces`; the judge sees only the facts it keeps
        (the template context holds no label and no trace id).
    rubric : Rubric, shipped name ("x_task", "x_eff", "x_ctx"), path, or mapping
        See :func:`load_rubric`.
    client : ChatClient, optional
        The backend; default :meth:`JudgeConfig.client` (OpenAI-compatible HTTP).
    judge : JudgeConfig or mapping
        Name (the ``rater``), model, version, decoding, price.
    cache : path or GradeCache, optional
        The sqlite grade cache; ``None`` for none.
    items : iterable of trace ids, or DataFrame with ``trace_id`` (and ``step``), optional
        Only these units (a sweep asks on the human-anchored items and the canaries).
    concurrency : int
        Calls in flight at once.
    timeout : float
        Seconds per attempt, whatever the backend (the default client's own timeouts too).
    retries, backoff, max_retry_after
        A retryable failure (timeout, connection dropped, 429, 5xx) is tried again up to
        ``retries`` times, after the server's ``Retry-After`` or ``backoff * 2**k``
        seconds; a Retry-After beyond ``max_retry_after`` fails the unit at once.
    progress : bool
        A tqdm progress bar (on stderr).

    Returns
    -------
    JudgeRun

    Examples
    --------
    A backend is any object with an async ``complete``; this one always answers "yes":

    >>> class Yes:
    ...     async def complete(self, messages, *, model, decoding):
    ...         return ChatReply("Yes", input_tokens=40, output_tokens=1)
    >>> run = {"trace_id": "a", "task": "Mute the phone", "status": "complete",
    ...        "steps": [{"index": 0, "action": "tap", "target": "Mute", "screen": "Muted"}]}
    >>> res = run_judge([run], "x_task", Yes(), judge={"name": "j1", "model": "m"})
    >>> res.answers[["trace_id", "rater", "answer", "rubric_id"]].to_dict("records")
    [{'trace_id': 'a', 'rater': 'j1', 'answer': 'yes', 'rubric_id': 'x_task.terminal-screen.v1'}]
    """
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    jc = judge if isinstance(judge, JudgeConfig) else judge_config(judge)
    v: Any
    for k, v, lo in (("concurrency", concurrency, 1), ("retries", retries, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"`{k}` must be an integer >= {lo}; got {v!r}.")
    for k, v, strict in (("backoff", backoff, False), ("max_retry_after", max_retry_after, False),
                         ("timeout", timeout, True)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not (v > 0 if strict else v >= 0):
            raise ValueError(f"`{k}` must be a number of seconds {'>' if strict else '>='} 0; got {v!r}.")
    tr = traces if isinstance(traces, TraceRecords) else read_traces(traces)
    units, skipped = _select(*_units(tr, rub), items)
    instrument = jc.instrument(rub)
    store = cache if isinstance(cache, GradeCache) or cache is None else GradeCache(cache)
    own_client = client is None
    cl = jc.client(timeout=timeout, max_connections=concurrency) if client is None else client
    tqdm = require("tqdm") if progress else None
    bar = tqdm.tqdm(total=len(units), desc=jc.name, unit="item", disable=not progress) if tqdm else None
    try:
        outcomes, n_calls = _run_sync(lambda: _ask_all(units, rub, jc, instrument, cl, store, bar,
                                                       concurrency=concurrency, timeout=float(timeout),
                                                       retries=retries,
                                                       backoff=float(backoff),
                                                       max_retry_after=float(max_retry_after),
                                                       close=own_client))
    finally:
        if bar is not None:
            bar.close()
        if store is not None and not isinstance(cache, GradeCache):
            store.close()
    return _tables(outcomes, skipped, rub, jc, instrument, n_calls)


def _run_sync(make: Any) -> Any:
    """Run a coroutine to completion, also from inside a running loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as ex:
        return ex.submit(lambda: asyncio.run(make())).result()


async def _ask_all(units: list[_Unit], rub: Rubric, jc: JudgeConfig, instrument: Mapping[str, str],
                   client: ChatClient, store: GradeCache | None, bar: Any, *, concurrency: int, timeout: float,
                   retries: int, backoff: float, max_retry_after: float, close: bool) -> tuple[list[_Outcome], int]:
    messages = [rub.render(u.facts) for u in units]
    digests = ["sha256:" + sha256_digest(m) for m in messages]
    keys = [GradeCache.key(instrument, d) for d in digests]
    hits = store.get_many(keys) if store is not None else {}
    outcomes = [_Outcome(u, d) for u, d in zip(units, digests, strict=True)]
    pending = []
    for i, k in enumerate(keys):
        if k in hits:
            o = outcomes[i]
            o.reply, o.latency_ms = hits[k]
            o.cached = True
        else:
            pending.append(i)
    if bar is not None and len(units) - len(pending):
        bar.update(len(units) - len(pending))
    sem = asyncio.Semaphore(concurrency)
    calls = [0]

    async def one(i: int) -> int:
        async with sem:
            o = outcomes[i]
            while True:
                o.attempts += 1
                calls[0] += 1
                t0 = time.perf_counter()
                try:
                    try:  # the whole attempt, whatever the backend: a plugged-in one may not time out
                        async with asyncio.timeout(timeout):
                            reply = await client.complete(messages[i], model=jc.model, decoding=jc.decoding)
                    except TimeoutError:
                        raise CallFailed(f"timed out after {timeout:g} s", retryable=True) from None
                except CallFailed as e:
                    wait = e.retry_after if e.retry_after is not None else backoff * 2 ** (o.attempts - 1)
                    if not e.retryable or o.attempts > retries:
                        o.failure = e.reason + ("" if not e.retryable else f" (after {o.attempts} attempts)")
                        return i
                    if wait > max_retry_after:
                        o.failure = (f"{e.reason}; the server asked to wait {wait:g} s, beyond the bound of "
                                     f"{max_retry_after:g} s")
                        return i
                    await asyncio.sleep(wait)
                    continue
                o.latency_ms = (time.perf_counter() - t0) * 1000.0
                o.reply = reply
                return i

    tasks = [asyncio.ensure_future(one(i)) for i in pending]  # started in order (as_completed would shuffle)
    try:
        for fut in asyncio.as_completed(tasks):
            i = await fut
            o = outcomes[i]
            if store is not None and o.reply is not None:
                store.put(keys[i], o.reply, o.latency_ms)
            if bar is not None:
                bar.update(1)
    finally:
        for t in tasks:  # a backend's own bug, or an interrupt: nothing is left running
            t.cancel()
        if close and hasattr(client, "aclose"):
            await client.aclose()
    return outcomes, calls[0]


def _tables(outcomes: list[_Outcome], skipped: list[dict[str, Any]], rub: Rubric, jc: JudgeConfig,
            instrument: Mapping[str, str], n_calls: int) -> JudgeRun:
    rows, fails = [], []
    for o in outcomes:
        u = o.unit
        if o.reply is None:
            fails.append({"trace_id": u.trace_id, "measure": rub.measure, "step": u.step, "rater": jc.name,
                          "reason": o.failure, "attempts": o.attempts, "prompt_digest": o.prompt_digest})
            continue
        word, reason = rub.read_reply(o.reply.text)
        cost = jc.price.cost(o.reply.input_tokens, o.reply.output_tokens) if jc.price else math.nan
        rows.append({"trace_id": u.trace_id, "measure": rub.measure, "step": u.step, "rater": jc.name,
                     "answer": word if word is not None else CANNOT_TELL,
                     "rater_version": jc.model_version or None, "cost": cost, "latency_ms": o.latency_ms,
                     **instrument, "prompt_digest": o.prompt_digest, "reason": reason})
    answers = pd.DataFrame(rows, columns=list(JUDGE_ANSWER_COLUMNS))
    answers["step"] = answers["step"].astype("Int64")
    answers[["cost", "latency_ms"]] = answers[["cost", "latency_ms"]].astype(float)
    failures = pd.DataFrame(fails, columns=list(FAILURE_COLUMNS))
    failures["step"] = failures["step"].astype("Int64")
    skip = pd.DataFrame(skipped, columns=list(SKIPPED_COLUMNS))
    skip["step"] = skip["step"].astype("Int64")
    return JudgeRun(answers=answers, failures=failures, skipped=skip, instrument=dict(instrument),
                    n_calls=n_calls, n_cached=sum(o.cached for o in outcomes))


def read_judges(source: str | Path | Sequence[Mapping[str, Any]]) -> list[JudgeConfig]:
    """The candidate judges of a sweep: a YAML or JSON list of judge mappings (:func:`judge_config`).

    Names must be distinct (each is a ``rater``)."""
    from .._io import loads_yaml, read_text

    if isinstance(source, str | Path):
        name = str(source)
        doc = loads_yaml(read_text(source), file=name)  # JSON is YAML
    else:
        name, doc = "<judges>", list(source)
    if isinstance(doc, Mapping) and "judges" in doc:
        doc = doc["judges"]
    if not isinstance(doc, list) or not doc:
        raise SchemaViolation("expected a non-empty list of judges (or {judges: [...]})", file=name)
    out = [judge_config(s, file=name, record=i + 1) for i, s in enumerate(doc)]
    seen: set[str] = set()
    for i, j in enumerate(out):
        if j.name in seen:
            raise SchemaViolation(f"judge name {j.name!r} is used twice", file=name, record=i + 1, field="name")
        seen.add(j.name)
    return out


@dataclass(frozen=True)
class SweepResult:
    """What :func:`sweep_judges` produced: every judge's run, their answers and failures
    together, the anchor correctness, and the selection (:func:`evaltk.select_judges`)."""

    runs: Mapping[str, JudgeRun]
    answers: pd.DataFrame
    failures: pd.DataFrame
    correct: pd.DataFrame
    selection: Any  # SelectionResult


def sweep_judges(traces: Any, rubric: Rubric | str | Path | Mapping[str, Any],
                 judges: Sequence[JudgeConfig | Mapping[str, Any]], labels: Any, *,
                 canaries: pd.DataFrame | None = None, clients: Mapping[str, ChatClient] | None = None,
                 cache: str | Path | GradeCache | None = None, rng: Any = None,
                 confidence_level: float = 0.95, **run_options: Any) -> SweepResult:
    """Seed 002's judge selection from traces to a frontier: run every candidate on the
    human-anchored items and the canaries, measure accuracy, cost and latency, select.

    Parameters
    ----------
    traces
        As in :func:`run_judge`.
    rubric
        The one rubric every candidate is asked (its measure is the one selected on).
    judges : list of JudgeConfig or mappings
        The candidates (:func:`read_judges`).
    labels : path, DataFrame or AnswerRecords-like
        Human labels (:func:`evaltk.ingest.read_answers` with ``kind="label"``); they are
        folded into the anchor and never reach a judge.
    canaries : DataFrame, optional
        Known failures: ``trace_id, measure, passing_answer`` (the demo's ``canaries.csv``).
    clients : mapping of judge name to ChatClient, optional
        Backends by judge; default each judge's :meth:`JudgeConfig.client`.
    cache, rng, confidence_level, **run_options
        Passed to :func:`run_judge` (``concurrency``, ``timeout``, ``retries``...) and to
        :func:`evaltk.select_judges`.
    """
    from ..ingest import read_answers
    from ._selection import anchor_correctness, canary_hits, judge_costs, select_judges

    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    jcs = [j if isinstance(j, JudgeConfig) else judge_config(j) for j in judges]
    if len({j.name for j in jcs}) != len(jcs):
        raise ValueError("judge names must be distinct (each is a rater).")
    lab = read_answers(labels, kind="label").table
    lab = lab[lab["measure"] == rub.measure]
    if not len(lab):
        raise ValueError(f"there are no human labels for {rub.measure}: a sweep needs the human anchor.")
    items = lab[["trace_id", "step"]].drop_duplicates()
    can = None
    if canaries is not None:  # a canary names a whole run: every unit of it is asked
        can = canaries[canaries["measure"].map(str) == rub.measure] if "measure" in canaries.columns else canaries
        items = pd.concat([items, pd.DataFrame({"trace_id": can["trace_id"].astype(str), "step": pd.NA})],
                          ignore_index=True)
    tr = traces if isinstance(traces, TraceRecords) else read_traces(traces)
    store = cache if isinstance(cache, GradeCache) or cache is None else GradeCache(cache)
    runs: dict[str, JudgeRun] = {}
    try:
        for j in jcs:
            runs[j.name] = run_judge(tr, rub, (clients or {}).get(j.name), judge=j, cache=store, items=items,
                                     **run_options)
    finally:
        if store is not None and not isinstance(cache, GradeCache):
            store.close()
    answers = pd.concat([r.answers for r in runs.values()], ignore_index=True)
    failures = pd.concat([r.failures for r in runs.values()], ignore_index=True)
    correct = anchor_correctness(answers, lab, measure=rub.measure)
    hits = canary_hits(answers, can) if can is not None and len(answers) else None
    costs = judge_costs(answers)[["judge", "cost_per_item", "latency_p50", "latency_p95"]]  # measured
    selection = select_judges(correct, costs, canaries=hits, rng=rng,
                              confidence_level=confidence_level)
    return SweepResult(runs=runs, answers=answers, failures=failures, correct=correct, selection=selection)


__all__ = ["JudgeConfig", "JudgeRun", "GradeCache", "SweepResult", "judge_config", "read_judges", "run_judge",
           "sweep_judges",
           "JUDGE_ANSWER_COLUMNS", "FAILURE_COLUMNS", "SKIPPED_COLUMNS"]
