"""Real inputs for the importers, written by the real tools, offline.

* :func:`write_inspect_logs`: runs a small inspect_ai task with the ``mockllm/model``
  provider (scripted outputs with tool calls and token usage, three epochs, a failing
  sample, one that errors in one epoch, a cancelled one, a model-graded scorer) and writes
  its log as ``.eval`` and ``.json``.
* :func:`write_otel_spans`: records agent, model and tool spans with GenAI and
  OpenInference attributes through the opentelemetry-sdk, and writes them as SDK span
  JSON lines and as OTLP JSON (the protobuf encoding of opentelemetry-exporter-otlp-proto-common).

``python -m tests.ingest.make_inputs DIR`` writes both (the committed examples in
``data/examples/import/`` were made so).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

#: The inspect_ai script: sample id -> epoch -> the model's turns (a tool call, or the final text).
#: ``("lookup_order", "ZZ")`` is a call whose tool raises a ToolError.
SCRIPTS: dict[str, dict[int, list]] = {
    "s1": {e: [("lookup_order", "A1"), ("confirm_with_user", "A1"), ("refund", "A1"), "Refunded A1"]
           for e in (1, 2, 3)},
    "s2": {1: [("lookup_order", "B2"), "Cannot refund B2"],
           2: [("lookup_order", "B2"), ("refund", "B2"), "Refunded B2"],
           3: [("lookup_order", "ZZ"), "Cannot refund"]},
    "s3": {e: [("lookup_order", "C3"), ("confirm_with_user", "C3"), ("refund", "C3"), "Refunded C3"]
           for e in (1, 2, 3)},
    "s4": {e: [("lookup_order", "D4"), "Cannot refund D4"] for e in (2, 3)},
    "s5": {e: ["I will not do that"] for e in (1, 2, 3)},
}
#: Samples that stop: (sample, epoch) -> "error" or "cancel".
STOPS = {("s3", 2): "error", ("s4", 1): "cancel"}
EPOCHS = 3
#: The reducers inspect_ai applies in the task (their values are in the log's reductions).
PASS_KS = (2, 3)


def _inspect_task():
    import anyio
    from inspect_ai import Epochs, Task
    from inspect_ai.dataset import Sample
    from inspect_ai.log._samples import sample_active
    from inspect_ai.model import (
        ChatMessageSystem,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
        get_model,
    )
    from inspect_ai.scorer import (
        CORRECT,
        INCORRECT,
        PARTIAL,
        Score,
        accuracy,
        includes,
        pass_at,
        pass_k,
        scorer,
    )
    from inspect_ai.solver import generate, solver, use_tools
    from inspect_ai.tool import ToolError, tool

    def make_tool(name: str, result: str, doc: str):
        @tool(name=name)
        def t():
            async def execute(order_id: str):
                if order_id == "ZZ":
                    raise ToolError("no such order: ZZ")
                return result.format(order_id=order_id)
            execute.__doc__ = f"{doc}\n\nArgs:\n    order_id: the order id\n"
            return execute
        return t()

    tools = [make_tool("lookup_order", "order {order_id}: 1 red mug, 12 EUR", "Look up an order."),
             make_tool("confirm_with_user", "user confirmed the refund of {order_id}", "Ask the user to confirm."),
             make_tool("refund", "refunded {order_id}", "Refund an order.")]

    def agent_outputs(input, tools, tool_choice, config):
        words = input[0].text.split()
        sid, epoch = words[1], int(words[3])
        turn = sum(1 for m in input if m.role == "assistant")
        step = SCRIPTS[sid][epoch][turn]
        if isinstance(step, tuple):
            out = ModelOutput.for_tool_call("mockllm/model", step[0], {"order_id": step[1]},
                                            tool_call_id=f"{sid}-{epoch}-{turn}")
        else:
            out = ModelOutput.from_content("mockllm/model", step)
        out.usage = ModelUsage(input_tokens=100 + 10 * turn, output_tokens=5 + turn, total_tokens=105 + 11 * turn)
        return out

    def grader_outputs(input, tools, tool_choice, config):
        text = input[-1].text
        grade = "C" if "Refunded" in text else ("P" if "Cannot refund" in text and "B2" not in text else "I")
        out = ModelOutput.from_content("mockllm/grader", f"GRADE: {grade}")
        out.usage = ModelUsage(input_tokens=40, output_tokens=3, total_tokens=43)
        return out

    @solver
    def scripted():
        async def solve(state, generate):
            stop = STOPS.get((str(state.sample_id), state.epoch))
            if stop == "error":
                raise RuntimeError("the order service is down")
            if stop == "cancel":
                sample_active().interrupt("cancel")
                await anyio.sleep(30)
            state.messages.insert(0, ChatMessageSystem(content=f"sample {state.sample_id} epoch {state.epoch}"))
            return state
        return solve

    @scorer(metrics=[accuracy()])
    def graded():
        async def score(state, target):
            grader = get_model("mockllm/grader", custom_outputs=grader_outputs,
                               config=GenerateConfig(temperature=0.0))
            out = await grader.generate(f"Grade this answer: {state.output.completion}")
            value = {"C": CORRECT, "P": PARTIAL}.get(out.completion.removeprefix("GRADE: "), INCORRECT)
            return Score(value=value, explanation=out.completion)
        return score

    samples = [Sample(id=sid, input=f"Refund order {order}", target="Refunded")
               for sid, order in (("s1", "A1"), ("s2", "B2"), ("s3", "C3"), ("s4", "D4"), ("s5", "E5"))]
    reducers = [r(k) for k in PASS_KS for r in (pass_at, pass_k)]
    task = Task(dataset=samples, solver=[scripted(), use_tools(tools), generate()],
                scorer=[includes(), graded()], epochs=Epochs(EPOCHS, reducers), name="refunds")
    return task, get_model("mockllm/model", custom_outputs=agent_outputs)


def write_inspect_logs(out: Path) -> dict[str, Path]:
    """Run the task once; write its log as ``.eval`` and ``.json`` into ``out``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log

    task, model = _inspect_task()
    out.mkdir(parents=True, exist_ok=True)
    (log,) = inspect_eval(task, model=model, log_dir=str(out / "raw"), log_format="eval", fail_on_error=False,
                          display="none", max_samples=1, log_level="error")
    src = Path(log.location)
    paths = {"eval": out / "refunds.eval", "json": out / "refunds.json"}
    src.replace(paths["eval"])
    (out / "raw").rmdir()
    write_eval_log(read_eval_log(str(paths["eval"])), str(paths["json"]), format="json")
    return paths


def _record_spans():
    """Three traces recorded with the SDK: GenAI attributes (complete), OpenInference
    attributes (complete), and one whose root span never ended (in progress)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import Status, StatusCode

    spans = []

    class Collect(SpanExporter):
        def export(self, batch):
            spans.extend(batch)
            return SpanExportResult.SUCCESS

    provider = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(Collect()))
    tracer = provider.get_tracer("evaltk-tests")

    def tool_span(name, args, result, error=None):
        with tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(args), "gen_ai.tool.call.result": result}) as s:
            if error:
                s.set_status(Status(StatusCode.ERROR, error))

    def chat(tokens):
        with tracer.start_as_current_span("chat gpt-test", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test",
                "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 7}):
            pass

    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Refund order A1"}]}])
    with tracer.start_as_current_span("invoke_agent refunder", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refunder",
            "gen_ai.input.messages": messages, "app.tenant": "acme", "app.retries": [1, 2]}):
        chat(120)
        tool_span("lookup_order", {"order_id": "ZZ"}, "no such order", error="no such order: ZZ")
        tool_span("lookup_order", {"order_id": "A1"}, "order A1: 1 red mug")
        chat(150)
        tool_span("confirm_with_user", {"order_id": "A1"}, "confirmed")
        tool_span("refund", {"order_id": "A1"}, "refunded A1")
    with tracer.start_as_current_span("Agent", attributes={
            "openinference.span.kind": "AGENT", "input.value": "Cancel my subscription", "agent.name": "helper"}):
        with tracer.start_as_current_span("ChatCompletion", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-test", "llm.token_count.prompt": 80,
                "llm.token_count.completion": 9, "llm.token_count.total": 89}):
            pass
        with tracer.start_as_current_span("plan", attributes={"openinference.span.kind": "CHAIN"}):
            with tracer.start_as_current_span("cancel_subscription", attributes={
                    "openinference.span.kind": "TOOL", "tool.name": "cancel_subscription",
                    "tool.parameters": '{"plan": "pro"}', "output.value": "cancelled"}):
                pass
    root = tracer.start_span("invoke_agent refunder", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                  "gen_ai.agent.name": "refunder"})
    from opentelemetry.trace import set_span_in_context

    ctx = set_span_in_context(root)
    with tracer.start_as_current_span("execute_tool refund", context=ctx, attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund"}):
        pass  # the root is never ended: a mid-write trace
    return spans


def write_otel_spans(out: Path) -> dict[str, Path]:
    """``spans.jsonl`` (``ReadableSpan.to_json`` per line, as a JSONL span exporter writes),
    ``otlp.json`` (OTLP JSON: trace and span ids in hex, as the OTLP/JSON spec and the
    Collector's file exporter write them) and ``otlp-protobuf-json.json`` (protobuf's own JSON
    mapping of the same request: ids in base64)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = _record_spans()
    out.mkdir(parents=True, exist_ok=True)
    paths = {"jsonl": out / "spans.jsonl", "otlp": out / "otlp.json", "protobuf": out / "otlp-protobuf-json.json"}
    paths["jsonl"].write_text("".join(s.to_json(indent=None) + "\n" for s in spans), encoding="utf-8")
    doc = MessageToDict(encode_spans(spans))
    paths["protobuf"].write_text(json.dumps(doc, indent=1), encoding="utf-8")
    import base64

    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in s:
                        s[k] = base64.b64decode(s[k]).hex()
    paths["otlp"].write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return paths


def main(argv: Sequence[str]) -> int:
    out = Path(argv[0]) if argv else Path("data/examples/import")
    print(write_inspect_logs(out), write_otel_spans(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
