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
