"""Every report notebook executed by papermill on small parameters, rendered to HTML.

One module-scoped run of :func:`evaltk.report.render_report` executes all five notebooks
on a small generated demo corpus; the tests then read what it wrote.  A second, smaller
run checks the real-data headlines (skipped without ../shared/data).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from evaltk import report
from evaltk.cli._main import main
from evaltk.report import _render

pytestmark = pytest.mark.slow  # every test executes notebooks with papermill

WEEK = "2026-W48"
SMALL = {"n_traces": 300, "n_resamples": 200}
PAGES = {"weekly": "index.html", **{n: f"{n}.html" for n in report.NOTEBOOKS if n != "weekly"}}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    lines: list[str] = []
    index = report.render_report(week=WEEK, params=SMALL, out=out, progress=lines.append)
    return out / WEEK, index, lines


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", " ", html, flags=re.S))


# --------------------------------------------------------------------------- the stored notebooks


MAX_CODE_LINES = 60  # "about 60" (issue #13): a notebook calls evaltk and displays; logic lives in evaltk.report


def _domain_words() -> set[str]:
    """Measure names and answer words: a literal holding one is a domain table."""
    from evaltk import scoring
    from evaltk.values import ANSWER_VOCABULARIES

    return set(scoring.MEASURES) | {w for v in ANSWER_VOCABULARIES.values() for w in v}


def _code_cells(name: str) -> tuple[str, list[str]]:
    import jupytext

    nb = jupytext.reads((report.notebooks_dir() / f"{name}.py").read_text(encoding="utf-8"), fmt="py:percent")
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = [c.source for c in code if "parameters" in c.metadata.get("tags", [])]
    return params[0], [c.source for c in code if "parameters" not in c.metadata.get("tags", [])]


def _limit_violations(params: str, cells: list[str], domain: set[str]) -> list[str]:
    """What breaks "notebooks only call and display": too many code lines, a ``def``,
    an ``isinstance``, a dict / list / tuple / set literal of domain words outside the
    parameters cell."""
    out = []
    lines = [ln for src in [params, *cells] for ln in src.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) > MAX_CODE_LINES:
        out.append(f"{len(lines)} code lines (at most {MAX_CODE_LINES})")
    for src in cells:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
                out.append(f"line {node.lineno}: defines a function or class")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
                out.append(f"line {node.lineno}: isinstance on a result")
            if isinstance(node, ast.Dict | ast.List | ast.Tuple | ast.Set):
                elts = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
                found = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in domain}
                if found:
                    out.append(f"line {node.lineno}: a literal of domain words {sorted(found)}")
    return out


@pytest.mark.parametrize("name", report.NOTEBOOKS)
def test_notebook_only_calls_and_displays(name):
    params, cells = _code_cells(name)
    assert _limit_violations(params, cells, _domain_words()) == []


def test_notebook_limits_catch_logic():
    """The limit check fails on what the notebooks held before issue #13."""
    domain = _domain_words()
    assert _limit_violations("x = 1\n", ["y = 2\n"], domain) == []
    bad = _limit_violations("x = 1\n", [
        'LEVELS = {"x_task": ("nominal", ["no", "yes"])}\n',
        "def item_ids(frame):\n    return frame\n",
        "ok = isinstance(r, float)\n",
        'cats = {"lots": 0.0, "a_few": 0.5, "none": 1.0} if m == "x_eff" else None\n',
    ], domain)
    assert any("domain words ['x_task']" in b for b in bad) and any("domain words ['no', 'yes']" in b for b in bad)
    assert any("defines a function" in b for b in bad) and any("isinstance" in b for b in bad)
    assert any("'a_few', 'lots', 'none'" in b for b in bad)
    assert _limit_violations("\n".join(f"p{i} = {i}" for i in range(MAX_CODE_LINES + 1)), [], domain)




@pytest.mark.parametrize("name", report.NOTEBOOKS)
def test_notebook_has_one_parameters_cell_of_literals(name):
    import jupytext
    import papermill as pm

    path = report.notebooks_dir() / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    assert "format_name: percent" in text  # stored as jupytext py:percent
    nb = jupytext.reads(text, fmt="py:percent")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assigned = []
    for stmt in ast.parse(tagged[0].source).body:
        assert isinstance(stmt, ast.Assign) and len(stmt.targets) == 1, ast.dump(stmt)
        ast.literal_eval(stmt.value)  # a literal, nothing computed
        assigned.append(stmt.targets[0].id)
    # papermill must see every parameter (it silently skips a line it cannot parse)
    ipynb = path.with_suffix(".ipynb")
    try:
        nbformat.write(nb, ipynb)
        declared = pm.inspect_notebook(str(ipynb))
    finally:
        ipynb.unlink(missing_ok=True)
    assert sorted(declared) == sorted(assigned)
    assert "week" in assigned


# --------------------------------------------------------------------------- the rendered report


def test_render_report_writes_every_page(rendered):
    folder, index, lines = rendered
    assert index == folder / "index.html"
    for page in PAGES.values():
        assert (folder / page).is_file(), page
    assert any("weekly: ok" in ln for ln in lines)  # progress reported
    assert len([ln for ln in lines if ": executing" in ln]) == len(report.NOTEBOOKS)


def test_detail_pages_show_this_weeks_runs_against_the_humans(rendered):
    """The calibration and direction-of-error pages' section on this week's runs, in memory (the
    demo corpus scored); from a scored dataset in the test below."""
    from evaltk.data import make_demo

    folder, _, _ = rendered
    wk = report.weekly_scores(report.data_sources(""), make_demo(n_traces=SMALL["n_traces"], rng=0))
    for page, shown in (("calibration", r"x_task -?[01]\.\d{3} (\[-?[01]\.\d{3}, -?[01]\.\d{3}\]|\(no interval: )"
                                        r".* \d+ abstained"),
                        ("direction_of_error", r"automatic tier x_task (no detectable lean|overstates|understates)")):
        text = re.sub(r"\s+", " ", _text((folder / PAGES[page]).read_text(encoding="utf-8")))
        assert f"Source: {wk.origin}." in text, (page, wk.origin)
        assert re.search(shown, text), (page, text[:4000])


@pytest.mark.parametrize("name", report.NOTEBOOKS)
def test_page_has_svg_charts_no_code_no_errors(rendered, name):
    folder, _, _ = rendered
    html = (folder / PAGES[name]).read_text(encoding="utf-8")
    assert html.count("<svg") >= 1
    assert "<script" not in html  # readable offline, no CDN
    body = html[html.index("<main>"):]
    assert "application/vnd.jupyter.stderr" not in body  # no error or warning output rendered
    assert "Traceback" not in _text(body)
    assert "report.use_theme()" not in html  # code cells excluded
    executed = nbformat.read(folder / "notebooks" / f"{name}.ipynb", as_version=4)
    for cell in executed.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            assert not (o["output_type"] == "stream" and o.get("name") == "stderr"), o.get("text")


def test_weekly_index_links_the_other_pages(rendered):
    folder, _, _ = rendered
    html = (folder / "index.html").read_text(encoding="utf-8")
    for name, page in PAGES.items():
        if name != "weekly":
            assert f'href="{page}"' in html
    text = _text(html)
    assert "DID NOT PASS" in text  # the shipped suite example fails its gate under RFC 0246
    assert "rejected by the canary set" in text
    assert "Checkpoint gate" in text and "agent-v3 against agent-v2" in text
    assert "Long-horizon trajectories" in text and "HOLD" in text  # the shipped cohort holds
    assert html.count("<svg") >= 4  # coverage, gate, trajectory grid, frontier


def test_run_json_records_parameters_version_and_digests(rendered):
    folder, _, _ = rendered
    run = json.loads((folder / "run.json").read_text())
    from evaltk import __version__

    assert run["week"] == WEEK and run["evaltk_version"] == __version__
    for name in report.NOTEBOOKS:
        rec = run["notebooks"][name]
        assert rec["status"] == "ok" and rec["error"] is None
        assert rec["parameters"]["week"] == WEEK
        (prov,) = rec["provenance"]
        assert prov["evaltk_version"] == __version__
        assert prov["parameters"]["week"] == WEEK
        if "n_traces" in prov["parameters"]:
            assert prov["parameters"]["n_traces"] == SMALL["n_traces"]
    suite_inputs = run["notebooks"]["suite_gating"]["provenance"][0]["inputs"]
    assert suite_inputs and re.fullmatch(r"[0-9a-f]{64}", suite_inputs[0]["sha256"])
    assert suite_inputs[0]["sha256"] == report.file_digest(suite_inputs[0]["path"])
    # the digest is also on the page a reader sees
    assert suite_inputs[0]["sha256"] in (folder / "suite_gating.html").read_text()


# --------------------------------------------------------------------------- failures


def test_bad_parameter_fails_with_a_clear_message(tmp_path):
    import jupytext
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    nb = jupytext.read(report.notebooks_dir() / "suite_gating.py", fmt="py:percent")
    src = tmp_path / "suite_gating.ipynb"
    nbformat.write(nb, src)
    with _render._report_kernel() as kernel, pytest.raises(PapermillExecutionError) as e:
        pm.execute_notebook(str(src), str(tmp_path / "out.ipynb"), parameters={"week": "2026-W99"},
                            kernel_name=kernel, progress_bar=False, cwd=str(tmp_path))
    assert e.value.ename == "InputError"
    assert "field `week`" in e.value.evalue and "2026-W99" in e.value.evalue


def test_failing_notebook_names_notebook_cell_and_error(tmp_path, capsys):
    bad = tmp_path / "run.json"
    bad.write_text('{"suite": "x", "thresholds": {"passScore": 0.7}, "tasks": "not a list"}')
    params = tmp_path / "p.yaml"
    params.write_text("suite_gating:\n  suite_run: run.json\n")  # relative to the params file
    code = main(["report", "--week", WEEK, "--params", str(params), "--out", str(tmp_path / "out"),
                 "--only", "suite_gating"])
    err = capsys.readouterr().err
    assert code == 65
    assert "notebook `suite_gating` failed in cell" in err
    assert "SchemaViolation" in err and "field `tasks`" in err and str(bad) in err
    run = json.loads((tmp_path / "out" / WEEK / "run.json").read_text())
    assert run["notebooks"]["suite_gating"]["status"] == "failed"
    # the failing notebook's page is still written, with its error visible
    assert "SchemaViolation" in (tmp_path / "out" / WEEK / "suite_gating.html").read_text()


# --------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_weekly_on_real_data_shows_arb_ceiling_and_judgebench(shared_data, tmp_path):
    index = report.render_report(week=WEEK, data=shared_data, params=SMALL, out=tmp_path,
                                 notebooks=["weekly"])
    text = _text(index.read_text(encoding="utf-8"))
    assert "AgentRewardBench human ceiling" in text
    assert "JudgeBench pair accuracy" in text and "o1-mini-2024-09-12 0.657" in text
    # claude-3-haiku ran on other pairs: listed apart, unranked, with what it answered
    assert "judges run on other pairs (not comparable, not ranked)" in text
    assert "claude-3-haiku-20240307: 0.322 [" in text
    run = json.loads((index.parent / "run.json").read_text())
    paths = [i["path"] for i in run["notebooks"]["weekly"]["provenance"][0]["inputs"]]
    assert any(p.endswith("annotations.csv") for p in paths) and any(p.endswith("judgments.csv") for p in paths)
    assert Path(run["data_dir"]) == Path(shared_data).resolve()


@pytest.mark.parametrize("name", report.NOTEBOOKS)
def test_page_shows_no_machine_path_no_python_booleans_and_links_home(rendered, name):
    folder, _, _ = rendered
    html = (folder / PAGES[name]).read_text(encoding="utf-8")
    text = _text(html[html.index("<main>"):])
    root = Path(__file__).resolve().parents[2]
    for machine in (str(root), str(root.resolve()), str(folder.resolve().parent), str(Path.home())):
        assert machine not in html, f"{PAGES[name]} shows {machine}"
    assert not re.search(r"(?<![\w`])(True|False)(?![\w`])", text), re.findall(r".{40}(?:True|False).{20}", text)
    assert ('href="index.html"' in html) == (name != "weekly")


# --------------------------------------------------------------------------- the week from a scored dataset


def test_weekly_renders_from_a_scored_dataset_without_its_rows(tmp_path):
    """``evaltk report --scored DIR``: the weekly notebook (papermill, headless) reads only the
    dataset's summaries: every score, run and ledger file is deleted first."""
    import shutil

    from evaltk.data import make_demo
    from evaltk.scoring import score_traces

    from .test_report import _scored_dataset

    demo = make_demo(n_traces=SMALL["n_traces"], rng=0)
    scored = _scored_dataset(tmp_path / "store", demo)
    for t in ("scores", "runs", "ledger"):
        shutil.rmtree(scored / t)
    # weekly and one detail page from the dataset (the calibration page's section on this week's
    # runs is the same WeekScores call, rendered in memory by test_render_report_writes_every_page)
    code = main(["report", "--week", WEEK, "--scored", str(scored), "--only", "weekly",
                 "direction_of_error", "--out", str(tmp_path / "out")])
    assert code == 0
    # the detail pages' sections on this week's runs come from the same summaries
    auto = score_traces(demo.traces, demo.answers, demo.labels).scores("automatic")
    n_runs = f"the {auto['trace_id'].nunique():,} runs of the scored dataset scored (from its per-partition summaries"
    for page, shown in (("direction_of_error", r"automatic tier x_task (no detectable lean|overstates|understates)"),):
        text = re.sub(r"\s+", " ", _text((tmp_path / "out" / WEEK / f"{page}.html").read_text(encoding="utf-8")))
        assert "Warning" not in text, (page, text[text.index("Warning") - 300:text.index("Warning") + 200])
        assert f"Source: {n_runs}" in text, (page, text[:2000])
        assert re.search(shown, text), (page, text[:4000])
        rec = json.loads((tmp_path / "out" / WEEK / "run.json").read_text())["notebooks"][page]
        assert rec["parameters"]["scored"] == str(scored.resolve())
    html = (tmp_path / "out" / WEEK / "index.html").read_text(encoding="utf-8")
    text = _text(html)
    assert f"{auto['trace_id'].nunique()} traces, {len(auto)} scores" in text
    assert "the scored dataset scored (from its per-partition summaries; no score row read" in text
    assert "Checkpoint gate not available from a scored dataset" in text
    assert re.search(r"the judges' score against the human labels on this week's runs \(Cohen's kappa\) : "
                     r"x_eff -?[01]\.\d{3}.* on the \d+ runs both judged and labelled \(of \d+\); x_task -?[01]\.\d{3}",
                     text), text[:3000]
    assert html.count("<svg") >= 3  # coverage, trajectory grid, frontier
    assert str(tmp_path) not in html  # the dataset is named by its folder, not by a machine path
    run = json.loads((tmp_path / "out" / WEEK / "run.json").read_text())
    rec = run["notebooks"]["weekly"]
    assert rec["status"] == "ok" and rec["parameters"]["scored"] == str(scored.resolve())
    assert run["scored"] == [str(scored.resolve())]
    inputs = {Path(i["path"]).name: i["sha256"] for i in rec["provenance"][0]["inputs"]}
    assert inputs["_complete.json"] == report.file_digest(scored / "_complete.json")
