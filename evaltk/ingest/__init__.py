"""Ingest: trace records, the domain rule, the JSONL / Parquet / CSV readers, judge answers
and human labels, the join, and the ledger that accounts for every input record.

Private modules, one concern each: ``_records`` (the result tables and their columns),
``_domain`` (the domain rule), ``_checks`` and ``_validate`` (record checks: the
per-record authority and the Arrow fast path), ``_series`` (column builders),
``_readers`` (JSONL, Parquet, records, DataFrames), ``_answers`` (the CSV / JSONL /
Parquet answer readers; the answer vocabulary itself is :mod:`evaltk.values`), ``_join`` (answers to runs), ``_ledger``
and ``_ingest`` (:func:`ingest_traces`, :func:`ingest_one`).  Importers of other tools'
records, one module per source: ``_inspect`` (inspect_ai eval logs), ``_otel``
(OpenTelemetry spans), with ``_policy`` (the action policy) and ``_import`` (the
:class:`Imported` result and :func:`write_import`)."""

from ._answers import (
    ANSWER_COLUMNS,
    ANSWER_ROW_COLUMNS,
    ANSWER_ROW_FIELDS,
    AUDIT_COLUMNS,
    INSTRUMENT_COLUMNS,
    answer_rows,
    answers_from_rows,
    read_answers,
)
from ._domain import DEFAULT_DOMAIN_KEYWORDS, UNKNOWN_DOMAIN, KeywordDomainRule, domain_from_task
from ._import import (
    IMPORT_ANSWER_COLUMNS,
    IMPORT_FILES,
    IMPORT_LEDGER_COLUMNS,
    Imported,
    check_import_paths,
    write_import,
)
from ._ingest import ingest_one, ingest_traces
from ._inspect import INSPECT_EXTRA, import_inspect
from ._ledger import ledger_sources
from ._otel import OTEL_EXTRA, SPAN_ROLES, import_otel, span_role
from ._policy import ActionPolicy, read_action_policy
from ._readers import read_traces
from ._records import (
    CATEGORICAL_COLUMNS,
    LEDGER_COLUMNS,
    POSITION_DTYPE,
    RUN_COLUMNS,
    STEP_COLUMNS,
    TRACE_STATUSES,
    AnswerRecords,
    Ingested,
    TraceRecords,
)

__all__ = [
    "TRACE_STATUSES",
    "CATEGORICAL_COLUMNS",
    "LEDGER_COLUMNS",
    "POSITION_DTYPE",
    "RUN_COLUMNS",
    "STEP_COLUMNS",
    "ANSWER_COLUMNS",
    "INSTRUMENT_COLUMNS",
    "AUDIT_COLUMNS",
    "DEFAULT_DOMAIN_KEYWORDS",
    "UNKNOWN_DOMAIN",
    "KeywordDomainRule",
    "domain_from_task",
    "TraceRecords",
    "AnswerRecords",
    "Ingested",
    "read_traces",
    "read_answers",
    "answer_rows",
    "answers_from_rows",
    "ANSWER_ROW_COLUMNS",
    "ANSWER_ROW_FIELDS",
    "ingest_traces",
    "ingest_one",
    "ledger_sources",
    "IMPORT_ANSWER_COLUMNS",
    "IMPORT_FILES",
    "IMPORT_LEDGER_COLUMNS",
    "Imported",
    "check_import_paths",
    "write_import",
    "INSPECT_EXTRA",
    "import_inspect",
    "OTEL_EXTRA",
    "SPAN_ROLES",
    "import_otel",
    "span_role",
    "ActionPolicy",
    "read_action_policy",
]
