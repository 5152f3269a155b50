"""Tests for evaltk._io: the readers and the atomic writer every format shares."""

from __future__ import annotations

import json

import pytest

from evaltk import _io
from evaltk.errors import SchemaViolation, UnreadableInput


def test_read_json_is_strict(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"a": 1, "a": 2}')
    with pytest.raises(SchemaViolation, match="duplicate object key 'a'") as e:
        _io.read_json(p)
    assert e.value.file == str(p) and e.value.field == "a"
    p.write_text('{"a": NaN}')
    with pytest.raises(UnreadableInput, match="NaN is not JSON"):
        _io.read_json(p)
    assert _io.loads_json('{"a": NaN}', allow_nan=True)["a"] != 0
    p.write_text('{\n "a": }')
    with pytest.raises(UnreadableInput, match=r"not JSON: .*\(column 7\)") as e:
        _io.read_json(p)
    assert e.value.record == 2
    with pytest.raises(UnreadableInput, match="no such file"):
        _io.read_json(tmp_path / "absent.json")
    with pytest.raises(UnreadableInput, match="is a directory"):
        _io.read_json(tmp_path)


def test_utf8_errors_name_byte_offset_and_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b'\xef\xbb\xbf{"a":\n"\xe9"}')
    with pytest.raises(UnreadableInput, match=r"not UTF-8 \(byte 0xe9 at offset 10\)") as e:
        _io.read_text(p)
    assert e.value.record == 2
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert _io.read_json(p) == {"a": 1}


def test_read_jsonl_names_the_line(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n')
    with pytest.raises(UnreadableInput) as e:
        _io.read_jsonl(p)
    assert e.value.record == 4
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert _io.read_jsonl(p) == [{"a": 1}, {"a": 2}]


def test_write_json_is_atomic(tmp_path):
    p = tmp_path / "sub" / "out.json"
    _io.write_json(p, {"é": 1})
    assert json.loads(p.read_text("utf-8")) == {"é": 1}
    with pytest.raises(ValueError):
        _io.write_json(p, {"x": float("nan")})  # refused: the old file stays whole
    assert json.loads(p.read_text("utf-8")) == {"é": 1}
    assert [q.name for q in p.parent.iterdir()] == ["out.json"]
