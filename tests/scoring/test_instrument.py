"""The instrument behind each measure (issue #14; seed 002, "What a provisional score supports":
"Comparing across scorer versions: No. A rubric edit is a new instrument; the two numbers are
not on one scale")."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from evaltk.cli._main import main
from evaltk.errors import SchemaViolation
from evaltk.ingest import INSTRUMENT_COLUMNS, read_answers
from evaltk.judges import GateRefused, gate
from evaltk.scoring import (
    MEMBER_FIELDS,
    Instrument,
    PanelMember,
    ScoreMatrix,
    UnsupportedUse,
    check_use,
    compare_measure,
    instrument_differences,
    same_instrument,
    score_traces,
)


def judge(name: str, *, model: str = "gpt-x", version: str = "2026-01", rubric: str = "x_task-v1",
          rubric_text: str = "Does the final screen show the requested outcome?",
          decoding: str = '{"temperature": 0, "max_tokens": 16}') -> dict[str, str]:
    """The instrument columns a judge runner writes on every row (digests computed, not typed)."""
    import hashlib

    def d(s: str) -> str:
        return "sha256:" + hashlib.sha256(s.encode()).hexdigest()

    return {"judge_model": model, "judge_model_version": version, "rubric_id": rubric,
            "rubric_digest": d(rubric_text), "template_digest": d("template for " + rubric_text),
            "decoding": decoding}


def traces(n: int = 60) -> list[dict]:
    return [{"trace_id": f"t{i}", "task": f"task {i}", "status": "complete",
             "steps": [{"index": 0, "action": "tap", "target": "ok", "screen": "done"}]} for i in range(n)]


def answers(raters: dict[str, dict[str, str] | None], verdict, n: int = 60) -> pd.DataFrame:
    """One x_task answer per (trace, rater): ``verdict(rater, i)``; ``raters`` maps a judge to its
    instrument columns (None: no judge metadata)."""
    rows = []
    for i in range(n):
        for r, cols in raters.items():
            rows.append({"trace_id": f"t{i}", "measure": "x_task", "rater": r, "answer": verdict(r, i),
                         **(cols or {})})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- ingest carries the columns


def test_instrument_columns_are_the_contract_and_scoring_reads_the_same_ones():
    assert INSTRUMENT_COLUMNS == ("judge_model", "judge_model_version", "rubric_id", "rubric_digest",
                                  "template_digest", "decoding")
    assert MEMBER_FIELDS[:-1] == INSTRUMENT_COLUMNS and MEMBER_FIELDS[-1] == "rater_version"


def test_ingest_carries_instrument_columns_and_canonicalises_decoding(tmp_path):
    p = tmp_path / "answers.jsonl"
    rows = [
        {"trace_id": "a", "measure": "x_task", "rater": "j", "answer": "yes", "judge_model": "m",
         "decoding": {"temperature": 0.0, "max_tokens": 16}, "prompt_digest": "sha256:00"},
        {"trace_id": "b", "measure": "x_task", "rater": "j", "answer": "no", "judge_model": "m",
         "decoding": '{ "max_tokens": 16, "temperature": 0 }'},
        {"trace_id": "c", "measure": "x_task", "rater": "j", "answer": "no", "decoding": "[16]"},
        {"trace_id": "d", "measure": "x_task", "rater": "j", "answer": "no", "rubric_id": 7},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    r = read_answers(p)
    t = r.table
    assert set(INSTRUMENT_COLUMNS) | {"prompt_digest"} <= set(t.columns)
    assert t["decoding"].tolist() == ['{"max_tokens":16,"temperature":0}'] * 2  # one canonical text
    assert t["judge_model"].tolist() == ["m", "m"] and t["prompt_digest"].iloc[0] == "sha256:00"
    led = r.ledger.set_index("record")
    assert led.loc[3, "field"] == "decoding" and "JSON object" in led.loc[3, "reason"]
    assert led.loc[4, "field"] == "rubric_id" and "must be a string" in led.loc[4, "reason"]


def test_csv_answers_without_judge_metadata_still_load():
    r = read_answers(pd.DataFrame({"trace_id": ["a"], "measure": ["x_task"], "rater": ["j"], "answer": ["yes"]}))
    assert len(r.table) == 1 and r.table["rubric_id"].isna().all()


# --------------------------------------------------------------------------- recorded, saved, digested


def test_the_instrument_is_recorded_per_measure_saved_loaded_and_digested(tmp_path):
    a = answers({"j1": judge("j1"), "j2": judge("j2", model="claude-y")}, lambda r, i: "yes")
    m = score_traces(traces(), a)
    ins = m.manifest.instrument("x_task")
    assert ins.status == "pinned" and ins.kind == "panel" and ins.fold_rule["name"] == "majority"
    assert [p.rater for p in ins.panel] == ["j1", "j2"] and ins.panel[1].judge_model == "claude-y"
    assert ins.panel[0].decoding == '{"max_tokens":16,"temperature":0}'
    assert ins.digest.startswith("sha256:") and len(ins.digest) == 71
    assert m.manifest.instrument("x_safe").status == "rule"
    frame = m.manifest.to_frame().set_index("measure")
    assert frame.loc["x_task", "instrument_digest"] == ins.digest
    back = ScoreMatrix.load(m.save(tmp_path / "m"))
    assert back.manifest.instrument("x_task") == ins and back.manifest.instrument("x_task").digest == ins.digest
    # an edited manifest no longer matches its digest
    doc = json.loads((tmp_path / "m" / "manifest.json").read_text())
    doc["measures"]["x_task"]["instrument"]["panel"][0]["rubric_id"] = "x_task-v9"
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(SchemaViolation, match="digest"):
        ScoreMatrix.load(tmp_path / "m")


def test_answers_without_metadata_give_an_unpinned_instrument_and_old_manifests_load(tmp_path):
    m = score_traces(traces(), answers({"j1": None}, lambda r, i: "yes"))
    ins = m.manifest.instrument("x_task")
    assert ins.status == "unpinned" and "no instrument columns" in ins.unpinned_reasons[0]
    assert m.manifest.instrument("x_eff").unpinned_reasons == ("no judge answered x_eff",)
    from evaltk.scoring._instrument import panel_members

    # the row-by-row reading agrees with the fast one
    assert panel_members(answers({"j1": None}, lambda r, i: "yes")) == ins.panel
    m.save(tmp_path / "m")
    doc = json.loads((tmp_path / "m" / "manifest.json").read_text())
    for s in doc["measures"].values():  # a manifest written before instruments were recorded
        s.pop("instrument")
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(doc))
    old = ScoreMatrix.load(tmp_path / "m").manifest.instrument("x_task")
    assert old.kind == "unrecorded" and not old.pinned and "records no instrument" in old.unpinned_reasons[0]


def test_a_judge_with_several_rubrics_or_missing_fields_is_unpinned():
    cols = [judge("j1", rubric="v1") if i % 2 else judge("j1", rubric="v2") for i in range(60)]
    a = answers({"j1": None}, lambda r, i: "yes")
    a = pd.concat([a, pd.DataFrame(cols)], axis=1)
    a.loc[0, "template_digest"] = None
    ins = score_traces(traces(), a).manifest.instrument("x_task")
    probs = ins.panel[0].problems
    assert not ins.pinned and ins.panel[0].rubric_id is None
    assert any("2 different rubric_id values" in p for p in probs)
    assert any("1 of 60 answers have no template_digest" in p for p in probs)


@settings(max_examples=25, deadline=None)
@given(hs.permutations(list(range(6))), hs.booleans())
def test_the_digest_ignores_row_order_and_the_spelling_of_decoding(order, spaced):
    dec = '{ "temperature" : 0, "max_tokens": 16 }' if spaced else '{"max_tokens":16,"temperature":0}'
    base = answers({"j1": judge("j1"), "j2": judge("j2")}, lambda r, i: "yes", n=3)
    other = answers({"j1": judge("j1", decoding=dec), "j2": judge("j2", decoding=dec)}, lambda r, i: "yes",
                    n=3).iloc[order].reset_index(drop=True)
    d0 = score_traces(traces(3), base).manifest.instrument("x_task")
    d1 = score_traces(traces(3), other).manifest.instrument("x_task")
    assert d0.digest == d1.digest and same_instrument(d0, d1)


# --------------------------------------------------------------------------- refused comparisons


def test_same_answers_folded_by_unanimity_and_majority_are_refused_naming_the_fold_rule():
    # before issue #14 the gate said "promote" ("significant gain +0.500") here
    a = answers({"j1": judge("j1"), "j2": judge("j2"), "j3": judge("j3")},
                lambda r, i: "yes" if r != "j3" or i % 2 else "no")
    base = score_traces(traces(), a, fold="unanimity")
    cand = score_traces(traces(), a, fold="majority")
    with pytest.raises(GateRefused, match="fold_rule") as e:
        gate(base, cand)
    assert e.value.gate == "scoring consistency"
    assert any("fold_rule differs (baseline 'unanimity', candidate 'majority')" in r for r in e.value.reasons)
    with pytest.raises(UnsupportedUse, match="fold_rule"):
        compare_measure(base, cand, "x_task")
    with pytest.raises(UnsupportedUse, match="fold_rule"):
        check_use("regression", base, cand, measure="x_task")


def _write(tmp_path, name: str, frame: pd.DataFrame) -> str:
    p = tmp_path / name
    frame.to_csv(p, index=False)
    return str(p)


def test_strict_rubric_v1_against_lenient_rubric_v9_is_refused_through_the_cli(tmp_path, capsys):
    # before issue #14: `evaltk score ... && evaltk gate` printed "decision: promote" and exited 0
    tr = tmp_path / "traces.jsonl"
    tr.write_text("\n".join(json.dumps(t) for t in traces()) + "\n")
    strict = answers({"judge": judge("judge", rubric="x_task-v1", rubric_text="strict: the screen proves it")},
                     lambda r, i: "yes" if i % 3 == 0 else "no")
    lenient = answers({"judge": judge("judge", rubric="x_task-v9", rubric_text="lenient: plausibly done")},
                      lambda r, i: "yes")
    for side, frame in (("v1", strict), ("v9", lenient)):
        assert main(["score", str(tr), "--answers", _write(tmp_path, f"{side}.csv", frame),
                     "--out", str(tmp_path / side)]) == 0
    out = capsys.readouterr().out
    assert "x_task       pinned" in out  # `evaltk score` shows the instrument and its digest
    code = main(["gate", "--baseline", str(tmp_path / "v1"), "--candidate", str(tmp_path / "v9"), "--json"])
    assert code == 67
    res = json.loads(capsys.readouterr().out)
    assert res["decision"] == "refused" and res["gate"] == "scoring consistency"
    named = " ".join(res["reasons"])
    assert "rubric_id of judge judge differs (baseline 'x_task-v1', candidate 'x_task-v9')" in named
    assert "rubric_digest of judge judge differs" in named and "template_digest" in named
    assert "judge_model " not in named  # the same model: only what differs is named


def test_different_judges_in_one_place_are_compared_field_by_field():
    a = Instrument("x_task", "s", "1.0", "panel", {"name": "majority"},
                   (PanelMember("strict", judge_model="m1", rubric_id="v1"),))
    b = Instrument("x_task", "s", "1.0", "panel", {"name": "majority"},
                   (PanelMember("lenient", judge_model="m1", rubric_id="v9"),))
    d = {x.field: (x.first, x.second) for x in instrument_differences(a, b)}
    assert d == {"rater": ("strict", "lenient"), "rubric_id": ("v1", "v9")}
    c = replace(b, panel=(*b.panel, PanelMember("third")))
    assert [x.field for x in instrument_differences(a, c)] == ["panel"]


def test_an_unpinned_instrument_on_either_side_routes_to_review_never_promote():
    pinned = {"j1": judge("j1")}
    a_p = answers(pinned, lambda r, i: "yes" if i % 5 else "no", n=200)
    a_u = answers({"j1": None}, lambda r, i: "yes" if i % 5 else "no", n=200)
    base = score_traces(traces(200), a_p)
    both = gate(base, score_traces(traces(200), a_p), measures=["x_task"], min_effect=0.1)
    assert both.decision == "promote" and both.dimensions["instrument_pinned"].all()
    for b, c in ((base, score_traces(traces(200), a_u)), (score_traces(traces(200), a_u), base)):
        res = gate(b, c, measures=["x_task"], min_effect=0.1)
        row = res.dimensions.iloc[0]
        assert res.decision == "review" and not row["instrument_pinned"]
        assert row["reason"].startswith("instrument unpinned") and "test said promote" in row["reason"]
        assert "not established" in check_use("compare_agents", b, c, measure="x_task")
    assert np.isfinite(compare_measure(base, score_traces(traces(200), a_u), "x_task").difference)
