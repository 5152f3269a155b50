"""Empty input is a caller error in every public judges function (issue 13, "One undefined shape").

Each call gets the columns it needs and no rows; each must raise ``InputError`` naming
the empty argument, never a numpy reduction error or a result built from nothing.
"""

from __future__ import annotations

import pandas as pd
import pytest

import evaltk.judges as judges
from evaltk.errors import InputError


def _frame(*cols: str) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})


ANSWERS = ("trace_id", "measure", "step", "rater", "answer", "cost", "latency_ms")

CALLS = {
    "fold_panel": (lambda: judges.fold_panel(_frame(*ANSWERS)), "answers"),
    "fold_pairwise_trials": (lambda: judges.fold_pairwise_trials(
        _frame("pair_id", "judge_name", "decision", "label", "trial")), "judgments"),
    "anchor_correctness": (lambda: judges.anchor_correctness(_frame(*ANSWERS), _frame(*ANSWERS)), "answers"),
    "judge_costs": (lambda: judges.judge_costs(_frame(*ANSWERS)), "answers"),
    "canary_hits": (lambda: judges.canary_hits(_frame(*ANSWERS), _frame("trace_id", "measure", "passing_answer")),
                    "answers"),
    "select_judges": (lambda: judges.select_judges(_frame("trace_id", "measure", "judge", "correct", "abstained")),
                      "correct"),
    "published_precision_recall": (lambda: judges.published_precision_recall(
        _frame("judge", "precision", "recall", "f1"), 10), "table"),
    "pareto_frontier": (lambda: judges.pareto_frontier(_frame("judge", "accuracy", "cost_per_item", "latency_p50")),
                        "points"),
    "uncertainty_strata": (lambda: judges.uncertainty_strata(_frame("disagreement", "confidence")), "items"),
    "propose_batch": (lambda: judges.propose_batch(_frame("item", "stratum")), "pool"),
    "stratified_accuracy": (lambda: judges.stratified_accuracy(_frame("item", "stratum"), _frame("item", "correct")),
                            "pool"),
    "expansion_gate": (lambda: judges.expansion_gate([], []), "first"),
    "alt_test": (lambda: judges.alt_test({}, {}), "humans"),
    "alt_test_frame": (lambda: judges.alt_test(_frame("annotator", "item", "label"), pd.Series(dtype=object)),
                       "humans"),
    "human_ceiling": (lambda: judges.human_ceiling(_frame("item_id", "rater", "rating"), level="nominal"), "data"),
    "calibration_numbers": (lambda: judges.calibration_numbers(_frame("item_id", "rater", "rating"), {},
                                                               level="nominal"), "data"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_empty_input_is_an_input_error_naming_the_argument(name):
    call, field = CALLS[name]
    with pytest.raises(InputError, match=f"`{field}`") as err:
        call()
    assert err.value.field == field


def test_anchor_correctness_says_which_measure_left_nothing():
    rows = pd.DataFrame({"trace_id": ["t1"], "measure": ["x_task"], "rater": ["j"], "answer": ["yes"]})
    with pytest.raises(InputError, match="measure 'x_other'"):
        judges.anchor_correctness(rows, rows, measure="x_other", keys=("trace_id", "measure"))


def test_alt_test_with_too_few_shared_items_is_an_input_error():
    humans = {f"h{k}": {i: i % 2 for i in range(5)} for k in range(3)}
    with pytest.raises(InputError, match="min_items") as err:
        judges.alt_test(humans, {i: i % 2 for i in range(5)})
    assert err.value.field == "humans"
