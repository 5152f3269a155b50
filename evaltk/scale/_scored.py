"""Reading a scored dataset's per-partition summaries (:mod:`evaltk.scale._summaries`) for the
weekly report: the completion record checked, every summary's digest checked, the summaries
combined; no score, run or ledger file opened."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import SchemaViolation, UnreadableInput
from ..stats import ScoreSummary, combine_all
from . import _remote
from ._remote import Root
from ._scale import _PARTS_DIR, _RUN_FILE, COMPLETE_FILE, COMPLETE_FORMAT, discover_partitions
from ._summaries import _AGENT_KEYS, _KEYS, SUMMARIES_DIR, ReportSummary


def _read_bytes(root: Root, rel: str) -> bytes:
    if root.remote:
        return _remote.read_bytes(root.at(rel), root.so)
    from .._io import read_bytes

    try:
        return read_bytes(root.at(rel))
    except UnreadableInput:
        raise SchemaViolation("integrity check `digest`: a recorded file is missing", file=root.at(rel)) from None


def _markers(root: Root) -> list[str]:
    return [r[len(_PARTS_DIR) + 1:-len(".json")] for r in root.find(_PARTS_DIR, (".json",))
            if not r.endswith("/" + _RUN_FILE)]


def _few(keys: Sequence[str], n: int = 5) -> str:
    return ", ".join(keys[:n]) + (f" and {len(keys) - n} more" if len(keys) > n else "")


def _partial_message(root: Root) -> str:
    """How far an interrupted run got: the partitions done and, when the store can be listed, those missing."""
    done = sorted(_markers(root))
    total: int | None = None
    missing: list[str] = []
    try:
        run = root.read_json(f"{_PARTS_DIR}/{_RUN_FILE}")
        total = int(run["partitions"])
        parts, _ = discover_partitions(run["traces"], storage_options=root.so)
        missing = sorted(p.key for p in parts if p.key not in set(done))
    except Exception:  # noqa: BLE001 - the store is elsewhere or gone: say what is known
        pass
    of = f" of {total}" if total is not None else ""
    msg = (f"integrity check `complete`: no completion record {COMPLETE_FILE}: the dataset is partial "
           f"(a `scale score` that failed, was interrupted or is still running): {len(done)}{of} partition(s) done")
    msg += f" ({_few(done)})" if done else ""
    if missing:
        msg += f"; missing: {_few(missing)}"
    elif total is not None and total > len(done):
        msg += f"; {total - len(done)} missing"
    return msg + "; finish it with `evaltk scale score ... --resume`"


def check_complete(out: str | Path, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The completion record of a scored dataset, refused unless the dataset is complete and
    carries every partition's summary (reads ``_complete.json`` only).

    Raises
    ------
    UnreadableInput
        ``out`` is not a folder.
    SchemaViolation
        No ``_complete.json`` (the message names the partitions done and missing), not a
        completion record, or a partition written without its summary.
    """
    root = Root(out, storage_options)
    if not root.isdir():
        raise UnreadableInput("not a scored dataset (a folder written by `evaltk scale score` expected)",
                              file=str(root))
    if not root.isfile(COMPLETE_FILE):
        raise SchemaViolation(_partial_message(root), file=str(root))
    marker = root.at(COMPLETE_FILE)
    doc = root.read_json(COMPLETE_FILE)
    try:
        if doc["format"] != COMPLETE_FORMAT:
            raise ValueError(f"format {doc['format']!r}")
        parts = [(str(p["key"]), {str(k): str(v) for k, v in p["files"].items()}) for p in doc["partitions"]]
        str(doc["manifest"])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SchemaViolation(f"integrity check `complete`: not a completion record ({e})", file=marker) from None
    lacking = [k for k, files in parts if f"scores/{k}.parquet" in files and f"{SUMMARIES_DIR}/{k}.json" not in files]
    if lacking:
        raise SchemaViolation(
            f"integrity check `summary`: {len(lacking)} partition(s) have no summary file ({_few(lacking)}): "
            f"the dataset was written by an evaltk that did not write {SUMMARIES_DIR}/; score it again with "
            "`evaltk scale score ... --overwrite`, or summarise its rows with `evaltk scale summarize`",
            file=marker)
    return doc


def read_report_summary(out: str | Path, *, storage_options: Mapping[str, Any] | None = None
                        ) -> tuple[ReportSummary, Any]:
    """The combined :class:`ReportSummary` of a scored dataset and its manifest, from the
    per-partition summaries only (no score, run or ledger file is opened).

    Checks the completion record (:func:`check_complete`), the manifest's and every
    summary file's SHA-256 against it.

    Raises
    ------
    UnreadableInput, SchemaViolation
        As :func:`check_complete`; a summary or the manifest missing or changed (``digest``).
    """
    from ..scoring import Manifest

    doc = check_complete(out, storage_options=storage_options)
    root = Root(out, storage_options)
    marker = root.at(COMPLETE_FILE)
    root.check_digest("manifest.json", str(doc["manifest"]), recorded_in=marker)
    manifest = Manifest.from_dict(root.read_json("manifest.json"), source=root.at("manifest.json"))
    pieces = []
    for part in doc["partitions"]:
        rel = f"{SUMMARIES_DIR}/{part['key']}.json"
        if rel not in part["files"]:
            continue  # a partition whose runs were all dropped: nothing scored, only its ledger
        data = _read_bytes(root, rel)
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if got != part["files"][rel]:
            raise SchemaViolation(f"integrity check `digest`: the file changed since {marker} recorded it "
                                  f"({part['files'][rel]} recorded, {got} now)", file=root.at(rel))
        try:
            d = json.loads(data)
        except ValueError as e:
            raise SchemaViolation(f"integrity check `summary`: not JSON ({e})", file=root.at(rel)) from None
        pieces.append(ReportSummary.from_dict(d, file=root.at(rel)))
    if not pieces:
        return ReportSummary(ScoreSummary(_KEYS), ScoreSummary(_AGENT_KEYS)), manifest
    return combine_all(pieces), manifest
