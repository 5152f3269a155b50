"""A ``pyarrow.Table`` (and a Polars frame, through Arrow) is accepted wherever a pandas
DataFrame is, through the one adapter ``evaltk._validation.as_frame``; results are the
same as from pandas."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import evaltk
from evaltk._validation import as_frame, check_frame
from evaltk.judges import anchor_correctness, fold_panel, select_judges
from evaltk.stats import krippendorff_alpha, percent_agreement

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


def _demo_frames(n: int = 40):
    recs = [json.loads(x) for x in (DEMO / "traces.jsonl").read_text().splitlines()[:n]]
    ids = {r["trace_id"] for r in recs}
    answers = pd.read_csv(DEMO / "answers.csv")
    labels = pd.read_csv(DEMO / "labels.csv")
    return (pd.DataFrame(recs), answers[answers["trace_id"].isin(ids)].reset_index(drop=True),
            labels[labels["trace_id"].isin(ids)].reset_index(drop=True))


def _arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def test_as_frame_converts_arrow_and_leaves_the_rest():
    df = pd.DataFrame({"item": [1, 2], "rating": ["a", "b"]})
    assert as_frame(df) is df
    pd.testing.assert_frame_equal(as_frame(_arrow(df)), df)
    pd.testing.assert_frame_equal(as_frame(_arrow(df).to_batches()[0]), df)
    assert as_frame([1, 2]) == [1, 2]
    with pytest.raises(TypeError, match="pyarrow / Polars"):
        check_frame({"a": 1})


def test_score_traces_from_arrow_tables_equals_from_pandas():
    traces, answers, labels = _demo_frames()
    a = evaltk.score_traces(traces, answers, labels)
    b = evaltk.score_traces(_arrow(traces), _arrow(answers), _arrow(labels))
    pd.testing.assert_frame_equal(a.frame, b.frame)
    ing = evaltk.ingest_traces(_arrow(traces), answers=_arrow(answers))
    assert len(ing.ledger) == len(evaltk.ingest_traces(traces, answers=answers).ledger)


def test_agreement_panel_and_selection_take_arrow_tables():
    ratings = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3, 4, 4], "rater": list("abababab"),
                            "rating": ["x", "x", "y", "y", "x", "y", "y", "y"]})
    for fn in (percent_agreement, krippendorff_alpha):
        kw = {"level": "nominal"} if fn is krippendorff_alpha else {}
        assert fn(data=_arrow(ratings), **kw).statistic == fn(data=ratings, **kw).statistic
    _, answers, labels = _demo_frames()
    pd.testing.assert_frame_equal(fold_panel(_arrow(answers)).verdicts, fold_panel(answers).verdicts)
    correct = anchor_correctness(_arrow(answers), _arrow(labels), measure="x_task")
    pd.testing.assert_frame_equal(correct, anchor_correctness(answers, labels, measure="x_task"))
    a = select_judges(_arrow(correct), rng=0, n_resamples=200)
    b = select_judges(correct, rng=0, n_resamples=200)
    pd.testing.assert_frame_equal(a.table, b.table)


def test_a_polars_frame_goes_through_arrow():
    pl = pytest.importorskip("polars", reason="polars is not installed (it is never a dependency)")
    ratings = pd.DataFrame({"item_id": [1, 1, 2, 2], "rater": list("abab"), "rating": ["x", "x", "y", "x"]})
    frame = pl.from_pandas(ratings)
    assert percent_agreement(data=frame).statistic == percent_agreement(data=ratings).statistic
    assert percent_agreement(data=frame.lazy()).statistic == percent_agreement(data=ratings).statistic
