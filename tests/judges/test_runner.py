"""The judge runner against a real chat-completions server on 127.0.0.1 (issue #14, part 3).

The server (``chat_server.py``) is started by each test on an ephemeral port and answers
from a script: well-formed answers, unreadable ones, slow ones past the timeout, 429 with
Retry-After, 500, a dropped connection, a reply in another measure's vocabulary.  Nothing
inside evaltk is mocked.
"""

from __future__ import annotations

import asyncio
import math
import threading

import pandas as pd
import pytest

from evaltk.ingest import INSTRUMENT_COLUMNS, ingest_traces, read_answers
from evaltk.judges import (
    JUDGE_ANSWER_COLUMNS,
    ChatReply,
    GradeCache,
    JudgeConfig,
    Price,
    fold_panel,
    load_rubric,
    run_judge,
)
from evaltk.values import ANSWER_TABLE_COLUMNS

from .chat_server import ChatServer, drop, reply, slow, status


def run_(trace_id: str, screens: list[str | None], task: str = "Mute the phone") -> dict:
    steps = [{"index": i, "action": "tap" if i < len(screens) - 1 else "finish",
              "target": f"button {i}" if i < len(screens) - 1 else None, "screen": s}
             for i, s in enumerate(screens)]
    return {"trace_id": trace_id, "task": task, "status": "complete", "steps": steps}


TRACES = [run_(f"t{i}", ["Home", f"Settings {i}", f"Muted {i}"]) for i in range(6)]


def judge(server: ChatServer, **kw) -> JudgeConfig:
    base = {"name": "j1", "model": "m1", "model_version": "2026-11", "decoding": {"temperature": 0, "max_tokens": 4},
            "price": Price(2.0, 8.0), "base_url": server.base_url}
    base.update(kw)
    return JudgeConfig(**base)


FAST = {"backoff": 0.0, "timeout": 5.0}


# --------------------------------------------------------------------------- the answers table


def test_answers_table_is_what_ingest_reads_with_the_instrument_on_every_row(tmp_path):
    with ChatServer(lambda body, n: reply("Yes", usage=(120, 1))) as server:
        res = run_judge(TRACES, "x_task", judge=judge(server), **FAST)
    a = res.answers
    assert list(a.columns) == list(JUDGE_ANSWER_COLUMNS)
    assert list(a.columns[:5]) == list(ANSWER_TABLE_COLUMNS)
    assert len(a) == 6 and (a["answer"] == "yes").all() and a["reason"].isna().all()
    rub = load_rubric("x_task")
    expected = {"judge_model": "m1", "judge_model_version": "2026-11", "rubric_id": rub.id,
                "rubric_digest": rub.digest, "template_digest": rub.template_digest,
                "decoding": '{"max_tokens":4,"temperature":0}'}
    for c in INSTRUMENT_COLUMNS:
        assert (a[c] == expected[c]).all(), c
    assert a["prompt_digest"].str.startswith("sha256:").all() and a["prompt_digest"].nunique() == 6
    # cost from the reply's usage and the declared price: (120 * 2 + 1 * 8) / 1e6 dollars
    assert a["cost"].tolist() == pytest.approx([248e-6] * 6)
    assert (a["latency_ms"] > 0).all()
    # round trip: the DataFrame, and the CSV the command writes, through ingest
    for src in (a, _csv(a, tmp_path)):
        rec = read_answers(src)
        assert (rec.ledger["status"] == "kept").all() and len(rec.table) == 6
    ing = ingest_traces(TRACES, answers=_csv(a, tmp_path))
    assert len(ing.answers) == 6 and (ing.ledger["status"] == "kept").all()


def _csv(frame: pd.DataFrame, tmp_path) -> str:
    p = tmp_path / "answers.csv"
    frame.to_csv(p, index=False)
    return str(p)


def test_per_step_units_are_the_gradable_steps_and_join_on_step():
    runs = [{"trace_id": "a", "task": "Send the mail", "status": "complete", "steps": [
        {"index": 0, "action": "open", "target": "Mail", "screen": "Home"},
        {"index": 1, "action": "tap", "target": "Send", "screen": None},        # no screen: not gradable
        {"index": 2, "action": "tap", "target": None, "screen": "Compose"},     # no target: not gradable
        {"index": 3, "action": "tap", "target": "Send", "screen": "Compose"}]},
        {"trace_id": "b", "task": "Send the mail", "status": "complete", "steps": [
            {"index": 0, "action": "finish", "target": None, "screen": None}]}]
    with ChatServer(lambda body, n: reply("no")) as server:
        res = run_judge(runs, "x_ctx", judge=judge(server), **FAST)
    assert res.answers[["trace_id", "step"]].astype(str).values.tolist() == [["a", "0"], ["a", "3"]]
    assert res.skipped[["trace_id", "cause"]].values.tolist() == [["b", "missing_evidence"]]
    ing = ingest_traces(runs, answers=res.answers)
    assert ing.answers["step_pos"].notna().all() and len(ing.answers) == 2


def test_a_run_without_a_terminal_screen_is_not_asked():
    runs = [*TRACES[:2], run_("dark", ["Home", None])]
    with ChatServer(lambda body, n: reply("yes")) as server:
        res = run_judge(runs, "x_task", judge=judge(server), **FAST)
        assert server.calls == 2
    assert res.skipped[["trace_id", "measure", "cause", "reason"]].values.tolist() == [
        ["dark", "x_task", "missing_evidence", "no terminal screen captured"]]
    assert res.skipped["step"].isna().all()


# --------------------------------------------------------------------------- replies that cannot be read


@pytest.mark.parametrize(("text", "why"), [
    ("I think the agent probably did fine.", "is not one of yes, no, cannot_tell"),
    ("lots", "is not one of yes, no, cannot_tell"),          # x_eff's vocabulary asked on x_task
    ("yes\nno", "reads as more than one answer"),
    ("", "empty"),
])
def test_unreadable_reply_is_abstained_with_the_reason(text, why):
    with ChatServer(lambda body, n: reply(text)) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), **FAST)
    row = res.answers.iloc[0]
    assert row["answer"] == "cannot_tell" and row["reason"].startswith("unreadable reply") and why in row["reason"]
    assert res.failures.empty and res.summary()["n_unreadable"] == 1
    assert read_answers(res.answers).table["answer"].tolist() == ["cannot_tell"]


def test_a_reply_in_the_wrong_vocabulary_for_x_eff():
    with ChatServer(lambda body, n: reply("Yes") if n == 0 else reply("A few")) as server:
        res = run_judge(TRACES[:2], "x_eff", judge=judge(server), concurrency=1, **FAST)
    assert res.answers["answer"].tolist() == ["cannot_tell", "a_few"]
    assert res.answers["reason"].iloc[0].startswith("unreadable reply: 'Yes' is not one of none, a_few, lots")


# --------------------------------------------------------------------------- failed calls: no answer, a recorded failure


def test_slow_past_the_timeout_fails_after_the_retries_and_writes_no_answer():
    with ChatServer(lambda body, n: slow(2.0, reply("yes"))) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), timeout=0.3, retries=1, backoff=0.0)
        assert server.calls == 2
    assert res.answers.empty
    f = res.failures.iloc[0]
    assert f["trace_id"] == "t0" and f["attempts"] == 2 and f["reason"].startswith("timed out after 0.3 s")


def test_429_honours_retry_after_then_answers():
    with ChatServer(lambda body, n: status(429, retry_after="1") if n == 0 else reply("no")) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), **FAST)
        assert server.calls == 2
    assert res.answers["answer"].tolist() == ["no"] and res.failures.empty and res.n_calls == 2


def test_429_asking_beyond_the_bound_fails_at_once():
    with ChatServer(lambda body, n: status(429, retry_after="3600")) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), max_retry_after=5, **FAST)
        assert server.calls == 1
    assert "beyond the bound of 5 s" in res.failures["reason"].iloc[0] and res.answers.empty


def test_500_is_retried_and_a_persistent_one_fails():
    with ChatServer(lambda body, n: status(500) if n < 2 else reply("yes")) as server:
        ok = run_judge(TRACES[:1], "x_task", judge=judge(server), retries=3, **FAST)
        assert server.calls == 3 and ok.answers["answer"].tolist() == ["yes"]
    with ChatServer(lambda body, n: status(500)) as server:
        bad = run_judge(TRACES[:1], "x_task", judge=judge(server), retries=2, **FAST)
        assert server.calls == 3
    assert bad.answers.empty and bad.failures["reason"].iloc[0].startswith("HTTP 500")
    assert bad.failures["attempts"].iloc[0] == 3


def test_a_client_error_is_not_retried():
    with ChatServer(lambda body, n: status(400, body='{"error": "bad model"}')) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), retries=3, **FAST)
        assert server.calls == 1
    assert res.failures["reason"].iloc[0].startswith("HTTP 400") and "bad model" in res.failures["reason"].iloc[0]


def test_a_dropped_connection_is_retried_then_recorded():
    with ChatServer(lambda body, n: drop()) as server:
        res = run_judge(TRACES[:1], "x_task", judge=judge(server), retries=1, **FAST)
        assert server.calls == 2
    assert res.failures["reason"].iloc[0].startswith("connection failed") and res.answers.empty


def test_a_failed_call_is_a_recorded_skip_in_the_panel_not_an_agreement():
    """Judge j2's server fails on t0: j2 has no row there, and the panel fold records the skip."""
    with ChatServer(lambda body, n: reply("yes")) as ok, \
            ChatServer(lambda body, n: status(503) if "Muted 0" in str(body) else reply("yes")) as flaky:
        a1 = run_judge(TRACES, "x_task", judge=judge(ok, name="j1"), **FAST)
        a2 = run_judge(TRACES, "x_task", judge=judge(flaky, name="j2"), retries=0, **FAST)
    assert a2.failures["trace_id"].tolist() == ["t0"] and "t0" not in set(a2.answers["trace_id"])
    panel = fold_panel(pd.concat([a1.answers, a2.answers]), rule="unanimity", panel=["j1", "j2"])
    assert panel.skips[["trace_id", "rater"]].values.tolist() == [["t0", "j2"]]
    v = panel.verdicts.set_index("trace_id")
    assert v.loc["t0", "n_answered"] == 1 and v.loc["t1", "n_answered"] == 2


def test_usage_missing_or_no_price_is_a_missing_cost_never_zero():
    with ChatServer(lambda body, n: reply("yes", usage=None)) as server:
        no_usage = run_judge(TRACES[:2], "x_task", judge=judge(server), **FAST)
        no_price = run_judge(TRACES[:2], "x_task", judge=judge(server, price=None, name="j2"), **FAST)
    assert no_usage.answers["cost"].isna().all() and no_price.answers["cost"].isna().all()


# --------------------------------------------------------------------------- concurrency, progress


def test_concurrency_is_bounded(capsys):
    with ChatServer(lambda body, n: slow(0.05, reply("yes"))) as server:
        res = run_judge([run_(f"r{i}", ["a", f"b{i}"]) for i in range(24)], "x_task", judge=judge(server),
                        concurrency=3, progress=True, **FAST)
        assert server.max_in_flight <= 3 and server.calls == 24
    assert len(res.answers) == 24
    assert "24/24" in capsys.readouterr().err  # tqdm's bar, on stderr


def test_run_judge_works_inside_a_running_event_loop():
    """A notebook runs cells inside an event loop; run_judge still completes."""
    out = {}

    async def cell() -> None:
        with ChatServer(lambda body, n: reply("no")) as server:
            out["res"] = run_judge(TRACES[:2], "x_task", judge=judge(server), **FAST)

    asyncio.run(cell())
    assert out["res"].answers["answer"].tolist() == ["no", "no"]


def test_another_backend_plugs_in():
    class Rules:
        """Not HTTP: a rule over the prompt (any object with an async `complete`)."""

        def __init__(self) -> None:
            self.models = []

        async def complete(self, messages, *, model, decoding):
            self.models.append((model, dict(decoding)))
            return ChatReply("no" if "Muted 1" in messages[-1]["content"] else "yes", 10, 1)

    backend = Rules()
    res = run_judge(TRACES[:3], "x_task", backend, judge={"name": "rules", "model": "rule-v1"})
    assert res.answers["answer"].tolist() == ["yes", "no", "yes"]
    assert backend.models == [("rule-v1", {"temperature": 0})] * 3


# --------------------------------------------------------------------------- the cache


def test_cache_resumes_without_a_second_call_and_never_crosses_instruments(tmp_path):
    cache = tmp_path / "grades.sqlite"
    with ChatServer(lambda body, n: reply("yes")) as server:
        first = run_judge(TRACES, "x_task", judge=judge(server), cache=cache, **FAST)
        assert server.calls == 6
        again = run_judge(TRACES, "x_task", judge=judge(server), cache=cache, **FAST)
        assert server.calls == 6 and again.n_cached == 6 and again.n_calls == 0
        pd.testing.assert_frame_equal(first.answers, again.answers)
        # a changed model version, decoding setting, model or rubric is a new instrument: no reuse
        changed = [judge(server, model_version="2026-12"), judge(server, decoding={"temperature": 0.7}),
                   judge(server, model="m2")]
        for k, j in enumerate(changed, 1):
            r = run_judge(TRACES, "x_task", judge=j, cache=cache, **FAST)
            assert r.n_cached == 0 and server.calls == 6 + 6 * k
        # the shipped rubric with one word of its question changed
        doc = _doc_with_question("Does the last screen show the requested outcome?")
        r = run_judge(TRACES, doc, judge=judge(server), cache=cache, **FAST)
        assert r.n_cached == 0 and server.calls == 30
        assert r.answers["rubric_digest"].iloc[0] != load_rubric("x_task").digest
        # the rater's name is not part of the instrument: the same grade is reused
        renamed = run_judge(TRACES, "x_task", judge=judge(server, name="alias"), cache=cache, **FAST)
        assert renamed.n_cached == 6 and server.calls == 30 and (renamed.answers["rater"] == "alias").all()
    assert len(GradeCache(cache)) == 30


def _doc_with_question(q: str) -> dict:
    from importlib import resources

    import yaml

    doc = yaml.safe_load(resources.files("evaltk.judges").joinpath("rubrics", "x_task.yaml").read_text("utf-8"))
    doc["question"] = q
    return doc


def test_failures_are_not_cached_and_a_resumed_run_asks_only_them(tmp_path):
    cache = tmp_path / "grades.sqlite"
    healthy = threading.Event()

    def script(body, n):
        return reply("no") if healthy.is_set() or n < 4 else status(400)

    with ChatServer(script) as server:
        first = run_judge(TRACES, "x_task", judge=judge(server), cache=cache, concurrency=1, **FAST)
        assert len(first.answers) == 4 and len(first.failures) == 2 and server.calls == 6
        answered = {b["messages"][-1]["content"] for b in server.bodies[:4]}
        healthy.set()
        second = run_judge(TRACES, "x_task", judge=judge(server), cache=cache, concurrency=1, **FAST)
        assert server.calls == 8 and second.n_cached == 4 and second.failures.empty
        asked_again = {b["messages"][-1]["content"] for b in server.bodies[6:]}
    assert not answered & asked_again and len(second.answers) == 6


def test_latency_of_a_cached_grade_is_the_call_it_came_from(tmp_path):
    with ChatServer(lambda body, n: slow(0.02, reply("yes"))) as server:
        a = run_judge(TRACES[:2], "x_task", judge=judge(server), cache=tmp_path / "c.sqlite", **FAST)
        b = run_judge(TRACES[:2], "x_task", judge=judge(server), cache=tmp_path / "c.sqlite", **FAST)
    assert a.answers["latency_ms"].tolist() == b.answers["latency_ms"].tolist()
    assert all(math.isfinite(x) for x in b.answers["latency_ms"])


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="concurrency"):
        run_judge(TRACES, "x_task", ChatReply, judge={"name": "j", "model": "m"}, concurrency=0)
    with pytest.raises(ValueError, match="may not set stream"):
        JudgeConfig("j", "m", decoding={"stream": True})


def test_a_judge_from_a_file_gets_only_the_key_it_names(monkeypatch):
    """A judges file says where the key is sent: the ambient key is not sent to its URL."""
    from evaltk.errors import SchemaViolation
    from evaltk.judges import read_judges

    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient")
    monkeypatch.setenv("LOCAL_API_KEY", "sk-named")
    with ChatServer(lambda body, n: reply("yes")) as server:
        plain, named = read_judges([{"name": "a", "model": "m", "base_url": server.base_url},
                                    {"name": "b", "model": "m", "base_url": server.base_url,
                                     "api_key_env": "LOCAL_API_KEY"}])
        run_judge(TRACES[:1], "x_task", judge=plain, **FAST)
        run_judge(TRACES[:1], "x_task", judge=named, **FAST)
        run_judge(TRACES[:1], "x_task", judge=judge(server), **FAST)  # built in code: the ambient key
    assert server.authorizations == [None, "Bearer sk-named", "Bearer sk-ambient"]
    with pytest.raises(SchemaViolation, match="ending in API_KEY or _TOKEN") as e:
        read_judges([{"name": "a", "model": "m", "api_key_env": "AWS_SECRET_ACCESS"}])
    assert e.value.field == "api_key_env" and e.value.record == 1


def test_a_plugged_in_backend_that_hangs_times_out():
    class Hangs:
        async def complete(self, messages, *, model, decoding):
            await asyncio.sleep(3600)

    res = run_judge(TRACES[:2], "x_task", Hangs(), judge={"name": "h", "model": "m"}, timeout=0.2, retries=0)
    assert res.answers.empty and res.failures["reason"].str.startswith("timed out after 0.2 s").all()


class _Backend:
    """A backend that is not HTTP: "yes" unless the prompt shows one of `no_words`; usage reported."""

    def __init__(self, *no_words: str) -> None:
        self.prompts: list[str] = []
        self.no_words = no_words

    async def complete(self, messages, *, model, decoding):
        text = messages[-1]["content"]
        self.prompts.append(text)
        return ChatReply("no" if any(w in text for w in self.no_words) else "yes", 30, 1)


def test_a_guide_rubric_asks_on_the_served_guide_without_its_label():
    doc = {"schema": "evaltk.rubric/1", "id": "g_adherence.order.v1", "measure": "g_adherence", "unit": "guide",
           "question": "Did the run follow the guide's steps in order?",
           "answers": [{"word": "yes", "means": "in order"}, {"word": "no", "means": "not"},
                       {"word": "cannot_tell", "means": "?"}],
           "prompt": {"user": "Guide {{ guide.id }} ({{ guide.reference_id | default('hidden') }}): "
                              "{% for s in guide.steps %}{{ s.action }} {% endfor %}| run: "
                              "{% for s in steps %}{{ s.action }} {% endfor %}\n{{ question }}"}}
    with_guide = {**TRACES[0], "guide": {"id": "g-7", "reference_id": "g-LABEL",
                                         "steps": [{"id": "s1", "action": "tap"}]}}
    backend = _Backend()
    res = run_judge([with_guide, TRACES[1]], doc, backend, judge={"name": "j", "model": "m"})
    assert res.answers[["trace_id", "measure", "answer"]].values.tolist() == [["t0", "g_adherence", "yes"]]
    assert res.skipped[["trace_id", "cause"]].values.tolist() == [["t1", "not_applicable"]]
    assert "g-7 (hidden)" in backend.prompts[0] and "g-LABEL" not in backend.prompts[0]


def test_sweep_per_step_asks_the_labelled_steps_and_the_canary_runs():
    from evaltk.judges import sweep_judges

    runs = [run_(f"s{i}", ["Home", f"List {i}", f"Done {i}"], task="Canary" if i == 5 else "Mute") for i in range(6)]
    labels = pd.DataFrame([{"trace_id": f"s{i}", "measure": "x_ctx", "step": st, "rater": h,
                            "answer": "no" if (i, st) == (0, 1) else "yes"}
                           for i in range(4) for st in (0, 1) for h in ("h1", "h2")])
    canaries = pd.DataFrame({"trace_id": ["s5"], "measure": ["x_ctx"], "passing_answer": ["yes"]})
    # strict reads the failing step (s0 step 1 acts on "List 0") and the canary run; lenient says yes
    backends = {"strict": _Backend("List 0", "Task: Canary"), "lenient": _Backend()}
    judges = [{"name": n, "model": n, "price": {"input_per_million": p, "output_per_million": p}}
              for n, p in (("strict", 3.0), ("lenient", 1.0))]
    res = sweep_judges(runs, "x_ctx", judges, labels, canaries=canaries, clients=backends, rng=0)
    asked = res.answers[res.answers["rater"] == "strict"][["trace_id", "step"]].astype(str).values.tolist()
    assert asked == [[f"s{i}", str(st)] for i in range(4) for st in (0, 1)] + [["s5", "0"], ["s5", "1"]]
    t = res.selection.table.set_index("judge")
    assert t.loc["strict", "accuracy"] == 1.0 and t.loc["lenient", "accuracy"] == 7 / 8
    assert t.loc["lenient", "rejected"] and not t.loc["strict", "rejected"]  # "yes" on the canary run s5
    assert res.selection.eligible == ["strict"]
