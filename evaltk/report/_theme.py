"""The evaltk chart theme: fonts, colours, SVG rendering, and pandas display options."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

THEME_NAME = "evaltk"

#: Set to ``svg`` in the environment of the kernels :func:`evaltk.report.render_report`
#: starts (their kernelspec's ``env``), so only the rendered report draws static SVG.
RENDERER_ENV = "EVALTK_CHART_RENDERER"

#: One colour per outcome in abstention charts: valued first, then the four causes.
CAUSE_COLORS: dict[str, str] = {
    "valued": "#4c78a8",
    "not_applicable": "#9d9d9d",
    "missing_evidence": "#e45756",
    "not_implemented": "#f2cf5b",
    "abstained": "#b279a2",
}

_ACCENT = "#4c78a8"
_MUTED = "#9d9d9d"
_WARN = "#e45756"
_BAND = "#72b7b2"


def _theme_config() -> dict[str, Any]:
    font = "DejaVu Sans, Helvetica, Arial, sans-serif"
    return {
        "config": {
            "font": font,
            "background": "white",
            "view": {"continuousWidth": 460, "continuousHeight": 260, "stroke": None},
            "title": {"anchor": "start", "fontSize": 14, "fontWeight": 600, "subtitleFontSize": 11,
                      "subtitleColor": "#555555", "offset": 8},
            "axis": {"labelFontSize": 11, "titleFontSize": 12, "titleFontWeight": 500, "labelLimit": 320,
                     "gridColor": "#eeeeee", "domainColor": "#888888", "tickColor": "#888888"},
            "legend": {"labelFontSize": 11, "titleFontSize": 11, "orient": "right"},
            "header": {"labelFontSize": 12, "titleFontSize": 12},
            "range": {"category": ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756",
                                   "#72b7b2", "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac"]},
            "point": {"size": 70, "filled": True},
            "text": {"fontSize": 11},
        }
    }


def use_theme(*, svg: bool | None = None) -> None:
    """Register and enable the evaltk altair theme; in the rendered report, charts as SVG.

    Called once at the top of every notebook.  The renderer belongs to the report:
    the kernels :func:`~evaltk.report.render_report` runs have ``EVALTK_CHART_RENDERER=svg``
    (:data:`RENDERER_ENV`), so there altair's ``svg`` renderer is enabled and each
    chart is stored as ``image/svg+xml`` (vl-convert): the HTML needs no JavaScript
    and reads offline.  Anywhere else (JupyterLab, a user's own kernel) altair's
    renderer is left as it is, so charts stay interactive, with their tooltips.
    ``svg=True`` / ``svg=False`` decides explicitly.  Also sets pandas' display
    options so tables show whole cells (``display.max_colwidth`` None, up to 200 rows).

    Examples
    --------
    >>> use_theme()
    >>> import altair as alt
    >>> alt.theme.active
    'evaltk'
    """
    import altair as alt

    if THEME_NAME not in alt.theme.names():
        alt.theme.register(THEME_NAME, enable=False)(_theme_config)  # type: ignore[arg-type]  # altair: a plain dict is a theme
    alt.theme.enable(THEME_NAME)
    if svg is None:
        svg = os.environ.get(RENDERER_ENV, "") == "svg"
    if svg:
        alt.renderers.enable("svg")
    # tables in a report show whole sentences (reasons, verdicts), never "..."
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_rows", 200)


def chart_to_svg(chart: Any) -> str:
    """The SVG text of an altair chart (vl-convert, no browser), themed like the report."""
    import vl_convert as vlc

    use_theme(svg=False)
    return vlc.vegalite_to_svg(chart.to_dict())
