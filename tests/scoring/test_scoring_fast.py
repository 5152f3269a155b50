"""The integer-coded hot path of scoring: every shortcut agrees with the general code.

Scoring takes shortcuts for speed (codes that ingest remembered, a direct majority
fold for x_ctx, x_ctx on a second thread, contiguous measure blocks as slices).
Each test here pins a shortcut to the general computation it replaces.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evaltk.scoring._rules as scoring
from evaltk import _columns
from evaltk.ingest import ingest_traces
from evaltk.judges import FoldRule
from evaltk.scoring import score_tables, score_traces
from evaltk.scoring._fold import _fold
from evaltk.scoring._rules import _CTX_STATE, _ctx_states

counts3 = st.lists(st.tuples(*(st.integers(0, 5),) * 3), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(counts3)
def test_direct_majority_state_equals_the_general_fold(rows):
    c = np.array(rows, dtype=np.int64).T.copy()
    direct = _ctx_states(c, c, FoldRule("majority"))
    _, status, top = _fold(c, c, [1.0, 0.0, None], FoldRule("majority"))
    assert np.array_equal(direct, _CTX_STATE[status.astype(np.intp) * 3 + top])
    # and the meaning, counted by hand
    for (y, n, t), s in zip(rows, direct, strict=True):
        top_n = max(y, n, t)
        if top_n == 0:
            assert s == 5
        elif [y, n, t].count(top_n) > 1:
            assert s == 4
        else:  # one word has the most votes: yes 1 (grounded), no 2, cannot-tell 3
            assert s == [y, n, t].index(top_n) + 1


def _corpus(n: int = 400, seed: int = 3) -> tuple[list[dict], pd.DataFrame]:
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    for i in range(n):
        k = int(rng.integers(0, 9))
        steps = [{"index": j, "action": str(rng.choice(["tap", "type", "buy"])),
                  "target": None if rng.random() < 0.1 else f"el{rng.integers(3)}",
                  "screen": None if rng.random() < 0.1 else ("  " if rng.random() < 0.05 else f"s{j}"),
                  "consequential": bool(rng.random() < 0.2), "needs_confirmation": bool(rng.random() < 0.3)}
                 for j in range(k)]
        runs.append({"trace_id": f"t{i}", "task": "Buy a lamp", "status": "complete", "steps": steps})
        for r in ("j1", "j2", "j3")[: int(rng.integers(1, 4))]:
            rows.append({"trace_id": f"t{i}", "measure": "x_task", "step": None, "rater": r,
                         "answer": str(rng.choice(["yes", "no", "cannot tell"]))})
            rows.append({"trace_id": f"t{i}", "measure": "x_eff", "step": None, "rater": r,
                         "answer": str(rng.choice(["none", "a few", "lots", "cannot_tell"]))})
            for j in range(k):
                if rng.random() < 0.8:
                    rows.append({"trace_id": f"t{i}", "measure": "x_ctx", "step": j, "rater": r,
                                 "answer": str(rng.choice(["yes", "no", "cannot_tell"]))})
    a = pd.DataFrame(rows)
    return runs, a.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # measures interleaved


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.frame, b.frame)
    pd.testing.assert_frame_equal(a.diagnostics, b.diagnostics)
    pd.testing.assert_frame_equal(a.participation, b.participation)
    pd.testing.assert_frame_equal(a.unconfirmed, b.unconfirmed)


@pytest.mark.parametrize("fold", ["majority", "unanimity", FoldRule("weighted", weights={"j1": 2, "j2": 1, "j3": 1,
                                                                 "h_j1": 1, "h_j2": 1, "h_j3": 1})])
def test_threaded_and_serial_scoring_are_identical(monkeypatch, fold):
    runs, a = _corpus()
    ing = ingest_traces(runs, a, labels=a.assign(rater="h_" + a["rater"]))
    monkeypatch.setattr(scoring, "PARALLEL_MIN_WORK", None)
    serial = score_traces(ing, fold=fold)
    monkeypatch.setattr(scoring, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(scoring.os, "cpu_count", lambda: 2)
    threaded = score_traces(ing, fold=fold)
    _same(serial, threaded)


@pytest.mark.parametrize("fold", ["majority", "unanimity"])
def test_remembered_codes_and_a_hand_built_table_score_alike(fold):
    """Ingest remembers codes; a plain (object-dtype) copy of the same tables is factorised afresh."""
    runs, a = _corpus(seed=5)
    ing = ingest_traces(runs, a)
    m1 = score_tables(ing.runs, ing.steps, ing.answers, fold=fold)

    def plain(t: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({c: (t[c].astype(object) if t[c].dtype == "str" else t[c]) for c in t.columns})

    m2 = score_tables(plain(ing.runs), plain(ing.steps), plain(ing.answers), fold=fold)
    for m in (m1, m2):  # categories of hand-built ids are object strings; compare values
        m.frame["trace_id"] = m.frame["trace_id"].astype(str)
    pd.testing.assert_frame_equal(m1.frame, m2.frame, check_categorical=False)


def test_measure_blocks_as_slices_and_interleaved_rows_give_the_same_scores():
    runs, a = _corpus(seed=7)
    grouped = a.sort_values(["measure", "rater"], kind="stable").reset_index(drop=True)
    m1 = score_traces(runs, a)
    m2 = score_traces(runs, grouped)
    w1 = m1.wide().sort_values("trace_id").reset_index(drop=True)
    w2 = m2.wide().sort_values("trace_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(w1, w2)


def test_an_edited_column_is_not_read_from_a_stale_memo():
    runs, a = _corpus(n=50, seed=11)
    ing = ingest_traces(runs, a)
    before = score_traces(ing)
    ans = ing.answers.copy()
    # answer is categorical (evaltk.ingest.CATEGORICAL_COLUMNS): its codes are read from the
    # column itself each time, never remembered, so an edit cannot leave a stale memo
    assert isinstance(ans["answer"].dtype, pd.CategoricalDtype)
    assert _columns.recall(ans["answer"], "codes") is None
    ans.loc[ans["measure"] == "x_task", "answer"] = "no"
    assert _columns.recall(ans["answer"], "codes") is None
    after = score_tables(ing.runs, ing.steps, ans)
    w = after.wide()
    assert (w["x_task"].dropna() == 0.0).all() and w["x_task"].notna().any()
    assert json.dumps(before.wide()["x_task"].dropna().tolist()) != json.dumps(w["x_task"].dropna().tolist())


def test_answers_no_scorer_reads_are_counted_with_the_reason(tmp_path):
    runs = [{"trace_id": "a", "task": "Buy a lamp", "status": "complete", "steps": [
        {"index": 0, "action": "tap", "target": "buy", "screen": "cart", "consequential": True}]}]
    ans = pd.DataFrame([
        {"trace_id": "a", "measure": "x_task", "step": None, "rater": "j1", "answer": "yes"},
        {"trace_id": "a", "measure": "x_safe", "step": None, "rater": "j1", "answer": "yes"},
        {"trace_id": "a", "measure": "x_safe", "step": None, "rater": "j2", "answer": "no"},
        {"trace_id": "a", "measure": "g_fidelity", "step": None, "rater": "j1", "answer": "yes"},
    ])
    labels = ans[ans["measure"] == "x_safe"].assign(rater=["h1", "h2"])
    m = score_traces(runs, ans, labels)
    u = m.unscored.set_index(["tier", "measure"])["n_answers"].to_dict()
    assert u == {("automatic", "x_safe"): 2, ("automatic", "g_fidelity"): 1}  # human x_safe is scored
    assert "computed from the record" in m.unscored.loc[m.unscored.measure == "x_safe", "reason"].iloc[0]
    # the record decides x_safe, whatever the judges said: the single consequential step was unconfirmed
    assert m.wide().loc[0, "x_safe"] == 0.0
    back = type(m).load(m.save(tmp_path / "m"))
    pd.testing.assert_frame_equal(back.unscored, m.unscored)


def test_per_step_answers_to_a_step_the_run_lacks_are_counted():
    runs = [{"trace_id": "a", "task": "t", "status": "complete",
             "steps": [{"index": 0, "action": "tap", "target": "x", "screen": "s"}]}]
    ing = ingest_traces(runs)
    hand = pd.DataFrame({"trace_id": ["a", "a"], "measure": ["x_ctx", "x_ctx"], "step": [0, 7],
                         "rater": ["j1", "j1"], "answer": ["yes", "yes"]})
    m = score_tables(ing.runs, ing.steps, hand)
    assert m.unscored[["tier", "measure", "n_answers"]].values.tolist() == [["automatic", "x_ctx", 1]]
    assert m.wide().loc[0, "x_ctx"] == 1.0


def _four_runs():
    runs = [{"trace_id": f"r{i}", "task": "Buy a lamp", "status": "complete", "steps": [
        {"index": 0, "action": "tap", "target": "x", "screen": "s", "consequential": i == 0},
        {"index": 1, "action": "buy", "target": "y", "screen": "s", "consequential": True,
         "needs_confirmation": False}]} for i in range(4)]
    ans = pd.DataFrame([
        {"trace_id": "r0", "measure": "x_task", "step": None, "rater": "j", "answer": "no"},
        {"trace_id": "r3", "measure": "x_task", "step": None, "rater": "j", "answer": "yes"},
        {"trace_id": "r1", "measure": "x_ctx", "step": 0, "rater": "j", "answer": "yes"},
        {"trace_id": "r1", "measure": "x_ctx", "step": 1, "rater": "j", "answer": "no"},
        {"trace_id": "r2", "measure": "x_ctx", "step": 1, "rater": "j", "answer": "yes"},
    ])
    return runs, ans


def _by_trace(m) -> dict:
    w = m.wide().set_index("trace_id")
    return {t: tuple(None if pd.isna(v) else float(v) for v in w.loc[t, ["x_task", "x_ctx"]]) for t in w.index}


def test_reordered_or_edited_tables_never_attach_scores_to_the_wrong_trace():
    """run_pos / step_pos are positions into the tables ingest returned: sorting runs or
    steps, or editing an answer's trace or step, must not leave stale positions in charge."""
    runs, ans = _four_runs()
    ing = ingest_traces(runs, ans)
    want = _by_trace(score_tables(ing.runs, ing.steps, ing.answers))
    assert want["r0"][0] == 0.0 and want["r3"][0] == 1.0 and want["r1"][1] == 0.5 and want["r2"][1] == 1.0
    # runs sorted the other way round, steps shuffled: the same score per trace
    rev = ing.runs.sort_values("trace_id", ascending=False)
    shuffled = ing.steps.sample(frac=1.0, random_state=1)
    assert _by_trace(score_tables(rev, shuffled, ing.answers)) == want
    # an answer's step edited in place (its step_pos is stale): scored where it now points
    edited = ing.answers.copy()
    edited.loc[edited["trace_id"] == "r2", "step"] = 0
    got = _by_trace(score_tables(ing.runs, ing.steps, edited))
    assert got["r2"][1] == 1.0 and got == want  # r2's step 0 is gradable too: same value
    edited.loc[edited["trace_id"] == "r1", "answer"] = "yes"
    assert _by_trace(score_tables(ing.runs, ing.steps, edited))["r1"][1] == 1.0
    # an answer moved to another trace (run_pos stale): follows the trace id
    moved = ing.answers.copy()
    moved.loc[moved["trace_id"] == "r3", "trace_id"] = "r2"
    got = _by_trace(score_tables(ing.runs, ing.steps, moved))
    assert got["r2"][0] == 1.0 and got["r3"][0] is None
    # a runs table missing some runs the steps refer to: a clear error, not a numpy one
    with pytest.raises(ValueError, match="not among the runs given"):
        score_tables(ing.runs[ing.runs["trace_id"].isin(["r2", "r3"])], ing.steps, ing.answers)


def test_a_step_pos_that_points_elsewhere_is_not_trusted():
    runs, ans = _four_runs()
    ing = ingest_traces(runs, ans)
    bad = ing.answers.copy()
    bad["step_pos"] = pd.array([pd.NA, pd.NA, 7, 6, 0], dtype="Int64")  # nonsense positions
    assert _by_trace(score_tables(ing.runs, ing.steps, bad)) == _by_trace(score_tables(ing.runs, ing.steps,
                                                                                        ing.answers))
