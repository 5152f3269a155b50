"""evaltk._io.json_depth (the nesting screen) and read_csv_text (CSV as text, through Arrow)."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evaltk import _io
from evaltk.errors import SchemaViolation, UnreadableInput


def _walk(data: bytes):
    """Each byte that counts, with whether a string holds it: a backslash pairs with a
    following backslash or quote (which then counts for nothing), a quote toggles a string."""
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
        else:
            yield b, inside


def _reference_depth(data: bytes) -> int:
    """The screen's rule one byte at a time: a bracket outside a string moves the depth."""
    depth = best = 0
    for b, inside in _walk(data):
        if not inside and b in b"[{":
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


def _break_in_string(data: bytes) -> bool:
    """The byte rule of :func:`_walk` asked of line breaks: is one inside a string?"""
    return any(inside and b in b"\r\n" for b, inside in _walk(data))


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='ab\n\r"\\[ é', max_size=6),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(alphabet='k\n"', max_size=3), c,
                                                                          max_size=3), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.sampled_from([None, 0, 2, "\t"]), st.sampled_from(["", "\n", "\r\n", "\n\n  \n"]))
def test_json_one_line_is_the_same_document_on_one_line(value, indent, tail):
    text = (json.dumps(value, indent=indent, ensure_ascii=False) + tail).replace("\n", "\r\n" if tail == "\r\n" else "\n")
    data = text.encode()
    line = _io.json_one_line(data)
    assert line is not None and json.loads(line) == value
    assert len(line) == len(data)   # byte for byte: offsets into the text still hold
    body = line.rstrip(b" \t\r\n")
    assert b"\n" not in body and b"\r" not in body


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]"\\ab\n\r:,', max_size=40).map(str.encode))
def test_json_one_line_gives_up_exactly_when_a_break_is_inside_a_string(data):
    line = _io.json_one_line(data)
    body = data.rstrip(b" \t\r\n")
    if _break_in_string(body):
        assert line is None
    if line is None:
        assert _break_in_string(data)
    elif line is data:   # nothing to do: no break before the trailing whitespace
        assert b"\n" not in body and b"\r" not in body
    else:
        assert not _break_in_string(data)
        assert line == data.replace(b"\n", b" ").replace(b"\r", b" ")


# --------------------------------------------------------------------------- read_csv_text


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        return None, (type(e).__name__, str(e), getattr(e, "record", None), getattr(e, "field", None))


def _as_rows(frame):
    return (list(frame.columns), [[None if isinstance(v, float) else v for v in row]
                                  for row in frame.astype(object).values.tolist()],
            [frame.attrs["lines"][i] for i in range(len(frame))])


def _reference(p, missing):
    header, rows, lines = _io._csv_records_text(_io.decode_utf8(p.read_bytes(), file=str(p)), p, missing)
    return header, rows, lines


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(list('ab,\n\r" é\x00\t\ufeff') + ["NA", "\r\n", ",,", "a,b\n"]), max_size=25).map("".join),
       st.booleans(), st.booleans())
@example(text="a,,\x00", empty=False, na=False)  # a NUL in a name: pyarrow 14 took it for "" and refused
@example(text="a,,\nb,c,d\n", empty=False, na=False)  # repeated names ("" twice), which pyarrow 14 refused
def test_csv_through_arrow_gives_the_per_record_readers_table_or_error(tmp_path_factory, text, empty, na):
    p = tmp_path_factory.mktemp("csv") / "t.csv"
    p.write_bytes(text.encode("utf-8"))
    missing = ["NA"] if na else []
    got, err = _outcome(lambda: _as_rows(_io.read_csv_text(p, empty_is_missing=empty, missing=missing)))
    ref, ref_err = _outcome(lambda: _reference(p, set(missing) | ({""} if empty else set())))
    assert err == ref_err
    assert got == ref


def test_csv_text_fast_path_keeps_words_lines_and_declared_missing(tmp_path):
    import pandas as pd

    p = tmp_path / "r.csv"
    p.write_bytes(b"\xef\xbb\xbfitem_id,rater,rating\r\nNA,a,none\r\nNone,b,\r\n2,null,NaN\r\n")
    assert _io._csv_through_arrow(p.read_bytes(), set()) is not None  # the Arrow path reads it
    f = _io.read_csv_text(p, required=["rating"], empty_is_missing=True)
    assert list(f.columns) == ["item_id", "rater", "rating"]
    assert all(isinstance(f[c].dtype, pd.StringDtype) and f[c].dtype.storage == "pyarrow" for c in f)
    assert f["item_id"].tolist() == ["NA", "None", "2"] and f["rating"].isna().tolist() == [False, True, False]
    assert [f.attrs["lines"][i] for i in range(3)] == [2, 3, 4] and len(f.attrs["lines"]) == 3
    with pytest.raises(KeyError):
        f.attrs["lines"][3]
    q = tmp_path / "q.csv"
    q.write_text('item_id,rating\n"x,1",yes\n\ny,no\n', encoding="utf-8")   # a quote, a blank line: per record
    g = _io.read_csv_text(q)
    assert g["item_id"].tolist() == ["x,1", "y"] and [g.attrs["lines"][i] for i in range(2)] == [2, 4]
    assert isinstance(g["item_id"].dtype, pd.StringDtype)


@pytest.mark.parametrize("body, match, record", [
    (b"a,b\n1,2\n3\n", "has 1 fields; the header has 2", 3),
    (b"a,a\n1,2\n", "duplicated column names", 1),
    (b"", "no header row", None),
    (b"a,b\n1,\xe9\n", "not UTF-8", None),
])
def test_csv_text_errors_name_the_line_on_either_path(tmp_path, body, match, record):
    p = tmp_path / "bad.csv"
    p.write_bytes(body)
    with pytest.raises((SchemaViolation, UnreadableInput), match=match) as e:
        _io.read_csv_text(p)
    assert e.value.file == str(p)
    if record is not None:
        assert e.value.record == record


def test_csv_text_record_limit_holds_on_the_arrow_path(tmp_path):
    from evaltk.errors import LimitExceeded

    p = tmp_path / "many.csv"
    p.write_text("a,b\n" + "".join(f"{i},x\n" for i in range(50)), encoding="utf-8")
    with _io.limits(records=10), pytest.raises(LimitExceeded):
        _io.read_csv_text(p)
    assert len(_io.read_csv_text(p, required=["a"])) == 50


@pytest.mark.parametrize("quoted", [False, True])
def test_agreement_errors_name_the_line_of_the_row(tmp_path, capsys, quoted):
    from evaltk.cli import main

    q = '"' if quoted else ""   # a quote sends the file to the per-record reader
    p = tmp_path / "dup.csv"
    p.write_text(f"item_id,rater,rating\na,r1,1\na,r2,2\n{q}b{q},r1,1\nb,r1,2\n", encoding="utf-8")
    assert main(["agreement", str(p), "--coefficient", "fleiss_kappa"]) == 65
    err = capsys.readouterr().err
    assert "line 5" in err and "rater 'r1' rated item 'b' more than once" in err
    p.write_text(f"item_id,rater,rating\na,r1,1\n{q}{q},r2,2\n", encoding="utf-8")
    assert main(["agreement", str(p), "--coefficient", "fleiss_kappa"]) == 65
    err = capsys.readouterr().err
    assert "line 3" in err and "missing 'item_id' label" in err
