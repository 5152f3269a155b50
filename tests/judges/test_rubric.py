"""Rubrics as files (issue #14, part 2; seed 002: "a rubric edit is a new instrument").

A rubric names its measure, question, answers (from the one vocabulary), unit and prompt;
its digest is over canonical content; its templates run in a sandbox and see the trace
facts only, never a label or the human vote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.errors import SchemaViolation, UnreadableInput
from evaltk.judges import (
    MEASURE_UNITS,
    SHIPPED_RUBRICS,
    UNIT_CONTEXT,
    load_rubric,
    run_judge,
    unit_of,
)
from evaltk.values import ANSWER_VOCABULARIES, answer_categories

from .chat_server import ChatServer, reply

SCHEMA = Path(__file__).resolve().parents[2] / "evaltk" / "schemas" / "rubric.schema.json"


def shipped_doc(name: str = "x_task") -> dict:
    from importlib import resources

    return yaml.safe_load(resources.files("evaltk.judges").joinpath("rubrics", f"{name}.yaml").read_text("utf-8"))


def write(tmp_path: Path, text: str, name: str = "r.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------- the shipped rubrics


@pytest.mark.parametrize("name", SHIPPED_RUBRICS)
def test_shipped_rubrics_use_the_vocabulary_and_the_seed_unit(name):
    r = load_rubric(name)
    assert r.measure == name and r.unit == MEASURE_UNITS[name]
    assert set(r.answers) <= set(ANSWER_VOCABULARIES[name])
    assert set(answer_categories(name)) <= set(r.answers)
    assert r.digest.startswith("sha256:") and len(r.digest) == 7 + 64
    assert r.template_digest.startswith("sha256:") and r.template_digest != r.digest


def test_seed_units():
    # seed 002: x_task on the terminal screen, x_eff on the run, x_ctx per gradable step, g_ on the guide
    assert [unit_of(m) for m in ("x_task", "t_eff", "x_ctx", "g_adherence")] == ["screen", "run", "step", "guide"]
    with pytest.raises(ValueError, match="computed from the trace"):
        unit_of("x_safe")


def test_the_schema_is_valid_json_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA.read_text("utf-8")))


# --------------------------------------------------------------------------- the digest


def _reordered(doc, rnd):
    if isinstance(doc, dict):
        keys = list(doc)
        rnd.shuffle(keys)
        return {k: _reordered(doc[k], rnd) for k in keys}
    if isinstance(doc, list):
        return [_reordered(v, rnd) for v in doc]
    return doc


@settings(max_examples=25, deadline=None)
@given(rnd=st.randoms(use_true_random=False), flow=st.booleans(), indent=st.sampled_from([2, 4]))
def test_digest_is_over_content_not_bytes(tmp_path_factory, rnd, flow, indent):
    doc = shipped_doc("x_eff")
    text = "# a comment that changes the bytes\n" + yaml.safe_dump(
        _reordered(doc, rnd), sort_keys=False, default_flow_style=flow, indent=indent, width=70)
    p = write(tmp_path_factory.mktemp("r"), text)
    assert p.read_bytes() != yaml.safe_dump(doc).encode()
    r = load_rubric(p)
    assert (r.digest, r.template_digest) == (load_rubric("x_eff").digest, load_rubric("x_eff").template_digest)


@pytest.mark.parametrize("edit", ["question", "means", "user", "id"])
def test_any_edit_of_meaning_is_a_new_digest(edit):
    doc = shipped_doc("x_task")
    base = load_rubric(doc)
    if edit == "question":
        doc["question"] += " Look closely."
    elif edit == "means":
        doc["answers"][0]["means"] = "The screen shows it, roughly."
    elif edit == "user":
        doc["prompt"]["user"] += "\nBe strict."
    else:
        doc["id"] = "x_task.terminal-screen.v2"
    r = load_rubric(doc)
    assert r.digest != base.digest
    assert (r.template_digest != base.template_digest) == (edit == "user")


# --------------------------------------------------------------------------- refusals


def test_duplicate_key_is_refused_naming_file_line_and_key(tmp_path):
    src = yaml.safe_dump(shipped_doc("x_task"), sort_keys=False)
    p = write(tmp_path, src + "question: Is it done?\n")
    with pytest.raises(SchemaViolation) as e:
        load_rubric(p)
    assert e.value.file == str(p) and e.value.field == "question" and isinstance(e.value.record, int)
    assert "duplicate key" in str(e.value)


def test_unquoted_yes_is_explained(tmp_path):
    src = yaml.safe_dump(shipped_doc("x_task"), sort_keys=False).replace("word: 'yes'", "word: yes")
    with pytest.raises(SchemaViolation, match="quote yes and no") as e:
        load_rubric(write(tmp_path, src))
    assert e.value.field == "answers.0.word"


@pytest.mark.parametrize(("change", "field", "match"), [
    (lambda d: d["answers"].append({"word": "lots", "means": "x"}), "answers.3.word", "not an answer of x_task"),
    (lambda d: d["answers"].pop(1), "answers", "missing: no"),
    (lambda d: d.update(unit="run"), "unit", "asked on the screen"),
    (lambda d: d.update(measure="x_safe", unit="run"), "measure", "computed from the trace"),
    (lambda d: d.update(extra="x"), "(top level)", "Additional properties"),
    (lambda d: d["answers"].append({"word": "Yes", "means": "again"}), "answers.3.word", "listed twice"),
])
def test_a_rubric_outside_the_vocabulary_or_the_seed_is_refused(change, field, match):
    doc = shipped_doc("x_task")
    change(doc)
    with pytest.raises(SchemaViolation, match=match) as e:
        load_rubric(doc)
    assert e.value.field == field


def test_unreadable_rubric_files(tmp_path):
    with pytest.raises(UnreadableInput, match="no such file"):
        load_rubric(tmp_path / "missing.yaml")
    with pytest.raises(UnreadableInput, match="not valid YAML"):
        load_rubric(write(tmp_path, "a: [1, 2\n"))


def test_t_spelling_reads_as_the_x_measure_with_the_same_digest():
    doc = shipped_doc("x_task")
    doc["measure"] = "t_task"
    assert load_rubric(doc).digest == load_rubric("x_task").digest


# --------------------------------------------------------------------------- the judge never sees the human vote


@pytest.mark.parametrize("template", [
    "{{ label }}", "{{ labels }}", "{{ human_vote }}", "{{ y }}", "{{ answers_table }}", "{{ trace_id }}",
    "{% for l in labels %}{{ l }}{% endfor %}",
])
def test_a_template_naming_labels_is_refused_at_load(template):
    doc = shipped_doc("x_task")
    doc["prompt"]["user"] = "Task: {{ task }} " + template
    with pytest.raises(SchemaViolation, match="never sees labels or the human vote") as e:
        load_rubric(doc)
    assert e.value.field == "prompt.user"


@pytest.mark.parametrize(("name", "template"), [
    ("x_ctx", "{{ step.label }}"), ("x_ctx", "{{ step['human_vote'] }}"), ("x_eff", "{{ steps[0].label }}"),
    ("x_task", "{{ task.__class__.__mro__ }}"), ("x_eff", "{{ steps.append(1) }}"),
])
def test_a_template_reaching_for_a_field_no_fact_has_fails_in_the_sandbox(name, template):
    doc = shipped_doc(name)
    doc["prompt"]["user"] += " " + template
    with pytest.raises(SchemaViolation, match="cannot be rendered on the trace facts") as e:
        load_rubric(doc)
    assert e.value.field == "prompt.user"


def test_no_label_reaches_the_server_even_when_the_trace_carries_one(tmp_path):
    """The trace record carries an extra `label` field and the labels sit beside it; the
    server receives the prompts and none of them holds the label's text."""
    secret = "HUMAN-VOTE-7f3a"
    run = {"trace_id": "a", "task": "Mute the phone", "status": "complete", "label": secret,
           "human_vote": secret, "y": secret,
           "steps": [{"index": 0, "action": "tap", "target": "Mute", "screen": "Muted", "label": secret},
                     {"index": 1, "action": "finish", "target": None, "screen": "Muted: yes"}],
           "guide": {"id": "g1", "reference_id": secret, "steps": [{"id": "s1", "action": "tap"}]}}
    with ChatServer(lambda body, n: reply("yes")) as server:
        for name in SHIPPED_RUBRICS:
            res = run_judge([run], name, judge={"name": "j", "model": "m", "base_url": server.base_url})
            assert len(res.answers) >= 1
    sent = json.dumps(server.bodies)
    assert server.calls >= 3 and secret not in sent and "Mute the phone" in sent


def test_every_unit_context_is_facts_only():
    forbidden = {"label", "labels", "human", "human_vote", "y", "truth", "trace_id", "rater"}
    for unit, names in UNIT_CONTEXT.items():
        assert not forbidden & set(names), unit


def test_the_docs_rubric_with_its_comments_has_the_shipped_digest(tmp_path):
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "judges.md").read_text("utf-8")
    block = re.search(r"```yaml\n(schema: evaltk.rubric/1\n.*?)```", doc, re.S).group(1)
    assert "#" in block  # comments, another layout: the same content
    assert load_rubric(write(tmp_path, block)).digest == load_rubric("x_task").digest


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(SHIPPED_RUBRICS), data=st.data(),
       case=st.sampled_from([str.lower, str.upper, str.title, str.capitalize]),
       sep=st.sampled_from(["_", " ", "-"]), pre=st.sampled_from(["", "Answer: ", "answer = ", "**", '"', " \n"]),
       post=st.sampled_from(["", ".", "!", "**", '"', "\n"]))
def test_a_clear_reply_reads_as_its_word_however_it_is_spelled(name, data, case, sep, pre, post):
    r = load_rubric(name)
    word = data.draw(st.sampled_from(r.answers))
    text = pre + case(word.replace("_", sep)) + post
    assert r.read_reply(text) == (word, None)
    # and a reply that names no word of the rubric never reads as one
    other = data.draw(st.sampled_from([w for m in ANSWER_VOCABULARIES.values() for w in m if w not in r.answers]
                                      or ["maybe"]))
    got, reason = r.read_reply(pre + other + post)
    assert got is None and reason.startswith("unreadable reply")
