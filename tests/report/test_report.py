"""Tests for evaltk.report: chart builders, the frontier, parameters, provenance, the runner's pieces.

The notebooks themselves are executed in tests/test_notebooks.py.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from evaltk import report
from evaltk.cli import report as cli_report
from evaltk.errors import InputError, SchemaViolation, UnreadableInput
from evaltk.report import _params, _provenance, _render
from evaltk.values import UndefinedWarning


def _layer_data(chart: alt.TopLevelMixin) -> list[pd.DataFrame]:
    """Every inline dataset of a (layered / concatenated) chart, as frames."""
    spec = chart.to_dict()
    return [pd.DataFrame(v) for v in spec.get("datasets", {}).values()]


# --------------------------------------------------------------------------- theme and SVG


def test_use_theme_in_the_report_kernel_enables_theme_and_svg_renderer(monkeypatch):
    monkeypatch.setenv(report.RENDERER_ENV, "svg")  # what render_report's kernelspec sets
    previous = alt.renderers.active
    try:
        report.use_theme()
        assert alt.theme.active == report.THEME_NAME
        assert alt.renderers.active == "svg"
        cfg = alt.theme.get()()["config"]
        assert cfg["title"]["anchor"] == "start"
    finally:
        alt.renderers.enable(previous)


def test_use_theme_outside_the_report_keeps_the_interactive_renderer(monkeypatch):
    """A user's own kernel keeps altair's renderer (tooltips); only the theme changes."""
    monkeypatch.delenv(report.RENDERER_ENV, raising=False)
    alt.renderers.enable("default")
    report.use_theme()
    assert alt.theme.active == report.THEME_NAME
    assert alt.renderers.active == "default"
    chart = report.judge_frontier_chart(pd.DataFrame({
        "judge": ["a", "b"], "accuracy": [0.8, 0.7], "ci_low": [0.7, 0.6], "ci_high": [0.9, 0.8],
        "cost": [1.0, 2.0], "on_frontier": [True, False]}), latency=None)
    assert isinstance(chart, alt.TopLevelMixin)  # composable: an altair object
    bundle = chart._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "image/svg+xml" not in bundle  # the live (vega) renderer, where tooltips work
    assert "tooltip" in json.dumps(chart.to_dict())


def test_the_report_kernel_carries_the_svg_renderer():
    from evaltk.report._render import _report_kernel

    with _report_kernel() as name:
        import jupyter_client.kernelspec as ks

        spec = ks.KernelSpecManager().get_kernel_spec(name)
    assert spec.env == {report.RENDERER_ENV: "svg"}


def test_chart_to_svg_is_svg_with_labels():
    f = pd.DataFrame({"judge": ["alpha-judge", "beta-judge"], "statistic": [0.6, 0.4],
                      "ci_low": [0.5, 0.3], "ci_high": [0.7, 0.5]})
    svg = report.chart_to_svg(report.agreement_chart(f, ceiling=(0.8, 0.7, 0.9), baseline=0.0))
    assert svg.lstrip().startswith("<svg")
    assert "alpha-judge" in svg and "beta-judge" in svg


# --------------------------------------------------------------------------- chart builders


def _judges():
    from evaltk.judges import pareto_frontier

    f = pd.DataFrame({"judge": ["a", "b", "c"], "accuracy": [0.9, 0.8, 0.7], "ci_low": [0.85, 0.7, 0.6],
                      "ci_high": [0.95, 0.88, 0.8], "cost": [2.0, 1.0, 1.5], "latency_ms": [900, 200, 300],
                      "canary": [False, False, True]})
    return f.merge(pareto_frontier(f, minimize=("cost",)), on="judge")


def test_judge_frontier_chart_draws_frontier_only_through_frontier_members():
    ch = report.judge_frontier_chart(_judges(), canary_rejected="canary")
    spec = ch.to_dict()
    line = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "line")
    line_data = pd.DataFrame(spec["datasets"][line["data"]["name"]])
    assert line_data["judge"].tolist() == ["b", "a"]  # sorted by cost, dominated c absent
    points = pd.DataFrame(spec["datasets"][spec["data"]["name"]]) if "data" in spec else _layer_data(ch)[-1]
    status = dict(zip(points["judge"], points["status"], strict=True))
    assert status == {"a": "on the frontier", "b": "on the frontier", "c": "rejected by canary"}
    # latency is a channel (point size)
    pt = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    assert pt["encoding"]["size"]["field"] == "latency"
    assert "<svg" in report.chart_to_svg(ch)


def test_judge_frontier_chart_shows_the_coverage_floor():
    f = _judges().assign(coverage=[0.5, 0.99, 0.9], min_coverage=0.8)
    ch = report.judge_frontier_chart(f, canary_rejected="canary")
    spec = ch.to_dict()
    assert "coverage >= 80%" in spec["title"]["subtitle"]
    points = _layer_data(ch)[-1] if "data" not in spec else pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    status = dict(zip(points["judge"], points["status"], strict=True))
    assert status == {"a": "below the coverage floor", "b": "on the frontier", "c": "rejected by canary"}
    line = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "line")
    assert pd.DataFrame(spec["datasets"][line["data"]["name"]])["judge"].tolist() == ["b"]  # eligible only
    assert "<svg" in report.chart_to_svg(ch)


def test_judge_frontier_chart_needs_cost_and_small_tables():
    f = _judges()
    f.loc[0, "cost"] = np.nan
    with pytest.raises(ValueError, match="needs a cost"):
        report.judge_frontier_chart(f)
    big = pd.concat([_judges()] * 200, ignore_index=True)
    with pytest.raises(ValueError, match="Aggregate the table first"):
        report.judge_frontier_chart(big)
    with pytest.raises(ValueError, match="empty"):
        report.judge_frontier_chart(_judges().iloc[:0])
    with pytest.raises(TypeError, match="DataFrame"):
        report.judge_frontier_chart([1, 2])


def test_judge_accuracy_chart_prints_interval_and_coverage():
    f = pd.DataFrame({"judge": ["a", "b"], "accuracy": [0.9, 0.5], "ci_low": [0.8, 0.4],
                      "ci_high": [0.95, 0.6], "coverage": [1.0, 0.5]})
    svg = report.chart_to_svg(report.judge_accuracy_chart(f))
    assert "0.90 [0.80, 0.95]" in svg and "coverage 50%" in svg


def test_bias_forest_chart_states_lean_in_words():
    f = pd.DataFrame({"judge": ["a", "b"], "dimension": ["x_task", "x_eff"], "bias": [0.12, -0.01],
                      "ci_low": [0.05, -0.06], "ci_high": [0.19, 0.04],
                      "lean": ["overstates", "no detectable lean"]})
    svg = report.chart_to_svg(report.bias_forest_chart(f))
    assert "overstates" in svg and "no detectable lean" in svg
    assert "x_task · a" in svg and "x_eff · b" in svg
    assert "0.12 [0.05, 0.19]" in svg
    # one dimension: rows are the judges alone
    one = report.chart_to_svg(report.bias_forest_chart(f.assign(dimension="x_task")))
    assert "x_task · a" not in one and ">a<" in one


def test_agreement_chart_has_ceiling_band_and_baseline():
    f = pd.DataFrame({"judge": ["a"], "statistic": [0.5], "ci_low": [0.4], "ci_high": [0.6]})
    spec = report.agreement_chart(f, ceiling=(0.7, 0.6, 0.8), baseline=0.1).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks.count("rect") == 1 and marks.count("rule") == 3  # ceiling point, baseline, interval
    datasets = [pd.DataFrame(v) for v in spec["datasets"].values()]
    assert any("lo" in d and d["lo"].tolist() == [0.6] and d["hi"].tolist() == [0.8] for d in datasets)
    assert any("x" in d and d["x"].tolist() == [0.1] for d in datasets)
    # no ceiling, no baseline: just the judges
    plain = report.agreement_chart(f).to_dict()
    assert len(plain["layer"]) == 3
    # a ceiling whose interval is unknown draws its point only
    nan_band = report.agreement_chart(f, ceiling=(0.7, None, None)).to_dict()
    assert all((layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) != "rect"
               for layer in nan_band["layer"])


def test_confusion_heatmap_shares_are_row_normalised():
    f = pd.DataFrame({"judge": ["a"] * 4, "human": ["yes", "yes", "no", "no"],
                      "judge_answer": ["yes", "no", "yes", "no"], "n": [30, 10, 5, 15]})
    spec = report.confusion_heatmap(f, facet="judge", order=["yes", "no"]).to_dict()
    data = pd.DataFrame(next(iter(spec["datasets"].values())))
    share = data.set_index(["truth", "predicted"])["share"]
    assert share[("yes", "yes")] == pytest.approx(0.75)
    assert share[("no", "no")] == pytest.approx(0.75)
    assert "<svg" in report.chart_to_svg(report.confusion_heatmap(f.drop(columns="judge")))


def test_confusion_heatmap_labels_do_not_run_into_each_other():
    """cannot_tell is wider than its column: the labels are angled (they collided side by side)."""
    def x_axis(answers):
        f = pd.DataFrame({"human": answers, "judge_answer": answers[::-1], "n": range(1, len(answers) + 1)})
        spec = report.confusion_heatmap(f).to_dict()
        return spec["layer"][0]["encoding"]["x"]["axis"]

    assert x_axis(["no", "yes"])["labelAngle"] == 0
    angled = x_axis(["none", "a_few", "lots", "cannot_tell"])
    assert angled["labelAngle"] == -40 and angled["labelAlign"] == "right"


def test_abstention_chart_aggregates_before_charting():
    rng = np.random.default_rng(0)
    n = 6000  # more than altair's default 5,000-row limit: the chart must not carry records
    cause = rng.choice(np.array(["not_applicable", "abstained", None], dtype=object), n, p=[0.2, 0.1, 0.7])
    value = np.where(pd.isna(cause), rng.random(n), np.nan)
    scores = pd.DataFrame({"trace_id": np.arange(n), "measure": np.repeat(["x_task", "x_safe"], n // 2),
                           "value": value, "cause": cause})
    ch = report.abstention_chart(scores)
    frames = [pd.DataFrame(v) for v in ch.to_dict()["datasets"].values()]
    assert max(len(d) for d in frames) <= 2 * 5
    bars = next(d for d in frames if "outcome" in d)
    got = bars.groupby("outcome")["count"].sum().to_dict()
    assert got["not_applicable"] == int((cause == "not_applicable").sum())
    assert got["valued"] == int(pd.isna(cause).sum())
    assert got["missing_evidence"] == 0
    assert "coverage" in report.chart_to_svg(ch)


def test_abstention_chart_and_coverage_line_keep_the_seeds_measure_order():
    """Summaries sort their group keys; what a page shows keeps the seed's order (the trace
    vector x_task, x_safe, x_eff, x_ctx, then the guide family)."""
    from evaltk.report._format import measure_summary

    scores = pd.DataFrame({"trace_id": range(4), "measure": ["g_outcome", "x_ctx", "x_task", "x_safe"],
                           "value": [1.0, 0.5, 1.0, 0.0], "cause": [None] * 4})
    order = measure_summary(scores)["measure"]
    assert order.tolist() == ["x_task", "x_safe", "x_ctx", "g_outcome"]
    svg = report.chart_to_svg(report.abstention_chart(scores))
    assert svg.index(">x_task<") < svg.index(">x_safe<") < svg.index(">x_ctx<") < svg.index(">g_outcome<")


def test_abstention_chart_refuses_nan_without_cause():
    bad = pd.DataFrame({"measure": ["x_task"], "value": [np.nan], "cause": [None]})
    with pytest.raises(ValueError, match="without a `cause`"):
        report.abstention_chart(bad)


def test_suite_gating_chart_shows_both_scores_and_aggregates():
    tasks = pd.DataFrame({"task_id": ["t1", "t2"], "score": [0.9, 0.9], "gated_score": [0.9, 0.0]})
    ch = report.suite_gating_chart(tasks, task="task_id", pass_score=0.7, aggregate=0.9, gated_aggregate=0.45)
    spec = ch.to_dict()
    frames = [pd.DataFrame(v) for v in spec["datasets"].values()]
    bars = next(d for d in frames if "kind" in d)
    suite = bars[bars["task"] == "SUITE (aggregate)"].set_index("kind")["value"]
    assert suite["reported score"] == 0.9 and suite["gating score"] == 0.45
    assert bars[(bars["task"] == "t2") & (bars["kind"] == "gating score")]["value"].item() == 0.0
    assert "<svg" in report.chart_to_svg(ch)


def test_format_interval():
    assert report.format_interval(0.5, 0.25, 0.75, digits=1) == "0.5 [0.2, 0.8]"
    assert report.format_interval(0.5, np.nan, 0.7) == "0.50"
    assert report.format_interval(float("nan"), 0.1, 0.2) == "—"


# --------------------------------------------------------------------------- parameters


def test_check_params_normalises_and_names_the_field(tmp_path):
    out = report.check_params(week="", data_dir=str(tmp_path), confidence_level=0.9, seed=0,
                              judges=["a"], thresholds={"x_task": 0.7}, pass_score=1, n_resamples=10)
    assert _params._WEEK_RE.match(out["week"])
    assert out["data_dir"] == str(tmp_path.resolve())
    assert out["pass_score"] == 1.0
    cases = [
        ({"confidence_level": 0.0}, "confidence_level"),
        ({"confidence_level": "high"}, "confidence_level"),
        ({"week": "2026-48"}, "week"),
        ({"week": "2026-W54"}, "week"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"judges": "a"}, "judges"),
        ({"thresholds": {"x_task": 1.2}}, "thresholds.x_task"),
        ({"pass_score": -0.1}, "pass_score"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"other": object()}, "other"),
    ]
    for kw, fld in cases:
        with pytest.raises(InputError) as e:
            report.check_params(**kw)
        assert e.value.field == fld, kw
    with pytest.raises(UnreadableInput, match="no such folder"):
        report.check_params(data_dir=str(tmp_path / "absent"))
    assert report.check_params(week="2020-W53")["week"] == "2020-W53"  # 2020 has 53 ISO weeks


def test_plan_parameters_routes_and_refuses_unknown():
    declared = {"weekly": {"week": {}, "confidence_level": {}}, "calibration": {"confidence_level": {}, "seed": {}}}
    per = _render._plan_parameters(declared, {"confidence_level": 0.9, "calibration": {"seed": 3}}, None)
    assert per == {"weekly": {"confidence_level": 0.9}, "calibration": {"confidence_level": 0.9, "seed": 3}}
    per = _render._plan_parameters(declared, {"confidence_level": 0.9, "calibration": {"confidence_level": 0.8}}, None)
    assert per["calibration"]["confidence_level"] == 0.8 and per["weekly"]["confidence_level"] == 0.9
    with pytest.raises(InputError, match="no notebook takes a parameter `colour`"):
        _render._plan_parameters(declared, {"colour": "red"}, "p.yaml")
    with pytest.raises(InputError, match="notebook `weekly` has no parameter `seed`"):
        _render._plan_parameters(declared, {"weekly": {"seed": 1}}, None)


def test_load_params_file(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("confidence_level: 0.9\ncalibration:\n  seed: 2\n")
    assert _render._load_params(p) == ({"confidence_level": 0.9, "calibration": {"seed": 2}}, str(p))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(UnreadableInput, match="bad.json: line 1: not JSON"):
        _render._load_params(tmp_path / "bad.json")
    # plain json.loads would keep the last value silently: the run would use a seed nobody reviewed
    (tmp_path / "twice.json").write_text('{"seed": 1,\n "seed": 2}')
    with pytest.raises(SchemaViolation, match="twice.json: field `seed`: duplicate object key 'seed'"):
        _render._load_params(tmp_path / "twice.json")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="must be a mapping"):
        _render._load_params(tmp_path / "list.yaml")
    with pytest.raises(UnreadableInput, match="no such parameters file"):
        _render._load_params(tmp_path / "absent.yaml")


def test_current_week_iso():
    import datetime as dt

    assert report.current_week(dt.date(2021, 1, 3)) == "2020-W53"
    assert report.current_week(dt.date(2026, 11, 23)) == "2026-W48"


# --------------------------------------------------------------------------- provenance


def test_provenance_digests_inputs_and_exposes_json(tmp_path):
    import hashlib

    f = tmp_path / "labels.csv"
    f.write_bytes(b"a,b\n1,2\n")
    p = report.provenance("calibration", {"seed": 1}, [f], notes=["demo"])
    d = p.to_dict()
    assert d["inputs"] == [{"path": str(f), "sha256": hashlib.sha256(b"a,b\n1,2\n").hexdigest()}]
    bundle = p._repr_mimebundle_()
    assert bundle[_provenance._PROVENANCE_MIME]["parameters"] == {"seed": 1}
    assert "sha256" in bundle["text/html"] and "evaltk version" in bundle["text/html"]
    with pytest.raises(UnreadableInput):
        report.provenance("x", {}, [tmp_path / "absent.csv"])


# --------------------------------------------------------------------------- runner pieces


def test_report_kernel_runs_this_interpreter_and_restores_env():
    from jupyter_client.kernelspec import KernelSpecManager

    before = os.environ.get("JUPYTER_PATH")
    with _render._report_kernel() as name:
        spec = KernelSpecManager().get_kernel_spec(name)
        assert spec.argv[0] == sys.executable
        assert "ipykernel_launcher" in " ".join(spec.argv)
    assert os.environ.get("JUPYTER_PATH") == before


def test_notebooks_dir_finds_every_notebook():
    d = report.notebooks_dir()
    for name in report.NOTEBOOKS:
        assert (d / f"{name}.py").is_file()


def test_notebooks_dir_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALTK_NOTEBOOKS", str(tmp_path))
    # an empty folder is not accepted; the packaged/checkout folder is used instead
    assert report.notebooks_dir() != tmp_path
    (tmp_path / "weekly.py").write_text("# %%\n")
    assert report.notebooks_dir() == tmp_path


def test_notebook_failure_message_and_exit_codes():
    f = report.NotebookFailure("calibration", 4, 3, "params = report.check_params(x=1)\n", "InputError",
                               "field `x`: bad", section="Parameters")
    s = str(f)
    assert "notebook `calibration`" in s and "cell 4" in s and "In [3]" in s and "Parameters" in s
    assert "InputError: field `x`: bad" in s
    assert cli_report._exit_code([f]) == 65
    assert cli_report._exit_code([report.NotebookFailure("w", 1, 1, "", "FileNotFoundError", "x")]) == 66
    assert cli_report._exit_code([report.NotebookFailure("w", 1, 1, "", "ZeroDivisionError", "x")]) == 70


def test_render_report_refuses_bad_input_before_running(tmp_path):
    with pytest.raises(InputError, match="ISO week"):
        report.render_report(week="48", out=tmp_path)
    with pytest.raises(UnreadableInput, match="no such folder"):
        report.render_report(data=tmp_path / "nope", out=tmp_path)
    with pytest.raises(InputError, match="unknown notebook"):
        report.render_report(notebooks=["nope"], out=tmp_path)
    with pytest.raises(InputError, match="confidence_level"):
        report.render_report(params={"confidence_level": 3}, out=tmp_path, notebooks=["weekly"])
    assert not list(tmp_path.rglob("*.html"))


def test_cli_usage_errors(tmp_path, capsys):
    from evaltk.cli._main import main

    assert main(["report", "--week", "W48", "--out", str(tmp_path)]) == 65
    assert "ISO week" in capsys.readouterr().err
    bad = tmp_path / "p.yaml"
    bad.write_text("colour: red\n")
    assert main(["report", "--params", str(bad), "--out", str(tmp_path), "--only", "weekly"]) == 65
    assert "no notebook takes a parameter `colour`" in capsys.readouterr().err
    assert main(["report", "--only", "nope"]) == 64


def test_exporter_template_has_no_scripts():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'><text>hi</text></svg>",
                              "text/plain": "chart"})])]
    body, _ = _render._html_exporter().from_notebook_node(nb)
    assert "<script" not in body
    main = body[body.index("<main>"):]
    assert "<text>hi</text></svg>" in main and "data:image/svg+xml;base64" not in main
    assert ">x<" not in body  # code excluded
    json.dumps(report.NOTEBOOKS)  # stable, serialisable names


# --------------------------------------------------------------------------- data sources


def test_data_sources_demo_only_and_errors(tmp_path):
    s = report.data_sources("")
    assert s.demo is None and s.judgebench is None and s.agentrewardbench is None
    assert s.suite_run is not None and s.suite_run.name == "run.json"  # the shipped example
    with pytest.raises(UnreadableInput, match="holds none of the data"):
        report.data_sources(str(tmp_path))
    with pytest.raises(UnreadableInput, match="no such folder"):
        report.data_sources(str(tmp_path / "absent"))


def test_data_sources_finds_demo_folder_and_reads_it(tmp_path):
    from evaltk.data import _datasets as datasets
    datasets.write_demo(tmp_path / "demo", n_traces=30, rng=5)
    s = report.data_sources(str(tmp_path))
    assert s.demo == (tmp_path / "demo").resolve()
    d, files, note = report.demo_data(s)
    assert len(d.traces) == 30 and "read from" in note
    assert {p.name for p in files} >= {"traces.jsonl", "answers.csv", "labels.csv"}
    d2, files2, note2 = report.demo_data(report.data_sources(""), n_traces=20, seed=1)
    assert len(d2.traces) == 20 and files2 == [] and "make_demo(n_traces=20, rng=1)" in note2
    assert "demo corpus" in s.describe()["source"].tolist()


def test_data_sources_on_shared_data(shared_data):
    s = report.data_sources(str(shared_data))
    assert s.agentrewardbench.name == "annotations.csv"
    assert s.agentrewardbench_leaderboard.name == "judge-leaderboard.csv"
    assert s.judgebench.name == "judgments.csv"


def test_agentrewardbench_section_without_the_data_says_how_to_include_it():
    files, shown = report.agentrewardbench_section(report.data_sources(""))
    assert files == [] and len(shown) == 1 and shown[0].data == report.NO_AGENTREWARDBENCH


@pytest.mark.realdata
def test_agentrewardbench_section_reads_the_annotations_and_the_leaderboard(shared_data):
    import altair as alt

    from evaltk._io import read_csv_text
    from evaltk.judges import agentrewardbench_ceiling

    s = report.data_sources(str(shared_data))
    files, shown = report.agentrewardbench_section(s, n_resamples=50, rng=0)
    assert files == [s.agentrewardbench, s.agentrewardbench_leaderboard]
    charts = [x for x in shown if isinstance(x, alt.TopLevelMixin)]
    tables = [x for x in shown if isinstance(x, pd.DataFrame)]
    assert len(charts) == 2 and len(tables) == 2
    ceiling_chart = charts[0].to_dict()
    rows = ceiling_chart["datasets"][next(iter(ceiling_chart["datasets"]))]
    questions = {r["judge"] for r in rows if "judge" in r}
    ceiling = agentrewardbench_ceiling(s.agentrewardbench, n_resamples=50, rng=0)
    assert questions == set(ceiling.loc[ceiling["statistic_name"] == "percent_agreement", "question"])
    board = read_csv_text(s.agentrewardbench_leaderboard)
    assert tables[1].index.tolist() == board["Judge"].tolist()  # the leaderboard as published, every judge


def test_judgebench_presented_flips_label_for_swapped_trial():
    j = pd.DataFrame({"judge_model": ["m"] * 4, "pair_id": ["p", "p", "q", "q"], "trial": [0, 1, 0, 1],
                      "label": ["A>B", "A>B", "B>A", "B>A"], "decision": ["A>B", "B>A", "A=B", None]})
    out = report.judgebench_presented(j)
    assert out["label_presented"].tolist() == ["A>B", "B>A", "B>A", "A>B"]
    assert out["decision"].tolist()[:3] == ["A>B", "B>A", "A=B"] and pd.isna(out["decision"].iloc[3])
    with pytest.raises(InputError, match="trial must be 0 or 1"):
        report.judgebench_presented(j.assign(trial=[0, 2, 0, 1]))
    with pytest.raises(InputError, match="must have a column `label`"):
        report.judgebench_presented(j.drop(columns="label"))


def test_check_params_file_parameters(tmp_path):
    f = tmp_path / "run.json"
    f.write_text("{}")
    assert report.check_params(suite_run=str(f), host_summary="")["suite_run"] == str(f.resolve())
    with pytest.raises(UnreadableInput, match="no such file") as e:
        report.check_params(suite_run=str(tmp_path / "nope.json"))
    assert e.value.field == "suite_run"
    with pytest.raises(InputError):
        report.check_params(labels_file=3)


def test_trajectory_grid_chart_on_the_shipped_cohort():
    from evaltk import trajectory
    s = report.data_sources("")
    assert s.trajectory is not None  # the shipped example: lock, results that hold, design
    cohort = trajectory.grade_files(s.trajectory[0], s.trajectory[1], design=s.trajectory[2])
    f = cohort.to_frame()
    ch = report.trajectory_grid_chart(f, dimensions=trajectory.DIMENSIONS)
    frames = [pd.DataFrame(v) for v in ch.to_dict()["datasets"].values()]
    grid = next(d for d in frames if len(d) == len(f))
    assert set(grid["outcome"]) <= set(report.OUTCOME_COLORS)
    assert (grid.groupby("case")["dimension"].nunique() == len(trajectory.DIMENSIONS)).all()
    svg = report.chart_to_svg(ch)
    for c in cohort.cases:
        assert c.case_id in svg and c.decision in svg
    with pytest.raises(ValueError, match="unknown outcome"):
        report.trajectory_grid_chart(f.assign(outcome="maybe"))


def test_data_sources_trajectory_folder(tmp_path):
    (tmp_path / "trajectory").mkdir()
    for name in ("lock.json", "results.json"):
        (tmp_path / "trajectory" / name).write_text("{}")
    s = report.data_sources(str(tmp_path))
    assert s.trajectory[0].name == "lock.json" and s.trajectory[1].name == "results.json"
    assert s.trajectory[2] is None


# --------------------------------------------------------------------------- the notebook tables (_tables, _format)


@pytest.fixture(scope="module")
def small_demo():
    from evaltk.data import make_demo

    return make_demo(n_traces=300, rng=0)


def _labels(rows):
    """Hand-built human labels: (trace_id, rater, answer) on x_task."""
    return pd.DataFrame([{"trace_id": t, "measure": "x_task", "step": pd.NA, "rater": r, "answer": a}
                         for t, r, a in rows])


def _answers(rows):
    return pd.DataFrame([{"trace_id": t, "measure": "x_task", "step": pd.NA, "rater": r, "answer": a,
                          "cost": 0.01, "latency_ms": 100} for t, r, a in rows])


def test_answer_order_reads_the_scoring_vocabulary():
    from evaltk.scoring import VOCABULARIES

    assert report.answer_order("x_task") == ["no", "yes", "cannot_tell"]
    assert report.answer_order("x_eff")[:3] == sorted((w for w, v in VOCABULARIES["x_eff"].items() if v is not None),
                                                      key=VOCABULARIES["x_eff"].get)
    with pytest.raises(InputError):
        report.answer_order("x_safe")  # computed from the trace: no judge answers to order


def test_select_answers_refuses_absent_judges_and_measures(small_demo):
    a = report.select_answers(small_demo.answers, judges=["judge-careful"], measure="x_task")
    assert set(a["rater"]) == {"judge-careful"} and set(a["measure"]) == {"x_task"}
    with pytest.raises(InputError, match="no answers from judge"):
        report.select_answers(small_demo.answers, judges=["nobody"])
    with pytest.raises(InputError, match="no measure"):
        report.select_answers(small_demo.answers, measure="x_nope")


def test_human_ceiling_and_agreement_tables_on_the_demo(small_demo):
    from evaltk import calibration_numbers, human_ceiling

    kw = {"confidence_level": 0.9, "n_resamples": 50, "rng": 1}
    ceil = report.human_ceiling_table(small_demo.labels, measures=["x_task", "x_eff"], **kw)
    assert list(ceil["measure"]) == ["x_task", "x_eff"] and list(ceil["level"]) == ["nominal", "ordinal"]
    # the same number as the library's, unrounded
    lab = small_demo.labels[small_demo.labels["measure"] == "x_task"]
    human = pd.DataFrame({"item_id": lab["trace_id"].astype(str), "rater": lab["rater"], "rating": lab["answer"]})
    c = human_ceiling(human, level="nominal", categories=["no", "yes"], abstain=["cannot_tell"], **kw)
    assert ceil.loc[0, "statistic"] == c.statistic and ceil.loc[0, "n_pairable"] == c.n_pairable
    agree = report.judge_agreement_table(small_demo.answers, small_demo.labels, measures=["x_task"], **kw)
    assert set(agree["judge"]) == set(small_demo.answers.loc[small_demo.answers["measure"] == "x_task", "rater"])
    g = small_demo.answers[(small_demo.answers["measure"] == "x_task") & (small_demo.answers["rater"] == "judge-careful")]
    nums = calibration_numbers(human, pd.Series(g["answer"].to_numpy(), index=g["trace_id"].astype(str)),
                               level="nominal", categories=["no", "yes"], abstain=["cannot_tell"], **kw)
    row = agree.set_index("judge").loc["judge-careful"]
    assert row["statistic"] == nums.judge.statistic and row["n_items"] == nums.judge.n_items
    assert agree["statistic"].between(0, 1).all() and agree["statistic_cause"].isna().all()
    shown = report.show_agreement(agree)
    assert shown.index.names == ["dimension", "judge"] and "[" in shown.iloc[0]["agreement [interval]"]
    with pytest.raises(InputError, match="x_safe"):
        report.judge_agreement_table(small_demo.answers, small_demo.labels, measures=["x_safe"], **kw)


def test_abstained_ceiling_and_agreement_show_their_cause():
    kw = {"confidence_level": 0.95, "n_resamples": 20, "rng": 0}
    one_each = _labels([("t1", "h1", "yes"), ("t2", "h1", "no")])  # no item has two human labels
    ceil = report.human_ceiling_table(one_each, measures=["x_task"], **kw)
    assert math.isnan(ceil.loc[0, "statistic"]) and ceil.loc[0, "statistic_cause"] == "missing_evidence"
    assert ceil.loc[0, "n_pairable"] == 0
    agree = report.judge_agreement_table(_answers([("t1", "j", "yes"), ("t2", "j", "cannot_tell")]), one_each,
                                         measures=["x_task"], **kw)
    assert math.isnan(agree.loc[0, "statistic"]) and agree.loc[0, "statistic_cause"] == "missing_evidence"
    shown = report.show_agreement(agree)
    assert shown.iloc[0]["agreement [interval]"].startswith("abstained (missing_evidence")
    assert report.promotion_table(_answers([("t1", "j", "yes")]), one_each, agree).empty
    chart = report.calibration_chart(agree, ceil).to_dict()
    assert "no item has two human labels" in json.dumps(chart)


def test_agreement_with_abstaining_judge_counts_the_abstentions():
    kw = {"confidence_level": 0.95, "n_resamples": 20, "rng": 0}
    labels = _labels([(t, h, a) for t, a in [("t1", "yes"), ("t2", "no"), ("t3", "yes"), ("t4", "no")]
                      for h in ("h1", "h2")])
    answers = _answers([("t1", "j", "yes"), ("t2", "j", "no"), ("t3", "j", "cannot_tell"), ("t4", "j", "yes")])
    row = report.judge_agreement_table(answers, labels, measures=["x_task"], **kw).iloc[0]
    assert row["n_judge_abstained"] == 1 and row["n_items"] == 3
    assert row["statistic"] == pytest.approx(2 / 3) and row["coverage"] == pytest.approx(3 / 4)
    assert row["ceiling"] == 1.0
    promo = report.promotion_table(answers, labels, report.judge_agreement_table(answers, labels, measures=["x_task"], **kw),
                                   thresholds={"x_task": 0.8}, **kw)
    assert set(promo["judge"]) == {"j"} and not promo["met"].all()  # no held-out set declared: provisional
    with pytest.raises(InputError, match="no dimension"):
        report.thresholds_of({"x_nope": 1.0})
    assert report.thresholds_of({"x_task": 0.8}, "cost memo")["x_task"].validated
    assert not report.thresholds_of({"x_task": 0.8})["x_task"].validated


def test_confusion_counts_keep_the_judges_abstentions():
    labels = _labels([("t1", "h1", "yes"), ("t1", "h2", "yes"), ("t2", "h1", "no"), ("t2", "h2", "no")])
    answers = _answers([("t1", "j", "cannot_tell"), ("t2", "j", "yes")])
    c = report.confusion_counts(answers, labels, measure="x_task")
    assert set(zip(c["human_answer"], c["judge_answer"], c["n"], strict=True)) == {("yes", "cannot_tell", 1), ("no", "yes", 1)}


def test_direction_tables_on_hand_built_data():
    labels = _labels([(f"t{i}", "h1", a) for i, a in enumerate(["yes"] * 5 + ["no"] * 5)])
    # a kind judge: yes on every item but one, which it abstains on
    answers = _answers([(f"t{i}", "kind", "cannot_tell" if i == 9 else "yes") for i in range(10)])
    t = report.judge_direction_table(answers, labels, measures=["x_task"])
    row = t.iloc[0]
    assert row["judge"] == "kind" and row["dimension"] == "x_task"
    assert row["statistic"] > 0  # more yes than the humans
    assert row["n_excluded"] == 1 and row["lean"] in ("overstates", "no detectable lean")
    shown = report.show_direction(t)
    assert shown.index.names == ["judge", "dimension"]
    c = report.construct_direction_table(t)
    from evaltk.scoring import DIRECTION_OF_ERROR

    assert c.loc[0, "construct"] == DIRECTION_OF_ERROR["x_task"] and c.loc[0, "judges"] == f"kind: {row['lean']}"


def test_position_bias_table_shows_an_undefined_bias_with_its_cause():
    # judge b only ever ties: no pair to compare, an abstention, not a 0
    rows = []
    for i in range(6):
        for trial in (0, 1):
            rows.append({"judge_model": "a", "pair_id": f"p{i}", "trial": trial, "label": "A>B",
                         "decision": "A>B"})
            rows.append({"judge_model": "b", "pair_id": f"p{i}", "trial": trial, "label": "A>B", "decision": "A=B"})
    with pytest.warns(UndefinedWarning):
        t = report.position_bias_table(pd.DataFrame(rows)).set_index("judge")
    assert t.loc["a", "statistic"] > 0 and t.loc["a", "lean"] == "overstates"
    assert math.isnan(t.loc["b", "statistic"]) and isinstance(t.loc["b", "statistic_cause"], str)
    assert report.show_position_bias(t.reset_index()).loc["b", "bias [interval]"].startswith("abstained (")


def test_judge_selection_and_formatting_on_the_demo(small_demo):
    sel = report.judge_selection(small_demo.answers, small_demo.labels, small_demo.canaries, measure="x_task",
                                 n_resamples=50, rng=0)
    shown = report.show_judges(sel.table)
    assert list(shown.index) == list(sel.table["judge"])
    assert all(v == "none" or v[0].isdigit() for v in shown["canaries passed"])
    # each share named for what it is; the declared floor of eligibility on the coverage column
    assert [c for c in shown.columns if "(" in c and "of" in c] == [
        "run on (of the items)", "answered (of those run on)", "coverage (answered, of the items; floor 80%)"]
    o = report.show_orderings(sel.orderings)
    assert o.index.name == "verdict"  # no raw pandas index on the page
    assert list(o.columns) == ["difference [interval]", "items both answered"]
    sm = __import__("evaltk").score_traces(small_demo.traces, small_demo.answers, small_demo.labels)
    agents = report.show_agents(sm.summary(by="agent"), measures=("x_task", "x_safe"))
    assert list(agents.index) == ["x_task", "x_safe"]  # the measures' order, not the alphabet
    leans = report.judge_direction_table(small_demo.answers, small_demo.labels, measures=["x_task"])
    ceil = report.human_ceiling_table(small_demo.labels, measures=["x_task"], n_resamples=20, baseline=False)
    glance = report.week_at_a_glance(week="2026-W49", measure="x_task", scores=sm.scores("automatic"), selection=sel,
                                     directions=leans, ceilings=ceil)
    assert glance.iloc[0].tolist() == ["week", "2026-W49"]
    assert "suite gate" in set(glance["item"]) and math.isnan(ceil.loc[0, "baseline"])
    assert report.markdown_list(glance).startswith("- **week**: 2026-W49")
    v = report.verdict_table(sm.scores("automatic"), report.thresholds_of({"x_safe": 1.0}))
    assert set(v["verdict"]) == {"abstain"} and v["runs"].sum() == (sm.scores("automatic")["measure"] == "x_safe").sum()


def _judgebench_like() -> pd.DataFrame:
    """Two judges on pairs p0..p59, a third (`haiku`) on other pairs q0..q39."""
    rows = []
    for judge, pairs, right in (("gpt", [f"p{i}" for i in range(60)], 0.8),
                                ("llama", [f"p{i}" for i in range(60)], 0.6),
                                ("haiku", [f"q{i}" for i in range(40)], 0.7)):
        for i, p in enumerate(pairs):
            ok = i < right * len(pairs)
            for _trial in (0, 1):
                rows.append({"judge_name": "arena_hard", "judge_model": judge, "pair_id": p, "source": "s",
                             "label": "A>B", "decision_original": "A>B" if ok else "B>A"})
    return pd.DataFrame(rows)


def test_judgebench_judge_on_other_pairs_is_not_ranked_and_shares_are_named():
    jb = report.judgebench_selection(_judgebench_like(), n_resamples=50, rng=0)
    t = jb.table.set_index("judge")
    assert t.loc["haiku", "status"].startswith("not comparable") and not t.loc["haiku", "on_frontier"]
    shown = report.show_judge_accuracy(jb.table)
    assert shown.loc["haiku", "run on (of the pairs)"] == "40%"  # 40 of the 100 pairs
    assert shown.loc["haiku", "answered (of those run on)"] == "100%"
    assert shown.loc["gpt", "run on (of the pairs)"] == "60%"
    o = report.show_orderings(jb.orderings)
    assert o.filter(like="haiku", axis=0)["difference [interval]"].eq("—").all()
    assert "not comparable" in " ".join(o.index)


def test_the_weekly_summary_quotes_coverage_and_does_not_rank_a_judge_on_other_pairs(small_demo):
    sel = report.judge_selection(small_demo.answers, small_demo.labels, small_demo.canaries, measure="x_task",
                                 n_resamples=50, rng=0)
    sm = __import__("evaltk").score_traces(small_demo.traces, small_demo.answers, small_demo.labels)
    leans = report.judge_direction_table(small_demo.answers, small_demo.labels, measures=["x_task"])
    ceil = report.human_ceiling_table(small_demo.labels, measures=["x_task"], n_resamples=20, baseline=False)
    jb = report.judgebench_selection(_judgebench_like(), n_resamples=50, rng=0)
    glance = report.week_at_a_glance(week="2026-W49", measure="x_task", scores=sm.scores("automatic"), selection=sel,
                                     directions=leans, ceilings=ceil, judgebench=jb).set_index("item")["text"]
    frontier = glance.filter(like="judges on the frontier").iloc[0]
    assert frontier == "none" or "(coverage " in frontier
    ranked = glance["JudgeBench pair accuracy (published fold), judges run on the same pairs"]
    assert ranked.startswith("gpt ") and "llama" in ranked and "haiku" not in ranked
    assert "(answered 60 of the 60 pairs it was run on; coverage 60% of all 100 pairs)" in ranked
    alone = glance["JudgeBench judges run on other pairs (not comparable, not ranked)"]
    assert alone.startswith("haiku: 0.700 [") and "(answered 40 of its own 40 pairs; coverage 40% of all 100" in alone


def test_checkpoint_gate_scores_each_agent_and_refuses_absent_ones(small_demo):
    from evaltk import GateResult

    g = report.checkpoint_gate(small_demo, baseline_agent="agent-v2", candidate_agent="agent-v3", n_resamples=50)
    assert isinstance(g, GateResult) and set(g.dimensions["measure"]) >= {"x_task", "x_safe"}
    assert report.show_gate(g.dimensions).index.name == "measure"
    with pytest.raises(InputError, match="agents present"):
        report.checkpoint_gate(small_demo, baseline_agent="agent-v9", candidate_agent="agent-v3")


def test_checkpoint_gate_headline_names_the_decision_or_why_there_is_none(small_demo):
    headline, g = report.checkpoint_gate_headline(small_demo, baseline_agent="agent-v2",
                                                  candidate_agent="agent-v3", n_resamples=50)
    assert g is not None and headline == f"**agent-v3 against agent-v2: {g.decision.upper()}**"
    headline, g = report.checkpoint_gate_headline(small_demo, baseline_agent="agent-v9", candidate_agent="agent-v3")
    assert g is None and headline.startswith("*field `baseline_agent`: no runs of `agent-v9`") and headline.endswith("*")


def test_trajectory_note_without_a_cohort_says_so():
    assert report.trajectory_note(None, None) == "*No trajectory lock and results found: nothing to show.*"
    note = report.trajectory_note(("lock.json", "results.jsonl", None),
                                  {"decision": "hold", "passed": 3, "safely_abstained": 1, "failed": 2, "cases": 6})
    assert note.startswith("Source: results.jsonl against lock.json. **HOLD**: 3 passed")


def test_judge_confusion_chart_stacks_one_heatmap_per_measure(small_demo):
    spec = report.judge_confusion_chart(small_demo.answers, small_demo.labels, measures=["x_task", "x_eff"]).to_dict()
    assert len(spec["vconcat"]) == 2
    titles = [str(c.get("title", "")) for c in spec["vconcat"]]
    assert "x_task: judge answer against the human anchor" in titles[0] and "x_eff" in titles[1]


def test_format_abstention_and_suite_tables():
    assert report.format_abstention("not_applicable") == "abstained (not_applicable)"
    from evaltk import summarize_suite

    s = summarize_suite(report.example_path("suite", "run.json"))
    t = report.show_suite_tasks(s.to_frame())
    assert t.index.name == "task_id" and {"reported", "gating"} <= set(t.columns)
    tr = report.show_suite_trials(s.to_frame("trial"))
    assert tr.index.names == ["task_id", "trial"]


# --------------------------------------------------------------------------- JupyterLab


def test_jupytext_configuration_opens_the_notebooks_as_notebooks_and_saves_them_back(tmp_path):
    """What JupyterLab does through jupytext's contents manager: open, edit, run, save."""
    import shutil

    from jupytext import TextFileContentsManager
    from jupytext.config import find_jupytext_configuration_file

    root = Path(__file__).resolve().parents[2]
    assert Path(find_jupytext_configuration_file(str(root / "notebooks"))) == root / "jupytext.toml"
    shutil.copy(root / "jupytext.toml", tmp_path)
    shutil.copytree(root / "notebooks", tmp_path / "notebooks")
    cm = TextFileContentsManager(root_dir=str(tmp_path))
    for name in report.NOTEBOOKS:
        model = cm.get(f"notebooks/{name}.py")
        assert model["type"] == "notebook"
        cells = model["content"]["cells"]
        assert [c.metadata.get("tags") for c in cells].count(["parameters"]) == 1
        code = [c for c in cells if c.cell_type == "code"]
        code[-1].outputs = [{"output_type": "stream", "name": "stdout", "text": "OUTPUT-OF-A-RUN"}]
        code[-1].metadata["collapsed"] = True
        cm.save(model, f"notebooks/{name}.py")
        saved = (tmp_path / "notebooks" / f"{name}.py").read_text()
        assert "OUTPUT-OF-A-RUN" not in saved and "collapsed" not in saved  # inputs only, same text format
        again = cm.get(f"notebooks/{name}.py")["content"]["cells"]
        assert [c.source for c in again] == [c.source for c in cells]


# --------------------------------------------------------------------------- what the pages show


def test_a_data_folder_with_nothing_recognised_is_refused_before_any_notebook_runs(tmp_path, capsys):
    from evaltk.cli import main

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not data")
    lines: list[str] = []
    with pytest.raises(UnreadableInput, match="holds none of the data the report reads"):
        report.render_report(data=tmp_path / "empty", out=tmp_path / "out", progress=lines.append)
    assert lines == [] and not (tmp_path / "out" / report.current_week()).exists()
    params = tmp_path / "p.yaml"  # the same through a parameters file
    params.write_text(f"data_dir: {tmp_path / 'empty'}\n")
    assert main(["report", "--params", str(params), "--out", str(tmp_path / "out")]) == 66
    err = capsys.readouterr().err
    assert err.count("holds none of the data") == 1 and "executing" not in err


def test_pages_name_folders_without_machine_paths():
    roots = [("/home/ana/shared/data", "../shared/data"), ("/opt/py/site-packages/evaltk/data/examples",
                                                            "evaltk/data/examples")]
    page = ("<p>Source: /home/ana/shared/data/judgebench/judgments.csv (4740 judgments)</p>"
            "<td>input /opt/py/site-packages/evaltk/data/examples/suite/run.json</td>")
    out = _render.without_machine_paths(page, roots)
    assert out == ("<p>Source: ../shared/data/judgebench/judgments.csv (4740 judgments)</p>"
                   "<td>input evaltk/data/examples/suite/run.json</td>")


def test_each_detail_page_links_back_to_the_index():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A page")])
    exporter = _render._html_exporter()
    detail, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": "t"}, "evaltk_index_link": True})
    index, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": "t"}, "evaltk_index_link": False})
    assert '<a href="index.html">' in detail and '<a href="index.html">' not in index
    assert detail.index('href="index.html"') < detail.index("A page")  # at the top of the page


def test_pages_show_yes_no_and_one_number_format():
    conds = [{"condition": "gatedAggregateScore >= passScore", "value": 0.6625, "threshold": 0.7, "met": False},
             {"condition": "totalCost <= maxCost", "value": 0.258, "threshold": 2.5, "met": True},
             {"condition": "p95LatencyMs <= maxLatencyMs", "value": 3000.0, "threshold": 60000.0, "met": True}]
    t = report.show_suite_conditions(conds)
    assert t["value"].tolist() == ["0.6625", "0.258", "3,000"]
    assert t["threshold"].tolist() == ["0.7", "2.5", "60,000"]
    assert t["met"].tolist() == ["no", "yes", "yes"]
    promo = pd.DataFrame({"measure": ["x_task"] * 2, "judge": ["j"] * 2, "condition": ["human_ceiling", "held_out"],
                          "met": [True, False], "evidence": ["a", "b"]})
    shown = report.show_promotion(promo)
    assert shown["met"].tolist() == ["yes", "no"]
    assert "True" not in shown.to_html() and "False" not in shown.to_html()
    gate = pd.DataFrame({"measure": ["x_task"], "type": ["binary"], "decision": ["promote"], "reason": ["r"],
                         "n_pairs": [3], "pvalue_adjusted": [0.01], "calibrated": pd.array([pd.NA], dtype="boolean")})
    assert report.show_gate(gate)["calibrated"].tolist() == ["—"]


def test_the_shipped_examples_are_named_as_in_the_package_however_they_are_reached(tmp_path):
    from evaltk.data import examples_dir

    roots = _render._shown_roots({}, tmp_path / "out", data_as_given="")
    page = f"source: {examples_dir() / 'suite' / 'run.json'}; lock {examples_dir().resolve() / 'trajectory'}"
    assert _render.without_machine_paths(page, roots) == (
        "source: evaltk/data/examples/suite/run.json; lock evaltk/data/examples/trajectory")


def test_a_folder_name_is_replaced_only_where_it_is_that_folder():
    roots = [("/w/data", "data")]
    assert _render.without_machine_paths("/w/data/x.csv, /w/data2/y.csv and /w/data.", roots) == \
        "data/x.csv, /w/data2/y.csv and data."


def test_where_you_are_gives_a_level_only_where_it_holds_and_the_reason_elsewhere():
    # issue #20: the weekly report shows "where you are" only where check_use allows a level
    from tests.judges.test_level import _calibrate, _scored

    m, truth = _scored()
    held = [f"r{i}" for i in range(0, 400, 5)]
    cal = _calibrate(m, held, tuning=[f"r{i}" for i in range(1, 400, 5)])
    labels = pd.DataFrame({"trace_id": held, "measure": "x_task", "step": pd.array([pd.NA] * len(held), "Int64"),
                           "rater": "h1", "answer": truth[held].to_numpy()})
    t = report.level_table(cal, labels, measures=["x_task", "x_eff"])
    row = t.set_index("measure").loc["x_task"]
    assert row["ci_low"] <= (truth == "yes").mean() <= row["ci_high"] and row["n_labels"] == 80
    assert pd.isna(row["reason"])
    eff = t.set_index("measure").loc["x_eff"]
    assert pd.isna(eff["level"]) and "provisional" in eff["reason"]
    shown = report.show_levels(t)
    assert shown.loc["x_task", "where you are"].startswith(f"{row['level']:.3f} [")
    assert shown.loc["x_eff", "where you are"] == "—" and "provisional" in shown.loc["x_eff", "why not"]
    # the demo: every dimension provisional, so no level anywhere, each with its reason
    from evaltk import make_demo, score_traces

    demo = make_demo(n_traces=300, rng=0)
    sm = score_traces(demo.traces, demo.answers, demo.labels)
    d = report.level_table(sm, demo.labels, measures=["x_task", "x_safe", "x_eff", "x_ctx"])
    assert d["level"].isna().all() and d["reason"].str.len().gt(0).all()


# --------------------------------------------------------------------------- a scored dataset (--scored)


def _scored_dataset(root: Path, demo, n_parts: int = 3) -> Path:
    """``demo`` written as ``n_parts`` trace files with co-partitioned answers, scored by score_dataset."""
    from evaltk.scale import score_dataset

    traces = list(demo.traces)
    size = -(-len(traces) // n_parts)
    for i in range(n_parts):
        chunk = traces[i * size:(i + 1) * size]
        (root / "traces").mkdir(parents=True, exist_ok=True)
        (root / "answers").mkdir(exist_ok=True)
        (root / "traces" / f"part-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk))
        ids = {str(r["trace_id"]) for r in chunk}
        demo.answers[demo.answers["trace_id"].astype(str).isin(ids)].to_csv(root / "answers" / f"part-{i}.csv",
                                                                          index=False)
    demo.labels.to_csv(root / "labels.csv", index=False)
    score_dataset(root / "traces", root / "answers", root / "labels.csv", out=root / "scored")
    return root / "scored"


def test_scored_parameter_is_a_folder_or_a_url(tmp_path):
    assert report.check_params(scored="")["scored"] == ""
    assert report.check_params(scored=str(tmp_path))["scored"] == str(tmp_path.resolve())
    assert report.check_params(scored=f"file://{tmp_path}")["scored"] == str(tmp_path.resolve())
    assert report.check_params(scored="s3://bucket/scored")["scored"] == "s3://bucket/scored"
    with pytest.raises(UnreadableInput, match="field `scored`: no such folder"):
        report.check_params(scored=str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match="field `scored`"):
        report.check_params(scored=3)


def test_report_refuses_a_partial_scored_dataset_before_any_notebook(small_demo, tmp_path, capsys):
    from evaltk.cli._main import main

    scored = _scored_dataset(tmp_path / "store", small_demo)
    (scored / "_complete.json").unlink()
    (scored / "_partitions" / "part-1.json").unlink()
    code = main(["report", "--week", "2026-W48", "--scored", str(scored), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 65
    assert "no completion record _complete.json" in err and "2 of 3 partition(s) done (part-0, part-2)" in err
    assert "missing: part-1" in err and "--resume" in err
    assert not (tmp_path / "out").exists()  # refused before any notebook ran


def test_report_refuses_a_folder_that_is_not_a_scored_dataset(tmp_path, capsys):
    from evaltk.cli._main import main

    assert main(["report", "--scored", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 66
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", "--scored", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 65
    assert "0 partition(s) done" in capsys.readouterr().err


def test_scored_needs_a_notebook_that_reads_it(small_demo, tmp_path):
    scored = _scored_dataset(tmp_path / "store", small_demo, n_parts=1)
    with pytest.raises(InputError, match="--scored is read only by notebooks that declare a `scored` parameter; "
                                         "none of judge_selection, suite_gating does"):
        report.render_report(scored=scored, notebooks=["judge_selection", "suite_gating"], out=tmp_path / "out")


def test_the_runs_lean_from_a_scored_dataset_is_the_rows_lean(small_demo, tmp_path):
    """``WeekScores.directions``: the automatic tier's lean against the human tier, from the
    dataset's count tables, equals ``direction_of_error`` on the labelled runs' own values,
    paired trace by trace from the in-memory score rows (every count included)."""
    from evaltk.scoring import score_traces
    from evaltk.stats import direction_of_error

    scored = _scored_dataset(tmp_path / "store", small_demo)
    got = report.weekly_scores(report.data_sources(""), small_demo, scored=str(scored)).directions()
    mem = report.weekly_scores(report.data_sources(""), small_demo)
    pd.testing.assert_frame_equal(got, mem.directions())
    frame = score_traces(small_demo.traces, small_demo.answers, small_demo.labels).frame
    assert got["dimension"].tolist() == ["x_task", "x_eff"]
    for m, scale in (("x_task", "binary"), ("x_eff", "ordinal")):
        f = frame[frame["measure"] == m]
        wide = f.pivot(index="trace_id", columns="tier", values="value")
        humans = f.loc[f["tier"] == "human", "trace_id"].unique()  # every run with a human-tier row, valued or not
        judge = [None if pd.isna(v) else v for v in wide.loc[humans, "automatic"]]
        human = [None if pd.isna(v) else v for v in wide.loc[humans, "human"]]
        cats = sorted({v for v in judge + human if v is not None})
        want = direction_of_error(judge, human, scale=scale, positive=1.0, categories={c: c for c in cats},
                                  abstain=()).to_frame()
        row = got[got["dimension"] == m].drop(columns=["judge", "dimension"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(row, want)
    assert (got["n_pairs"] > 0).all() and (got["n_human_abstained"] > 0).all()


def test_week_scores_from_a_scored_dataset_say_what_needs_rows(small_demo, tmp_path):
    scored = _scored_dataset(tmp_path / "store", small_demo)
    wk = report.weekly_scores(report.data_sources(""), small_demo, scored=str(scored))
    assert wk.matrix is None and wk.scored == str(scored)
    assert [p.name for p in wk.files] == ["_complete.json", "manifest.json"]
    headline, gate = report.checkpoint_gate_headline(small_demo, baseline_agent="agent-v2",
                                                     candidate_agent="agent-v3", scores=wk)
    assert gate is None and "not available from a scored dataset" in headline and "pairs" in headline
    # where you are: the manifest still says why (every demo dimension is provisional), as in memory
    mem = report.weekly_scores(report.data_sources(""), small_demo)
    measures = ["x_task", "x_safe"]
    got = wk.levels(small_demo.labels, measures=measures)
    want = mem.levels(small_demo.labels, measures=measures)
    assert got["reason"].tolist() == want["reason"].tolist() and got["level"].isna().all()
    # the week's glance from the summaries equals the one from the rows
    sel = report.judge_selection(report.select_answers(small_demo.answers, measure="x_task"), small_demo.labels,
                                 small_demo.canaries, measure="x_task", n_resamples=50, rng=0)
    leans = report.judge_direction_table(report.select_answers(small_demo.answers, measure="x_task"),
                                         small_demo.labels, measures=["x_task"])
    ceil = report.human_ceiling_table(small_demo.labels, measures=["x_task"], n_resamples=50, rng=0, baseline=False)
    kw = dict(week="2026-W48", measure="x_task", selection=sel, directions=leans, ceilings=ceil)
    rows = report.week_at_a_glance(scores=mem.matrix.scores("automatic"), **kw)
    assert report.week_at_a_glance(scores=wk, **kw).equals(rows)
    assert report.week_at_a_glance(scores=mem, **kw).equals(rows)
