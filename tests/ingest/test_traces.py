"""Traces, answers, labels and ingest (seed 002, "Scope of a trace" and "The pipeline": Ingest;
issue 2 sections 3 and 8).

The rules under test, with where they come from:

* seed 002 Ingest: "join each run to its labels on a stable id, and drop in-progress
  runs ... Fix one canonical step count and record disagreements between sources
  rather than silently preferring one";
* seed 002 Scope: "the domain read from the task prompt rather than assigned
  separately ... the same contract is designed to run online, scoring a run as it
  completes";
* seed 002 "The four dimensions": answer vocabularies (Yes / No / Cannot tell;
  None / A few / Lots), the human vote y(t) among the observations only;
* issue 2 section 3: a ledger accounts for every input record; a malformed record
  names file, line and field, goes to the ledger by default and raises with
  ``strict=True``; section 8: at least 20 distinct malformed inputs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaltk._io import str_dtype
from evaltk.errors import InputError, SchemaViolation, UnreadableInput
from evaltk.ingest import (
    ANSWER_COLUMNS,
    LEDGER_COLUMNS,
    POSITION_DTYPE,
    RUN_COLUMNS,
    STEP_COLUMNS,
    Ingested,
    KeywordDomainRule,
    domain_from_task,
    ingest_one,
    ingest_traces,
    read_answers,
    read_traces,
)
from evaltk.values import normalize_answer

DATA = Path(__file__).parent.parent / "inputs" / "traces"
MALFORMED = DATA / "malformed.jsonl"
BAD_ANSWERS = DATA / "answers_malformed.csv"


def step(i, action="tap", target="button", screen="screen", consequential=False, confirm=False):
    return {"index": i, "action": action, "target": target, "screen": screen,
            "consequential": consequential, "needs_confirmation": confirm}


def run(tid, task="Buy a red mug", status="complete", steps=None, **extra):
    rec = {"trace_id": tid, "task": task, "status": status,
           "steps": [step(0), step(1)] if steps is None else steps}
    rec.update(extra)
    return rec


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def assert_ledger_accounts(ing: Ingested, n_records: int) -> None:
    """Issue 2 section 3: the ledger accounts for every input record."""
    assert len(ing.ledger) == n_records
    assert list(ing.ledger.columns) == list(LEDGER_COLUMNS)
    kept = ing.ledger["status"] == "kept"
    assert ing.ledger.loc[kept, "reason"].isna().all()
    assert ing.ledger.loc[~kept, "reason"].notna().all()
    led = ing.ledger
    assert kept[led["kind"] == "run"].sum() == len(ing.runs)
    assert kept[led["kind"] == "answer"].sum() == len(ing.answers)
    assert kept[led["kind"] == "label"].sum() == len(ing.labels)


# --------------------------------------------------------------------------- the contract


def test_tables_have_the_contract_columns_and_types():
    ing = ingest_traces([run("a", agent="ckpt-1", domain="shopping",
                      guide={"id": "g1", "reference_id": "g1"}, step_counts={"agent": 2})],
                 answers=[{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes"},
                          {"trace_id": "a", "measure": "x_ctx", "step": 1, "rater": "j1",
                           "answer": "no"}])
    assert list(ing.runs.columns) == list(RUN_COLUMNS)
    assert list(ing.steps.columns) == list(STEP_COLUMNS)
    assert list(ing.answers.columns) == list(ANSWER_COLUMNS)
    assert list(ing.labels.columns) == list(ANSWER_COLUMNS)
    r = ing.runs.iloc[0]
    assert (r.trace_id, r.task, r.domain, r.domain_source, r.domain_record, r.status, r.n_steps, r.agent) == (
        "a", "Buy a red mug", "shopping", "rule", "shopping", "complete", 2, "ckpt-1")
    assert r.guide == {"id": "g1", "reference_id": "g1"}
    assert ing.steps["index"].dtype == np.int64
    assert ing.steps["run_pos"].dtype == np.int32  # POSITION_DTYPE
    assert ing.steps["consequential"].dtype == bool
    assert ing.steps["needs_confirmation"].dtype == bool
    assert str(ing.answers["step"].dtype) == "Int64"
    assert ing.answers["step"].isna().tolist() == [True, False]
    assert ing.answers["step_pos"].tolist()[1] == 1
    assert ing.step_count_disagreements.empty


def test_in_progress_runs_are_dropped_with_a_ledger_entry():
    # seed 002 Ingest: "drop in-progress runs, since a mid-write trace carries an
    # incomplete span set"
    ing = ingest_traces([run("a"), {"trace_id": "b", "status": "in_progress", "steps": [step(0)]}],
                 labels=[{"trace_id": "b", "measure": "x_task", "rater": "h1", "answer": "yes"}])
    assert ing.runs["trace_id"].tolist() == ["a"]
    assert set(ing.steps["trace_id"]) == {"a"}
    led = ing.ledger.set_index(["kind", "trace_id"])
    assert led.loc[("run", "b"), "reason"] == "in_progress"
    assert led.loc[("label", "b"), "reason"] == "run not kept: in_progress"
    assert ing.labels.empty
    assert_ledger_accounts(ing, 3)


def test_in_progress_record_then_complete_record_is_not_a_duplicate():
    ing = ingest_traces([{"trace_id": "a", "status": "in_progress"}, run("a")])
    assert ing.runs["trace_id"].tolist() == ["a"]
    assert ing.ledger["reason"].tolist()[0] == "in_progress"
    assert ing.ledger["status"].tolist() == ["dropped", "kept"]


def test_canonical_step_count_and_disagreements_are_recorded():
    # seed 002 Ingest: "Fix one canonical step count and record disagreements between
    # sources rather than silently preferring one".  Canonical = steps in the record.
    recs = [run("a", steps=[step(0), step(1), step(2)], step_counts={"agent": 3, "recorder": 5}),
            run("b", steps=[step(0)], step_counts={"recorder": 1, "agent": 0}),
            run("c", steps=[step(0)])]
    ing = ingest_traces(recs)
    assert ing.runs["n_steps"].tolist() == [3, 1, 1]
    d = ing.step_count_disagreements
    assert d[["trace_id", "source", "count", "canonical"]].values.tolist() == [
        ["a", "recorder", 5, 3], ["b", "agent", 0, 1]]
    assert d["run_pos"].tolist() == [0, 1]
    # a source that reports more steps than the record holds: steps may be missing
    assert ing.runs["steps_missing"].tolist() == [True, False, False]


def test_index_gaps_flag_missing_steps_and_steps_are_ordered_by_index():
    ing = ingest_traces([run("a", steps=[step(3, "c"), step(0, "a"), step(1, "b")])])
    assert ing.steps["index"].tolist() == [0, 1, 3]
    assert ing.steps["action"].tolist() == ["a", "b", "c"]
    assert bool(ing.runs["steps_missing"].iloc[0])
    assert ing.runs["n_steps"].iloc[0] == 3


def test_steps_without_any_index_take_their_list_order(tmp_path):
    recs = [run("a", steps=[{"action": "open"}, {"action": "confirm", "needs_confirmation": True},
                            {"action": "buy", "consequential": True}]),
            run("b", steps=[step(5), step(2)])]
    for ing in (ingest_traces(recs), ingest_traces(write_jsonl(tmp_path / "t.jsonl", recs))):
        assert ing.steps["index"].tolist() == [0, 1, 2, 2, 5]
        assert ing.steps["action"].tolist()[:3] == ["open", "confirm", "buy"]
        assert ing.ledger["status"].tolist() == ["kept", "kept"]


def test_steps_table_is_ordered_by_run_then_index_with_run_pos():
    ing = ingest_traces([run("x", steps=[step(1), step(0)]), run("y", steps=[]),
                  run("z", steps=[step(0), step(2), step(1)])])
    assert ing.steps["trace_id"].tolist() == ["x", "x", "z", "z", "z"]
    assert ing.steps["index"].tolist() == [0, 1, 0, 1, 2]
    assert ing.steps["run_pos"].tolist() == [0, 0, 2, 2, 2]
    # run_pos is the row in `runs`, so numpy segment reductions need no groupby
    counts = np.bincount(ing.steps["run_pos"].to_numpy(), minlength=len(ing.runs))
    assert counts.tolist() == ing.runs["n_steps"].tolist()


def test_step_defaults_and_blank_strings():
    # consequential / needs_confirmation default to false; null reads as absent; an
    # empty target or screen is no target / no captured screen
    ing = ingest_traces([run("a", steps=[{"index": 0, "action": "tap"},
                                  {"index": 1, "action": "tap", "target": "", "screen": "",
                                   "consequential": None, "needs_confirmation": True}])])
    s = ing.steps
    assert s["consequential"].tolist() == [False, False]
    assert s["needs_confirmation"].tolist() == [False, True]
    assert s["target"].isna().all() and s["screen"].isna().all()


def test_duplicated_trace_ids_identical_keep_first_conflicting_keep_none():
    a = run("a")
    ing = ingest_traces([a, run("b"), a, run("b", task="Send an email")],
                 answers=[{"trace_id": "b", "measure": "x_task", "rater": "j", "answer": "yes"}])
    assert ing.runs["trace_id"].tolist() == ["a"]
    reasons = ing.ledger["reason"].tolist()
    assert reasons[0] != reasons[0]  # NaN: kept
    assert reasons[2] == "duplicate trace_id: identical to record 1"
    assert reasons[1] == reasons[3] == "duplicate trace_id: conflicting records 2, 4; none kept"
    assert reasons[4] == "run not kept: duplicate trace_id"
    assert ing.ledger["field"].tolist()[1:4] == ["trace_id"] * 3
    assert_ledger_accounts(ing, 5)


def test_labels_without_run_and_answers_without_run():
    ing = ingest_traces([run("a")],
                 answers=[{"trace_id": "zz", "measure": "x_task", "rater": "j", "answer": "no"}],
                 labels=[{"trace_id": "a", "measure": "x_task", "rater": "h", "answer": "no"},
                         {"trace_id": "q", "measure": "x_task", "rater": "h", "answer": "no"}])
    led = ing.ledger
    assert led.loc[led["kind"] == "answer", "reason"].tolist() == ["answer without run"]
    assert led.loc[led["kind"] == "label", "reason"].tolist()[1] == "label without run"
    assert ing.labels["trace_id"].tolist() == ["a"]
    assert_ledger_accounts(ing, 4)


def test_human_vote_lives_only_in_labels():
    # seed 002: y(t) is carried among the observations, never shown to a judge; the
    # judges' table and the humans' table are never merged.
    ing = ingest_traces([run("a")],
                 answers=[{"trace_id": "a", "measure": "x_task", "rater": "judge", "answer": "yes"}],
                 labels=[{"trace_id": "a", "measure": "x_task", "rater": "human", "answer": "no"}])
    assert ing.answers["rater"].tolist() == ["judge"]
    assert ing.labels["rater"].tolist() == ["human"]
    assert (ing.ledger["kind"].tolist()) == ["run", "answer", "label"]


def test_answers_join_steps_and_report_unknown_steps():
    ing = ingest_traces([run("a", steps=[step(0), step(2)]), run("b", steps=[step(0)])],
                 answers=[{"trace_id": "b", "measure": "x_ctx", "step": 0, "rater": "j", "answer": "yes"},
                          {"trace_id": "a", "measure": "x_ctx", "step": 2, "rater": "j", "answer": "no"},
                          {"trace_id": "a", "measure": "x_ctx", "step": 1, "rater": "j", "answer": "no"}])
    assert ing.answers["run_pos"].tolist() == [1, 0]
    assert ing.answers["step_pos"].tolist() == [2, 1]
    st = ing.steps.iloc[ing.answers["step_pos"].to_numpy(dtype=int)]
    assert st["trace_id"].tolist() == ing.answers["trace_id"].tolist()
    assert st["index"].tolist() == ing.answers["step"].tolist()
    assert ing.ledger["reason"].iloc[-1] == "step not in run: the run has no step with index 1"


# --------------------------------------------------------------------------- vocabularies


@pytest.mark.parametrize("word,canonical", [
    ("yes", "yes"), ("YES", "yes"), (" No ", "no"), ("cannot tell", "cannot_tell"),
    ("Cannot Tell", "cannot_tell"), ("cannot-tell", "cannot_tell"), ("can't tell", "cannot_tell"),
    ("unsure", "cannot_tell"), ("A few", "a_few"), ("a-few", "a_few"), ("few", "a_few"),
    ("Lots", "lots"), ("a lot", "lots"), ("NONE", "none"), ("n/a", "not_applicable"),
])
def test_normalize_answer_synonyms(word, canonical):
    assert normalize_answer(word) == canonical


def test_answer_vocabularies_per_measure():
    rows = [("x_task", "Cannot tell", "cannot_tell"), ("x_eff", "A few", "a_few"),
            ("x_eff", "none", "none"), ("x_ctx", "No", "no"), ("t_task", "yes", "yes"),
            ("g_fidelity", "Yes", "yes"), ("x_safe", "N/A", "not_applicable")]
    recs = [{"trace_id": "a", "measure": m, "rater": f"r{i}", "answer": w,
             "step": 0 if m == "x_ctx" else None} for i, (m, w, _) in enumerate(rows)]
    t = read_answers(recs).table
    assert t["answer"].tolist() == [c for *_, c in rows]
    assert t["measure"].tolist()[4] == "x_task"  # t_ prefix is an alias (seed 002 Notation)


@pytest.mark.parametrize("measure,word", [("x_task", "none"), ("x_eff", "yes"), ("x_ctx", "lots"),
                                          ("x_task", "maybe"), ("x_eff", "not_applicable")])
def test_words_outside_a_measures_vocabulary_are_unknown(measure, word):
    rec = {"trace_id": "a", "measure": measure, "rater": "r", "answer": word,
           "step": 0 if measure == "x_ctx" else None}
    a = read_answers([rec])
    assert a.table.empty
    assert a.ledger["reason"].iloc[0].startswith("unknown answer word")
    assert a.ledger["field"].iloc[0] == "answer"
    with pytest.raises(SchemaViolation, match="unknown answer word") as e:
        read_answers([rec], strict=True)
    assert (e.value.record, e.value.field) == (1, "answer")


def test_retrieval_identifiers_are_kept_verbatim():
    # seed 002: g_retrieval compares identifiers "by exact equality, never fuzzy"
    t = read_answers([{"trace_id": "a", "measure": "g_retrieval", "rater": "h",
                       "answer": " Guide-7 "}]).table
    assert t["answer"].tolist() == [" Guide-7 "]


# --------------------------------------------------------------------------- domain


def test_domain_from_the_task_prompt_and_the_record_field_only_where_the_prompt_names_none():
    # seed 002, "Scope of a trace": "the domain read from the task prompt rather than assigned separately"
    ing = ingest_traces([run("a", task="Send an email to Bob", domain="mail-app"),
                  run("b", task="Send an email to Bob"),
                  run("c", task="[Travel] Book something", domain="shopping"),
                  run("d", task="What's the weather?"),
                  run("e", task="Buy a mug", domain=""),
                  run("f", task="What's the weather?", domain="weather")])
    assert ing.runs["domain"].tolist() == ["email", "email", "travel", "unknown", "shopping", "weather"]
    assert ing.runs["domain_source"].tolist() == ["rule", "rule", "rule", "rule", "rule", "record"]
    # a field that disagrees with the prompt is recorded beside the domain, not used
    rec = ing.runs["domain_record"]
    assert rec.iloc[0] == "mail-app" and rec.iloc[2] == "shopping" and rec.iloc[5] == "weather"
    assert rec.iloc[[1, 3, 4]].isna().all()


def test_default_rule_earliest_keyword_wins():
    assert domain_from_task("Buy a red mug and email the receipt") == "shopping"
    assert domain_from_task("Email Bob about the order") == "email"
    assert domain_from_task("SCHEDULE a meeting") == "calendar"
    assert domain_from_task("Rebuy nothing") == "unknown"  # whole words only


def test_domain_rule_is_replaceable():
    recs = [run("a", task="Order pizza"), run("b", task="Call mum")]
    ing = ingest_traces(recs, domain_rule=lambda task: "food" if "pizza" in task else None)
    assert ing.runs["domain"].tolist() == ["food", "unknown"]
    ing = ingest_traces(recs, domain_rule={"food": ["pizza"], "phone": ["call"]})
    assert ing.runs["domain"].tolist() == ["food", "phone"]
    rule = KeywordDomainRule({"x": ["mum"]}, default="other")
    assert ingest_traces(recs, domain_rule=rule).runs["domain"].tolist() == ["other", "x"]
    with pytest.raises(TypeError, match="must return a str"):
        ingest_traces(recs, domain_rule=lambda task: 3)
    with pytest.raises(TypeError, match="domain_rule"):
        ingest_traces(recs, domain_rule=3)


# --------------------------------------------------------------------------- malformed input

#: malformed.jsonl: line -> (trace_id or None, field or None, text in the reason).
#: Every line is a distinct malformation (issue 2 section 8 asks for at least 20).
MALFORMED_EXPECTED = {
    2: ("trunc", None, "not valid JSON"),                       # truncated JSON (its id is read for the ledger)
    3: (None, None, "must be a JSON object; got array"),        # a non-object line
    4: (None, None, "must be a JSON object; got string"),       # a bare string
    5: (None, "trace_id", "is required"),                       # missing trace_id
    6: (None, "trace_id", "must be a string; got integer 17"),  # wrong type
    7: (None, "trace_id", "must not be empty"),
    8: ("st-unknown", "status", 'got string "done"'),           # status unknown
    9: ("st-missing", "status", "is required"),
    10: ("task-missing", "task", "is required"),
    11: ("task-type", "task", "must be a string; got array"),
    12: ("steps-str", "steps", "must be a list of step objects; got string"),  # steps not a list
    13: ("steps-missing", "steps", "is required for a complete run"),
    14: ("step-not-obj", "steps[0]", "a step must be an object; got string"),
    15: ("idx-missing", "steps[1].index", "is required (give every step an index, or none"),
    16: ("idx-negative", "steps[0].index", "non-negative integer; got -1"),  # negative index
    17: ("idx-float", "steps[0].index", "got number 1.5"),
    18: ("idx-bool", "steps[0].index", "got boolean true"),
    19: ("idx-dup", "steps[1].index", "duplicated step index 0"),           # duplicated index
    20: ("action-missing", "steps[0].action", "is required"),
    21: ("cons-str", "steps[0].consequential", 'must be true or false; got string "true"'),
    22: ("conf-int", "steps[0].needs_confirmation", "must be true or false; got integer 1"),
    23: ("target-num", "steps[0].target", "must be a string or null; got integer 42"),
    24: ("domain-num", "domain", "must be a string or null"),
    25: ("guide-list", "guide", "must be an object or null; got array"),
    26: ("counts-neg", "step_counts.agent", "non-negative integer; got -2"),
    27: ("counts-str", "step_counts.agent", 'got string "3"'),
    28: ("idx-huge", "steps[0].index", "non-negative integer"),
    30: ("ip-1", None, "not valid JSON"),                        # a mid-write line (its id read for the ledger)
    34: (None, None, "must be a JSON object; got null"),        # a bare null (crashes Arrow 26)
    35: ("bad-text", "task", "not valid Unicode text"),         # an unpaired surrogate escape
}


def test_malformed_file_every_record_in_the_ledger_and_the_load_continues():
    ing = ingest_traces(MALFORMED)
    led = ing.ledger.set_index("record")
    # 35 lines, one blank (not a record)
    assert_ledger_accounts(ing, 34)
    assert 32 not in led.index
    for line, (tid, fld, text) in MALFORMED_EXPECTED.items():
        row = led.loc[line]
        assert row["status"] == "dropped", line
        assert row["reason"].startswith("malformed: "), (line, row["reason"])
        assert text in row["reason"], (line, row["reason"])
        assert (row["field"] if isinstance(row["field"], str) else None) == fld, line
        assert (row["trace_id"] if isinstance(row["trace_id"], str) else None) == tid, line
        assert row["source"] == str(MALFORMED)
    assert len(MALFORMED_EXPECTED) >= 20
    assert ing.runs["trace_id"].tolist() == ["ok-1", "ok-2"]
    assert led.loc[31, "reason"] == "in_progress"
    assert led.loc[33, "reason"] == "duplicate trace_id: identical to record 1"


@pytest.mark.parametrize("line", sorted(MALFORMED_EXPECTED))
def test_each_malformed_record_raises_with_file_line_field_when_strict(tmp_path, line):
    lines = MALFORMED.read_text(encoding="utf-8").split("\n")
    good = lines[0]
    bad = lines[line - 1]
    f = tmp_path / "one.jsonl"
    f.write_text(good + "\n" + bad + "\n" + good.replace("ok-1", "ok-9") + "\n", encoding="utf-8")
    tid, fld, text = MALFORMED_EXPECTED[line]
    with pytest.raises(SchemaViolation) as e:
        read_traces(f, strict=True)
    err = e.value
    assert isinstance(err, InputError)
    assert (err.file, err.record, err.field) == (str(f), 2, fld)
    assert text in str(err)
    assert str(err).startswith(f"{f}: line 2")
    # default: the record goes to the ledger, the rest of the load continues
    recs = read_traces(f)
    assert recs.runs["trace_id"].tolist() == ["ok-1", "ok-9"]
    assert recs.ledger["status"].tolist() == ["kept", "dropped", "kept"]
    assert text in recs.ledger["reason"].iloc[1]


def test_the_same_malformations_from_python_records(tmp_path):
    # a list of dicts goes through the per-record validator directly: same ledger
    lines = [ln for ln in MALFORMED.read_text(encoding="utf-8").split("\n") if ln.strip()]
    recs = []
    for ln in lines:
        try:
            recs.append(json.loads(ln))
        except json.JSONDecodeError:
            continue
    from_list = read_traces(recs)
    from_file = read_traces(write_jsonl(tmp_path / "ok.jsonl", recs))
    for col in ("trace_id", "status", "reason", "field"):
        pd.testing.assert_series_equal(from_list.ledger[col], from_file.ledger[col])
    pd.testing.assert_frame_equal(from_list.runs, from_file.runs)


def test_non_utf8_bytes_in_one_line():
    ing = ingest_traces(DATA / "bad_utf8_line.jsonl")
    assert ing.runs["trace_id"].tolist() == ["u-1", "u-3"]
    row = ing.ledger.iloc[1]
    assert (row["record"], row["status"]) == (2, "dropped")
    assert "not valid UTF-8" in row["reason"]
    with pytest.raises(SchemaViolation, match="line 2.*not valid UTF-8"):
        ingest_traces(DATA / "bad_utf8_line.jsonl", strict=True)


@pytest.mark.parametrize("name,text", [("empty.jsonl", "empty"), ("blank_only.jsonl", "empty"),
                                       ("utf16.jsonl", "not UTF-8"), ("missing.jsonl", "not found")])
def test_unreadable_files_raise_in_both_modes(name, text):
    for strict in (False, True):
        with pytest.raises(UnreadableInput, match=text) as e:
            ingest_traces(DATA / name, strict=strict)
        assert e.value.file == str(DATA / name)


def test_a_directory_and_a_csv_are_not_trace_files(tmp_path):
    with pytest.raises(UnreadableInput, match="directory"):
        ingest_traces(tmp_path)
    with pytest.raises(UnreadableInput, match="JSONL"):
        ingest_traces(BAD_ANSWERS)


def test_a_json_array_file_is_read_like_jsonl(tmp_path):
    recs = _sample_records(8, seed=2)
    (tmp_path / "t.json").write_text(json.dumps(recs), encoding="utf-8")
    _assert_same(ingest_traces(tmp_path / "t.json"), ingest_traces(recs), ledger=False)


def test_not_a_parquet_file(tmp_path):
    f = tmp_path / "t.parquet"
    f.write_bytes(b"PAR1 but not really")
    with pytest.raises(UnreadableInput, match="Parquet"):
        ingest_traces(f)


#: answers_malformed.csv: file line -> (field, text in the reason).  Line 1 is the header.
ANSWERS_EXPECTED = {
    3: ("answer", 'unknown answer word: "maybe" for x_task'),
    4: ("measure", 'unknown measure: "x_wow"'),
    5: ("step", "is required for the per-step measure x_ctx"),
    6: ("step", "must be empty for the trace-level measure x_task"),
    7: ("step", 'non-negative integer or empty; got string "two"'),
    8: ("step", "non-negative integer or empty"),
    9: ("step", "non-negative integer or empty"),
    10: ("confidence", "must be a number in [0, 1]; got 1.7"),
    11: ("confidence", 'got string "high"'),
    12: ("cost", "finite number >= 0; got -1.0"),
    13: ("rater", "is required"),
    14: (None, "has 11 fields; the header has 9"),
    15: ("trace_id", "is required"),
    16: ("step", "step not in run"),
    17: ("trace_id", "answer without run"),
    19: ("answer", "duplicate answer: conflicting answers"),
    20: ("answer", "duplicate answer: conflicting answers"),
}


def test_malformed_answers_each_in_the_ledger():
    ing = ingest_traces(MALFORMED, answers=BAD_ANSWERS)
    led = ing.ledger[ing.ledger["kind"] == "answer"].set_index("record")
    n_trace_records = 34
    assert len(led) == 19  # 20 lines, one header
    for line, (fld, text) in ANSWERS_EXPECTED.items():
        row = led.loc[line]
        assert row["status"] == "dropped", line
        assert text in row["reason"], (line, row["reason"])
        assert (row["field"] if isinstance(row["field"], str) else None) == fld, line
    assert led.loc[[2, 18], "status"].tolist() == ["kept", "kept"]
    a = ing.answers
    assert a["answer"].tolist() == ["yes", "cannot_tell"]
    assert a["confidence"].tolist() == [0.9, 0.4]
    assert a["latency_ms"].tolist() == [850.0, 900.0]
    assert a["rater_version"].tolist() == ["v1", "v1"]
    assert_ledger_accounts(ing, n_trace_records + 19)


def test_malformed_answers_strict_names_file_line_field():
    with pytest.raises(SchemaViolation) as e:
        read_answers(BAD_ANSWERS, strict=True)
    assert (e.value.file, e.value.record, e.value.field) == (str(BAD_ANSWERS), 3, "answer")


@pytest.mark.parametrize("rec,fld,text", [
    ({"trace_id": "a", "measure": "x_task", "rater": "r", "answer": True}, "answer", "must be a string"),
    ({"trace_id": 5, "measure": "x_task", "rater": "r", "answer": "yes"}, "trace_id", "must be a string"),
    ({"trace_id": "a", "measure": "x_ctx", "rater": "r", "answer": "yes", "step": True}, "step",
     "non-negative integer"),
    ({"trace_id": "a", "measure": "x_task", "rater": "r", "answer": "yes", "latency_ms": "slow"},
     "latency_ms", "finite number"),
    ({"trace_id": "a", "measure": "x_task", "rater": "r", "answer": "yes", "rater_version": 2},
     "rater_version", "must be a string or empty"),
])
def test_answer_records_with_wrong_types(rec, fld, text):
    a = read_answers([rec])
    assert a.table.empty and a.ledger["field"].iloc[0] == fld and text in a.ledger["reason"].iloc[0]
    with pytest.raises(SchemaViolation, match=text):
        read_answers([rec], strict=True)


def test_answers_file_missing_a_required_column_is_a_schema_violation(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("trace_id,measure,rater\na,x_task,j\n", encoding="utf-8")
    with pytest.raises(SchemaViolation, match="required column.*answer") as e:
        read_answers(f)
    assert e.value.field == "answer"


def test_empty_answer_tables_are_valid(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("trace_id,measure,step,rater,answer\n", encoding="utf-8")
    for src in (f, [], pd.DataFrame(columns=["trace_id", "measure", "rater", "answer"])):
        ing = ingest_traces([run("a")], answers=src)
        assert ing.answers.empty and list(ing.answers.columns) == list(ANSWER_COLUMNS)
        assert_ledger_accounts(ing, 1)
    (tmp_path / "e.csv").write_bytes(b"")
    with pytest.raises(UnreadableInput, match="empty"):
        ingest_traces([run("a")], answers=tmp_path / "e.csv")


def test_answers_jsonl_with_bad_lines(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text('{"trace_id": "a", "measure": "x_task", "rater": "j", "answer": "yes"}\n'
                 '{"trace_id": "a", "measure": "x_task", "rater": "k", "answ\n'
                 '[1]\n'
                 '{"trace_id": "a", "measure": "x_eff", "rater": "j", "answer": "A few"}\n',
                 encoding="utf-8")
    a = read_answers(f)
    assert a.table["answer"].tolist() == ["yes", "a_few"]
    assert a.ledger["record"].tolist() == [1, 2, 3, 4]
    assert "not valid JSON" in a.ledger["reason"].iloc[1]
    assert "must be a JSON object" in a.ledger["reason"].iloc[2]


def test_csv_with_blank_lines_and_quoted_newlines_keeps_line_numbers(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text('trace_id,measure,step,rater,answer\n'
                 'a,x_task,,"judge\nwith newline",yes\n'
                 '\n'
                 'a,x_task,,j2,nope\n', encoding="utf-8")
    a = read_answers(f)
    assert a.ledger["record"].tolist() == [2, 5]
    assert a.table["rater"].tolist() == ["judge\nwith newline"]


def test_duplicate_identical_answers_keep_the_first():
    row = {"trace_id": "a", "measure": "x_task", "rater": "j", "answer": "yes"}
    ing = ingest_traces([run("a")], answers=[row, dict(row, answer="Yes")])
    assert len(ing.answers) == 1
    assert ing.ledger["reason"].iloc[2] == "duplicate answer: identical to record 1"


# --------------------------------------------------------------------------- readers agree


def _sample_records(n=40, seed=0):
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        k = rng.randint(0, 6)
        steps = [step(j, rng.choice(["tap", "type", "buy"]), rng.choice([None, "ok", "field"]),
                      rng.choice([None, f"s{j}"]), rng.random() < 0.3, rng.random() < 0.3)
                 for j in range(k)]
        rng.shuffle(steps)
        rec = run(f"t{i:03d}", task=rng.choice(["Buy a mug", "Email Bob", "Book a flight"]),
                  status="in_progress" if rng.random() < 0.1 else "complete", steps=steps)
        if rng.random() < 0.5:
            rec["domain"] = rng.choice(["shopping", "email"])
        if rng.random() < 0.5:
            rec["agent"] = rng.choice(["ckpt-a", "ckpt-b"])
        if rng.random() < 0.5:
            rec["step_counts"] = {"recorder": k + rng.choice([0, 0, 1]), "agent": k}
        if rng.random() < 0.3:
            rec["guide"] = {"id": "g1", "reference_id": rng.choice(["g1", "g2"]),
                            "steps": [{"id": "s1", "action": "tap"}], "must_keep": ["s1"]}
        recs.append(rec)
    return recs


def _sample_answers(recs, seed=0):
    rng = random.Random(seed)
    rows = []
    for r in recs:
        for rater in ("j1", "j2"):
            rows.append({"trace_id": r["trace_id"], "measure": "x_task", "step": None, "rater": rater,
                         "answer": rng.choice(["yes", "No", "cannot tell"]), "confidence": 0.5,
                         "cost": 0.01, "latency_ms": 100.0, "rater_version": "v1"})
            for s in r["steps"]:
                rows.append({"trace_id": r["trace_id"], "measure": "x_ctx", "step": s["index"],
                             "rater": rater, "answer": rng.choice(["yes", "no"]), "confidence": None,
                             "cost": None, "latency_ms": None, "rater_version": None})
    return rows


def _assert_same(a: Ingested, b: Ingested, *, ledger=True):
    for name in ("runs", "steps", "answers", "labels", "step_count_disagreements"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), obj=name)
    if ledger:
        cols = ["record", "trace_id", "kind", "status", "reason", "field"]
        pd.testing.assert_frame_equal(a.ledger[cols], b.ledger[cols])


def test_jsonl_parquet_dataframe_and_list_give_the_same_tables(tmp_path):
    recs = _sample_records()
    answers = _sample_answers(recs)
    f = write_jsonl(tmp_path / "t.jsonl", recs)
    adf0 = pd.DataFrame(answers)
    batch = ingest_traces(f, answers=adf0)
    from_list = ingest_traces(recs, answers=answers)
    _assert_same(batch, from_list)
    import pyarrow.json as pj

    pq.write_table(pj.read_json(f), tmp_path / "t.parquet")
    _assert_same(batch, ingest_traces(tmp_path / "t.parquet", answers=pd.DataFrame(answers)))
    df = pd.DataFrame(recs)
    _assert_same(batch, ingest_traces(df, answers=pd.DataFrame(answers)))
    # a DataFrame read back from Parquet: numpy arrays and numpy scalars inside cells
    _assert_same(batch, ingest_traces(pd.read_parquet(tmp_path / "t.parquet"), answers=adf0))
    # answers as CSV, JSONL and Parquet files
    adf = pd.DataFrame(answers)
    adf.to_csv(tmp_path / "a.csv", index=False)
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answers))
    adf.to_parquet(tmp_path / "a.parquet")
    for path in ("a.csv", "a.jsonl", "a.parquet"):
        other = ingest_traces(f, answers=tmp_path / path)
        _assert_same(batch, other, ledger=False)
        assert len(other.ledger) == len(batch.ledger)


def test_online_ingest_one_gives_exactly_the_batch_rows(tmp_path):
    # seed 002 Scope: "the same contract is designed to run online, scoring a run as
    # it completes"; issue 2: one run online gives exactly the row the batch gives.
    recs = _sample_records(16, seed=3)
    answers = pd.DataFrame(_sample_answers(recs, seed=3))
    labels = answers[answers["measure"] == "x_task"].assign(rater="human")
    batch = ingest_traces(write_jsonl(tmp_path / "t.jsonl", recs), answers=answers, labels=labels)
    n_checked = 0
    for rec in recs:
        if rec["status"] != "complete":
            continue
        one = ingest_one(rec, answers=answers[answers["trace_id"] == rec["trace_id"]],
                         labels=labels[labels["trace_id"] == rec["trace_id"]])
        pos = int(np.flatnonzero(batch.runs["trace_id"] == rec["trace_id"])[0])
        pd.testing.assert_frame_equal(one.runs, _used(batch.runs.iloc[[pos]].reset_index(drop=True)))
        for name in ("steps", "answers", "labels", "step_count_disagreements"):
            b = getattr(batch, name)
            b = b[b["run_pos"] == pos].reset_index(drop=True)
            b["run_pos"] = np.zeros(len(b), POSITION_DTYPE)
            o = getattr(one, name)
            if "step_pos" in b.columns:
                first = int(np.flatnonzero(batch.steps["run_pos"] == pos)[0]) if rec["steps"] else 0
                b["step_pos"] = b["step_pos"] - first
            pd.testing.assert_frame_equal(o, _used(b), obj=name)
        n_checked += 1
    assert n_checked >= 10


def _used(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its categoricals holding only the categories its rows use (a slice of a
    batch table keeps the batch's categories; a table ingest returns holds no unused one)."""
    return df.assign(**{c: df[c].cat.remove_unused_categories() for c in df.columns
                        if isinstance(df[c].dtype, pd.CategoricalDtype)})


def test_ingest_one_is_strict_by_default():
    with pytest.raises(SchemaViolation, match="steps"):
        ingest_one(run("a", steps="nope"))
    one = ingest_one(run("a", steps="nope"), strict=False)
    assert one.runs.empty and one.ledger["status"].tolist() == ["dropped"]
    with pytest.raises(TypeError):
        ingest_one([run("a")])


def test_fast_path_semantic_errors_match_the_validator(tmp_path):
    # lines Arrow parses happily but the contract refuses: the column checks flag
    # them and the per-record validator explains them
    recs = [run("a"), run("", steps=[]), run("b", status="done"), run("c", steps=[step(0), step(0)]),
            run("d", steps=[step(-3)]), run("e", task=""), {"trace_id": "f", "status": "in_progress"},
            run("g", step_counts={"x": -1}), run("h", steps=[dict(step(0), action="")]), run("i")]
    f = write_jsonl(tmp_path / "t.jsonl", recs)
    fast = read_traces(f)
    slow = read_traces(recs)
    for col in ("trace_id", "status", "reason", "field"):
        pd.testing.assert_series_equal(fast.ledger[col], slow.ledger[col])
    assert fast.runs["trace_id"].tolist() == ["a", "i"]
    assert fast.ledger["status"].tolist() == ["kept"] + ["dropped"] * 8 + ["kept"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_record_order_does_not_change_the_tables(tmp_path, seed, data):
    recs = _sample_records(12, seed=seed)
    perm = data.draw(st.permutations(range(len(recs))))
    a = ingest_traces(recs)
    b = ingest_traces([recs[i] for i in perm])

    def canon(ing):
        runs = ing.runs.drop(columns=["guide"]).sort_values("trace_id").reset_index(drop=True)
        steps = ing.steps.drop(columns=["run_pos"]).sort_values(["trace_id", "index"]).reset_index(drop=True)
        led = ing.ledger[["trace_id", "status", "reason"]].sort_values("trace_id").reset_index(drop=True)
        return runs, steps, led

    for x, y in zip(canon(a), canon(b), strict=True):
        pd.testing.assert_frame_equal(x, y)


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=32),
                    st.text(max_size=3))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fast_path_and_validator_agree_on_random_records(tmp_path, data):
    """Random perturbations of valid records: file (Arrow) and list (validator) agree."""
    recs = _sample_records(6, seed=data.draw(st.integers(0, 100)))
    for _ in range(data.draw(st.integers(0, 4))):
        r = recs[data.draw(st.integers(0, len(recs) - 1))]
        key = data.draw(st.sampled_from(["trace_id", "task", "status", "domain", "steps", "agent",
                                         "step_counts", "step.index", "step.action", "step.target",
                                         "step.consequential"]))
        val = data.draw(_scalar)
        if key.startswith("step."):
            # an earlier draw may have replaced `steps` with a scalar: only perturb a real step
            if isinstance(r["steps"], list) and r["steps"] and isinstance(r["steps"][0], dict):
                r["steps"][0][key[5:]] = val
        else:
            r[key] = val
    f = write_jsonl(tmp_path / "p.jsonl", recs)
    fast, slow = read_traces(f), read_traces(recs)
    # a float inf or NaN is written as Infinity / NaN, which is not JSON: in the file the line is
    # malformed as such (strict JSON, issue 15), in the list the validator names the field
    from evaltk import _io

    def strict(line: str) -> bool:
        try:
            _io.loads_json(line)
        except InputError:
            return False
        return True

    ok = np.array([strict(ln) for ln in f.read_text("utf-8").splitlines() if ln.strip()])
    assert (fast.ledger["status"][~ok] == "dropped").all()
    assert fast.ledger["reason"][~ok].str.contains("is not JSON").all()
    assert (slow.ledger["status"][~ok] == "dropped").all()
    for col in ("trace_id", "status", "reason", "field"):
        pd.testing.assert_series_equal(fast.ledger[col][ok].astype(object), slow.ledger[col][ok].astype(object))
    pd.testing.assert_frame_equal(fast.runs, slow.runs)
    pd.testing.assert_frame_equal(fast.steps, slow.steps)


def test_ledger_accounts_for_every_record_on_a_mixed_load(tmp_path):
    recs = _sample_records(50, seed=7)
    answers = _sample_answers(recs, seed=7)
    answers.append({"trace_id": "ghost", "measure": "x_task", "rater": "j1", "answer": "yes"})
    answers.append({"trace_id": recs[0]["trace_id"], "measure": "x_task", "rater": "j9",
                    "answer": "perhaps"})
    labels = [{"trace_id": r["trace_id"], "measure": "x_eff", "rater": "h", "answer": "A few"}
              for r in recs[:10]]
    f = write_jsonl(tmp_path / "t.jsonl", recs)
    with f.open("a", encoding="utf-8") as fh:
        fh.write("{broken\n")
    ing = ingest_traces(f, answers=answers, labels=labels)
    assert_ledger_accounts(ing, len(recs) + 1 + len(answers) + len(labels))
    assert ing.summary()["n"].sum() == len(ing.ledger)


def test_several_answer_sources_concatenate(tmp_path):
    a1 = [{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes"}]
    p = tmp_path / "a2.csv"
    pd.DataFrame([{"trace_id": "a", "measure": "x_task", "rater": "j2", "answer": "maybe"},
                  {"trace_id": "a", "measure": "x_task", "rater": "j3", "answer": "no"}]
                 ).to_csv(p, index=False)
    ing = ingest_traces([run("a")], answers=[pd.DataFrame(a1), p])
    assert ing.answers["rater"].tolist() == ["j1", "j3"]
    led = ing.ledger[ing.ledger["kind"] == "answer"]
    assert led["source"].tolist() == ["<dataframe>", str(p), str(p)]
    assert led["record"].tolist() == [1, 2, 3]
    assert led["status"].tolist() == ["kept", "dropped", "kept"]


def test_guide_nulls_read_as_absent_in_every_path(tmp_path):
    recs = [run("a", guide={"id": "g1", "reference_id": None, "steps": [{"id": "s1"}]}),
            run("b", guide={"id": "g2", "must_keep": ["s1"], "steps": [{"id": "s1", "action": "tap"}]}),
            run("c")]
    fast = ingest_traces(write_jsonl(tmp_path / "g.jsonl", recs))
    slow = ingest_traces(recs)
    assert fast.runs["guide"].tolist() == slow.runs["guide"].tolist() == [
        {"id": "g1", "steps": [{"id": "s1"}]},
        {"id": "g2", "must_keep": ["s1"], "steps": [{"id": "s1", "action": "tap"}]}, None]


# --------------------------------------------------------------------------- CLI


def _cli(capsys, *args):
    from evaltk.cli._main import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_ingest_exit_codes_and_json(tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", [run("a"), {"trace_id": "b", "status": "in_progress"}])
    code, out, err = _cli(capsys, "ingest", good, "--json", "--out", tmp_path / "out")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["records"], doc["kept"], doc["dropped"], doc["runs"]) == (2, 1, 1, 1)
    assert (tmp_path / "out" / "ledger.csv").exists()
    assert len(pd.read_parquet(tmp_path / "out" / "steps.parquet")) == 2
    code, out, _ = _cli(capsys, "ingest", MALFORMED, "--answers", BAD_ANSWERS)
    assert code == 0  # dropped records are in the ledger (README, "Exit codes")
    assert "malformed" in out
    code, _, err = _cli(capsys, "ingest", MALFORMED, "--strict")
    assert code == 65
    assert "line 2" in err
    code, _, err = _cli(capsys, "ingest", DATA / "empty.jsonl")
    assert code == 66
    assert _cli(capsys, "ingest")[0] == 64


# --------------------------------------------------------------------------- JSON Schemas


def _schema(name):
    import jsonschema

    path = Path(__file__).resolve().parent.parent.parent / "evaltk" / "schemas" / name
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_trace_schema_agrees_with_the_reader():
    v = _schema("trace.schema.json")
    for rec in _sample_records(30, seed=11):
        assert not list(v.iter_errors(rec)), rec["trace_id"]
    # every malformed line the reader refuses, the schema refuses too, except the one
    # rule JSON Schema cannot express (unique step indices within a run)
    not_expressible = {15, 19, 35}  # index on every step or none; unique indices; valid text
    lines = MALFORMED.read_text(encoding="utf-8").split("\n")
    for line in MALFORMED_EXPECTED:
        try:
            obj = json.loads(lines[line - 1])
        except json.JSONDecodeError:
            continue
        errors = list(v.iter_errors(obj))
        assert bool(errors) != (line in not_expressible), (line, obj)
    # the reader keeps what the schema accepts
    assert not list(v.iter_errors(json.loads(lines[0])))
    assert not list(v.iter_errors({"trace_id": "x", "status": "in_progress", "steps": "partial"}))


def test_answers_schema_accepts_every_normalised_row():
    v = _schema("answers.schema.json")
    recs = _sample_records(10, seed=5)
    ing = ingest_traces(recs, answers=_sample_answers(recs, seed=5))
    rows = ing.answers.drop(columns=["run_pos", "step_pos"]).astype(object)
    rows = rows.where(rows.notna(), None).to_dict("records")
    assert rows
    for r in rows:
        r = {k: (int(x) if k == "step" and x is not None else x) for k, x in r.items()}
        assert not list(v.iter_errors(r)), r
    bad = {"trace_id": "a", "measure": "x_task", "rater": "j", "answer": "maybe"}
    assert list(v.iter_errors(bad))
    assert list(v.iter_errors(dict(bad, answer="yes", step=2)))
    assert list(v.iter_errors({"trace_id": "a", "measure": "x_ctx", "rater": "j", "answer": "yes"}))


def test_bad_lines_in_a_large_file_keep_the_fast_path_for_the_rest(tmp_path, monkeypatch):
    """A truncated last line (a file still being written) or a type that changes between
    lines makes Arrow refuse the whole file; ingest bisects, so only small chunks around
    the bad lines go through the per-record validator, with the same result."""
    import evaltk.ingest._readers as tr

    recs = _sample_records(600, seed=9)
    lines = [json.dumps(r) for r in recs]
    lines[50] = lines[50][:40]                                    # truncated JSON
    lines[333] = json.dumps(dict(recs[333], trace_id=333))         # type changes
    lines.append(json.dumps(run("last"))[:-20])                    # mid-write last line
    f = tmp_path / "big.jsonl"
    f.write_text("\n".join(lines), encoding="utf-8")
    seen = []
    real = tr._python_piece

    def spy(records, *args, **kw):
        seen.append(len(records))
        return real(records, *args, **kw)

    monkeypatch.setattr(tr, "_python_piece", spy)
    fast = read_traces(f)
    assert 0 < sum(seen) <= 2 * 3 * tr._MIN_CHUNK  # at most two small chunks per bad line
    led = fast.ledger
    assert len(led) == 601
    assert led.loc[[50, 333, 600], "status"].tolist() == ["dropped"] * 3
    assert "not valid JSON" in led.loc[50, "reason"] and led.loc[333, "field"] == "trace_id"
    # the same as the validator on every record
    monkeypatch.setattr(tr, "_python_piece", real)
    slow = read_traces([tr._parse_line(ln.encode()) for ln in lines])
    for col in ("trace_id", "status", "reason", "field"):
        pd.testing.assert_series_equal(fast.ledger[col], slow.ledger[col])
    for name in ("runs", "steps", "step_count_disagreements"):
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(slow, name))


# --------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_agentrewardbench_expert_annotations_as_labels(shared_data):
    """AgentRewardBench (Lu et al., 2025): 1,408 expert annotations of 1,302 web-agent
    trajectories, 106 of them annotated twice.  Read as human labels of x_task
    (Successful / Unsuccessful / Unsure -> yes / no / unsure), joined to one minimal run
    per trajectory: every row accounted for, "Unsure" read as cannot_tell (an honest
    abstention, not a class), the annotator " H" kept verbatim (real data is messy)."""
    ann = pd.read_csv(shared_data / "agentrewardbench" / "annotations.csv")
    ann["trace_id"] = ann["benchmark"] + "/" + ann["task_id"] + "/" + ann["model_name"]
    labels = pd.DataFrame({
        "trace_id": ann["trace_id"], "measure": "x_task", "rater": ann["annotator_name"],
        "answer": ann["trajectory_success"].map({"Successful": "yes", "Unsuccessful": "no",
                                                 "Unsure": "unsure"}),
    })
    runs = [run(t, task=f"web task {t}", domain=t.split("/")[0], steps=[])
            for t in ann["trace_id"].unique()]
    ing = ingest_traces(runs, labels=labels)
    assert len(ing.runs) == 1302
    assert_ledger_accounts(ing, 1302 + 1408)
    assert len(ing.labels) == 1408
    assert ing.labels["answer"].value_counts().to_dict() == {"no": 1012, "yes": 395, "cannot_tell": 1}
    assert (ing.labels.groupby("trace_id").size() == 2).sum() == 106
    assert " H" in set(ing.labels["rater"])


def test_chunked_reading_gives_the_same_tables(tmp_path, monkeypatch):
    """Large JSONL is parsed in newline-aligned chunks; chunk edges change nothing:
    line numbers, duplicates across chunks, bad and blank lines inside chunks."""
    import evaltk.ingest._readers as tr

    recs = _sample_records(120, seed=4)
    lines = [json.dumps(r) for r in recs]
    lines[10] = lines[10][:30]                       # truncated
    lines.insert(40, "")                             # blank line (not a record)
    lines.append(json.dumps(recs[3]))                # identical duplicate, far away
    lines.append(json.dumps(dict(recs[5], task="Something else")))  # conflicting duplicate
    f = tmp_path / "c.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = read_traces(f)
    monkeypatch.setattr(tr, "_CHUNK_BYTES", 3000)
    assert len(tr._chunk_bounds(f.read_bytes(), tr._CHUNK_BYTES)) > 10
    chunked = read_traces(f)
    pd.testing.assert_frame_equal(whole.ledger, chunked.ledger)
    for name in ("runs", "steps", "step_count_disagreements"):
        pd.testing.assert_frame_equal(getattr(whole, name), getattr(chunked, name))
    led = chunked.ledger
    assert len(led) == len(lines) - 1
    assert led["record"].tolist() == [i + 1 for i, ln in enumerate(lines) if ln]
    assert led["reason"].iloc[-2].startswith("duplicate trace_id: identical to record 4")
    assert led["reason"].iloc[-1].startswith("duplicate trace_id: conflicting records 6, ")


# --------------------------------------------------------------------------- fuzz

_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["trace_id", "task", "status", "steps", "index", "action", "target",
                         "screen", "consequential", "needs_confirmation", "domain", "guide",
                         "step_counts", "agent", "x"]), kids, max_size=6),
    max_leaves=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.one_of(_json_value.map(json.dumps), st.binary(max_size=30).map(
    lambda b: b.decode("latin-1"))), min_size=1, max_size=12), seed=st.integers(0, 50))
def test_fuzz_any_lines_give_a_ledger_or_an_input_error(tmp_path, values, seed):
    """Arbitrary JSON values and junk bytes mixed with good records: the load either
    completes with one ledger row per non-blank line, or raises one of evaltk's input
    errors; never anything from deep inside pandas or json."""
    good = [json.dumps(r) for r in _sample_records(3, seed=seed)]
    lines = [v.replace("\n", " ").replace("\r", " ") for v in values] + good
    f = tmp_path / "fuzz.jsonl"
    f.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape"))
    n_records = sum(1 for ln in f.read_bytes().split(b"\n") if ln.strip())
    try:
        recs = read_traces(f)
    except UnreadableInput:
        return
    assert len(recs.ledger) == n_records
    assert recs.ledger["status"].isin(["kept", "dropped"]).all()
    try:
        read_traces(f, strict=True)
    except SchemaViolation as e:
        assert e.file == str(f) and isinstance(e.record, int)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(st.one_of(st.text(max_size=5), st.sampled_from(
    ["a", "x_task", "x_ctx", "x_eff", "yes", "Cannot tell", "1", "-1", "0.5", ""])),
    min_size=3, max_size=7), min_size=1, max_size=10))
def test_fuzz_answer_csv_rows_give_a_ledger_or_an_input_error(tmp_path, rows):
    import csv as csvmod

    f = tmp_path / "a.csv"
    with f.open("w", encoding="utf-8", newline="") as fh:
        w = csvmod.writer(fh)
        w.writerow(["trace_id", "measure", "step", "rater", "answer"])
        w.writerows(rows)
    try:
        ing = ingest_traces([run("a", steps=[step(0), step(1)])], answers=f)
    except InputError:
        return
    n = sum(1 for r in rows if any(c.strip() for c in r) or len(r) > 1)
    assert len(ing.ledger[ing.ledger["kind"] == "answer"]) == n
    assert set(ing.answers["answer"]) <= {"yes", "no", "cannot_tell", "none", "a_few", "lots"}


# pandas' Arrow-backed ``str`` (spelled so that pandas 2.3, where ``astype("str")`` turns
# None into "None", builds the same frame as pandas 3) and Python objects
@pytest.mark.parametrize("dtype", [str_dtype(), object], ids=["str", "object"])
def test_a_null_required_answer_field_is_malformed_in_every_column_type(dtype):
    """A null rater, answer, measure or trace_id is "malformed: is required", whether the
    column holds Python objects or Arrow strings (a str column's nulls were once kept)."""
    runs = [{"trace_id": "a", "task": "t", "status": "complete", "steps": []}]
    a = pd.DataFrame({"trace_id": ["a", "a", "a", None, "a"], "measure": ["x_task", "x_task", None, "x_task", "x_task"],
                      "rater": ["j1", None, "j3", "j4", "j5"], "answer": [None, "yes", "yes", "no", "yes"]})
    a = a.astype({c: dtype for c in a.columns})
    ing = ingest_traces(runs, a)
    led = ing.ledger[ing.ledger["kind"] == "answer"]
    assert led["status"].tolist() == ["dropped"] * 4 + ["kept"]
    assert led["field"].tolist()[:4] == ["answer", "rater", "measure", "trace_id"]
    assert (led["reason"].iloc[:4] == "malformed: is required").all()
    assert ing.answers["rater"].tolist() == ["j5"]


@pytest.mark.slow  # a subprocess per case
def test_strict_parquet_with_a_bad_type_exits_65_and_never_aborts(tmp_path):
    """pyarrow 26 aborts the interpreter at exit (134) after a Parquet table read through
    io.BytesIO is converted to Python objects; the per-record validator does exactly that
    on a column of an unexpected type.  Run in a fresh interpreter so an abort would show."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"trace_id": [1, 2], "task": ["x", "y"], "status": ["complete", "complete"],
                             "steps": [[], []]}), p)
    for _ in range(4):  # the abort was a race at exit: several fresh interpreters
        res = subprocess.run([sys.executable, "-m", "evaltk", "ingest", str(p), "--strict"],
                             capture_output=True, text=True, check=False)
        assert res.returncode == 65, res.stderr
        assert "field `trace_id`" in res.stderr and "terminate" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "evaltk", "ingest", str(p)], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stderr  # dropped to the ledger (README, "Exit codes")


# --------------------------------------------------------------------------- answer paths agree

_ANSWER_FIELDS = ("trace_id", "measure", "step", "rater", "answer", "confidence", "cost", "latency_ms",
                  "rater_version")
_answer_cell = st.one_of(st.sampled_from(["", " ", "yes", "No", "cannot tell", "lots", "x_task", "X_CTX",
                                          "t_eff", "g_notes", "g_fidelity", "x_nope", "0", "2", "-1", "1.5",
                                          "1e3", "0.5", "inf", "nan", "abc", "j1"]),
                         st.text(alphabet="aXy_ 01.-", max_size=4))


@pytest.mark.parametrize("cell", ["0_0", "1_000", "\u0663", "2.5"])
def test_a_number_cell_reads_the_same_from_a_csv_and_from_records(tmp_path, cell):
    """Python's ``float`` accepts digit separators and non-ASCII digits ("1_000", "\u0663");
    the CSV path (Arrow's cast) refuses them, and so must the records path (found by the
    hypothesis test below, on a draw of "0_0")."""
    rows = [{"trace_id": "t1", "measure": "x_ctx", "step": cell, "rater": "j", "answer": "yes"}]
    f = tmp_path / "a.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    fast, slow = read_answers(f), read_answers(rows)
    assert fast.ledger["reason"].tolist() == slow.ledger["reason"].tolist()
    assert fast.ledger["status"].tolist() == ["dropped"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_answer_checks_agree_on_the_arrow_and_the_object_columns(tmp_path, data):
    """Random perturbations of valid answer rows, all cells text: the CSV file (Arrow string
    columns, vectorised checks) and the same rows as dicts (object columns, checked value by
    value) give the same ledger and the same table."""
    recs = _sample_records(4, seed=data.draw(st.integers(0, 100)))
    rows = [{c: "" if r[c] is None else str(r[c]) for c in _ANSWER_FIELDS}
            for r in _sample_answers(recs, seed=1)[:24]]
    for _ in range(data.draw(st.integers(0, 8))):
        row = rows[data.draw(st.integers(0, len(rows) - 1))]
        row[data.draw(st.sampled_from(_ANSWER_FIELDS))] = data.draw(_answer_cell)
    f = tmp_path / "a.csv"
    pd.DataFrame(rows, columns=list(_ANSWER_FIELDS)).to_csv(f, index=False)
    fast, slow = read_answers(f), read_answers(rows)
    assert fast.ledger["record"].tolist() == [n + 1 for n in slow.ledger["record"]]  # the header is line 1
    for col in ("trace_id", "status", "reason", "field"):
        pd.testing.assert_series_equal(fast.ledger[col], slow.ledger[col], check_dtype=False)
    cols = ["trace_id", "measure", "step", "rater", "answer", "confidence", "cost", "latency_ms"]
    pd.testing.assert_frame_equal(fast.table[cols], slow.table[cols], check_dtype=False)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_bare_non_finite_number_anywhere_is_malformed_on_the_arrow_path(tmp_path, token):
    # docs/limits.md: strict JSON refuses NaN, Infinity and 1e999; the trace reader finds
    # them in what Arrow read (at any depth, in a field no check reads), not by a byte scan
    clean = [json.dumps(run(f"r{i}")) for i in range(30)]
    where = [f'"extra": {{"a": [{{"b": [1.5, {token}]}}]}}', f'"guide": {{"weight": {token}}}',
             f'"steps": [{{"index": 0, "action": "tap", "score": {token}}}]']
    lines = list(clean)
    for k, w in enumerate(where):
        lines[3 + 9 * k] = lines[3 + 9 * k][:-1] + ", " + w + "}" if "steps" not in w else \
            json.dumps(run(f"r{3 + 9 * k}"))[:-1].rsplit(', "steps"', 1)[0] + ", " + w + "}"
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(lines) + "\n")
    led = read_traces(f).ledger
    bad = [3, 12, 21]
    dropped = led["record"][led["status"] == "dropped"].tolist()
    assert dropped == [b + 1 for b in bad], led[led["status"] == "dropped"]
    assert led["reason"][led["status"] == "dropped"].astype(str).str.startswith("malformed: not valid JSON").all()
    assert (led["status"] == "kept").sum() == len(lines) - len(bad)
