"""Every reader against hostile input, through the CLI, in a child interpreter (issue 15).

For each reader, ``tests/hostile_inputs.py`` builds at least 30 hostile inputs (hand-written
cases and seeded mutations) and runs them, one child per reader, through ``evaltk`` with
resource limits set in the child (address space, CPU seconds per case).  Each case asserts:

* a documented exit code for that command, never 70 / a signal, never a traceback;
* a message naming the file when the input is refused (and the word that says why, for a
  case built to hit one rule: ``depth``, ``NaN``, ``duplicate``...);
* for the ingest readers, every input record accounted for in the ledger (a row per
  non-blank data line, whatever happened to it);
* no input changed and nothing written outside the case's output folder (HOME included).

The whole set is ``slow`` (one child for all of it); ``test_fast_subset`` runs a few cases of
every reader unmarked.
Hypothesis properties of the screens themselves are at the end.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile_inputs as H

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "evaltk" / "data" / "examples"
DEMO = ROOT / "data" / "demo"
DRIVER = Path(H.__file__)


@dataclass
class Case:
    id: str
    dir: Path
    argv: list[str]
    inputs: list[Path]  # files whose bytes must not change
    codes: set[int]  # the documented exit codes of this command
    names: tuple[str, ...]  # one of these appears in a refusal message
    word: str | None = None  # and this, when the case was built to hit one rule
    ledger: Callable[[Path], None] | None = None  # checks the ledger when rc == 0
    refused_ok: tuple[int, ...] = (0,)  # codes that are not a refusal
    findings_on_1: bool = False  # exit 1 lists findings on stdout, each naming its file
    outputs: list[Path] = field(default_factory=list)


# --------------------------------------------------------------------------- case builders


def _case_dir(tmp: Path, reader: str, name: str) -> Path:
    d = tmp / reader / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def _clean_traces(n: int = 12) -> list[str]:
    return (DEMO / "traces.jsonl").read_text("utf-8").splitlines()[:n]


def _write_clean_traces(d: Path) -> Path:
    p = d / "traces.jsonl"
    p.write_text("\n".join(_clean_traces()) + "\n", encoding="utf-8")
    return p


def _ledger_rows(out: Path, source: Path) -> pd.DataFrame:
    led = pd.read_csv(out / "ledger.csv", dtype=str, keep_default_na=False)
    return led[led["source"] == str(source)]


def _jsonl_ledger(src: Path, hostile_word: str | None) -> Callable[[Path], None]:
    def check(out: Path) -> None:
        raw = src.read_bytes().split(b"\n")
        lines = [i for i, ln in enumerate(raw, 1) if ln.strip()]
        rows = _ledger_rows(out, src)
        assert sorted(int(r) for r in rows["record"]) == lines, "a record without its own ledger row"
        if hostile_word is not None:
            row = rows[rows["record"] == "2"]
            assert row["status"].tolist() == ["dropped"], row
            assert hostile_word.lower() in row["reason"].iloc[0].lower(), row["reason"].iloc[0]
    return check


def _csv_ledger(src: Path, expected: int | None) -> Callable[[Path], None]:
    def check(out: Path) -> None:
        rows = _ledger_rows(out, src)
        if expected == -1:
            assert len(rows) >= 1
            return
        text = src.read_bytes().decode("utf-8", "surrogateescape")
        data_lines = [ln for ln in text.split("\n")[1:] if ln.strip("\r\ufeff")]
        n = len(data_lines) if expected is None else expected
        assert len(rows) == n, f"{len(rows)} ledger rows for {n} records"
        assert rows["record"].is_unique
    return check


def trace_jsonl_cases(tmp: Path, rng: random.Random) -> list[Case]:
    out = []
    for name, lines, word in H.trace_line_variants(_clean_traces(), rng):
        d = _case_dir(tmp, "traces-jsonl", name)
        p = d / "traces.jsonl"
        p.write_bytes(b"\n".join(lines) + b"\n")
        out.append(Case(f"traces-jsonl/{name}", d, ["ingest", str(p), "--out", str(d / "out")], [p],
                        {0, 65, 66}, (p.name,), None, _jsonl_ledger(p, word)))
    for name, lines, word in (
            ("limit-line-bytes", [ln.encode() for ln in _clean_traces()], "line_bytes"),
            ("limit-depth", [ln.encode() for ln in _clean_traces()], "depth")):
        d = _case_dir(tmp, "traces-jsonl", name)
        p = d / "traces.jsonl"
        p.write_bytes(b"\n".join(lines) + b"\n")
        lim = "line_bytes=1000" if "bytes" in name else "depth=3"
        out.append(Case(f"traces-jsonl/{name}", d, ["--limit", lim, "ingest", str(p), "--out", str(d / "out")],
                        [p], {0}, (p.name,), None, _jsonl_ledger(p, word)))
    d = _case_dir(tmp, "traces-jsonl", "limit-records")
    p = _write_clean_traces(d)
    out.append(Case("traces-jsonl/limit-records", d, ["ingest", str(p), "--limit", "records=5"], [p],
                    {65}, (p.name,), "records"))
    out += _special_cases(tmp, "traces-jsonl", lambda p: ["ingest", str(p)], {65, 66})
    return out


def _special_cases(tmp: Path, reader: str, argv: Callable[[Path], list[str]], codes: set[int],
                   inputs: list[Path] | None = None) -> list[Case]:
    d = _case_dir(tmp, reader, "special")
    return [Case(f"{reader}/{name}", d, argv(p), inputs or [], codes, (p.name,), word)
            for name, p, word in H.special_paths(d)]


def trace_parquet_cases(tmp: Path, rng: random.Random) -> list[Case]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    recs = [json.loads(ln) for ln in _clean_traces()]
    good = pa.Table.from_pylist(recs)
    buf = pa.BufferOutputStream()
    pq.write_table(good, buf)
    good_bytes = buf.getvalue().to_pybytes()
    variants: list[tuple[str, bytes | pa.Table]] = [
        ("zero-bytes", b""), ("garbage", b"PAR1 this is not parquet PAR1"),
        ("truncated", good_bytes[: len(good_bytes) // 2]), ("footer-cut", good_bytes[:-9]),
        ("random-bytes", bytes(rng.randrange(256) for _ in range(2000))),
        ("empty-table", good.slice(0, 0)),
    ]
    values = {"null": None, "int": 7, "nan": float("nan"), "list": ["a"], "object": {"k": 1},
              "empty": "", "escape": "ev\x1b[2Jil"}
    for col in ("trace_id", "task", "status", "steps", "domain"):
        for vname, v in values.items():
            rows = [dict(r) for r in recs]
            rows[1][col] = v
            try:
                variants.append((f"{col}-{vname}", pa.Table.from_pylist(rows)))
            except (pa.ArrowException, TypeError, ValueError):
                variants.append((f"{col}-{vname}", pa.Table.from_pylist(
                    [{**r, col: json.dumps(r.get(col))} for r in rows])))
    rows = [dict(r) for r in recs]
    rows[1]["steps"] = [{**s, "needs_confirmation": float("nan")} for s in rows[1]["steps"]]
    variants.append(("needs-confirmation-nan", pa.Table.from_pylist(rows)))
    out = []
    for name, v in variants:
        d = _case_dir(tmp, "traces-parquet", name)
        p = d / "traces.parquet"
        if isinstance(v, bytes):
            p.write_bytes(v)
        else:
            pq.write_table(v, p)
        n = None if isinstance(v, bytes) else v.num_rows

        def check(o: Path, p: Path = p, n: int | None = n) -> None:
            assert len(_ledger_rows(o, p)) == n
        out.append(Case(f"traces-parquet/{name}", d, ["ingest", str(p), "--out", str(d / "out")], [p],
                        {0, 65, 66}, (p.name,), None, check))
    return out


def _csv_cases(tmp: Path, rng: random.Random, reader: str, flag: str, base: Path,
               cols: dict[str, int | None]) -> list[Case]:
    lines = base.read_text("utf-8").splitlines()[:20]
    out = []
    for name, ls, expected in H.csv_line_variants(lines, rng, **cols):
        d = _case_dir(tmp, reader, name)
        tr = _write_clean_traces(d)
        p = d / f"{reader}.csv"
        p.write_bytes(("\n".join(ls) + "\n").encode("utf-8", "surrogateescape"))
        out.append(Case(f"{reader}/{name}", d, ["ingest", str(tr), flag, str(p), "--out", str(d / "out")],
                        [p, tr], {0, 65, 66}, (p.name,), None, _csv_ledger(p, expected)))
    d = _case_dir(tmp, reader, "special")
    tr = _write_clean_traces(d)
    out += _special_cases(tmp, reader, lambda p: ["ingest", str(tr), flag, str(p)], {65, 66}, [tr])
    return out


def answers_csv_cases(tmp: Path, rng: random.Random) -> list[Case]:
    return _csv_cases(tmp, rng, "answers", "--answers", DEMO / "answers.csv", {})


def labels_csv_cases(tmp: Path, rng: random.Random) -> list[Case]:
    return _csv_cases(tmp, rng, "labels", "--labels", DEMO / "labels.csv", {})


def agreement_cases(tmp: Path, rng: random.Random) -> list[Case]:
    lines = (EX / "agreement" / "ratings.csv").read_text("utf-8").splitlines()[:40]
    out = []
    cols = {"id_col": 0, "text_col": 1, "answer_col": 2, "number_col": None, "step_col": None}
    for name, ls, _ in H.csv_line_variants(lines, rng, **cols):
        d = _case_dir(tmp, "agreement", name)
        p = d / "ratings.csv"
        p.write_bytes(("\n".join(ls) + "\n").encode("utf-8", "surrogateescape"))
        out.append(Case(f"agreement/{name}", d, ["agreement", str(p), "--coefficient", "fleiss_kappa",
                                                 "--json"], [p], {0, 65, 66}, (p.name,)))
    d = _case_dir(tmp, "agreement", "many-categories")
    p = d / "ratings.csv"
    p.write_text("item_id,rater,rating\n" + "".join(f"i{i},r{j},L{i}-{j}\n" for i in range(3000)
                                                    for j in range(2)), encoding="utf-8")
    out.append(Case("agreement/many-categories", d, ["agreement", str(p), "--coefficient", "fleiss_kappa"],
                    [p], {65}, (p.name,), "categories"))
    out += _special_cases(tmp, "agreement", lambda p: ["agreement", str(p)], {65, 66})
    return out


def _document_cases(tmp: Path, reader: str, base_text: str, suffix: str,
                    argv: Callable[[Path, Path], list[str]], codes: set[int], *,
                    yaml: bool = False, extra_inputs: Callable[[Path], list[Path]] = lambda d: [],
                    names: tuple[str, ...] = (), special_word: bool = True) -> list[Case]:
    variants = list(H.json_document_variants(base_text))
    if yaml:
        variants += list(H.yaml_only_variants(base_text))
    out = []
    for name, data, word in variants:
        if yaml and name == "overflow-number":
            word = None  # YAML 1.1 reads 1e999 (no dot) as text, which the schema then refuses
        d = _case_dir(tmp, reader, name)
        p = d / f"input{suffix}"
        p.write_bytes(data)
        out.append(Case(f"{reader}/{name}", d, argv(p, d), [p, *extra_inputs(d)], codes,
                        (p.name, *names), word))
    d = _case_dir(tmp, reader, "special")
    out += [Case(f"{reader}/{name}", d, argv(p, d), extra_inputs(d), codes, (p.name, *names),
                 None if special_word is False else word)
            for name, p, word in H.special_paths(d)]
    return out


def suite_run_cases(tmp: Path, rng: random.Random) -> list[Case]:
    text = (EX / "suite" / "run.json").read_text("utf-8")
    cases = _document_cases(tmp, "suite-run-json", text, ".json",
                            lambda p, d: ["suite", "summarize", str(p), "--json"], {0, 65, 66})
    cases += _document_cases(tmp, "suite-run-yaml", text, ".yaml",
                             lambda p, d: ["suite", "summarize", str(p), "--json"], {0, 65, 66}, yaml=True)
    return cases


def suite_check_cases(tmp: Path, rng: random.Random) -> list[Case]:
    """The summary a host wrote and its eval.scored events (JSON Lines), read by `suite check`."""
    run, summary = EX / "suite" / "run.json", EX / "suite" / "summary.json"
    events = (EX / "suite" / "events.jsonl").read_text("utf-8").splitlines()
    cases = _document_cases(tmp, "suite-summary", summary.read_text("utf-8"), ".json",
                            lambda p, d: ["suite", "check", str(run), str(p), "--json"], {0, 1, 65, 66})

    def with_events(p: Path, d: Path) -> list[str]:
        return ["suite", "check", str(run), str(summary), "--events", str(p), "--json"]

    ev = _document_cases(tmp, "suite-events", events[0], ".jsonl", with_events, {0, 1, 65, 66})
    for c in ev:  # the hostile line first, the host's other events after it
        p = c.dir / "input.jsonl"
        if p.is_file() and not p.is_symlink() and c.id != "suite-events/special":
            p.write_bytes(p.read_bytes() + b"\n" + "\n".join(events[1:]).encode() + b"\n")
    for c in cases + ev:
        c.refused_ok = (0, 1)  # 1: violations, a decision on readable input
    return cases + ev


def _traj(name: str) -> str:
    return (EX / "trajectory" / name).read_text("utf-8")


TRAJECTORY_CODES = {0, 2, 10, 11, 12, 13, 14, 65, 66}


def trajectory_cases(tmp: Path, rng: random.Random) -> list[Case]:
    def copies(d: Path) -> list[Path]:
        out = []
        for n in ("lock.json", "results-hold.json", "design.json"):
            p = d / n
            if not p.exists():
                p.write_text(_traj(n), encoding="utf-8")
            out.append(p)
        return out

    def grade(role: str) -> Callable[[Path, Path], list[str]]:
        def argv(p: Path, d: Path) -> list[str]:
            lock, res, des = copies(d)
            files = {"lock": lock, "results": res, "design": des, role: p}
            return ["trajectory", "grade", "--lock", str(files["lock"]), "--results", str(files["results"]),
                    "--design", str(files["design"]), "--output", str(d / "out" / "report.json"), "--json"]
        return argv

    cases = _document_cases(tmp, "trajectory-lock", _traj("lock.json"), ".json",
                            lambda p, d: ["trajectory", "digest", str(p), "--lock", "--json"], {0, 10, 65, 66})
    cases += _document_cases(tmp, "trajectory-results", _traj("results-hold.json"), ".json", grade("results"),
                             TRAJECTORY_CODES, extra_inputs=copies)
    cases += _document_cases(tmp, "trajectory-design", _traj("design.json"), ".json", grade("design"),
                             TRAJECTORY_CODES, extra_inputs=copies)
    for c in cases:
        c.refused_ok = (0, 2)  # 2: an honest hold, a decision on valid data
    return cases


def alt_test_cases(tmp: Path, rng: random.Random) -> list[Case]:
    judges = EX / "alttest" / "llm_annotations.json"
    cases = _document_cases(
        tmp, "alt-test", (EX / "alttest" / "human_annotations.json").read_text("utf-8"), ".json",
        lambda p, d: ["calibration", "alt-test", str(p), str(judges), "--judge", "judge-a", "--metric",
                      "accuracy", "--min-items", "10", "--json"], {0, 1, 65, 66})
    for c in cases:
        c.refused_ok = (0, 1)  # 1: the judge does not pass, a decision on valid data
    return cases


def report_params_cases(tmp: Path, rng: random.Random) -> list[Case]:
    base = json.dumps({"not_a_parameter": 1, "weekly": {"also_not_one": [1, 2], "x": "y"}})
    return _document_cases(
        tmp, "report-params", base, ".yaml",
        lambda p, d: ["report", "--params", str(p), "--only", "weekly", "--data", str(d / "no-data"),
                      "--out", str(d / "out")], {65, 66}, yaml=True, names=("data_dir",))


@pytest.fixture(scope="module")
def score_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from evaltk.cli import main

    base = tmp_path_factory.mktemp("scored")
    tr = base / "traces.jsonl"
    tr.write_text("\n".join(_clean_traces(40)) + "\n", encoding="utf-8")
    with open(os.devnull, "w") as null, _redirect(null):
        assert main(["score", str(tr), "--out", str(base / "v1")]) == 0
    return base / "v1"


class _redirect:
    def __init__(self, f: object) -> None:
        self.f = f

    def __enter__(self) -> None:
        self.old = sys.stdout
        sys.stdout = self.f  # type: ignore[assignment]

    def __exit__(self, *a: object) -> None:
        sys.stdout = self.old


def gate_manifest_cases(tmp: Path, rng: random.Random, v1: Path) -> list[Case]:
    text = (v1 / "manifest.json").read_text("utf-8")
    doc = json.loads(text)
    measure = next(iter(doc["measures"]))

    def argv(p: Path, d: Path) -> list[str]:
        cand = d / "candidate"
        if not cand.exists():
            shutil.copytree(v1, cand)
        if p.exists() or p.is_symlink():
            (cand / "manifest.json").unlink()
            if p.is_symlink() or not p.is_file():
                (cand / "manifest.json").symlink_to(p)
            else:
                shutil.copyfile(p, cand / "manifest.json")
        return ["gate", "--baseline", str(v1), "--candidate", str(cand), "--json"]

    # a manifest that is not a regular file: the folder is "not a saved score matrix" (named)
    cases = _document_cases(tmp, "gate-manifest", text, ".json", argv, {0, 1, 3, 65, 66, 67},
                            names=("manifest.json", "candidate"), special_word=False)
    for c in cases:
        c.refused_ok = (0, 1, 3)  # promote, regress, review: decisions
    for name, value in (("measure-not-object", "x"), ("calibration-list", {"calibration": [1]}),
                        ("calibration-string", {"calibration": "yes"}), ("measures-list", None)):
        d = _case_dir(tmp, "gate-manifest", name)
        bad = json.loads(text)
        if value is None:
            bad["measures"] = [1, 2]
        elif isinstance(value, dict):
            bad["measures"][measure].update(value)
        else:
            bad["measures"][measure] = value
        p = d / "input.json"
        p.write_text(json.dumps(bad), encoding="utf-8")
        cases.append(Case(f"gate-manifest/{name}", d, argv(p, d), [p], {65}, ("manifest.json",), "measures"))
    return cases


def fixtures_cases(tmp: Path, rng: random.Random) -> list[Case]:
    """task.yaml and the holdout ledger, read by `fixtures validate`."""
    src = EX / "fixtures"
    task = next(src.rglob("task.yaml"))
    rel = task.relative_to(src)

    def suite_with(p: Path, d: Path, target: Path) -> list[str]:
        root = d / "suite"
        if not root.exists():
            shutil.copytree(src, root)
        dest = root / target
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        if p.is_file() and not p.is_symlink():
            shutil.copyfile(p, dest)
        elif p.exists() or p.is_symlink():
            dest.symlink_to(p)
        return ["fixtures", "validate", str(root), "--json"]

    def task_argv(p: Path, d: Path) -> list[str]:
        return suite_with(p, d, rel)

    def ledger_argv(p: Path, d: Path) -> list[str]:
        return suite_with(p, d, Path("holdout-ledger.jsonl"))

    # a task.yaml that is not a regular file: its folder "has no task.yaml" (named)
    cases = _document_cases(tmp, "fixtures-task", json.dumps(_yaml_doc(task)), ".yaml", task_argv,
                            {0, 1, 65, 66}, yaml=True, names=(rel.parent.name, "task.yaml"),
                            special_word=False)
    ledger_line = (src / "holdout-ledger.jsonl").read_text("utf-8").splitlines()[0]
    cases += _document_cases(tmp, "fixtures-ledger", ledger_line, ".jsonl", ledger_argv,
                             {0, 1, 65, 66}, names=("holdout-ledger",))
    for c in cases:
        c.refused_ok = (0, 1)  # 1: findings, printed on stdout with the file named
        c.findings_on_1 = True
    return cases


def _yaml_doc(p: Path) -> object:
    import yaml

    return json.loads(json.dumps(yaml.safe_load(p.read_text("utf-8")), default=str))


READERS: dict[str, Callable[..., list[Case]]] = {
    "traces-jsonl": trace_jsonl_cases, "traces-parquet": trace_parquet_cases,
    "answers-csv": answers_csv_cases, "labels-csv": labels_csv_cases, "agreement": agreement_cases,
    "suite-run": suite_run_cases, "suite-check": suite_check_cases, "trajectory": trajectory_cases, "alt-test": alt_test_cases,
    "report-params": report_params_cases, "fixtures": fixtures_cases,
}


# --------------------------------------------------------------------------- running and checking


def _tree(root: Path, skip: set[Path]) -> dict[str, str]:
    """Path -> digest of every regular file under ``root`` outside the ``skip`` folders."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dp = Path(dirpath)
        dirnames[:] = [n for n in dirnames if dp / n not in skip and n != "out" and n != "candidate"
                       and not (dp / n).is_symlink()]
        for n in filenames:
            p = dp / n
            if p.is_file() and not p.is_symlink():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
    return out


def _run(cases: list[Case], tmp: Path) -> list[str]:
    """Run ``cases`` in one child; return every failed expectation (empty: all held)."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    plan = tmp / "plan.json"
    results = tmp / "results.jsonl"
    plan.write_text(json.dumps([{"id": c.id, "argv": c.argv, "cwd": str(c.dir)} for c in cases]))
    runs = tmp / "runs"
    skip = {runs}
    before = _tree(tmp, skip)
    digests = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for c in cases for p in c.inputs
               if p.is_file()}
    # HOME is the case tree's own (empty) folder: whatever a library would cache there
    # (matplotlib's font list) must not appear (the CLI gives it a private folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"}
    for k in ("EVALTK_LIMITS", "MPLCONFIGDIR", "XDG_CACHE_HOME", "IPYTHONDIR"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, str(DRIVER), str(plan), str(results)], env=env,
                          capture_output=True, text=True, timeout=max(300, 2 * len(cases)))  # a hang guard
    lines = [json.loads(ln) for ln in results.read_text("utf-8").splitlines()] if results.exists() else []
    (tmp / "last-results.jsonl").unlink(missing_ok=True)
    shutil.copyfile(results, Path(os.environ.get("EVALTK_FUZZ_LOG", os.devnull))) if results.exists() else None
    got = {r["id"]: r for r in lines if "id" in r}
    problems: list[str] = []
    started = [r["start"] for r in lines if "start" in r]
    if proc.returncode != 0:
        last = started[-1] if started else "(none)"
        problems.append(f"the child died (exit {proc.returncode}) in case {last}: {proc.stderr[-2000:]}")
    by_id = {c.id: c for c in cases}
    for cid, r in got.items():
        c = by_id[cid]
        rc, err, outp = r["rc"], r["stderr"], r["stdout"]
        where = f"{cid} (exit {rc})"
        if not isinstance(rc, int) or rc not in c.codes:
            problems.append(f"{where}: not a documented exit code {sorted(c.codes)}: {err[-600:]}")
            continue
        if "Traceback" in err or "Traceback" in outp:
            problems.append(f"{where}: traceback: {err[-600:]}")
        if rc not in c.refused_ok and not any(n in err for n in c.names):
            problems.append(f"{where}: the message names none of {c.names}: {err[-400:]}")
        if c.word is not None and rc not in c.refused_ok and c.word.lower() not in err.lower():
            problems.append(f"{where}: the message does not say {c.word!r}: {err[-400:]}")
        if rc == 1 and c.findings_on_1 and not any(n in outp for n in c.names):
            problems.append(f"{where}: the findings name none of {c.names}: {outp[-400:]}")
        if "\x1b" in err or "\x1b" in outp:
            problems.append(f"{where}: a raw escape character reached the terminal")
        if rc == 0 and c.ledger is not None:
            try:
                c.ledger(c.dir / "out")
            except AssertionError as e:
                problems.append(f"{where}: ledger: {e}")
    missing = [c.id for c in cases if c.id not in got]
    if missing and proc.returncode == 0:
        problems.append(f"cases without a result: {missing}")
    for p, dg in digests.items():
        if hashlib.sha256(Path(p).read_bytes()).hexdigest() != dg:
            problems.append(f"input changed: {p}")
    after = _tree(tmp, skip)
    new = sorted(set(after) - set(before) - {str(results)})
    changed = sorted(k for k in set(after) & set(before) if after[k] != before[k] and k != str(results))
    if new or changed:
        problems.append(f"written outside the output folders: {(new + changed)[:10]}")
    if any(home.iterdir()):
        problems.append(f"written to HOME: {sorted(p.name for p in home.iterdir())}")
    return problems


def _cases(reader: str, tmp: Path, score_dirs: Path) -> list[Case]:
    rng = random.Random(f"evaltk-{reader}")
    if reader == "gate-manifest":
        return gate_manifest_cases(tmp, rng, score_dirs)
    return READERS[reader](tmp, rng)


ALL_READERS = [*READERS, "gate-manifest"]


@pytest.mark.slow
def test_every_hostile_input(tmp_path, score_dirs):
    """About 720 cases, every reader, in one child (one interpreter start, not one per reader)."""
    cases = [c for r in ALL_READERS for c in _cases(r, tmp_path, score_dirs)]
    per_file: dict[str, int] = {}
    for c in cases:
        per_file[c.id.split("/")[0]] = per_file.get(c.id.split("/")[0], 0) + 1
    assert len(per_file) >= 14 and all(n >= 30 for n in per_file.values()), per_file
    problems = _run(cases, tmp_path)
    assert not problems, "\n".join(problems)


#: The cases every reader runs in the fast suite (the rest are `slow`).
FAST = ("deep-20000", "deep-arrays-5000", "nan-value", "duplicate-key", "fifo", "dev-zero",
        "unterminated-quote", "nan-needs-confirmation", "yaml-duplicate-key", "yaml-deep-flow",
        "zero-bytes", "garbage", "answer-NA", "escape-codes-id", "measure-not-object",
        "calibration-list", "many-categories")


def test_fast_subset(tmp_path, score_dirs, request):
    if any(getattr(i, "originalname", "") == "test_every_hostile_input" for i in request.session.items):
        pytest.skip("test_every_hostile_input runs every case, these included, in this session")
    cases = [c for r in ALL_READERS for c in _cases(r, tmp_path, score_dirs)
             if c.id.split("/")[-1] in FAST]
    readers = {c.id.split("/")[0] for c in cases}
    assert len(readers) >= 12 and len(cases) >= 40, (sorted(readers), len(cases))
    problems = _run(cases, tmp_path)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- properties of the screens

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from('[]{}"\\N'), max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.text(alphabet=st.sampled_from('ab[]{}"\\NI'), max_size=4), kids, max_size=4),
    max_leaves=40)


def _depth(v: object) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_screen_measures_the_depth_of_any_json(v):
    from evaltk import _io

    text = json.dumps(v)
    assert _io.json_depth(text) == _depth(v)
    assert not _io.json_line_screen(text.encode()).any()  # strict JSON, shallow: never held back
    with _io.limits(depth=max(1, _depth(v))):
        assert not _io.json_line_screen(text.encode()).any()
    if _depth(v) >= 2:
        with _io.limits(depth=_depth(v) - 1):
            assert _io.json_line_screen(text.encode()).all() or _depth(v) - 1 >= _io.NATIVE_DEPTH


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from(["NaN", "Infinity", "-Infinity"]))
def test_screen_holds_back_a_bare_nan_wherever_it_is(v, token):
    from evaltk import _io

    text = json.dumps([v, float("nan")]).replace("NaN", token)
    held = _io.json_line_screen((json.dumps(v) + "\n" + text + "\n").encode())
    assert held.tolist() == [False, True, False]


cells = st.text(alphabet=st.sampled_from('ab ,"\r\n;x'), max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(cells, min_size=3, max_size=3), min_size=1, max_size=8), st.data())
def test_csv_records_round_trip_and_one_bad_quote_spoils_one_record(rows, data):
    from evaltk import _io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)  # quotes a cell holding \r or \n
    got = [r for _, r in _io.csv_records(buf.getvalue(), n_fields=3)]
    assert got == rows
    # one-line records only: an unterminated quote on one line leaves every other line its record
    simple = [[c.replace('"', "").replace("\n", "").replace("\r", "").replace(",", "") or "v" for c in r]
              for r in rows]
    k = data.draw(st.integers(0, len(simple) - 1))
    lines = [",".join(r) for r in simple]
    lines[k] = '"' + lines[k]
    recs = list(_io.csv_records("\n".join(lines) + "\n", n_fields=3))
    assert [ln for ln, _ in recs] == list(range(1, len(lines) + 1))
    assert [r for i, (_, r) in enumerate(recs) if i != k] == [r for i, r in enumerate(simple) if i != k]
    assert isinstance(recs[k][1], str) or len(simple) == 1


def test_fast_and_slow_paths_keep_or_drop_each_record_alike(tmp_path):
    """A record's fate does not depend on its neighbours: read in a file with every hostile
    line (so chunks take the per-record path) and read alone (the Arrow path when clean)."""
    from evaltk.ingest import read_traces

    rng = random.Random(7)
    lines = []
    tid = json.loads(_clean_traces()[1])["trace_id"].encode()
    for k, (_, ls, _) in enumerate(H.trace_line_variants(_clean_traces(), rng)):
        lines.append(ls[1].replace(tid, tid + b"-v%d" % k))  # one id per line: no duplicates
    lines += [ln.encode() for ln in _clean_traces(40)[12:]]
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(b"\n".join(lines) + b"\n")
    led = read_traces(whole).ledger
    lines = whole.read_bytes().split(b"\n")  # physical lines (a random line may hold a newline)
    ids = [json.loads(ln).get("trace_id") if _parses(ln) else None for ln in lines]
    for k, ln in enumerate(lines, 1):
        if ids[k - 1] is None or ids.count(ids[k - 1]) > 1 or not ln.strip():
            continue
        one = tmp_path / f"one-{k}.jsonl"
        one.write_bytes(ln + b"\n")
        alone = read_traces(one).ledger
        row = led[led["record"] == k]
        assert row["status"].tolist() == alone["status"].tolist(), (k, row["reason"].tolist(),
                                                                   alone["reason"].tolist())
        assert row["reason"].astype(object).fillna("").tolist() == alone["reason"].astype(object).fillna("").tolist(), k


def _parses(ln: bytes) -> bool:
    try:
        v = json.loads(ln)
    except (ValueError, RecursionError):
        return False
    return isinstance(v, dict) and isinstance(v.get("trace_id"), str)
