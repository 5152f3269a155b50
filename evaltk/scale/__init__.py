"""Scale: the DuckDB and Dask engines over partitioned trace stores."""

from ._scale import (
    CALIBRATION_CATEGORIES,
    COMPLETE_FILE,
    COMPLETE_FORMAT,
    ENGINES,
    SCORE_META,
    DatasetSummary,
    Partition,
    ScoredDataset,
    check_dataset,
    dask_score_summary,
    discover_partitions,
    engine_kind,
    optional_module,
    partitions_done,
    score_dataset,
    score_partitions,
    summarize_dataset,
    write_store,
)
from ._scored import (
    check_complete,
    read_report_summary,
)
from ._summaries import (
    MAX_VALUES,
    SUMMARIES_DIR,
    ReportSummary,
    report_summary,
)

__all__ = [
    "partitions_done",
    "ENGINES",
    "SCORE_META",
    "CALIBRATION_CATEGORIES",
    "COMPLETE_FILE",
    "COMPLETE_FORMAT",
    "check_dataset",
    "Partition",
    "DatasetSummary",
    "ScoredDataset",
    "discover_partitions",
    "engine_kind",
    "optional_module",
    "score_dataset",
    "summarize_dataset",
    "score_partitions",
    "dask_score_summary",
    "write_store",
    "SUMMARIES_DIR",
    "MAX_VALUES",
    "ReportSummary",
    "report_summary",
    "check_complete",
    "read_report_summary",
]
