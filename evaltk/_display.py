"""How a result shows itself in a notebook (one escaped HTML table, for every result class),
and how long work shows its progress (:func:`progress`: a tqdm bar and log lines, never print).

JupyterLab calls ``_repr_html_`` on the value a cell ends with.  Every result class of
evaltk gets it from :class:`HtmlTable` (its ``to_frame()`` as a table under the class
name); the score matrix adds its summary above its first rows (:func:`frame_html` once
per part).  Every cell, column name and caption is HTML-escaped: a trace id or a
reason read from a user's file is text, never markup.

This module imports nothing from evaltk, so every layer may use it.
"""

from __future__ import annotations

import html
import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["HtmlTable", "frame_html", "progress"]

T = TypeVar("T")

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


def progress(items: Iterable[T], *, desc: str, logger: logging.Logger, total: int | None = None,
             unit: str = "it") -> Iterator[T]:
    """``items``, one at a time, with a tqdm bar on stderr (shown only on a terminal or in a
    notebook) and an INFO line on ``logger`` when the work starts and when it ends.

    Library code reports long work this way, never with ``print``: the caller decides what
    to see through ``logging`` (the CLI shows INFO on stderr with ``--verbose``).

    Examples
    --------
    >>> import logging
    >>> sum(progress(range(4), desc="adding", logger=logging.getLogger("evaltk.doc")))
    6
    """
    from tqdm.auto import tqdm

    n = total if total is not None else (len(items) if hasattr(items, "__len__") else None)  # type: ignore[arg-type]
    logger.info("%s: %s %s", desc, "?" if n is None else n, unit)
    t0 = time.monotonic()
    done = 0
    for item in tqdm(items, desc=desc, total=n, unit=unit, disable=None, leave=False):
        done += 1
        yield item
    logger.info("%s: done, %d %s in %.1fs", desc, done, unit, time.monotonic() - t0)
