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

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .. import _io
from ._join import _as_answer_sources, _empty_answers, _gather, _join
from ._readers import read_traces
from ._records import Ingested, TraceRecords
from ._series import _concat


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
    _io.release_memory()  # the parsed source is freed: give it back before the answers grow
    ledgers = [tr.ledger]
    out: dict[str, pd.DataFrame] = {}
    for kind, src in (("answer", answers), ("label", labels)):
        if not _as_answer_sources(src):
            out[kind] = _empty_answers()
            continue
        held = [_gather(src, kind, strict)]
        # what the reader freed sits in Arrow's pool, which the join's NumPy arrays (glibc's heap)
        # cannot reuse: given back first, the join's peak is lower by it (about 0.2 GiB at 10^6)
        _io.release_memory()
        # the records go straight to the join (the list lets go of them), which frees their
        # columns as it goes
        table, led = _join(held.pop(), tr.ledger, tr.runs, tr.steps)  # type: ignore[arg-type]  # a source: not None
        out[kind] = table
        ledgers.append(led)
        _io.release_memory()  # the answer records the join freed
    ledger = _concat(ledgers) if len(ledgers) > 1 else tr.ledger  # categoricals stay categorical
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
