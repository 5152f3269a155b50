"""How a result shows itself in a notebook: one escaped HTML table, for every result class.

JupyterLab calls ``_repr_html_`` on the value a cell ends with.  Every result class of
evaltk gets it from :class:`HtmlTable` (its ``to_frame()`` as a table under the class
name); the score matrix adds its summary above its first rows (:func:`frame_html` once
per part).  Every cell, column name and caption is HTML-escaped: a trace id or a
reason read from a user's file is text, never markup.

This module imports nothing from evaltk, so every layer may use it.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["HtmlTable", "frame_html"]

_STYLE = ("<style>table.evaltk-table{border-collapse:collapse;font-size:12px}"
          "table.evaltk-table td,table.evaltk-table th{padding:2px 8px;text-align:left}</style>")


def frame_html(frame: Any, *, caption: str | None = None, max_rows: int = 20) -> str:
    """``frame`` as an escaped HTML table: no index, missing cells blank, at most ``max_rows`` rows.

    Examples
    --------
    >>> import pandas as pd
    >>> "&lt;b&gt;" in frame_html(pd.DataFrame({"trace_id": ["<b>"]}), caption="t")
    True
    """
    parts = [_STYLE]
    if caption:
        parts.append(f"<p><b>{html.escape(caption)}</b></p>")
    n = len(frame)
    shown = frame.head(max_rows)
    parts.append(shown.to_html(escape=True, index=False, na_rep="", border=0, classes="evaltk-table",
                               float_format=lambda x: f"{x:.4g}"))
    if n > max_rows:
        parts.append(f"<p>{max_rows} of {n:,} rows shown; <code>.to_frame()</code> has them all.</p>")
    return "".join(parts)


class HtmlTable:
    """Mixin: ``_repr_html_`` shows the result as escaped tables, each under its caption.

    By default one table, ``self.to_frame()`` under the class name; a result made of
    several tables (the score matrix, judge selection) overrides :meth:`_html_tables`.
    """

    def _html_tables(self) -> list[tuple[str, Any]]:
        return [(type(self).__name__, self.to_frame())]  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        return "".join(frame_html(frame, caption=caption) for caption, frame in self._html_tables())
