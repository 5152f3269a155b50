"""The join's cheap proof that no rater answers one question twice, and the positions it remembers.

``_distinct_questions`` may say "maybe" (False) for any input, but True must mean no
repeat; for the usual layouts (grouped by trace, each trace's run answers interleaved
across raters and measures, then its step answers; or grouped by rater and measure in
trace order) it must say True, so the exact check (a sort of every key) does not run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk import _columns
from evaltk.ingest import _join
from evaltk.ingest._records import _STR


def _has_repeat(ok, has_step, step_pos, run_pos, n_steps, measure, rater) -> bool:
    q = np.where(has_step, step_pos, run_pos + n_steps)
    keys = list(zip(q[ok].tolist(), measure[ok].tolist(), rater[ok].tolist(), strict=True))
    return len(set(keys)) < len(keys)


def _by_trace(n_runs: int, steps_per_run: int, n_raters: int, n_measures: int):
    """Answers grouped by trace: per rater, each run measure; then per step one rater."""
    run_pos, step_pos, has_step, measure, rater = [], [], [], [], []
    for r in range(n_runs):
        for j in range(n_raters):
            for m in range(n_measures):
                run_pos.append(r), step_pos.append(-1), has_step.append(False)
                measure.append(m), rater.append(j)
        for s in range(steps_per_run):
            run_pos.append(r), step_pos.append(r * steps_per_run + s), has_step.append(True)
            measure.append(n_measures), rater.append(0)
    a = [np.asarray(x, np.int64) for x in (run_pos, step_pos)]
    return a[0], a[1], np.asarray(has_step, bool), np.asarray(measure, np.int8), np.asarray(rater, np.int8)


def test_answers_grouped_by_trace_are_shown_distinct(monkeypatch):
    monkeypatch.setattr(_join, "_BLOCK", 1000)  # many blocks, each a window of the key space
    run_pos, step_pos, has_step, measure, rater = _by_trace(3000, 4, 3, 2)
    ok = np.ones(len(run_pos), bool)
    args = (ok, has_step, step_pos, run_pos, 3000 * 4, 3000, measure, rater)
    assert _join._distinct_questions(*args)
    # a repeat within one block, and one across blocks: never shown distinct
    for dup_of, at in ((5, 6), (5, 4000)):
        r2, s2, h2, m2, q2 = (x.copy() for x in (run_pos, step_pos, has_step, measure, rater))
        for a in (r2, s2, h2, m2, q2):
            a[at] = a[dup_of]
        assert not _join._distinct_questions(ok, h2, s2, r2, 3000 * 4, 3000, m2, q2)
        ok2 = ok.copy()
        ok2[dup_of] = False  # the first copy already dropped: no repeat among the ok rows
        assert _join._distinct_questions(ok2, h2, s2, r2, 3000 * 4, 3000, m2, q2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-1, 7), st.integers(0, 2), st.integers(0, 2),
                          st.booleans()), min_size=1, max_size=120),
       st.integers(1, 40))
def test_shown_distinct_means_no_repeat(rows, block):
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_join, "_BLOCK", block)
        run_pos = np.asarray([r[0] for r in rows], np.int64)
        has_step = np.asarray([r[1] >= 0 for r in rows], bool)
        step_pos = np.asarray([r[0] * 8 + max(r[1], 0) for r in rows], np.int64)  # 8 steps per run
        measure = np.asarray([r[2] for r in rows], np.int8)
        rater = np.asarray([r[3] for r in rows], np.int8)
        ok = np.asarray([r[4] for r in rows], bool) | (np.arange(len(rows)) % 3 == 0)
        got = _join._distinct_questions(ok, has_step, step_pos, run_pos, 6 * 8, 6, measure, rater)
        if got:
            assert not _has_repeat(ok, has_step, step_pos, run_pos, 6 * 8, measure, rater)
        if not _has_repeat(ok, has_step, step_pos, run_pos, 6 * 8, measure, rater):
            order = np.lexsort((rater, measure, np.where(has_step, step_pos, run_pos + 48), ~has_step))
            sub = [x[order] for x in (ok, has_step, step_pos, run_pos)]
            # sorted by question, no repeat: shown distinct whatever the block size
            assert _join._distinct_questions(sub[0], sub[1], sub[2], sub[3], 48, 6, measure[order],
                                             rater[order])


def _arrow_str(values) -> pd.Series:
    return pd.Series(pd.array(pa.chunked_array([pa.array(values, pa.large_string())]), dtype=_STR))


def test_remembered_positions_read_back_as_int64_whatever_their_size():
    runs = _arrow_str(["a", "b", "c"])
    for values in (np.array([2, 0, 1, 1]), np.array([2**40, 0, -1, 5])):
        s = _arrow_str(["c", "a", "b", "b"])
        _columns.remember_positions(s, runs, values)
        got = _columns.positions(s, runs)
        assert got.dtype == np.int64 and (got == values).all()
        got[0] = 7  # the caller's own array: the remembered one does not change
        assert _columns.positions(s, runs)[0] == values[0]
        _columns.remember_step_positions(s, runs, values, values + 1)
        sp, steps = _columns.step_positions(s, runs)
        assert sp.dtype == steps.dtype == np.int64 and (sp == values).all() and (steps == values + 1).all()
