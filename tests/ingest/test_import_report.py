"""An imported folder is report data (issue #18, part 3): `evaltk report --data DIR` runs on it,
the weekly page scores the imported runs and the suite page reads the imported suite run."""

from __future__ import annotations

import json

import pytest

from evaltk import report
from evaltk.cli import main
from evaltk.ingest import import_inspect, read_action_policy, write_import


@pytest.fixture(scope="module")
def folder(inspect_logs, policy_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("imported")
    write_import(import_inspect(inspect_logs["eval"], policy=read_action_policy(policy_file)), out)
    return out


def test_an_imported_folder_is_recognised_and_its_runs_are_the_weeks_scores(folder):
    s = report.data_sources(str(folder))
    assert s.imported == folder.resolve() and s.demo is None
    assert s.suite_run == folder.resolve() / "suite" / "run.json"
    assert [p.name for p in s.files()[:3]] == ["import.json", "traces.jsonl", "answers.csv"]
    sm, note = report.week_scores(s, demo=None)
    tids = {json.loads(line)["trace_id"] for line in (folder / "traces.jsonl").read_text().splitlines()}
    assert set(sm.frame["trace_id"]) == tids
    assert note.startswith(f"scores, coverage and agents: the {len(tids)} runs imported")


def test_an_imported_folder_inside_the_data_folder_is_found(folder, tmp_path):
    import shutil

    shutil.copytree(folder, tmp_path / "imported")
    s = report.data_sources(str(tmp_path))
    assert s.imported == (tmp_path / "imported").resolve()
    assert s.suite_run == (tmp_path / "imported" / "suite" / "run.json").resolve()


@pytest.mark.slow
def test_evaltk_report_runs_on_an_imported_folder(folder, tmp_path):
    out = tmp_path / "reports"
    assert main(["report", "--data", str(folder), "--out", str(out), "--week", "2026-W49",
                 "--only", "weekly", "suite_gating"]) == 0
    week = out / "2026-W49"
    weekly = (week / "index.html").read_text(encoding="utf-8")
    assert "runs imported in" in weekly
    suite = (week / "suite_gating.html").read_text(encoding="utf-8")
    assert "refunds/s1" in suite
    inputs = json.loads((week / "run.json").read_text(encoding="utf-8"))
    assert "traces.jsonl" in json.dumps(inputs)
