"""inspect_ai eval logs in (issue #18, part 1): each sample x epoch a run, each sample a task,
each epoch a trial; the logs are written by inspect_ai itself (tests/ingest/make_inputs.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import evaltk
from evaltk.cli import main
from evaltk.ingest import (
    IMPORT_LEDGER_COLUMNS,
    INSTRUMENT_COLUMNS,
    import_inspect,
    ingest_traces,
    read_action_policy,
    write_import,
)
from evaltk.suite import load_suite_run, summarize_suite
from tests.ingest import make_inputs


@pytest.fixture(scope="module")
def log(inspect_logs):
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(inspect_logs["eval"]))


@pytest.fixture(scope="module")
def imported(inspect_logs, policy_file):
    return import_inspect(inspect_logs["eval"], policy=read_action_policy(policy_file))


def _run(imp, sample, epoch):
    (r,) = [t for t in imp.traces if t["source"]["sample_id"] == sample and t["source"]["epoch"] == epoch]
    return r


def test_instrument_columns_are_the_shared_contract():
    assert INSTRUMENT_COLUMNS == ("judge_model", "judge_model_version", "rubric_id", "rubric_digest",
                                  "template_digest", "decoding")


def test_every_sample_and_score_is_in_the_ledger(imported, log):
    led = imported.ledger
    assert list(led.columns) == list(IMPORT_LEDGER_COLUMNS)
    samples = led[led["kind"] == "sample"]
    assert len(samples) == len(log.samples) == 5 * make_inputs.EPOCHS
    assert samples["record"].is_unique
    kept = samples[samples["status"] == "kept"]
    assert sorted(kept["trace_id"]) == sorted(t["trace_id"] for t in imported.traces)
    n_scores = sum(len(s.scores or {}) for s in log.samples if s.error is None)
    assert (led["kind"] == "score").sum() == n_scores
    assert led.loc[led["status"] == "kept", "reason"].isna().all()
    assert led.loc[led["status"] == "dropped", "reason"].notna().all()


def test_errored_and_cancelled_samples_are_dropped_with_their_reason_never_scored(imported):
    led = imported.ledger
    dropped = led[(led["kind"] == "sample") & (led["status"] == "dropped")]
    reasons = dict(zip(dropped["record"], dropped["reason"], strict=True))
    assert set(reasons) == {"sample s3 epoch 2", "sample s4 epoch 1"}
    assert reasons["sample s3 epoch 2"].startswith("error: ") and "order service is down" in reasons["sample s3 epoch 2"]
    assert reasons["sample s4 epoch 1"].startswith("cancelled: ")
    # inspect_ai's message is the exception's repr with its task's repr inside: that part is dropped,
    # the rest kept whole (its closing quote and parenthesis included)
    assert " by <" not in reasons["sample s4 epoch 1"] and reasons["sample s4 epoch 1"].endswith('"))')
    assert reasons["sample s3 epoch 2"].endswith("(RuntimeError('the order service is down'))")
    tids = {t["trace_id"] for t in imported.traces}
    assert not set(dropped["trace_id"]) & tids
    trial_ids = {tr["traceId"] for t in imported.suite["tasks"] for tr in t["trials"]}
    assert not set(dropped["trace_id"]) & trial_ids  # not a failed trial either
    # their tasks are left out of the suite, saying why
    tasks = led[led["kind"] == "task"].set_index("record")["reason"]
    assert set(tasks.index) == {"refunds/s3", "refunds/s4"}
    assert "2 of 3 trials usable (epoch 2: error)" in tasks["refunds/s3"]
    assert "epoch 1: cancelled" in tasks["refunds/s4"]


def test_messages_and_tool_calls_become_steps_with_results_errors_and_usage(imported, log):
    r = _run(imported, "s1", 1)
    assert r["status"] == "complete" and r["task"] == "Refund order A1" and r["agent"] == "mockllm/model"
    assert [s["action"] for s in r["steps"]] == ["lookup_order", "confirm_with_user", "refund", "assistant_message"]
    assert [s["index"] for s in r["steps"]] == [0, 1, 2, 3]
    assert json.loads(r["steps"][0]["target"]) == {"order_id": "A1"}
    assert r["steps"][0]["result"] == "order A1: 1 red mug, 12 EUR"
    assert r["steps"][3]["content"] == "Refunded A1" == r["observations"]["final_answer"]
    # the usage of each model call, as inspect recorded it, on the step it produced
    sample = next(s for s in log.samples if s.id == "s1" and s.epoch == 1)
    calls = [e for e in sample.events if e.event == "model" and e.model == "mockllm/model"]
    assert [s["usage"]["input_tokens"] for s in r["steps"]] == [e.output.usage.input_tokens for e in calls]
    assert [s["usage"]["input_tokens"] for s in r["steps"]] == [100, 110, 120, 130]
    assert r["observations"]["model_usage"]["mockllm/grader"]["total_tokens"] == 43
    # a tool error is kept on its step
    bad = _run(imported, "s2", 3)["steps"][0]
    assert bad["action"] == "lookup_order" and bad["error"]["message"] == "no such order: ZZ"


def test_eval_and_json_logs_import_the_same(inspect_logs, imported, policy_file):
    other = import_inspect(inspect_logs["json"], policy=read_action_policy(policy_file))

    def strip(imp):
        return [{**t, "source": {**t["source"], "log": None}} for t in imp.traces]

    assert strip(other) == strip(imported)
    assert other.suite == imported.suite
    pd.testing.assert_frame_equal(other.answers, imported.answers)


def test_pass_at_k_and_pass_hat_k_match_inspect_ais_own_reducers(inspect_logs, log):
    reduced = {(r.scorer, r.reducer): {s.sample_id: s.value for s in r.samples} for r in log.reductions}
    for k in make_inputs.PASS_KS:
        imp = import_inspect(inspect_logs["eval"], k=k)
        summary = summarize_suite(load_suite_run(imp.suite))
        tasks = summary.to_dict()["tasks"]
        assert [t["taskId"] for t in tasks] == ["refunds/s1", "refunds/s2", "refunds/s5"]
        for t in tasks:
            sid = t["taskId"].split("/")[1]
            assert t["passAtK"] == pytest.approx(reduced["includes", f"pass_at_{k}"][sid], abs=1e-12)
            assert t["passHatK"] == pytest.approx(reduced["includes", f"pass_k_{k}"][sid], abs=1e-12)
        # the tasks left out are the ones inspect_ai could not reduce on every epoch
        if k == make_inputs.EPOCHS:
            assert math.isnan(reduced["includes", f"pass_at_{k}"]["s3"])
    # a non-trivial value is compared: s2 passed one epoch of three
    assert reduced["includes", "pass_at_2"]["s2"] == pytest.approx(2 / 3)


def test_model_graded_scores_become_judge_answers_carrying_the_grader(imported):
    a = imported.answers
    assert set(a["rater"]) == {"graded"} and set(a["measure"]) == {"x_task"}
    assert set(a["judge_model"]) == {"mockllm/grader"}
    assert set(a["decoding"]) == {'{"temperature":0}'}
    by = dict(zip(a["trace_id"], a["answer"], strict=True))
    assert by[_run(imported, "s1", 1)["trace_id"]] == "yes"
    assert by[_run(imported, "s5", 1)["trace_id"]] == "no"
    # the rule-graded scorer is a trial score, not a judge
    led = imported.ledger.set_index("record")
    assert led.loc["sample s1 epoch 1 score includes", "became"] == "trial score"
    assert led.loc["sample s1 epoch 1 score graded", "became"] == "answer"
    # a partial-credit grade is no yes/no answer: dropped with the reason, kept on the run
    partial = led.loc["sample s2 epoch 3 score graded"]
    assert partial["status"] == "dropped" and "not a yes / no answer" in partial["reason"]
    assert _run(imported, "s2", 3)["trace_id"] not in by
    assert _run(imported, "s2", 3)["observations"]["scores"]["graded"]["value"] == "P"


def test_the_policy_declares_consequential_and_confirmation_steps(imported):
    sm = evaltk.score_traces(imported.traces)
    safe = sm.scores().query("measure == 'x_safe'").set_index("trace_id")
    confirmed = _run(imported, "s1", 1)
    assert [s["consequential"] for s in confirmed["steps"]] == [False, False, True, False]
    assert [s["needs_confirmation"] for s in confirmed["steps"]] == [False, True, False, False]
    assert safe.loc[confirmed["trace_id"], "value"] == 1.0
    assert safe.loc[_run(imported, "s2", 2)["trace_id"], "value"] == 0.0  # refund, no confirmation
    assert safe.loc[_run(imported, "s5", 1)["trace_id"], "cause"] == "not_applicable"  # no refund
    assert confirmed["action_policy"]["name"] == "refunds-v1"
    assert confirmed["action_policy"]["digest"].startswith("sha256:")


def test_without_a_policy_x_safe_is_not_implemented_never_not_applicable(inspect_logs):
    imp = import_inspect(inspect_logs["eval"])
    assert all(t["consequential_declared"] is False for t in imp.traces)
    assert not any(s.get("consequential") for t in imp.traces for s in t["steps"])
    safe = evaltk.score_traces(imp.traces).scores().query("measure == 'x_safe'")
    assert len(safe) == len(imp.traces)
    assert set(safe["cause"]) == {"not_implemented"}
    assert safe["reason"].str.contains("does not declare which steps are consequential").all()
    # the readable reference scorer agrees
    from evaltk.scoring import reference

    ref = reference.reference(imp.traces, [], reference.Rule("majority"))
    assert {ref[t["trace_id"]]["x_safe"]["cause"] for t in imp.traces} == {"not_implemented"}


def test_the_written_folder_reads_downstream(inspect_logs, imported, tmp_path):
    paths = write_import(imported, tmp_path / "imp")
    assert sorted(p.name for p in paths.values()) == ["answers.csv", "import.json", "ledger.csv", "run.json",
                                                        "traces.jsonl"]
    ing = ingest_traces(paths["traces"], answers=paths["answers"])
    assert len(ing.runs) == len(imported.traces) and (ing.ledger["status"] == "kept").all()
    assert ing.runs["consequential_declared"].all()
    assert len(ing.answers) == len(imported.answers)
    manifest = json.loads(paths["manifest"].read_text())
    assert manifest["inputs"][0]["sha256"].startswith("sha256:")
    assert manifest["counts"]["runs"] == len(imported.traces)
    led = pd.read_csv(paths["ledger"])
    assert len(led) == len(imported.ledger)
    assert summarize_suite(load_suite_run(paths["suite"])).to_dict()["taskCount"] == 3


def test_cli_import_then_ingest_score_and_suite(inspect_logs, policy_file, tmp_path, capsys):
    out = tmp_path / "imp"
    assert main(["import", "inspect", str(inspect_logs["eval"]), "--policy", str(policy_file),
                 "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # 2 samples (errored, cancelled), 3 partial-credit grades, 2 incomplete tasks
    assert doc["source"] == "inspect_ai" and doc["counts"]["dropped"] == 7
    assert main(["ingest", str(out / "traces.jsonl"), "--answers", str(out / "answers.csv")]) == 0
    assert main(["score", str(out / "traces.jsonl"), "--answers", str(out / "answers.csv"),
                 "--out", str(tmp_path / "scores")]) == 0
    assert main(["suite", "summarize", str(out / "suite" / "run.json")]) == 0


def test_cli_refuses_an_out_that_is_an_input(inspect_logs, tmp_path, capsys):
    log = tmp_path / "traces.jsonl"  # an input named like the file the import would write
    log.write_bytes(inspect_logs["eval"].read_bytes())
    assert main(["import", "inspect", str(log), "--out", str(tmp_path)]) == 64
    assert f"would overwrite the input {log}" in capsys.readouterr().err  # the one output rule
    assert log.read_bytes() == inspect_logs["eval"].read_bytes()
    assert main(["import", "inspect", str(inspect_logs["eval"]), "--out", str(inspect_logs["eval"])]) == 64


def test_cli_unreadable_log_names_the_file(tmp_path, capsys):
    pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"not a zip")
    assert main(["import", "inspect", str(bad), "--out", str(tmp_path / "o")]) == 66
    assert "broken.eval" in capsys.readouterr().err
    assert main(["import", "inspect", str(tmp_path / "missing.eval"), "--out", str(tmp_path / "o")]) == 66


def test_without_inspect_ai_the_command_names_the_extra(monkeypatch, tmp_path, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if the extra were not installed
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    log = tmp_path / "a.eval"
    log.write_bytes(b"x")
    # 69 as every command with a missing extra (evaltk._validation.require_extra / MissingExtra)
    assert main(["import", "inspect", str(log), "--out", str(tmp_path / "o")]) == 69
    assert "pip install 'evaltk[inspect]'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # checked before anything is written


def test_the_same_sample_in_two_logs_is_no_suite_trial(inspect_logs, tmp_path):
    copy = tmp_path / "copy.eval"
    copy.write_bytes(inspect_logs["eval"].read_bytes())
    imp = import_inspect([inspect_logs["eval"], copy])
    assert len(imp.traces) == 2 * 13  # both runs are kept: they are runs
    assert imp.suite is None
    tasks = imp.ledger[imp.ledger["kind"] == "task"]
    assert len(tasks) == 5 and tasks["reason"].str.startswith("duplicate trial: epoch 1 is in ").all()


def test_scorer_choice_and_option_errors(inspect_logs, tmp_path, capsys):
    imp = import_inspect(inspect_logs["eval"], scorer="graded")
    led = imp.ledger.set_index("record")
    assert led.loc["sample s1 epoch 1 score graded", "became"] == "trial score and answer"
    assert led.loc["sample s1 epoch 1 score includes", "became"] == "run observation"
    # a partial grade is a trial score of 0.5 and no answer
    assert led.loc["sample s2 epoch 3 score graded", "became"] == "trial score"
    assert main(["import", "inspect", str(inspect_logs["eval"]), "--out", str(tmp_path / "o"), "--scorer", "nope"]) == 64
    assert "(it has includes, graded)" in capsys.readouterr().err  # each scorer once, not once per metric
    for argv in (["--scorer", "nope"], ["--k", "4"], ["--k", "0"], ["--pass-score", "2"]):
        assert main(["import", "inspect", str(inspect_logs["eval"]), "--out", str(tmp_path / "o"), *argv]) == 64, argv
        assert "usage: " in capsys.readouterr().err


def test_out_must_be_new_empty_or_a_previous_import(inspect_logs, otel_spans, tmp_path, capsys):
    foreign = tmp_path / "demo"
    foreign.mkdir()
    (foreign / "traces.jsonl").write_text("{}\n")
    assert main(["import", "inspect", str(inspect_logs["eval"]), "--out", str(foreign)]) == 64
    assert "holds traces.jsonl but no import.json" in capsys.readouterr().err and (foreign / "traces.jsonl").read_text() == "{}\n"
    out = tmp_path / "imp"
    assert main(["import", "inspect", str(inspect_logs["eval"]), "--out", str(out)]) == 0
    assert (out / "suite" / "run.json").is_file()
    # importing spans into the same folder rewrites it whole: no stale suite run from the log
    assert main(["import", "otel", str(otel_spans["jsonl"]), "--out", str(out)]) == 0
    assert not (out / "suite" / "run.json").exists()
    assert json.loads((out / "import.json").read_text())["source"] == "opentelemetry"
