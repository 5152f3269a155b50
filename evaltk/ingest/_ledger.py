"""The ledger: one row per input record, kept or dropped with a reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._series import _cat_from_codes, _categorical, _s


def _ledger(name: str, numbers: Sequence[int] | np.ndarray, tids: Any, kind: str,
            dropped: np.ndarray, reasons: Any, fields: Any) -> pd.DataFrame:
    """The ledger rows of one source (its text columns but ``trace_id`` categorical:
    :data:`~evaltk.ingest.CATEGORICAL_COLUMNS`).  An int64 array ``numbers`` becomes the
    ``record`` column as it is (the caller hands it over)."""
    n = len(dropped)
    dropped = np.asarray(dropped, bool)
    one = np.zeros(n, np.int8)
    return pd.DataFrame({  # copy=False: the columns are built here or handed over
        "source": _cat_from_codes(one, [name]),
        "record": np.asarray(numbers, np.int64),
        "trace_id": tids if isinstance(tids, pd.Series) else _s(list(tids)),
        "kind": _cat_from_codes(one, [kind]),
        "status": _cat_from_codes(dropped.astype(np.int8), ["kept", "dropped"]),
        "reason": _categorical(reasons),
        "field": _categorical(fields),
    }, copy=False)


def ledger_sources(codes: np.ndarray, names: Sequence[str] | np.ndarray) -> pd.Series:
    """A ledger's ``source`` column from each row's index into ``names`` (-1: missing), by the
    tables' rule (:data:`~evaltk.ingest.CATEGORICAL_COLUMNS`: a categorical of the names the rows
    use, sorted).  ``names`` may repeat a name: its rows become one category.  The scale engines
    name the files a caller gave when the rows were read from staged or selected copies."""
    codes = np.asarray(codes)
    if len(codes) and (codes.min() < -1 or codes.max() >= len(names)):
        raise ValueError(f"codes must lie in [-1, {len(names)}); got [{codes.min()}, {codes.max()}]")
    uniq, inv = np.unique(np.asarray([str(x) for x in names], dtype=object), return_inverse=True)
    remap = np.append(inv.astype(np.int64), -1)  # the last entry: code -1 stays -1
    return _cat_from_codes(remap[codes.astype(np.intp)], uniq)

