"""What ingest returns: the trace, answer and ingested tables, their columns and statuses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._io import str_dtype
from ..values import INSTRUMENT_COLUMNS

#: Values of a trace record's ``status``.  ``in_progress`` runs are dropped by ingest.
TRACE_STATUSES: tuple[str, ...] = ("complete", "in_progress")

#: Columns of :attr:`Ingested.ledger`.
LEDGER_COLUMNS: tuple[str, ...] = ("source", "record", "trace_id", "kind", "status", "reason", "field")
#: Columns of :attr:`Ingested.runs`.
RUN_COLUMNS: tuple[str, ...] = ("trace_id", "task", "domain", "domain_source", "domain_record", "status",
                                "n_steps", "agent", "guide", "steps_missing", "consequential_declared")
#: Columns of :attr:`Ingested.steps`.
STEP_COLUMNS: tuple[str, ...] = ("trace_id", "index", "action", "target", "screen", "consequential",
                                 "needs_confirmation", "run_pos")
_DISAGREEMENT_COLUMNS = ("trace_id", "source", "count", "canonical", "run_pos")

#: The dtype rule of the ingested tables (its one home; docs/traces.md, "The tables").
#: These text columns hold values that repeat from row to row (ids of tasks, agents,
#: raters, step kinds, statuses, measure names, answer words, ledger reasons) and are
#: pandas categoricals: an integer code per row (int8 for a few values) into a ``str``
#: Index of the values the rows use, no unused category, -1 (NaN) where missing.  Every
#: other text column (``trace_id``, the free text ``target``, ``screen``, ``prompt_digest``)
#: is pandas' ``str`` dtype (Arrow-backed).  Keyed by table; ``labels`` as ``answers``.
CATEGORICAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("task", "domain", "domain_source", "domain_record", "status", "agent"),
    "steps": ("action",),
    "answers": ("measure", "rater", "answer", "rater_version", *INSTRUMENT_COLUMNS),
    "labels": ("measure", "rater", "answer", "rater_version", *INSTRUMENT_COLUMNS),
    "step_count_disagreements": ("source",),
    "ledger": ("source", "kind", "status", "reason", "field"),
}
#: The dtype of the row positions ingest records (``run_pos`` in steps, answers, labels and
#: step_count_disagreements; ``step_pos`` as its nullable ``Int32``): int32, half of int64's
#: memory (at 10^6 traces about 100 MiB of answers and steps), room for 2^31 - 1 rows.
POSITION_DTYPE = np.dtype(np.int32)
_INT64_MAX = 2**63 - 1
#: pandas' ``str`` dtype (Arrow-backed, NaN where missing): :func:`evaltk._io.str_dtype`
_STR = str_dtype()

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
        rater_version``, the instrument columns and ``prompt_digest`` (normalised) plus ``ledger_row`` (the row's position in
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
        One row per kept run: ``trace_id, task, domain, domain_source ("rule": read
        from the task prompt; "record": the prompt names no domain and the record's
        field gave it), domain_record`` (the record's own ``domain`` field as given, NaN
        when absent: where it differs from ``domain`` the prompt won), ``status, n_steps`` (the canonical step count: the number of steps in
        the record), ``agent`` (NaN when absent), ``guide`` (dict or None) and
        ``steps_missing`` (True when the step indices have gaps or a source in
        ``step_counts`` reports more steps than the record holds) and
        ``consequential_declared`` (False when the record says which steps are
        consequential is not declared, as an import without an action policy does:
        x_safe is then ``not_implemented``).
    steps : DataFrame
        One row per step of the kept runs, ordered by run then ``index``:
        ``trace_id, index, action, target, screen, consequential,
        needs_confirmation, run_pos`` (the run's row in ``runs``).
    answers, labels : DataFrame
        Judges' answers and humans' labels joined to kept runs: ``trace_id, measure,
        step`` (Int64, <NA> for trace-level measures), ``rater, answer`` (canonical
        word), ``confidence, cost, latency_ms, rater_version``, the judge-instrument
        columns (``INSTRUMENT_COLUMNS``) and ``prompt_digest``, ``run_pos, step_pos``
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
        cat = led["reason"].astype("string").str.split(":", n=1).str[0].astype(object)
        out = (pd.DataFrame({"kind": led["kind"], "status": led["status"],
                             "reason": cat.fillna("")})
               .groupby(["kind", "status", "reason"], sort=True, observed=True).size().rename("n").reset_index())
        out["reason"] = out["reason"].replace("", np.nan)
        return out
