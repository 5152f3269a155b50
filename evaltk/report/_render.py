"""Charts in the evaltk theme, and the weekly report rendered from parameterised notebooks.

Two halves:

* **Chart builders** take small tidy frames (one row per judge, per task, per
  judge x dimension) and return an :class:`altair.Chart`; the one builder that
  receives a big table (:func:`abstention_chart`, fed a score matrix) aggregates
  it with :func:`evaltk.stats.summarize_frame` before it charts.  Rounding and
  styling happen here and nowhere else in evaltk (STYLE.md, 8).
* **The runner** :func:`render_report` converts each notebook under
  ``notebooks/`` (stored as jupytext ``py:percent``) to ``.ipynb``, executes it
  with papermill on a kernel that runs *this* interpreter, and renders code-free
  HTML with nbconvert (charts inline as SVG, no JavaScript, readable offline)
  into ``reports/<week>/``; the ``weekly`` notebook becomes ``index.html``.

``evaltk report`` is the command-line face of :func:`render_report`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import html
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._io import (
    atomic_dir,
    check_output,
    json_text,
    loads_json,
    loads_yaml,
    read_text,
    write_text_atomic,
)
from .._validation import require_extra
from ..errors import InputError, UnreadableInput
from ._params import _check_literal, _check_week, _is_path_param, check_params
from ._provenance import _PROVENANCE_MIME, file_digest
from ._sources import data_sources
from ._theme import RENDERER_ENV

#: ``evaltk.report`` logs one INFO line per notebook step; the CLI shows them on stderr.
logger = logging.getLogger("evaltk.report")

#: The notebooks, in the order they run; ``weekly`` last (it becomes index.html).
NOTEBOOKS: tuple[str, ...] = ("calibration", "judge_selection", "direction_of_error", "suite_gating", "weekly")
_INDEX = "weekly"
_KERNEL_NAME = "evaltk-report"


def notebooks_dir() -> Path:
    """Where the stored notebooks (``<name>.py``, jupytext py:percent) are.

    In order: ``$EVALTK_NOTEBOOKS``; ``evaltk/notebooks/`` inside the installed
    package (package data of a non-editable install); ``notebooks/`` beside the
    package (a source checkout or an editable install).
    """
    env = os.environ.get("EVALTK_NOTEBOOKS")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here / "notebooks", here.parent / "notebooks"]
    for c in candidates:
        if c.is_dir() and any((c / f"{n}.py").is_file() for n in NOTEBOOKS):
            return c
    raise UnreadableInput(
        "cannot find the report notebooks (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); set EVALTK_NOTEBOOKS to the folder holding weekly.py and the others."
    )


@dataclass(frozen=True)
class NotebookFailure:
    """One notebook that did not run to the end: which cell, and the error."""

    notebook: str
    cell: int | None
    execution_count: int | None
    cell_source: str
    error_name: str
    error_value: str
    section: str = ""

    def __str__(self) -> str:
        where = f"cell {self.cell}" if self.cell is not None else "before any cell ran"
        if self.execution_count is not None:
            where += f" (In [{self.execution_count}])"
        if self.section:
            where += f" under '{self.section}'"
        first = next((ln.strip() for ln in self.cell_source.splitlines() if ln.strip()), "")
        code = f" `{first[:80]}`" if first else ""
        return f"notebook `{self.notebook}` failed in {where}{code}: {self.error_name}: {self.error_value}"


class ReportFailed(Exception):
    """One or more notebooks failed; ``failures`` names each notebook, cell and error."""

    def __init__(self, failures: Sequence[NotebookFailure], out_dir: Path) -> None:
        self.failures = list(failures)
        self.out_dir = out_dir
        super().__init__("; ".join(str(f) for f in self.failures))


@contextlib.contextmanager
def _report_kernel() -> Iterator[str]:
    """A kernelspec that runs this interpreter, in a temporary JUPYTER_PATH entry.

    Whatever kernels the machine (or the user's ~/.local/share/jupyter) has, the
    notebooks run on the Python that runs evaltk, with evaltk importable.  The kernel
    writes nothing of the user's: no IPython history (``HistoryManager.enabled=False``)
    and its IPython profile in the temporary folder (``IPYTHONDIR``), not ``~/.ipython``.
    """
    from ipykernel.kernelspec import write_kernel_spec  # the report extra, checked by render_report

    with tempfile.TemporaryDirectory(prefix="evaltk-kernel-") as tmp:
        kdir = Path(tmp) / "kernels" / _KERNEL_NAME
        write_kernel_spec(kdir, overrides={"display_name": f"evaltk report (Python {sys.version.split()[0]})"})
        spec = json.loads((kdir / "kernel.json").read_text())
        spec["argv"][0] = sys.executable
        spec["argv"].append("--IPKernelApp.log_level=ERROR")  # no transport chatter on the terminal
        spec["argv"].append("--HistoryManager.enabled=False")  # no ~/.ipython history of a report run
        spec["env"] = {RENDERER_ENV: "svg"}  # static SVG charts in the report's kernels only
        (kdir / "kernel.json").write_text(json.dumps(spec))  # scratch: the temporary folder
        old = os.environ.get("JUPYTER_PATH")
        with _environ(JUPYTER_PATH=tmp + (os.pathsep + old if old else ""), IPYTHONDIR=str(Path(tmp) / "ipython")):
            yield _KERNEL_NAME


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Set environment variables for the block (the kernels papermill starts inherit them)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg %}
{%- block body_header -%}
{{ super() }}
{%- if resources.evaltk_index_link %}
<nav class="evaltk-nav"><a href="index.html">&larr; Weekly report (index)</a></nav>
{%- endif %}
{%- endblock body_header -%}
{% block extra_css %}
<style type="text/css">
  main { max-width: 1100px; margin: 0 auto; }
  .jp-RenderedSVG svg { max-width: 100%; height: auto; }
  table.dataframe, table.evaltk-provenance { font-size: 12px; }
  table.evaltk-provenance td { word-break: break-all; }
  nav.evaltk-nav { max-width: 1100px; margin: 8px auto; font-size: 14px; }
</style>
{% endblock extra_css %}
"""


def _html_exporter() -> Any:
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"evaltk_report.html.j2": _TEMPLATE})],
        template_file="evaltk_report.html.j2",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )


def _load_params(params: Mapping[str, Any] | str | os.PathLike[str] | None) -> tuple[dict[str, Any], str | None]:
    if params is None:
        return {}, None
    if isinstance(params, Mapping):
        return dict(params), None
    path = Path(params)
    if not path.exists():
        raise UnreadableInput("no such parameters file.", file=str(path))
    text = read_text(path)  # a regular file within the limits, strict UTF-8 (evaltk._io)
    if path.suffix.lower() == ".json":  # strict: a repeated key or NaN is refused, naming the line
        data = loads_json(text, file=str(path))
    else:  # the same rules in YAML (a repeated key, .nan, nesting past the limit)
        data = loads_yaml(text, file=str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError("must be a mapping of parameter names to values (or of notebook names "
                         "to such mappings).", file=str(path))
    return data, str(path)


def _plan_parameters(
    declared: Mapping[str, Mapping[str, Any]], given: Mapping[str, Any], source: str | None
) -> dict[str, dict[str, Any]]:
    """Split ``given`` into per-notebook parameters; refuse names no notebook declares."""
    per: dict[str, dict[str, Any]] = {nb: {} for nb in declared}
    known = set().union(*[set(d) for d in declared.values()]) if declared else set()
    for key, v in given.items():
        if key in declared and isinstance(v, Mapping):
            for k2, v2 in v.items():
                if k2 not in declared[key]:
                    raise InputError(
                        f"notebook `{key}` has no parameter `{k2}`; it takes: {', '.join(sorted(declared[key]))}.",
                        file=source, field=f"{key}.{k2}")
                _check_literal(f"{key}.{k2}", v2)
                per[key][k2] = v2
        elif key in known:
            _check_literal(key, v)
            for nb, names in declared.items():
                if key in names and key not in per[nb]:
                    per[nb][key] = v
        else:
            raise InputError(
                f"no notebook takes a parameter `{key}`; known parameters: {', '.join(sorted(known))}; "
                f"notebook sections: {', '.join(declared)}.", file=source, field=key)
    # notebook sections win over top-level values
    for key, v in given.items():
        if key in declared and isinstance(v, Mapping):
            per[key].update(v)
    return per


def render_report(
    *,
    week: str | None = None,
    data: str | os.PathLike[str] | None = None,
    params: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] = "reports",
    notebooks: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    start_timeout: int = 120,
    scored: str | os.PathLike[str] | None = None,
) -> Path:
    """Execute the report notebooks with papermill and render code-free HTML.

    Parameters
    ----------
    week : str, optional
        ISO week ``YYYY-Www`` labelling the report (default: the current week).
        Passed to every notebook as ``week``; the output folder is ``out/<week>``.
    data : path, optional
        A data folder passed to every notebook as ``data_dir`` (default: the
        embedded demo data).  Notebooks recognise, under it,
        ``agentrewardbench/annotations.csv`` and ``judgebench/judgments.csv``.
    params : mapping or path to a YAML/JSON file, optional
        Parameter values: top-level names apply to every notebook that declares
        them; a key naming a notebook (``calibration: {confidence_level: 0.9}``)
        applies to that notebook only.  A name no notebook declares is an error.
    out : path
        Root folder of the reports.
    notebooks : sequence of str, optional
        Subset of :data:`NOTEBOOKS` to run (default all).
    scored : path or URL, optional
        A scored dataset (the ``out`` of ``evaltk scale score`` / :func:`evaltk.scale.score_dataset`:
        a folder, or an fsspec URL whose credentials fsspec finds in its configuration or
        the environment) passed as ``scored`` to the notebooks that declare it (``weekly``,
        ``calibration``, ``direction_of_error``): their sections on this week's scored runs
        come from the dataset's per-partition summaries, no score row read (judge selection
        and suite gating read judges' answers and suite runs, not scores).  A dataset without its completion record is refused before any notebook runs.
    progress : callable, optional
        Called with one line of text per step; each line is also logged (INFO) on the
        ``evaltk.report`` logger.  A failed notebook's line says FAILED; the failure
        itself is on the :class:`ReportFailed` raised at the end (printed once by the CLI).

    Returns
    -------
    Path
        ``out/<week>/index.html`` (or the first rendered page when ``weekly`` is not run).

    Raises
    ------
    ReportFailed
        When a notebook fails; every other notebook still runs, the failing one is
        rendered too (its error is visible in its page), and ``run.json`` records it.
    InputError, UnreadableInput
        Bad ``week``, ``data``, ``scored`` or ``params`` (before any notebook runs).
    SchemaViolation
        ``scored`` is partial (no ``_complete.json``: the message names the partitions done
        and missing) or lacks its per-partition summaries.
    OutputRefused
        ``out/<week>`` is a file, or is (or holds) the data folder or the parameters file.

    Notes
    -----
    ``out/<week>`` is assembled in a temporary folder beside it and renamed into place
    when every notebook has run (a failed notebook's page included); a run that stops
    before that leaves no report there, not even an earlier one (docs/outputs.md).
    """
    require_extra("report", purpose="`evaltk report`")

    def say(msg: str) -> None:
        logger.info(msg)
        if progress is not None:
            progress(msg)

    week = _check_week(week)
    given, params_file = _load_params(params)  # the parameters file first: its problems are named
    data_dir = ""
    if data is not None and str(data) != "":
        data_dir = check_params(data_dir=str(data))["data_dir"]
    scored_ds = check_params(scored=str(scored))["scored"] if scored is not None and str(scored) else ""
    names = list(NOTEBOOKS if notebooks is None else notebooks)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown or not names:
        raise InputError(f"unknown notebook(s) {unknown}; choose among {', '.join(NOTEBOOKS)}.", field="notebooks")
    out_dir = Path(out) / week
    if data_dir:  # a folder holding none of the recognised data is refused before any notebook
        data_sources(data_dir)
    if scored_ds:  # so is a partial scored dataset, naming the partitions done and missing
        from ..scale import check_complete

        check_complete(scored_ds)
    local_scored = scored_ds if scored_ds and "://" not in scored_ds else None
    check_output(out_dir, [data, None if isinstance(params, Mapping) else params, local_scored], kind="dir")
    try:  # assembled in a temporary folder beside out/<week>, renamed when complete (docs/outputs.md)
        with atomic_dir(out_dir) as work:
            failures = _run_notebooks(work, names, given, params_file, week=week, data_dir=data_dir,
                                      say=say, start_timeout=start_timeout, final=out_dir,
                                      data_given=str(data) if data_dir else "", scored=scored_ds)
    except BaseException:  # nothing was published: an earlier report must not read as this run's
        if out_dir.is_dir():
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    if failures:
        raise ReportFailed(failures, out_dir)
    if _INDEX in names:
        return out_dir / "index.html"
    return out_dir / f"{names[0]}.html"


def _run_notebooks(out_dir: Path, names: Sequence[str], given: Mapping[str, Any], params_file: str | None, *,
                   week: str, data_dir: str, say: Callable[[str], None], start_timeout: int,
                   final: Path, data_given: str = "", scored: str = "") -> list[NotebookFailure]:
    """Execute and render every notebook into ``out_dir`` (the folder being assembled), then
    write ``run.json``; the failures."""
    from .. import __version__

    (out_dir / "notebooks").mkdir(parents=True, exist_ok=True)
    failures: list[NotebookFailure] = []
    records: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="evaltk-report-") as tmp, _report_kernel() as kernel:
        # 1. convert every notebook and read its declared parameters
        converted, declared = _convert_notebooks(names, Path(tmp))
        per = _notebook_parameters(declared, given, params_file, week=week, data_dir=data_dir, scored=scored)
        shown = _shown_roots(per, final, data_as_given=data_given, work=out_dir)
        # 2. execute and render
        exporter = _html_exporter()
        for i, name in enumerate(names, 1):
            t0 = time.monotonic()
            say(f"[{i}/{len(names)}] {name}: executing")
            failure = _execute(converted[name], out_dir, name, per[name], kernel, start_timeout)
            page, failure, prov = _render_page(out_dir, name, week, failure, exporter, shown)
            records[name] = {
                "status": "failed" if failure else "ok",
                "page": page.name if page.is_file() else None,
                "parameters": per[name],
                "provenance": prov,
                "error": str(failure) if failure else None,
                "seconds": round(time.monotonic() - t0, 2),
            }
            if failure:  # the failure itself is printed once, from ReportFailed
                failures.append(failure)
                say(f"[{i}/{len(names)}] {name}: FAILED ({time.monotonic() - t0:.1f}s)")
            else:
                say(f"[{i}/{len(names)}] {name}: ok ({time.monotonic() - t0:.1f}s) -> {final / page.name}")

    run = {
        "week": week,
        "evaltk_version": __version__,
        "python": sys.version.split()[0],
        "generated_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "data_dir": data_dir or None,
        "scored": sorted({str(v["scored"]) for v in per.values() if v.get("scored")}) or None,
        "params_file": None if params_file is None else {"path": params_file, "sha256": file_digest(params_file)},
        "notebooks": records,
    }
    write_text_atomic(out_dir / "run.json", json_text(run, default=str))
    return failures


def _convert_notebooks(names: Sequence[str], tmp: Path) -> tuple[dict[str, Path], dict[str, dict[str, Any]]]:
    """Each notebook's ``py:percent`` source as an ``.ipynb`` in ``tmp``, and the parameters it declares."""
    import jupytext
    import nbformat
    import papermill as pm

    converted: dict[str, Path] = {}
    declared: dict[str, dict[str, Any]] = {}
    for name in names:
        src = notebooks_dir() / f"{name}.py"
        if not src.is_file():
            raise UnreadableInput("notebook source is missing.", file=str(src))
        nb = jupytext.read(src, fmt="py:percent")
        nb.metadata["kernelspec"] = {"name": _KERNEL_NAME, "display_name": "evaltk report", "language": "python"}
        nb.metadata.setdefault("language_info", {"name": "python"})
        ipynb = tmp / f"{name}.ipynb"
        nbformat.write(nb, ipynb)
        converted[name] = ipynb
        declared[name] = pm.inspect_notebook(str(ipynb))
        if not declared[name]:
            raise InputError(f"notebook `{name}` has no cell tagged `parameters`.", file=str(src))
    return converted, declared


def _notebook_parameters(declared: Mapping[str, dict[str, Any]], given: Mapping[str, Any], params_file: str | None,
                         *, week: str, data_dir: str, scored: str = "") -> dict[str, dict[str, Any]]:
    """Every notebook's parameters, checked before any kernel starts."""
    per = _plan_parameters(declared, given, params_file)
    # relative paths resolve inside the parameters file's folder (or the current folder for a
    # mapping): the kernels run with out/<week> as their working folder
    base = Path(params_file).resolve().parent if params_file else Path.cwd()
    for values in per.values():
        for k, v in values.items():
            relative = isinstance(v, str) and v and "://" not in v and not Path(v).expanduser().is_absolute()
            if (_is_path_param(k) or k == "scored") and relative:
                values[k] = str((base / v).resolve())
    for name in declared:
        if "week" in declared[name]:
            per[name].setdefault("week", week)
        if "data_dir" in declared[name] and data_dir:
            per[name].setdefault("data_dir", data_dir)
        if "scored" in declared[name] and scored:
            per[name].setdefault("scored", scored)
        try:  # fail fast, before any kernel starts; the notebooks check again themselves
            check_params(**per[name])
        except InputError as e:
            raise type(e)(f"notebook `{name}`: {e.detail}", file=params_file, field=e.field) from None
    if scored and not any("scored" in d for d in declared.values()):
        raise InputError(f"--scored is read only by notebooks that declare a `scored` parameter; none of "
                         f"{', '.join(declared)} does.",
                         field="scored")
    # a data folder that holds none of the recognised data is refused here, not by five kernels
    for folder in sorted({str(v.get("data_dir") or "") for v in per.values()} - {""}):
        data_sources(folder)
    # so is a partial scored dataset (no completion record), naming the partitions done and missing
    for ds in sorted({str(v.get("scored") or "") for v in per.values()} - {""}):
        from ..scale import check_complete

        check_complete(ds)
    return per


def _shown_roots(per: Mapping[str, Mapping[str, Any]], out_dir: Path, *, data_as_given: str,
                 work: Path | None = None) -> list[tuple[str, str]]:
    """The absolute folders a page may mention and how a page names them instead, longest
    first: the data folder (as given, or by its name), the shipped examples, the notebooks,
    the output folder (and ``work``, where it is assembled), the current folder.  Pages
    show no absolute machine path."""
    from ..data import examples_dir

    roots: dict[str, str] = {}

    def add(folder: Path, label: str) -> None:
        for form in (folder.absolute(), folder.resolve()):  # as found, and through symlinks
            roots.setdefault(str(form), label)

    for v in per.values():
        folder = str(v.get("data_dir") or "")
        if folder:
            given = data_as_given if data_as_given and not Path(data_as_given).is_absolute() else Path(folder).name
            add(Path(folder).expanduser(), given.rstrip("/") or "data")
        ds = str(v.get("scored") or "")
        if ds and "://" not in ds:  # a scored dataset is named by its folder's name
            add(Path(ds), Path(ds).name or "scored")
    with contextlib.suppress(UnreadableInput):
        add(examples_dir(), "evaltk/data/examples")
    with contextlib.suppress(UnreadableInput):
        add(notebooks_dir(), "notebooks")
    add(out_dir, str(out_dir) if not out_dir.is_absolute() else out_dir.name)
    if work is not None:
        add(work, str(out_dir) if not out_dir.is_absolute() else out_dir.name)
    if len(Path.cwd().resolve().parts) > 2:  # never "/" or "/home": too short to be a machine path
        add(Path.cwd(), ".")
    return sorted(roots.items(), key=lambda kv: -len(kv[0]))


def without_machine_paths(text: str, roots: Sequence[tuple[str, str]]) -> str:
    """``text`` (HTML) with each absolute folder of ``roots`` replaced by how a reader names it.

    Examples
    --------
    >>> without_machine_paths("Source: /home/a/data/judgebench/judgments.csv", [("/home/a/data", "data")])
    'Source: data/judgebench/judgments.csv'
    """
    for folder, label in roots:
        for form in {folder, html.escape(folder)}:
            # the folder itself or a path under it, never a longer name that starts the same way
            pattern = re.escape(form) + r"(?=[/\\\s\"'<>),;:]|\.(?:\s|$|<)|$)"
            text = re.sub(pattern, label.replace("\\", "\\\\"), text)  # a literal replacement
    return text


def _execute(ipynb: Path, out_dir: Path, name: str, parameters: dict[str, Any], kernel: str,
             start_timeout: int) -> NotebookFailure | None:
    """Run one notebook into ``out_dir/notebooks``; the failure, if it failed."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    try:
        pm.execute_notebook(
            str(ipynb), str(out_dir / "notebooks" / f"{name}.ipynb"), parameters=parameters,
            kernel_name=kernel, progress_bar=False, log_output=False, cwd=str(out_dir), start_timeout=start_timeout,
        )
    except PapermillExecutionError as e:
        return NotebookFailure(name, int(e.cell_index), e.exec_count, e.source or "", e.ename, str(e.evalue))
    except Exception as e:  # kernel died, could not start, ...
        return NotebookFailure(name, None, None, "", type(e).__name__, str(e))
    return None


def _render_page(out_dir: Path, name: str, week: str, failure: NotebookFailure | None, exporter: Any,
                 shown: Sequence[tuple[str, str]] = ()) -> tuple[Path, NotebookFailure | None, list[Any]]:
    """The executed notebook as code-free HTML (a failed one too: its error shows on its page), the
    failure placed in its section, and the provenance the notebook recorded."""
    import nbformat

    page = out_dir / ("index.html" if name == _INDEX else f"{name}.html")
    executed = out_dir / "notebooks" / f"{name}.ipynb"
    if not executed.is_file():
        return page, failure, []
    result = nbformat.read(executed, as_version=4)
    if failure is not None and failure.cell is not None:
        failure = replace(failure, section=_section_of(result, failure.cell))
    body, _ = exporter.from_notebook_node(result, resources={"metadata": {"name": _title(name, week)},
                                                             "evaltk_index_link": name != _INDEX})
    write_text_atomic(page, without_machine_paths(body, shown))
    return page, failure, _collect_provenance(result)


def _title(name: str, week: str) -> str:
    return f"evaltk {name.replace('_', ' ')} report, {week}"


def _section_of(nb: Any, index: int) -> str:
    """The last markdown heading at or before cell ``index`` (how a reader finds the cell)."""
    for cell in reversed(nb.cells[: index + 1]):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.lstrip().startswith("#"):
                    return line.lstrip("# ").strip()
    return ""


def _collect_provenance(nb: Any) -> list[dict[str, Any]]:
    found = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if _PROVENANCE_MIME in data:
                found.append(data[_PROVENANCE_MIME])
    return found
