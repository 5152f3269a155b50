"""evaltk._io.json_text: json.dumps(indent=2) for small documents, one entry per line for long ones."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk._io import json_text, write_json

scalars = (st.none() | st.booleans() | st.integers() | st.text(max_size=6)
           | st.floats(allow_nan=False, allow_infinity=False))
keys = st.text(max_size=4) | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(-2, 2, allow_nan=False)
docs = st.recursive(scalars, lambda kids: st.lists(kids, max_size=5) | st.tuples(kids, kids)
                    | st.dictionaries(keys, kids, max_size=5), max_leaves=30)


@settings(max_examples=300)
@given(docs, st.booleans())
def test_a_small_document_is_byte_for_byte_json_dumps_indent_2(doc, ascii_only):
    assert json_text(doc, ensure_ascii=ascii_only) == json.dumps(doc, indent=2, ensure_ascii=ascii_only)


text_keys = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4)
                         | st.dictionaries(st.text(max_size=3), kids, max_size=4), max_leaves=20)


@settings(max_examples=200)
@given(text_keys)
def test_sorted_keys_as_json_dumps(doc):
    assert json_text(doc, sort_keys=True) == json.dumps(doc, indent=2, sort_keys=True)


@settings(max_examples=300)
@given(docs, st.integers(0, 3))
def test_a_long_container_parses_to_what_json_dumps_writes(doc, long):
    text = json_text(doc, long=long)
    assert json.loads(text) == json.loads(json.dumps(doc))


def test_a_long_list_is_one_compact_entry_per_line():
    rows = [{"task": f"t{i}", "score": i / 4, "calls": ["a", "b"]} for i in range(1001)]
    lines = json_text({"n": 1001, "tasks": rows}).splitlines()
    assert lines[:3] == ["{", '  "n": 1001,', '  "tasks": [']
    assert lines[3] == '    {"task": "t0", "score": 0.0, "calls": ["a", "b"]},'
    assert lines[-3:] == ['    {"task": "t1000", "score": 250.0, "calls": ["a", "b"]}', "  ]", "}"]
    assert len(lines) == 1001 + 5


def test_nan_default_and_bad_keys_behave_as_json_dumps(tmp_path):
    assert json_text({"x": math.nan}) == json.dumps({"x": math.nan}, indent=2)
    with pytest.raises(ValueError):
        json_text([math.inf], allow_nan=False)
    with pytest.raises(ValueError):
        write_json(tmp_path / "x.json", {"x": math.nan})
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(TypeError):
        json_text({(1, 2): 0})
    assert json_text({"p": tmp_path}, default=str) == json.dumps({"p": tmp_path}, indent=2, default=str)
