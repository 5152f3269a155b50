"""Scale: the DuckDB and Dask engines over partitioned trace stores."""

from ._scale import (
    CALIBRATION_CATEGORIES,
    ENGINES,
    SCORE_META,
    DatasetSummary,
    Partition,
    ScoredDataset,
    dask_score_summary,
    discover_partitions,
    engine_kind,
    optional_module,
    score_dataset,
    score_partitions,
    summarize_dataset,
    write_store,
)

__all__ = [
    "ENGINES",
    "SCORE_META",
    "CALIBRATION_CATEGORIES",
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
]
