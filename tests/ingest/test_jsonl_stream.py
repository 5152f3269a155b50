"""A JSONL trace file larger than one chunk is read chunk by chunk, never held whole.

Whatever the chunk size (down to a few bytes, so a record straddles every chunk edge and
a chunk holds less than one line), the tables and the ledger, its record numbers
included, are the ones the whole-file reader gives: CRLF line ends, blank lines, a bad
line at a chunk edge, a UTF-8 byte-order mark, a last line without a newline, duplicated
trace ids (whose lines are read again from the file).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaltk.errors import LimitExceeded, UnreadableInput
from evaltk.ingest import _readers, ingest_traces
from evaltk.ingest._readers import _load_trace_source


def _rec(i: int, n_steps: int = 2, task: str = "Buy a mug") -> str:
    return json.dumps({"trace_id": f"t{i}", "task": task, "status": "complete",
                       "steps": [{"index": j, "action": "tap", "screen": "s" * j} for j in range(n_steps)]})


_LINES = [
    lambda i: _rec(i),
    lambda i: _rec(i, 6, "Pay the electricity bill and then send the receipt to Ana"),
    lambda i: _rec(i) + "\r",  # a CRLF line end
    lambda i: "",
    lambda i: "   \t",
    lambda i: '{"trace_id": "cut", "status": "complete", "task": ',  # truncated
    lambda i: "null",
    lambda i: json.dumps({"trace_id": f"t{i}", "task": "Buy", "status": "complete", "steps": "no"}),
    lambda i: json.dumps({"trace_id": f"p{i}", "status": "in_progress"}),
    lambda i: _rec(0),  # a repeat of record t0: identical, or conflicting when t0 differs
    lambda i: _rec(0, 3),
]


def _frames(ing) -> dict[str, pd.DataFrame]:
    return {"runs": ing.runs.drop(columns=["guide"]), "steps": ing.steps, "ledger": ing.ledger,
            "dis": ing.step_count_disagreements}


def _same_as_whole(path, monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", 1 << 30)  # the whole file, one chunk
    assert _load_trace_source(path)[1] == "jsonl"
    whole = ingest_traces(path)
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", chunk)
    assert _load_trace_source(path)[1] == "jsonl-file"
    streamed = ingest_traces(path)
    for name, frame in _frames(whole).items():
        pd.testing.assert_frame_equal(_frames(streamed)[name], frame, obj=name)


@pytest.mark.parametrize("chunk", [1, 7, 64, 333])
def test_streamed_reads_as_whole_file(tmp_path, monkeypatch, chunk):
    lines = [_LINES[k % len(_LINES)](k) for k in range(80)]
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())  # a BOM; no newline at the end
    _same_as_whole(p, monkeypatch, chunk)
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", chunk)
    led = ingest_traces(p).ledger
    # every non-blank line is one ledger row, numbered by its line in the file
    assert led["record"].tolist() == [i + 1 for i, ln in enumerate(lines) if ln.strip()]
    assert led["reason"].astype(str).str.startswith("duplicate trace_id").any()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, len(_LINES) - 1), min_size=1, max_size=30), st.integers(1, 120),
       st.booleans(), st.booleans())
def test_streamed_reads_as_whole_file_whatever_the_lines(tmp_path, monkeypatch, kinds, chunk, bom, end_nl):
    lines = [_LINES[k](i) for i, k in enumerate(kinds)]
    data = "\n".join(lines).encode() + (b"\n" if end_nl else b"")
    if not data.strip() or len(data) + 3 * bom <= chunk:
        return  # an empty file is refused; a file of one chunk is read whole anyway
    p = tmp_path / "h.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" * bom + data)
    with monkeypatch.context() as mp:
        _same_as_whole(p, mp, chunk)


def test_a_file_of_whitespace_is_empty_either_way(tmp_path, monkeypatch):
    p = tmp_path / "w.jsonl"
    p.write_bytes(b"\n  \n\t\n" * 40)
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", 16)
    with pytest.raises(UnreadableInput, match="empty"):
        ingest_traces(p)


def test_not_utf8_anywhere_is_refused_when_streamed(tmp_path, monkeypatch):
    p = tmp_path / "b.jsonl"
    p.write_bytes(b'{"trace_id": "\xe9"}\n' * 50)
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", 64)
    assert _load_trace_source(p)[1] == "jsonl-file"
    with pytest.raises(UnreadableInput, match="no line decodes"):
        ingest_traces(p)
    p.write_bytes(b'{"trace_id": "\xe9"}\n' * 50 + _rec(1).encode() + b"\n")  # one good line, last
    led = ingest_traces(p).ledger
    assert led["status"].tolist() == ["dropped"] * 50 + ["kept"]


def test_the_record_limit_holds_when_streamed(tmp_path, monkeypatch):
    from evaltk import limits

    p = tmp_path / "l.jsonl"
    p.write_text("\n".join(_rec(i) for i in range(30)) + "\n\n\n\n", encoding="utf-8")
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", 100)
    with limits(records=30):  # 30 records and blank lines: within the limit
        assert len(ingest_traces(p).runs) == 30
    with limits(records=29), pytest.raises(LimitExceeded, match="records"):
        ingest_traces(p)
