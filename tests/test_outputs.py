"""Issue 15, the writing half: nothing lost, nothing overwritten (docs/outputs.md).

Every case runs the real command (exit code, no traceback, the message names both paths,
or the file and the check; in a subprocess where the case watches HOME): outputs that are inputs are refused, a
refused run leaves no result behind, a score folder and a scale dataset are checked on
load, the holdout ledger is never followed through a symlink, CSV cells cannot be live
formulas, and no command writes outside its output (HOME included) or changes an input.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaltk import _io
from evaltk.cli import main
from evaltk.data import write_demo
from evaltk.errors import OutputRefused, SchemaViolation
from evaltk.scoring import ScoreMatrix

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "evaltk" / "data" / "examples"
FIXTURE_SUITE = ROOT / "tests" / "inputs" / "fixture_corpus" / "valid"
#: Where a tool may keep per-user state; unset so that HOME alone decides.
_USER_DIRS = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "IPYTHONDIR",
              "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR")


def cli(*args: object, cwd: Path | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command's exit code, stdout and stderr.  A case that watches HOME (nothing written
    under it) runs it in a subprocess with its own HOME; the others call
    :func:`evaltk.cli.main`, the code ``python -m evaltk`` runs, in this process, in ``cwd``
    when given (a subprocess spends about 2 CPU-seconds importing before it starts; the suite
    has a time budget)."""
    if home is None:
        with contextlib.chdir(cwd or Path.cwd()):
            return _in_process(*args)
    env = {k: v for k, v in os.environ.items() if home is None or k not in _USER_DIRS}
    env["PYTHONPATH"] = str(ROOT)
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "evaltk", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def _in_process(*args: object) -> subprocess.CompletedProcess[str]:
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's --help and --version
            code = e.code if isinstance(e.code, int) else 0
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def refused(r: subprocess.CompletedProcess[str], *names: object) -> None:
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    for n in names:
        assert str(n) in r.stderr, (n, r.stderr)


def checked(r: subprocess.CompletedProcess[str], file: object, check: str, code: int = 65) -> None:
    """Refused on load, naming the file and the check."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert str(file) in r.stderr, r.stderr
    assert f"integrity check `{check}`" in r.stderr, r.stderr


def digests(*roots: Path) -> dict[str, str]:
    """sha256 of every file under ``roots`` (a file is its own root)."""
    out = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    write_demo(d, n_traces=60, rng=0)
    return d


@pytest.fixture(scope="module")
def scored(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A score folder written by `evaltk score`."""
    out = tmp_path_factory.mktemp("scored") / "m"
    r = cli("score", demo / "traces.jsonl", "--answers", demo / "answers.csv", "--labels", demo / "labels.csv",
            "--out", out)
    assert r.returncode == 0, r.stderr
    return out


def trajectory_copy(tmp_path: Path) -> Path:
    d = tmp_path / "trajectory"
    shutil.copytree(EXAMPLES / "trajectory", d)
    return d


def parquet_traces(demo: Path, path: Path) -> Path:
    recs = [json.loads(line) for line in (demo / "traces.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.array(recs))]), path)  # pyarrow 14
    return path


# =========================================================================== outputs that are inputs


def test_trajectory_grade_refuses_to_replace_the_sealed_lock(tmp_path):
    d = trajectory_copy(tmp_path)
    before = digests(d)
    for victim in ("lock.json", "results-pass.json", "design.json"):
        r = cli("trajectory", "grade", "--lock", d / "lock.json", "--results", d / "results-pass.json",
                "--design", d / "design.json", "--output", d / victim)
        refused(r, d / victim, "is the input")
    (d / "alias.json").symlink_to(d / "lock.json")  # the same file under another name
    r = cli("trajectory", "grade", "--lock", d / "lock.json", "--results", d / "results-pass.json",
            "--output", d / "alias.json")
    refused(r, d / "alias.json", d / "lock.json")
    r = cli("trajectory", "seal", d / "lock.json", "--output", d / "lock.json")
    refused(r, d / "lock.json")
    after = digests(d)
    after.pop(str(d / "alias.json"))
    assert after == before


def test_suite_summarize_refuses_to_replace_the_run(tmp_path):
    run = tmp_path / "run.json"
    shutil.copy(EXAMPLES / "suite" / "run.json", run)
    before = run.read_bytes()
    refused(cli("suite", "summarize", run, "--out", run), run)
    refused(cli("suite", "summarize", run, "--out", tmp_path / "s.json", "--events", run), run)
    refused(cli("suite", "summarize", run, "--out", tmp_path / "s.json", "--events", tmp_path / "s.json"),
            tmp_path / "s.json")
    refused(cli("suite", "summarize", run, "--out", tmp_path / "."), tmp_path)  # a folder, not a file
    assert run.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_ingest_out_dot_refuses_to_replace_the_trace_file(demo, tmp_path):
    traces = parquet_traces(demo, tmp_path / "runs.parquet")
    before = traces.read_bytes()
    r = cli("ingest", "runs.parquet", "--out", ".", cwd=tmp_path)
    refused(r, "runs.parquet", "would overwrite")
    assert traces.read_bytes() == before and listing(tmp_path) == {"runs.parquet"}
    # the same trace file with another output folder is read and written as before
    assert cli("ingest", "runs.parquet", "--out", "o", cwd=tmp_path).returncode in (0, 1)
    assert (tmp_path / "o" / "runs.parquet").is_file() and traces.read_bytes() == before


def test_scale_score_refuses_an_out_inside_the_store(demo, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    shutil.copy(demo / "traces.jsonl", store / "p0.jsonl")
    before = listing(store)
    r = cli("scale", "score", store, "--out", store / "scored", "--engine", "pandas")
    refused(r, store / "scored", store, "inside the input")
    assert listing(store) == before


@pytest.mark.parametrize("command", ["score", "ingest", "scale", "demo", "report", "grade", "summarize"])
def test_an_existing_file_where_a_folder_is_expected_is_a_clean_error(command, demo, tmp_path):
    f = tmp_path / "taken"
    f.write_text("keep me\n")
    d = trajectory_copy(tmp_path)
    traces = demo / "traces.jsonl"
    args = {"score": ["score", traces, "--out", f], "ingest": ["ingest", traces, "--out", f],
            "scale": ["scale", "score", traces, "--out", f, "--engine", "pandas"], "demo": ["demo", f],
            "report": ["report", "--out", f, "--only", "calibration"],
            "grade": ["trajectory", "grade", "--lock", d / "lock.json", "--results", d / "results-pass.json",
                      "--output", tmp_path],
            "summarize": ["suite", "summarize", EXAMPLES / "suite" / "run.json", "--out", tmp_path]}[command]
    r = cli(*args)
    refused(r, f if command not in ("grade", "summarize") else tmp_path)
    assert f.read_text() == "keep me\n"


def _writer(command: str, demo: Path, out: Path, *extra: object) -> list[object]:
    return {"demo": ["demo", out, "--n-traces", 20],
            "score": ["score", demo / "traces.jsonl", "--out", out],
            "ingest": ["ingest", demo / "traces.jsonl", "--out", out],
            "import": ["import", "otel", EXAMPLES / "import" / "otlp.json", "--out", out]}[command] + list(extra)


@pytest.mark.parametrize("command", ["demo", "score", "ingest", "import"])
def test_a_folder_holding_other_things_is_refused_unless_overwrite(command, demo, scored, tmp_path):
    """One rule (``_io.check_own_folder``): a folder that holds anything the command does not
    write (a demo corpus, another command's score folder) is refused, naming the folder and
    what is in it; an earlier run of the same command is rewritten; --overwrite writes over."""
    other = tmp_path / "other"
    shutil.copytree(scored if command == "demo" else demo, other)
    before = digests(other)
    r = cli(*_writer(command, demo, other))
    refused(r, other, f"evaltk {command} does not write", "diagnostics.parquet" if command == "demo" else "canaries.csv",
            "--overwrite")
    assert digests(other) == before  # nothing written, not even a file of the command's own name
    own = tmp_path / "own"
    assert cli(*_writer(command, demo, own)).returncode == 0
    r = cli(*_writer(command, demo, own))  # an earlier run of the same command: rewritten
    assert r.returncode == 0, r.stderr
    r = cli(*_writer(command, demo, other, "--overwrite"))
    assert r.returncode == 0, r.stderr
    kept = {f for f in before if Path(f).name not in listing(own)}
    assert kept and all(digests(Path(f)) == {f: before[f]} for f in kept)  # only same-named files replaced


def test_check_own_folder_knows_an_earlier_run_by_its_last_file_and_nothing_else(tmp_path):
    writes = ["traces.jsonl", "suite/run.json", "import.json"]
    _io.check_own_folder(tmp_path / "new", writes, by="evaltk import")  # absent or empty: written
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "run.json").write_text("{}")
    (tmp_path / ".traces.jsonl.x1y2.tmp").write_text("")  # a temporary of its own: not foreign
    with pytest.raises(OutputRefused, match=r"holds .*suite.* but no import.json"):
        _io.check_own_folder(tmp_path, writes, by="evaltk import")  # an unfinished run
    (tmp_path / "import.json").write_text("{}")
    _io.check_own_folder(tmp_path, writes, by="evaltk import")
    (tmp_path / "suite" / "notes.txt").write_text("mine")
    with pytest.raises(OutputRefused, match=r"does not write \(suite/notes.txt\)"):
        _io.check_own_folder(tmp_path, writes, by="evaltk import")
    _io.check_output(tmp_path, [], kind="dir", writes=writes, by="evaltk import", overwrite=True)


# =========================================================================== a refused run leaves no result


def test_a_refused_grade_removes_the_earlier_pass_report(tmp_path):
    d = trajectory_copy(tmp_path)
    out = tmp_path / "report.json"
    r = cli("trajectory", "grade", "--lock", d / "lock.json", "--results", d / "results-pass.json", "--output", out)
    assert r.returncode == 0 and json.loads(out.read_text())["summary"]["decision"] == "pass"
    lock = json.loads((d / "lock.json").read_text())
    lock["lock_digest"] = "0" * 64  # the lock changed after it was sealed
    (d / "changed.json").write_text(json.dumps(lock))
    r = cli("trajectory", "grade", "--lock", d / "changed.json", "--results", d / "results-pass.json",
            "--output", out)
    assert r.returncode == 10 and "lock changed" in r.stderr
    assert not out.exists()  # the earlier "pass" cannot be read as this run's result
    assert list(tmp_path.glob("*.tmp")) == [] and list(tmp_path.glob(".*")) == []


def test_a_failed_suite_summary_removes_the_earlier_summary(tmp_path):
    out, events = tmp_path / "summary.json", tmp_path / "events.jsonl"
    good = EXAMPLES / "suite" / "run.json"
    assert cli("suite", "summarize", good, "--out", out, "--events", events).returncode == 0
    assert out.is_file() and events.is_file()
    bad = tmp_path / "bad.json"
    bad.write_text('{"suite": "s"}')
    r = cli("suite", "summarize", bad, "--out", out, "--events", events)
    assert r.returncode in (65, 66) and "Traceback" not in r.stderr
    assert not out.exists() and not events.exists()


def test_a_failed_score_leaves_no_loadable_folder(demo, tmp_path):
    out = tmp_path / "m"
    assert cli("score", demo / "traces.jsonl", "--out", out).returncode == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text((demo / "traces.jsonl").read_text() + "{not json\n")
    r = cli("score", bad, "--out", out, "--strict")
    assert r.returncode in (65, 66) and "Traceback" not in r.stderr
    assert not (out / "manifest.json").exists()
    r = cli("gate", "--baseline", out, "--candidate", out)
    assert r.returncode == 66 and "not a saved score matrix" in r.stderr


def test_a_failed_ingest_removes_the_earlier_tables(demo, tmp_path):
    out = tmp_path / "o"
    assert cli("ingest", demo / "traces.jsonl", "--out", out).returncode in (0, 1)
    assert (out / "ledger.csv").is_file()
    bad = tmp_path / "bad.jsonl"
    bad.write_text((demo / "traces.jsonl").read_text() + "{not json\n")
    r = cli("ingest", bad, "--out", out, "--strict")
    assert r.returncode in (65, 66) and "Traceback" not in r.stderr
    assert listing(out) == set()


# =========================================================================== integrity on load: score folders


def _tamper(src: Path, dst: Path, edit, *, redigest: bool) -> Path:
    shutil.copytree(src, dst)
    f = pd.read_parquet(dst / "scores.parquet")
    edit(f).to_parquet(dst / "scores.parquet", index=False)
    if redigest:  # a careful forger also rewrites the digest: the content checks still refuse
        man = json.loads((dst / "manifest.json").read_text())
        man["tables"]["scores.parquet"] = "sha256:" + hashlib.sha256((dst / "scores.parquet").read_bytes()).hexdigest()
        (dst / "manifest.json").write_text(json.dumps(man))
    return dst


def _duplicate_x_task(f: pd.DataFrame) -> pd.DataFrame:
    extra = f[(f["measure"] == "x_task") & (f["tier"] == "automatic")].assign(value=1.0, cause=None, reason=None)
    return pd.concat([f, extra], ignore_index=True)


def _to_1_5(f: pd.DataFrame) -> pd.DataFrame:
    return f.assign(value=f["value"].where(f["value"].isna(), 1.5))


def _other_version(f: pd.DataFrame) -> pd.DataFrame:
    version = f["scorer_version"].astype(str)
    return f.assign(scorer_version=version.where(f["measure"].astype(str) != "x_task", "9.9"))


@pytest.mark.parametrize(("edit", "redigest", "check"), [
    (_duplicate_x_task, False, "digest"),
    (_duplicate_x_task, True, "duplicate"),
    (_to_1_5, True, "range"),
    (_other_version, True, "scorer_version"),
], ids=["duplicated-rows", "duplicated-rows-redigested", "values-1.5", "scorer-version"])
def test_gate_refuses_a_tampered_candidate(scored, tmp_path, edit, redigest, check):
    cand = _tamper(scored, tmp_path / "cand", edit, redigest=redigest)
    r = cli("gate", "--baseline", scored, "--candidate", cand)
    checked(r, cand / "scores.parquet", check)
    with pytest.raises(SchemaViolation, match=f"integrity check `{check}`"):
        ScoreMatrix.load(cand)


def test_gate_runs_on_untampered_folders_and_refuses_a_deleted_manifest(scored, tmp_path):
    r = cli("gate", "--baseline", scored, "--candidate", scored)
    assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, r.stderr
    cand = tmp_path / "cand"
    shutil.copytree(scored, cand)
    (cand / "manifest.json").unlink()
    r = cli("gate", "--baseline", scored, "--candidate", cand)
    assert r.returncode == 66 and str(cand) in r.stderr and "manifest.json" in r.stderr


def test_a_manifest_without_digests_or_with_an_unlisted_table_is_refused(scored, tmp_path):
    d = tmp_path / "m"
    shutil.copytree(scored, d)
    man = json.loads((d / "manifest.json").read_text())
    del man["tables"]["runs.parquet"]
    (d / "manifest.json").write_text(json.dumps(man))
    checked(cli("gate", "--baseline", scored, "--candidate", d), d / "runs.parquet", "digest")
    del man["tables"]
    (d / "manifest.json").write_text(json.dumps(man))
    checked(cli("gate", "--baseline", scored, "--candidate", d), d / "manifest.json", "digest")


def test_save_writes_each_table_digest_and_no_temporary(scored):
    man = json.loads((scored / "manifest.json").read_text())
    assert set(man["tables"]) == {f"{t}.parquet" for t in ("scores", "ledger", "runs", "diagnostics",
                                                          "participation", "unconfirmed", "unscored")}
    for name, digest in man["tables"].items():
        assert digest == "sha256:" + hashlib.sha256((scored / name).read_bytes()).hexdigest()
    assert not [p for p in scored.iterdir() if p.name.startswith(".")]


# =========================================================================== integrity on load: scale datasets


@pytest.fixture(scope="module")
def store(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    s = tmp_path_factory.mktemp("store") / "traces"
    s.mkdir()
    lines = (demo / "traces.jsonl").read_text().splitlines(keepends=True)
    (s / "p0.jsonl").write_text("".join(lines[:30]))
    (s / "p1.jsonl").write_text("".join(lines[30:]))
    return s


@pytest.fixture(scope="module")
def dataset(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dataset") / "scored"
    r = cli("scale", "score", store, "--out", out, "--engine", "pandas")
    assert r.returncode == 0, r.stderr
    return out


def test_scale_dataset_half_written_by_a_failed_score_is_refused(store, tmp_path):
    out = tmp_path / "scored"
    r = cli("scale", "score", store, "--out", out, "--engine", "pandas", "--by", "no_such_column")
    assert r.returncode == 65 and "Traceback" not in r.stderr
    assert (out / "scores" / "p0.parquet").is_file()  # the first partition was written, then it failed
    for engine in ("pandas", "duckdb"):
        checked(cli("scale", "summarize", out, "--engine", engine), out, "complete")


def test_scale_completion_record_lists_every_partition_with_its_digest(dataset):
    doc = json.loads((dataset / "_complete.json").read_text())
    assert doc["format"] == "evaltk.scale.complete/1" and [p["key"] for p in doc["partitions"]] == ["p0", "p1"]
    for part in doc["partitions"]:
        assert set(part["files"]) == {*(f"{t}/{part['key']}.parquet" for t in ("scores", "runs", "ledger")),
                                      f"summaries/{part['key']}.json"}  # the report's mergeable summaries
        for rel, digest in part["files"].items():
            assert digest == "sha256:" + hashlib.sha256((dataset / rel).read_bytes()).hexdigest()
    assert doc["manifest"] == "sha256:" + hashlib.sha256((dataset / "manifest.json").read_bytes()).hexdigest()
    r = cli("scale", "summarize", dataset, "--engine", "pandas", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["n_runs"] == 59


def _redigest(out: Path, rel: str) -> None:
    doc = json.loads((out / "_complete.json").read_text())
    for part in doc["partitions"]:
        if rel in part["files"]:
            part["files"][rel] = "sha256:" + hashlib.sha256((out / rel).read_bytes()).hexdigest()
    (out / "_complete.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("case", ["file-removed", "manifest-deleted", "scores-1.5", "scores-1.5-redigested",
                                  "duplicated-redigested", "extra-file", "marker-deleted"])
def test_scale_summarize_refuses_an_edited_dataset(dataset, tmp_path, case):
    out = tmp_path / "scored"
    shutil.copytree(dataset, out)
    p0 = out / "scores" / "p0.parquet"
    f = pd.read_parquet(p0)
    if case == "file-removed":
        (out / "runs" / "p1.parquet").unlink()
        file, check = out / "runs" / "p1.parquet", "digest"
    elif case == "manifest-deleted":
        (out / "manifest.json").unlink()
        file, check = out / "manifest.json", "digest"
    elif case.startswith("scores-1.5"):
        _to_1_5(f).to_parquet(p0, index=False)
        file, check = p0, "digest"
        if case.endswith("redigested"):
            _redigest(out, "scores/p0.parquet")
            check = "range"
    elif case == "duplicated-redigested":
        _duplicate_x_task(f).to_parquet(p0, index=False)
        _redigest(out, "scores/p0.parquet")
        file, check = p0, "duplicate"
    elif case == "extra-file":
        shutil.copy(p0, out / "scores" / "p9.parquet")
        file, check = out / "scores" / "p9.parquet", "complete"
    else:
        (out / "_complete.json").unlink()
        file, check = out, "complete"
    checked(cli("scale", "summarize", out, "--engine", "pandas"), file, check)


# =========================================================================== the holdout ledger


def test_holdout_ledger_is_never_followed_through_a_symlink(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURE_SUITE, suite, symlinks=True)
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    ledger = suite / "holdout-ledger.jsonl"
    ledger.unlink(missing_ok=True)
    ledger.symlink_to(outside)
    task = suite / "fixtures" / "adversarial" / "reflexive-deletion" / "task.yaml"
    before = task.read_bytes()
    for args in (["seen", "reflexive-deletion", "--by", "erin"], ["retire", "reflexive-deletion", "--reason", "x"]):
        r = cli("fixtures", *args, "--root", suite)
        assert r.returncode == 65 and "Traceback" not in r.stderr, r.stderr
        assert str(ledger) in r.stderr and "symbolic link" in r.stderr
    assert outside.read_text() == "" and ledger.is_symlink() and task.read_bytes() == before
    r = cli("fixtures", "validate", suite)
    assert r.returncode == 1 and "symbolic link" in r.stdout + r.stderr


def test_holdout_ledger_is_rewritten_whole_inside_the_suite(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURE_SUITE, suite, symlinks=True)
    ledger = suite / "holdout-ledger.jsonl"
    old = ledger.read_text() if ledger.exists() else ""
    assert cli("fixtures", "seen", "reflexive-deletion", "--by", "erin", "--root", suite).returncode == 0
    new = ledger.read_text()
    assert new.startswith(old) and json.loads(new.splitlines()[-1])["by"] == "erin"
    assert not [p for p in suite.iterdir() if p.name.startswith(".")]


# =========================================================================== CSV formulas


def test_ledger_csv_cells_are_never_live_formulas(demo, tmp_path):
    recs = [json.loads(line) for line in (demo / "traces.jsonl").read_text().splitlines()[:6]]
    hostile = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx"]
    for r, tid in zip(recs, hostile, strict=True):
        r["trace_id"] = tid
    bad = tmp_path / "t.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs) + "{broken\n")
    r = cli("ingest", bad, "--out", tmp_path / "o")
    assert r.returncode in (0, 1), r.stderr
    with open(tmp_path / "o" / "ledger.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {row["trace_id"] for row in rows} >= {"'" + h for h in hostile}
    for row in rows:
        for cell in row.values():
            assert not cell.startswith(_io.FORMULA_PREFIXES) or _io.neutralize_formula(cell) == cell
    assert any(row["record"].isdigit() for row in rows)  # numbers stay numbers


def test_write_csv_keeps_number_columns_numeric(tmp_path):
    frame = pd.DataFrame({"delta": [-0.5, 1.0, -3.0], "n": [-1, 2, 3], "note": ["-x", "=1", "-0.5"]})
    _io.write_csv(frame, tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["delta"].tolist() == [-0.5, 1.0, -3.0] and back["n"].tolist() == [-1, 2, 3]
    assert back["note"].tolist() == ["'-x", "'=1", "-0.5"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.sampled_from("=+-@\t\r a1.,'\""), max_size=6), min_size=1, max_size=8))
def test_no_text_cell_reaches_a_spreadsheet_as_a_formula(tmp_path, cells):
    path = tmp_path / "p.csv"
    _io.write_csv(pd.DataFrame({"c": cells, "n": range(len(cells))}), path)
    with open(path, newline="", encoding="utf-8") as fh:
        back = [row["c"] for row in csv.DictReader(fh)]
    assert back == [_io.neutralize_formula(c) for c in cells]
    for orig, cell in zip(cells, back, strict=True):
        assert cell in (orig, "'" + orig)
        assert not cell.startswith(_io.FORMULA_PREFIXES) or _io._NUMBER.fullmatch(cell)


# =========================================================================== atomic writes


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary(tmp_path):
    p = tmp_path / "t.parquet"
    _io.write_parquet(pd.DataFrame({"a": [1, 2]}), p)
    before = p.read_bytes()
    with pytest.raises((pa.ArrowException, TypeError, ValueError)):
        _io.write_parquet(pd.DataFrame({"a": [1, "x", object()]}), p)  # not one Parquet type
    assert p.read_bytes() == before and listing(tmp_path) == {"t.parquet"}
    with pytest.raises(RuntimeError), _io.atomic_dir(tmp_path / "d") as work:
        (work / "half").write_text("x")
        raise RuntimeError("stopped half-way")
    assert listing(tmp_path) == {"t.parquet"}


def test_check_output_refuses_a_folder_for_a_file_and_a_file_under_a_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    with pytest.raises(OutputRefused, match="is a folder"):
        _io.check_output(tmp_path, [])
    with pytest.raises(OutputRefused, match="is a file, not a folder"):
        _io.check_output(f / "x.json", [])


#: Output choices relative to an input file ``in/run.json`` in a folder ``in/``.
_CHOICES = ["in/run.json", "in", "in/.", "in/../in/run.json", "in/sub/out.json", "alias.json", "out/s.json",
            "out", "in/run.json/x"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_CHOICES), st.sampled_from(_CHOICES),
       st.sampled_from(["suite", "grade", "seal", "ingest"]))
def test_no_output_choice_changes_an_input(tmp_path_factory, out, events, command):
    """Whatever output paths a user names, relative to the inputs, no input file changes:
    the command either refuses (64) or writes elsewhere."""
    base = tmp_path_factory.mktemp("choice")
    (base / "in").mkdir()
    src = {"suite": EXAMPLES / "suite" / "run.json", "grade": EXAMPLES / "trajectory" / "lock.json",
           "seal": EXAMPLES / "trajectory" / "lock.json", "ingest": EXAMPLES / "suite" / "run.json"}[command]
    shutil.copy(src, base / "in" / "run.json")
    shutil.copy(EXAMPLES / "trajectory" / "results-pass.json", base / "in" / "results.json")
    shutil.copy(EXAMPLES / "trajectory" / "design.json", base / "in" / "design.json")  # grade binds it
    (base / "alias.json").symlink_to(base / "in" / "run.json")
    files = [base / "in" / "run.json", base / "in" / "results.json", base / "in" / "design.json"]
    before = digests(*files)
    o, e = str(base / out), str(base / events)
    run = str(base / "in" / "run.json")
    argv = {"suite": ["suite", "summarize", run, "--out", o, "--events", e],
            "grade": ["trajectory", "grade", "--lock", run, "--results", str(base / "in" / "results.json"),
                      "--output", o],
            "seal": ["trajectory", "seal", run, "--output", o],
            "ingest": ["ingest", str(base / "in" / "results.json"), "--answers", run, "--out", o]}[command]
    code = main(argv)
    assert code in (0, 1, 64, 65, 66)
    assert digests(*files) == before


# =========================================================================== nothing outside the output


def _commands(base: Path, demo: Path, scored: Path, dataset: Path, store: Path) -> dict[str, list[object]]:
    traj = base / "in" / "trajectory"
    out = base / "out"
    return {
        "demo": ["demo", out / "demo", "--n-traces", 20],
        "ingest": ["ingest", demo / "traces.jsonl", "--answers", demo / "answers.csv", "--out", out / "ingest"],
        "score": ["score", demo / "traces.jsonl", "--answers", demo / "answers.csv", "--labels", demo / "labels.csv",
                  "--out", out / "score"],
        "gate": ["gate", "--baseline", scored, "--candidate", scored, "--json"],
        "agreement": ["agreement", EXAMPLES / "agreement" / "ratings.csv", "--coefficient", "krippendorff_alpha",
                      "--level", "nominal"],
        "suite-summarize": ["suite", "summarize", base / "in" / "suite" / "run.json", "--out", out / "s.json",
                            "--events", out / "e.jsonl"],
        "suite-check": ["suite", "check", base / "in" / "suite" / "run.json", base / "in" / "suite" / "summary.json"],
        "trajectory-grade": ["trajectory", "grade", "--lock", traj / "lock.json", "--results",
                             traj / "results-hold.json", "--design", traj / "design.json", "--output", out / "r.json"],
        "trajectory-seal": ["trajectory", "seal", traj / "lock.json", "--output", out / "lock.json"],
        "fixtures-validate": ["fixtures", "validate", base / "in" / "fixtures"],
        "fixtures-list": ["fixtures", "list", base / "in" / "fixtures", "--json"],
        "calibration-ceiling": ["calibration", "ceiling", EXAMPLES / "agreement" / "ratings.csv", "--level",
                                "nominal", "--abstain", "cannot_tell"],
        "suite-gate": ["suite", "gate", base / "in" / "suite" / "summary.json"],
        "trajectory-digest": ["trajectory", "digest", traj / "lock.json", "--lock"],
        "scale-score": ["scale", "score", store, "--out", out / "scale", "--engine", "duckdb"],
        "scale-summarize": ["scale", "summarize", dataset, "--engine", "duckdb"],
    }


@pytest.mark.parametrize("name", ["demo", "ingest", "score", "gate", "agreement", "suite-summarize", "suite-check",
                                  "trajectory-grade", "trajectory-seal", "fixtures-validate", "fixtures-list",
                                  "calibration-ceiling", "suite-gate", "trajectory-digest", "scale-score",
                                  "scale-summarize"])
def test_a_command_changes_no_input_and_writes_only_its_output(name, demo, scored, dataset, store, tmp_path):
    """HOME and the working folder stay empty, every input keeps its bytes, and the output
    folder holds no temporary."""
    (tmp_path / "in").mkdir()
    shutil.copytree(EXAMPLES / "trajectory", tmp_path / "in" / "trajectory")
    shutil.copytree(EXAMPLES / "suite", tmp_path / "in" / "suite")
    shutil.copytree(EXAMPLES / "fixtures", tmp_path / "in" / "fixtures")
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir(), cwd.mkdir()
    inputs = [tmp_path / "in", demo, scored, dataset, store, EXAMPLES / "agreement"]
    before = digests(*inputs)
    r = cli(*_commands(tmp_path, demo, scored, dataset, store)[name], cwd=cwd, home=home)
    assert r.returncode in (0, 1, 2, 3), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert digests(*inputs) == before
    assert listing(home) == set() and listing(cwd) == set()
    out = tmp_path / "out"
    if out.exists():
        assert not [p for p in out.rglob("*") if p.name.endswith(_io.TEMP_SUFFIX)]


@pytest.mark.slow
def test_a_report_run_writes_nothing_outside_its_folder(tmp_path):
    """No IPython history, profile or kernel state in HOME; the report folder is assembled
    beside out/<week> and renamed, with no temporary left."""
    home, cwd, out = tmp_path / "home", tmp_path / "cwd", tmp_path / "reports"
    home.mkdir(), cwd.mkdir()
    small = tmp_path / "small.yaml"  # a small demo: what is written where does not depend on its size
    small.write_text("n_traces: 300\nn_resamples: 100\n", encoding="utf-8")
    r = cli("report", "--week", "2026-W48", "--only", "calibration", "--out", out, "--params", small,
            cwd=cwd, home=home)
    assert r.returncode == 0, r.stderr
    assert listing(home) == set() and listing(cwd) == set()
    assert listing(out) >= {"2026-W48", "2026-W48/calibration.html", "2026-W48/run.json"}
    assert not [p for p in out.iterdir() if p.name != "2026-W48"]
    r = cli("report", "--week", "2026-W48", "--only", "calibration", "--out", out, "--params", out / "2026-W48" / "run.json")
    refused(r, out / "2026-W48")


def test_an_atomic_write_gives_ordinary_permissions_and_keeps_an_existing_files_mode(tmp_path):
    # mkstemp creates 0600: an output must be readable as a plain open() would have made it
    import os
    import stat

    from evaltk._io import write_text_atomic

    old = os.umask(0o022)
    try:
        new = tmp_path / "new.txt"
        write_text_atomic(new, "x")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        kept = tmp_path / "kept.txt"
        kept.write_text("a")
        kept.chmod(0o640)
        write_text_atomic(kept, "b")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "b"
    finally:
        os.umask(old)
