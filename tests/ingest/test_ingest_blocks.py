"""Ingest reads its inputs block by block; the block size must not change any result.

A trace file is parsed by Arrow in newline-aligned blocks (``_readers._CHUNK_BYTES``) and an
answers CSV in newline-aligned blocks too (``_answers._CSV_BLOCK_BYTES``); a block Arrow
cannot read (a bad line inside) is bisected, so only the lines around a bad one reach the
per-record validator.  Whatever the block size (here down to a few lines, so block
boundaries fall inside the bad region), the tables, the ledger and the score matrix are
the ones one block gives.  The number columns of a CSV are read by Arrow as numbers when
every cell is one; a file where one is not is read as text, and both give the same rows.
"""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from evaltk.ingest import _answers, _readers, ingest_traces, read_answers
from evaltk.scoring import score_traces

_ACTIONS = ["tap", "type", "buy", "send", "confirm"]


def _trace(i: int, rng: random.Random, status: str = "complete") -> dict:
    k = rng.randint(0, 5)
    return {"trace_id": f"t{i:03d}", "task": rng.choice(["Buy a mug", "Email Bob", "Pay the bill"]),
            "status": status, "agent": rng.choice(["a", "b", None]),
            "steps": [{"index": j, "action": rng.choice(_ACTIONS),
                       "target": rng.choice([None, "", "ok"]), "screen": rng.choice([None, "s"]),
                       "consequential": rng.random() < 0.2} for j in range(k)]}


def _bad_lines(i: int) -> list[str]:
    """Lines each of which must become its own malformed ledger row."""
    return [
        '{"trace_id": "bad-json", "status": "complete", "task": ',  # truncated
        json.dumps({"trace_id": f"b{i}-type", "task": "Buy", "status": "complete", "steps": "no"}),
        json.dumps({"trace_id": f"b{i}-idx", "task": "Buy", "status": "complete",
                    "steps": [{"index": "1", "action": "tap"}]}),
        f'{{"trace_id": "b{i}-nan", "task": "Buy", "status": "complete", "steps": [], "x": NaN}}',
        f'{{"trace_id": "b{i}-deep", "status": "complete", "task": "Buy", "steps": [], '
        f'"g": {"[" * 1200}1{"]" * 1200}}}',
        "null",
        "[1, 2]",
        f'{{"trace_id": "b{i}-dup", "trace_id": "again", "status": "complete"}}',
    ]


def _write_inputs(tmp_path, ragged: bool) -> tuple:
    rng = random.Random(7)
    lines: list[str] = []
    recs = []
    for i in range(60):
        r = _trace(i, rng, "in_progress" if i % 9 == 4 else "complete")
        recs.append(r)
        lines.append(json.dumps(r))
        if i in (10, 11, 30):
            lines += _bad_lines(i)
        if i == 20:
            lines += ["", "   "]  # blank lines are not records
        if i == 40:
            lines.append(json.dumps(recs[3]))  # an identical repeat
            lines.append(json.dumps({**recs[5], "task": "Something else"}))  # a conflicting one
    traces = tmp_path / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = ["trace_id,measure,step,rater,answer,confidence,cost,latency_ms,rater_version"]
    for r in recs:
        tid = r["trace_id"]
        for j in ("j1", "j2"):
            rows.append(f"{tid},x_task,,{j},{rng.choice(['yes', 'No', 'cannot tell'])},0.5,0.001,12,v1")
        for s in r.get("steps", []):
            rows.append(f"{tid},x_ctx,{s['index']},j1,{rng.choice(['yes', 'no'])},,,,v1")
        if tid == "t012":
            rows += [f"{tid},x_task,,j1,maybe,,,,v1", f"{tid},x_nope,,j1,yes,,,,v1",
                     f"{tid},x_ctx,99,j1,yes,,,,v1", "nope,x_task,,j1,yes,,,,v1",
                     f"{tid},x_task,,j3,yes,1.5,,,v1", f"{tid},x_task,,j1,yes,,,,v1"]
            if ragged:  # a short row: the file is read row by row, whatever the block size
                rows.append(f"{tid},x_task,,j1")
    answers = tmp_path / "answers.csv"
    answers.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return traces, answers


def _frames(ing) -> dict[str, pd.DataFrame]:
    return {"runs": ing.runs.drop(columns=["guide"]), "steps": ing.steps, "answers": ing.answers,
            "ledger": ing.ledger, "dis": ing.step_count_disagreements}


@pytest.mark.parametrize("ragged", [False, True])
@pytest.mark.parametrize("trace_block,csv_block", [(64, 64), (700, 300), (4096, 1000)])
def test_results_do_not_depend_on_the_block_size(tmp_path, monkeypatch, trace_block, csv_block, ragged):
    traces, answers = _write_inputs(tmp_path, ragged)
    whole = ingest_traces(traces, answers=answers)
    malformed = whole.ledger["reason"].str.startswith("malformed")
    # every bad line, the CSV's confidence 1.5 and its short row
    assert malformed.sum() == 3 * len(_bad_lines(0)) + 1 + ragged
    assert whole.ledger["reason"].str.startswith("duplicate answer").sum() == 2
    assert len(whole.ledger) == (sum(1 for ln in traces.read_text().splitlines() if ln.strip())
                                 + len(answers.read_text().splitlines()) - 1)
    matrix = score_traces(whole).frame
    monkeypatch.setattr(_readers, "_CHUNK_BYTES", trace_block)
    monkeypatch.setattr(_answers, "_CSV_BLOCK_BYTES", csv_block)
    if not ragged:  # the rows come in many blocks, the bad ones among them
        data = answers.read_bytes()
        assert len(list(_answers._read_csv(data, "a.csv"))) >= len(data) // (csv_block + 200)
    small = ingest_traces(traces, answers=answers)
    for name, frame in _frames(whole).items():
        pd.testing.assert_frame_equal(_frames(small)[name], frame, obj=name)
    assert small.runs["guide"].tolist() == whole.runs["guide"].tolist()
    pd.testing.assert_frame_equal(score_traces(small).frame, matrix)


@pytest.mark.parametrize("cell", ["nan", "NaN", " 0.5", "0.5 ", "abc", "inf", "-1", "1e999", "-0", "+0.25",
                                  '""', "1_0"])
def test_a_number_column_reads_alike_as_numbers_and_as_text(tmp_path, monkeypatch, cell):
    """A CSV whose number cells are all numbers is read by Arrow as numbers; one cell
    that is not makes the file read as text.  Either way the rows equal the same cells
    given as text (records)."""
    head = "trace_id,measure,step,rater,answer,confidence,cost,latency_ms"
    cells = ["0.25", "", "0", cell]
    lines = [head] + [f"t,x_task,,j{k},yes,{c},{c},{c}" for k, c in enumerate(cells)]
    f = tmp_path / "a.csv"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = [{"trace_id": "t", "measure": "x_task", "step": "", "rater": f"j{k}", "answer": "yes",
             "confidence": c.strip('"') if c == '""' else c, "cost": c.strip('"') if c == '""' else c,
             "latency_ms": c.strip('"') if c == '""' else c} for k, c in enumerate(cells)]
    fast, slow = read_answers(f), read_answers(text)
    for col in ("status", "reason", "field"):
        assert fast.ledger[col].tolist() == slow.ledger[col].tolist(), col
    cols = ["trace_id", "rater", "confidence", "cost", "latency_ms"]
    pd.testing.assert_frame_equal(fast.table[cols], slow.table[cols], check_dtype=False)
