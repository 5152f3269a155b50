"""The ledger: one row per input record, kept or dropped with a reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._series import _const, _from_codes, _s


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
