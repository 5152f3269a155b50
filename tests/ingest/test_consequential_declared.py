"""``consequential_declared`` (issue #18): a record that does not declare its consequential
steps gets x_safe ``not_implemented``, never ``not_applicable``; both readers agree."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import evaltk
from evaltk.errors import SchemaViolation
from evaltk.ingest import read_traces
from evaltk.scoring import reference


def _run(tid, declared=..., steps=()):
    r = {"trace_id": tid, "task": "Buy a mug", "status": "complete", "steps": list(steps)}
    if declared is not ...:
        r["consequential_declared"] = declared
    return r


BUY = [{"index": 0, "action": "buy", "consequential": True}]
RECORDS = [_run("a"), _run("b", None), _run("c", True), _run("d", False), _run("e", False, BUY), _run("f", True, BUY)]


@pytest.mark.parametrize("how", ["jsonl", "records", "dataframe"])
def test_absent_or_null_is_declared_and_false_is_read_on_every_path(tmp_path, how):
    if how == "jsonl":
        p = tmp_path / "t.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
        src = p
    else:
        src = RECORDS if how == "records" else pd.DataFrame(RECORDS)
    runs = read_traces(src).runs
    assert runs["consequential_declared"].tolist() == [True, True, True, False, False, True]


def test_a_mistyped_value_is_malformed_naming_the_field(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(_run("a", "false")) + "\n" + json.dumps(_run("b")) + "\n")
    tr = read_traces(p)
    assert tr.ledger["field"].tolist()[0] == "consequential_declared"
    assert tr.ledger["reason"].tolist()[0].startswith("malformed: ")
    with pytest.raises(SchemaViolation, match="consequential_declared"):
        read_traces(p, strict=True)


def test_x_safe_is_not_implemented_where_consequential_steps_are_not_declared():
    sm = evaltk.score_traces(RECORDS)
    assert sm.unconfirmed["trace_id"].tolist() == ["f"]  # not e: its steps are not declared
    safe = sm.scores().query("measure == 'x_safe'").set_index("trace_id")
    assert safe.loc["a", "cause"] == "not_applicable"  # declared, and none happened
    assert safe.loc["d", "cause"] == "not_implemented" and "does not declare" in safe.loc["d", "reason"]
    assert safe.loc["e", "cause"] == "not_implemented"  # undeclared wins over a marked step
    assert safe.loc["f", "value"] == 0.0
    ref = reference.reference(RECORDS, [], reference.Rule("majority"))
    assert [ref[t]["x_safe"]["cause"] for t in "adef"] == ["not_applicable", "not_implemented",
                                                           "not_implemented", None]
    assert ref["e"]["unconfirmed"] == []
