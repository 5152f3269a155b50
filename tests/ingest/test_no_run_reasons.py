"""Why an answer has no run (``_no_run_reasons``): the reason of the last trace-ledger row with
its id, else "<kind> without run".

The reference is the pandas lookup the join used before (``drop_duplicates(keep="last")`` of the
ledger rows with an id, then ``reindex``), which held both id columns as Python strings for the
rest of the join.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.ingest import ingest_traces
from evaltk.ingest._join import _no_run_reasons
from evaltk.ingest._series import _categorical

_REASONS = [None, "in_progress", "duplicate trace_id: also on line 3", "malformed: field `steps`: must be a list"]


def _reference(trace_id: pd.Series, where: np.ndarray, ledger: pd.DataFrame, kind: str) -> list[str]:
    tl = ledger[ledger["trace_id"].notna()]
    why = tl.drop_duplicates("trace_id", keep="last").set_index("trace_id")["reason"]
    r = why.reindex(trace_id.iloc[where]).to_numpy(dtype=object, na_value=None)
    return [f"{kind} without run" if x is None else f"run not kept: {x.split(':', 1)[0]}" for x in r]


@settings(max_examples=200, deadline=None)
@given(n_ledger=st.integers(0, 60), n_answers=st.integers(1, 60), ids=st.integers(1, 12),
       nulls=st.booleans(), seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["answer", "label"]))
def test_the_last_ledger_row_of_the_id_gives_the_reason(n_ledger, n_answers, ids, nulls, seed, kind):
    rng = np.random.default_rng(seed)
    tids = [f"t{i}" for i in rng.integers(0, ids, n_ledger)]
    if nulls and n_ledger:
        tids[int(rng.integers(0, n_ledger))] = None  # a line that was no record: no id
    reasons = [_REASONS[i] for i in rng.integers(0, len(_REASONS), n_ledger)]
    ledger = pd.DataFrame({"trace_id": pd.Series(tids, dtype="str"), "reason": _categorical(pd.Series(reasons, dtype="str"))})
    answers = pd.Series([f"t{i}" for i in rng.integers(0, ids + 3, n_answers)], dtype="str")  # some never seen
    where = np.flatnonzero(rng.random(n_answers) < 0.7)
    assert _no_run_reasons(answers, where, ledger, kind) == _reference(answers, where, ledger, kind)


def test_answers_of_a_dropped_run_and_of_no_run_are_told_apart():
    runs = [{"trace_id": "a", "task": "t", "status": "complete", "steps": []},
            {"trace_id": "b", "task": "t", "status": "in_progress", "steps": []}]
    ing = ingest_traces(runs, answers=[{"trace_id": t, "measure": "x_task", "rater": "j", "answer": "yes"}
                                       for t in ("a", "b", "zz")])
    led = ing.ledger[ing.ledger["kind"] == "answer"]
    assert led["reason"].astype(object).where(led["reason"].notna(), None).tolist() == \
        [None, "run not kept: in_progress", "answer without run"]
