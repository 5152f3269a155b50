"""The promotion rule of seed 002 has one home (``evaltk.scoring.promotion_conditions``).

``CalibrationRecord`` / ``Manifest.calibrate`` and ``judges.promotion_check`` read the
same rule with the same condition names; a shorter statement of the rule is never
satisfied by evidence the full one refuses (seed 002, "Status vocabulary").
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import evaltk.judges as judges
from evaltk.errors import SchemaViolation
from evaltk.judges import calibration_numbers, calibration_record, promotion_check
from evaltk.scoring import (
    PROMOTION_CONDITIONS,
    CalibrationRecord,
    ScoreMatrix,
    promotion_conditions,
    score_tables,
)
from evaltk.values import Threshold
from tests.scoring.test_scoring import S, tables

GOOD = Threshold(0.5, validated=True, source="decision-cost record 2026-W40")


def _record(**kw):
    base = dict(label_set="heldout-2026-W40", statistic="cohen_kappa", estimate=0.71, interval=(0.62, 0.79),
                confidence_level=0.95, held_out=True, human_ceiling=(0.8, 0.72, 0.87), baseline=0.0,
                threshold=GOOD, n_items=4, evaluation_items=(1, 2, 3, 4), tuning_items=(9,))
    base.update(kw)
    return CalibrationRecord(**base)


def _numbers():
    rng = np.random.default_rng(3)
    items = np.arange(40)
    truth = rng.integers(0, 2, items.size)
    rows = [(i, r, "Y" if (t if rng.random() < 0.9 else 1 - t) else "N")
            for i, t in zip(items, truth, strict=True) for r in ("a", "b")]
    df = pd.DataFrame(rows, columns=["item_id", "rater", "rating"])
    judge = {int(i): ("Y" if (t if rng.random() < 0.85 else 1 - t) else "N") for i, t in zip(items, truth, strict=True)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibration_numbers(df, judge, level="nominal", rng=0, n_resamples=200)


def test_one_set_of_condition_names():
    assert judges.PROMOTION_CONDITIONS is PROMOTION_CONDITIONS
    assert list(promotion_conditions(_record())["condition"]) == list(PROMOTION_CONDITIONS)
    assert list(promotion_check(None).conditions["condition"]) == list(PROMOTION_CONDITIONS)
    assert set(_record().conditions()) == set(PROMOTION_CONDITIONS)


@pytest.mark.parametrize("source", ["", "   ", "\t\n"])
def test_blank_threshold_source_is_refused_by_both_doors(source):
    blank = Threshold(0.5, validated=True, source=source)
    assert _record(threshold=blank).unmet() == ["threshold_by_decision_cost"]
    m = score_tables(*tables({"a": [S("x")]}))
    assert m.manifest.calibrate("x_task", _record(threshold=blank)).status("x_task").evidence == "provisional"
    nums = _numbers()
    check = promotion_check(nums, label_set="W40", tuning_items=[100], threshold=blank)
    assert "threshold_by_decision_cost" in check.missing and check.status == "provisional"


@pytest.mark.parametrize("kw", [
    dict(evaluation_items=None, tuning_items=None),  # a bare held_out=True
    dict(evaluation_items=None),
    dict(tuning_items=None),
    dict(evaluation_items=()),
    dict(label_set="  "),
    dict(tuning_items=(2, 9)),  # an evaluation item also shaped the scorer
])
def test_a_bare_held_out_flag_does_not_promote(kw):
    rec = _record(**kw)
    assert rec.held_out is True and rec.unmet() == ["held_out_label_set"]
    m = score_tables(*tables({"a": [S("x")]}))
    st = m.manifest.calibrate("x_task", rec).status("x_task")
    assert st.evidence == "provisional" and "held_out_label_set" in st.label


def test_full_record_promotes_and_survives_a_round_trip(tmp_path):
    m = score_tables(*tables({"a": [S("x")]}))
    m = m.with_manifest(m.manifest.calibrate("x_task", _record()))
    assert m.manifest.status("x_task").evidence == "calibrated"
    m.save(tmp_path / "m")
    assert ScoreMatrix.load(tmp_path / "m").manifest == m.manifest


def test_saved_calibrated_status_on_a_bare_held_out_record_is_refused(tmp_path):
    m = score_tables(*tables({"a": [S("x")]}))
    m = m.with_manifest(m.manifest.calibrate("x_task", _record()))
    m.save(tmp_path / "m")
    path = tmp_path / "m" / "manifest.json"
    doc = json.loads(path.read_text())
    cal = doc["measures"]["x_task"]["calibration"]
    del cal["evaluation_items"], cal["tuning_items"]  # the shorter statement: held_out: true
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaViolation, match="held_out_label_set"):
        ScoreMatrix.load(tmp_path / "m")


@pytest.mark.parametrize("case", ["full", "fitted", "undeclared", "unnamed", "blank", "unvalidated", "none"])
def test_promotion_check_and_the_record_give_one_verdict(case):
    nums = _numbers()
    kw = dict(label_set="W40", tuning_items=[100], threshold=GOOD)
    kw.update({"full": {}, "fitted": dict(tuning_items=[0, 100]), "undeclared": dict(tuning_items=None),
               "unnamed": dict(label_set=""), "blank": dict(threshold=Threshold(0.5, validated=True, source=" ")),
               "unvalidated": dict(threshold=Threshold(0.5, source="guess")),
               "none": dict(threshold=None)}[case])
    check = promotion_check(nums, **kw)
    rec = calibration_record(nums, **kw)
    assert check.missing == rec.unmet()
    m = score_tables(*tables({"a": [S("x")]}))
    assert m.manifest.calibrate("x_task", rec).status("x_task").evidence == check.status
    assert (check.status == "calibrated") == (case == "full")


def test_a_status_built_in_memory_cannot_claim_calibrated_without_its_record():
    # seed 002: "calibrated belongs on a record"; "Calibrated implies all five"
    from dataclasses import replace

    from evaltk.scoring import Manifest, MeasureStatus

    man = Manifest.default("p")
    st = man.status("x_task")
    with pytest.raises(ValueError, match="x_task: `calibrated` is not supported by its evidence \\(no calibration record\\)"):
        replace(st, evidence="calibrated")
    with pytest.raises(ValueError, match="unmet: human_ceiling"):
        MeasureStatus("x_task", "calibrated", "current", st.scorer, st.scorer_version, "",
                      calibration=_record(human_ceiling=None))
    with pytest.raises(ValueError, match="not calibrated or provisional"):
        replace(st, evidence="validated")
    assert replace(st, evidence="calibrated", calibration=_record()).label.startswith("calibrated on")
