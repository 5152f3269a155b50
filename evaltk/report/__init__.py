"""Reports: the theme, the charts, the tables the notebooks show, parameters, data
sources, provenance and the papermill renderer of the weekly report.

One private module per concern (``_theme``, ``_format``, ``_charts``, ``_tables``,
``_params``, ``_sources``, ``_provenance``, ``_render``); the public names are these.
Rounding and styling happen here and nowhere else in evaltk (STYLE.md, 8): the table
functions return unrounded numbers, :func:`format_interval` and the ``format_*``
helpers turn them into text at display.
"""

from ._charts import (
    OUTCOME_COLORS,
    abstention_chart,
    agreement_chart,
    bias_forest_chart,
    confusion_heatmap,
    judge_accuracy_chart,
    judge_frontier_chart,
    suite_gating_chart,
    trajectory_grid_chart,
)
from ._format import (
    format_interval,
)
from ._params import (
    check_params,
    current_week,
)
from ._provenance import (
    Provenance,
    file_digest,
    provenance,
)
from ._render import (
    NOTEBOOKS,
    NotebookFailure,
    ReportFailed,
    notebooks_dir,
    render_report,
)
from ._sources import (
    DataSources,
    data_sources,
    demo_data,
    example_path,
    judgebench_presented,
)
from ._theme import (
    CAUSE_COLORS,
    THEME_NAME,
    chart_to_svg,
    use_theme,
)

__all__ = [
    "THEME_NAME",
    "CAUSE_COLORS",
    "use_theme",
    "chart_to_svg",
    "judge_frontier_chart",
    "judge_accuracy_chart",
    "bias_forest_chart",
    "agreement_chart",
    "confusion_heatmap",
    "abstention_chart",
    "suite_gating_chart",
    "trajectory_grid_chart",
    "OUTCOME_COLORS",
    "format_interval",
    "DataSources",
    "data_sources",
    "demo_data",
    "example_path",
    "judgebench_presented",
    "check_params",
    "current_week",
    "file_digest",
    "Provenance",
    "provenance",
    "NOTEBOOKS",
    "notebooks_dir",
    "NotebookFailure",
    "ReportFailed",
    "render_report",
]
