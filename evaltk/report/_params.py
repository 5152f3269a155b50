"""Notebook parameters: the ISO week and every parameter a notebook declares, checked
before any cell computes."""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, UnreadableInput

_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")


def current_week(today: _dt.date | None = None) -> str:
    """The ISO week of ``today`` as ``YYYY-Www``.

    Examples
    --------
    >>> current_week(_dt.date(2026, 11, 30))
    '2026-W49'
    """
    y, w, _ = (today or _dt.date.today()).isocalendar()
    return f"{y}-W{w:02d}"


def _check_week(week: Any) -> str:
    if week is None or week == "":
        return current_week()
    if not isinstance(week, str) or not _WEEK_RE.match(week):
        raise InputError(f"must be an ISO week like '2026-W48'; got {week!r}.", field="week")
    y, w = map(int, _WEEK_RE.match(week).groups())  # type: ignore[union-attr]
    last = _dt.date(y, 12, 28).isocalendar()[1]
    if not 1 <= w <= last:
        raise InputError(f"week {w} does not exist in {y} (it has {last} ISO weeks); got {week!r}.", field="week")
    return week


def _check_str_list(name: str, v: Any) -> list[str]:
    if isinstance(v, str) or not isinstance(v, list | tuple) or not all(isinstance(x, str) and x for x in v):
        raise InputError(f"must be a list of names (an empty list means all); got {v!r}.", field=name)
    return list(v)


def _check_unit(name: str, v: Any, *, open_: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(float(v)):
        raise InputError(f"must be a number; got {v!r}.", field=name)
    v = float(v)
    ok = 0.0 < v < 1.0 if open_ else 0.0 <= v <= 1.0
    if not ok:
        raise InputError(f"must be in {'(0, 1)' if open_ else '[0, 1]'}; got {v!r}.", field=name)
    return v


def check_params(**params: Any) -> dict[str, Any]:
    """Validate a notebook's parameters and return them normalised (for the record).

    Every notebook calls this right after its ``parameters`` cell, so a bad value
    stops the notebook in its second cell with a message that names the
    parameter.  Known names are checked by rule; any other name must hold a
    literal (str, number, bool, None, or a list / dict of those).

    Rules: ``week`` an ISO week ``YYYY-Www`` ("" means the current week);
    ``data_dir`` "" (embedded demo data) or an existing folder; ``scored`` "" or a
    scored dataset (an existing folder, or an fsspec URL); ``suite_run``,
    ``host_summary`` and names ending in ``_path`` / ``_file`` "" or an existing file;
    ``confidence_level`` in (0, 1); ``seed`` and ``n_resamples`` non-negative /
    positive ints; ``judges``, ``dimensions`` lists of names; ``thresholds`` and
    ``judge_costs`` mappings of name to number (thresholds in [0, 1]); names
    ending in ``_threshold`` or ``_score`` numbers in [0, 1].

    Raises
    ------
    evaltk.errors.InputError
        ``field`` names the parameter.

    Examples
    --------
    >>> check_params(week="2026-W48", confidence_level=0.9)["confidence_level"]
    0.9
    >>> check_params(confidence_level=1.5)
    Traceback (most recent call last):
    ...
    evaltk.errors.InputError: field `confidence_level`: must be in (0, 1); got 1.5.
    """
    return {name: _rule(name)(name, v) for name, v in params.items()}


def _rule(name: str) -> Callable[[str, Any], Any]:
    """The check for parameter ``name``: the first rule whose names match, else a literal."""
    for matches, check in _RULES:
        if matches(name):
            return check
    return _literal


def _folder(name: str, v: Any) -> str:
    if v is None or v == "":
        return ""
    if not isinstance(v, str):
        raise InputError(f"must be a folder path or '' for the demo data; got {v!r}.", field=name)
    p = Path(v).expanduser()
    if not p.is_dir():
        raise UnreadableInput(f"no such folder: {v!r}.", field=name)
    return str(p.resolve())


def _dataset(name: str, v: Any) -> str:
    """``scored``: "" (score in memory), a folder written by ``evaltk scale score`` (made
    absolute: the kernels run in the output folder), or an fsspec URL (kept as given)."""
    if v is None or v == "":
        return ""
    if not isinstance(v, str):
        raise InputError(f"must be a scored dataset (a folder or URL written by `evaltk scale score`) or ''; "
                         f"got {v!r}.", field=name)
    if "://" in v and not v.startswith("file://"):
        return v
    p = Path(v[len("file://"):] if v.startswith("file://") else v).expanduser()
    if not p.is_dir():
        raise UnreadableInput(f"no such folder: {v!r} (a scored dataset written by `evaltk scale score` "
                              "expected).", field=name)
    return str(p.resolve())


def _file(name: str, v: Any) -> str:
    if v is None or v == "":
        return ""
    if not isinstance(v, str):
        raise InputError(f"must be a file path or ''; got {v!r}.", field=name)
    if not Path(v).expanduser().is_file():
        raise UnreadableInput(f"no such file: {v!r}.", field=name)
    return str(Path(v).expanduser().resolve())


def _int(name: str, v: Any, *, positive: bool) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or (v <= 0 if positive else v < 0):
        raise InputError(f"must be a {'positive' if positive else 'non-negative'} int; got {v!r}.", field=name)
    return v


def _number_mapping(name: str, v: Any) -> dict[str, float]:
    """``thresholds`` (each in [0, 1]) and the cost / latency tables (each a non-negative number)."""
    if not isinstance(v, Mapping):
        raise InputError(f"must be a mapping of name to number; got {v!r}.", field=name)
    if name == "thresholds":
        return {str(k): _check_unit(f"{name}.{k}", x, open_=False) for k, x in v.items()}
    d = {}
    for k, x in v.items():
        if isinstance(x, bool) or not isinstance(x, int | float) or x < 0:
            raise InputError(f"must be a non-negative number; got {x!r}.", field=f"{name}.{k}")
        d[str(k)] = float(x)
    return d


def _literal(name: str, v: Any) -> Any:
    _check_literal(name, v)
    return v


def _is_path_param(name: str) -> bool:
    return name in ("data_dir", "suite_run", "host_summary") or name.endswith(("_path", "_file"))


#: (which names, their check), in precedence order: the first match decides.
_RULES: tuple[tuple[Callable[[str], bool], Callable[[str, Any], Any]], ...] = (
    (lambda n: n == "week", lambda n, v: _check_week(v)),
    (lambda n: n == "data_dir", _folder),
    (lambda n: n == "scored", _dataset),
    (_is_path_param, _file),
    (lambda n: n == "confidence_level", lambda n, v: _check_unit(n, v, open_=True)),
    (lambda n: n == "seed", lambda n, v: _int(n, v, positive=False)),
    (lambda n: n.startswith(("n_", "max_", "min_")), lambda n, v: _int(n, v, positive=True)),
    (lambda n: n in ("judges", "dimensions", "measures", "tasks"), _check_str_list),
    (lambda n: n in ("thresholds", "judge_costs", "judge_latency_ms"), _number_mapping),
    (lambda n: n.endswith(("_threshold", "_score")), lambda n, v: _check_unit(n, v, open_=False)),
)


def _check_literal(name: str, v: Any) -> None:
    if v is None or isinstance(v, str | bool | int | float):
        return
    if isinstance(v, list | tuple):
        for i, x in enumerate(v):
            _check_literal(f"{name}[{i}]", x)
        return
    if isinstance(v, Mapping):
        for k, x in v.items():
            if not isinstance(k, str):
                raise InputError(f"mapping keys must be strings; got {k!r}.", field=name)
            _check_literal(f"{name}.{k}", x)
        return
    raise InputError(f"must be a literal (text, number, bool, list or mapping); got {type(v).__name__}.", field=name)

