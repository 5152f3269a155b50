"""What an importer returns and how it is written: evaltk's trace, answer and suite files
with a ledger, one folder that every downstream command reads (docs/import-inspect.md,
docs/import-otel.md)."""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import _io
from ..errors import UnreadableInput
from ..values import ANSWER_TABLE_COLUMNS
from ._answers import INSTRUMENT_COLUMNS
from ._policy import ActionPolicy
from ._records import LEDGER_COLUMNS

#: Columns of an import ledger: evaltk's ledger columns and ``became`` (what a kept record
#: became: ``run``, ``step``, ``trial score``, ``answer``, ...).
IMPORT_LEDGER_COLUMNS: tuple[str, ...] = (*LEDGER_COLUMNS, "became")
#: Columns of the answers table an importer writes.
IMPORT_ANSWER_COLUMNS: tuple[str, ...] = (*ANSWER_TABLE_COLUMNS, "confidence", "cost", "latency_ms",
                                          "rater_version", *INSTRUMENT_COLUMNS)
#: The files :func:`write_import` writes, relative to its folder.
IMPORT_FILES: dict[str, str] = {"traces": "traces.jsonl", "answers": "answers.csv",
                                "suite": "suite/run.json", "ledger": "ledger.csv",
                                "manifest": "import.json"}


@dataclass(frozen=True)
class Imported:
    """Runs imported from another tool, in evaltk's formats.

    Attributes
    ----------
    source : str
        ``"inspect_ai"`` or ``"opentelemetry"``.
    traces : list of dict
        evaltk trace records (docs/traces.md), complete and in-progress.
    answers : DataFrame
        Judge answers (:data:`IMPORT_ANSWER_COLUMNS`), empty when none.
    suite : dict or None
        A suite run document (docs/suite.md), or None when the source has no trials.
    ledger : DataFrame
        One row per input record (:data:`IMPORT_LEDGER_COLUMNS`): kept, with what it
        became, or dropped with a reason.
    inputs : tuple of str
        The input files, as given.
    policy : ActionPolicy or None
    """

    source: str
    traces: list[dict[str, Any]]
    answers: pd.DataFrame
    suite: dict[str, Any] | None
    ledger: pd.DataFrame
    inputs: tuple[str, ...]
    policy: ActionPolicy | None = None

    def summary(self) -> pd.DataFrame:
        """Counts per ``kind, status, became`` and reason category (the text before the first ``:``)."""
        led = self.ledger
        cat = led["reason"].str.split(":", n=1).str[0]
        frame = pd.DataFrame({"kind": led["kind"], "status": led["status"],
                              "became": led["became"].fillna(""), "reason": cat.fillna("")})
        return frame.groupby(["kind", "status", "became", "reason"], sort=True, observed=True).size().rename("n").reset_index()


class _Ledger:
    """Ledger rows as they are decided."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def kept(self, source: str, record: Any, trace_id: Any, kind: str, became: str) -> None:
        self.rows.append((source, record, trace_id, kind, "kept", None, None, became))

    def dropped(self, source: str, record: Any, trace_id: Any, kind: str, reason: str,
                field: str | None = None) -> None:
        self.rows.append((source, record, trace_id, kind, "dropped", reason, field, None))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(IMPORT_LEDGER_COLUMNS), dtype=object)


def _answers_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in IMPORT_ANSWER_COLUMNS} for r in rows],
                        columns=list(IMPORT_ANSWER_COLUMNS), dtype=object)


def _mark_step(step: dict[str, Any], tool: str | None, policy: ActionPolicy | None) -> dict[str, Any]:
    """With a policy, set a step's ``consequential`` / ``needs_confirmation``: a tool call's
    from its name, ``false`` for any other step.  Without one, nothing is set (the run
    says ``consequential_declared: false``)."""
    if policy is not None:
        step["consequential"], step["needs_confirmation"] = (policy.classify(tool) if tool is not None
                                                             else (False, False))
    return step


def _policy_fields(policy: ActionPolicy | None) -> dict[str, Any]:
    """The run fields that say whether, and by which policy, consequential steps are declared."""
    if policy is None:
        return {"consequential_declared": False}
    return {"consequential_declared": True, "action_policy": policy.describe()}


def canonical_text(obj: Any) -> str:
    """:func:`evaltk._io.canonical_json` as text: tool arguments, ``decoding``."""
    return _io.canonical_json(obj).decode("utf-8")


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def check_import_paths(inputs: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                       overwrite: bool = False) -> None:
    """Refuse an output folder that is, or would overwrite, one of the inputs, or that holds
    files :func:`write_import` does not write (a previous import's folder is rewritten whole).

    The rule of every command that writes a folder (:func:`evaltk._io.check_output` with
    ``by=``; docs/outputs.md); ``overwrite=True`` (``--overwrite``) lets the import's files
    replace those of the same name in a folder that holds other things.

    Raises
    ------
    OutputRefused
        ``out`` is an input, a file :func:`write_import` writes is an input, ``out`` is a
        file, or a folder holding anything but an earlier import's files (and not
        ``overwrite``).  A ``ValueError``.
    """
    _io.check_output(out, list(inputs), kind="dir", writes=IMPORT_FILES.values(), by="evaltk import",
                     overwrite=overwrite)


def write_import(imported: Imported, out: str | os.PathLike[str], *, overwrite: bool = False) -> dict[str, Path]:
    """Write ``imported`` into the folder ``out`` (created when needed); return the paths.

    Files (:data:`IMPORT_FILES`): ``traces.jsonl`` (evaltk trace records, one per line),
    ``answers.csv`` (judge answers, header only when none), ``suite/run.json`` (when
    the source has trials), ``ledger.csv`` and ``import.json`` (the source, the inputs
    with their SHA-256, the policy, the counts).  Every file is written atomically.
    ``out`` is checked by :func:`check_import_paths` (``overwrite`` as there).
    """
    check_import_paths(imported.inputs, out, overwrite=overwrite)
    root = Path(out)
    paths = {k: root / v for k, v in IMPORT_FILES.items()}
    _io.write_text_atomic(paths["traces"], "".join(
        json.dumps(r, ensure_ascii=False, allow_nan=False, sort_keys=False) + "\n" for r in imported.traces))
    buf = io.StringIO()
    imported.answers.to_csv(buf, index=False, lineterminator="\n")
    _io.write_text_atomic(paths["answers"], buf.getvalue())
    if imported.suite is not None:
        _io.write_json(paths["suite"], imported.suite)
    else:  # a previous import's suite run would be read as this one's
        if paths["suite"].is_file():
            paths["suite"].unlink()
        del paths["suite"]
    buf = io.StringIO()
    imported.ledger.to_csv(buf, index=False, lineterminator="\n")
    _io.write_text_atomic(paths["ledger"], buf.getvalue())
    from .. import __version__

    led = imported.ledger
    try:
        inputs = [{"path": p, "sha256": _file_sha256(p)} for p in imported.inputs]
    except OSError as e:  # pragma: no cover - the input vanished between reading and writing
        raise UnreadableInput(f"cannot read input file: {e.strerror}", file=e.filename) from None
    _io.write_json(paths["manifest"], {
        "source": imported.source,
        "evaltk_version": __version__,
        "inputs": inputs,
        "action_policy": None if imported.policy is None else imported.policy.describe(),
        "counts": {
            "ledger_records": int(len(led)),
            "kept": int((led["status"] == "kept").sum()),
            "dropped": int((led["status"] == "dropped").sum()),
            "runs": sum(r["status"] == "complete" for r in imported.traces),
            "in_progress_runs": sum(r["status"] == "in_progress" for r in imported.traces),
            "answers": int(len(imported.answers)),
            "suite_tasks": 0 if imported.suite is None else len(imported.suite["tasks"]),
        },
        "files": {k: str(v.relative_to(root)) for k, v in paths.items()},
    })
    return paths
