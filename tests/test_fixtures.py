"""Tests for evaltk.fixtures: task.yaml validation, journeys, holdout hygiene (seed 004).

Every rule of seed 004 ("Evaluation Task Schema", ../shared/seeds/004_*.txt) and of
issue 6 has one failing example in tests/fixture_corpus/invalid/<case>/ (overlaid on
the valid suite tests/fixture_corpus/valid/), and the validator's findings are asserted
exactly: file, line, field and message.  Cases that cannot live in git (a file over the
size limit, symlinks pointing outside) are built in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evaltk.cli._main as cli
from evaltk.errors import InputError, SchemaViolation, UnreadableInput
from evaltk.fixtures import (
    ANSWER_KINDS,
    CLASSES,
    MAX_TASK_BYTES,
    Journey,
    Phase,
    default_journey,
    load_journey,
    load_suite,
    load_task,
    read_holdout_ledger,
    record_seen,
    retire,
    validate_suite,
)

CORPUS = Path(__file__).parent / "fixture_corpus"
VALID = CORPUS / "valid"
INVALID = CORPUS / "invalid"
SCHEMA = Path(__file__).parent.parent / "evaltk" / "schemas" / "task.schema.json"

# The nine phases of the default journey (evaltk/journeys/default.md).
PHASES = {
    1: "Intake and provenance",
    2: "Current-state discovery and reproduction",
    3: "Architecture/design delta and risk assessment",
    4: "Specification and work decomposition",
    5: "Pre-implementation test and verification planning",
    6: "Domain-specific implementation",
    7: "Independent review and boundary verification",
    8: "Readiness, CI/review feedback loops, and exact-final-head re-verification",
    9: "Authorized post-merge release and closeout",
}
SHA = "3f9c2b7a1d4e5f60718293a4b5c6d7e8f9012345"


def suite_copy(tmp_path: Path, case: str | None = None) -> Path:
    """The valid suite in a temporary folder, with an invalid case overlaid on it."""
    d = tmp_path / "suite"
    shutil.copytree(VALID, d, symlinks=True)
    if case is not None:
        shutil.copytree(INVALID / case, d, dirs_exist_ok=True, symlinks=True)
    return d


def errors(report) -> set[tuple]:
    return {(f.file, f.line, f.field, f.message) for f in report.errors}


def write_task(root: Path, rel: str, text: str) -> Path:
    p = root / "fixtures" / rel / "task.yaml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def traj_text(fid: str, *, path: str = "lightweight", phases: list[int] = (1,),
              skipped: list[int] = (), gates: str = "gate-4: review: pass",
              sha: str | None = None) -> str:
    lines = [
        "kind: trajectory", f"id: {fid}", f"path: {path}", "prompt: Ship it.",
        'phases: "' + " | ".join(f"{n}: {PHASES[n]}" for n in phases) + '"',
        f'gates: "{gates}"', "terminal_state: merged", "visibility: public",
    ]
    if skipped:
        lines.append('skipped_phases: "' + " | ".join(f"{n}: {PHASES[n]}: not needed"
                                                      for n in skipped) + '"')
    if sha:
        lines.append(f"final_head_sha: {sha}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the valid suite


def test_valid_suite_has_no_findings():
    report = validate_suite(VALID)
    assert report.valid
    assert report.findings == ()
    assert report.n_fixtures == 10
    # every answer kind covered (seed: adversarial coverage is mandatory)
    assert report.answer_kinds == {"larger-change": 3, "new-dependency": 1,
                                   "process-change": 2, "no-change": 1}
    assert report.journey == "evaltk/journeys/default.md"
    assert report.composition == {
        "kind": {"task": 6, "trajectory": 4},
        "class": {"adversarial": 1, "bug-diagnosis": 1, "feature-change": 1,
                  "no-change-needed": 1, "refactor": 1, "release-verification": 1},
        "visibility": {"holdout": 3, "public": 7},
        "path": {"full": 1, "high-risk": 1, "lightweight": 1, "refactor": 1},
    }


def test_valid_suite_has_a_trajectory_for_each_path():
    frame = load_suite(VALID)
    traj = frame[frame["kind"] == "trajectory"]
    assert sorted(traj["journey_path"]) == ["full", "high-risk", "lightweight", "refactor"]


def test_fixtures_folder_itself_is_accepted_as_root():
    report = validate_suite(VALID / "fixtures")
    assert report.valid and report.n_fixtures == 10
    # the ledger of the suite is still found (alice's "seen" is on a public fixture)
    frame = load_suite(VALID / "fixtures")
    assert frame.set_index("id").loc["flaky-timeout", "seen_by"] == ["alice"]


def test_load_suite_rows():
    frame = load_suite(VALID)
    assert len(frame) == 10
    assert list(frame.columns[:6]) == ["id", "kind", "class", "boundary", "visibility", "path"]
    row = frame.set_index("id").loc["flaky-timeout"]
    assert (row["kind"], row["class"], row["boundary"], row["visibility"]) == (
        "task", "bug-diagnosis", "integration", "public")
    assert row["path"] == "fixtures/bug-diagnosis/flaky-timeout"
    assert row["file"] == "fixtures/bug-diagnosis/flaky-timeout/task.yaml"
    assert row["context_files"] == ["repo/uploader.py", "repo/test_upload.py"]
    assert bool(row["valid"]) and row["n_errors"] == 0
    light = frame.set_index("id").loc["lightweight-typo-fix"]
    assert light["kind"] == "trajectory" and light["journey_path"] == "lightweight"
    assert light["phases"] == [1, 2, 6, 7, 8] and light["skipped_phases"] == [3, 4, 5, 9]
    assert light["gates"] == {"gate-4": "pass", "gate-5": "pass"}
    assert light["skipped_gates"] == ["gate-1", "gate-2", "gate-3"]
    # routing: parsed and kept as metadata (seed: "Metadata only - not validated")
    assert light["routing_selected"] == ["cli-builder", "technical-documentation"]
    assert light["routing_skipped"] == [
        {"skill": "backend-engineering", "reason": "no server change"},
        {"skill": "security-audit-methodology", "reason": "no trust boundary touched"}]
    full = frame.set_index("id").loc["full-release-cache"]
    assert full["phases"] == list(range(1, 10)) and full["final_head_sha"] == SHA
    adv = frame.set_index("id").loc["reflexive-deletion"]
    assert adv["expected_answer_kind"] == "larger-change,process-change"
    assert adv["adversarial_intent"] == "reflexive deletion"


def test_routing_fields_are_not_validated(tmp_path):
    # Seed: routing_selected / routing_skipped are metadata only, not cross-validated.
    d = suite_copy(tmp_path)
    p = d / "fixtures/trajectories/lightweight-typo-fix/task.yaml"
    p.write_text(p.read_text().replace("routing_selected: cli-builder",
                                       "routing_selected: no-such-skill,, ???,cli-builder")
                 .replace("routing_skipped: ", "routing_skipped: [not-a-table-row] # "))
    assert validate_suite(d).valid
    row = load_suite(d).set_index("id").loc["lightweight-typo-fix"]
    assert row["routing_selected"] == ["no-such-skill", "???", "cli-builder",
                                       "technical-documentation"]
    assert row["routing_skipped"] == [{"skill": "not-a-table-row", "reason": ""}]


# --------------------------------------------------------------------------- one failing example per rule

T = "fixtures/trajectories"
B = "fixtures/bug-diagnosis"
CASES = {
    # seed table: required fields
    "missing-required": {(f"{B}/no-ground-truth/task.yaml", None, "ground_truth",
                          "required field `ground_truth` is missing")},
    "empty-required": {(f"{B}/empty-prompt/task.yaml", 3, "prompt",
                        "required field `prompt` is empty")},
    "prompt-not-text": {(f"{B}/prompt-mapping/task.yaml", 3, "prompt",
                         "`prompt` is a mapping, not text")},
    # seed table: class in the nine classes, expected_boundary, visibility
    "bad-class": {("fixtures/bugfix/bad-class/task.yaml", 2, "class",
                   "`bugfix` is not an allowed `class`")},
    "bad-boundary": {(f"{B}/bad-boundary/task.yaml", 5, "expected_boundary",
                      "`e2e` is not an allowed `expected_boundary`")},
    "bad-visibility": {(f"{B}/bad-visibility/task.yaml", 6, "visibility",
                        "`private` is not an allowed `visibility`")},
    # seed: id matches the directory name; unique; layout fixtures/<class>/<id>/
    "id-mismatch": {(f"{B}/id-mismatch/task.yaml", 1, "id",
                     "id `id-mismatch-2` does not match its directory `id-mismatch`")},
    "duplicate-id": {
        (f"{B}/flaky-timeout/task.yaml", 2, "id",
         "id `flaky-timeout` is not unique: also used by fixtures/refactor/flaky-timeout/task.yaml"),
        ("fixtures/refactor/flaky-timeout/task.yaml", 1, "id",
         "id `flaky-timeout` is not unique: also used by fixtures/bug-diagnosis/flaky-timeout/task.yaml"),
    },
    "class-folder": {("fixtures/feature-change/wrong-folder/task.yaml", 2, "class",
                      "class `refactor` does not match its folder `feature-change/`")},
    "missing-task": {(f"{B}/no-task-file", None, None, "fixture folder has no task.yaml")},
    "layout-depth": {("fixtures/stray/task.yaml", None, None,
                      "task.yaml is not at fixtures/<class>/<id>/task.yaml")},
    # seed: trajectory fixtures live under fixtures/trajectories/ and say kind: trajectory
    "trajectory-folder": {("fixtures/refactor/traj-in-class-folder/task.yaml", 1, "kind",
                           "trajectory fixture is under `refactor/`, not `trajectories/`")},
    "task-in-trajectories": {(f"{T}/no-kind/task.yaml", None, "kind",
                              "fixture under `trajectories/` does not say `kind: trajectory`")},
    "bad-kind": {(f"{B}/bad-kind/task.yaml", 7, "kind", "`task` is not an allowed `kind`")},
    # evaltk extension
    "bad-answer-kind": {(f"{B}/bad-answer-kind/task.yaml", 7, "expected_answer_kind",
                         "`smaller-change` is not an allowed `expected_answer_kind`")},
    # trajectory sub-schema
    "traj-missing-required": {(f"{T}/traj-no-gates/task.yaml", None, "gates",
                               "required field `gates` is missing")},
    "traj-bad-path": {(f"{T}/traj-bad-path/task.yaml", 3, "path",
                       "`medium` is not an allowed `path`")},
    "traj-bad-terminal": {(f"{T}/traj-bad-terminal/task.yaml", 7, "terminal_state",
                           "`done` is not an allowed `terminal_state`")},
    # seed: phase numbers and names must exactly match the journey
    "phase-format": {(f"{T}/traj-phase-format/task.yaml", 5, "phases",
                      "entry `Intake and provenance` is not `N: Phase Name`")},
    "phase-number": {(f"{T}/traj-phase-number/task.yaml", 5, "phases",
                      "entry `10: Celebration`: phase 10 is not in the journey")},
    "phase-name": {(f"{T}/traj-phase-name/task.yaml", 5, "phases",
                    "entry `1: Intake`: phase 1 is not named `Intake` in the journey")},
    # seed: every skipped phase must carry a reason
    "skip-phase-no-reason": {(f"{T}/traj-skip-no-reason/task.yaml", 10, "skipped_phases",
                              "entry `3: Architecture/design delta and risk assessment`: "
                              "skipped phase 3 has no reason")},
    "skip-phase-wrong-name": {(f"{T}/traj-skip-wrong-name/task.yaml", 10, "skipped_phases",
                               "entry `3: Design: no delta`: phase 3 is not named `Design` "
                               "in the journey")},
    "phase-conflict": {(f"{T}/traj-phase-conflict/task.yaml", 10, "skipped_phases",
                        "phase 2 is both traversed (in `phases`) and skipped")},
    # seed: gate ids gate-1..gate-5, verdict pass / conditional / blocked
    "gate-verdict": {(f"{T}/traj-gate-verdict/task.yaml", 6, "gates",
                      "entry `gate-3: spec: approved`: verdict `approved` is not allowed")},
    "gate-id": {(f"{T}/traj-gate-id/task.yaml", 6, "gates",
                 "entry `gate-6: extra: pass`: `gate-6` is not a gate")},
    "gate-format": {(f"{T}/traj-gate-format/task.yaml", 6, "gates",
                     "entry `gate-4: pass` has no description"),
                    (f"{T}/traj-gate-format/task.yaml", 6, "gates",
                     "entry `review passed` is not `gate-N: description: verdict`")},
    "gate-no-verdict": {(f"{T}/traj-gate-no-verdict/task.yaml", 6, "gates",
                         "entry `gate-4: independent review` has no verdict")},
    "skip-gate-no-reason": {(f"{T}/traj-skip-gate/task.yaml", 10, "skipped_gates",
                             "entry `gate-2:`: skipped gate-2 has no reason")},
    "gate-conflict": {(f"{T}/traj-gate-conflict/task.yaml", 10, "skipped_gates",
                       "gate-4 is both recorded (in `gates`) and skipped")},
    # seed: full-path constraints (all nine phases, all five gates, final_head_sha)
    "full-missing-phases": {(f"{T}/traj-full-phases/task.yaml", 5, "phases",
                             "a full-path fixture does not traverse phase 4, 5")},
    "full-missing-gates": {(f"{T}/traj-full-gates/task.yaml", 6, "gates",
                            "a full-path fixture does not record gate-2, gate-3")},
    "full-missing-sha": {(f"{T}/traj-full-sha/task.yaml", 3, "final_head_sha",
                          "a full-path fixture does not bind `final_head_sha`")},
    "short-sha": {(f"{T}/traj-short-sha/task.yaml", 8, "final_head_sha",
                   "`3f9c2b7` is not a full 40-hex commit id")},
    # issue 6, section 2: safe YAML, duplicate keys, encoding
    "duplicate-key": {(f"{B}/dup-key/task.yaml", 7, "visibility",
                       "duplicate key `visibility` (first at line 6)")},
    "yaml-syntax": {(f"{B}/yaml-syntax/task.yaml", 3, None,
                     "not valid YAML: while parsing a flow sequence, expected ',' or ']', "
                     "but got ':'")},
    "not-mapping": {(f"{B}/a-list/task.yaml", 1, None,
                     "the top level is a list, not a mapping of fields")},
    "unsafe-tag": {(f"{B}/unsafe-tag/task.yaml", 3, None,
                    "not valid YAML: could not determine a constructor for the tag "
                    "'tag:yaml.org,2002:python/object/apply:os.system'")},
    "not-utf8": {(f"{B}/latin1/task.yaml", 3, None, "not UTF-8 (byte 0xe9 at offset 43)")},
    # issue 6, section 2: context references stay inside the fixture directory
    "context-dotdot": {(f"{B}/ctx-dotdot/task.yaml", 7, "context",
                        "reference `../../../holdout-ledger.jsonl` (at `context[0]`) escapes the fixture "
                        "directory (it goes up with `..`)")},
    "context-absolute": {(f"{B}/ctx-absolute/task.yaml", 7, "context",
                          "reference `/etc/passwd` (at `context.file`) escapes the fixture directory "
                          "(an absolute path)")},
    "context-missing": {(f"{B}/ctx-missing/task.yaml", 7, "context",
                         "reference `repo/app.py` (at `context.files[0]`) does not exist in the "
                         "fixture directory")},
    # seed: holdout hygiene
    "holdout-seen": {(f"{B}/seen-holdout/task.yaml", 6, "visibility",
                      "holdout fixture was seen by carol at 2026-11-20T08:00:00Z")},
    "retired-still-holdout": {(f"{B}/unretired/task.yaml", 6, "visibility",
                               "fixture was retired at 2026-11-21T08:00:00Z (demoed) but is "
                               "still holdout")},
    "ledger-malformed": {("holdout-ledger.jsonl", 2, None, "not a JSON object: Expecting value"),
                         ("holdout-ledger.jsonl", 3, "event", "`peeked` is not an allowed `event`"),
                         ("holdout-ledger.jsonl", 3, "at", "`yesterday` is not an ISO 8601 time")},
}


def test_every_corpus_case_is_asserted():
    assert sorted(p.name for p in INVALID.iterdir()) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_invalid_case_findings_exact(tmp_path, case):
    report = validate_suite(suite_copy(tmp_path, case))
    assert not report.valid
    assert errors(report) == CASES[case]


def test_expected_says_what_was_allowed(tmp_path):
    report = validate_suite(suite_copy(tmp_path, "bad-class"))
    (f,) = report.errors
    assert f.expected == "one of: " + ", ".join(CLASSES)
    assert f.rule == "enum" and f.fixture == "bad-class"
    report = validate_suite(suite_copy(tmp_path / "2", "phase-name"))
    (f,) = report.errors
    assert f.expected == "`1: Intake and provenance`"
    report = validate_suite(suite_copy(tmp_path / "3", "skip-phase-no-reason"))
    assert report.errors[0].expected == (
        "`3: Architecture/design delta and risk assessment: reason`")


def test_all_problems_reported_at_once(tmp_path):
    # Several cases together: every finding of every case, not only the first one.
    d = suite_copy(tmp_path)
    chosen = ["bad-class", "gate-verdict", "context-dotdot", "duplicate-key", "not-utf8"]
    for case in chosen:
        shutil.copytree(INVALID / case, d, dirs_exist_ok=True)
    report = validate_suite(d)
    assert errors(report) == set().union(*(CASES[c] for c in chosen))


def test_unsafe_tag_constructs_nothing(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    validate_suite(suite_copy(tmp_path, "unsafe-tag"))
    assert calls == []


def test_nested_duplicate_key(tmp_path):
    d = suite_copy(tmp_path)
    write_task(d, "bug-diagnosis/nested-dup",
               "id: nested-dup\nclass: bug-diagnosis\nprompt: p\nground_truth: g\n"
               "expected_boundary: unit\nvisibility: public\n"
               "harness_constraints:\n  tools: [a]\n  tools: [b]\n")
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/nested-dup/task.yaml", 9, "tools",
         "duplicate key `tools` (first at line 8)")}


def test_oversized_task_is_a_finding_not_a_crash(tmp_path):
    d = suite_copy(tmp_path)
    p = write_task(d, "bug-diagnosis/huge", "id: huge\n")
    with p.open("a") as fh:
        fh.write("# " + "x" * MAX_TASK_BYTES + "\n")
    size = p.stat().st_size
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/huge/task.yaml", None, None,
         f"file is {size} bytes, larger than the limit of {MAX_TASK_BYTES} bytes")}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_context_symlink_pointing_outside_is_rejected(tmp_path):
    d = suite_copy(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    fx = write_task(d, "bug-diagnosis/ctx-symlink",
                    "id: ctx-symlink\nclass: bug-diagnosis\nprompt: p\nground_truth: g\n"
                    "expected_boundary: unit\nvisibility: public\ncontext: [notes/secret.txt]\n")
    (fx.parent / "notes").mkdir()
    os.symlink(secret, fx.parent / "notes" / "secret.txt")
    # a symlink that stays inside is fine
    (fx.parent / "notes" / "inside.txt").write_text("ok")
    os.symlink(fx.parent / "notes" / "inside.txt", fx.parent / "link-inside.txt")
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/ctx-symlink/task.yaml", 7, "context",
         "reference `notes/secret.txt` (at `context[0]`) escapes the fixture directory "
         "(a symlink points outside)")}
    fx.write_text(fx.read_text().replace("notes/secret.txt", "link-inside.txt"))
    assert validate_suite(d).valid


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_task_yaml_symlink_pointing_outside_is_not_read(tmp_path):
    d = suite_copy(tmp_path)
    outside = tmp_path / "outside.yaml"
    outside.write_text("id: x\n")
    (d / "fixtures/bug-diagnosis/linked").mkdir()
    os.symlink(outside, d / "fixtures/bug-diagnosis/linked/task.yaml")
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/linked/task.yaml", None, None,
         "task.yaml is a symlink that points outside the fixture directory")}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_symlinked_fixture_folder_is_reported_not_followed(tmp_path):
    d = suite_copy(tmp_path)
    elsewhere = tmp_path / "elsewhere" / "linked"
    shutil.copytree(d / "fixtures/refactor/split-config-loader", elsewhere)
    os.symlink(elsewhere, d / "fixtures/refactor/linked")
    report = validate_suite(d)
    assert errors(report) == {("fixtures/refactor/linked", None, None,
                               "folder is a symlink; fixtures are not looked for through "
                               "symlinks")}
    assert report.n_fixtures == 10


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_task_yaml_that_is_a_fifo_is_not_read(tmp_path):
    d = suite_copy(tmp_path)
    (d / "fixtures/bug-diagnosis/fifo").mkdir()
    os.mkfifo(d / "fixtures/bug-diagnosis/fifo/task.yaml")
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/fifo/task.yaml", None, None, "task.yaml is not a regular file")}


def test_adversarial_coverage_reports_each_missing_kind(tmp_path):
    # Seed: "the suite must include cases where the correct answer is a larger change,
    # a new dependency, a non-code process change, or no code change".
    d = suite_copy(tmp_path)
    shutil.rmtree(d / "fixtures/no-change-needed")
    shutil.rmtree(d / "fixtures/feature-change")
    report = validate_suite(d)
    assert errors(report) == {
        ("fixtures", None, "expected_answer_kind",
         "adversarial coverage: no fixture whose correct answer is a new dependency"),
        ("fixtures", None, "expected_answer_kind",
         "adversarial coverage: no fixture whose correct answer is no code change"),
    }
    assert report.answer_kinds["no-change"] == 0


def test_no_change_via_answer_kind_counts(tmp_path):
    d = suite_copy(tmp_path)
    shutil.rmtree(d / "fixtures/no-change-needed")
    write_task(d, "spec-ambiguity/already-documented",
               "id: already-documented\nclass: spec-ambiguity\nprompt: p\nground_truth: g\n"
               "expected_boundary: unit\nvisibility: public\nexpected_answer_kind: no-change\n")
    assert validate_suite(d).valid


def test_empty_suite_and_unreadable_root(tmp_path):
    (tmp_path / "fixtures").mkdir()
    report = validate_suite(tmp_path)
    assert errors(report) == {("fixtures", None, None, "no task.yaml found")}
    with pytest.raises(UnreadableInput, match="suite root not found"):
        validate_suite(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UnreadableInput, match="not a directory"):
        load_suite(tmp_path / "file.txt")


def test_yaml_numbers_keep_their_text(tmp_path):
    # `id: 42` and an all-digit commit id are read as the characters written.
    d = suite_copy(tmp_path)
    write_task(d, "bug-diagnosis/42",
               "id: 42\nclass: bug-diagnosis\nprompt: p\nground_truth: g\n"
               "expected_boundary: unit\nvisibility: public\n")
    write_task(d, "trajectories/digits-sha",
               traj_text("digits-sha", path="full", phases=list(range(1, 10)),
                         gates="gate-1: a: pass | gate-2: b: pass | gate-3: c: pass | "
                               "gate-4: d: pass | gate-5: e: blocked", sha="1" * 40))
    assert validate_suite(d).valid


def test_seed_flat_lines_read_as_text(tmp_path):
    # Seed 004 writes `phases: 1: Name | 2: Name` unquoted on one line (its runner reads
    # flat `key: value` lines); plain YAML rejects that, evaltk reads it as text.
    p = VALID / "fixtures/trajectories/high-risk-auth-migration/task.yaml"
    assert "phases: 1: Intake" in p.read_text()
    data = load_task(p)
    assert data["gates"] == "gate-1: rollback plan for key rotation: blocked"
    assert data["phases"].startswith("1: Intake and provenance | 2: ")
    q = tmp_path / "task.yaml"
    q.write_text("id: t  # c\nprompt: it's: fine # note\nx: 'quoted: kept'\ny: a:\n")
    assert load_task(q) == {"id": "t", "prompt": "it's: fine", "x": "quoted: kept", "y": "a:"}
    # nested values keep plain YAML rules
    q.write_text("id: t\nharness_constraints:\n  tools: a: b\n")
    with pytest.raises(UnreadableInput, match="line 3.*not valid YAML"):
        load_task(q)
    q.write_text("id: t\nid: u\n")
    with pytest.raises(SchemaViolation, match="duplicate key `id`"):
        load_task(q)


def test_warnings_do_not_invalidate(tmp_path):
    d = suite_copy(tmp_path)
    write_task(d, "adversarial/no-intent",
               "id: no-intent\nclass: adversarial\nprompt: p\nground_truth: g\n"
               "expected_boundary: unit\nvisibility: public\nextra_field: 1\n"
               "context: [docs/readme.md]\n")
    report = validate_suite(d)
    assert report.valid
    assert {(f.field, f.message) for f in report.warnings} == {
        ("adversarial_intent", "an adversarial fixture does not state its trap"),
        ("extra_field", "unknown field `extra_field` is ignored"),
        ("context", "reference `docs/readme.md` (at `context[0]`) does not exist in the fixture "
                    "directory"),
    }


# --------------------------------------------------------------------------- journeys


def test_default_journey():
    j = default_journey()
    assert [p.label for p in j.phases] == [f"{n}: {PHASES[n]}" for n in range(1, 10)]
    assert j.phases[0].label == "1: Intake and provenance"


def test_journey_markdown_colon_lines(tmp_path):
    p = tmp_path / "j.md"
    p.write_text("# My journey\n\nSome prose: not a phase.\n\n1: Triage\n2: Fix it\n- 3: Ship\n")
    assert load_journey(p).phases == (Phase(1, "Triage"), Phase(2, "Fix it"), Phase(3, "Ship"))


def test_journey_markdown_phase_section_wins(tmp_path):
    # `N: Name` lines under a "phases" heading are the phases; others are prose.
    p = tmp_path / "j.md"
    p.write_text("# Journey\n\n## Gates\n\n1: Architecture approval\n\n"
                 "## The nine phases\n\n### Notes\n\n1: Intake and provenance\n2: Build\n\n"
                 "## Routing\n\n1: Other thing\n")
    assert [ph.label for ph in load_journey(p).phases] == ["1: Intake and provenance",
                                                           "2: Build"]


def test_journey_markdown_numbered_list(tmp_path):
    p = tmp_path / "j.md"
    p.write_text("# Notes\n\n1. read the docs first\n2. then this\n\n## Phases\n\n"
                 "1. Triage\n2. Fix it\n3. Ship\n\n## Steps\n\n1. Other list\n")
    assert [ph.label for ph in load_journey(p).phases] == ["1: Triage", "2: Fix it", "3: Ship"]


def test_journey_markdown_headings(tmp_path):
    p = tmp_path / "j.md"
    p.write_text("# Journey\n\n### Phase 1 \u2014 Intake and provenance\n\ntext\n\n"
                 "### Phase 2 \u2014 Current-state discovery and reproduction\n")
    assert [ph.name for ph in load_journey(p).phases] == [PHASES[1], PHASES[2]]


def test_journey_yaml(tmp_path):
    p = tmp_path / "j.yaml"
    p.write_text('phases:\n  - "1: Triage"\n  - {number: 2, name: Fix it}\n  - Ship\n')
    assert load_journey(p).phases == (Phase(1, "Triage"), Phase(2, "Fix it"), Phase(3, "Ship"))
    p.write_text("phases:\n  1: Triage\n  2: Fix it\n")
    assert load_journey(p).phases == (Phase(1, "Triage"), Phase(2, "Fix it"))
    p.write_text("phases:\n  - {phase: '1', title: Triage}\n")
    assert load_journey(p).phases == (Phase(1, "Triage"),)
    # unquoted `- 1: Name` items are mappings to YAML
    p.write_text("phases:\n  - 1: Intake and provenance\n  - 2: Current-state discovery and "
                 "reproduction\n")
    assert load_journey(p).phases == (Phase(1, PHASES[1]), Phase(2, PHASES[2]))


def test_journey_markdown_other_forms(tmp_path):
    p = tmp_path / "j.md"
    p.write_text("# J\n\n## 1: Intake and provenance\n\ntext\n\n## 2: Build\n")
    assert [ph.label for ph in load_journey(p).phases] == ["1: Intake and provenance", "2: Build"]
    p.write_text("# J\n\n**Phase 1: Intake and provenance**\n\nPhase 2 - Build\n")
    assert [ph.label for ph in load_journey(p).phases] == ["1: Intake and provenance", "2: Build"]
    p.write_text("# J\n\n| # | Phase |\n|---|---|\n| 1 | Intake and provenance |\n| 2 | Build |\n")
    assert [ph.label for ph in load_journey(p).phases] == ["1: Intake and provenance", "2: Build"]


def test_journey_errors(tmp_path):
    with pytest.raises(UnreadableInput, match="journey file not found"):
        load_journey(tmp_path / "none.md")
    p = tmp_path / "empty.md"
    p.write_text("# nothing here\n")
    with pytest.raises(SchemaViolation, match="no phases found"):
        load_journey(p)
    p.write_text("1: Triage\n2: Fix\n1: Intake\n")
    with pytest.raises(SchemaViolation, match=r"line 3.*phase 1 is named twice: `Triage` "
                                              r"\(line 1\) and `Intake`"):
        load_journey(p)
    y = tmp_path / "j.yaml"
    y.write_text("phases: []\n")
    with pytest.raises(SchemaViolation, match="non-empty list"):
        load_journey(y)
    y.write_text("phases:\n  - 1: x\n  - 1: x\n  - {number: 1, name: a}\n")
    with pytest.raises(SchemaViolation, match=r"line 4.*phase 1 is named twice: `x`"):
        load_journey(y)
    y.write_text("phases:\n  - 1: x\n  - [a]\n")
    with pytest.raises(SchemaViolation, match=r"line 3: field `phases\[1\]`"):
        load_journey(y)
    with pytest.raises(ValueError, match="unique"):
        Journey((Phase(1, "a"), Phase(1, "b")))


def test_custom_journey_drives_phase_checks(tmp_path):
    j = tmp_path / "short.md"
    j.write_text("1: Intake and provenance\n2: Build\n3: Ship\n")
    d = tmp_path / "s"
    (d / "fixtures").mkdir(parents=True)
    for k, kind in enumerate(ANSWER_KINDS):
        write_task(d, f"refactor/r{k}", f"id: r{k}\nclass: refactor\nprompt: p\n"
                   f"ground_truth: g\nexpected_boundary: unit\nvisibility: public\n"
                   f"expected_answer_kind: {kind}\n")
    gates = "gate-1: a: pass | gate-2: b: pass | gate-3: c: pass | gate-4: d: pass | gate-5: e: pass"
    write_task(d, "trajectories/t", "kind: trajectory\nid: t\npath: full\nprompt: p\n"
               'phases: "1: Intake and provenance | 2: Build | 3: Ship"\n'
               f'gates: "{gates}"\nterminal_state: released\nvisibility: public\n'
               f"final_head_sha: {SHA}\n")
    assert validate_suite(d, journey=j).valid
    # the default journey has no phase `2: Build`, and a full path needs all nine
    assert errors(validate_suite(d)) == {
        ("fixtures/trajectories/t/task.yaml", 5, "phases",
         "entry `2: Build`: phase 2 is not named `Build` in the journey"),
        ("fixtures/trajectories/t/task.yaml", 5, "phases",
         "entry `3: Ship`: phase 3 is not named `Ship` in the journey"),
        ("fixtures/trajectories/t/task.yaml", 5, "phases",
         "a full-path fixture does not traverse phase 4, 5, 6, 7, 8, 9"),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traversed=st.sets(st.integers(1, 9), min_size=1))
def test_full_path_missing_phases_property(tmp_path_factory, traversed):
    # Property: a full-path fixture is valid exactly when it traverses all nine
    # phases, and the finding names the missing phases in order.
    d = tmp_path_factory.mktemp("prop")
    shutil.copytree(VALID, d, dirs_exist_ok=True)
    gates = "gate-1: a: pass | gate-2: b: pass | gate-3: c: pass | gate-4: d: pass | gate-5: e: pass"
    write_task(d, "trajectories/prop", traj_text("prop", path="full", phases=sorted(traversed),
                                                 gates=gates, sha=SHA))
    missing = [n for n in range(1, 10) if n not in traversed]
    expected = set() if not missing else {
        ("fixtures/trajectories/prop/task.yaml", 5, "phases",
         "a full-path fixture does not traverse phase " + ", ".join(map(str, missing)))}
    assert errors(validate_suite(d)) == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traversed=st.sets(st.integers(1, 9), min_size=1), data=st.data())
def test_lightweight_any_split_with_reasons_is_valid(tmp_path_factory, traversed, data):
    rest = sorted(set(range(1, 10)) - traversed)
    skipped = data.draw(st.sets(st.sampled_from(rest)) if rest else st.just(set()))
    d = tmp_path_factory.mktemp("prop")
    shutil.copytree(VALID, d, dirs_exist_ok=True)
    write_task(d, "trajectories/prop", traj_text("prop", phases=sorted(traversed),
                                                 skipped=sorted(skipped)))
    assert validate_suite(d).valid


# --------------------------------------------------------------------------- holdout ledger


def test_seen_then_retire(tmp_path):
    d = suite_copy(tmp_path)
    rec = record_seen(d, "split-config-loader", by="erin", at="2026-11-29T12:00:00Z")
    assert rec["event"] == "seen" and rec["visibility"] == "holdout"
    report = validate_suite(d)
    assert errors(report) == {("fixtures/refactor/split-config-loader/task.yaml", 8,
                               "visibility",
                               "holdout fixture was seen by erin at 2026-11-29T12:00:00Z")}
    p = d / "fixtures/refactor/split-config-loader/task.yaml"
    before = p.read_text()
    retire(d, "split-config-loader", reason="shown in a PR review", by="lead",
           at="2026-11-29T13:00:00Z")
    after = p.read_text()
    # only the visibility value changed
    assert after == before.replace("visibility: holdout", "visibility: public")
    assert validate_suite(d).valid
    ledger = read_holdout_ledger(d)
    assert list(ledger["event"][-2:]) == ["seen", "retired"]
    assert ledger.iloc[-1]["reason"] == "shown in a PR review"
    lines = (d / "holdout-ledger.jsonl").read_text().splitlines()
    assert json.loads(lines[-1]) == {"event": "retired", "id": "split-config-loader",
                                     "reason": "shown in a PR review",
                                     "at": "2026-11-29T13:00:00Z", "from": "holdout",
                                     "to": "public", "by": "lead"}


def test_retire_keeps_comments_and_quotes(tmp_path):
    d = suite_copy(tmp_path)
    p = write_task(d, "refactor/quoted",
                   "# keep me\nid: quoted\nclass: refactor\nprompt: p\nground_truth: g\n"
                   "expected_boundary: unit\nvisibility: 'holdout'  # hidden\n")
    retire(d, "quoted", reason="leaked")
    assert p.read_text().endswith("visibility: public  # hidden\n")
    assert p.read_text().startswith("# keep me\n")


def test_ledger_api_errors(tmp_path):
    d = suite_copy(tmp_path)
    with pytest.raises(InputError, match="no fixture has id `nope`"):
        record_seen(d, "nope", by="x")
    with pytest.raises(InputError, match="`by` must name"):
        record_seen(d, "flaky-timeout", by=" ")
    with pytest.raises(InputError, match="not a holdout fixture"):
        retire(d, "flaky-timeout", reason="r")
    with pytest.raises(InputError, match="`reason` must say"):
        retire(d, "split-config-loader", reason="")
    with pytest.raises(InputError, match="ISO 8601"):
        record_seen(d, "flaky-timeout", by="x", at="tuesday")
    shutil.copytree(INVALID / "ledger-malformed", d, dirs_exist_ok=True)
    with pytest.raises(SchemaViolation, match="line 2"):
        read_holdout_ledger(d)


def test_ledger_unknown_id_is_a_warning(tmp_path):
    d = suite_copy(tmp_path)
    with (d / "holdout-ledger.jsonl").open("a") as fh:
        fh.write('{"event": "seen", "id": "gone", "by": "x", "at": "2026-01-01T00:00:00Z"}\n')
    report = validate_suite(d)
    assert report.valid
    assert [(f.file, f.line, f.message) for f in report.warnings] == [
        ("holdout-ledger.jsonl", 4, "no fixture has id `gone`")]


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def run(monkeypatch, capsys):
    # Only this module's commands, so other modules mid-edit cannot break these tests.
    monkeypatch.setattr(cli, "_MODULES", ("evaltk.cli.fixtures",))

    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err
    return _run


def test_cli_validate_exit_codes(run, tmp_path):
    code, out, _ = run("fixtures", "validate", str(VALID))
    assert code == 0 and "10 fixture(s), 0 error(s): valid" in out
    assert "  by visibility: holdout 3, public 7\n" in out
    assert ("  answer kinds: larger-change 3, new-dependency 1, process-change 2, no-change 1"
            in out)
    d = suite_copy(tmp_path, "gate-verdict")
    code, out, _ = run("fixtures", "validate", str(d))
    assert code == 1
    assert (f"{d.as_posix()}/fixtures/trajectories/traj-gate-verdict/task.yaml:6: error: "
            "field `gates`: entry `gate-3: spec: approved`: verdict `approved` is not allowed "
            "(expected one of: pass, conditional, blocked)") in out
    code, _, err = run("fixtures", "validate", str(tmp_path / "missing"))
    assert code == 66 and "suite root not found" in err


def test_cli_validate_json(run, tmp_path):
    code, out, _ = run("fixtures", "validate", str(VALID), "--json")
    assert code == 0 and json.loads(out) == []
    d = suite_copy(tmp_path, "ledger-malformed")
    code, out, _ = run("fixtures", "validate", str(d), "--json")
    found = json.loads(out)
    assert code == 1 and isinstance(found, list)
    assert {(f["file"], f["line"], f["field"], f["message"]) for f in found} == \
        CASES["ledger-malformed"]
    assert set(found[0]) == {"file", "line", "field", "message", "expected", "rule",
                             "severity", "fixture"}


def test_cli_validate_only_aliases(run):
    assert run("fixtures", "validate", str(VALID), "--validate-only")[0] == 0
    code, out, _ = run("fixtures", "--suite", str(VALID / "fixtures"), "--validate-only")
    assert code == 0 and "valid" in out
    assert run("fixtures")[0] == 64


def test_cli_journey_option(run, tmp_path):
    j = tmp_path / "j.md"
    j.write_text("1: Only phase\n")
    code, out, _ = run("fixtures", "validate", str(VALID), "--journey", str(j), "--json")
    assert code == 1
    assert any(f["message"] == "entry `2: Current-state discovery and reproduction`: "
               "phase 2 is not in the journey" for f in json.loads(out))
    assert run("fixtures", "validate", str(VALID), "--journey", str(tmp_path / "x.md"))[0] == 66
    j.write_text("no phases at all\n")
    assert run("fixtures", "validate", str(VALID), "--journey", str(j))[0] == 65


def test_cli_list(run):
    code, out, _ = run("fixtures", "list", str(VALID), "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 10
    assert {r["id"]: r["kind"] for r in rows}["full-release-cache"] == "trajectory"
    code, out, _ = run("fixtures", "list", str(VALID))
    assert code == 0 and "split-config-loader" in out and "holdout" in out


def test_cli_seen_and_retire(run, tmp_path):
    d = suite_copy(tmp_path)
    code, out, _ = run("fixtures", "seen", "reflexive-deletion", "--by", "frank",
                       "--root", str(d))
    assert code == 0 and "no longer an honest holdout" in out
    assert run("fixtures", "validate", str(d))[0] == 1
    code, out, _ = run("fixtures", "retire", "reflexive-deletion", "--reason", "demo",
                       "--root", str(d))
    assert code == 0 and "now public" in out
    assert run("fixtures", "validate", str(d))[0] == 0
    assert run("fixtures", "retire", "reflexive-deletion", "--reason", "again",
               "--root", str(d))[0] == 1
    assert run("fixtures", "seen", "nope", "--by", "x", "--root", str(d))[0] == 64
    assert run("fixtures", "seen", "flaky-timeout", "--root", str(d))[0] == 64


# --------------------------------------------------------------------------- JSON Schema


def _load(p: Path):
    return load_task(p)


def test_schema_accepts_the_valid_corpus():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    for p in sorted((VALID / "fixtures").rglob("task.yaml")):
        assert not list(v.iter_errors(_load(p))), p


@pytest.mark.parametrize("case", ["bad-class", "bad-boundary", "bad-visibility", "traj-bad-path",
                                  "traj-bad-terminal", "gate-verdict", "gate-id",
                                  "skip-gate-no-reason", "full-missing-sha", "short-sha",
                                  "bad-answer-kind", "missing-required", "phase-format"])
def test_schema_rejects_what_the_validator_rejects(case):
    v = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    (p,) = (INVALID / case).rglob("task.yaml")
    assert list(v.iter_errors(_load(p))), case


def test_demo_suite_is_valid():
    demo = Path(__file__).parent.parent / "data" / "examples" / "fixtures"
    report = validate_suite(demo)
    assert report.valid and report.findings == () and report.n_fixtures == 8
    assert all(n >= 1 for n in report.answer_kinds.values())


@pytest.mark.parametrize("case", ["duplicate-key", "yaml-syntax", "phase-name", "not-utf8"])
def test_same_findings_without_libyaml(tmp_path, monkeypatch, case):
    # The fast (libyaml) and the pure-Python parsers must report the same findings.
    import evaltk.fixtures._yaml as fxm
    d = suite_copy(tmp_path, case)
    fast, fast_rows = validate_suite(d), load_suite(d)
    monkeypatch.setattr(fxm, "_FastLoader", fxm._FixtureLoader)
    assert validate_suite(d).findings == fast.findings
    assert load_suite(d).to_dict(orient="records") == fast_rows.to_dict(orient="records")


def test_unparsable_fixture_still_has_a_row(tmp_path):
    d = suite_copy(tmp_path, "yaml-syntax")
    row = load_suite(d).set_index("id").loc["yaml-syntax"]
    assert pd.isna(row["kind"]) and not row["valid"] and row["n_errors"] == 1


def test_empty_task_and_crlf_flat_lines(tmp_path):
    d = suite_copy(tmp_path)
    write_task(d, "bug-diagnosis/empty", "")
    p = d / "fixtures/trajectories/crlf/task.yaml"
    p.parent.mkdir()
    p.write_bytes(traj_text("crlf").replace('"', "").replace("\n", "\r\n").encode())
    assert errors(validate_suite(d)) == {
        ("fixtures/bug-diagnosis/empty/task.yaml", 1, None, "the file is empty")}
    assert load_task(p)["phases"] == "1: Intake and provenance"


def test_findings_sorted_and_json_warnings(run, tmp_path):
    d = suite_copy(tmp_path)
    for case in ("bad-class", "gate-id", "ledger-malformed"):
        shutil.copytree(INVALID / case, d, dirs_exist_ok=True)
    write_task(d, "adversarial/no-intent",
               "id: no-intent\nclass: adversarial\nprompt: p\nground_truth: g\n"
               "expected_boundary: unit\nvisibility: public\n")
    report = validate_suite(d)
    keys = [(f.file, f.line if f.line is not None else -1) for f in report.findings]
    assert keys == sorted(keys)
    code, out, _ = run("fixtures", "validate", str(d), "--json", "--warnings")
    found = json.loads(out)
    assert code == 1
    assert [f["severity"] for f in found].count("warning") == 1
    assert len(found) == len(report.findings)


_ALPHABET = st.sampled_from(list("ab1 :|#'\"-[]{}!&*>?,\t") + ["gate-1", ": ", " #", "x: y"])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.lists(_ALPHABET, max_size=8).map("".join), min_size=1, max_size=4))
def test_flat_quoting_never_changes_valid_yaml(values):
    # Invariance: a document YAML already reads is read identically after the seed's
    # flat lines are quoted; a document YAML rejects either stays rejected or reads
    # each quoted line as the text written (comment removed).
    from evaltk.fixtures._yaml import _load_yaml_text, _quote_flat_values

    text = "".join(f"k{i}: {v}\n" for i, v in enumerate(values))
    data, _, problems = _load_yaml_text(text)
    try:  # the same parser evaltk uses (libyaml when present)
        plain = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError:
        if data is None:
            assert problems  # still rejected, with a reason
            return
        quoted = _quote_flat_values(text)
        for i, v in enumerate(values):
            if quoted.splitlines()[i] != text.splitlines()[i]:
                assert data[f"k{i}"] == re.split(r"[ \t]#", v, maxsplit=1)[0].strip()
        return
    assert data == plain and not problems


@pytest.mark.parametrize("ref, is_ref", [
    ("repo/app.py", True), ("notes.md", True), ("./x", True), ("../x", True), ("/etc/passwd", True),
    ("C:\\x", True), ("~/.ssh/id_rsa", True),
    ("Use Python 3.11 only", False), ("https://example.com/a/b", False), ("e.g.", False),
    ("line one\nline/two", False), ("plain", False),
])
def test_what_counts_as_a_context_file_reference(ref, is_ref):
    from evaltk.fixtures._validate import _context_refs

    assert bool(_context_refs(ref, "context", False, set())) is is_ref
    # inside an explicit `file:` entry everything is a reference
    assert _context_refs({"file": ref}, "context", False, set())[0][1] == ref.strip()


def test_ledger_schema_matches_what_evaltk_writes(tmp_path):
    schema = json.loads((SCHEMA.parent / "holdout-ledger.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    d = suite_copy(tmp_path)
    record_seen(d, "split-config-loader", by="gil")
    retire(d, "split-config-loader", reason="leaked", at="2026-11-30T10:00:00+01:00")
    for line in (d / "holdout-ledger.jsonl").read_text().splitlines():
        assert not list(v.iter_errors(json.loads(line))), line
    for line in (INVALID / "ledger-malformed" / "holdout-ledger.jsonl").read_text().splitlines()[2:]:
        assert list(v.iter_errors(json.loads(line)))


def test_a_gate_recorded_twice_is_an_error(tmp_path):
    """Review finding: one gate, one verdict (gate-4 both pass and blocked must not validate)."""
    import shutil

    from evaltk.fixtures import validate_suite

    root = tmp_path / "suite"
    shutil.copytree(Path(__file__).parent / "fixture_corpus" / "valid", root)
    f = root / "fixtures" / "trajectories" / "lightweight-typo-fix" / "task.yaml"
    text = f.read_text(encoding="utf-8")
    f.write_text(text.replace("gate-4: independent review: pass |",
                              "gate-4: independent review: pass | gate-4: second look: blocked |"), encoding="utf-8")
    rep = validate_suite(root)
    dup = [x for x in rep.findings if getattr(x, "rule", None) == "gate-duplicate"]
    assert dup and "recorded more than once" in dup[0].message
