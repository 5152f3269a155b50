"""``evaltk judge run | sweep | rubric`` end to end against a real local server (issue #14,
parts 3 and 4), including a run killed mid-way that resumes with no second call for any
item it had graded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from evaltk.cli import main
from evaltk.ingest import INSTRUMENT_COLUMNS, ingest_traces, read_answers
from evaltk.judges import GradeCache, load_rubric

from .chat_server import ChatServer, demo_script, reply, status

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"


def traces_file(tmp_path: Path, n: int = 8) -> Path:
    p = tmp_path / "traces.jsonl"
    runs = [{"trace_id": f"t{i}", "task": f"Mute the phone {i}", "status": "complete",
             "steps": [{"index": 0, "action": "tap", "target": "Mute", "screen": "Settings"},
                       {"index": 1, "action": "finish", "target": None, "screen": f"Muted {i}"}]}
            for i in range(n)]
    p.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    return p


def run_argv(traces: Path, server: ChatServer, out: Path, *extra: str) -> list[str]:
    return ["judge", "run", str(traces), "--rubric", "x_task", "--model", "m1", "--model-version", "2026-11",
            "--base-url", server.base_url, "--max-tokens", "4", "--price-input", "0.15", "--price-output", "0.6",
            "--retries", "0", "--out", str(out), *extra]


def test_run_writes_the_answers_ingest_reads_and_a_rerun_makes_no_call(tmp_path, capsys):
    tr = traces_file(tmp_path)
    out = tmp_path / "out" / "x_task.csv"
    with ChatServer(lambda body, n: reply("yes", usage=(100, 1))) as server:
        assert main(run_argv(tr, server, out, "--json")) == 0
        first = json.loads(capsys.readouterr().out)
        assert first["n_answers"] == 8 and first["n_calls"] == 8 and server.calls == 8
        assert main(run_argv(tr, server, out, "--json")) == 0
        again = json.loads(capsys.readouterr().out)
        assert again["n_calls"] == 0 and again["n_cached"] == 8 and server.calls == 8
    rec = read_answers(out)
    assert len(rec.table) == 8 and (rec.ledger["status"] == "kept").all()
    raw = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert set(INSTRUMENT_COLUMNS) <= set(raw.columns) and (raw["rubric_id"] == load_rubric("x_task").id).all()
    assert (raw["decoding"] == '{"max_tokens":4,"temperature":0}').all()
    assert ingest_traces(tr, answers=out).answers.shape[0] == 8
    assert (tmp_path / "out" / "x_task.csv.failures.csv").is_file()
    assert (tmp_path / "out" / "x_task.csv.cache.sqlite").is_file()
    assert first["judge_model"] == "m1" and "api_key" not in json.dumps(first).lower()


def test_a_run_with_failed_calls_exits_75_and_the_rerun_asks_only_those(tmp_path, capsys):
    tr = traces_file(tmp_path)
    out = tmp_path / "a.jsonl"
    healthy = threading.Event()
    with ChatServer(lambda body, n: reply("no") if healthy.is_set() or n < 5 else status(500)) as server:
        assert main(run_argv(tr, server, out, "--concurrency", "1")) == 75
        captured = capsys.readouterr()
        assert "5 answers" in captured.out and "3 failed" in captured.out and "HTTP 500" in captured.err
        failures = pd.read_csv(tmp_path / "a.jsonl.failures.csv")
        assert len(failures) == 3 and failures["reason"].str.startswith("HTTP 500").all()
        assert len(read_answers(out).table) == 5
        healthy.set()
        assert main(run_argv(tr, server, out, "--concurrency", "1")) == 0
        assert server.calls == 8 + 3
    assert len(read_answers(out).table) == 8


@pytest.mark.slow
def test_a_killed_run_resumes_without_a_second_call_for_any_cached_item(tmp_path):
    """The process is killed (SIGKILL, by its PID) while a call hangs; the re-run asks only
    the items the first run had not graded."""
    tr = traces_file(tmp_path, n=10)
    out = tmp_path / "x.csv"
    cache = tmp_path / "grades.sqlite"
    release = threading.Event()
    k = 4

    def script(body, n):
        if n >= k and not release.is_set():
            release.wait(60)  # hangs until the test releases it (after the kill)
        return reply("yes")

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with ChatServer(script) as server:
        argv = [sys.executable, "-m", "evaltk", *run_argv(tr, server, out, "--concurrency", "1",
                                                          "--cache", str(cache), "--timeout", "120")]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not (server.calls > k and cache.exists() and len(GradeCache(cache)) == k):
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the first run never reached the hanging call"
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait()
        graded = {b["messages"][-1]["content"] for b in server.bodies[:k]}
        n_first = server.calls
        release.set()
        done = subprocess.run(argv, env=env, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        asked_again = [b["messages"][-1]["content"] for b in server.bodies[n_first:]]
    assert len(asked_again) == 10 - k and not graded & set(asked_again)
    assert len(read_answers(out).table) == 10


def test_environment_supplies_base_url_model_and_key(tmp_path, monkeypatch, capsys):
    tr = traces_file(tmp_path, n=2)
    with ChatServer(lambda body, n: reply("yes")) as server:
        monkeypatch.setenv("EVALTK_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("EVALTK_JUDGE_MODEL", "env-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
        assert main(["judge", "run", str(tr), "--rubric", "x_task", "--out", str(tmp_path / "a.csv"), "--json"]) == 0
        assert {b["model"] for b in server.bodies} == {"env-model"}
        assert set(server.authorizations) == {"Bearer sk-test-123"}
    out = capsys.readouterr().out
    assert "sk-test-123" not in out and "sk-test-123" not in (tmp_path / "a.csv").read_text()
    assert json.loads(out)["judge"] == "env-model"


def test_usage_and_input_errors_have_their_codes(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("EVALTK_JUDGE_MODEL", raising=False)
    tr = traces_file(tmp_path, n=1)
    assert main(["judge", "run", str(tr), "--rubric", "x_task", "--out", str(tmp_path / "a.csv")]) == 64
    assert "--model is required" in capsys.readouterr().err
    bad = tmp_path / "r.yaml"
    bad.write_text("schema: evaltk.rubric/1\nid: r\nid: s\n", encoding="utf-8")
    assert main(["judge", "rubric", str(bad)]) == 65
    assert "duplicate key `id`" in capsys.readouterr().err
    assert main(["judge", "run", str(tmp_path / "none.jsonl"), "--rubric", "x_task", "--model", "m",
                 "--out", str(tmp_path / "a.csv")]) == 66


def test_missing_extra_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "httpx", None)  # as if httpx were not installed
    assert main(["judge", "rubric", "x_task"]) == 69
    err = capsys.readouterr().err
    assert "httpx" in err and "pip install 'evaltk[judges]'" in err


def test_rubric_command_prints_the_digests(capsys):
    assert main(["judge", "rubric", "x_eff", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    r = load_rubric("x_eff")
    assert doc["rubric_digest"] == r.digest and doc["unit"] == "run" and "steps" in doc["context"]


# --------------------------------------------------------------------------- the sweep


#: The docs' four judges (docs/judges.md): name, max_tokens, and the declared price (USD per
#: million input / output tokens).
_JUDGES = (("screen-rules", 4, 2.50, 10.0), ("optimist", 4, 0.15, 0.60), ("hedger", 4, 0.40, 1.60),
           ("rambler", 32, 0.40, 1.60))
DEMO_JUDGES = "".join(
    f"- name: {n}\n  model: {n}\n  model_version: \"2026-11\"\n  decoding: {{temperature: 0, max_tokens: {t}}}\n"
    f"  price: {{input_per_million: {i}, output_per_million: {o}}}\n" for n, t, i, o in _JUDGES)


def test_sweep_from_traces_to_a_frontier(tmp_path, capsys):
    judges = tmp_path / "judges.yaml"
    with ChatServer(demo_script) as server:
        judges.write_text(DEMO_JUDGES.replace("  model_version", f"  base_url: {server.base_url}\n  model_version"),
                          encoding="utf-8")
        argv = ["judge", "sweep", str(DEMO / "traces.jsonl"), "--rubric", "x_task", "--judges", str(judges),
                "--labels", str(DEMO / "labels.csv"), "--canaries", str(DEMO / "canaries.csv"),
                "--out", str(tmp_path / "sweep"), "--json"]
        assert main(argv) == 0
        doc = json.loads(capsys.readouterr().out)
        n_first = server.calls
        assert main(argv) == 0  # everything from the cache: the same frontier, no call
        assert server.calls == n_first and json.loads(capsys.readouterr().out)["frontier"] == doc["frontier"]
    rows = {r["judge"]: r for r in doc["judges"]}
    assert set(rows) == {"screen-rules", "optimist", "hedger", "rambler"}
    assert rows["optimist"]["rejected"] and "canary" in rows["optimist"]["status"]
    assert "optimist" not in doc["eligible"] and doc["eligible"]
    assert rows["hedger"]["coverage"] < rows["screen-rules"]["coverage"] == 1.0
    # asked on the anchored items and the canaries only: 29 anchored runs and 8 canaries on the demo
    labels = read_answers(DEMO / "labels.csv", kind="label").table
    anchored = set(labels.loc[labels["measure"] == "x_task", "trace_id"])
    canaries = set(pd.read_csv(DEMO / "canaries.csv")["trace_id"])
    answers = pd.read_csv(tmp_path / "sweep" / "answers.csv")
    assert set(answers["trace_id"]) <= anchored | canaries
    assert n_first == 4 * (len(answers) // 4)  # one call per item and judge (the server never failed)
    sel = pd.read_csv(tmp_path / "sweep" / "selection.csv")
    assert sel["cost_per_item"].notna().all() and sel["latency_p50"].gt(0).all()
    unreadable = answers.loc[answers["rater"] == "rambler", "reason"].fillna("")
    assert unreadable.str.startswith("unreadable reply").any()
