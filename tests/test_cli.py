"""The command line as a whole: every sub-command's help shows an example, every command
that prints results offers ``--json``, and the examples run on the repository's files."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path

import pytest

from evaltk.cli import build_parser, main
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
    m = re.search(r"Examples?:\s+(evaltk [^\n]*)", parser.format_help())
    assert m, f"no 'Example: evaltk ...' in the help of {parser.prog}"
    return m.group(1)


def test_the_tree_has_every_command():
    assert {p[0] for p in LEAVES} >= {"agreement", "calibration", "demo", "ingest", "trajectory",
                                      "suite", "report", "fixtures", "score", "gate", "scale"}
    assert ("trajectory", "self-check") in LEAVES and ("suite", "check") in LEAVES


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_leaf_help_shows_an_example_of_itself(path):
    example = _example(LEAVES[path])
    assert example.startswith("evaltk " + " ".join(path) + " ")


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_leaf_that_prints_results_offers_json(path):
    has_json = any("--json" in a.option_strings for a in LEAVES[path]._actions)
    assert has_json != (path in NO_JSON), NO_JSON.get(path, "no --json")


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_example_paths_into_the_repository_exist(path):
    for token in shlex.split(_example(LEAVES[path])):
        if token.startswith(("data/", "evaltk/data/", "tests/inputs/")):
            assert (ROOT / token).exists(), f"{' '.join(path)}: example names missing {token}"


#: Examples that run as printed (``out/...`` redirected to a temporary folder); each exits
#: with the code it documents for the example's data.
RUNNABLE = {
    ("suite", "summarize"): 0, ("suite", "gate"): 1, ("suite", "check"): 0,
    ("trajectory", "grade"): 2, ("trajectory", "seal"): 0, ("trajectory", "digest"): 0,
    ("trajectory", "self-check"): 0,
}


@pytest.mark.parametrize("path", sorted(RUNNABLE), ids=" ".join)
def test_examples_run(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / t[4:]) if t.startswith("out/") else t
            for t in shlex.split(_example(LEAVES[path]))[1:]]
    assert main(argv) == RUNNABLE[path]
    out = capsys.readouterr().out
    if "--json" in argv:
        json.loads(out)


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
