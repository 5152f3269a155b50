"""The row reader a shuffle carries rows with (``evaltk.ingest.answer_rows``) and its reading
back (``answers_from_rows``): whichever route a file takes (typed fields, or each record as JSON
text) and however its rows are split, reading them back gives the table and the ledger
``read_answers`` gives for the file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from evaltk.errors import SchemaViolation
from evaltk.ingest import (
    ANSWER_ROW_COLUMNS,
    ANSWER_ROW_FIELDS,
    answer_rows,
    answers_from_rows,
    read_answers,
)

_LEDGER = ["record", "trace_id", "status", "reason", "field"]


def _frame(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    f = pd.DataFrame({"trace_id": [f"t{i % 17}" for i in range(n)],
                      "measure": rng.choice(["x_task", "x_ctx"], n),
                      "rater": rng.choice(["j1", "j2"], n), "answer": rng.choice(["yes", "no"], n),
                      "confidence": rng.random(n).round(3), "latency_ms": rng.integers(1, 900, n),
                      "note": "ignored"})
    f["step"] = pd.array([i % 4 if m == "x_ctx" else None for i, m in enumerate(f["measure"])], "Int64")
    f.loc[3, "answer"] = "banana"
    f.loc[9, "confidence"] = 2.0
    f.loc[14, "rater"] = ""
    f.loc[20, "step"] = -3 if f.loc[20, "measure"] == "x_ctx" else 5
    return pd.concat([f, f.iloc[[7]]], ignore_index=True)  # a duplicate


def _write(frame: pd.DataFrame, path, fmt: str) -> None:
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)


def _read_back(rows, cuts=()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``answers_from_rows`` of ``rows`` split at ``cuts``, its records numbered as in the file."""
    bounds = [0, *cuts, rows.num_rows]
    got = answers_from_rows([rows.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    rec = rows["record"].to_numpy()
    ledger = got.ledger.assign(record=rec[got.ledger["record"].to_numpy() - 1])
    table = got.table.assign(record=rec[got.table["record"].to_numpy() - 1])
    return table, ledger


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("typed", [True, False])
def test_rows_read_back_give_the_files_table_and_ledger(tmp_path, fmt, typed):
    src = tmp_path / f"a.{fmt}"
    _write(_frame(), src, fmt)
    rows = answer_rows(src, typed=typed)
    assert rows.column_names[:3] == list(ANSWER_ROW_COLUMNS)
    assert rows["row"].null_count == (rows.num_rows if typed else 0)
    if typed:  # the fields read_answers reads, no other
        assert set(rows.column_names[3:]) <= set(ANSWER_ROW_FIELDS) and "note" not in rows.column_names
    whole = read_answers(src)
    assert (whole.ledger["status"] != "kept").sum() == 4  # the four faults
    for cuts in ((), (1, 25, 26)):
        table, ledger = _read_back(rows, cuts)
        pd.testing.assert_frame_equal(ledger[_LEDGER].astype(object), whole.ledger[_LEDGER].astype(object))
        pd.testing.assert_frame_equal(table.drop(columns="ledger_row"), whole.table.drop(columns="ledger_row"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_file_that_needs_it_comes_row_by_row(tmp_path, fmt):
    """A blank line (CSV or JSONL), a quoted newline (CSV), a line that is no record (JSONL):
    each record as JSON text, numbered by its line, read back as the file reads."""
    src = tmp_path / f"a.{fmt}"
    f = _frame()
    if fmt == "csv":
        f.loc[30, "rater"] = "j\n3"
    _write(f, src, fmt)
    lines = src.read_text(encoding="utf-8").split("\n")
    lines[10:10] = [""] if fmt == "csv" else ["[1, 2]"]
    src.write_text("\n".join(lines), encoding="utf-8")
    rows = answer_rows(src)
    assert rows["row"].null_count == 0
    whole = read_answers(src)
    _, ledger = _read_back(rows)
    pd.testing.assert_frame_equal(ledger[_LEDGER].astype(object), whole.ledger[_LEDGER].astype(object))


def test_strict_names_the_first_bad_row_in_the_tables_numbering(tmp_path):
    src = tmp_path / "a.jsonl"
    _write(_frame(), src, "jsonl")
    rows = answer_rows(src)
    with pytest.raises(SchemaViolation) as direct:
        read_answers(src, strict=True)
    with pytest.raises(SchemaViolation) as e:
        answers_from_rows([rows.slice(0, 2), rows.slice(2)], strict=True)
    assert rows["record"][e.value.record - 1].as_py() == direct.value.record
    assert e.value.field == direct.value.field


def test_a_table_mixing_both_routes_is_refused(tmp_path):
    src = tmp_path / "a.jsonl"
    _write(_frame(), src, "jsonl")
    typed, plain = answer_rows(src), answer_rows(src, typed=False)
    bad = typed.slice(0, 2).set_column(2, "row", pa.array([plain["row"][0].as_py(), None], pa.large_string()))
    with pytest.raises(ValueError, match="one file each"):
        answers_from_rows([bad])
