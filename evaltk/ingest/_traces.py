"""Trace records, judge answers and human labels: readers, ingest and the ledger.

Seed 002, "The pipeline", Ingest: *join each run to its labels on a stable id, and
drop in-progress runs, since a mid-write trace carries an incomplete span set.  Fix
one canonical step count and record disagreements between sources rather than
silently preferring one.*  And "Scope of a trace": *one agent run against one short
user task, first action to last, with the domain read from the task prompt rather
than assigned separately ... the same contract is designed to run online, scoring a
run as it completes.*

Stages
------
:func:`read_traces`
    parse and validate a trace source (JSONL, Parquet, a list of dicts or a
    DataFrame); drop malformed records, in-progress runs and duplicated ids, each
    with a ledger entry; resolve the domain; fix the canonical step count.
:func:`read_answers`
    parse and validate a long answer table (CSV, JSONL, Parquet, a DataFrame or a
    list of dicts); normalise measure names and answer words.
:func:`ingest`
    both of the above, then join answers (judges) and labels (humans) to the kept
    runs on ``trace_id`` (and on the step index for per-step measures).
:func:`ingest_one`
    the same contract for one run as it completes (online); it returns exactly the
    rows the batch gives for that run.

Every input record gets one ledger row: kept, or dropped with a reason.  A
malformed record raises :class:`evaltk.errors.SchemaViolation` (an ``InputError``
naming file, line and field) with ``strict=True``; by default it goes to the ledger
and the load continues.  A file that cannot be read at all (missing, not UTF-8,
empty) raises :class:`evaltk.errors.UnreadableInput` in both modes.

The fast path parses JSONL and Parquet with Arrow and validates column-wise; a
per-record Python validator is the authority and runs only where the fast path
finds something wrong, to locate and explain it.  When Arrow cannot parse a JSONL
file (a truncated line, a type that changes between lines) the file is bisected so
only small chunks around the bad lines take the per-record path.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _columns
from ..errors import SchemaViolation, UnreadableInput
from ..values import (  # the one answer vocabulary; re-exported by evaltk.ingest
    ANSWER_SYNONYMS,
    ANSWER_VOCABULARIES,
    FREE_TEXT_MEASURES,
    MEASURE_ALIASES,
    PER_STEP_MEASURES,
    normalize_answer,
)

__all__ = [
    "TRACE_STATUSES",
    "ANSWER_VOCABULARIES",
    "ANSWER_SYNONYMS",
    "MEASURE_ALIASES",
    "PER_STEP_MEASURES",
    "FREE_TEXT_MEASURES",
    "LEDGER_COLUMNS",
    "RUN_COLUMNS",
    "STEP_COLUMNS",
    "ANSWER_COLUMNS",
    "DEFAULT_DOMAIN_KEYWORDS",
    "UNKNOWN_DOMAIN",
    "KeywordDomainRule",
    "domain_from_task",
    "normalize_answer",
    "TraceRecords",
    "AnswerRecords",
    "Ingested",
    "read_traces",
    "read_answers",
    "ingest_traces",
    "ingest_one",
]

# --------------------------------------------------------------------------- vocabularies

#: Values of a trace record's ``status``.  ``in_progress`` runs are dropped by ingest.
TRACE_STATUSES: tuple[str, ...] = ("complete", "in_progress")

_G_MEASURE = re.compile(r"^g_[a-z0-9_]+$")

#: Columns of :attr:`Ingested.ledger`.
LEDGER_COLUMNS: tuple[str, ...] = ("source", "record", "trace_id", "kind", "status", "reason", "field")
#: Columns of :attr:`Ingested.runs`.
RUN_COLUMNS: tuple[str, ...] = ("trace_id", "task", "domain", "domain_source", "status", "n_steps",
                                "agent", "guide", "steps_missing")
#: Columns of :attr:`Ingested.steps`.
STEP_COLUMNS: tuple[str, ...] = ("trace_id", "index", "action", "target", "screen", "consequential",
                                 "needs_confirmation", "run_pos")
#: Columns of :attr:`Ingested.answers` and :attr:`Ingested.labels`.
ANSWER_COLUMNS: tuple[str, ...] = ("trace_id", "measure", "step", "rater", "answer", "confidence",
                                   "cost", "latency_ms", "rater_version", "run_pos", "step_pos")
_DISAGREEMENT_COLUMNS = ("trace_id", "source", "count", "canonical", "run_pos")
_INT64_MAX = 2**63 - 1
try:  # pandas' default ``str`` dtype (Arrow-backed, NaN where missing)
    _STR = pd.StringDtype("pyarrow", na_value=np.nan)
except TypeError:  # pragma: no cover - pandas < 2.3 spells it differently
    _STR = pd.StringDtype("pyarrow_numpy")


# --------------------------------------------------------------------------- domain rule

#: The default rule's keyword table, in priority order for ties.  The domain is the
#: one whose keyword occurs earliest in the task prompt (whole words, any case).
DEFAULT_DOMAIN_KEYWORDS: dict[str, tuple[str, ...]] = {
    "shopping": ("buy", "purchase", "order", "cart", "checkout", "shop", "store", "market",
                 "price"),
    "email": ("email", "e-mail", "inbox", "mail"),
    "messaging": ("message", "text", "chat", "sms", "whatsapp"),
    "calendar": ("calendar", "meeting", "schedule", "appointment", "event", "reminder"),
    "travel": ("flight", "hotel", "trip", "train", "airport", "itinerary"),
    "payments": ("pay", "payment", "transfer", "invoice", "bank", "bill"),
    "maps": ("directions", "navigate", "route", "map"),
    "social": ("post", "tweet", "follow", "share"),
    "files": ("file", "folder", "document", "upload", "download"),
    "media": ("play", "song", "playlist", "music", "video", "podcast"),
    "settings": ("settings", "wifi", "wi-fi", "bluetooth", "brightness", "notifications"),
}
#: What a rule returns when nothing in the prompt names a domain.
UNKNOWN_DOMAIN = "unknown"
_TAG = re.compile(r"^\s*\[([A-Za-z][\w \-/]*)\]")


class KeywordDomainRule:
    """Read a run's domain from its task prompt.

    1. A leading tag in square brackets names it: ``"[travel] Book a flight"`` is
       ``travel`` (lower-cased, trimmed).
    2. Otherwise the domain whose keyword occurs earliest in the prompt (whole words,
       case-insensitive); for a tie at one position, the domain listed first wins.
    3. Otherwise ``default`` (:data:`UNKNOWN_DOMAIN`).

    Parameters
    ----------
    keywords : mapping of str to sequence of str, optional
        Domain -> keywords, in priority order (default :data:`DEFAULT_DOMAIN_KEYWORDS`).
    default : str
        The domain when nothing matches.

    Examples
    --------
    >>> rule = KeywordDomainRule({"food": ["pizza", "restaurant"]}, default="other")
    >>> rule("Order a pizza"), rule("[Travel] anything"), rule("Call mum")
    ('food', 'travel', 'other')
    """

    def __init__(self, keywords: Mapping[str, Sequence[str]] | None = None, *,
                 default: str = UNKNOWN_DOMAIN) -> None:
        kw = DEFAULT_DOMAIN_KEYWORDS if keywords is None else keywords
        if not isinstance(default, str) or not default:
            raise TypeError(f"`default` must be a non-empty str; got {default!r}.")
        self.keywords = {str(d): tuple(str(k) for k in ks) for d, ks in kw.items()}
        self.default = default
        alts = []
        self._names: dict[str, str] = {}
        for i, (dom, words) in enumerate(self.keywords.items()):
            if not words:
                continue
            g = f"d{i}"
            self._names[g] = dom
            words = sorted(words, key=len, reverse=True)
            alts.append(f"(?P<{g}>" + "|".join(re.escape(w) for w in words) + ")")
        self._pattern = re.compile(r"\b(?:" + "|".join(alts) + r")\b", re.IGNORECASE) if alts else None

    def __call__(self, task: str) -> str:
        m = _TAG.match(task)
        if m:
            return m.group(1).strip().lower()
        if self._pattern is not None:
            m = self._pattern.search(task)
            if m:
                return self._names[m.lastgroup]  # type: ignore[index]
        return self.default

    def __repr__(self) -> str:
        return f"KeywordDomainRule({len(self.keywords)} domains, default={self.default!r})"


_DEFAULT_RULE = KeywordDomainRule()


def domain_from_task(task: str) -> str:
    """The default domain rule (:class:`KeywordDomainRule` with the default table).

    Examples
    --------
    >>> domain_from_task("Buy a red mug and email the receipt to Bob")
    'shopping'
    >>> domain_from_task("Send an email to Bob about the order")
    'email'
    >>> domain_from_task("What's the weather?")
    'unknown'
    """
    return _DEFAULT_RULE(task)


def _resolve_rule(domain_rule: Any) -> Callable[[str], Any]:
    if domain_rule is None:
        return _DEFAULT_RULE
    if isinstance(domain_rule, Mapping):
        return KeywordDomainRule(domain_rule)
    if callable(domain_rule):
        return domain_rule
    raise TypeError(f"`domain_rule` must be a callable (task -> domain), a mapping of domain to "
                    f"keywords, or None; got {type(domain_rule).__name__}.")


def _apply_rule(rule: Callable[[str], Any], tasks: Sequence[str]) -> list[str]:
    out = []
    for t in tasks:
        d = rule(t)
        if d is None or d == "":
            d = UNKNOWN_DOMAIN
        if not isinstance(d, str):
            raise TypeError(f"`domain_rule` must return a str (or None); it returned "
                            f"{type(d).__name__} {d!r} for the task {t!r}.")
        out.append(d)
    return out


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TraceRecords:
    """The validated trace tables of one source (see :func:`read_traces`).

    Attributes
    ----------
    runs, steps, step_count_disagreements, ledger : DataFrame
        As in :class:`Ingested`.
    """

    runs: pd.DataFrame
    steps: pd.DataFrame
    step_count_disagreements: pd.DataFrame
    ledger: pd.DataFrame


@dataclass(frozen=True)
class AnswerRecords:
    """The well-formed rows of an answer or label source (see :func:`read_answers`).

    Attributes
    ----------
    table : DataFrame
        ``trace_id, measure, step, rater, answer, confidence, cost, latency_ms,
        rater_version`` (normalised) plus ``ledger_row`` (the row's position in
        ``ledger``) and ``record`` (its line or row number in the source).
    ledger : DataFrame
        One row per input row; malformed rows are already ``dropped``.
    kind : str
        ``"answer"`` (judges) or ``"label"`` (humans).
    """

    table: pd.DataFrame
    ledger: pd.DataFrame
    kind: str


@dataclass(frozen=True)
class Ingested:
    """Observations ready to score: runs, steps, answers, labels, and the ledger.

    Attributes
    ----------
    runs : DataFrame
        One row per kept run: ``trace_id, task, domain, domain_source ("record" |
        "rule"), status, n_steps`` (the canonical step count: the number of steps in
        the record), ``agent`` (NaN when absent), ``guide`` (dict or None) and
        ``steps_missing`` (True when the step indices have gaps or a source in
        ``step_counts`` reports more steps than the record holds).
    steps : DataFrame
        One row per step of the kept runs, ordered by run then ``index``:
        ``trace_id, index, action, target, screen, consequential,
        needs_confirmation, run_pos`` (the run's row in ``runs``).
    answers, labels : DataFrame
        Judges' answers and humans' labels joined to kept runs: ``trace_id, measure,
        step`` (Int64, <NA> for trace-level measures), ``rater, answer`` (canonical
        word), ``confidence, cost, latency_ms, rater_version, run_pos, step_pos``
        (the row in ``steps`` for per-step measures, <NA> otherwise).  The human
        vote y(t) lives only in ``labels``.
    step_count_disagreements : DataFrame
        ``trace_id, source, count, canonical, run_pos`` for every source in a kept
        run's ``step_counts`` whose count differs from the canonical count.
    ledger : DataFrame
        One row per input record: ``source, record, trace_id, kind ("run" |
        "answer" | "label"), status ("kept" | "dropped"), reason, field``.
    """

    runs: pd.DataFrame
    steps: pd.DataFrame
    answers: pd.DataFrame
    labels: pd.DataFrame
    step_count_disagreements: pd.DataFrame
    ledger: pd.DataFrame

    @property
    def dropped(self) -> pd.DataFrame:
        """The ledger rows of dropped records."""
        return self.ledger[self.ledger["status"] == "dropped"]

    def summary(self) -> pd.DataFrame:
        """Counts per ``kind, status, reason`` category (the text before the first ``:``)."""
        led = self.ledger
        cat = led["reason"].str.split(":", n=1).str[0]
        out = (pd.DataFrame({"kind": led["kind"], "status": led["status"],
                             "reason": cat.fillna("")})
               .groupby(["kind", "status", "reason"], sort=True).size().rename("n").reset_index())
        out["reason"] = out["reason"].replace("", np.nan)
        return out


# --------------------------------------------------------------------------- helpers


class _Bad(Exception):
    def __init__(self, field: str | None, detail: str, trace_id: Any = None) -> None:
        super().__init__(detail)
        self.field = field
        self.detail = detail
        self.trace_id = trace_id


def _jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | np.integer):
        return "integer"
    if isinstance(v, float | np.floating):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, Mapping):
        return "object"
    if isinstance(v, list | tuple | np.ndarray):
        return "array"
    return type(v).__name__


def _show(v: Any) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, float) or math.isfinite(v) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _is_missing(v: Any) -> bool:
    """None, or a float NaN (how pandas fills an absent value in a DataFrame)."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _strip_none(v: Any) -> Any:
    """Drop null-valued keys from objects (recursively): absent and null read alike."""
    if isinstance(v, Mapping):
        return {k: _strip_none(x) for k, x in v.items() if not _is_missing(x)}
    if isinstance(v, list | tuple):
        return [_strip_none(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_strip_none(x) for x in v.tolist()]
    return v


#: _ARROW_ABORT: with pyarrow 26, a Parquet table read with threads (the default) and
#: later converted with ``to_pylist`` can abort the interpreter at exit ("terminate
#: called without an active exception", exit 134): 10 runs in 12 through ``io.BytesIO``,
#: 2 in 12 through ``pa.BufferReader``, none in 12 with ``use_threads=False``.  evaltk
#: reads Parquet inputs from an Arrow buffer on one thread (tests/test_traces.py runs
#: the case in fresh interpreters).


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UnreadableInput("file not found", file=str(path)) from None
    except IsADirectoryError:
        raise UnreadableInput("is a directory, not a file", file=str(path)) from None
    except OSError as e:
        raise UnreadableInput(f"cannot be read ({e.strerror or e})", file=str(path)) from None
    if not data or data.isspace():
        raise UnreadableInput("the file is empty", file=str(path))
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
        raise UnreadableInput("not UTF-8 (the file starts with a UTF-16/UTF-32 byte-order mark)",
                              file=str(path))
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    return data


def _kind_of_path(path: Path, data_head: bytes) -> str:
    suf = "".join(path.suffixes[-1:]).lower()
    if suf in (".parquet", ".pq"):
        return "parquet"
    if suf in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suf == ".csv":
        return "csv"
    if data_head[:4] == b"PAR1":
        return "parquet"
    if data_head.lstrip()[:1] in (b"{", b"["):
        return "jsonl"
    return "csv"


def _split_lines(data: bytes, name: str) -> tuple[list[int], list[Any]]:
    """Non-blank lines: (line numbers, decoded text or a UnicodeDecodeError)."""
    nums: list[int] = []
    texts: list[Any] = []
    n_ok = 0
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        nums.append(i)
        try:
            texts.append(raw.decode("utf-8"))
            n_ok += 1
        except UnicodeDecodeError as e:
            texts.append(e)
    if texts and n_ok == 0:
        raise UnreadableInput("not UTF-8 (no line decodes as UTF-8)", file=name)
    return nums, texts


def _error(bad: _Bad, name: str, record: Any) -> SchemaViolation:
    return SchemaViolation(bad.detail, file=name, record=int(record), field=bad.field)


# --------------------------------------------------------------------------- trace validation


def _bad_text(v: str) -> bool:
    """True for a string that is not valid Unicode text (an unpaired surrogate, which
    JSON's ``\\ud800`` escape can produce and no table can store)."""
    if v.isascii():
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _safe(v: str) -> str:
    """``v`` fit to quote in a field name or message."""
    return v.encode("utf-8", "backslashreplace").decode("utf-8")


_NOT_TEXT = "is not valid Unicode text (an unpaired surrogate escape)"


def _check_bool(v: Any, field: str) -> bool:
    if v is None or _is_missing(v):
        return False
    if isinstance(v, bool | np.bool_):
        return bool(v)
    raise _Bad(field, f"must be true or false; got {_jtype(v)} {_show(v)}")


def _check_opt_str(v: Any, field: str) -> str | None:
    if _is_missing(v):
        return None
    if isinstance(v, str):
        if _bad_text(v):
            raise _Bad(field, _NOT_TEXT)
        return v or None
    raise _Bad(field, f"must be a string or null; got {_jtype(v)} {_show(v)}")


def _as_int(v: Any) -> int | None:
    """An integer, or a float with no fractional part (JSON Schema's ``integer``); else None."""
    if isinstance(v, bool | np.bool_):
        return None
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating) and math.isfinite(v) and float(v).is_integer():
        return int(v)
    return None


def _check_trace(obj: Any) -> tuple[Any, ...]:
    """Validate one trace record.  Returns a tuple; raises ``_Bad`` naming the field.

    ``("in_progress", trace_id)`` for an in-progress run (the rest is not checked: a
    mid-write record is incomplete by nature), else ``("complete", trace_id, task,
    domain, agent, guide, steps_columns, step_counts)``.
    """
    if not isinstance(obj, Mapping):
        raise _Bad(None, f"a trace record must be a JSON object; got {_jtype(obj)}")
    tid = obj.get("trace_id")
    if "trace_id" not in obj or _is_missing(tid):
        raise _Bad("trace_id", "is required")
    if not isinstance(tid, str):
        raise _Bad("trace_id", f"must be a string; got {_jtype(tid)} {_show(tid)}")
    if not tid:
        raise _Bad("trace_id", "must not be empty")
    if _bad_text(tid):
        raise _Bad("trace_id", _NOT_TEXT)
    status = obj.get("status")
    if _is_missing(status):
        raise _Bad("status", "is required (complete or in_progress)", tid)
    if not isinstance(status, str) or status not in TRACE_STATUSES:
        raise _Bad("status", f"must be one of {', '.join(TRACE_STATUSES)}; got {_jtype(status)} "
                   f"{_show(status)}", tid)
    if status == "in_progress":
        return ("in_progress", tid)
    try:
        task = obj.get("task")
        if _is_missing(task):
            raise _Bad("task", "is required")
        if not isinstance(task, str):
            raise _Bad("task", f"must be a string; got {_jtype(task)} {_show(task)}")
        if not task:
            raise _Bad("task", "must not be empty")
        if _bad_text(task):
            raise _Bad("task", _NOT_TEXT)
        domain = _check_opt_str(obj.get("domain"), "domain")
        agent = _check_opt_str(obj.get("agent"), "agent")
        guide = obj.get("guide")
        if _is_missing(guide):
            guide = None
        elif not isinstance(guide, Mapping):
            raise _Bad("guide", f"must be an object or null; got {_jtype(guide)}")
        else:
            guide = _strip_none(guide)
        sc = obj.get("step_counts")
        counts: list[tuple[str, int]] = []
        if not _is_missing(sc):
            if not isinstance(sc, Mapping):
                raise _Bad("step_counts", f"must be an object of source -> count; got {_jtype(sc)}")
            for k, c in sc.items():
                if isinstance(k, str) and _bad_text(k):
                    raise _Bad(f"step_counts.{_safe(k)}", "the source name " + _NOT_TEXT)
                if _is_missing(c):
                    continue
                c0, c = c, _as_int(c)
                if c is None:
                    raise _Bad(f"step_counts.{_safe(str(k))}", f"must be a non-negative integer; got {_jtype(c0)} {_show(c0)}")
                if c < 0 or c > _INT64_MAX:
                    raise _Bad(f"step_counts.{_safe(str(k))}", f"must be a non-negative integer; got {c}")
                counts.append((str(k), int(c)))
        steps = obj.get("steps")
        if isinstance(steps, np.ndarray):  # a list cell of a DataFrame read from Parquet
            steps = list(steps)
        elif "steps" not in obj or _is_missing(steps):
            raise _Bad("steps", "is required for a complete run (a list of step objects)")
        if not isinstance(steps, list | tuple):
            raise _Bad("steps", f"must be a list of step objects; got {_jtype(steps)}")
        idx: list[int] = []
        act: list[str] = []
        tgt: list[str | None] = []
        scr: list[str | None] = []
        con: list[bool] = []
        nc: list[bool] = []
        seen: dict[int, int] = {}
        # no step carries an index: the list order is the index (0, 1, 2, ...)
        positional = all(isinstance(s, Mapping) and _is_missing(s.get("index")) for s in steps)
        for j, s in enumerate(steps):
            f = f"steps[{j}]"
            if not isinstance(s, Mapping):
                raise _Bad(f, f"a step must be an object; got {_jtype(s)}")
            i = j if positional else s.get("index")
            if _is_missing(i):
                raise _Bad(f + ".index", "is required (give every step an index, or none: then the "
                           "list order is the index)")
            i = _as_int(i)
            if i is None:
                raise _Bad(f + ".index", f"must be a non-negative integer; got {_jtype(s.get('index'))} "
                           f"{_show(s.get('index'))}")
            if i < 0 or i > _INT64_MAX:
                raise _Bad(f + ".index", f"must be a non-negative integer; got {i}")
            i = int(i)
            if i in seen:
                raise _Bad(f + ".index", f"duplicated step index {i} (also at steps[{seen[i]}])")
            seen[i] = j
            a = s.get("action")
            if _is_missing(a):
                raise _Bad(f + ".action", "is required")
            if not isinstance(a, str):
                raise _Bad(f + ".action", f"must be a string; got {_jtype(a)} {_show(a)}")
            if not a:
                raise _Bad(f + ".action", "must not be empty")
            if _bad_text(a):
                raise _Bad(f + ".action", _NOT_TEXT)
            idx.append(i)
            act.append(a)
            tgt.append(_check_opt_str(s.get("target"), f + ".target"))
            scr.append(_check_opt_str(s.get("screen"), f + ".screen"))
            con.append(_check_bool(s.get("consequential"), f + ".consequential"))
            nc.append(_check_bool(s.get("needs_confirmation"), f + ".needs_confirmation"))
    except _Bad as b:
        b.trace_id = tid
        raise
    return ("complete", tid, task, domain, agent, guide, (idx, act, tgt, scr, con, nc), counts)


# --------------------------------------------------------------------------- trace readers


class _TraceCols:
    """Column buffers for the validated complete runs (Python path)."""

    def __init__(self) -> None:
        self.rec: list[int] = []  # position in the record list
        self.tid: list[str] = []
        self.task: list[str] = []
        self.domain: list[str | None] = []
        self.agent: list[str | None] = []
        self.guide: list[Any] = []
        self.nsteps: list[int] = []
        self.s_idx: list[int] = []
        self.s_act: list[str] = []
        self.s_tgt: list[str | None] = []
        self.s_scr: list[str | None] = []
        self.s_con: list[bool] = []
        self.s_nc: list[bool] = []
        self.sc_run: list[int] = []
        self.sc_src: list[str] = []
        self.sc_cnt: list[int] = []


def _validate_python(records: Sequence[Any], *, strict: bool, name: str,
                     numbers: Sequence[int]) -> tuple[dict[str, Any], np.ndarray, list, list, list]:
    """Per-record validation.  Returns (columns, status codes, trace ids, reasons, fields).

    Status code per record: 0 complete & well-formed, 1 in-progress, 2 malformed.
    """
    n = len(records)
    code = np.zeros(n, np.int8)
    tids: list[Any] = [None] * n
    reasons: list[Any] = [None] * n
    fields: list[Any] = [None] * n
    cols = _TraceCols()
    for k, obj in enumerate(records):
        if isinstance(obj, Exception):  # a line that failed to decode or parse
            bad = _Bad(None, str(obj))
        else:
            try:
                res = _check_trace(obj)
            except _Bad as b:
                bad = b
            else:
                tids[k] = res[1]
                if res[0] == "in_progress":
                    code[k] = 1
                    reasons[k] = "in_progress"
                    continue
                _, tid, task, domain, agent, guide, st, counts = res
                r = len(cols.tid)
                cols.rec.append(k)
                cols.tid.append(tid)
                cols.task.append(task)
                cols.domain.append(domain)
                cols.agent.append(agent)
                cols.guide.append(guide)
                cols.nsteps.append(len(st[0]))
                cols.s_idx += st[0]
                cols.s_act += st[1]
                cols.s_tgt += st[2]
                cols.s_scr += st[3]
                cols.s_con += st[4]
                cols.s_nc += st[5]
                for src, c in counts:
                    cols.sc_run.append(r)
                    cols.sc_src.append(src)
                    cols.sc_cnt.append(c)
                continue
        if strict:
            raise _error(bad, name, numbers[k])
        code[k] = 2
        tids[k] = bad.trace_id
        reasons[k] = f"malformed: {bad.detail}"
        fields[k] = bad.field
    nst = np.asarray(cols.nsteps, np.int64)
    columns = {
        "rec": np.asarray(cols.rec, np.int64),
        "trace_id": pa.array(cols.tid, pa.string()),
        "task": pa.array(cols.task, pa.string()),
        "domain": pa.array(cols.domain, pa.string()),
        "agent": pa.array(cols.agent, pa.string()),
        "guide": cols.guide,
        "n_steps": nst,
        "s_index": np.asarray(cols.s_idx, np.int64),
        "s_action": pa.array(cols.s_act, pa.string()),
        "s_target": pa.array(cols.s_tgt, pa.string()),
        "s_screen": pa.array(cols.s_scr, pa.string()),
        "s_cons": np.asarray(cols.s_con, bool),
        "s_conf": np.asarray(cols.s_nc, bool),
        "sc_run": np.asarray(cols.sc_run, np.int64),
        "sc_source": cols.sc_src,
        "sc_count": np.asarray(cols.sc_cnt, np.int64),
    }
    return columns, code, tids, reasons, fields


_STEP_TYPES = {
    "index": (pa.types.is_integer, pa.types.is_null),
    "action": (pa.types.is_string,),
    "target": (pa.types.is_string, pa.types.is_null),
    "screen": (pa.types.is_string, pa.types.is_null),
    "consequential": (pa.types.is_boolean, pa.types.is_null),
    "needs_confirmation": (pa.types.is_boolean, pa.types.is_null),
}
_RUN_TYPES = {
    "trace_id": (pa.types.is_string,),
    "status": (pa.types.is_string,),
    "task": (pa.types.is_string, pa.types.is_null),
    "domain": (pa.types.is_string, pa.types.is_null),
    "agent": (pa.types.is_string, pa.types.is_null),
}


def _fits(t: pa.DataType, preds: Iterable[Callable[[pa.DataType], bool]]) -> bool:
    return any(p(t) for p in preds)


def _validate_arrow(table: pa.Table) -> tuple[dict[str, Any], np.ndarray, np.ndarray] | None:
    """Column-wise validation of an Arrow table of trace records.

    Returns ``(columns, code, suspect)`` (code: 0 complete, 1 in-progress; ``suspect``
    marks records the Python validator must look at), or None when the table's
    shape is not the expected one (then the Python path reads everything).
    """
    names = set(table.column_names)
    if "trace_id" not in names or "status" not in names:
        return None
    for col, preds in _RUN_TYPES.items():
        if col in names and not _fits(table.schema.field(col).type, preds):
            return None
    n = table.num_rows
    steps_t = table.schema.field("steps").type if "steps" in names else pa.null()
    if pa.types.is_null(steps_t):
        steps_arr = None
    elif pa.types.is_list(steps_t) or pa.types.is_large_list(steps_t):
        vt = steps_t.value_type
        if pa.types.is_null(vt):
            steps_arr = table.column("steps").combine_chunks()
        elif pa.types.is_struct(vt):
            fnames = {vt.field(i).name for i in range(vt.num_fields)}
            if "action" not in fnames:
                return None
            for f in fnames & set(_STEP_TYPES):
                if not _fits(vt.field(f).type, _STEP_TYPES[f]):
                    return None
            steps_arr = table.column("steps").combine_chunks()
        else:
            return None
    else:
        return None
    sc_t = table.schema.field("step_counts").type if "step_counts" in names else pa.null()
    if not (pa.types.is_null(sc_t) or (pa.types.is_struct(sc_t) and all(
            pa.types.is_integer(sc_t.field(i).type) or pa.types.is_null(sc_t.field(i).type)
            for i in range(sc_t.num_fields)))):
        return None
    g_t = table.schema.field("guide").type if "guide" in names else pa.null()
    if not (pa.types.is_null(g_t) or pa.types.is_struct(g_t)):
        return None

    def col(name: str) -> pa.Array:
        if name in names:
            return table.column(name).combine_chunks()
        return pa.nulls(n, pa.string())

    tid = col("trace_id")
    status = col("status")
    task = col("task")
    if pa.types.is_null(task.type):
        task = pa.nulls(n, pa.string())
    suspect = np.zeros(n, bool)
    # trace_id: non-null, non-empty; status in the vocabulary
    suspect |= pc.fill_null(pc.equal(pc.binary_length(tid), 0), True).to_numpy(zero_copy_only=False)
    is_ip = pc.fill_null(pc.equal(status, "in_progress"), False).to_numpy(zero_copy_only=False)
    is_c = pc.fill_null(pc.equal(status, "complete"), False).to_numpy(zero_copy_only=False)
    suspect |= ~(is_ip | is_c)
    # complete runs: task non-empty, steps a list, every step well-formed
    suspect |= is_c & pc.fill_null(pc.equal(pc.binary_length(task), 0), True).to_numpy(zero_copy_only=False)
    if steps_arr is None:
        suspect |= is_c
        offsets = np.zeros(n + 1, np.int64)
        flat = None
    else:
        if isinstance(steps_arr, pa.ChunkedArray):  # pragma: no cover - combine_chunks gives Array
            steps_arr = steps_arr.combine_chunks()
        suspect |= is_c & steps_arr.is_null().to_numpy(zero_copy_only=False)
        offsets = steps_arr.offsets.to_numpy().astype(np.int64)
        offsets = offsets - offsets[0]
        flat = steps_arr.flatten()
    lens = np.diff(offsets)
    m = int(offsets[-1])
    step_run = np.repeat(np.arange(n, dtype=np.int64), lens)
    if flat is not None and m and pa.types.is_struct(flat.type):
        ftype = flat.type
        fn = {ftype.field(i).name for i in range(ftype.num_fields)}

        def sfield(name: str) -> pa.Array:
            return flat.field(name) if name in fn else pa.nulls(m, pa.null())

        bad_s = flat.is_null().to_numpy(zero_copy_only=False)
        index = sfield("index")
        if pa.types.is_null(index.type):
            idx_null = np.ones(m, bool)
            s_index = np.zeros(m, np.int64)
        else:
            idx_null = index.is_null().to_numpy(zero_copy_only=False)
            s_index = index.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if idx_null.any():
            # a run whose steps carry no index at all: the list order is the index
            n_null = np.bincount(step_run[idx_null], minlength=n)
            positional = (n_null == lens)[step_run]
            within = np.arange(m, dtype=np.int64) - np.repeat(offsets[:-1], lens)
            s_index = np.where(idx_null & positional, within, s_index)
            bad_s |= idx_null & ~positional
        bad_s |= s_index < 0
        action = sfield("action")
        bad_s |= pc.fill_null(pc.equal(pc.binary_length(action), 0), True).to_numpy(zero_copy_only=False)
        # duplicated index within a run
        if _increasing_within(s_index, step_run):
            dup = np.zeros(max(m - 1, 0), bool)  # strictly increasing: no repeat
            sr = step_run
        else:
            order = np.lexsort((s_index, step_run))
            sr, si = step_run[order], s_index[order]
            dup = (sr[1:] == sr[:-1]) & (si[1:] == si[:-1])
        bad_run = np.zeros(n, bool)
        if dup.any():
            bad_run[sr[1:][dup]] = True
        if bad_s.any():
            bad_run[step_run[bad_s]] = True
        suspect |= is_c & bad_run

        def sstr(name: str) -> pa.Array:
            a = sfield(name)
            if pa.types.is_null(a.type):
                return pa.nulls(m, pa.string())
            return a

        def sbool(name: str) -> np.ndarray:
            a = sfield(name)
            if pa.types.is_null(a.type):
                return np.zeros(m, bool)
            return a.fill_null(False).to_numpy(zero_copy_only=False).astype(bool)

        steps_cols = {"s_index": s_index, "s_action": action if pa.types.is_string(action.type)
                      else pa.nulls(m, pa.string()),
                      "s_target": sstr("target"), "s_screen": sstr("screen"),
                      "s_cons": sbool("consequential"), "s_conf": sbool("needs_confirmation")}
    else:
        steps_cols = {"s_index": np.zeros(m, np.int64), "s_action": pa.nulls(m, pa.string()),
                      "s_target": pa.nulls(m, pa.string()), "s_screen": pa.nulls(m, pa.string()),
                      "s_cons": np.zeros(m, bool), "s_conf": np.zeros(m, bool)}
        if m:
            suspect |= is_c & (lens > 0)
    # step_counts: non-negative
    sc_cols: list[tuple[str, np.ndarray, np.ndarray]] = []
    if pa.types.is_struct(sc_t):
        sc = table.column("step_counts").combine_chunks()
        sc_valid = sc.is_valid().to_numpy(zero_copy_only=False)
        for i in range(sc_t.num_fields):
            f = sc.field(i)
            if pa.types.is_null(f.type):
                continue
            present = f.is_valid().to_numpy(zero_copy_only=False) & sc_valid
            vals = f.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            suspect |= is_c & present & (vals < 0)
            sc_cols.append((sc_t.field(i).name, present, vals))
    columns = {"tid": tid, "task": task, "domain": col("domain"), "agent": col("agent"),
               "guide": table.column("guide").combine_chunks() if pa.types.is_struct(g_t) else None,
               "offsets": offsets, "step_run": step_run, "sc": sc_cols, **steps_cols}
    code = np.where(is_ip, 1, 0).astype(np.int8)
    return columns, code, suspect


def _s(values: Any) -> pd.Series:
    """A pandas ``str`` Series (Arrow-backed, NaN where absent) from a list, array or Arrow array."""
    if isinstance(values, pd.Series):
        values = values.array
    if hasattr(values, "__arrow_array__"):
        values = pa.array(values)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):  # large_string: what the str dtype stores (no cast)
        values = pa.array(values if isinstance(values, list | np.ndarray) else list(values),
                          type=pa.large_string(), from_pandas=True)
    elif not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = values.cast(pa.large_string())
    return pd.Series(pd.array(values, dtype=_STR))


def _from_codes(codes: np.ndarray, uniques: Sequence[Any]) -> pd.Series:
    """A ``str`` Series from integer codes into ``uniques`` (-1 or a None unique: absent)."""
    codes = np.asarray(codes, np.int64)
    if not len(uniques):
        return _s(pa.nulls(len(codes), pa.string()))
    d = pa.array(list(uniques), type=pa.large_string())
    arr = pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int64(), mask=codes < 0), d)
    return _s(arr.dictionary_decode())


#: A column of one repeated value (a ledger's source, kind and status, a missing
#: reason) is built from one block of this many rows, shared by all its Arrow chunks:
#: no memory per row, however long the column.
_CONST_BLOCK = 1 << 16


def _const(value: str | None, n: int) -> pd.Series:
    """A ``str`` Series of ``n`` copies of ``value`` (missing for None)."""
    block = pa.repeat(pa.scalar(value, pa.large_string()), min(n, _CONST_BLOCK))
    if n <= _CONST_BLOCK:
        return _s(block)
    k, rest = divmod(n, _CONST_BLOCK)
    chunks = [block] * k + ([block.slice(0, rest)] if rest else [])
    return pd.Series(pd.array(pa.chunked_array(chunks, type=pa.large_string()), dtype=_STR))


def _empty_str(n: int = 0) -> pd.Series:
    return _const(None, n)


def _str_series(a: Any) -> pd.Series:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(a, pa.Array):
        if pa.types.is_null(a.type):
            a = pa.nulls(len(a), pa.string())
        elif not pa.types.is_string(a.type):
            a = a.cast(pa.string())
        return _s(a)
    return _s(list(a))


def _increasing_within(values: np.ndarray, groups: np.ndarray) -> bool:
    """True when ``values`` strictly increase inside each run of equal ``groups``."""
    if values.size < 2:
        return True
    same = groups[1:] == groups[:-1]
    return bool(np.all(values[1:][same] > values[:-1][same]))


def _build_tables(*, tid: pa.Array, task: pa.Array, domain: pa.Array, agent: pa.Array,
                  guide: list[Any], n_steps: np.ndarray, s_index: np.ndarray, s_action: pa.Array,
                  s_target: pa.Array, s_screen: pa.Array, s_cons: np.ndarray, s_conf: np.ndarray,
                  sc_run: np.ndarray, sc_source: list[str] | np.ndarray, sc_count: np.ndarray,
                  rule: Callable[[str], Any]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Runs, steps and disagreements of the kept runs (shared by both paths).

    Steps arrive grouped by run in record order; they are sorted by index within
    each run here.  Empty strings in ``target``/``screen``/``domain``/``agent`` read as
    absent.
    """
    n = len(tid)
    step_run = np.repeat(np.arange(n, dtype=np.int64), n_steps)
    sorted_already = _increasing_within(s_index, step_run)
    order = np.arange(0) if sorted_already else np.lexsort((s_index, step_run))

    def take(a: Any) -> Any:
        if sorted_already:
            return a
        if isinstance(a, pa.Array):
            return a.take(pa.array(order))
        return a[order]

    def blank_to_null(a: pa.Array) -> pa.Array:
        if pa.types.is_null(a.type):
            return pa.nulls(len(a), pa.string())
        empty = pc.equal(pc.binary_length(a), 0)
        if pc.any(empty).as_py():
            a = pc.if_else(empty, pa.scalar(None, pa.string()), a)
        return a

    s_index = take(s_index)
    tid_s = _str_series(tid)
    steps = pd.DataFrame({
        "trace_id": _s(tid_s.array[step_run] if n else []),
        "index": s_index.astype(np.int64),
        "action": _str_series(take(s_action)),
        "target": _str_series(blank_to_null(take(s_target))),
        "screen": _str_series(blank_to_null(take(s_screen))),
        "consequential": take(s_cons).astype(bool),
        "needs_confirmation": take(s_conf).astype(bool),
        "run_pos": step_run,
    })
    # domain: the record's, else the rule applied to the task prompt
    dom = blank_to_null(domain if isinstance(domain, pa.Array) else pa.array(domain, pa.string()))
    from_rule = dom.is_null().to_numpy(zero_copy_only=False)
    dom_s = _str_series(dom)
    if from_rule.any():
        tasks = _str_series(task)[from_rule]
        codes, uniq = pd.factorize(tasks)
        derived = np.asarray(_apply_rule(rule, list(uniq)), dtype=object)
        vals = dom_s.to_numpy(dtype=object, na_value=None)
        vals[from_rule] = derived[codes] if len(uniq) else []
        dom_s = _s(vals)
    # steps_missing: index gaps, or a source reporting more steps than recorded
    first = np.zeros(n, np.int64)
    last = np.zeros(n, np.int64)
    if s_index.size:
        starts = np.cumsum(n_steps) - n_steps
        has = n_steps > 0
        first[has] = s_index[starts[has]]
        last[has] = s_index[starts[has] + n_steps[has] - 1]
    gaps = (n_steps > 0) & (last - first + 1 > n_steps)
    sc_run = np.asarray(sc_run, np.int64)
    sc_count = np.asarray(sc_count, np.int64)
    more = np.zeros(n, bool)
    differs = sc_count != n_steps[sc_run] if sc_run.size else np.zeros(0, bool)
    if sc_run.size:
        more[sc_run[sc_count > n_steps[sc_run]]] = True
    runs = pd.DataFrame({
        "trace_id": tid_s,
        "task": _str_series(task),
        "domain": dom_s,
        "domain_source": _from_codes(from_rule.astype(np.int64), ["record", "rule"]),
        "status": _const("complete", n),
        "n_steps": np.asarray(n_steps, np.int64),
        "agent": _str_series(blank_to_null(agent if isinstance(agent, pa.Array)
                                           else pa.array(agent, pa.string()))),
        "guide": pd.Series(guide, dtype=object),
        "steps_missing": gaps | more,
    })
    # disagreements, ordered by run then source name
    src = np.asarray(sc_source, dtype=object)[differs] if sc_run.size else np.zeros(0, object)
    dr = sc_run[differs]
    o = np.lexsort((src.astype(str), dr)) if dr.size else np.zeros(0, np.int64)
    dis = pd.DataFrame({
        "trace_id": _s(tid_s.array[dr[o]] if dr.size else []),
        "source": _s(src[o].tolist()),
        "count": sc_count[differs][o],
        "canonical": np.asarray(n_steps, np.int64)[dr[o]],
        "run_pos": dr[o],
    })
    return runs, steps, dis


def _ledger(name: str, numbers: Sequence[int] | np.ndarray, tids: Any, kind: str,
            dropped: np.ndarray, reasons: Any, fields: Any) -> pd.DataFrame:
    """The ledger rows of one source.  An int64 array ``numbers`` becomes the ``record``
    column as it is (the caller hands it over)."""
    n = len(dropped)
    dropped = np.asarray(dropped, bool)
    return pd.DataFrame({  # copy=False: the columns are built here or handed over
        "source": _const(name, n),
        "record": np.asarray(numbers, np.int64),
        "trace_id": tids if isinstance(tids, pd.Series) else _s(list(tids)),
        "kind": _const(kind, n),
        "status": _from_codes(dropped.astype(np.int64), ["kept", "dropped"]) if dropped.any()
        else _const("kept", n),
        "reason": reasons if isinstance(reasons, pd.Series) else _s(list(reasons)),
        "field": fields if isinstance(fields, pd.Series) else _s(list(fields)),
    }, copy=False)


def _records_from_frame(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.to_dict("records")


def _parse_json_lines(texts: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for t in texts:
        if isinstance(t, UnicodeDecodeError):
            out.append(ValueError(f"not valid UTF-8 (byte 0x{t.object[t.start]:02x} at column "
                                  f"{t.start + 1})"))
            continue
        try:
            out.append(json.loads(t))
        except json.JSONDecodeError as e:
            out.append(ValueError(f"not valid JSON ({e.msg}: column {e.colno})"))
        except RecursionError:
            out.append(ValueError("not valid JSON (nested too deeply)"))
    return out


def _no_blank_lines(data: bytes, start: int = 0, stop: int | None = None, *,
                    newlines: np.ndarray | None = None) -> tuple[bool, int]:
    """Whether every line of ``data[start:stop]`` is non-blank; and its number of lines
    (no copy of ``data``).  ``newlines``: the positions of the newlines in the range, if
    known (see :func:`_newlines`)."""
    stop = len(data) if stop is None else stop
    end = stop - 1 if stop > start and data[stop - 1:stop] == b"\n" else stop
    if newlines is None:
        newlines = _newlines(data, start, stop)
    n = len(newlines) + (0 if end < stop else 1)
    nl = data.find(b"\n", start, end)
    first = data[start:end] if nl < 0 else data[start:nl]
    last_nl = data.rfind(b"\n", start, end)
    last = data[last_nl + 1:end] if last_nl >= 0 else first
    if first.strip() in _NOT_A_ROW or last.strip() in _NOT_A_ROW:
        return False, n
    # a blank or bare-null line inside starts with one of " \t\r\nn": only when some
    # line does is the pattern searched for
    after = newlines[newlines + 1 < end] + 1
    if (after.size and _LINE_START[np.frombuffer(data, np.uint8)[after]].any()
            and _BLANK_OR_NULL_LINE.search(data, start, end)):
        return False, n
    return True, n


#: Bytes a blank or bare-``null`` line can start with.
_LINE_START = np.zeros(256, bool)
_LINE_START[list(b" \t\r\nn")] = True

#: Newlines are found with NumPy in blocks of this many bytes.
_SCAN_BYTES = 1 << 22


def _newlines(data: bytes, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Positions of the newlines in ``data[start:stop]`` (int64)."""
    stop = len(data) if stop is None else stop
    a = np.frombuffer(data, np.uint8)
    parts = [np.flatnonzero(a[i:min(i + _SCAN_BYTES, stop)] == 10) + i
             for i in range(start, stop, _SCAN_BYTES)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


#: A blank line, or a bare ``null`` line: the first is not a record; the second must
#: not reach Arrow's JSON reader, which crashes on it (pyarrow 26: a segmentation
#: fault when a block starts with ``null``), so it takes the per-record path.
_BLANK_OR_NULL_LINE = re.compile(rb"\n[ \t\r]*(?:null[ \t\r]*)?\n")
_NOT_A_ROW = (b"", b"null")


def _has_null_line(data: bytes | memoryview) -> bool:
    buf = bytes(data) if isinstance(data, memoryview) else data
    nl = buf.find(b"\n")
    first = buf if nl < 0 else buf[:nl]
    body = buf.rstrip(b"\r\n")
    last = body[body.rfind(b"\n") + 1:]
    if first.strip() == b"null" or last.strip() == b"null":
        return True
    return re.search(rb"\n[ \t\r]*null[ \t\r]*\n", buf) is not None


def _arrow_json(data: bytes | memoryview, *, checked: bool = False) -> pa.Table | None:
    """Arrow's JSON reader, or None when it refuses the input.  ``checked``: the caller
    has made sure no line is a bare ``null`` (which crashes the reader)."""
    import pyarrow.json as pj

    if not checked and _has_null_line(data):
        return None
    try:
        t = pj.read_json(pa.BufferReader(pa.py_buffer(data)),
                         read_options=pj.ReadOptions(block_size=1 << 22))
        t.validate(full=True)  # catches invalid UTF-8
        for f in t.schema:  # field names must be text too (Arrow does not check them)
            _ = f.type, f.name, str(f.type)
    except (pa.ArrowException, UnicodeError):  # UnicodeError: a message or name quoting bad bytes
        return None
    return t


def _load_trace_source(source: Any) -> tuple[str, str, Any, Any]:
    """(name, mode, payload, numbers).  mode: "arrow" (a Parquet table), "jsonl" (bytes) or
    "records" (a list)."""
    if isinstance(source, pd.DataFrame):
        recs = _records_from_frame(source)
        return "<dataframe>", "records", recs, list(range(1, len(recs) + 1))
    if isinstance(source, str | Path):
        path = Path(source)
        name = str(source)
        data = _read_bytes(path)
        kind = _kind_of_path(path, data[:8])
        if kind == "parquet":
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(pa.BufferReader(data), use_threads=False)  # see _ARROW_ABORT
            except (pa.ArrowException, OSError) as e:
                raise UnreadableInput(f"not a readable Parquet file ({e})", file=name) from None
            return name, "arrow", table, np.arange(1, table.num_rows + 1)
        if kind == "csv":
            raise UnreadableInput("a trace file must be JSONL (one JSON object per line) or Parquet",
                                  file=name)
        stripped = data.lstrip()
        if path.suffix.lower() == ".json" and stripped[:1] == b"[":
            try:
                arr = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise UnreadableInput(f"not a readable JSON array ({e})", file=name) from None
            if not isinstance(arr, list):  # pragma: no cover - starts with "["
                raise UnreadableInput("expected a JSON array of trace records", file=name)
            return name, "records", arr, list(range(1, len(arr) + 1))
        return name, "jsonl", data, None
    if isinstance(source, Mapping):
        return "<records>", "records", [source], [1]
    if isinstance(source, Iterable):
        recs = list(source)
        return "<records>", "records", recs, list(range(1, len(recs) + 1))
    raise TypeError(f"`traces` must be a path, a DataFrame or a list of dicts; got "
                    f"{type(source).__name__}.")


def read_traces(source: Any, *, strict: bool = False, domain_rule: Any = None) -> TraceRecords:
    """Read and validate trace records; drop in-progress runs and duplicated ids.

    Parameters
    ----------
    source : path, DataFrame, or list of dict
        JSONL (one run per line), a JSON array (``.json``), Parquet (same columns,
        ``steps`` a list column), a DataFrame or a list of records.  Format rules:
        ``docs/traces.md`` and ``evaltk/schemas/trace.schema.json``.
    strict : bool
        Raise :class:`~evaltk.errors.SchemaViolation` on the first malformed record
        instead of dropping it to the ledger.
    domain_rule : callable, mapping or None
        ``task -> domain`` for runs whose record carries no ``domain``; a mapping of
        domain to keywords builds a :class:`KeywordDomainRule`; None is
        :func:`domain_from_task`.

    Returns
    -------
    TraceRecords

    Raises
    ------
    UnreadableInput
        The file is missing, empty, or not UTF-8 as a whole.
    SchemaViolation
        With ``strict=True``, the first malformed record (file, line, field).

    Examples
    --------
    >>> recs = read_traces([{"trace_id": "a", "task": "Buy a mug", "status": "complete",
    ...                      "steps": [{"index": 0, "action": "tap", "target": "buy"}]},
    ...                     {"trace_id": "b", "status": "in_progress"}])
    >>> recs.runs[["trace_id", "domain", "domain_source", "n_steps"]].to_dict("records")
    [{'trace_id': 'a', 'domain': 'shopping', 'domain_source': 'rule', 'n_steps': 1}]
    >>> recs.ledger["reason"].tolist()
    [nan, 'in_progress']
    """
    rule = _resolve_rule(domain_rule)
    name, mode, payload, numbers = _load_trace_source(source)
    if mode == "jsonl":
        pieces, lines = _jsonl_pieces(name, payload, rule, strict)

        def canon(ks: Sequence[int]) -> list[str]:
            return [_canon(_parse_line(lines()[k])) for k in ks]

    elif mode == "arrow":
        table = payload
        numbers = np.asarray(numbers, np.int64)
        piece = _arrow_piece(name, table, numbers, rule, strict,
                             lambda k: table.slice(int(k), 1).to_pylist()[0])
        if piece is None:  # not the expected shape: the validator reads every row
            piece = _python_piece(table.to_pylist(), numbers, name, rule, strict)

        def canon(ks: Sequence[int]) -> list[str]:
            return [_canon(table.slice(int(k), 1).to_pylist()[0]) for k in ks]

        pieces = [piece]
    else:
        records = payload
        pieces = [_python_piece(records, np.asarray(numbers, np.int64), name, rule, strict)]

        def canon(ks: Sequence[int]) -> list[str]:
            return [_canon(records[k]) for k in ks]

    return _dedupe(name, _merge(pieces), canon)


def _canon(obj: Any) -> str:
    return json.dumps(_strip_none(obj), sort_keys=True, default=str)


@dataclass
class _Piece:
    """Validated tables of a run of consecutive records (before duplicates are resolved)."""

    numbers: np.ndarray  # line / row number per record
    code: np.ndarray  # 0 complete, 1 in progress, 2 malformed
    tids: list[Any]
    reasons: list[Any]
    fields: list[Any]
    runs: pd.DataFrame
    steps: pd.DataFrame
    dis: pd.DataFrame
    rec: np.ndarray  # record index (within the piece) of each run


def _merge(pieces: Sequence[_Piece]) -> _Piece:
    if len(pieces) == 1:
        return pieces[0]
    rec_off = np.cumsum([0] + [len(p.code) for p in pieces[:-1]])
    run_off = np.cumsum([0] + [len(p.runs) for p in pieces[:-1]])
    return _Piece(
        numbers=np.concatenate([p.numbers for p in pieces]),
        code=np.concatenate([p.code for p in pieces]),
        tids=[t for p in pieces for t in p.tids],
        reasons=[r for p in pieces for r in p.reasons],
        fields=[f for p in pieces for f in p.fields],
        runs=pd.concat([p.runs for p in pieces], ignore_index=True),
        steps=pd.concat([p.steps.assign(run_pos=p.steps["run_pos"] + o)
                         for p, o in zip(pieces, run_off, strict=True)], ignore_index=True),
        dis=pd.concat([p.dis.assign(run_pos=p.dis["run_pos"] + o)
                       for p, o in zip(pieces, run_off, strict=True)], ignore_index=True),
        rec=np.concatenate([p.rec + o for p, o in zip(pieces, rec_off, strict=True)]),
    )


def _python_piece(records: Sequence[Any], numbers: np.ndarray, name: str,
                  rule: Callable[[str], Any], strict: bool) -> _Piece:
    cols, code, tids, reasons, fields = _validate_python(records, strict=strict, name=name,
                                                         numbers=numbers)
    runs, steps, dis = _build_tables(
        tid=cols["trace_id"], task=cols["task"], domain=cols["domain"], agent=cols["agent"],
        guide=cols["guide"], n_steps=cols["n_steps"], s_index=cols["s_index"],
        s_action=cols["s_action"], s_target=cols["s_target"], s_screen=cols["s_screen"],
        s_cons=cols["s_cons"], s_conf=cols["s_conf"], sc_run=cols["sc_run"],
        sc_source=cols["sc_source"], sc_count=cols["sc_count"], rule=rule)
    return _Piece(np.asarray(numbers, np.int64), code, list(tids), list(reasons), list(fields),
                  runs, steps, dis, np.asarray(cols["rec"], np.int64))


def _parse_line(raw: bytes) -> Any:
    """One JSONL line: the parsed value, or a ValueError saying why it is not JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return _parse_json_lines([e])[0]
    return _parse_json_lines([text])[0]


#: A chunk of at most this many lines that Arrow cannot read goes to the per-record
#: validator; a larger one is split in two and each half tried again.
_MIN_CHUNK = 16


#: JSONL is parsed in newline-aligned chunks of about this many bytes: Arrow's parser
#: costs less per byte on chunks than on one very large buffer, and its working
#: memory stays bounded.
_CHUNK_BYTES = 32 << 20


def _chunk_bounds(data: bytes, size: int) -> list[tuple[int, int, int, np.ndarray]]:
    """(start, end, line number of the first line, positions of the newlines inside) of
    newline-aligned chunks."""
    out = []
    start, line0, n = 0, 1, len(data)
    while start < n:
        cut = start + size
        if cut >= n:
            end = n
        else:
            nl = data.find(b"\n", cut)
            end = n if nl < 0 else nl + 1
        newlines = _newlines(data, start, end)
        out.append((start, end, line0, newlines))
        line0 += len(newlines)
        start = end
    return out


def _jsonl_pieces(name: str, data: bytes, rule: Callable[[str], Any],
                  strict: bool) -> tuple[list[_Piece], Callable[[], list[bytes]]]:
    """Read JSONL with Arrow, chunk by chunk; where Arrow cannot (a truncated line, a type
    that changes between lines), bisect, so only small pieces around bad lines go to the
    per-record validator and the rest keeps the fast path."""
    cache: dict[str, Any] = {}

    def lines() -> list[bytes]:  # every non-blank line of the file (for duplicates)
        if "lines" not in cache:
            cache["lines"] = [ln for ln in data.split(b"\n") if ln.strip()]
        return cache["lines"]

    view = memoryview(data)
    pieces: list[_Piece] = []
    utf8_checked = False
    for start, end, line0, newlines in _chunk_bounds(data, _CHUNK_BYTES):
        clean, n_lines = _no_blank_lines(data, start, end, newlines=newlines)
        chunk_lines: list[bytes] = []

        def get_chunk_lines(start: int = start, end: int = end, chunk_lines: list = chunk_lines
                            ) -> list[bytes]:
            if not chunk_lines:
                chunk_lines.extend(ln for ln in data[start:end].split(b"\n") if ln.strip())
            return chunk_lines

        if clean:
            t = _arrow_json(view[start:end], checked=True)
            if t is not None and t.num_rows == n_lines:
                piece = _arrow_piece(name, t, np.arange(line0, line0 + n_lines, dtype=np.int64),
                                     rule, strict, lambda k, g=get_chunk_lines: _parse_line(g()[k]))
                if piece is not None:
                    pieces.append(piece)
                    continue
        # the slow path for this chunk: its lines, bisected
        if not utf8_checked:
            utf8_checked = True
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                if not any(_decodes(ln) for ln in lines()):
                    raise UnreadableInput("not UTF-8 (no line decodes as UTF-8)", file=name) from None
        nums_l, ls = [], []
        for i, ln in enumerate(data[start:end].split(b"\n"), start=line0):
            if ln.strip():
                nums_l.append(i)
                ls.append(ln)
        _bisect(name, ls, np.asarray(nums_l, np.int64), rule, strict, pieces)
    return pieces, lines


def _bisect(name: str, ls: list[bytes], nums: np.ndarray, rule: Callable[[str], Any],
            strict: bool, pieces: list[_Piece]) -> None:
    # a bare ``null`` line never goes to Arrow (see _BLANK_OR_NULL_LINE)
    nulls = np.flatnonzero([ln.strip() == b"null" for ln in ls])

    def python(lo: int, hi: int) -> None:
        recs = [_parse_line(ln) for ln in ls[lo:hi]]
        pieces.append(_python_piece(recs, nums[lo:hi], name, rule, strict))

    def visit(lo: int, hi: int) -> None:
        if hi <= lo:
            return
        if hi - lo <= _MIN_CHUNK:
            python(lo, hi)
            return
        has_null = np.searchsorted(nulls, lo) < np.searchsorted(nulls, hi)
        t = None if has_null else _arrow_json(b"\n".join(ls[lo:hi]), checked=True)
        if t is not None and t.num_rows == hi - lo:
            piece = _arrow_piece(name, t, nums[lo:hi], rule, strict,
                                 lambda k: _parse_line(ls[lo + k]))
            if piece is not None:
                pieces.append(piece)
                return
        mid = (lo + hi) // 2
        visit(lo, mid)
        visit(mid, hi)

    visit(0, len(ls))


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _arrow_piece(name: str, table: pa.Table, numbers: np.ndarray, rule: Callable[[str], Any],
                 strict: bool, get_record: Callable[[int], Any]) -> _Piece | None:
    """Column-wise validation of an Arrow table; None when it is not the expected shape
    (or the column checks and the validator disagree): then the validator reads it."""
    try:
        res = _validate_arrow(table)
    except UnicodeError:  # pragma: no cover - _arrow_json already checks the names
        return None
    if res is None:
        return None
    cols, code, suspect = res
    n = table.num_rows
    tids: list[Any] = [None] * n
    reasons = np.full(n, None, dtype=object)
    fields = np.full(n, None, dtype=object)
    code = code.copy()
    # the Python validator (the authority) explains each suspect record
    for k in np.flatnonzero(suspect):
        rec = get_record(int(k))
        try:
            if isinstance(rec, Exception):
                raise _Bad(None, str(rec))
            res_k = _check_trace(rec)
        except _Bad as b:
            if strict:
                raise _error(b, name, int(numbers[k])) from None
            code[k] = 2
            reasons[k] = f"malformed: {b.detail}"
            fields[k] = b.field
            tids[k] = b.trace_id
            continue
        if res_k[0] != "in_progress":
            return None
        code[k] = 1
    reasons[code == 1] = "in_progress"
    kept = np.flatnonzero(code == 0)
    tid_all = cols["tid"]
    tid_py = _str_series(tid_all).to_numpy(dtype=object, na_value=None)
    for k in np.flatnonzero(code == 2):
        tid_py[k] = tids[k]
    offsets = cols["offsets"]
    lens = np.diff(offsets)
    all_kept = len(kept) == n
    kept_steps = np.repeat(code == 0, lens)
    kept_idx = pa.array(kept)

    def take(a: pa.Array) -> pa.Array:
        return a if all_kept else a.take(kept_idx)

    def take_steps(a: Any) -> Any:
        if all_kept:
            return a
        if isinstance(a, pa.Array):
            return a.filter(pa.array(kept_steps))
        return a[kept_steps]

    guide: list[Any] = [None] * len(kept)
    if cols["guide"] is not None:
        g = take(cols["guide"])
        valid = g.is_valid().to_numpy(zero_copy_only=False)
        if valid.any():
            vals = g.filter(g.is_valid()).to_pylist()
            for pos, v in zip(np.flatnonzero(valid), vals, strict=True):
                guide[pos] = _strip_none(v)
    sc_run, sc_src, sc_cnt = [], [], []
    new_pos = np.full(n, -1, np.int64)
    new_pos[kept] = np.arange(len(kept))
    for src_name, present, vals in cols["sc"]:
        r = np.flatnonzero(present & (code == 0))
        sc_run.append(new_pos[r])
        sc_src.append(np.full(r.size, src_name, dtype=object))
        sc_cnt.append(vals[r])
    runs, steps, dis = _build_tables(
        tid=take(tid_all), task=take(cols["task"]), domain=take(cols["domain"]),
        agent=take(cols["agent"]), guide=guide, n_steps=lens[kept],
        s_index=take_steps(cols["s_index"]), s_action=take_steps(cols["s_action"]),
        s_target=take_steps(cols["s_target"]), s_screen=take_steps(cols["s_screen"]),
        s_cons=take_steps(cols["s_cons"]), s_conf=take_steps(cols["s_conf"]),
        sc_run=np.concatenate(sc_run) if sc_run else np.zeros(0, np.int64),
        sc_source=np.concatenate(sc_src) if sc_src else np.zeros(0, object),
        sc_count=np.concatenate(sc_cnt) if sc_cnt else np.zeros(0, np.int64), rule=rule)
    return _Piece(np.asarray(numbers, np.int64), code, list(tid_py), list(reasons), list(fields),
                  runs, steps, dis, kept.astype(np.int64))


def _dedupe(name: str, piece: _Piece, canon: Callable[[Sequence[int]], list[str]]) -> TraceRecords:
    """Duplicated trace ids among well-formed complete runs.

    Identical records: the first is kept and the repeats dropped.  Conflicting records
    (same id, different content): every copy is dropped, since preferring one would
    be a silent choice.
    """
    numbers, code, tids = piece.numbers, piece.code.copy(), piece.tids
    runs, steps, dis = piece.runs, piece.steps, piece.dis
    rec_of_run = np.asarray(piece.rec, np.int64)
    reasons = list(piece.reasons)
    fields = list(piece.fields)
    dup_mask = runs["trace_id"].duplicated(keep=False).to_numpy()
    drop_run = np.zeros(len(runs), bool)
    if dup_mask.any():
        pos = np.flatnonzero(dup_mask)
        groups = pd.Series(pos).groupby(runs["trace_id"].to_numpy(dtype=object)[pos], sort=False)
        for _tid, g in groups:
            rp = g.to_numpy()
            recs = rec_of_run[rp]
            texts = canon(recs)
            lines = [int(numbers[r]) for r in recs]
            if all(t == texts[0] for t in texts):
                for r, rr in zip(rp[1:], recs[1:], strict=True):
                    drop_run[r] = True
                    reasons[rr] = f"duplicate trace_id: identical to record {lines[0]}"
                    fields[rr] = "trace_id"
            else:
                where = ", ".join(str(x) for x in lines)
                for r, rr in zip(rp, recs, strict=True):
                    drop_run[r] = True
                    reasons[rr] = f"duplicate trace_id: conflicting records {where}; none kept"
                    fields[rr] = "trace_id"
    dropped = code != 0
    if drop_run.any():
        dropped[rec_of_run[drop_run]] = True
        keep = ~drop_run
        newpos = np.cumsum(keep) - 1
        runs = runs[keep].reset_index(drop=True)
        sk = keep[steps["run_pos"].to_numpy()]
        steps = steps[sk].reset_index(drop=True)
        steps["run_pos"] = newpos[steps["run_pos"].to_numpy()]
        dk = keep[dis["run_pos"].to_numpy()]
        dis = dis[dk].reset_index(drop=True)
        dis["run_pos"] = newpos[dis["run_pos"].to_numpy()]
    tid_series = _s(list(tids))
    ledger = _ledger(name, numbers, tid_series, "run", dropped, reasons, fields)
    # the views scoring reads, computed once on the final step columns (Arrow kernels)
    _columns.present(steps["screen"])
    _columns.present(steps["target"])
    _columns.adjacent_equal(steps["action"])
    _columns.adjacent_equal(steps["target"])
    _columns.remember_positions(steps["trace_id"], runs["trace_id"], steps["run_pos"].to_numpy())
    return TraceRecords(runs=runs, steps=steps, step_count_disagreements=dis, ledger=ledger)


# --------------------------------------------------------------------------- answers

_ANSWER_REQUIRED = ("trace_id", "measure", "rater", "answer")


def _load_answer_source(source: Any, kind: str) -> tuple[str, pd.DataFrame, np.ndarray]:
    """(name, raw frame, record numbers).  Raw frames keep the source's own types."""
    if isinstance(source, pd.DataFrame):
        return "<dataframe>", source.reset_index(drop=True), np.arange(1, len(source) + 1)
    if isinstance(source, str | Path):
        path = Path(source)
        name = str(source)
        data = _read_bytes(path)
        fmt = _kind_of_path(path, data[:8])
        if fmt == "parquet":
            import pyarrow.parquet as pq

            try:
                df = pq.read_table(pa.BufferReader(data), use_threads=False).to_pandas()  # see _ARROW_ABORT
            except (pa.ArrowException, OSError) as e:
                raise UnreadableInput(f"not a readable Parquet file ({e})", file=name) from None
            return name, df, np.arange(1, len(df) + 1)
        if fmt == "jsonl":
            clean, n_lines = _no_blank_lines(data)
            t = _arrow_json(data) if clean else None
            if (t is not None and t.num_rows == n_lines
                    and all(not pa.types.is_nested(f.type) for f in t.schema)):
                return name, t.to_pandas(), np.arange(1, n_lines + 1)
            nums, texts = _split_lines(data, name)
            recs = _parse_json_lines(texts)
            return name, _frame_from_records(recs), np.asarray(nums, np.int64)
        return _read_csv(data, name)
    if isinstance(source, Mapping):
        return "<records>", _frame_from_records([source]), np.array([1])
    if isinstance(source, Iterable):
        recs = list(source)
        return "<records>", _frame_from_records(recs), np.arange(1, len(recs) + 1)
    raise TypeError(f"`{kind}s` must be a path, a DataFrame or a list of dicts; got "
                    f"{type(source).__name__}.")


def _frame_from_records(recs: Sequence[Any]) -> pd.DataFrame:
    """Records (dicts, or exceptions for unparsable lines) to an object frame.

    A record that is not an object becomes a row with a private ``__error__`` column.
    """
    rows = []
    for r in recs:
        if isinstance(r, Exception):
            rows.append({"__error__": str(r)})
        elif not isinstance(r, Mapping):
            rows.append({"__error__": f"an answer record must be a JSON object; got {_jtype(r)}"})
        else:
            rows.append(dict(r))
    df = pd.DataFrame.from_records(rows) if rows else pd.DataFrame()
    return df.astype(object) if len(df.columns) else df


def _read_csv(data: bytes, name: str) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Every cell as text (CSV has no types); record numbers are file line numbers."""
    import csv

    import pyarrow.csv as pcsv

    nl = data.find(b"\n")
    head = data if nl < 0 else data[:nl]
    try:
        header = next(csv.reader([head.decode("utf-8").rstrip("\r")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        raise UnreadableInput("the CSV header is not readable UTF-8 text", file=name) from None
    if len(set(header)) != len(header):
        raise SchemaViolation(f"duplicated column names in the header: {header}", file=name,
                              record=1)
    clean, n_lines = _no_blank_lines(data)
    if clean and n_lines >= 2:
        try:
            t = pcsv.read_csv(
                pa.BufferReader(data), read_options=pcsv.ReadOptions(block_size=1 << 24),  # see _ARROW_ABORT
                convert_options=pcsv.ConvertOptions(column_types={h: pa.string() for h in header},
                                                    strings_can_be_null=False))
            t.validate(full=True)
        except (pa.ArrowException, ValueError):
            t = None
        if t is not None and t.num_rows == n_lines - 1:  # no quoted newline moved a row
            return name, t.to_pandas(), np.arange(2, n_lines + 1)
    # row by row: ragged rows, bad bytes, blank lines, quoted newlines
    text = data.decode("utf-8", errors="surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[dict[str, Any]] = []
    nums: list[int] = []
    line = 1
    try:
        next(reader)
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                rows.append({"__error__": f"not valid CSV ({e})"})
                nums.append(start)
                continue
            line = start
            if not fields or all(not f.strip() for f in fields) and len(fields) <= 1:
                continue  # a blank line is not a record
            nums.append(line)
            if any(_has_surrogate(f) for f in fields):
                rows.append({"__error__": "not valid UTF-8"})
            elif len(fields) != len(header):
                rows.append({"__error__": f"has {len(fields)} fields; the header has {len(header)}"})
            else:
                rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error as e:  # pragma: no cover - csv raises per row above
        raise UnreadableInput(f"not readable as CSV ({e})", file=name) from None
    df = pd.DataFrame.from_records(rows, columns=list(dict.fromkeys([*header, "__error__"])))
    return name, df.astype(object), np.asarray(nums, np.int64)


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _str_col(col: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(values as str dtype with NaN where absent, absent mask, wrong-type mask).

    Absent: null, NaN or the empty string.
    """
    if isinstance(col.dtype, pd.StringDtype):
        s = col.astype(_STR)
        # absent: a null or the empty string (a required field that is null is malformed)
        empty = pc.fill_null(pc.equal(s.array._pa_array, ""), True)
        empty = np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool)
        if empty.any():
            s = s.where(~empty)
        return s.reset_index(drop=True), empty, np.zeros(len(col), bool)
    vals = col.to_numpy(dtype=object)
    n = len(vals)
    is_str = np.fromiter((isinstance(v, str) and not _bad_text(v) for v in vals), bool, n)
    miss = np.fromiter((_is_missing(v) or (isinstance(v, str) and v == "") for v in vals), bool, n)
    wrong = ~is_str & ~miss
    clean = np.where(is_str & ~miss, vals, None)
    return _s(clean), miss, wrong


def _str_codes(col: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values, codes, uniques, absent mask, wrong-type mask) of a text column.

    ``uniques[codes[i]]`` is row i's text, and codes are -1 where it is missing or
    empty.  ``values`` is the column as ``str``; an Arrow-backed column is passed
    through as it is, so an empty string stays in it (the rows it fills are absent,
    which the caller drops).

    As in :func:`_str_col`, absent means null or the empty string.
    """
    if isinstance(col.dtype, pd.StringDtype):
        s = col.astype(_STR).reset_index(drop=True)
        codes, uniq = _arrow_codes(s.array._pa_array)
        empty = np.flatnonzero(uniq == "")
        miss = (codes == empty[0]) | (codes < 0) if empty.size else codes < 0
        if empty.size:
            codes = np.where(miss, -1, codes)
        return s, codes, uniq, miss, np.zeros(len(col), bool)
    s, miss, wrong = _str_col(col)
    codes, uniq = pd.factorize(s)
    return s, np.asarray(codes, np.int64), np.asarray(uniq, dtype=object), miss, wrong


def _int64(a: pa.Array | pa.ChunkedArray, fill: int = -1) -> np.ndarray:
    """An Arrow integer array as int64, ``fill`` where null (one copy, chunk by chunk)."""
    chunks = a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    out = np.empty(len(a), np.int64)
    off = 0
    for c in chunks:
        if c.null_count:
            c = pc.fill_null(c, fill)
        out[off:off + len(c)] = c.to_numpy(zero_copy_only=False)
        off += len(c)
    return out


def _arrow_codes(a: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` of an Arrow string array, -1 where null (as ``pd.factorize``,
    without its intermediate copies: Arrow encodes every chunk against one dictionary)."""
    enc = pc.dictionary_encode(a)
    chunks = enc.chunks if isinstance(enc, pa.ChunkedArray) else [enc]
    if not chunks:
        return np.zeros(0, np.int64), np.zeros(0, object)
    d = chunks[0].dictionary
    if not all(c.dictionary.equals(d) for c in chunks[1:]):  # pragma: no cover - not in pyarrow 26
        codes, uniq = pd.factorize(pd.Series(pd.array(a, dtype=_STR)))
        return np.asarray(codes, np.int64), np.asarray(uniq, dtype=object)
    return (_int64(pa.chunked_array([c.indices for c in chunks], type=chunks[0].indices.type)),
            np.asarray(d.to_numpy(zero_copy_only=False), dtype=object))


def _int_steps(col: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, present mask) of a signed integer column whose values are all exact as
    float64 (what the float path would read); values are 0 where absent.  None for any
    other column (then it is read as numbers)."""
    if getattr(col.dtype, "kind", None) != "i":
        return None
    present = col.notna().to_numpy(dtype=bool)
    values = col.to_numpy(dtype=np.int64, na_value=0, copy=True)
    if values.size and (int(values.max()) > 2**53 or int(values.min()) < -2**53):
        return None
    return values, present


def _int_view(col: pd.Series) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """(values, present mask, whether ``col`` is an ``Int64`` column) of a signed integer
    column whose values are all exact as float64, else None.  An ``Int64`` column's own
    values are returned (read only; arbitrary where absent); any other column's are a
    copy, 0 where absent."""
    arr = col.array
    data, mask = getattr(arr, "_data", None), getattr(arr, "_mask", None)
    if (isinstance(arr, pd.arrays.IntegerArray) and isinstance(data, np.ndarray)
            and data.dtype == np.int64 and isinstance(mask, np.ndarray) and mask.shape == data.shape):
        present = ~mask
        if present.any() and (int(data.max(where=present, initial=0)) > 2**53
                              or int(data.min(where=present, initial=0)) < -2**53):
            return None
        return data, present, True
    ints = _int_steps(col)
    return None if ints is None else (*ints, False)


def _text_at(uniques: np.ndarray, codes: np.ndarray, i: int) -> Any:
    """Row i's text from its code (NaN, as pandas shows a missing ``str``, for -1)."""
    return uniques[codes[i]] if codes[i] >= 0 else np.nan


def _num_col(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float values, NaN where absent; wrong-type mask).  Text must be a decimal number."""
    n = len(col)
    if pd.api.types.is_bool_dtype(col.dtype):
        return np.full(n, np.nan), col.notna().to_numpy()
    if pd.api.types.is_numeric_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan), np.zeros(n, bool)
    if isinstance(col.dtype, pd.StringDtype):
        a = pa.array(col.astype(_STR).array)
        a = pc.utf8_trim_whitespace(a)
        a = pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a)
        try:
            v = pc.cast(a, pa.float64())
            return v.to_numpy(zero_copy_only=False), np.zeros(n, bool)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            present = a.is_valid().to_numpy(zero_copy_only=False)
            v = pd.to_numeric(pd.Series(a.to_pandas()), errors="coerce").to_numpy(dtype=float)
            return v, present & np.isnan(v)
    vals = col.to_numpy(dtype=object)
    out = np.full(n, np.nan)
    wrong = np.zeros(n, bool)
    for i, v in enumerate(vals):
        if _is_missing(v) or (isinstance(v, str) and not v.strip()):
            continue
        if isinstance(v, bool | np.bool_):
            wrong[i] = True
        elif isinstance(v, int | float | np.integer | np.floating):
            out[i] = float(v)
        elif isinstance(v, str):
            try:
                out[i] = float(v)
            except ValueError:
                wrong[i] = True
            else:
                wrong[i] = math.isnan(out[i])
        else:
            wrong[i] = True
    return out, wrong


class _Flags:
    """The first failing check per row, kept sparse: most rows pass every check, so only
    flagged rows get a message (and a Python call); the rest cost one mask operation."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.done = np.zeros(n, bool)
        self._rows: list[np.ndarray] = []
        self._reasons: list[list[str]] = []
        self._fields: list[list[Any]] = []

    def flag(self, mask: np.ndarray, fld: str | None, msg: Callable[[int], str]) -> None:
        """Flag the rows of ``mask`` not flagged yet, with ``msg(row)`` and field ``fld``."""
        hit = np.flatnonzero(mask & ~self.done)
        if hit.size:
            self.add(hit, [msg(int(i)) for i in hit], [fld] * hit.size)

    def add(self, rows: np.ndarray, reasons: list[str], fields: list[Any]) -> None:
        """Flag ``rows`` (none flagged yet) with their reasons and fields."""
        rows = np.asarray(rows, np.int64)
        self.done[rows] = True
        self._rows.append(rows)
        self._reasons.append(list(reasons))
        self._fields.append(list(fields))

    def rows(self) -> tuple[np.ndarray, list[Any], list[Any]]:
        """(flagged rows in order, their reasons, their fields)."""
        if not self._rows:
            return np.zeros(0, np.int64), [], []
        rows = np.concatenate(self._rows)
        reasons = [r for rs in self._reasons for r in rs]
        fields = [f for fs in self._fields for f in fs]
        if len(self._rows) > 1:
            o = np.argsort(rows, kind="stable")
            rows = rows[o]
            reasons = [reasons[k] for k in o]
            fields = [fields[k] for k in o]
        return rows, reasons, fields

    def series(self) -> tuple[pd.Series, pd.Series]:
        """(reason, field) as ``str`` Series of length n, missing where not flagged."""
        rows, reasons, fields = self.rows()
        return _sparse_str(self.n, rows, reasons), _sparse_str(self.n, rows, fields)


def _sparse_str(n: int, rows: np.ndarray, values: Sequence[Any]) -> pd.Series:
    """A ``str`` Series of length n holding ``values`` at ``rows`` and missing elsewhere."""
    if not len(rows):
        return _empty_str(n)
    idx = np.full(n, -1, np.int64)
    idx[rows] = np.arange(len(rows))
    small = pa.array(list(values), type=pa.large_string())
    return _s(small.take(pa.array(idx, mask=idx < 0)))


def _distinct_ids(values: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """Ids of ``values`` among their distinct strings (-1 for a non-string) plus one
    trailing -1 (so code -1 maps to -1); and the distinct strings."""
    names: dict[str, int] = {}
    ids = [names.setdefault(v, len(names)) if isinstance(v, str) else -1 for v in values]
    return np.asarray([*ids, -1], np.int64), list(names)


def _answer_checks(raw: pd.DataFrame) -> tuple[dict[str, Any], _Flags,
                                               dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Column-wise validation.  Returns (normalised columns, flags, codes).

    Checks run in a fixed order; a row's reason is the first check it fails.  ``codes``
    holds ``(codes, uniques)`` of the ``measure``, ``rater`` and ``answer`` columns.
    Only the flagged rows' values may differ from what they would be if kept: the
    caller drops them.
    """
    n = len(raw)
    fl = _Flags(n)
    flag = fl.flag

    def raw_vals(c: str) -> np.ndarray:
        return raw[c].to_numpy(dtype=object) if c in raw.columns else np.full(n, None, object)

    if "__error__" in raw.columns:
        err = raw["__error__"].to_numpy(dtype=object)
        flag(np.fromiter((isinstance(e, str) for e in err), bool, n), None,
             lambda i: f"malformed: {err[i]}")
    texts = {}
    for c in ("trace_id", "rater_version"):
        texts[c] = _str_col(raw[c]) if c in raw.columns else (_empty_str(n), np.ones(n, bool),
                                                               np.zeros(n, bool))
    coded = {}  # measure, rater and answer: (values, codes, uniques) of the text as given
    for c in ("measure", "rater", "answer"):
        if c in raw.columns:
            vals_c, codes_c, uniq_c, miss_c, wrong_c = _str_codes(raw[c])
        else:
            vals_c, codes_c, uniq_c = _empty_str(n), np.full(n, -1, np.int64), np.zeros(0, object)
            miss_c, wrong_c = np.ones(n, bool), np.zeros(n, bool)
        coded[c] = (vals_c, codes_c, uniq_c)
        texts[c] = (vals_c, miss_c, wrong_c)
    for c in ("trace_id", "measure", "rater", "answer"):
        _, miss, wrong = texts[c]
        flag(miss, c, lambda i: "malformed: is required")
        if wrong.any():
            vals = raw_vals(c)
            flag(wrong, c, lambda i, vals=vals: f"malformed: {_NOT_TEXT}" if isinstance(vals[i], str)
                 else f"malformed: must be a string; got {_jtype(vals[i])} {_show(vals[i])}")
    if texts["rater_version"][2].any():
        rvv = raw_vals("rater_version")
        flag(texts["rater_version"][2], "rater_version",
             lambda i: f"malformed: must be a string or empty; got {_jtype(rvv[i])} {_show(rvv[i])}")
    # measure names (per unique spelling; several spellings may name one measure)
    meas_raw, m_codes, m_uniq = coded["measure"]
    m_norm: list[Any] = []
    for m in m_uniq:
        k = str(m).strip().lower()
        k = MEASURE_ALIASES.get(k, k)
        m_norm.append(k if (k in ANSWER_VOCABULARIES or k in FREE_TEXT_MEASURES or _G_MEASURE.match(k))
                      else None)
    m_ids, m_names = _distinct_ids(m_norm)  # row's measure: m_ids[m_codes] (-1: absent, unknown)
    known = (m_ids >= 0)[m_codes]

    def meas(i: int) -> str:
        return m_names[m_ids[m_codes[i]]]

    flag(~known & ~texts["measure"][1], "measure",
         lambda i: f"unknown measure: {_show(_text_at(m_uniq, m_codes, i))} (known: "
                   f"{', '.join(sorted({*ANSWER_VOCABULARIES, *FREE_TEXT_MEASURES}))}, or g_<name>)")
    # answer words (per unique (measure, spelling) pair)
    ans_raw, a_codes, a_uniq = coded["answer"]
    width = len(a_uniq) + 1
    n_pairs = (len(m_names) + 1) * width

    def pairs(i: int, j: int) -> np.ndarray:
        pb = m_ids[m_codes[i:j]]
        pb += 1
        pb *= width
        pb += a_codes[i:j]
        pb += 1
        return pb

    if n_pairs <= 4 * n + 4096:  # a dense table over the pair space, indexed by the pair
        seen = np.zeros(n_pairs, bool)
        for i, j in _blocks(n):
            seen[pairs(i, j)] = True
        p_uniq = np.flatnonzero(seen)

        def per_pair(values: list[Any], dtype: Any) -> np.ndarray:
            """Row -> its pair's value (blockwise: no full-length pair array)."""
            table = np.zeros(n_pairs, dtype)
            table[p_uniq] = values
            out = np.empty(n, dtype)
            for i, j in _blocks(n):
                out[i:j] = table[pairs(i, j)]
            return out
    else:  # sorted: per unique pair
        p_uniq, p_inv = np.unique(pairs(0, n), return_inverse=True)

        def per_pair(values: list[Any], dtype: Any) -> np.ndarray:
            return np.asarray(values, dtype)[p_inv]
    resolved: list[Any] = []
    for p in p_uniq.tolist():
        mi, ai = divmod(p, width)
        meas_name, word = (m_names[mi - 1] if mi else None), (a_uniq[ai - 1] if ai else None)
        if meas_name is None or word is None:
            resolved.append(None)
        elif meas_name in ANSWER_VOCABULARIES:
            w = normalize_answer(word)
            resolved.append(w if w in ANSWER_VOCABULARIES[meas_name] else False)
        else:
            resolved.append(word)  # identifiers and free text: verbatim
    unknown = per_pair([r is False for r in resolved], bool)
    flag(unknown, "answer", lambda i: f"unknown answer word: {_show(_text_at(a_uniq, a_codes, i))} for "
                                      f"{meas(i)} (allowed: {', '.join(ANSWER_VOCABULARIES[meas(i)])})")
    # step
    ints = _int_view(raw["step"]) if "step" in raw.columns else None
    if ints is not None:  # integers (the usual case): no float round trip
        step_i, has_step, step_as_given = ints
        bad_int = has_step & (step_i < 0)
    else:
        if "step" in raw.columns:
            step_f, step_wrong = _num_col(raw["step"])
        else:
            step_f, step_wrong = np.full(n, np.nan), np.zeros(n, bool)
        step_vals = raw_vals("step") if step_wrong.any() else None
        flag(step_wrong, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                           f"{_jtype(step_vals[i])} {_show(step_vals[i])}")
        has_step = ~np.isnan(step_f)
        with np.errstate(invalid="ignore"):
            bad_int = has_step & ((step_f < 0) | (step_f != np.floor(step_f)) | (step_f > 2**53)
                                  | np.isinf(step_f))
    if bad_int.any():
        step_vals = raw_vals("step")
        flag(bad_int, "step", lambda i: f"malformed: must be a non-negative integer or empty; got "
                                        f"{_show(step_vals[i])}")
    per_step = np.asarray([m in PER_STEP_MEASURES for m in m_names] + [False], bool)[m_ids][m_codes]
    flag(per_step & ~has_step, "step",
         lambda i: f"malformed: is required for the per-step measure {meas(i)}")
    if (known & ~per_step & has_step).any():
        step_vals = raw_vals("step")
        flag(known & ~per_step & has_step, "step",
             lambda i: f"malformed: must be empty for the trace-level measure {meas(i)}; got "
                       f"{_show(step_vals[i])}")
    # numbers
    nums: dict[str, Any] = {}
    absent: pd.Series | None = None
    for c, hi in (("confidence", 1.0), ("cost", math.inf), ("latency_ms", math.inf)):
        if c not in raw.columns:  # absent: all NaN, nothing to check; the absent columns
            # share one array as pandas columns (copy on write: an edit copies)
            absent = pd.Series(np.full(n, np.nan)) if absent is None else absent
            nums[c] = absent
            continue
        v, wrong = _num_col(raw[c])
        rng = "a number in [0, 1]" if hi == 1.0 else "a finite number >= 0"
        if wrong.any():
            vals = raw_vals(c)
            flag(wrong, c, lambda i, vals=vals, rng=rng: f"malformed: must be {rng} or empty; got "
                                                         f"{_jtype(vals[i])} {_show(vals[i])}")
        with np.errstate(invalid="ignore"):
            out_r = ~np.isnan(v) & ((v < 0.0) | (v > hi) | np.isinf(v))
        flag(out_r, c, lambda i, v=v, rng=rng: f"malformed: must be {rng}; got {float(v[i])!r}")
        nums[c] = v if v.flags.owndata else v.copy()  # the table owns its columns
    ok = ~fl.done
    if ints is None:
        valid_step = has_step & ok
        step_col = pd.Series(pd.arrays.IntegerArray(np.where(valid_step, step_f, 0).astype(np.int64),
                                                    ~valid_step))
    elif step_as_given:  # an Int64 column: itself (shared, copy on write); the rows not
        step_col = raw["step"]  # kept are dropped by the caller: their step does not matter
    else:
        step_col = pd.Series(pd.arrays.IntegerArray(step_i, ~has_step))
    # measure and answer: the column as given when every spelling a kept row uses is
    # already the canonical one (no new column to build); else built from codes.  The
    # rows not kept are dropped by the caller, so what they hold does not matter.
    arrow_in = {c: _columns._arrow(coded[c][0]) is not None for c in coded}
    if arrow_in["measure"] and all(k is None or k == u for k, u in zip(m_norm, m_uniq, strict=True)):
        meas_col, codes_m = meas_raw, (m_codes, m_uniq)
    else:
        codes_m = (np.where(ok, m_ids[m_codes], -1), np.asarray(m_names, dtype=object))
        meas_col = _from_codes(*codes_m)
    words = [a_uniq[p % width - 1] if p % width else None for p in p_uniq.tolist()]
    if arrow_in["answer"] and all(not isinstance(r, str) or r == w
                                  for r, w in zip(resolved, words, strict=True)):
        ans_col, codes_a = ans_raw, (a_codes, a_uniq)
    else:
        a_ids, a_names = _distinct_ids(resolved)
        codes_a = (np.where(ok, per_pair(list(a_ids[:-1]), np.int64), -1),
                   np.asarray(a_names, dtype=object))
        ans_col = _from_codes(*codes_a)
    codes = {"measure": codes_m, "rater": coded["rater"][1:], "answer": codes_a}
    out = {
        "trace_id": texts["trace_id"][0],
        "measure": meas_col,
        "step": step_col,
        "rater": texts["rater"][0],
        "answer": ans_col,
        "confidence": nums["confidence"],
        "cost": nums["cost"],
        "latency_ms": nums["latency_ms"],
        "rater_version": texts["rater_version"][0],
    }
    return out, fl, codes


def read_answers(source: Any, *, strict: bool = False, kind: str = "answer") -> AnswerRecords:
    """Read and validate a long table of judge answers (``kind="answer"``) or human labels.

    Parameters
    ----------
    source : path, DataFrame, or list of dict
        CSV (header row; empty cells are absent), JSONL, Parquet, a DataFrame or a
        list of records with columns ``trace_id, measure, step, rater, answer`` and
        optionally ``confidence, cost, latency_ms, rater_version``.  Other columns
        are ignored.
    strict : bool
        Raise :class:`~evaltk.errors.SchemaViolation` on the first malformed row
        instead of dropping it to the ledger.
    kind : {"answer", "label"}
        Judges' answers or humans' labels (the ledger's ``kind``).

    Returns
    -------
    AnswerRecords

    Raises
    ------
    UnreadableInput
        The file is missing, empty or not UTF-8.
    SchemaViolation
        A required column is missing (always), or with ``strict=True`` a malformed row.

    Examples
    --------
    >>> a = read_answers([{"trace_id": "a", "measure": "x_task", "rater": "j1",
    ...                    "answer": "Cannot tell"}])
    >>> a.table["answer"].tolist(), a.table["step"].tolist()
    (['cannot_tell'], [<NA>])
    """
    if kind not in ("answer", "label"):
        raise ValueError(f"`kind` must be 'answer' or 'label'; got {kind!r}.")
    name, raw, numbers = _load_answer_source(source, kind)
    if len(raw) == 0 and (name.startswith("<") or set(_ANSWER_REQUIRED) <= set(raw.columns)):
        # a header without rows, an empty DataFrame or list: a valid, empty table
        return AnswerRecords(_empty_table(), _ledger(name, [], [], kind, np.zeros(0, bool), [], []),
                             kind)
    all_err = "__error__" in raw.columns and bool(raw["__error__"].notna().all())
    missing_cols = [c for c in _ANSWER_REQUIRED if c not in raw.columns]
    if missing_cols and not all_err:
        raise SchemaViolation(f"required column(s) missing: {', '.join(missing_cols)} (an answer "
                              f"table needs trace_id, measure, rater, answer, and step for per-step "
                              f"measures)", file=name, field=missing_cols[0])
    cols, flags, codes = _answer_checks(raw)
    bad = flags.done
    any_bad = bool(bad.any())
    if strict and any_bad:
        rows, reasons, fields = flags.rows()
        r = reasons[0]
        msg = r.split(": ", 1)[1] if r.startswith("malformed: ") else r
        raise SchemaViolation(msg, file=name, record=int(numbers[rows[0]]), field=fields[0])
    reason_s, field_s = flags.series()
    ledger = _ledger(name, numbers, cols["trace_id"], kind, bad, reason_s, field_s)
    # built here, or shared with the ledger as a pandas column (copy on write)
    table = pd.DataFrame({**cols, "ledger_row": np.arange(len(bad), dtype=np.int64),
                          "record": ledger["record"]}, copy=False)
    if any_bad:
        table = table[~bad].reset_index(drop=True)
        codes = {c: (k[~bad], u) for c, (k, u) in codes.items()}
    for c, v in codes.items():  # the join (and scoring) read these instead of hashing again
        _columns.remember(table[c], "codes", v)
    return AnswerRecords(table=table, ledger=ledger, kind=kind)


def _positions(keys: pd.Series, index: pd.Series) -> np.ndarray:
    """Row of each key in ``index`` (unique values), -1 where absent (an Arrow hash join)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    k = pa.array(keys.astype(_STR).array)
    v = pa.array(index.astype(_STR).array)
    return _int64(pc.index_in(k, value_set=v))


def _search_steps(s_run: np.ndarray, s_idx: np.ndarray, a_run: np.ndarray, a_idx: np.ndarray,
                  n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Row in steps of each (run, index), by binary search: (rows, found)."""
    if len(s_idx) and int(s_idx.max()) < 2**31 and n_runs < 2**31:
        width = int(s_idx.max()) + 1
        skey = s_run * width + s_idx
        akey = a_run * width + np.minimum(a_idx, width - 1)
        pos = np.minimum(np.searchsorted(skey, akey), len(skey) - 1)
        found = (a_idx < width) & (skey[pos] == akey)
    elif len(s_idx):
        mi = pd.MultiIndex.from_arrays([s_run, s_idx])
        pos = mi.get_indexer(pd.MultiIndex.from_arrays([a_run, a_idx]))
        found = pos >= 0
    else:
        pos = np.zeros(len(a_idx), np.int64)
        found = np.zeros(len(a_idx), bool)
    return pos, found


def _blocks(n: int) -> Iterable[tuple[int, int]]:
    """(start, stop) of consecutive row blocks of at most ``_BLOCK`` rows covering n rows."""
    return ((i, min(i + _BLOCK, n)) for i in range(0, n, _BLOCK))


#: Row block for long chains of element-wise NumPy work: temporaries of this many
#: rows stay in cache and are reused, where full-length ones would each be new memory.
_BLOCK = 1 << 16


def _step_rows(steps: pd.DataFrame, run_pos: np.ndarray, step: np.ndarray, sel: np.ndarray,
               n_runs: int) -> np.ndarray:
    """Row in ``steps`` of each selected (run, step index); -1 where there is none or
    the row is not selected.

    Steps are ordered by run then index; when a run's indices are consecutive (the
    usual case) step i of a run sits at a fixed offset from the run's first step, so
    most rows are found by arithmetic and only the rest by binary search.
    """
    s_run = steps["run_pos"].to_numpy(np.int64)
    s_idx = steps["index"].to_numpy(np.int64)
    m, n = len(s_idx), len(run_pos)
    same = s_run[1:] == s_run[:-1]
    if m and (s_run[0] >= 0 and s_run[-1] < n_runs and bool(np.all(s_run[1:] >= s_run[:-1]))
              and bool(np.all(s_idx[1:][same] > s_idx[:-1][same]))):
        count = np.bincount(s_run, minlength=n_runs)
        first_row = np.cumsum(count) - count
        base = first_row - s_idx[np.minimum(first_row, m - 1)]  # the row of index 0
        out = np.empty(n, np.int64)
        rest = np.empty(n, bool)
        for i in range(0, n, _BLOCK):  # in blocks: the temporaries stay small
            j = min(i + _BLOCK, n)
            r, st = run_pos[i:j], step[i:j]
            cand = np.take(base, r, mode="clip")
            cand += st
            np.clip(cand, 0, m - 1, out=cand)
            found = s_run[cand] == r
            found &= s_idx[cand] == st
            found &= sel[i:j]
            out[i:j] = np.where(found, cand, -1)
            rest[i:j] = sel[i:j] & ~found
    else:  # not in order: binary search only
        out = np.full(n, -1, np.int64)
        rest = sel
    rows = np.flatnonzero(rest)
    if rows.size:
        pos, found = _search_steps(s_run, s_idx, run_pos[rows], step[rows], n_runs)
        out[rows] = np.where(found, pos, -1)
    return out


def _int_or_float_steps(col: pd.Series) -> tuple[np.ndarray, np.ndarray, Callable[[int], int]]:
    """(step as int64, present mask, row -> the step as the message shows it); read only,
    arbitrary where absent."""
    ints = _int_view(col)
    if ints is not None:
        values, present, _ = ints
        return values, present, lambda j: int(values[j])
    f = col.to_numpy(dtype=np.float64, na_value=np.nan)
    present = ~np.isnan(f)
    return np.where(present, f, 0).astype(np.int64), present, lambda j: int(f[j])


def _combine_keys(parts: Sequence[np.ndarray], *, own_first: bool = False) -> tuple[np.ndarray, int]:
    """One non-negative int64 key per row for a tuple of integer columns (equal tuples,
    equal keys; distinct tuples, distinct keys) and the size of its key space.
    ``own_first``: the first column is an int64 array the key may be built in."""
    key = None
    space = 1
    for p in parts:
        lo = int(p.min()) if p.size else 0
        size = (int(p.max()) if p.size else 0) - lo + 1
        if key is None:
            key = p if own_first and p.dtype == np.int64 else np.array(p, np.int64)
            if lo:
                key -= lo
            space = size
            continue
        if space * size >= 2**62:  # compress what is there so far to dense ids
            u, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
            space = len(u)
        key *= size
        key += p
        if lo:
            key -= lo
        space *= size
    return key, space


def _distinct_questions(ok: np.ndarray, has_step: np.ndarray, step_pos: np.ndarray,
                        run_pos: np.ndarray, n_steps: int, n_runs: int, measure: np.ndarray,
                        rater: np.ndarray) -> bool:
    """True when no rater answers one question (step or run) of one measure twice among
    the ``ok`` rows, shown cheaply; False when there may be a repeat (the caller then
    finds them exactly).

    The usual input comes in a few runs sorted by question (per rater and measure, in
    trace order): the rows are cut where the key stops increasing, so each segment
    holds distinct keys, and a bitmap over the key space finds a key seen in an
    earlier segment.  Work is block by block; only the bitmap is full size.
    """
    n = len(ok)
    if not n:
        return True
    m_lo, r_lo = int(measure.min()), int(rater.min())
    n_m, n_r = int(measure.max()) - m_lo + 1, int(rater.max()) - r_lo + 1
    space = (n_steps + n_runs) * n_m * n_r
    if space > 16 * n + (1 << 16):
        return False
    seen = np.zeros(space, bool)
    segments = 0
    for i, j in _blocks(n):
        key = run_pos[i:j] + n_steps
        np.copyto(key, step_pos[i:j], where=has_step[i:j])
        key *= n_m
        key += measure[i:j]
        key -= m_lo
        key *= n_r
        key += rater[i:j]
        key -= r_lo
        key = key[ok[i:j]]
        if not key.size:
            continue
        cuts = np.flatnonzero(key[1:] <= key[:-1]) + 1
        segments += cuts.size
        if segments > 64:  # not a few sorted runs: leave it to the exact check
            return False
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), key.size], strict=True):
            seg = key[a:b]
            if seen[seg].any():
                return False
            seen[seg] = True
    return True


def _repeated(key: np.ndarray, space: int) -> np.ndarray:
    """True where a key occurs more than once (every copy)."""
    n = len(key)
    if n > 1 and np.count_nonzero(key[1:] < key[:-1]) < 16:
        # a few sorted runs (answers grouped by rater and measure, in trace order):
        # a merge sort of them is linear, and usually shows there is no repeat at all
        sk = np.sort(key, kind="stable")
        if not (sk[1:] == sk[:-1]).any():
            return np.zeros(n, bool)
    if space <= 4 * n + 4096:
        return np.bincount(key, minlength=space)[key] > 1
    order = np.argsort(key, kind="stable")
    sk = key[order]
    eq = sk[1:] == sk[:-1]
    d = np.zeros(n, bool)
    d[1:] |= eq
    d[:-1] |= eq
    out = np.empty(n, bool)
    out[order] = d
    return out


def _join(recs: AnswerRecords, trace_ledger: pd.DataFrame, runs: pd.DataFrame,
          steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join answers to kept runs and steps; update the ledger.  Returns (table, ledger)."""
    kind = recs.kind
    t = recs.table
    ledger = recs.ledger
    n = len(t)
    fl = _Flags(n)
    run_pos = _positions(t["trace_id"], runs["trace_id"])
    no_run = run_pos < 0
    if no_run.any():
        # why is there no run: never seen, or seen and dropped?
        tl = trace_ledger[trace_ledger["trace_id"].notna()]
        why = tl.drop_duplicates("trace_id", keep="last").set_index("trace_id")["reason"]
        where = np.flatnonzero(no_run)
        r = why.reindex(t["trace_id"].iloc[where]).to_numpy(dtype=object, na_value=None)
        fl.add(where, [f"{kind} without run" if x is None else f"run not kept: {x.split(':', 1)[0]}"
                       for x in r], ["trace_id"] * where.size)
    # per-step: the step must exist in the run
    step, has_step, shown = _int_or_float_steps(t["step"])
    sel = has_step & ~no_run
    step_pos = _step_rows(steps, run_pos, step, sel, len(runs))
    miss = np.flatnonzero(sel & (step_pos < 0))
    if miss.size:
        fl.add(miss, [f"step not in run: the run has no step with index {shown(j)}" for j in miss],
               ["step"] * miss.size)
    # duplicated answers: the same rater answering the same question twice
    ok = ~fl.done
    mcodes, rcodes = _columns.codes(t["measure"])[0], _columns.codes(t["rater"])[0]
    if ok.any() and not _distinct_questions(ok, has_step, step_pos, run_pos, len(steps), len(runs),
                                            mcodes, rcodes):
        # one rater, one question: a question is a step (per-step measures) or a run
        question = run_pos + len(steps)
        np.copyto(question, step_pos, where=has_step)
        parts = [question, mcodes, rcodes]
        rows_ok = None if ok.all() else np.flatnonzero(ok)
        if rows_ok is not None:
            parts = [p[rows_ok] for p in parts]
        del question
        key, space = _combine_keys(parts, own_first=True)  # built in the question array
        del parts
        dup = _repeated(key, space)
        if dup.any():
            sub = np.flatnonzero(dup)
            rows = sub if rows_ok is None else rows_ok[sub]
            ans = t["answer"].iloc[rows].to_numpy(dtype=object)
            recno = t["record"].to_numpy()[rows]
            d_rows, d_reasons, d_fields = [], [], []
            for members in pd.Series(np.arange(rows.size)).groupby(key[sub], sort=False).indices.values():
                mi = np.sort(members)
                if all(ans[m] == ans[mi[0]] for m in mi):
                    for m in mi[1:]:
                        d_rows.append(rows[m])
                        d_reasons.append(f"duplicate {kind}: identical to record {int(recno[mi[0]])}")
                        d_fields.append("rater")
                else:
                    where = ", ".join(str(int(recno[m])) for m in mi)
                    for m in mi:
                        d_rows.append(rows[m])
                        d_reasons.append(f"duplicate {kind}: conflicting answers from one rater to "
                                         f"one question (records {where}); none kept")
                        d_fields.append("answer")
            if d_rows:
                fl.add(np.asarray(d_rows, np.int64), d_reasons, d_fields)
    drop = fl.done
    any_drop = bool(drop.any())
    if any_drop:
        rows, reasons, fields = fl.rows()
        lrow = t["ledger_row"].to_numpy()[rows]
        hit = np.zeros(len(ledger), bool)
        hit[lrow] = True
        hit_s = pd.Series(hit, index=ledger.index)
        ledger = ledger.assign(status=ledger["status"].mask(hit_s, "dropped"),
                               reason=ledger["reason"].mask(hit_s, _sparse_str(len(ledger), lrow, reasons)),
                               field=ledger["field"].mask(hit_s, _sparse_str(len(ledger), lrow, fields)))
    keep = ~drop
    base = (t[keep] if any_drop else t).reset_index(drop=True)
    if any_drop:
        run_pos, step_pos = run_pos[keep], step_pos[keep]
    no_step = step_pos < 0
    np.maximum(step_pos, 0, out=step_pos)
    cols = {c: base[c] for c in base.columns if c not in ("ledger_row", "record")}
    cols["run_pos"] = run_pos
    cols["step_pos"] = pd.arrays.IntegerArray(step_pos, no_step)
    out = pd.DataFrame(cols, copy=False)  # run_pos and step_pos are built here
    # scoring reads these integer views of the final columns instead of hashing again
    for c in ("measure", "rater", "answer"):
        codes, uniques = _columns.codes(t[c])
        _columns.remember(out[c], "codes", (codes[keep] if any_drop else codes, uniques))
    _columns.remember_positions(out["trace_id"], runs["trace_id"], run_pos)
    _columns.remember_step_positions(out["trace_id"], steps["trace_id"], np.where(no_step, -1, step_pos),
                                     out["step"].to_numpy(dtype=np.int64, na_value=-1))
    return out, ledger


def _empty_table() -> pd.DataFrame:
    return pd.DataFrame({
        "trace_id": _empty_str(), "measure": _empty_str(), "step": pd.Series(pd.array([], dtype="Int64")),
        "rater": _empty_str(), "answer": _empty_str(), "confidence": np.zeros(0), "cost": np.zeros(0),
        "latency_ms": np.zeros(0), "rater_version": _empty_str(),
        "ledger_row": np.zeros(0, np.int64), "record": np.zeros(0, np.int64),
    })


def _empty_answers() -> pd.DataFrame:
    return pd.DataFrame({  # the joined shape
        "trace_id": _empty_str(), "measure": _empty_str(), "step": pd.Series(pd.array([], dtype="Int64")),
        "rater": _empty_str(), "answer": _empty_str(), "confidence": np.zeros(0), "cost": np.zeros(0),
        "latency_ms": np.zeros(0), "rater_version": _empty_str(), "run_pos": np.zeros(0, np.int64),
        "step_pos": pd.Series(pd.array([], dtype="Int64")),
    })


def _as_answer_sources(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, str | Path | pd.DataFrame | AnswerRecords | Mapping):
        return [x]
    if isinstance(x, Sequence) and x and all(isinstance(e, str | Path | pd.DataFrame | AnswerRecords)
                                            for e in x):
        return list(x)
    return [x]


def _gather(x: Any, kind: str, strict: bool) -> AnswerRecords | None:
    parts = []
    for src in _as_answer_sources(x):
        if isinstance(src, AnswerRecords):
            parts.append(src if src.kind == kind else AnswerRecords(
                src.table, src.ledger.assign(kind=_const(kind, len(src.ledger))),
                kind))
        else:
            parts.append(read_answers(src, strict=strict, kind=kind))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    offset = np.cumsum([0] + [len(p.ledger) for p in parts[:-1]])
    tables = [p.table.assign(ledger_row=p.table["ledger_row"] + off) for p, off in zip(parts, offset, strict=True)]
    return AnswerRecords(pd.concat(tables, ignore_index=True),
                         pd.concat([p.ledger for p in parts], ignore_index=True), kind)


def ingest_traces(traces: Any, answers: Any = None, labels: Any = None, *, strict: bool = False,
           domain_rule: Any = None) -> Ingested:
    """Read traces, judge answers and human labels; join them on ``trace_id``.

    Seed 002, "The pipeline", Ingest: runs join to their labels on a stable id,
    in-progress runs are dropped, one canonical step count is fixed (the number of
    steps in the record) and disagreements with other sources are recorded.

    Parameters
    ----------
    traces : path, DataFrame, list of dict, or TraceRecords
        See :func:`read_traces`.
    answers, labels : path, DataFrame, list of dict, AnswerRecords, or a list of paths / DataFrames
        Judges' answers and humans' labels (see :func:`read_answers`).  The human
        vote lives only in ``labels``.
    strict : bool
        Raise on the first malformed record instead of dropping it to the ledger.
        Drops that are not malformations (in-progress runs, duplicated ids, answers
        without a run) are never errors; they are ledger entries.
    domain_rule : callable, mapping or None
        See :func:`read_traces`.

    Returns
    -------
    Ingested

    Examples
    --------
    >>> run = {"trace_id": "a", "task": "Buy a mug", "status": "complete",
    ...        "steps": [{"index": 0, "action": "tap", "target": "buy", "screen": "s0"}]}
    >>> ing = ingest_traces([run], answers=[
    ...     {"trace_id": "a", "measure": "x_ctx", "step": 0, "rater": "j1", "answer": "YES"},
    ...     {"trace_id": "zzz", "measure": "x_task", "rater": "j1", "answer": "no"}])
    >>> ing.answers[["trace_id", "step", "answer", "run_pos", "step_pos"]].to_dict("records")
    [{'trace_id': 'a', 'step': 0, 'answer': 'yes', 'run_pos': 0, 'step_pos': 0}]
    >>> ing.ledger[["kind", "status", "reason"]].to_dict("records")[-1]
    {'kind': 'answer', 'status': 'dropped', 'reason': 'answer without run'}
    """
    tr = traces if isinstance(traces, TraceRecords) else read_traces(traces, strict=strict,
                                                                      domain_rule=domain_rule)
    ledgers = [tr.ledger]
    out: dict[str, pd.DataFrame] = {}
    for kind, src in (("answer", answers), ("label", labels)):
        recs = _gather(src, kind, strict)
        if recs is None:
            out[kind] = _empty_answers()
            continue
        table, led = _join(recs, tr.ledger, tr.runs, tr.steps)
        out[kind] = table
        ledgers.append(led)
    ledger = pd.concat(ledgers, ignore_index=True) if len(ledgers) > 1 else tr.ledger
    return Ingested(runs=tr.runs, steps=tr.steps, answers=out["answer"], labels=out["label"],
                    step_count_disagreements=tr.step_count_disagreements, ledger=ledger)


def ingest_one(record: Mapping[str, Any], answers: Any = None, labels: Any = None, *,
               strict: bool = True, domain_rule: Any = None) -> Ingested:
    """Ingest one run as it completes (online).

    The tables hold exactly the rows :func:`ingest` gives for this run in a batch
    (``run_pos`` is 0: the run is the only one).  Answers and labels for other runs
    are dropped as ``answer without run`` / ``label without run``.  Strict by default:
    an online caller usually wants the error at once.

    Examples
    --------
    >>> one = ingest_one({"trace_id": "a", "task": "Pay the bill", "status": "complete",
    ...                   "steps": []})
    >>> one.runs[["trace_id", "domain", "n_steps"]].to_dict("records")
    [{'trace_id': 'a', 'domain': 'payments', 'n_steps': 0}]
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"`record` must be a dict (one trace record); got {type(record).__name__}.")
    return ingest_traces([record], answers, labels, strict=strict, domain_rule=domain_rule)
