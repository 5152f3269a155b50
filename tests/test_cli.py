"""The command line as a whole: every sub-command's help shows an example, every command
that prints results offers ``--json``, and the examples run on the repository's files."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evaltk.cli import build_parser, main
from evaltk.stats import krippendorff_alpha
from evaltk.trajectory import NEGATIVE_CONTROLS

ROOT = Path(__file__).resolve().parents[1]

#: Leaves that print a confirmation of what they wrote, not results: no ``--json``.
NO_JSON = {
    ("fixtures", "seen"): "appends one ledger record and says so",
    ("fixtures", "retire"): "moves one fixture and says so",
}


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, (*path, name))


LEAVES = dict(_leaves(build_parser()))


def _example(parser: argparse.ArgumentParser) -> str:
    m = re.search(r"Examples?:\s+((?:evaltk|cp) [^\n]*)", parser.format_help())
    assert m, f"no 'Example: evaltk ...' in the help of {parser.prog}"
    return m.group(1)


def _commands(example: str) -> list[list[str]]:
    """The example's commands, split at ``&&`` (a ``# comment`` dropped)."""
    return [shlex.split(part, comments=True) for part in example.split("&&")]


def test_the_tree_has_every_command():
    assert {p[0] for p in LEAVES} >= {"agreement", "calibration", "demo", "ingest", "trajectory",
                                      "suite", "report", "fixtures", "score", "gate", "scale"}
    assert ("trajectory", "self-check") in LEAVES and ("suite", "check") in LEAVES


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_leaf_help_shows_an_example_of_itself(path):
    """The example ends by running the leaf itself (earlier commands make its inputs)."""
    commands = _commands(_example(LEAVES[path]))
    assert commands[-1][:len(path) + 1] == ["evaltk", *path]
    assert all(c[0] in ("evaltk", "cp") for c in commands)


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_leaf_that_prints_results_offers_json(path):
    has_json = any("--json" in a.option_strings for a in LEAVES[path]._actions)
    assert has_json != (path in NO_JSON), NO_JSON.get(path, "no --json")


#: Examples that name real data kept outside the repository (``../shared/data``).
SHARED = {("calibration", "agentrewardbench")}


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_example_paths_into_the_repository_exist(path):
    tokens = [t for c in _commands(_example(LEAVES[path])) for t in c]
    for token in tokens:
        if token.startswith(("data/", "evaltk/data/", "tests/inputs/")):
            assert (ROOT / token).exists(), f"{' '.join(path)}: example names missing {token}"
        assert not token.startswith("../") or path in SHARED, f"{' '.join(path)}: names {token} outside"
    if path in SHARED:
        assert "shared" in LEAVES[path].format_help().split("Example:")[1]


#: Every example, with the exit code it documents for the example's data; each runs as printed
#: (``out/...`` and ``out-...`` redirected to a temporary folder), chained commands included.
RUNNABLE = {
    ("agreement",): 0,
    ("calibration", "agentrewardbench"): 0, ("calibration", "alt-test"): 1,
    ("calibration", "ceiling"): 0,
    ("fixtures", "list"): 0, ("fixtures", "validate"): 0, ("fixtures", "seen"): 0,
    ("fixtures", "retire"): 0,
    ("gate",): 3,  # the demo's judges carry no instrument columns: unpinned, so review (issue #14)
    ("ingest",): 0, ("score",): 0,
    ("scale", "score"): 0, ("scale", "summarize"): 0,
    ("suite", "summarize"): 0, ("suite", "gate"): 1, ("suite", "check"): 0,
    ("trajectory", "grade"): 2, ("trajectory", "seal"): 0, ("trajectory", "digest"): 0,
    ("trajectory", "self-check"): 0, ("judge", "rubric"): 0,
    ("import", "inspect"): 0, ("import", "otel"): 0,
}
#: Examples that need an optional extra: the module that must be importable.
NEEDS = {("import", "inspect"): "inspect_ai"}
#: Examples not run here, and why.
NOT_RUN = {
    ("demo",): "writes a 3000-trace corpus; `demo` itself is tested in tests/data",
    ("report",): "executes every notebook; tests/report runs it",
    ("judge", "run"): "needs a chat-completions server; tests/judges/test_judge_cli.py runs it against one",
    ("judge", "sweep"): "needs a chat-completions server and a judges file; tests/judges/test_judge_cli.py "
                        "runs it against one",
}


def test_every_example_is_run_or_says_why_not():
    assert set(RUNNABLE) | set(NOT_RUN) == set(LEAVES) and not set(RUNNABLE) & set(NOT_RUN)


def _out(token: str, tmp_path: Path) -> str:
    return str(tmp_path / token) if token.startswith(("out/", "out-")) else token


@pytest.mark.parametrize("path", sorted(RUNNABLE), ids=" ".join)
def test_examples_run(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    if path in NEEDS:
        pytest.importorskip(NEEDS[path], reason=f"needs the optional extra providing {NEEDS[path]}")
    commands = [[_out(t, tmp_path) for t in c] for c in _commands(_example(LEAVES[path]))]
    for token in (t for c in commands for t in c):
        if token.startswith("../") and not (ROOT / token).exists():
            pytest.skip(f"needs the shared data {token} beside the clone")
    for argv in commands[:-1]:
        if argv[:2] == ["cp", "-r"]:
            shutil.copytree(argv[2], argv[3])
        else:
            assert argv[0] == "evaltk" and main(argv[1:]) == 0, argv
    capsys.readouterr()
    argv = commands[-1][1:]
    assert main(argv) == RUNNABLE[path]
    out = capsys.readouterr().out
    if "--json" in argv:
        json.loads(out)
    if path[0] == "fixtures" and path[1] in ("seen", "retire"):
        ledger = Path(argv[argv.index("--root") + 1]) / "holdout-ledger.jsonl"
        assert json.loads(ledger.read_text().splitlines()[-1])["id"] == argv[2]


# --------------------------------------------------------------------------- self-check --json


def test_self_check_json_lists_each_control_expected_and_observed(capsys):
    assert main(["trajectory", "self-check", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = [c.name for c in NEGATIVE_CONTROLS] + ["final green run"]
    assert [r["name"] for r in doc["controls"]] == names
    assert doc["passed"] is True and all(r["passed"] for r in doc["controls"])
    for r, c in zip(doc["controls"], NEGATIVE_CONTROLS, strict=False):
        exp, obs = r["expected"], r["observed"]
        assert exp["exit"] == obs["exit"] != 0
        if c.raises is None:
            assert exp == obs and obs["held_by"] == list(c.held_by)
        else:
            assert obs["error"] == exp["error"] == c.raises.__name__ and c.message in obs["message"]
    final = doc["controls"][-1]
    assert final["observed"]["cohort_decision"] == "pass" and final["observed"]["exit"] == 0


# --------------------------------------------------------------------------- agreement input


def _agreement(argv, capsys):
    code = main(["agreement", *argv, "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def _xeff_double_labels(none_as: str) -> pd.DataFrame:
    labels = pd.read_csv(ROOT / "data/demo/labels.csv", dtype=str, keep_default_na=False)
    x = labels[labels["measure"] == "x_eff"]
    raters = x.groupby("trace_id")["rater"].nunique()
    x = x[x["trace_id"].isin(raters[raters > 1].index)][["trace_id", "rater", "answer"]]
    return x.assign(answer=x["answer"].replace({"none": none_as}))


def test_agreement_keeps_ratings_spelled_none(tmp_path, capsys):
    """The reviewer's case: demo x_eff double labels with ``none`` spelled ``None``."""
    frames = {}
    for spelling in ("none", "None"):
        frames[spelling] = _xeff_double_labels(spelling)
        frames[spelling].to_csv(tmp_path / f"{spelling}.csv", index=False)
    assert len(frames["None"]) == 18 and (frames["None"]["answer"] == "None").sum() == 10
    results = {}
    for spelling in frames:
        code, doc, err = _agreement([str(tmp_path / f"{spelling}.csv"), "--item", "trace_id",
                                     "--rating", "answer", "--level", "nominal"], capsys)
        assert code == 0, err
        results[spelling] = doc["result"]
    got = results["None"]
    assert got["n_units"] == 9 and got["n_abstained"] == 1 and got["n_pairable_ratings"] == 16
    ref = krippendorff_alpha(data=frames["None"], item="trace_id", rater="rater", rating="answer",
                             level="nominal")
    assert got["statistic"] == pytest.approx(ref.statistic)
    assert got["statistic"] == pytest.approx(results["none"]["statistic"])
    assert got["statistic"] != pytest.approx(0.0)


def test_agreement_numeric_csv_ratings_and_text_ids(tmp_path, capsys):
    path = tmp_path / "n.csv"
    path.write_text("item_id,rater,rating\nNA,a,1\nNA,b,2\nNone,a,2.5\nNone,b,2.5\n"
                    "t3,a,3\nt3,b,\nt4,a,1\nt4,b,1\n", encoding="utf-8")
    code, doc, err = _agreement([str(path), "--level", "interval"], capsys)
    assert code == 0, err
    ref = krippendorff_alpha(data=pd.DataFrame({
        "item_id": ["NA", "NA", "None", "None", "t3", "t4", "t4"], "rater": list("ababaab"),
        "rating": [1, 2, 2.5, 2.5, 3, 1, 1]}), item="item_id", rater="rater", rating="rating",
        level="interval")
    assert doc["result"]["n_units"] == 4                         # NA and None are ids, not missing
    assert doc["result"]["statistic"] == pytest.approx(ref.statistic)


def test_agreement_a_word_keeps_the_rating_column_text(tmp_path, capsys):
    path = tmp_path / "w.csv"
    path.write_text("item_id,rater,rating\nt1,a,1\nt1,b,1\nt2,a,NA\nt2,b,NA\nt3,a,2\nt3,b,1\n",
                    encoding="utf-8")
    code, doc, _ = _agreement([str(path), "--level", "nominal"], capsys)
    assert code == 0 and doc["result"]["n_pairable_ratings"] == 6  # NA is a category here
    code, _, err = _agreement([str(path), "--level", "interval"], capsys)
    assert code == 65 and "NA" in err


@pytest.mark.parametrize("cell", ["nan", "inf", "-Infinity", "NaN", "1e999"])
def test_agreement_non_finite_number_in_numeric_csv_column_is_exit_65(tmp_path, capsys, cell):
    path = tmp_path / "bad.csv"
    path.write_text(f"item_id,rater,rating\nt1,a,1\nt1,b,2\nt2,a,{cell}\nt2,b,2.5\n", encoding="utf-8")
    code, _, err = _agreement([str(path), "--level", "interval"], capsys)
    assert code == 65
    assert str(path) in err and "line 4" in err and "`rating`" in err


def test_agreement_jsonl_typed_and_non_finite(tmp_path, capsys):
    good = tmp_path / "g.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in [
        {"item_id": "NA", "rater": "a", "rating": 1}, {"item_id": "NA", "rater": "b", "rating": 2},
        {"item_id": "t2", "rater": "a", "rating": 2}, {"item_id": "t2", "rater": "b", "rating": 2},
        {"item_id": "t3", "rater": "a", "rating": None}]) + "\n", encoding="utf-8")
    code, doc, err = _agreement([str(good), "--level", "interval"], capsys)
    assert code == 0 and doc["result"]["n_units"] >= 2, err
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"item_id": "t1", "rater": "a", "rating": 1}\n\n'
                   '{"item_id": "t1", "rater": "b", "rating": 1e999}\n', encoding="utf-8")
    code, _, err = _agreement([str(bad), "--level", "interval"], capsys)
    # strict JSON: a number no float holds is not read (evaltk._io.loads_json), naming line and field
    assert code == 66 and "line 3" in err and "`rating`" in err and "1e999" in err


def test_agreement_parquet_nan_value_is_exit_65_null_is_missing(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    def write(name, ratings):
        path = tmp_path / name
        pq.write_table(pa.table({"item_id": ["t1", "t1", "t2", "t2"], "rater": ["a", "b", "a", "b"],
                                 "rating": pa.array(ratings, pa.float64())}), path)
        return path

    code, doc, err = _agreement([str(write("ok.parquet", [1.0, 2.0, 2.0, None])), "--level",
                                 "interval"], capsys)
    assert code == 0 and doc["result"]["n_pairable_ratings"] == 2, err
    code, _, err = _agreement([str(write("nan.parquet", [1.0, 2.0, float("nan"), 2.0])),
                               "--level", "interval"], capsys)
    assert code == 65 and "record 3" in err and "`rating`" in err
    code, _, err = _agreement([str(write("inf.parquet", [1.0, 2.0, 2.0, float("inf")])),
                               "--level", "interval"], capsys)
    assert code == 65 and "record 4" in err and "`rating`" in err


def test_readme_command_table_lists_every_command_and_its_json():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Command line"):text.index("### Exit codes")]
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `evaltk (\S+)[^\n]*", section, re.M)}
    for top in {p[0] for p in LEAVES}:
        assert top in rows, f"README's command table has no row for `evaltk {top}`"
        if any(p[0] == top and p not in NO_JSON for p in LEAVES):
            assert "--json" in rows[top], f"README's row for `evaltk {top}` does not show --json"
