"""Sections of a page that depend on which real data the data folder holds.

A section returns what it read (for the page's provenance) and what to display, so the
notebook only displays: the choices of which data is present, which rows a chart shows and
how a published table is read are made here, with tests, not in a notebook cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import read_csv_text

#: Shown where the data folder holds no AgentRewardBench annotations.
NO_AGENTREWARDBENCH = ("*No `agentrewardbench/annotations.csv` under the data folder: this section is empty. "
                       "Run with `--data ../shared/data` to include it.*")


def agentrewardbench_section(sources: Any, *, confidence_level: float = 0.95, n_resamples: int = 2000,
                             rng: Any = 0) -> tuple[list[Path], list[Any]]:
    """The calibration page's AgentRewardBench section: ``(files read, things to display)``.

    Without ``agentrewardbench/annotations.csv``: a note saying how to include it.  With it:
    the expert-expert ceiling per question (:func:`evaltk.agentrewardbench_ceiling`: percent
    agreement chart and the ceiling table).  With the leaderboard beside it as well: the
    authors' published judge precision with intervals on reconstructed counts
    (:func:`evaltk.report.published_precision_table`), the orderings its intervals support,
    and the leaderboard as published.
    """
    import altair as alt
    from IPython.display import Markdown

    from ..judges import agentrewardbench_ceiling
    from ._charts import agreement_chart
    from ._format import orderings_note, published_precision_note, show_ceiling
    from ._tables import published_precision_table

    if sources.agentrewardbench is None:
        return [], [Markdown(NO_AGENTREWARDBENCH)]
    files = [sources.agentrewardbench]
    arb = agentrewardbench_ceiling(sources.agentrewardbench, confidence_level=confidence_level,
                                   n_resamples=n_resamples, rng=rng)
    shown: list[Any] = [
        Markdown(f"Source: {sources.agentrewardbench}."),
        agreement_chart(arb[arb["statistic_name"] == "percent_agreement"], judge="question",
                        statistic_title="expert-expert percent agreement",
                        title="AgentRewardBench: the human ceiling per question"),
        show_ceiling(arb)]
    board = sources.agentrewardbench_leaderboard
    if board is None:
        return files, shown
    files.append(board)
    pub = published_precision_table(sources.agentrewardbench, board, confidence_level=confidence_level)
    shown += [
        Markdown(published_precision_note(pub)),
        alt.vconcat(agreement_chart(
            pub.table, statistic_title="precision of 'successful' verdicts (published, with reconstructed interval)",
            title="AgentRewardBench: published judge precision")),
        Markdown(orderings_note(pub.orderings)),
        read_csv_text(board).set_index("Judge")]
    return files, shown
