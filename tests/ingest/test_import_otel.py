"""OpenTelemetry spans in (issue #18, part 2): one trace id per run, agent and tool spans as
steps in start order; the spans are written by the opentelemetry-sdk (tests/ingest/make_inputs.py)."""

from __future__ import annotations

import json

import pytest

import evaltk
from evaltk.cli import main
from evaltk.ingest import import_otel, ingest_traces, read_action_policy, span_role, write_import


@pytest.fixture(scope="module")
def imported(otel_spans, policy_file):
    return import_otel(otel_spans["jsonl"], policy=read_action_policy(policy_file))


def _runs(imp):
    return {t.get("agent") or t["status"]: t for t in imp.traces}


def _n_spans(path):
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def test_every_span_is_in_the_ledger(imported, otel_spans):
    led = imported.ledger
    assert len(led) == _n_spans(otel_spans["jsonl"]) == 12
    assert sorted(led["record"]) == list(range(1, 13))  # one row per line, in file order
    assert set(led["kind"]) == {"span"}
    assert set(led.loc[led["status"] == "kept", "became"]) == {"step", "model call", "span"}


def test_one_run_per_trace_id_agent_and_tool_spans_as_steps_in_start_order(imported):
    assert len(imported.traces) == 3 and len({t["trace_id"] for t in imported.traces}) == 3
    genai = _runs(imported)["refunder"]
    assert genai["status"] == "complete" and genai["task"] == "Refund order A1"
    assert [s["action"] for s in genai["steps"]] == ["invoke_agent", "lookup_order", "lookup_order",
                                                     "confirm_with_user", "refund"]
    starts = [s["start_time_unix_nano"] for s in genai["steps"]]
    assert starts == sorted(starts)
    assert json.loads(genai["steps"][2]["target"]) == {"order_id": "A1"}
    assert genai["steps"][1]["error"] == {"message": "no such order: ZZ"}
    assert genai["steps"][2]["result"] == "order A1: 1 red mug"
    # model calls are kept with their usage, each under the step that made it
    assert [(c["model"], c["usage"]["input_tokens"], c["step"]) for c in genai["model_calls"]] == [
        ("gpt-test", 120, 0), ("gpt-test", 150, 0)]
    oi = _runs(imported)["refund-agent"]  # OpenInference: the agent named by the resource's service
    assert oi["task"] == "Cancel my subscription"
    assert [s["action"] for s in oi["steps"]] == ["invoke_agent", "cancel_subscription"]
    assert oi["steps"][1]["target"] == '{"plan": "pro"}'
    assert oi["model_calls"][0]["usage"] == {"input_tokens": 80, "output_tokens": 9, "total_tokens": 89}
    assert [o["name"] for o in oi["other_spans"]] == ["plan"]


def test_unknown_attributes_are_kept(imported):
    root = _runs(imported)["refunder"]["steps"][0]
    assert root["attributes"]["app.tenant"] == "acme"
    assert root["attributes"]["app.retries"] == [1, 2]
    assert _runs(imported)["refund-agent"]["other_spans"][0]["attributes"] == {"openinference.span.kind": "CHAIN"}


def test_an_unfinished_trace_is_an_in_progress_run(imported, tmp_path):
    run = _runs(imported)["in_progress"]
    assert "is not among the spans" in run["in_progress_reason"]
    led = imported.ledger
    row = led[led["trace_id"] == run["trace_id"]]
    assert (row["status"] == "dropped").all() and row["reason"].str.startswith("in_progress: ").all()
    paths = write_import(imported, tmp_path)
    ing = ingest_traces(paths["traces"])
    assert len(ing.runs) == 2
    assert ing.ledger.set_index("trace_id").loc[run["trace_id"], "reason"] == "in_progress"


def test_the_policy_marks_tool_spans(imported):
    safe = evaltk.score_traces(imported.traces).scores().query("measure == 'x_safe'").set_index("trace_id")
    assert safe.loc[_runs(imported)["refunder"]["trace_id"], "value"] == 1.0  # confirmed, then refunded
    assert safe.loc[_runs(imported)["refund-agent"]["trace_id"], "value"] == 0.0  # cancel_* unconfirmed


def test_without_a_policy_x_safe_is_not_implemented(otel_spans):
    imp = import_otel(otel_spans["jsonl"])
    safe = evaltk.score_traces(imp.traces).scores().query("measure == 'x_safe'")
    assert len(safe) == 2 and set(safe["cause"]) == {"not_implemented"}


def test_otlp_json_reads_as_the_sdk_span_json(otel_spans, imported, policy_file):
    policy = read_action_policy(policy_file)
    hexed = import_otel(otel_spans["otlp"], policy=policy)
    b64 = import_otel(otel_spans["protobuf"], policy=policy)  # protobuf's JSON mapping: ids in base64

    def strip(imp):
        return [{**t, "source": {**t.get("source", {}), "files": None}} for t in imp.traces]

    assert strip(hexed) == strip(b64)
    # the SDK's JSON has microsecond times; everything else is the same
    def shape(imp):
        return [(t["trace_id"], t["status"], t.get("task"), [(s["action"], s["span_id"], s["attributes"])
                                                             for s in t["steps"]]) for t in imp.traces]

    assert sorted(shape(hexed)) == sorted(shape(imported))
    assert len(hexed.ledger) == 12
    assert set(hexed.ledger["record"]) == {1}  # one document


def test_the_same_spans_through_both_exporters_are_one_copy(otel_spans, imported, tmp_path):
    """The SDK's JSON carries microsecond times (rounded through a float), OTLP nanoseconds,
    and the SDK's JSON no instrumentation scope: compared at the precision both carry, each
    span is one span, and the nanosecond copy is the one kept, whichever file comes first."""
    for files in ([otel_spans["otlp"], otel_spans["jsonl"]], [otel_spans["jsonl"], otel_spans["otlp"]]):
        both = import_otel(files)
        assert sorted(t["status"] for t in both.traces) == ["complete", "complete", "in_progress"]
        led = both.ledger
        dup = led[led["reason"].fillna("").str.startswith("duplicate span_id")]
        assert len(dup) == 12 and dup["reason"].str.contains("same span as").all(), dup["reason"].tolist()
        assert dup["reason"].str.contains("to the microsecond").all()
        assert set(dup["source"]) == {str(otel_spans["jsonl"])}  # the microsecond copies are the ones dropped
        ns = {t["trace_id"]: t for t in import_otel(otel_spans["otlp"]).traces}
        assert all(t["steps"] == ns[t["trace_id"]]["steps"] for t in both.traces)  # nanosecond times kept
    # a copy whose time differs by a whole microsecond or more is another span: both dropped
    lines = otel_spans["jsonl"].read_text().splitlines()
    doc = json.loads(lines[0])
    t = doc["end_time"]
    doc["end_time"] = t[:-3] + f"{(int(t[-3:-1]) + 2) % 100:02d}Z"
    moved = tmp_path / "moved.jsonl"
    moved.write_text(json.dumps(doc) + "\n")
    imp = import_otel([otel_spans["otlp"], moved])
    led = imp.ledger
    assert led["reason"].fillna("").str.contains("conflicting").sum() == 2
    assert sorted(t["status"] for t in imp.traces) == ["complete", "in_progress", "in_progress"]


def test_spans_of_one_trace_in_two_files_make_one_run(otel_spans, tmp_path):
    lines = otel_spans["jsonl"].read_text().splitlines()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(lines[::2]) + "\n")
    b.write_text("\n".join(lines[1::2]) + "\n")
    imp = import_otel([a, b])
    assert sorted(t["status"] for t in imp.traces) == ["complete", "complete", "in_progress"]
    assert len(imp.ledger) == 12


def test_malformed_and_repeated_spans_are_dropped_with_the_line(otel_spans, tmp_path):
    lines = otel_spans["jsonl"].read_text().splitlines()
    p = tmp_path / "spans.jsonl"
    p.write_text("\n".join([lines[0], '{"name": "x", "context": {"trace_id": "0x12"}}', lines[0],
                            "[1, 2]", *lines[1:]]) + "\n")
    imp = import_otel(p)
    led = imp.ledger.set_index("record")
    assert len(led) == 15
    assert led.loc[2, "reason"].startswith("malformed: ") and led.loc[2, "field"] == "context.trace_id"
    assert led.loc[3, "reason"].startswith("duplicate span_id ") and "identical to" in led.loc[3, "reason"]
    assert led.loc[4, "reason"].startswith("malformed: neither an OTLP JSON document")
    assert len(imp.traces) == 3
    p.write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    led = import_otel(p).ledger.set_index("record")
    assert led.loc[2, "reason"].startswith("malformed: not JSON")


def test_span_roles_follow_genai_and_openinference():
    assert span_role({"gen_ai.operation.name": "execute_tool"}) == "tool"
    assert span_role({"openinference.span.kind": "TOOL"}) == "tool"
    assert span_role({"gen_ai.operation.name": "invoke_agent"}) == "agent"
    assert span_role({"openinference.span.kind": "LLM"}) == "model call"
    assert span_role({"gen_ai.operation.name": "chat"}) == "model call"
    assert span_role({"http.method": "GET"}) == "span"


def test_cli_import_otel(otel_spans, policy_file, tmp_path, capsys):
    out = tmp_path / "spans"
    assert main(["import", "otel", str(otel_spans["jsonl"]), "--policy", str(policy_file), "--out", str(out)]) == 0
    assert "12 records: 11 kept, 1 dropped" in capsys.readouterr().out
    assert main(["score", str(out / "traces.jsonl"), "--out", str(tmp_path / "scores")]) == 0
    assert not (out / "suite").exists()
    missing = tmp_path / "missing.jsonl"
    assert main(["import", "otel", str(missing), "--out", str(tmp_path / "o")]) == 66


def _canon_runs(imp):
    """The runs as sorted JSON texts, the file names left out."""
    return sorted(json.dumps({**t, "source": {**t["source"], "files": None}} if "source" in t else t,
                             sort_keys=True) for t in imp.traces)


def test_the_order_of_the_spans_in_the_file_does_not_change_the_runs(otel_spans, tmp_path_factory):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    lines = otel_spans["jsonl"].read_text().splitlines()
    want = _canon_runs(import_otel(otel_spans["jsonl"]))
    folder = tmp_path_factory.mktemp("shuffled")

    @settings(max_examples=25, deadline=None)
    @given(st.permutations(lines))
    def check(order):
        p = folder / "spans.jsonl"
        p.write_text("\n".join(order) + "\n")
        imp = import_otel(p)
        assert _canon_runs(imp) == want
        assert len(imp.ledger) == len(lines)

    check()


def test_any_json_document_is_a_span_or_a_ledger_drop_never_a_crash(tmp_path_factory):
    """Untrusted input: whatever JSON a line holds, the import returns (no traceback)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(
        st.sampled_from(["resourceSpans", "scopeSpans", "spans", "traceId", "spanId", "name", "context",
                         "trace_id", "span_id", "startTimeUnixNano", "start_time", "attributes", "resource",
                         "key", "value", "intValue", "events", "status"]), c, max_size=4), max_leaves=12)
    folder = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=150, deadline=None)
    @given(st.lists(values, min_size=1, max_size=4))
    def check(docs):
        p = folder / "spans.jsonl"
        p.write_text("".join(json.dumps(d) + "\n" for d in docs))
        imp = import_otel(p)
        # a line that is not an OTLP document is one span (kept) or a drop; a document holds 0 or more
        assert len(imp.ledger) >= sum(1 for d in docs if not (isinstance(d, dict) and "resourceSpans" in d))
        assert imp.ledger["status"].isin(["kept", "dropped"]).all()

    check()


def test_cli_exits_1_when_no_complete_run_was_imported(tmp_path, capsys):
    p = tmp_path / "spans.jsonl"
    p.write_text('{"name": "x"}\n')
    assert main(["import", "otel", str(p), "--out", str(tmp_path / "o")]) == 1
    assert "no complete run" in capsys.readouterr().err
    assert (tmp_path / "o" / "ledger.csv").is_file()


def test_console_exporter_output_pretty_objects_one_after_another(otel_spans, imported, tmp_path):
    """ConsoleSpanExporter writes ``span.to_json()`` (indented) objects one after another."""
    p = tmp_path / "console.txt"
    p.write_text("".join(json.dumps(json.loads(line), indent=4) + "\n"
                         for line in otel_spans["jsonl"].read_text().splitlines()))
    imp = import_otel(p)
    assert _canon_runs(imp) == _canon_runs(import_otel(otel_spans["jsonl"]))
    assert len(imp.ledger) == 12 and imp.ledger["record"].is_unique
