"""Provenance: what a notebook read (with digests), its parameters and the evaltk
version, shown at the foot of every page."""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._io import file_digest

_PROVENANCE_MIME = "application/vnd.evaltk.provenance+json"


@dataclass(frozen=True)
class Provenance:
    """What produced a report: parameters, evaltk version, and a SHA-256 per input file.

    Displayed in a notebook it renders as a table (HTML) and carries the same
    record as JSON under the ``application/vnd.evaltk.provenance+json`` mime type,
    which :func:`render_report` collects into ``run.json``.
    """

    notebook: str
    parameters: Mapping[str, Any]
    inputs: Mapping[str, str]  # path -> sha256
    evaltk_version: str
    python: str
    generated_at: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notebook": self.notebook,
            "evaltk_version": self.evaltk_version,
            "python": self.python,
            "generated_at": self.generated_at,
            "parameters": dict(self.parameters),
            "inputs": [{"path": p, "sha256": d} for p, d in self.inputs.items()],
            "notes": list(self.notes),
        }

    def to_frame(self) -> pd.DataFrame:
        rows = [("evaltk version", self.evaltk_version), ("python", self.python),
                ("generated at (UTC)", self.generated_at)]
        rows += [(f"parameter `{k}`", json.dumps(v, default=str)) for k, v in self.parameters.items()]
        rows += [(f"input {p}", f"sha256 {d}") for p, d in self.inputs.items()]
        rows += [("note", n) for n in self.notes]
        return pd.DataFrame(rows, columns=["item", "value"])

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td style='text-align:left'>{html.escape(str(a))}</td>"
            f"<td style='text-align:left;font-family:monospace'>{html.escape(str(b))}</td></tr>"
            for a, b in self.to_frame().itertuples(index=False)
        )
        return f"<table class='evaltk-provenance'><thead><tr><th>item</th><th>value</th></tr></thead><tbody>{body}</tbody></table>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/html": self._repr_html_(), "text/plain": self.to_frame().to_string(index=False),
                _PROVENANCE_MIME: self.to_dict()}


def provenance(notebook: str, parameters: Mapping[str, Any], inputs: Sequence[str | os.PathLike[str]] = (),
               *, notes: Sequence[str] = ()) -> Provenance:
    """Record a notebook's parameters, the evaltk version and the SHA-256 of each input file.

    Examples
    --------
    >>> p = provenance("weekly", {"week": "2026-W48"})
    >>> p.to_dict()["parameters"]
    {'week': '2026-W48'}
    """
    from .. import __version__

    digests: dict[str, str] = {}
    for p in inputs:
        digests[str(Path(p))] = file_digest(p)
    now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
    return Provenance(notebook=notebook, parameters=dict(parameters), inputs=digests,
                      evaltk_version=__version__, python=sys.version.split()[0], generated_at=now,
                      notes=tuple(notes))
