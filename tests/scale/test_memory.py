"""Flat memory (issue 19): scoring partition after partition must not grow evaltk's column memo.

Before the fix every ``score_traces`` call left one entry in ``evaltk._columns._MEMO``
(the ``categories`` view of the runs' ``trace_id`` column held that very array, so its
weak reference never died): scoring the same 100k-trace partition 21 times took RSS
from 246 to 576 MiB.  These tests score a partition 21 times and check the memo's size
(a count, not a timing); docs/scale.md has the RSS measurement.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from evaltk import _columns
from evaltk.data._datasets import make_demo
from evaltk.ingest import ingest_traces
from evaltk.scoring import score_traces


def _arrow_series(values) -> pd.Series:
    return pd.Series(pd.array(values, dtype=pd.ArrowDtype(pa.string())))


def test_repeated_partition_scoring_leaves_the_memo_bounded(tmp_path):
    d = make_demo(n_traces=300, rng=0)
    pd.DataFrame(d.traces).to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    d.answers.to_csv(tmp_path / "a.csv", index=False)
    gc.collect()
    base = len(_columns._MEMO)
    sizes = []
    first = None
    for _ in range(21):
        ing = ingest_traces(str(tmp_path / "t.jsonl"), str(tmp_path / "a.csv"))
        m = score_traces(ing, population="partition")
        frame = m.frame
        if first is None:
            first = frame
        else:
            pd.testing.assert_frame_equal(frame, first)  # the memo changes no number
        tid = weakref.ref(ing.runs["trace_id"].array._pa_array) if hasattr(ing.runs["trace_id"].array,
                                                                            "_pa_array") else None
        del ing, m, frame
        gc.collect()
        if tid is not None:
            assert tid() is None, "the runs' trace_id array outlived its table (held by the memo)"
        sizes.append(len(_columns._MEMO))
    assert max(sizes) <= base, f"memo grew with calls: {sizes} (base {base})"


def test_views_hold_no_array_strongly():
    s = _arrow_series([f"t{i}" for i in range(50)])
    runs = _arrow_series([f"t{i}" for i in range(50)])
    cats = _columns.categories(s)
    assert list(cats.categories[:3]) == ["t0", "t1", "t2"]
    assert _columns.categories(s) is cats  # remembered
    _columns.remember_positions(s, runs, np.arange(50))
    assert (_columns.positions(s, runs) == np.arange(50)).all()
    a, r = weakref.ref(s.array._pa_array), weakref.ref(runs.array._pa_array)
    n = len(_columns._MEMO)
    del s, runs, cats
    gc.collect()
    assert a() is None and r() is None
    assert len(_columns._MEMO) < n


def test_positions_of_a_freed_or_numpy_column_are_not_found():
    s = _arrow_series(["a", "b"])
    runs = _arrow_series(["a", "b"])
    _columns.remember_positions(s, runs, np.array([0, 1]))
    del runs
    gc.collect()
    assert _columns.positions(s, pd.Series(["a", "b"], dtype=object)) is None  # NumPy-backed: never a hit
    assert _columns.positions(s, _arrow_series(["a", "b"])) is None


def test_the_memo_never_holds_more_than_memo_max_arrays():
    alive = [_arrow_series([str(i)]) for i in range(_columns.MEMO_MAX + 40)]
    for s in alive:
        _columns.present(s)
    assert len(_columns._MEMO) <= _columns.MEMO_MAX
    assert _columns.recall(alive[-1], "present") is not None  # the newest kept, the oldest dropped
    assert _columns.recall(alive[0], "present") is None


def test_the_driver_adds_summaries_as_they_come_in_a_fixed_order():
    """The DuckDB engine's driver holds a summary only until those before it (in the order the
    partitions were sent) are in, then adds it to a TreeCombiner: log2(n) partials, not a list of
    every partition's summary (which grew the driver by about 0.09 MiB per partition at 1e7)."""
    from evaltk.scale._scale import _InOrder

    got: list[str] = []
    order = _InOrder(["a", "b", "c", "d", "e"], got.append)  # a summary is any object here
    held = []
    for key in ["b", "a", "d", "e", "c"]:  # finished out of order
        order.put(key, key)
        held.append(len(order._held))
    assert got == ["a", "b", "c", "d", "e"] and held == [1, 0, 1, 2, 0]
    order.check()
    short = _InOrder(["a", "b", "c"], got.append)
    short.put("a", "a")
    short.put("c", "c")
    with pytest.raises(RuntimeError, match="2 of 3 partitions' summaries were not added: b's never came"):
        short.check()
