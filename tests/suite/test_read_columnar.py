"""The columnar reader of run files (Arrow, no Python object per trial) against the
reference reader: the same run on every document it reads, and every document it cannot
decide left to the reference reader, whose error names the file, the task and the field.

Rules: RFC 0246 (``../shared/seeds/000_daedeefabf03a1f5.txt``) and the run format
(docs/suite.md); the reference is ``load_suite_run`` on the parsed mapping.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.errors import EvaltkError, SchemaViolation, UnreadableInput
from evaltk.suite import load_suite_run, summarize_suite
from evaltk.suite._read import _columnar_run

from .test_suite import BAD, DATA, EXAMPLES, _mutate

_ARRAYS = ("score", "trajectory_matched", "fixture_miss", "cost", "latency_ms")
_FIELDS = ("suite", "version", "thresholds", "count", "pass_rule", "k", "aggregation", "task_ids",
           "task_types", "trajectories", "source")


def assert_same_run(a, b):
    for f in _FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    for f in _ARRAYS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and x.dtype == y.dtype, f
        assert np.array_equal(x, y, equal_nan=True), f


def reference(path: Path):
    """The reference reader on the parsed document, named as the file."""
    return load_suite_run(json.loads(path.read_text()), file=str(path))


def outcome(fn):
    try:
        return fn(), None
    except EvaltkError as e:
        return None, (type(e), str(e), e.record, e.field)


def write(tmp_path, d, name="run.json", **dump):
    p = tmp_path / name
    p.write_text(json.dumps(d, **dump))
    return p


def generated(seed: int, n_tasks: int = 60, count: int = 3) -> dict:
    """A run using every form the format allows: ids and aliases, types and kinds, tasks
    with and without a trajectory (every match mode, no tools, no forbidden list), calls
    missing where the host's verdict or a fixture miss stands in, scores as integers,
    costs under either name, extension and extra fields."""
    rng = np.random.default_rng(seed)
    tools = ["lookup", "refund", "search", "cancel", "é-tool"]
    tasks = []
    for i in range(n_tasks):
        t: dict = {("id" if i % 7 else "id"): f"task-{i}"}
        if rng.random() < 0.5:
            t["type"] = str(rng.choice(["golden", "rubric"]))
        if rng.random() < 0.2:
            t["notes"] = {"owner": "x", "deep": [[{"a": None}], []]}
        spec = None
        r = rng.random()
        if r < 0.6:
            spec = {}
            if rng.random() < 0.8:
                spec["match"] = str(rng.choice(["strict", "unordered", "subset", "superset"]))
            if rng.random() < 0.85:
                spec["tools"] = [str(x) for x in rng.choice(tools, size=int(rng.integers(0, 3)))]
            if rng.random() < 0.5:
                spec["forbidden"] = ["delete_account"]
            t["expected"] = {"trajectory": spec, "output": "42"}
        elif r < 0.7:
            t["expected"] = {"output": "no trajectory here"}
        trials = []
        for j in range(count):
            tr: dict = {}
            miss = rng.random() < 0.1
            if miss:
                tr["fixtureMiss"] = True
            elif rng.random() < 0.1:
                tr["fixtureMiss"] = False
            if not (miss and rng.random() < 0.5):
                tr["score"] = int(rng.integers(0, 2)) if rng.random() < 0.1 else round(float(rng.random()), 3)
            if rng.random() < 0.7:
                tr["cost" if rng.random() < 0.8 else "costUsd"] = round(float(rng.random()) / 10, 4)
            if rng.random() < 0.7:
                tr["latencyMs"] = int(rng.integers(0, 5000)) if rng.random() < 0.8 else float(rng.random() * 100)
            if spec is not None:
                c = rng.random()
                if c < 0.75 or (not miss and c < 0.9):
                    tr["toolCalls"] = [str(x) for x in rng.choice(tools + ["delete_account"],
                                                                  size=int(rng.integers(0, 4)))]
                if c >= 0.75 and (not miss or rng.random() < 0.5):
                    tr["trajectoryMatched"] = bool(rng.random() < 0.5)
            elif rng.random() < 0.3:
                tr["toolCalls"] = ["search"]
            if rng.random() < 0.1:
                tr["x-host"] = {"attempt": j}
            if rng.random() < 0.1:
                tr["trialIndex"] = j
            trials.append(tr)
        t["trials"] = trials
        tasks.append(t)
    return {"suite": f"gen-{seed}", "version": "1", "thresholds": {"passScore": 0.6, "maxCost": 100},
            "trials": {"count": count, "passRule": str(rng.choice(["mean", "all", "any"]))},
            "aggregation": "mean", "metadata": {"host": "test"}, "tasks": tasks}


# =========================================================================== the same run


def test_fixtures_and_examples_read_columnwise_to_the_same_run():
    runs = [p for p in DATA.iterdir() if p.name.startswith(("leg-", "example-")) and p.suffix == ".json"]
    runs += list(EXAMPLES.glob("*run*.json"))
    assert len(runs) >= 6
    for p in runs:
        fast = _columnar_run(p.read_bytes(), str(p))
        assert fast is not None, p.name
        assert_same_run(fast, reference(p))
        assert_same_run(load_suite_run(p), fast)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("indent", [None, 2])
def test_generated_runs_read_columnwise_to_the_same_run_and_summary(tmp_path, seed, indent):
    d = generated(seed)
    p = write(tmp_path, d, indent=indent, ensure_ascii=bool(seed % 2))
    fast = _columnar_run(p.read_bytes(), str(p))
    ref = reference(p)
    if seed % 2 == 0:  # no escapes in the text: nothing is left undecided
        assert fast is not None
    if fast is not None:
        assert_same_run(fast, ref)
    run = load_suite_run(p)
    assert_same_run(run, ref)
    # every record accounted for: every task, and count trials each
    assert run.task_count == len(d["tasks"]) and run.score.size == sum(len(t["trials"]) for t in d["tasks"])
    assert summarize_suite(run).to_dict() == summarize_suite(ref).to_dict()


# =========================================================================== bad records


@pytest.mark.parametrize("name, path, value, record, fld", BAD, ids=[b[0] for b in BAD])
def test_a_bad_record_in_a_file_names_what_the_reference_names(tmp_path, name, path, value, record, fld):
    d = _mutate(path, value)
    p = write(tmp_path, d)
    assert _columnar_run(p.read_bytes(), str(p)) is None
    got, err = outcome(lambda: load_suite_run(p))
    ref, ref_err = outcome(lambda: load_suite_run(json.loads(p.read_text()), file=str(p)))
    assert got is None and err == ref_err
    assert err[0] is SchemaViolation and err[2] == record and err[3] == fld and err[1].startswith(str(p))


MUTATIONS = [
    # null where the reference reader tells a null key from an absent one
    ("trajectory null", lambda t, tr: t.setdefault("expected", {}).update(trajectory=None)),
    ("match null", lambda t, tr: t.update(expected={"trajectory": {"match": None, "tools": ["a"]}})),
    ("forbidden null", lambda t, tr: t.update(expected={"trajectory": {"tools": ["a"], "forbidden": None}})),
    ("id null beside taskId", lambda t, tr: t.update(id=None, taskId="alias")),
    ("taskId only", lambda t, tr: t.update(taskId=t.pop("id"))),
    ("type null beside kind", lambda t, tr: t.update(type=None, kind="golden")),
    ("kind only", lambda t, tr: t.update(kind="rubric")),
    ("score null", lambda t, tr: tr.update(score=None)),
    ("score null on a miss", lambda t, tr: tr.update(score=None, fixtureMiss=True)),
    ("cost null", lambda t, tr: tr.update(cost=None, costUsd=0.5)),
    # values and shapes Arrow holds differently, or not in one column
    ("score huge int", lambda t, tr: tr.update(score=18446744073709551617)),
    ("latency huge int", lambda t, tr: tr.update(latencyMs=18446744073709551617)),
    ("cost 1e308", lambda t, tr: tr.update(cost=1e308)),
    ("cost negative zero", lambda t, tr: tr.update(cost=-0.0)),
    ("score int 1", lambda t, tr: tr.update(score=1)),
    ("object calls", lambda t, tr: tr.update(toolCalls=[{"name": "lookup"}])),
    ("object calls bad", lambda t, tr: tr.update(toolCalls=[{"args": 1}])),
    ("null call", lambda t, tr: tr.update(toolCalls=["a", None])),
    ("calls not a list", lambda t, tr: tr.update(toolCalls="lookup")),
    ("host not bool", lambda t, tr: tr.update(trajectoryMatched="yes")),
    ("trial not object", lambda t, tr: t["trials"].__setitem__(0, 0.5)),
    ("task null", None),
    ("empty tool name", lambda t, tr: t.update(expected={"trajectory": {"tools": [""], "forbidden": ["x"]}})),
    ("empty forbidden name", lambda t, tr: t.update(expected={"trajectory": {"tools": ["a"], "forbidden": [""]}})),
    ("empty id", lambda t, tr: t.update(id="")),
    ("empty type", lambda t, tr: t.update(type="")),
    ("separator in a tool name", lambda t, tr: t.update(expected={"trajectory": {"tools": ["a\x1fb"]}})),
    ("separator in a call", lambda t, tr: tr.update(toolCalls=["a\x1fb"])),
    ("lone surrogate", lambda t, tr: t.update(notes="\ud800")),
    ("single-trial task", None),
    ("trials null", lambda t, tr: t.update(trials=None)),
    ("expected not object", lambda t, tr: t.update(expected=["a"])),
    ("extra trial key", lambda t, tr: tr.update(output="free text", passed=True)),
    ("misspelt trial key", lambda t, tr: tr.update(latency_ms=3)),
    ("x- trajectory key", lambda t, tr: t.update(expected={"trajectory": {"tools": ["a"], "x-why": 1}})),
    ("trajectory string", lambda t, tr: t.update(expected={"trajectory": "strict"})),
    ("metadata any shape", lambda t, tr: tr.update(metadata=[1, "a", None])),
]


@pytest.mark.parametrize("name, change", MUTATIONS, ids=[m[0] for m in MUTATIONS])
@pytest.mark.parametrize("where", [0, 17, 59])
def test_every_form_reads_as_the_reference_reads_it(tmp_path, name, change, where):
    d = generated(3)
    task = d["tasks"][where]
    if name == "task null":
        d["tasks"][where] = None
    elif name == "single-trial task":
        d["tasks"][where] = {"id": "single", "score": 0.5}
    else:
        change(task, task["trials"][0])
    p = tmp_path / "run.json"
    p.write_text(json.dumps(d, ensure_ascii=name != "lone surrogate"), encoding="utf-8",
                 errors="surrogatepass")
    got, err = outcome(lambda: load_suite_run(p))
    try:
        parsed = json.loads(p.read_text(encoding="utf-8", errors="surrogatepass"))
    except ValueError:
        parsed = None
    if parsed is None or name == "lone surrogate":
        assert err is not None  # the text itself is refused, as the reference reader refuses it
        return
    ref, ref_err = outcome(lambda: load_suite_run(parsed, file=str(p)))
    assert err == ref_err
    if ref is not None:
        assert_same_run(got, ref)


def test_an_escaped_key_does_not_hide_a_null(tmp_path):
    d = copy.deepcopy(generated(4))
    d["tasks"][5]["expected"] = {"output": 1}
    text = json.dumps(d).replace('"expected": {"output": 1}', '"expected": {"traject\\u006fry": null}', 1)
    assert "traject\\u006fry" in text
    p = tmp_path / "run.json"
    p.write_text(text)
    with pytest.raises(SchemaViolation, match="is null") as e:
        load_suite_run(p)
    assert e.value.record == "task-5" and e.value.field == "expected.trajectory"


def test_not_json_and_limits_are_the_reference_readers(tmp_path):
    from evaltk import _io
    from evaltk.errors import LimitExceeded, UnreadableInput

    d = generated(5, n_tasks=3)
    p = tmp_path / "run.json"
    p.write_text(json.dumps(d).replace('"suite"', '"suite"', 1)[:-1] + ', "suite": "again"}')
    with pytest.raises(SchemaViolation, match="duplicate object key 'suite'"):
        load_suite_run(p)
    p.write_text(json.dumps(d).replace('"passScore": 0.6', '"passScore": NaN'))
    with pytest.raises(SchemaViolation, match="thresholds.passScore"):
        load_suite_run(p)
    p.write_text(json.dumps(d)[:-1] + ', "x-deep": ' + "[" * 600 + "]" * 600 + "}")
    with pytest.raises(LimitExceeded):
        load_suite_run(p)
    with _io.limits(depth=2000):
        assert load_suite_run(p).task_count == 3
    p.write_text(json.dumps(d) + "\n{}")
    with pytest.raises(UnreadableInput, match="not JSON"):
        load_suite_run(p)
    p.write_bytes(json.dumps(d).encode().replace(b'"golden"', b'"g\xe9"'))
    with pytest.raises(UnreadableInput, match="not UTF-8"):
        load_suite_run(p)
    assert math.isfinite(load_suite_run(write(tmp_path, d, "plain")).score.sum())  # any name: JSON first


@pytest.mark.parametrize("tasks", [[{"id": "a"}], [{"taskId": "a", "trials": []}], [{}], [{"id": "a", "trials": {}}],
                                   [{"id": "a", "trials": [{"score": 0.5}], "expected": {"trajectory": {}}}],
                                   [{"id": "2024-01-01", "type": "2024-01-02T00:00:00", "trials": [{"score": 1}]}]])
def test_odd_task_lists_read_as_the_reference_reads_them(tmp_path, tasks):
    d = {"suite": "odd", "version": "2024-01-01", "thresholds": {"passScore": 0.5}, "tasks": tasks}
    p = write(tmp_path, d)
    got, err = outcome(lambda: load_suite_run(p))
    ref, ref_err = outcome(lambda: load_suite_run(json.loads(p.read_text()), file=str(p)))
    assert err == ref_err
    if ref is not None:
        assert_same_run(got, ref)


@pytest.mark.parametrize("text", ["null", " null", "5", '"run"', "[]", "[{}]", "{}", '{"suite": "a"} null',
                                  '\ufeff{"suite": "a"}', "\n\t{\"suite\": null}", "{} {}", ""])
def test_documents_that_are_not_one_object_read_as_the_reference_reads_them(tmp_path, text):
    # Arrow's JSON reader dies on a bare `null`: the text never reaches it unless it opens an object
    p = tmp_path / "run.json"
    p.write_text(text, encoding="utf-8")
    got, err = outcome(lambda: load_suite_run(p))
    doc, _ = outcome(lambda: _io_document(p))
    if isinstance(doc, str):  # a mapping is what the reference reader is handed; a string would be a path
        assert got is None and err[0] is SchemaViolation and err[3] == "(document)"
        return
    ref, ref_err = outcome(lambda: load_suite_run(_io_document(p), file=str(p)))
    assert got is None and ref is None and err == ref_err


def _io_document(p):
    from evaltk import _io

    return _io.read_document(p)


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "NaN"])
def test_a_bare_non_finite_number_in_a_trial_is_named_by_the_reference_reader(tmp_path, token):
    d = generated(6, n_tasks=4)
    text = json.dumps(d)
    first = json.dumps(d["tasks"][2]["trials"][0]["score"])
    at = text.index('"score": ' + first, text.index('"id": "' + d["tasks"][2]["id"] + '"'))
    p = tmp_path / "run.json"
    p.write_text(text[:at] + '"score": ' + token + text[at + len('"score": ' + first):])
    with pytest.raises(SchemaViolation) as e:
        load_suite_run(p)
    assert e.value.record == d["tasks"][2]["id"] and e.value.field == "trials[0].score"


# =========================================================================== call lists as integers

_NAMES = st.lists(st.sampled_from(["a", "b", "cc", "", "é"]), max_size=6)


@settings(max_examples=60, deadline=None)
@given(lists=st.lists(_NAMES, min_size=1, max_size=30), cut=st.integers(0, 5))
def test_call_lists_as_integers_group_as_their_text_does(lists, cut):
    """Two lists share an integer exactly when they share the text key (same names, same order)."""
    import pyarrow as pa

    from evaltk.suite._read import _group, _list_codes, _list_key

    arr = pa.array(lists, type=pa.list_(pa.string()))[cut % len(lists):]  # an offset into the buffers too
    numbers = _list_codes(pa, arr)
    text, _ = _group(pa, [_list_key(pa, arr, len(arr))])
    assert numbers is not None and len(numbers) == len(arr)
    assert len(set(zip(numbers.tolist(), text.tolist(), strict=True))) == len(set(numbers.tolist())) \
        == len(set(text.tolist()))


def test_calls_too_long_for_an_integer_are_grouped_by_their_text(tmp_path):
    """A call list whose integer would pass 62 bits is matched through the text key: the same run."""
    long_calls = ["lookup", "refund", "search"] * 30
    d = {"suite": "s", "thresholds": {"passScore": 0.5}, "trials": {"count": 2},
         "tasks": [{"id": f"t{i}", "expected": {"trajectory": {"tools": long_calls, "match": "unordered"}},
                    "trials": [{"score": 0.9, "toolCalls": long_calls},
                               {"score": 0.9, "toolCalls": long_calls[:-1] + ["cancel"]}]} for i in range(3)]}
    p = write(tmp_path, d)
    fast = _columnar_run(p.read_bytes(), str(p))
    assert fast is not None
    assert_same_run(fast, reference(p))
    assert fast.trajectory_matched.tolist() == [[True, False]] * 3


def test_has_trajectory_is_computed_once_and_read_only(tmp_path):
    run = load_suite_run(write(tmp_path, generated(0)))
    has = run.has_trajectory
    assert has is run.has_trajectory and has.tolist() == [t is not None for t in run.trajectories]
    with pytest.raises(ValueError):
        has[0] = not has[0]


def test_an_indented_run_with_a_raw_line_break_in_a_string_is_refused_by_the_reference(tmp_path):
    """The columnar reader parses a run as one line (line breaks between tokens as spaces);
    a raw line break inside a string makes the text no JSON, and it is the reference reader
    that says so, not a run read with a space in a task id."""
    d = generated(0)
    text = json.dumps(d, indent=2).replace(f'"{d["tasks"][0]["id"]}"', '"t\nx"', 1)
    p = tmp_path / "run.json"
    p.write_text(text)
    assert _columnar_run(p.read_bytes(), str(p)) is None
    with pytest.raises(UnreadableInput) as e:   # not JSON (exit 66 from the CLI)
        load_suite_run(p)
    assert "run.json" in str(e.value)
