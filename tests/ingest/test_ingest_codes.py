"""Encoded columns ingest returns for scoring (``evaltk._columns``,
``evaltk.ingest.CATEGORICAL_COLUMNS``).

The answer and label tables' ``measure``, ``rater`` and ``answer`` (and the other
text columns whose values repeat) are pandas categoricals built from the codes ingest
makes while it validates, so scoring reads integer codes without hashing a string.  For
the steps ingest computes ``present`` (screen, target) and ``adjacent_equal`` (target)
once; ``action`` is categorical, whose views are arithmetic on its codes.  The contract
checked here, for every ``_columns.codes(col) == (codes, uniques)``:

* ``codes`` is a signed integer ndarray (the smallest type that holds the vocabulary) and
  ``uniques`` an object ndarray of distinct values;
* ``uniques[codes[i]]`` is row i's value for every non-missing row, and ``codes`` is
  -1 exactly where the value is missing;

so the codes induce the same grouping as a fresh ``pd.factorize`` of the column; and a
categorical column's categories are sorted ``str`` values at least one row uses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaltk import _columns
from evaltk._io import str_dtype
from evaltk.ingest import ingest_traces

CODED = ("measure", "rater", "answer")


def _runs() -> list[dict]:
    return [
        {"trace_id": "a", "task": "Buy a mug", "status": "complete",
         "steps": [{"action": "tap", "target": "buy", "screen": "s0"},
                   {"action": "tap", "target": "buy", "screen": " "},
                   {"action": "type", "screen": "s2"}]},
        {"trace_id": "b", "task": "Email Bob", "status": "complete",
         "steps": [{"action": "open", "target": "inbox"}]},
        {"trace_id": "c", "status": "in_progress"},
    ]


def _check_codes(col: pd.Series) -> None:
    """``col`` is categorical (sorted ``str`` categories, none unused) and its codes
    reproduce it exactly."""
    assert isinstance(col.dtype, pd.CategoricalDtype), f"{col.name} is {col.dtype}, not categorical"
    cats = col.cat.categories
    assert cats.dtype == "str" and list(cats) == sorted(cats)
    assert set(col.dropna().unique()) == set(cats), "a category no row uses"
    codes, uniques = _columns.codes(col)
    assert isinstance(codes, np.ndarray) and codes.dtype.kind == "i" and codes.shape == (len(col),)
    assert np.iinfo(codes.dtype).max >= len(uniques)
    assert isinstance(uniques, np.ndarray) and uniques.dtype == object
    assert len(set(uniques.tolist())) == len(uniques), "uniques must be distinct"
    missing = col.isna().to_numpy()
    np.testing.assert_array_equal(codes < 0, missing)
    assert (codes[~missing] < len(uniques)).all()
    rebuilt = pd.Series(np.where(missing, None, uniques[np.where(missing, 0, codes)]), dtype=col.dtype,
                        name=col.name)
    pd.testing.assert_series_equal(rebuilt, col, check_index=False)
    # the same grouping as a fresh factorize of the column
    fresh, fresh_uniques = pd.factorize(col)
    fresh_uniques = np.asarray(fresh_uniques, dtype=object)
    np.testing.assert_array_equal(fresh < 0, missing)
    assert (uniques[codes[~missing]] == fresh_uniques[fresh[~missing]]).all()


def _check_table(table: pd.DataFrame) -> None:
    for c in CODED:
        _check_codes(table[c])


def _check_steps(steps: pd.DataFrame) -> None:
    for c, view in (("screen", "present"), ("target", "present"), ("target", "adjacent_equal")):
        got = _columns.recall(steps[c], view)
        assert got is not None, f"no {view} view remembered for steps.{c}"
        fresh = {"present": _columns._present_of, "adjacent_equal": _columns._adjacent_equal_of}[view]
        np.testing.assert_array_equal(got, fresh(steps[c]))
    # action is categorical: its views come from its codes, equal to the text's
    as_text = steps["action"].astype("str")
    assert isinstance(steps["action"].dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(_columns.adjacent_equal(steps["action"]), _columns._adjacent_equal_of(as_text))
    np.testing.assert_array_equal(_columns.present(steps["action"]), _columns._present_of(as_text))


def test_answers_and_labels_carry_codes_with_drops_and_missing_values(tmp_path: Path) -> None:
    answers = pd.DataFrame({
        "trace_id": ["a", "a", "a", "a", "b", "b", "zzz", "a", "a", "b"],
        "measure": ["x_task", "x_ctx", "x_ctx", "x_ctx", "x_task", "x_task", "x_task", "x_eff", "x_ctx",
                    "x_task"],
        "step": pd.array([None, 0, 0, 1, None, None, None, None, 7, None], dtype="Int64"),
        "rater": ["j1", "j1", "j1", "j2", "j1", "j2", "j1", "j1", "j1", None],
        "answer": ["yes", "yes", "no", "cannot_tell", "no", None, "yes", "lots", "yes", "no"],
    }).astype({c: str_dtype() for c in ("trace_id", "measure", "rater", "answer")})  # pandas 2.3 defaults to object
    assert answers["rater"].dtype == "str"
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,measure,step,rater,answer\n"
                      "a,T_Task,,h1,Yes\n"           # non-canonical spellings: built from codes
                      "a,t_ctx,2,h1,Cannot tell\n"
                      "b,x_task,,h2,nope\n"          # unknown word: dropped by read_answers
                      "b,x_task,,,no\n"              # empty rater: dropped
                      "b,x_task,,h1,n/a\n")          # not a word of x_task: dropped
    ing = ingest_traces(_runs(), answers, labels)
    # drops on both sides of the join happened (so the filtered-codes path ran)
    reasons = ing.ledger["reason"].dropna().tolist()
    assert any(r.startswith("duplicate answer: conflicting") for r in reasons)
    assert "answer without run" in reasons
    assert any(r.startswith("step not in run") for r in reasons)
    assert any(r.startswith("unknown answer word") for r in reasons)
    assert len(ing.answers) and len(ing.labels)
    _check_table(ing.answers)
    _check_table(ing.labels)
    _check_steps(ing.steps)
    # what a kept row with a missing rater or answer holds, it holds in the codes too
    for c in ("rater", "answer"):
        col = ing.answers[c]
        np.testing.assert_array_equal(_columns.codes(col)[0] < 0, col.isna().to_numpy())


def test_codes_from_jsonl_csv_and_records_without_drops(tmp_path: Path) -> None:
    rows = [{"trace_id": t, "measure": m, "step": s, "rater": r, "answer": w}
            for t, steps in (("a", 3), ("b", 1)) for r in ("j1", "j2")
            for m, s, w in [("x_task", None, "yes")] + [("x_ctx", i, "no") for i in range(steps)]]
    jl = tmp_path / "answers.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    csv = tmp_path / "answers.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    for src in (jl, csv, rows, pd.DataFrame(rows)):
        ing = ingest_traces(_runs(), src)
        assert len(ing.answers) == len(rows)
        _check_table(ing.answers)
        _check_steps(ing.steps)


def test_several_sources_and_hand_made_values_still_get_codes(tmp_path: Path) -> None:
    """Concatenated sources rebuild the columns; the join registers codes for the new ones."""
    a1 = [{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes"}]
    a2 = [{"trace_id": "b", "measure": "X_TASK", "rater": "j1", "answer": "No"},
          {"trace_id": "b", "measure": "x_task", "rater": "j1", "answer": "no"}]  # identical: dropped
    ing = ingest_traces(_runs(), [pd.DataFrame(a1), pd.DataFrame(a2)])
    assert ing.ledger["reason"].str.startswith("duplicate answer: identical").sum() == 1
    _check_table(ing.answers)


def test_codes_survive_copies_and_are_not_reused_after_an_edit() -> None:
    ing = ingest_traces(_runs(), [{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes"},
                           {"trace_id": "b", "measure": "x_task", "rater": "j2", "answer": "no"}])
    copy = ing.answers.copy()
    for c in CODED:
        _check_codes(copy[c])
    with pytest.raises(TypeError, match="new category"):  # a categorical takes only its categories
        copy.loc[0, "rater"] = "j9"
    copy["rater"] = copy["rater"].cat.add_categories(["j9"])
    copy.loc[0, "rater"] = "j9"
    codes, uniques = _columns.codes(copy["rater"])
    assert list(uniques[codes]) == ["j9", "j2"]


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_single_answer_tables(n: int) -> None:
    rows = [{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes"}][:n]
    ing = ingest_traces(_runs(), rows)
    assert len(ing.answers) == n
    if n:
        _check_table(ing.answers)


def _check_dtype_rule(ing) -> None:
    """Every table follows ``CATEGORICAL_COLUMNS``: the columns it names are categoricals with
    sorted ``str`` categories, none unused; every other text column is ``str``."""
    from evaltk.ingest import CATEGORICAL_COLUMNS

    for name, cats in CATEGORICAL_COLUMNS.items():
        table = getattr(ing, name)
        assert set(cats) <= set(table.columns), (name, set(cats) - set(table.columns))
        for c in table.columns:
            col = table[c]
            if c in cats:
                assert isinstance(col.dtype, pd.CategoricalDtype), (name, c, col.dtype)
                assert col.cat.categories.dtype == "str" and list(col.cat.categories) == sorted(col.cat.categories)
                assert set(col.dropna()) == set(col.cat.categories), (name, c, "a category no row uses")
            else:
                assert not isinstance(col.dtype, pd.CategoricalDtype), (name, c)
                if col.dtype == object:  # only the runs' guide (dicts) is an object column
                    assert (name, c) == ("runs", "guide")


@pytest.mark.parametrize("form", ["jsonl", "records", "parquet"])
def test_every_table_follows_the_dtype_rule(tmp_path: Path, form: str) -> None:
    runs = _runs() + [{"trace_id": "d", "task": "Pay the bill", "status": "complete", "agent": "ckpt-a",
                       "step_counts": {"recorder": 4}, "steps": [{"action": "tap"}]},
                      {"trace_id": "e", "status": "complete"}]  # malformed: no task, no steps
    if form == "jsonl":
        src: object = tmp_path / "t.jsonl"
        src.write_text("\n".join(json.dumps(r) for r in runs) + "\n")  # type: ignore[attr-defined]
    elif form == "parquet":
        src = tmp_path / "t.parquet"
        pd.DataFrame([r for r in runs if "steps" in r and r["status"] == "complete"]).to_parquet(src)
    else:
        src = runs
    answers = [{"trace_id": "a", "measure": "x_task", "rater": "j1", "answer": "yes", "judge_model": "m1"},
               {"trace_id": "a", "measure": "x_ctx", "step": 0, "rater": "j2", "answer": "No"},
               {"trace_id": "zzz", "measure": "x_task", "rater": "j1", "answer": "yes"}]
    labels = tmp_path / "labels.csv"
    labels.write_text("trace_id,measure,step,rater,answer\na,x_task,,h1,no\nb,x_task,,h1,maybe\n")
    ing = ingest_traces(src, [pd.DataFrame(answers[:2]), pd.DataFrame(answers[2:])], labels)
    assert len(ing.runs) and len(ing.answers) and len(ing.labels)
    assert (ing.ledger["status"] == "dropped").any()
    _check_dtype_rule(ing)
    # the text as text: a comparison with a string and a groupby work as on a str column
    assert (ing.answers["measure"] == "x_task").sum() == 1
    assert ing.ledger.groupby(["kind", "status"], observed=True).size().sum() == len(ing.ledger)


# --------------------------------------------------------------------------- ledger_sources

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from evaltk.ingest import ledger_sources  # noqa: E402


def test_ledger_sources_merges_repeated_names_and_keeps_missing():
    s = ledger_sources(np.array([2, 0, -1, 1, 2]), ["b.csv", "a.csv", "b.csv"])
    assert s.tolist()[:2] == ["b.csv", "b.csv"] and pd.isna(s.iloc[2]) and s.tolist()[3:] == ["a.csv", "b.csv"]
    assert list(s.cat.categories) == ["a.csv", "b.csv"]  # sorted, one category per name


def test_ledger_sources_refuses_a_code_outside_the_names():
    with pytest.raises(ValueError, match=r"\[-1, 2\)"):
        ledger_sources(np.array([0, 2]), ["a", "b"])


@given(st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=1, max_size=6),
       st.lists(st.integers(-1, 5), max_size=40))
def test_ledger_sources_is_the_names_by_the_tables_rule(names, raw):
    codes = np.array([c for c in raw if c < len(names)], dtype=np.int64)
    s = ledger_sources(codes, names)
    want = [names[c] if c >= 0 else None for c in codes]
    assert [None if pd.isna(v) else v for v in s.tolist()] == want
    cats = list(s.cat.categories)
    assert cats == sorted({w for w in want if w is not None})  # sorted, none unused
