"""evaltk._io.json_depth (the nesting screen) and read_csv_text (CSV as text, through Arrow)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk import _io


def _reference_depth(data: bytes) -> int:
    """The screen's rule one byte at a time: a backslash pairs with a following backslash or
    quote (which then counts for nothing), a quote toggles a string, a bracket outside one
    moves the depth."""
    depth = best = 0
    inside = pending = False
    for b in data:
        if pending and b in b'\\"':
            pending = False
            continue
        pending = False
        if b == 92:
            pending = True
        elif b == 34:
            inside = not inside
        elif not inside and b in b"[{":
            depth += 1
            best = max(best, depth)
        elif not inside and b in b"]}":
            depth -= 1
    return best


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=60) | st.text(alphabet='[]{}"\\ab\n', max_size=60).map(str.encode))
def test_json_depth_follows_the_byte_rule_on_any_bytes(data):
    assert _io.json_depth(data) == _reference_depth(data)
    assert _io.json_depth(memoryview(data)) == _reference_depth(data)


def test_json_depth_of_strings_with_brackets_quotes_and_escapes():
    cases = {'{"a": "[[[", "b": ["]"]}': 2, '["\\"[", [[1]]]': 3, '["\\\\", [2]]': 2,
             '["\\\\\\"]]]", [[[]]]]': 4, '"[[["': 0, "[]": 1, "": 0, '[""]': 1, '["""]': 1}
    for text, depth in cases.items():
        assert _io.json_depth(text) == depth, text
        assert _io.json_depth(text.encode()) == depth, text
    deep = "[" * 5000 + "]" * 5000
    assert _io.json_depth(deep) == 5000
    assert _io.json_depth(json.dumps({"k": ["é[", {"x": ["ü"]}]}, ensure_ascii=False)) == 4
