"""Where a report's data comes from: a data folder, the demo corpus, the examples shipped
with evaltk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_columns, check_frame
from ..data import examples_dir
from ..errors import InputError, UnreadableInput


@dataclass(frozen=True)
class DataSources:
    """What a notebook found under its ``data_dir`` (every path absolute, or None).

    Attributes
    ----------
    data_dir : str
        The folder searched ("" when none was given: demo data only).
    demo : Path or None
        A folder written by :func:`evaltk.data.write_demo` (``data_dir`` itself
        or ``data_dir/demo``); otherwise the demo corpus is generated in memory.
    agentrewardbench : Path or None
        ``agentrewardbench/annotations.csv``.
    agentrewardbench_leaderboard : Path or None
        ``agentrewardbench/judge-leaderboard.csv`` (the published table).
    judgebench : Path or None
        ``judgebench/judgments.csv``.
    suite_run : Path or None
        ``suite/run.json`` (or ``.yaml``) under ``data_dir``; else the example run
        shipped with evaltk (``data/examples/suite/run.json``) when present.
    trajectory : tuple of Path (lock, results, design or None), or None
        ``trajectory/lock.json`` and ``trajectory/results.json`` (and
        ``trajectory/design.json``) under ``data_dir``; else the shipped example
        (``data/examples/trajectory/``, the cohort that holds) when present.
    imported : Path or None
        A folder written by ``evaltk import`` (``import.json`` and ``traces.jsonl``,
        with ``answers.csv``): ``data_dir`` itself or ``data_dir/imported``.  The
        weekly page scores its runs (:func:`week_scores`).
    """

    data_dir: str
    demo: Path | None
    agentrewardbench: Path | None
    agentrewardbench_leaderboard: Path | None
    judgebench: Path | None
    suite_run: Path | None
    trajectory: tuple[Path, Path, Path | None] | None = None
    imported: Path | None = None

    def files(self) -> list[Path]:
        """The real-data files present (imported traces and answers, suite run, AgentRewardBench,
        JudgeBench, trajectory lock, results and design), in the order the weekly page reads
        them: its provenance inputs."""
        imp = [self.imported / f for f in _IMPORT_FILES if (self.imported / f).is_file()] if self.imported else []
        return [p for p in (*imp, self.suite_run, self.agentrewardbench, self.judgebench, *(self.trajectory or ()))
                if p]

    def describe(self) -> pd.DataFrame:
        """One row per source: what it is, and the file or "generated in memory"."""
        rows = [
            ("demo corpus", str(self.demo) if self.demo else "generated in memory (evaltk.data.make_demo)"),
            ("AgentRewardBench annotations", str(self.agentrewardbench) if self.agentrewardbench else "not found"),
            ("JudgeBench judgments", str(self.judgebench) if self.judgebench else "not found"),
            ("suite run", str(self.suite_run) if self.suite_run else "not found"),
            ("trajectory lock and results", ", ".join(str(p) for p in self.trajectory if p)
             if self.trajectory else "not found"),
            ("imported runs (evaltk import)", str(self.imported) if self.imported else "not found"),
        ]
        return pd.DataFrame(rows, columns=["source", "where"])


_DEMO_REQUIRED = ("traces.jsonl", "answers.csv", "labels.csv")
#: What marks a folder written by ``evaltk import`` (its traces and answers follow).
_IMPORT_FILES = ("import.json", "traces.jsonl", "answers.csv")


def _is_import_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in _IMPORT_FILES[:2])


def _is_demo_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).is_file() for f in _DEMO_REQUIRED)


def example_path(*parts: str) -> Path | None:
    """A file shipped under ``data/examples/`` (source checkout) or ``evaltk/data/examples/`` (package)."""
    try:
        p = examples_dir().joinpath(*parts)
    except UnreadableInput:
        return None
    return p if p.is_file() else None


def data_sources(data_dir: str = "") -> DataSources:
    """Find the data a report can use under ``data_dir`` ("" = the embedded demo only).

    Recognised: a demo folder (``traces.jsonl``, ``answers.csv``, ``labels.csv``)
    as ``data_dir`` or ``data_dir/demo``; a folder written by ``evaltk import``
    (``import.json``, ``traces.jsonl``) as ``data_dir`` or ``data_dir/imported``;
    ``agentrewardbench/annotations.csv``;
    ``judgebench/judgments.csv``; ``suite/run.json`` or ``suite/run.yaml``;
    ``trajectory/lock.json`` with ``trajectory/results.json`` (and ``design.json``).

    Raises
    ------
    evaltk.errors.UnreadableInput
        ``data_dir`` is not a folder, or holds none of the recognised files (the
        message lists what was looked for).
    """
    if not data_dir:
        return DataSources("", None, None, None, None, example_path("suite", "run.json"), _example_trajectory())
    root = Path(data_dir).expanduser().resolve()
    if not root.is_dir():
        raise UnreadableInput(f"no such folder: {data_dir!r}.", field="data_dir")
    demo = root if _is_demo_dir(root) else (root / "demo" if _is_demo_dir(root / "demo") else None)

    def f(*parts: str) -> Path | None:
        p = root.joinpath(*parts)
        return p if p.is_file() else None

    arb, lb = f("agentrewardbench", "annotations.csv"), f("agentrewardbench", "judge-leaderboard.csv")
    jb = f("judgebench", "judgments.csv")
    suite = f("suite", "run.json") or f("suite", "run.yaml")
    lock, results = f("trajectory", "lock.json"), f("trajectory", "results.json")
    traj = (lock, results, f("trajectory", "design.json")) if lock and results else None
    imported = root if _is_import_dir(root) else (root / "imported" if _is_import_dir(root / "imported") else None)
    if suite is None and imported is not None:
        suite = f(imported.name, "suite", "run.json") if imported != root else None
    if not any([demo, arb, jb, suite, traj, imported]):
        raise UnreadableInput(
            f"{root} holds none of the data the report reads: a demo folder ({', '.join(_DEMO_REQUIRED)}, "
            "in it or in demo/), a folder written by evaltk import (import.json, traces.jsonl), "
            "agentrewardbench/annotations.csv, judgebench/judgments.csv, "
            "suite/run.json, trajectory/lock.json with trajectory/results.json.", field="data_dir")
    return DataSources(str(root), demo, arb, lb, jb, suite or example_path("suite", "run.json"),
                       traj or _example_trajectory(), imported)


def _example_trajectory() -> tuple[Path, Path, Path | None] | None:
    lock, results = example_path("trajectory", "lock.json"), example_path("trajectory", "results-hold.json")
    return (lock, results, example_path("trajectory", "design.json")) if lock and results else None


def demo_data(sources: DataSources, *, n_traces: int = 3000, seed: int = 0) -> tuple[Any, list[Path], str]:
    """The demo corpus for a notebook: ``(DemoData, input files, a sentence saying where it came from)``.

    Read from ``sources.demo`` when there is one (its files are the inputs whose
    digests the report records); otherwise generated in memory by
    :func:`evaltk.data.make_demo` with ``n_traces`` and ``seed`` (deterministic;
    no input file).
    """
    from .. import data as datasets

    if sources.demo is not None:
        d = datasets.load_demo(sources.demo)
        files = sorted(p for p in sources.demo.iterdir() if p.is_file() and p.name in set(datasets.DEMO_FILES.values()))
        return d, files, f"demo corpus read from {sources.demo}"
    d = datasets.make_demo(n_traces=n_traces, rng=seed)
    note = (f"demo corpus generated in memory: evaltk.data.make_demo(n_traces={n_traces}, rng={seed}), "
            f"generator version {datasets.GENERATOR_VERSION}; synthetic data with planted judge behaviours")
    return d, [], note


def week_scores(sources: DataSources, demo: Any) -> tuple[Any, str]:
    """The week's score matrix and a sentence saying whose runs it scores.

    The runs of an imported folder (``sources.imported``: ``traces.jsonl`` and
    ``answers.csv`` as ``evaltk import`` wrote them) when there is one; otherwise the
    demo corpus's traces, answers and labels.
    """
    from ..scoring import score_traces

    if sources.imported is None:
        return score_traces(demo.traces, demo.answers, demo.labels), ""
    answers = sources.imported / "answers.csv"
    sm = score_traces(sources.imported / "traces.jsonl", answers if answers.is_file() else None)
    n = int(sm.frame["trace_id"].nunique())
    return sm, (f"scores, coverage and agents: the {n} runs imported in {sources.imported.name}/ "
                "(evaltk import; see its import.json); the judge sections and the checkpoint gate: ")


def judgebench_presented(judgments: pd.DataFrame) -> pd.DataFrame:
    """JudgeBench judgments in the frame the judge saw, for position bias.

    Trial 0 shows the pair in its original order, trial 1 swapped (the data's
    ``decision`` is already in the presented frame).  The label is flipped for
    trial 1 so that ``label_presented`` says which *shown* position is better.
    A judge with no position bias says ``A>B`` (first shown wins) as often as
    ``label_presented`` does; saying it more often is a first-position bias.

    Parameters
    ----------
    judgments : DataFrame
        From :func:`evaltk.data.load_judgebench` (``judge_model, pair_id,
        trial, label, decision``).

    Returns
    -------
    DataFrame
        ``judge, pair_id, trial, decision, label_presented``; ``decision`` keeps
        ``A=B`` and missing verdicts (abstentions for the bias statistics).

    Examples
    --------
    >>> j = pd.DataFrame({"judge_model": ["m", "m"], "pair_id": ["p", "p"], "trial": [0, 1],
    ...                   "label": ["A>B", "A>B"], "decision": ["A>B", "A>B"]})
    >>> judgebench_presented(j)[["trial", "decision", "label_presented"]].values.tolist()
    [[0, 'A>B', 'A>B'], [1, 'A>B', 'B>A']]
    """
    judgments = check_frame(judgments, "judgments")
    check_columns(judgments, ["judge_model", "pair_id", "trial", "label", "decision"], name="judgments")
    bad = ~judgments["trial"].isin([0, 1])
    if bad.any():
        raise InputError(f"trial must be 0 or 1; got {judgments.loc[bad, 'trial'].iloc[0]!r}.", field="trial")
    flip = {"A>B": "B>A", "B>A": "A>B"}
    label = judgments["label"].astype(str)
    presented = np.where(judgments["trial"].to_numpy() == 1, label.map(flip), label)
    return pd.DataFrame({"judge": judgments["judge_model"].to_numpy(), "pair_id": judgments["pair_id"].to_numpy(),
                         "trial": judgments["trial"].to_numpy(), "decision": judgments["decision"].to_numpy(),
                         "label_presented": presented})
