"""How results show in a notebook: every result class has the one ``_repr_html_``
(:class:`evaltk._display.HtmlTable`), readable tables, and every cell escaped."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import pandas as pd

import evaltk
from evaltk._display import HtmlTable, frame_html

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("stats", "data", "ingest", "scoring", "judges", "suite", "trajectory", "fixtures", "scale", "report")
#: Results shown some other way, with the reason.
OWN_DISPLAY = {"Provenance": "the report's provenance block: its own table and a MIME type run.json collects"}
#: Results made of several tables, without a single ``to_frame``.
MULTI_TABLE = {"ScoreMatrix", "SelectionResult", "GateResult"}

SCRIPT = "<script>alert(1)</script>"


def _public_classes():
    found = {}
    for name in ("evaltk", *(f"evaltk.{s}" for s in SUBPACKAGES)):
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", dir(mod)):
            obj = getattr(mod, attr, None)
            if inspect.isclass(obj) and obj.__module__.startswith("evaltk"):
                found[obj.__name__] = obj
    return found


def test_every_result_class_shares_the_one_html_repr():
    classes = _public_classes()
    results = {n: c for n, c in classes.items() if hasattr(c, "to_frame") or n in MULTI_TABLE}
    assert MULTI_TABLE <= set(results) and {"Manifest", "AgreementResult", "CeilingResult"} <= set(results)
    for name, cls in results.items():
        if name in OWN_DISPLAY:
            continue
        assert issubclass(cls, HtmlTable), f"{name} has to_frame but not the shared _repr_html_"
        assert cls._repr_html_ is HtmlTable._repr_html_, f"{name} overrides _repr_html_"


def _scored_with_hostile_id(tmp_path):
    demo = ROOT / "data" / "demo"
    lines = (demo / "traces.jsonl").read_text().splitlines()[:6]
    recs = [json.loads(x) for x in lines]
    recs[0]["trace_id"] = SCRIPT
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return evaltk.score_traces(path)


def test_the_score_matrix_shows_its_summary_and_rows_escaped(tmp_path):
    m = _scored_with_hostile_id(tmp_path)
    html = m._repr_html_()
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "summary per measure" in html and "coverage" in html
    assert html.count("<table") == 2
    assert "<th>trace_id</th>" in html


def test_a_manifest_and_an_estimate_show_as_escaped_tables(tmp_path):
    m = _scored_with_hostile_id(tmp_path)
    manifest = evaltk.Manifest.default(SCRIPT)._repr_html_()
    assert "Manifest: population &lt;script&gt;alert(1)&lt;/script&gt;" in manifest
    assert "<script>" not in manifest and "<th>direction_of_error</th>" in manifest
    est = evaltk.percent_agreement([["a", "a"], ["a", "b"], [SCRIPT, SCRIPT]])
    html = est._repr_html_()
    assert html.startswith("<style>") and "<b>AgreementResult</b>" in html
    assert "<th>statistic</th>" in html and "<script>" not in html
    assert len(m.manifest._repr_html_()) > 0


def test_frame_html_says_how_many_rows_it_left_out():
    html = frame_html(pd.DataFrame({"x": range(30)}), caption="c", max_rows=5)
    assert "5 of 30 rows shown" in html and html.count("<td>") == 5
