"""Evaluation task fixtures: ``task.yaml`` loading and validation, journeys, holdout hygiene.

Seed 004 ("Evaluation Task Schema").  A suite keeps its evaluation tasks as
fixture directories::

    <suite>/fixtures/<class>/<id>/task.yaml         single-task fixture
    <suite>/fixtures/trajectories/<id>/task.yaml    trajectory fixture (``kind: trajectory``)
    <suite>/holdout-ledger.jsonl                    who saw which holdout fixture, and retirements

:func:`validate_suite` checks every fixture before any model run and reports
every problem at once (a :class:`Finding` names the file, the line where YAML
gives one, the field and what was expected).  :func:`load_suite` gives one row
per fixture for notebooks.  :func:`load_journey` reads the journey document
whose phase numbers and names trajectory fixtures must use; the default ships
with evaltk (``evaltk/journeys/default.md``, nine phases).

Safety: YAML is read with a safe loader that constructs no objects and treats a
duplicate key as an error; a ``task.yaml`` larger than :data:`MAX_TASK_BYTES` or
not UTF-8 is a finding, not a crash; ``context`` file references must stay
inside the fixture's own directory (no ``..``, no absolute path, no symlink
pointing outside) and are never read.

evaltk's extension of the seed's schema: ``expected_answer_kind`` (one of
:data:`ANSWER_KINDS`) says what kind of answer is correct, so that the seed's
"adversarial coverage is mandatory" rule can be checked.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from .errors import InputError, SchemaViolation, UnreadableInput

__all__ = [
    "CLASSES",
    "BOUNDARIES",
    "VISIBILITIES",
    "TRAJECTORY_PATHS",
    "TERMINAL_STATES",
    "GATE_IDS",
    "GATE_VERDICTS",
    "ANSWER_KINDS",
    "MAX_TASK_BYTES",
    "LEDGER_NAME",
    "Phase",
    "Journey",
    "Finding",
    "ValidationReport",
    "default_journey",
    "load_journey",
    "load_task",
    "load_suite",
    "validate_suite",
    "read_holdout_ledger",
    "record_seen",
    "retire",
]

# --------------------------------------------------------------------------- vocabulary

#: The nine single-task classes (seed 004, ``class``).
CLASSES: tuple[str, ...] = (
    "bug-diagnosis", "feature-change", "refactor", "spec-ambiguity", "regression-prevention",
    "review-finding", "release-verification", "no-change-needed", "adversarial",
)
#: ``expected_boundary`` values.
BOUNDARIES: tuple[str, ...] = ("unit", "integration", "end-to-end", "production")
#: ``visibility`` values.
VISIBILITIES: tuple[str, ...] = ("public", "holdout")
#: Trajectory ``path`` values.
TRAJECTORY_PATHS: tuple[str, ...] = ("lightweight", "full", "refactor", "high-risk")
#: Trajectory ``terminal_state`` values.
TERMINAL_STATES: tuple[str, ...] = ("merged", "closed", "blocked", "released")
#: Gate ids a trajectory may record.
GATE_IDS: tuple[str, ...] = ("gate-1", "gate-2", "gate-3", "gate-4", "gate-5")
#: Gate verdicts.
GATE_VERDICTS: tuple[str, ...] = ("pass", "conditional", "blocked")
#: evaltk's extension: what kind of answer is correct.  The suite must cover all four.
ANSWER_KINDS: tuple[str, ...] = ("larger-change", "new-dependency", "process-change", "no-change")
_ANSWER_KIND_TEXT = {
    "larger-change": "a larger change",
    "new-dependency": "a new dependency",
    "process-change": "a non-code process change",
    "no-change": "no code change",
}

#: A ``task.yaml`` larger than this (bytes) is rejected unread.
MAX_TASK_BYTES = 1_048_576
#: The holdout ledger's file name, in the suite root.
LEDGER_NAME = "holdout-ledger.jsonl"
#: The folder (below the fixtures folder) that holds trajectory fixtures.
TRAJECTORY_DIR = "trajectories"

_TASK_REQUIRED = ("id", "class", "prompt", "ground_truth", "expected_boundary", "visibility")
_TASK_OPTIONAL = ("context", "harness_constraints", "scoring_notes", "adversarial_intent",
                  "expected_answer_kind", "kind")
_TRAJ_REQUIRED = ("kind", "id", "path", "prompt", "phases", "gates", "terminal_state",
                  "visibility")
_TRAJ_OPTIONAL = ("skipped_phases", "skipped_gates", "final_head_sha", "routing_selected",
                  "routing_skipped", "expected_answer_kind", "context", "harness_constraints",
                  "scoring_notes")
_SHA_RE = re.compile(r"[0-9a-fA-F]{40}")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

ERROR = "error"
WARNING = "warning"


def _one_of(values: Iterable[str]) -> str:
    return "one of: " + ", ".join(values)


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One problem in a suite.

    Attributes
    ----------
    file : str
        Path relative to the root given to :func:`validate_suite` (POSIX separators).
    line : int or None
        1-based line in ``file`` where YAML (or the ledger) gives one.
    field : str or None
        The top-level field at fault (a nested place such as ``context[1].file``
        is named in the message); for a duplicate key, the repeated key.
    message : str
        What is wrong.
    expected : str or None
        What would have been accepted.
    rule : str
        A short stable name of the rule (``required``, ``enum``, ``phase-name`` ...).
    severity : str
        ``"error"`` (the suite is invalid) or ``"warning"`` (reported, not fatal).
    fixture : str or None
        The fixture id when known.
    """

    file: str
    line: int | None
    field: str | None
    message: str
    expected: str | None = None
    rule: str = ""
    severity: str = ERROR
    fixture: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field,
                "message": self.message, "expected": self.expected, "rule": self.rule,
                "severity": self.severity, "fixture": self.fixture}

    def __str__(self) -> str:
        loc = self.file + (f":{self.line}" if self.line is not None else "")
        out = f"{loc}: {self.severity}"
        if self.field:
            out += f": field `{self.field}`"
        out += f": {self.message}"
        if self.expected:
            out += f" (expected {self.expected})"
        return out


_FINDING_COLUMNS = ["file", "line", "field", "message", "expected", "rule", "severity", "fixture"]


@dataclass(frozen=True)
class ValidationReport:
    """Everything :func:`validate_suite` found, at once.

    Attributes
    ----------
    root : str
        The root that was validated.
    journey : str
        Where the journey's phases came from.
    n_fixtures : int
        Number of ``task.yaml`` files found.
    findings : tuple of Finding
        Errors and warnings, sorted by file and line.
    answer_kinds : Mapping[str, int]
        Fixtures per answer kind (adversarial coverage).
    composition : Mapping[str, Mapping[str, int]]
        Suite composition, as the seed's runner reports it: fixtures per ``kind``,
        ``class``, ``visibility`` and trajectory ``path``.
    """

    root: str
    journey: str
    n_fixtures: int
    findings: tuple[Finding, ...] = ()
    answer_kinds: Mapping[str, int] = field(default_factory=dict)
    composition: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    @property
    def valid(self) -> bool:
        """True when there is no error (warnings do not invalidate a suite)."""
        return not self.errors

    def to_dicts(self, *, warnings: bool = True) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.findings if warnings or f.severity == ERROR]

    def to_frame(self) -> pd.DataFrame:
        """One row per finding with the columns of :class:`Finding`."""
        return pd.DataFrame(self.to_dicts(), columns=_FINDING_COLUMNS)


# --------------------------------------------------------------------------- journeys


@dataclass(frozen=True)
class Phase:
    """A journey phase: its number and its exact name."""

    number: int
    name: str

    @property
    def label(self) -> str:
        return f"{self.number}: {self.name}"


@dataclass(frozen=True)
class Journey:
    """The phases trajectory fixtures must name exactly.

    Attributes
    ----------
    phases : tuple of Phase
        In document order, unique numbers.
    source : str
        Where they were read from.
    """

    phases: tuple[Phase, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("a journey needs at least one phase.")
        nums = [p.number for p in self.phases]
        if len(set(nums)) != len(nums):
            raise ValueError(f"journey phase numbers must be unique; got {nums}.")

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(p.number for p in self.phases)

    def name_of(self, number: int) -> str | None:
        for p in self.phases:
            if p.number == number:
                return p.name
        return None

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"number": self.numbers, "name": [p.name for p in self.phases]})


_COLON_RE = re.compile(r"^(\d+):\s+(\S.*?)\s*$")
_NUMBERED_RE = re.compile(r"^(\d+)\.\s+(\S.*?)\s*$")
_HEADING_RE = re.compile(
    r"^(?:#{1,6}\s*)?(?:\*\*)?Phase\s+(\d+)\s*(?:—|–|-|:|\.)\s*(\S.*?)\s*(?:\*\*)?\s*$", re.I)
_TABLE_RE = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]*?\S[^|]*?)\s*\|")


def _clean_md_line(line: str) -> str:
    s = line.strip()
    s = re.sub(r"^(?:[-*+]\s+|#{1,6}\s+)", "", s)  # a bullet or heading mark before "1: Name"
    for mark in ("**", "__", "`"):
        if s.startswith(mark) and s.endswith(mark) and len(s) > 2 * len(mark):
            s = s[len(mark):-len(mark)].strip()
    return s


def _phase_sections(lines: Sequence[str]) -> set[int]:
    """0-based line numbers inside sections whose heading mentions "phase"."""
    inside: set[int] = set()
    level = 0  # heading level of the current phase section (0: not in one)
    in_fence = False
    for i, raw in enumerate(lines):
        st = raw.strip()
        if st.startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else re.match(r"^(#{1,6})\s", st)
        if m:
            lv = len(m[1])
            if level and lv <= level:
                level = 0
            if not level and re.search(r"phase", st, re.I):
                level = lv
            continue
        if level:
            inside.add(i)
    return inside


def _journey_from_markdown(text: str, source: str) -> Journey:
    lines = text.splitlines()
    colon: list[tuple[int, int, str]] = []
    heading: list[tuple[int, int, str]] = []
    sections = _phase_sections(lines)
    for i, raw in enumerate(lines, start=1):
        m = _HEADING_RE.match(raw.strip())
        if m:
            heading.append((i, int(m[1]), m[2]))
            continue
        m = _COLON_RE.match(_clean_md_line(raw))
        if m:
            colon.append((i, int(m[1]), m[2]))
    # `N: Name` lines under a heading that mentions phases win over any elsewhere
    scoped = [c for c in colon if c[0] - 1 in sections]
    if scoped:
        found = scoped
    elif colon:
        found = colon
    elif heading:
        found = heading
    else:
        # A numbered list "1. Name": the first run 1, 2, 3 ... after a heading that
        # mentions phases (or anywhere when there is none).
        start = 0
        for i, raw in enumerate(lines):
            if raw.lstrip().startswith("#") and re.search(r"phase", raw, re.I):
                start = i
                break
        found = []
        for i in range(start, len(lines)):
            m = _NUMBERED_RE.match(_clean_md_line(lines[i]))
            if not m:
                continue
            n = int(m[1])
            if not found and n != 1:
                continue
            if found and n != found[-1][1] + 1:
                if n == 1:  # a second list: stop at the first one
                    break
                continue
            found.append((i + 1, n, m[2]))
        if not found:  # a table whose first column is the phase number
            found = [(i + 1, int(m[1]), m[2]) for i, raw in enumerate(lines)
                     if (m := _TABLE_RE.match(raw.strip()))]
    if not found:
        raise SchemaViolation(
            "no phases found: expected lines `N: Phase Name` (or a numbered list `N. Phase Name`)",
            file=source, field="phases")
    return _journey_from_entries(found, source)


def _journey_from_entries(found: Sequence[tuple[int | None, int, str]], source: str) -> Journey:
    seen: dict[int, tuple[int | None, str]] = {}
    phases: list[Phase] = []
    for line, num, name in found:
        if num < 1:
            raise SchemaViolation(f"phase number {num} must be 1 or more", file=source,
                                  record=line, field="phases")
        if num in seen:
            if seen[num][1] == name:
                continue
            raise SchemaViolation(
                f"phase {num} is named twice: `{seen[num][1]}` (line {seen[num][0]}) and `{name}`",
                file=source, record=line, field="phases")
        seen[num] = (line, name)
        phases.append(Phase(num, name))
    return Journey(tuple(phases), source)


def _journey_from_yaml(text: str, source: str) -> Journey:
    data, node, problems = _parse_yaml(text)
    if problems:
        line, msg = problems[0]
        raise SchemaViolation(msg, file=source, record=line)
    if not isinstance(data, Mapping) or "phases" not in data:
        raise SchemaViolation("a YAML journey must be a mapping with a `phases:` list",
                              file=source, field="phases")
    items = data["phases"]
    if isinstance(items, Mapping) and items:  # {1: Name, 2: Name}
        item_lines = {}
        pn = _top_nodes(node).get("phases")
        if isinstance(pn, yaml.MappingNode):
            item_lines = {k.value: k.start_mark.line + 1 for k, _ in pn.value}
        found_m: list[tuple[int | None, int, str]] = []
        for key, name in items.items():
            num = int(key) if isinstance(key, int) and not isinstance(key, bool) else (
                int(key) if isinstance(key, str) and key.strip().isdigit() else None)
            if num is None or not isinstance(name, str) or not name.strip():
                raise SchemaViolation("a `phases` mapping needs number keys and text names",
                                      file=source, record=item_lines.get(str(key)),
                                      field=f"phases.{key}")
            found_m.append((item_lines.get(str(key)), num, name.strip()))
        return _journey_from_entries(found_m, source)
    if not isinstance(items, list) or not items:
        raise SchemaViolation("`phases` must be a non-empty list", file=source, field="phases")
    item_nodes = _top_nodes(node).get("phases")
    found: list[tuple[int | None, int, str]] = []
    for k, item in enumerate(items):
        line = None
        if isinstance(item_nodes, yaml.SequenceNode) and k < len(item_nodes.value):
            line = item_nodes.value[k].start_mark.line + 1
        where = f"phases[{k}]"
        if isinstance(item, Mapping) and len(item) == 1 and not any(
                k in item for k in ("number", "phase", "id", "n", "name", "title")):
            ((key, name),) = item.items()  # `- 1: Phase Name` read by YAML as {1: name}
            num = key if isinstance(key, int) and not isinstance(key, bool) else (
                int(key) if isinstance(key, str) and key.strip().isdigit() else None)
            if num is None or not isinstance(name, str) or not name.strip():
                raise SchemaViolation("each phase must be `N: Phase Name` or {number, name}",
                                      file=source, record=line, field=where)
            found.append((line, num, name.strip()))
        elif isinstance(item, Mapping):
            num = next((item[k] for k in ("number", "phase", "id", "n") if k in item), None)
            name = next((item[k] for k in ("name", "title") if k in item), None)
            if isinstance(num, str) and num.strip().isdigit():
                num = int(num)
            if isinstance(num, bool) or not isinstance(num, int) or not isinstance(name, str) \
                    or not name.strip():
                raise SchemaViolation("a phase mapping needs an integer `number` and a text `name`",
                                      file=source, record=line, field=where)
            found.append((line, num, name.strip()))
        elif isinstance(item, str):
            m = re.match(r"^\s*(\d+)\s*[:.]\s+(\S.*?)\s*$", item)
            if m:
                found.append((line, int(m[1]), m[2]))
            else:
                found.append((line, k + 1, item.strip()))
        else:
            raise SchemaViolation("each phase must be `N: Phase Name` or {number, name}",
                                  file=source, record=line, field=where)
    return _journey_from_entries(found, source)


def load_journey(path: str | os.PathLike[str]) -> Journey:
    """Read a journey document.

    Parameters
    ----------
    path : str or path-like
        A Markdown file whose phases are lines ``N: Phase Name`` (or, when there
        are none, headings ``### Phase N — Name`` or a numbered list ``N. Phase
        Name``), or a YAML file (``.yaml`` / ``.yml``) with a ``phases:`` list whose
        items are ``"N: Phase Name"`` strings or ``{number: N, name: ...}`` mappings.

    Returns
    -------
    Journey

    Raises
    ------
    UnreadableInput
        The file is missing, not a file, not UTF-8.
    SchemaViolation
        No phases, or one number with two names.

    Examples
    --------
    >>> j = default_journey()
    >>> len(j.phases), j.phases[0].label
    (9, '1: Intake and provenance')
    """
    p = Path(path)
    text = _read_text_file(p, what="journey")
    if p.suffix.lower() in (".yaml", ".yml"):
        return _journey_from_yaml(text, str(p))
    return _journey_from_markdown(text, str(p))


def default_journey() -> Journey:
    """The journey shipped with evaltk (``evaltk/journeys/default.md``, nine phases)."""
    res = resources.files("evaltk").joinpath("journeys/default.md")
    return _journey_from_markdown(res.read_text(encoding="utf-8"), "evaltk/journeys/default.md")


def _as_journey(journey: Journey | str | os.PathLike[str] | None) -> Journey:
    if journey is None:
        return default_journey()
    if isinstance(journey, Journey):
        return journey
    return load_journey(journey)


def _read_text_file(p: Path, *, what: str) -> str:
    try:
        if not p.is_file():
            raise UnreadableInput(f"{what} file not found" if not p.exists()
                                  else f"{what} path is not a file", file=str(p))
        raw = p.read_bytes()
    except OSError as e:
        raise UnreadableInput(f"cannot read {what}: {e.strerror or e}", file=str(p)) from None
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise UnreadableInput(f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})",
                              file=str(p), record=line) from None


# --------------------------------------------------------------------------- safe YAML


class _DuplicateKeys:
    """Mixin for a safe loader: records duplicate keys (with their lines), never overwrites."""

    duplicates: list[tuple[str, int, int]]  # key, line, first line

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                try:
                    key = self.construct_object(key_node, deep=True)
                    hash(key)
                except Exception:  # the base class reports unhashable keys
                    continue
                line = key_node.start_mark.line + 1
                if key in first:
                    self.duplicates.append((str(key), line, first[key]))
                else:
                    first[key] = line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


class _FixtureLoader(_DuplicateKeys, yaml.SafeLoader):
    """The pure-Python safe loader: used for messages, identical with or without libyaml."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates = []


if hasattr(yaml, "CSafeLoader"):
    class _FastLoader(_DuplicateKeys, yaml.CSafeLoader):  # type: ignore[name-defined]
        """libyaml's parser with the same safe constructor: about ten times faster."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates = []
else:  # pragma: no cover - PyYAML built without libyaml
    _FastLoader = _FixtureLoader  # type: ignore[misc, assignment]


_FLAT_LINE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(:[ \t]+)(.*?)(\r?)$")


def _quote_flat_values(text: str) -> str:
    """Read the seed's flat ``key: a: b | c: d`` lines as text.

    Seed 004 writes ``phases``, ``gates`` and the skip fields as pipe-separated
    ``N: Name`` entries on one ``key: value`` line.  Unquoted, such a value is
    not valid YAML ("mapping values are not allowed here").  A top-level line whose
    plain value contains ``": "`` (or ends with ``":"``) is quoted, and the file is
    parsed again; this is tried only when YAML rejects the file as written, so a
    file YAML accepts is always read as YAML.  Line numbers are kept.
    """
    out = []
    for line in text.split("\n"):
        m = _FLAT_LINE_RE.match(line)
        if m:
            value = m[3]
            comment = ""
            cut = re.search(r"[ \t]#", value)
            if cut:
                value, comment = value[: cut.start()], value[cut.start():]
            value = value.rstrip()
            if value and value[0] not in "'\"[{|>&*!%@`#" and (": " in value or ":\t" in value
                                                                 or value.endswith(":")):
                line = (m[1] + m[2] + "'" + value.replace("'", "''") + "'" + comment + m[4])
        out.append(line)
    return "\n".join(out)


def _load_yaml_text(text: str) -> tuple[Any, yaml.Node | None, list[tuple[int | None, str]]]:
    """YAML as written; only when YAML rejects it, again with the seed's flat lines quoted."""
    data, node, problems = _parse_yaml(text)
    if data is None and problems:
        quoted = _quote_flat_values(text)
        if quoted != text:
            return _parse_yaml(quoted)
    return data, node, problems


def _parse_yaml(text: str) -> tuple[Any, yaml.Node | None, list[tuple[int | None, str]]]:
    """Parse safely.  Returns (data, root node, [(line, problem)]); never raises on bad YAML.

    The libyaml parser reads a well-formed file; a file it rejects is parsed again by
    the pure-Python parser, so that the reported problem is the same on every install.
    """
    if _FastLoader is not _FixtureLoader:
        loader = _FastLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
            return data, node, [(line, f"duplicate key `{key}` (first at line {first})")
                                for key, line, first in loader.duplicates]
        except (yaml.YAMLError, RecursionError):
            pass
        finally:
            loader.dispose()
    loader = _FixtureLoader(text)
    problems: list[tuple[int | None, str]] = []
    data: Any = None
    node: yaml.Node | None = None
    try:
        node = loader.get_single_node()
        if node is not None:
            data = loader.construct_document(node)
        for key, line, first in loader.duplicates:
            problems.append((line, f"duplicate key `{key}` (first at line {first})"))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "invalid YAML"
        if e.context and e.problem:
            what = f"{e.context}, {e.problem}"
        problems.append((mark.line + 1 if mark else None, f"not valid YAML: {what}"))
        data, node = None, None
    except yaml.YAMLError as e:
        problems.append((None, f"not valid YAML: {e}"))
        data, node = None, None
    except RecursionError:
        problems.append((None, "not valid YAML: nested too deeply"))
        data, node = None, None
    finally:
        loader.dispose()
    return data, node, problems


def _top_nodes(node: yaml.Node | None) -> dict[str, yaml.Node]:
    out: dict[str, yaml.Node] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                out[k.value] = v  # the last one wins, as in the constructed mapping
    return out


def _top_lines(node: yaml.Node | None) -> dict[str, int]:
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if isinstance(k, yaml.ScalarNode):
                out[k.value] = k.start_mark.line + 1
    return out


# --------------------------------------------------------------------------- suite discovery


@dataclass
class _Fixture:
    file: Path                      # task.yaml on disk
    rel: str                        # task.yaml relative to root
    dir_rel: str                    # fixture folder relative to root
    depth: int                      # folders between the fixtures folder and task.yaml
    data: dict[str, Any] | None = None
    text: str | None = None
    nodes: dict[str, yaml.Node] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    kind: str | None = None         # "task" / "trajectory" / None (unparsed)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def fixture_id(self) -> str | None:
        v = self.meta.get("id")
        return v if isinstance(v, str) else None

    def add(self, field_: str | None, message: str, *, expected: str | None = None,
            rule: str, line: int | None = None, severity: str = ERROR) -> None:
        if line is None and field_ is not None:
            line = self.lines.get(field_.split("[", 1)[0].split(".", 1)[0])
        self.findings.append(Finding(self.rel, line, field_, message, expected, rule, severity,
                                     self.fixture_id))


@dataclass
class _Suite:
    root: Path
    fixtures_dir: Path
    suite_root: Path
    fixtures: list[_Fixture]
    findings: list[Finding]
    ledger: list[dict[str, Any]]
    journey: Journey


def _rel(p: Path, root: Path) -> str:
    try:
        r = p.relative_to(root).as_posix()
    except ValueError:
        r = p.as_posix()
    return r or "."


def _locate(root: str | os.PathLike[str]) -> tuple[Path, Path, Path]:
    """(root, fixtures folder, suite root) or UnreadableInput."""
    r = Path(root)
    try:
        if not r.exists():
            raise UnreadableInput("suite root not found", file=str(r))
        if not r.is_dir():
            raise UnreadableInput("suite root is not a directory", file=str(r))
        os.listdir(r)
    except PermissionError as e:
        raise UnreadableInput(f"cannot read suite root: {e.strerror}", file=str(r)) from None
    if (r / "fixtures").is_dir():
        return r, r / "fixtures", r
    suite_root = r.parent if r.name == "fixtures" and not (r / LEDGER_NAME).exists() else r
    return r, r, suite_root


def _discover(root: Path, fixtures_dir: Path) -> tuple[list[_Fixture], list[Finding]]:
    out: list[_Fixture] = []
    bare: list[Path] = []  # fixture-level folders (fixtures/<class>/<id>/) without task.yaml
    linked: list[Path] = []  # symlinked folders where fixtures are looked for: not followed
    for dirpath, dirnames, filenames in os.walk(fixtures_dir, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        d = Path(dirpath)
        depth = len(d.relative_to(fixtures_dir).parts)
        if "task.yaml" not in filenames and depth < 2:
            linked.extend(d / n for n in dirnames if (d / n).is_symlink())
        if "task.yaml" not in filenames:
            if depth == 2:
                bare.append(d)
            continue
        f = d / "task.yaml"
        out.append(_Fixture(f, _rel(f, root), _rel(d, root), depth))
        if depth == 2:
            dirnames[:] = []  # below a fixture folder is the fixture's own context
    out.sort(key=lambda fx: fx.rel)
    findings = []
    for d in linked:
        findings.append(Finding(_rel(d, root), None, None,
                                "folder is a symlink; fixtures are not looked for through symlinks",
                                "a real folder inside the suite", "symlink-escape"))
    for d in bare:
        rel = _rel(d, root)
        if not any(fx.dir_rel.startswith(rel + "/") for fx in out):
            findings.append(Finding(rel, None, None, "fixture folder has no task.yaml",
                                    f"{rel}/task.yaml", "missing-task"))
    return out, findings


def _read_fixture(fx: _Fixture) -> None:
    f = fx.file
    try:
        if f.is_symlink():
            base = f.parent.resolve()
            if not f.resolve().is_relative_to(base):
                fx.add(None, "task.yaml is a symlink that points outside the fixture directory",
                       expected="a regular file", rule="symlink-escape")
                return
        if not f.is_file():  # a FIFO or device would block or never end
            fx.add(None, "task.yaml is not a regular file", expected="a regular file",
                   rule="unreadable")
            return
        size = f.stat().st_size
        if size > MAX_TASK_BYTES:
            fx.add(None, f"file is {size} bytes, larger than the limit of {MAX_TASK_BYTES} bytes",
                   expected=f"at most {MAX_TASK_BYTES} bytes", rule="too-large")
            return
        raw = f.read_bytes()
    except OSError as e:
        fx.add(None, f"cannot read: {e.strerror or e}", rule="unreadable")
        return
    if len(raw) > MAX_TASK_BYTES:  # grew between stat and read
        fx.add(None, f"file is {len(raw)} bytes, larger than the limit of {MAX_TASK_BYTES} bytes",
               expected=f"at most {MAX_TASK_BYTES} bytes", rule="too-large")
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        fx.add(None, f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})",
               expected="UTF-8 text", rule="not-utf8", line=line)
        return
    text = text.lstrip("\ufeff")
    fx.text = text
    data, node, problems = _load_yaml_text(text)
    for line, msg in problems:
        rule = "duplicate-key" if msg.startswith("duplicate key") else "yaml"
        fld = msg.split("`")[1] if rule == "duplicate-key" else None
        fx.add(fld, msg, rule=rule, line=line,
               expected="each key once" if rule == "duplicate-key" else "valid YAML")
    if data is None and not problems:
        fx.add(None, "the file is empty", expected="a mapping of fields", rule="not-mapping",
               line=1)
        return
    if data is None:
        return
    if not isinstance(data, dict):
        fx.add(None, f"the top level is a {_type_name(data)}, not a mapping of fields",
               expected="a mapping of fields", rule="not-mapping", line=1)
        return
    fx.data = data
    fx.nodes = _top_nodes(node)
    fx.lines = _top_lines(node)


def _type_name(v: Any) -> str:
    if isinstance(v, Mapping):
        return "mapping"
    if isinstance(v, list):
        return "list"
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


# --------------------------------------------------------------------------- field checks

_MISSING = object()


def _text(fx: _Fixture, name: str, *, required: bool) -> str | None:
    """The field as text (a YAML number or date keeps the characters written)."""
    if name not in fx.data:
        if required:
            fx.add(name, f"required field `{name}` is missing", expected="a value",
                   rule="required", line=None)
        return None
    v = fx.data[name]
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            fx.add(name, f"required field `{name}` is empty", expected="a value", rule="required")
        return None
    if isinstance(v, str):
        return v.strip()
    node = fx.nodes.get(name)
    if isinstance(v, (bool, int, float, _dt.date)) and isinstance(node, yaml.ScalarNode):
        return node.value.strip()
    fx.add(name, f"`{name}` is a {_type_name(v)}, not text", expected="a text string",
           rule="type")
    return None


def _enum(fx: _Fixture, name: str, value: str | None, allowed: Sequence[str]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        fx.add(name, f"`{value}` is not an allowed `{name}`", expected=_one_of(allowed),
               rule="enum")
        return None
    return value


def _present(fx: _Fixture, name: str) -> Any:
    """A required field of any type (e.g. ``ground_truth``): present and non-empty."""
    if name not in fx.data:
        fx.add(name, f"required field `{name}` is missing", expected="a value", rule="required")
        return _MISSING
    v = fx.data[name]
    if v is None or (isinstance(v, (str, list, dict)) and not (v.strip() if isinstance(v, str)
                                                                   else v)):
        fx.add(name, f"required field `{name}` is empty", expected="a value", rule="required")
        return _MISSING
    return v


def _answer_kinds(fx: _Fixture) -> list[str]:
    name = "expected_answer_kind"
    if name not in fx.data or fx.data[name] is None:
        return []
    v = fx.data[name]
    items = v if isinstance(v, list) else [v]
    out: list[str] = []
    for k, item in enumerate(items):
        where = name if not isinstance(v, list) else f"{name}[{k}]"
        if not isinstance(item, str):
            fx.add(name, f"`{where}` is a {_type_name(item)}, not text",
                   expected=_one_of(ANSWER_KINDS), rule="type")
        elif item.strip() not in ANSWER_KINDS:
            fx.add(name, f"`{item.strip()}` is not an allowed `{name}`",
                   expected=_one_of(ANSWER_KINDS), rule="enum")
        else:
            out.append(item.strip())
    return out


def _unknown_fields(fx: _Fixture, known: Iterable[str]) -> None:
    known = set(known)
    for k in fx.data:
        if str(k) not in known:
            fx.add(str(k), f"unknown field `{k}` is ignored", rule="unknown-field",
                   severity=WARNING, line=fx.lines.get(str(k)))


def _looks_like_path(s: str) -> bool:
    s = s.strip()
    if not s or any(c.isspace() for c in s) or _URL_RE.match(s):
        return False
    return (s.startswith(("/", "\\", "~", "./", "../", ".\\", "..\\")) or "/" in s or "\\" in s
            or s == ".." or re.fullmatch(r"[A-Za-z]:.*", s) is not None
            or re.fullmatch(r"[\w.-]*\.[A-Za-z0-9]{1,8}", s) is not None)


def _context_refs(value: Any, where: str, explicit: bool, seen: set[int]
                  ) -> list[tuple[str, str, bool]]:
    """(field, reference, explicit) for every file reference under ``context``."""
    out: list[tuple[str, str, bool]] = []
    if isinstance(value, str):
        if explicit or ("\n" not in value.strip() and _looks_like_path(value)):
            out.append((where, value.strip(), explicit))
    elif isinstance(value, (list, dict)):
        if id(value) in seen:
            return out
        seen.add(id(value))
        if isinstance(value, list):
            for k, item in enumerate(value):
                out.extend(_context_refs(item, f"{where}[{k}]", explicit, seen))
        else:
            for key, item in value.items():
                ex = explicit or str(key) in ("file", "files", "path", "paths")
                out.extend(_context_refs(item, f"{where}.{key}", ex, seen))
    return out


def _check_context(fx: _Fixture) -> list[str]:
    """Check every context reference; returns the references that resolve inside."""
    if fx.data.get("context") is None:
        return []
    base = fx.file.parent
    ok: list[str] = []
    for where, ref, explicit in _context_refs(fx.data["context"], "context", False, set()):
        if not ref:
            continue
        parts = re.split(r"[\\/]+", ref)
        why = None
        if ref.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", ref) or os.path.isabs(ref):
            why = "an absolute path"
        elif ".." in parts:
            why = "it goes up with `..`"
        else:
            try:
                real = (base / ref).resolve(strict=False)
                if not real.is_relative_to(base.resolve()):
                    why = "a symlink points outside"
            except (OSError, RuntimeError):
                why = "it cannot be resolved (symlink loop)"
        at = "" if where == "context" else f" (at `{where}`)"
        if why:
            fx.add("context", f"reference `{ref}`{at} escapes the fixture directory ({why})",
                   expected="a path inside the fixture directory", rule="context-escape")
            continue
        if not os.path.lexists(base / ref):
            fx.add("context", f"reference `{ref}`{at} does not exist in the fixture directory",
                   expected="an existing file inside the fixture directory",
                   rule="context-missing", severity=ERROR if explicit else WARNING)
            continue
        ok.append(ref)
    return ok


def _entries(fx: _Fixture, name: str, *, required: bool) -> list[str] | None:
    """Pipe-separated entries (a YAML list of strings is accepted as well)."""
    v = fx.data.get(name)
    if name not in fx.data or v is None or (isinstance(v, (str, list)) and not v):
        if required:
            _text(fx, name, required=True)
        return None
    if isinstance(v, str):
        items = [p.strip() for p in v.split("|")]
    elif isinstance(v, list) and all(isinstance(x, str) for x in v):
        items = [p.strip() for p in v]
    else:
        fx.add(name, f"`{name}` is a {_type_name(v)}, not pipe-separated text",
               expected="pipe-separated entries", rule="type")
        return None
    items = [p for p in items if p]
    if not items and required:
        fx.add(name, f"required field `{name}` is empty", expected="a value", rule="required")
        return None
    return items


def _check_phases(fx: _Fixture, name: str, entries: list[str], journey: Journey, *,
                  skipped: bool) -> list[int]:
    """Numbers that name a journey phase (whether or not the name is right)."""
    nums: list[int] = []
    fmt = "`N: Phase Name: reason`" if skipped else "`N: Phase Name`"
    for entry in entries:
        m = re.fullmatch(r"(\d+)\s*:\s*(.*)", entry, re.S)
        if not m or not m[2].strip():
            fx.add(name, f"entry `{entry}` is not {fmt}", expected=fmt, rule="phase-format")
            continue
        num, rest = int(m[1]), m[2].strip()
        expected_name = journey.name_of(num)
        if expected_name is None:
            fx.add(name, f"entry `{entry}`: phase {num} is not in the journey",
                   expected=f"a phase number in {_ranges(journey.numbers)} ({journey.source})",
                   rule="phase-number")
            continue
        nums.append(num)
        if not skipped:
            if rest != expected_name:
                fx.add(name, f"entry `{entry}`: phase {num} is not named `{rest}` in the journey",
                       expected=f"`{num}: {expected_name}`", rule="phase-name")
            continue
        if rest == expected_name:
            fx.add(name, f"entry `{entry}`: skipped phase {num} has no reason",
                   expected=f"`{num}: {expected_name}: reason`", rule="skip-reason")
            continue
        if rest.startswith(expected_name) and rest[len(expected_name):].lstrip().startswith(":"):
            reason = rest[len(expected_name):].lstrip()[1:].strip()
            if not reason:
                fx.add(name, f"entry `{entry}`: skipped phase {num} has no reason",
                       expected=f"`{num}: {expected_name}: reason`", rule="skip-reason")
            continue
        got = rest.split(":", 1)[0].strip()
        fx.add(name, f"entry `{entry}`: phase {num} is not named `{got}` in the journey",
               expected=f"`{num}: {expected_name}: reason`", rule="phase-name")
    return nums


def _check_gates(fx: _Fixture, name: str, entries: list[str], *, skipped: bool
                 ) -> dict[str, str | None]:
    """Gate id -> verdict (None when skipped or unreadable) for entries with a known gate id."""
    out: dict[str, str | None] = {}
    fmt = "`gate-N: reason`" if skipped else "`gate-N: description: verdict`"
    for entry in entries:
        m = re.fullmatch(r"(gate-\d+)\s*:\s*(.*)", entry, re.S)
        if not m:
            fx.add(name, f"entry `{entry}` is not {fmt}", expected=fmt, rule="gate-format")
            continue
        gid, rest = m[1], m[2].strip()
        if gid not in GATE_IDS:
            fx.add(name, f"entry `{entry}`: `{gid}` is not a gate",
                   expected="gate-1, gate-2, gate-3, gate-4 or gate-5", rule="gate-id")
            continue
        if gid in out:  # one gate, one verdict: a second entry could contradict the first
            fx.add(name, f"entry `{entry}`: `{gid}` is recorded more than once",
                   expected="each gate id at most once", rule="gate-duplicate")
            continue
        if skipped:
            out[gid] = None
            if not rest:
                fx.add(name, f"entry `{entry}`: skipped {gid} has no reason",
                       expected=fmt, rule="skip-reason")
            continue
        desc, sep, verdict = rest.rpartition(":")
        desc, verdict = desc.strip(), verdict.strip()
        if not sep:
            msg = "has no description" if rest in GATE_VERDICTS else "has no verdict"
            fx.add(name, f"entry `{entry}` {msg}", expected=fmt, rule="gate-format")
            out[gid] = rest if rest in GATE_VERDICTS else None
            continue
        if not desc:
            fx.add(name, f"entry `{entry}` has no description", expected=fmt, rule="gate-format")
        if verdict not in GATE_VERDICTS:
            fx.add(name, f"entry `{entry}`: verdict `{verdict}` is not allowed",
                   expected=_one_of(GATE_VERDICTS), rule="gate-verdict")
            out[gid] = None
        else:
            out[gid] = verdict
    return out


def _ranges(nums: Iterable[int]) -> str:
    ns = sorted(nums)
    if ns and ns == list(range(ns[0], ns[-1] + 1)) and len(ns) > 2:
        return f"{ns[0]}..{ns[-1]}"
    return ", ".join(map(str, ns))


def _check_layout(fx: _Fixture, *, trajectory: bool, klass: str | None) -> None:
    parts = Path(fx.dir_rel).parts
    layout = "fixtures/trajectories/<id>/task.yaml" if trajectory \
        else "fixtures/<class>/<id>/task.yaml"
    if fx.depth != 2:
        fx.add(None, f"task.yaml is not at {layout}", expected=layout, rule="layout", line=None)
        return
    parent = parts[-2]
    if trajectory:
        if parent != TRAJECTORY_DIR:
            fx.add("kind", f"trajectory fixture is under `{parent}/`, not `{TRAJECTORY_DIR}/`",
                   expected=layout, rule="layout")
    elif parent == TRAJECTORY_DIR:
        fx.add("kind", f"fixture under `{TRAJECTORY_DIR}/` does not say `kind: trajectory`",
               expected="kind: trajectory", rule="layout")
    elif klass is not None and parent != klass:
        fx.add("class", f"class `{klass}` does not match its folder `{parent}/`",
               expected=layout, rule="layout")


def _validate_fixture(fx: _Fixture, journey: Journey) -> None:
    _read_fixture(fx)
    if fx.data is None:
        fx.meta["id"] = None
        return
    d = fx.data
    kind_raw = d.get("kind")
    fid = _text(fx, "id", required=True)
    fx.meta["id"] = fid
    # findings added before the id was known carry no fixture id: fix them up
    fx.findings[:] = [Finding(f.file, f.line, f.field, f.message, f.expected, f.rule, f.severity,
                              fid) for f in fx.findings]
    dirname = Path(fx.dir_rel).name
    if fid is not None and fid != dirname:
        fx.add("id", f"id `{fid}` does not match its directory `{dirname}`",
               expected=f"id: {dirname}", rule="id-directory")
    trajectory = False
    if kind_raw is not None:
        kind = _text(fx, "kind", required=False)
        if kind == "trajectory":
            trajectory = True
        elif kind is not None:
            fx.add("kind", f"`{kind}` is not an allowed `kind`",
                   expected="kind: trajectory, or no `kind` for a single-task fixture",
                   rule="enum")
            trajectory = Path(fx.dir_rel).parent.name == TRAJECTORY_DIR
    fx.kind = "trajectory" if trajectory else "task"
    fx.meta["kind"] = fx.kind
    fx.meta["visibility"] = _enum(fx, "visibility", _text(fx, "visibility", required=True),
                                  VISIBILITIES)
    fx.meta["prompt"] = _text(fx, "prompt", required=True)
    fx.meta["expected_answer_kind"] = _answer_kinds(fx)
    fx.meta["context_files"] = _check_context(fx)
    if trajectory:
        _validate_trajectory(fx, journey)
        _unknown_fields(fx, _TRAJ_REQUIRED + _TRAJ_OPTIONAL)
        _check_layout(fx, trajectory=True, klass=None)
    else:
        klass = _enum(fx, "class", _text(fx, "class", required=True), CLASSES)
        fx.meta["class"] = klass
        fx.meta["boundary"] = _enum(fx, "expected_boundary",
                                    _text(fx, "expected_boundary", required=True), BOUNDARIES)
        _present(fx, "ground_truth")
        intent = _text(fx, "adversarial_intent", required=False)
        fx.meta["adversarial_intent"] = intent
        if klass == "adversarial" and intent is None:
            fx.add("adversarial_intent", "an adversarial fixture does not state its trap",
                   expected="`adversarial_intent`, e.g. \"reflexive deletion\"",
                   rule="adversarial-intent", severity=WARNING, line=fx.lines.get("class"))
        _unknown_fields(fx, _TASK_REQUIRED + _TASK_OPTIONAL)
        _check_layout(fx, trajectory=False, klass=klass)


def _validate_trajectory(fx: _Fixture, journey: Journey) -> None:
    path = _enum(fx, "path", _text(fx, "path", required=True), TRAJECTORY_PATHS)
    fx.meta["journey_path"] = path
    fx.meta["terminal_state"] = _enum(fx, "terminal_state",
                                      _text(fx, "terminal_state", required=True), TERMINAL_STATES)
    phases = _entries(fx, "phases", required=True)
    traversed = _check_phases(fx, "phases", phases, journey, skipped=False) if phases else []
    sk_entries = _entries(fx, "skipped_phases", required=False)
    skipped = (_check_phases(fx, "skipped_phases", sk_entries, journey, skipped=True)
               if sk_entries else [])
    both = sorted(set(traversed) & set(skipped))
    if both:
        fx.add("skipped_phases",
               f"phase {', '.join(map(str, both))} is both traversed (in `phases`) and skipped",
               expected="each phase either traversed or skipped", rule="phase-conflict")
    gates_e = _entries(fx, "gates", required=True)
    gates = _check_gates(fx, "gates", gates_e, skipped=False) if gates_e else {}
    sg_entries = _entries(fx, "skipped_gates", required=False)
    sgates = _check_gates(fx, "skipped_gates", sg_entries, skipped=True) if sg_entries else {}
    gboth = sorted(set(gates) & set(sgates))
    if gboth:
        fx.add("skipped_gates", f"{', '.join(gboth)} is both recorded (in `gates`) and skipped",
               expected="each gate either recorded or skipped", rule="gate-conflict")
    sha = _text(fx, "final_head_sha", required=False)
    if sha is not None and not _SHA_RE.fullmatch(sha):
        fx.add("final_head_sha", f"`{sha}` is not a full 40-hex commit id",
               expected="40 hexadecimal characters", rule="head-sha")
    if path == "full":
        if phases is not None:
            missing = [n for n in journey.numbers if n not in set(traversed)]
            if missing:
                fx.add("phases", f"a full-path fixture does not traverse phase "
                       f"{', '.join(map(str, missing))}",
                       expected=f"all {len(journey.phases)} journey phases in `phases`",
                       rule="full-path")
        if gates_e is not None:
            gmissing = [g for g in GATE_IDS if g not in gates]
            if gmissing:
                fx.add("gates", f"a full-path fixture does not record {', '.join(gmissing)}",
                       expected="gate-1 .. gate-5 in `gates`", rule="full-path")
        raw_sha = (fx.data or {}).get("final_head_sha")
        if sha is None and not isinstance(raw_sha, (dict, list)):  # a wrong type is reported
            fx.add("final_head_sha", "a full-path fixture does not bind `final_head_sha`",
                   expected="a full 40-hex commit id", rule="full-path",
                   line=fx.lines.get("final_head_sha", fx.lines.get("path")))
    fx.meta["phases"] = traversed
    fx.meta["skipped_phases"] = skipped
    fx.meta["gates"] = dict(gates)
    fx.meta["skipped_gates"] = list(sgates)
    fx.meta["final_head_sha"] = sha
    fx.meta["routing_selected"], fx.meta["routing_skipped"] = _routing(fx)


def _routing(fx: _Fixture) -> tuple[list[str], list[dict[str, str]]]:
    """Parsed routing metadata.  Not validated: the seed keeps it for human review only."""
    d = fx.data or {}
    sel = d.get("routing_selected")
    if isinstance(sel, list):
        selected = [str(x).strip() for x in sel if str(x).strip()]
    elif sel is None:
        selected = []
    else:
        selected = [p.strip() for p in str(sel).split(",") if p.strip()]
    sk = d.get("routing_skipped")
    raw = sk if isinstance(sk, list) else ([] if sk is None else str(sk).split("|"))
    skipped = []
    for item in raw:
        skill, _, reason = str(item).partition(":")
        if skill.strip():
            skipped.append({"skill": skill.strip(), "reason": reason.strip()})
    return selected, skipped


# --------------------------------------------------------------------------- holdout ledger


def _ledger_path(suite_root: Path) -> Path:
    return suite_root / LEDGER_NAME


def _parse_ledger(path: Path, root: Path) -> tuple[list[dict[str, Any]], list[Finding]]:
    rel = _rel(path, root)
    if not path.exists():
        return [], []
    findings: list[Finding] = []
    try:
        if path.stat().st_size > 64 * MAX_TASK_BYTES:
            return [], [Finding(rel, None, None, "the ledger is larger than 64 MiB",
                                rule="too-large")]
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except OSError as e:
        return [], [Finding(rel, None, None, f"cannot read: {e.strerror or e}", rule="unreadable")]
    except UnicodeDecodeError as e:
        return [], [Finding(rel, raw[: e.start].count(b"\n") + 1, None,
                            f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})",
                            expected="UTF-8 text", rule="not-utf8")]
    records: list[dict[str, Any]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue

        def bad(fld: str | None, msg: str, exp: str, i: int = i) -> None:
            findings.append(Finding(rel, i, fld, msg, exp, "ledger"))

        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            bad(None, f"not a JSON object: {e.msg}", "one JSON object per line")
            continue
        if not isinstance(rec, dict):
            bad(None, f"a JSON {_type_name(rec)}, not an object", "one JSON object per line")
            continue
        ok = True
        event = rec.get("event")
        if event not in ("seen", "retired"):
            bad("event", f"`{event}` is not an allowed `event`", "one of: seen, retired")
            ok = False
        if not isinstance(rec.get("id"), str) or not rec["id"].strip():
            bad("id", "`id` is missing or not text", "the fixture id")
            ok = False
        if event == "seen" and (not isinstance(rec.get("by"), str) or not rec["by"].strip()):
            bad("by", "`by` is missing or not text", "who saw the fixture")
            ok = False
        if event == "retired" and (not isinstance(rec.get("reason"), str)
                                   or not rec["reason"].strip()):
            bad("reason", "`reason` is missing or not text", "why the fixture was retired")
            ok = False
        at = rec.get("at")
        try:
            if not isinstance(at, str):
                raise ValueError
            _dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            bad("at", f"`{at}` is not an ISO 8601 time", "e.g. 2026-11-30T09:15:00Z")
            ok = False
        if ok:
            records.append({**rec, "line": i})
    return records, findings


def _check_holdout(suite: _Suite) -> None:
    by_id: dict[str, list[_Fixture]] = {}
    for fx in suite.fixtures:
        if fx.fixture_id:
            by_id.setdefault(fx.fixture_id, []).append(fx)
    rel = _rel(_ledger_path(suite.suite_root), suite.root)
    for rec in suite.ledger:
        if rec["id"] not in by_id:
            suite.findings.append(Finding(rel, rec["line"], "id",
                                          f"no fixture has id `{rec['id']}`", "an existing id",
                                          "ledger-unknown-id", WARNING, rec["id"]))
    for fid, fxs in by_id.items():
        recs = [r for r in suite.ledger if r["id"] == fid]
        seen = [r for r in recs if r["event"] == "seen"]
        retired = [r for r in recs if r["event"] == "retired"]
        for fx in fxs:
            if fx.meta.get("visibility") != "holdout":
                continue
            if seen:
                who = ", ".join(f"{r['by']} at {r['at']}" for r in seen)
                fx.add("visibility", f"holdout fixture was seen by {who}",
                       expected=f"a holdout nobody has seen; retire it with "
                                f"`evaltk fixtures retire {fid} --reason TEXT`",
                       rule="holdout-seen")
            elif retired:
                fx.add("visibility", f"fixture was retired at {retired[-1]['at']} "
                       f"({retired[-1]['reason']}) but is still holdout",
                       expected="visibility: public", rule="holdout-retired")


def read_holdout_ledger(root: str | os.PathLike[str]) -> pd.DataFrame:
    """The holdout ledger of a suite as a table (``event, id, by, at, reason, line``).

    An absent ledger is an empty table.  A malformed line raises
    :class:`~evaltk.errors.SchemaViolation` naming the file, line and field.
    """
    r, _, suite_root = _locate(root)
    records, findings = _parse_ledger(_ledger_path(suite_root), r)
    if findings:
        f = findings[0]
        raise SchemaViolation(f.message, file=str(_ledger_path(suite_root)), record=f.line,
                              field=f.field)
    cols = ["event", "id", "by", "at", "reason", "line"]
    return pd.DataFrame([{c: rec.get(c) for c in cols} for rec in records], columns=cols)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace(
        "+00:00", "Z")


def _check_at(at: str | None) -> str:
    if at is None:
        return _now()
    try:
        _dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"`at` must be an ISO 8601 time; got {at!r}.", field="at") from None
    return at


def _find_fixture(root: str | os.PathLike[str], fixture_id: str) -> tuple[_Suite, _Fixture]:
    suite = _scan(root, None)
    hits = [fx for fx in suite.fixtures if fx.fixture_id == fixture_id]
    if not hits:
        raise InputError(f"no fixture has id `{fixture_id}`", file=str(suite.fixtures_dir),
                         field="id")
    if len(hits) > 1:
        raise InputError(f"id `{fixture_id}` is used by {len(hits)} fixtures: "
                         + ", ".join(h.rel for h in hits), file=str(suite.fixtures_dir),
                         field="id")
    return suite, hits[0]


def _append_ledger(suite_root: Path, record: dict[str, Any]) -> None:
    path = _ledger_path(suite_root)
    prefix = ""
    if path.exists() and path.stat().st_size:
        with path.open("rb") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                prefix = "\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(prefix + json.dumps(record, ensure_ascii=False) + "\n")


def record_seen(root: str | os.PathLike[str], fixture_id: str, *, by: str,
                at: str | None = None) -> dict[str, Any]:
    """Record in the holdout ledger that ``by`` saw fixture ``fixture_id``.

    Appends ``{"event": "seen", "id": ..., "by": ..., "at": ...}`` to
    ``<suite>/holdout-ledger.jsonl`` and returns it.  Seeing a holdout fixture makes
    it dishonest as a holdout: :func:`validate_suite` flags it until :func:`retire`.
    """
    if not isinstance(by, str) or not by.strip():
        raise InputError("`by` must name who saw the fixture.", field="by")
    suite, fx = _find_fixture(root, fixture_id)
    rec = {"event": "seen", "id": fixture_id, "by": by.strip(), "at": _check_at(at),
           "visibility": fx.meta.get("visibility")}
    _append_ledger(suite.suite_root, rec)
    return rec


def retire(root: str | os.PathLike[str], fixture_id: str, *, reason: str,
           by: str | None = None, at: str | None = None) -> dict[str, Any]:
    """Retire a holdout fixture: set ``visibility: public`` in its ``task.yaml`` and record why.

    Only the ``visibility`` value is rewritten (comments and layout are kept).
    Appends ``{"event": "retired", "id", "reason", "at"[, "by"]}`` to the ledger.

    Raises
    ------
    InputError
        No such fixture, an empty reason, or the fixture is not a holdout.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InputError("`reason` must say why the fixture is retired.", field="reason")
    at = _check_at(at)
    suite, fx = _find_fixture(root, fixture_id)
    node = fx.nodes.get("visibility")
    if fx.meta.get("visibility") != "holdout" or not isinstance(node, yaml.ScalarNode) \
            or fx.text is None:
        raise InputError(f"fixture `{fixture_id}` is not a holdout fixture "
                         f"(visibility: {fx.meta.get('visibility')})", file=str(fx.file),
                         field="visibility")
    # Edit the original text by line and column (the parsed text may differ from it on
    # other lines, see _quote_flat_values; the visibility line never does).
    start, end = node.start_mark, node.end_mark
    lines = fx.text.split("\n")
    if start.line != end.line:
        raise InputError("`visibility` spans several lines; edit it by hand",
                         file=str(fx.file), record=start.line + 1, field="visibility")
    ln = lines[start.line]
    lines[start.line] = ln[: start.column] + "public" + ln[end.column:]
    new = "\n".join(lines)
    tmp = fx.file.with_name(".task.yaml.evaltk-tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, fx.file)
    rec: dict[str, Any] = {"event": "retired", "id": fixture_id, "reason": reason.strip(),
                           "at": at, "from": "holdout", "to": "public"}
    if by:
        rec["by"] = by
    _append_ledger(suite.suite_root, rec)
    return rec


# --------------------------------------------------------------------------- suite


def _scan(root: str | os.PathLike[str], journey: Journey | str | os.PathLike[str] | None
          ) -> _Suite:
    j = _as_journey(journey)
    r, fixtures_dir, suite_root = _locate(root)
    fixtures, layout_findings = _discover(r, fixtures_dir)
    ledger, ledger_findings = _parse_ledger(_ledger_path(suite_root), r)
    suite = _Suite(r, fixtures_dir, suite_root, fixtures, layout_findings + ledger_findings,
                   ledger, j)
    for fx in fixtures:
        _validate_fixture(fx, j)
    # ids unique across the suite
    by_id: dict[str, list[_Fixture]] = {}
    for fx in fixtures:
        if fx.fixture_id:
            by_id.setdefault(fx.fixture_id, []).append(fx)
    for fid, fxs in by_id.items():
        if len(fxs) > 1:
            for fx in fxs:
                others = ", ".join(o.rel for o in fxs if o is not fx)
                fx.add("id", f"id `{fid}` is not unique: also used by {others}",
                       expected="an id used by one fixture only", rule="duplicate-id")
    _check_holdout(suite)
    fx_rel = _rel(fixtures_dir, r)
    if not fixtures:
        suite.findings.append(Finding(fx_rel, None, None, "no task.yaml found",
                                      "fixtures/<class>/<id>/task.yaml", "empty-suite"))
    else:
        kinds = _kind_counts(fixtures)
        uses_ext = any("expected_answer_kind" in (fx.data or {}) for fx in fixtures)
        for k in ANSWER_KINDS:
            if kinds[k] == 0:
                exp = f"a fixture with `expected_answer_kind: {k}`"
                if k == "no-change":
                    exp += " or of class `no-change-needed`"
                msg = f"adversarial coverage: no fixture whose correct answer is {_ANSWER_KIND_TEXT[k]}"
                if not uses_ext:
                    msg += " (no fixture declares `expected_answer_kind`)"
                suite.findings.append(Finding(fx_rel, None, "expected_answer_kind", msg, exp,
                                              "adversarial-coverage"))
    return suite


def _kind_counts(fixtures: Sequence[_Fixture]) -> dict[str, int]:
    kinds = dict.fromkeys(ANSWER_KINDS, 0)
    for fx in fixtures:
        ks = set(fx.meta.get("expected_answer_kind") or [])
        if fx.meta.get("class") == "no-change-needed":
            ks.add("no-change")
        for k in ks:
            kinds[k] += 1
    return kinds


def _all_findings(suite: _Suite) -> list[Finding]:
    out = list(suite.findings)
    for fx in suite.fixtures:
        out.extend(fx.findings)
    out.sort(key=lambda f: (f.file, f.line if f.line is not None else -1))
    return out


def validate_suite(root: str | os.PathLike[str], *,
                   journey: Journey | str | os.PathLike[str] | None = None) -> ValidationReport:
    """Validate every fixture of a suite and the suite's own rules; report every problem.

    Parameters
    ----------
    root : str or path-like
        The suite folder (holding ``fixtures/``), or the fixtures folder itself.
    journey : Journey or path, optional
        The journey phases trajectory fixtures must name; evaltk's default
        (nine phases, first ``1: Intake and provenance``) when omitted.

    Returns
    -------
    ValidationReport
        ``.valid`` is False when any finding is an error.

    Raises
    ------
    UnreadableInput
        The root (or the journey file) is missing or unreadable.  Problems inside
        fixtures are findings, never exceptions.

    References
    ----------
    Seed 004, "Evaluation Task Schema" (fields, trajectory sub-schema, full-path
    constraints, rules).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> report = validate_suite(d)
    >>> report.valid, report.findings[0].message
    (False, 'no task.yaml found')
    """
    suite = _scan(root, journey)
    return ValidationReport(root=str(suite.root), journey=suite.journey.source,
                            n_fixtures=len(suite.fixtures), findings=tuple(_all_findings(suite)),
                            answer_kinds=_kind_counts(suite.fixtures),
                            composition=_composition(suite.fixtures))


def _composition(fixtures: Sequence[_Fixture]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for key, meta in (("kind", "kind"), ("class", "class"), ("visibility", "visibility"),
                      ("path", "journey_path")):
        counts: dict[str, int] = {}
        for fx in fixtures:
            v = fx.meta.get(meta)
            if isinstance(v, str):
                counts[v] = counts.get(v, 0) + 1
        out[key] = dict(sorted(counts.items()))
    return out


def load_task(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read one ``task.yaml`` the way the validator does and return its fields.

    Safe YAML (no objects constructed), duplicate keys refused, the seed's flat
    ``key: 1: Name | 2: Name`` lines read as text (see :func:`_quote_flat_values`),
    at most :data:`MAX_TASK_BYTES` bytes of UTF-8.  The fields are not validated;
    use :func:`validate_suite` for that.

    Raises
    ------
    UnreadableInput
        Missing, too large, not UTF-8, or not YAML.
    SchemaViolation
        A duplicate key, or the top level is not a mapping.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "task.yaml"
    >>> _ = p.write_text("id: t\\ngates: gate-1: design: pass | gate-2: plan: blocked\\n")
    >>> load_task(p)["gates"]
    'gate-1: design: pass | gate-2: plan: blocked'
    """
    p = Path(path)
    if not p.is_file():
        raise UnreadableInput("task file not found", file=str(p))
    fx = _Fixture(p, str(p), str(p.parent), 2)
    _read_fixture(fx)
    for f in fx.findings:
        cls = SchemaViolation if f.rule in ("duplicate-key", "not-mapping") else UnreadableInput
        raise cls(f.message, file=str(p), record=f.line, field=f.field)
    return dict(fx.data or {})


_SUITE_COLUMNS = ["id", "kind", "class", "boundary", "visibility", "path", "file",
                  "journey_path", "terminal_state", "expected_answer_kind", "adversarial_intent",
                  "phases", "skipped_phases", "gates", "skipped_gates", "final_head_sha",
                  "routing_selected", "routing_skipped", "context_files", "prompt", "seen_by",
                  "valid", "n_errors"]


def load_suite(root: str | os.PathLike[str], *,
               journey: Journey | str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """One row per fixture, for notebooks.

    Columns: ``id, kind ("task" | "trajectory"), class, boundary, visibility,
    path`` (the fixture folder, relative to ``root``), ``file`` (its task.yaml),
    ``journey_path`` (a trajectory's ``path``), ``terminal_state``,
    ``expected_answer_kind`` (comma-joined), ``adversarial_intent``, ``phases`` /
    ``skipped_phases`` (phase numbers), ``gates`` (gate id -> verdict),
    ``skipped_gates``, ``final_head_sha``, ``routing_selected`` / ``routing_skipped``
    (metadata, not validated), ``context_files``, ``prompt``, ``seen_by`` (names from
    the holdout ledger), ``valid`` and ``n_errors`` (from :func:`validate_suite`).

    Fixtures that do not parse still get a row (``kind`` missing, ``valid`` False).

    Examples
    --------
    >>> import tempfile
    >>> load_suite(tempfile.mkdtemp()).shape[0]
    0
    """
    suite = _scan(root, journey)
    rows = []
    for fx in suite.fixtures:
        m = fx.meta
        fid = fx.fixture_id
        rows.append({
            "id": fid if fid is not None else Path(fx.dir_rel).name,
            "kind": fx.kind,
            "class": m.get("class"),
            "boundary": m.get("boundary"),
            "visibility": m.get("visibility"),
            "path": fx.dir_rel,
            "file": fx.rel,
            "journey_path": m.get("journey_path"),
            "terminal_state": m.get("terminal_state"),
            "expected_answer_kind": ",".join(m.get("expected_answer_kind") or []) or None,
            "adversarial_intent": m.get("adversarial_intent"),
            "phases": m.get("phases"),
            "skipped_phases": m.get("skipped_phases"),
            "gates": m.get("gates"),
            "skipped_gates": m.get("skipped_gates"),
            "final_head_sha": m.get("final_head_sha"),
            "routing_selected": m.get("routing_selected"),
            "routing_skipped": m.get("routing_skipped"),
            "context_files": m.get("context_files"),
            "prompt": m.get("prompt"),
            "seen_by": [r["by"] for r in suite.ledger
                        if r["event"] == "seen" and r["id"] == fid] if fid else [],
            "valid": not any(f.severity == ERROR for f in fx.findings),
            "n_errors": sum(f.severity == ERROR for f in fx.findings),
        })
    return pd.DataFrame(rows, columns=_SUITE_COLUMNS)


# --------------------------------------------------------------------------- CLI


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and v != v:
        return None
    return v


def _cmd_validate(args: Any) -> int:
    from .cli import EXIT_NEGATIVE, EXIT_OK

    root = args.root if args.root is not None else getattr(args, "suite", None)
    if root is None:
        from .cli import EXIT_USAGE, CliError
        raise CliError("usage: evaltk fixtures validate ROOT", EXIT_USAGE)
    report = validate_suite(root, journey=args.journey)
    if args.json:
        print(json.dumps(report.to_dicts(warnings=args.warnings), indent=2, ensure_ascii=False))
    else:
        for f in report.findings:
            if f.severity == ERROR or args.warnings:
                print(_display(f, report.root))
        n_err, n_warn = len(report.errors), len(report.warnings)
        status = "valid" if report.valid else "INVALID"
        warn = f", {n_warn} warning(s)" + ("" if args.warnings else " (show with --warnings)") \
            if n_warn else ""
        print(f"{report.root}: {report.n_fixtures} fixture(s), {n_err} error(s){warn}: {status}")
        for key, counts in report.composition.items():
            if counts:
                print(f"  by {key}: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
        print("  answer kinds: " + ", ".join(f"{k} {n}" for k, n in report.answer_kinds.items()))
    return EXIT_OK if report.valid else EXIT_NEGATIVE


def _display(f: Finding, root: str) -> str:
    s = str(f)
    return s if f.file.startswith("/") else f"{Path(root, f.file).as_posix()}{s[len(f.file):]}"


def _cmd_list(args: Any) -> int:
    frame = load_suite(args.root, journey=args.journey)
    cols = ["id", "kind", "class", "boundary", "visibility", "journey_path", "path", "valid"]
    if args.json:
        recs = [{k: _jsonable(v) for k, v in row.items()}
                for row in frame.to_dict(orient="records")]
        print(json.dumps(recs, indent=2, ensure_ascii=False, default=str))
    elif frame.empty:
        print("no fixtures")
    else:
        print(frame[cols].fillna("-").to_string(index=False))
    return 0


def _cmd_seen(args: Any) -> int:
    from .cli import EXIT_USAGE, CliError

    try:
        rec = record_seen(args.root, args.id, by=args.by, at=args.at)
    except InputError as e:
        if e.field in ("id", "by", "at"):
            raise CliError(str(e), EXIT_USAGE) from None
        raise
    msg = f"recorded: {rec['id']} seen by {rec['by']} at {rec['at']}"
    if rec.get("visibility") == "holdout":
        msg += (f"; it is a holdout fixture and is no longer an honest holdout: run "
                f"`evaltk fixtures retire {rec['id']} --reason TEXT`")
    print(msg)
    return 0


def _cmd_retire(args: Any) -> int:
    from .cli import EXIT_NEGATIVE, EXIT_USAGE, CliError

    try:
        rec = retire(args.root, args.id, reason=args.reason, by=args.by, at=args.at)
    except InputError as e:
        if e.field == "visibility":
            raise CliError(str(e), EXIT_NEGATIVE) from None
        if e.field in ("id", "reason", "at"):
            raise CliError(str(e), EXIT_USAGE) from None
        raise
    print(f"retired: {rec['id']} is now public ({rec['reason']})")
    return 0


def _cmd_fixtures(args: Any) -> int:
    from .cli import EXIT_USAGE, CliError

    if args.suite is None:
        raise CliError("usage: evaltk fixtures {validate,list,seen,retire} ... "
                       "(or evaltk fixtures --suite ROOT --validate-only)", EXIT_USAGE)
    args.root = args.suite
    args.json = args.suite_json
    args.journey = args.suite_journey
    args.warnings = args.suite_warnings
    return _cmd_validate(args)


def register_cli(subparsers: Any) -> None:
    """Register ``evaltk fixtures {validate,list,seen,retire}``."""
    import argparse

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "fixtures", help="validate and list evaluation task fixtures; holdout ledger",
        description="Evaluation task fixtures (task.yaml): validation, listing, holdout hygiene.",
        epilog="Examples:\n  evaltk fixtures validate data/examples/fixtures\n"
               "  evaltk fixtures list data/examples/fixtures --json\n"
               "  evaltk fixtures seen untangle-billing-module --by alice --root SUITE\n"
               "  evaltk fixtures retire untangle-billing-module --reason 'shown in review' "
               "--root SUITE\nExit codes: 0 valid, 1 a fixture is invalid, 64 usage, "
               "66 unreadable root.",
        formatter_class=fmt)
    p.add_argument("--suite", default=None, help="seed-style alias: validate this suite")
    p.add_argument("--validate-only", action="store_true", help="with --suite: only validate")
    p.add_argument("--journey", dest="suite_journey", default=None, metavar="JOURNEY",
                   help="with --suite: journey document")
    p.add_argument("--json", dest="suite_json", action="store_true",
                   help="with --suite: findings as a JSON list")
    p.add_argument("--warnings", dest="suite_warnings", action="store_true",
                   help="with --suite: also show warnings")
    p.set_defaults(func=_cmd_fixtures)
    sub = p.add_subparsers(dest="fixtures_command", metavar="SUBCOMMAND",
                           parser_class=type(p))

    v = sub.add_parser(
        "validate", help="check every task.yaml and the suite rules (exit 1 when invalid)",
        description="Check every fixture under ROOT/fixtures (or ROOT) and report every problem.",
        epilog="Example: evaltk fixtures validate data/examples/fixtures --json\n"
               "Exit codes: 0 valid, 1 a fixture is invalid, 65 bad journey, 66 unreadable.",
        formatter_class=fmt)
    v.add_argument("root", nargs="?", default=None, help="suite folder or its fixtures folder")
    v.add_argument("--journey", default=None,
                   help="journey document (Markdown `N: Phase Name` lines or YAML `phases:`)")
    v.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    v.add_argument("--warnings", action="store_true", help="also show warnings")
    v.add_argument("--validate-only", action="store_true",
                   help="accepted for the seed's runner; validation is all this command does")
    v.set_defaults(func=_cmd_validate)

    ls = sub.add_parser("list", help="one line per fixture", formatter_class=fmt,
                        epilog="Example: evaltk fixtures list data/examples/fixtures --json")
    ls.add_argument("root")
    ls.add_argument("--journey", default=None)
    ls.add_argument("--json", action="store_true", help="print JSON records")
    ls.set_defaults(func=_cmd_list)

    s = sub.add_parser("seen", help="record in the holdout ledger that someone saw a fixture",
                       formatter_class=fmt,
                       epilog="Example: evaltk fixtures seen untangle-billing-module --by alice "
                              "--root SUITE")
    s.add_argument("id")
    s.add_argument("--by", required=True, help="who saw it")
    s.add_argument("--root", default=".", help="suite folder (default: current folder)")
    s.add_argument("--at", default=None, help="ISO 8601 time (default: now, UTC)")
    s.set_defaults(func=_cmd_seen)

    r = sub.add_parser("retire", help="move a holdout fixture to public and record why",
                       formatter_class=fmt,
                       epilog="Example: evaltk fixtures retire untangle-billing-module "
                              "--reason 'pasted in a PR' --root SUITE")
    r.add_argument("id")
    r.add_argument("--reason", required=True)
    r.add_argument("--by", default=None)
    r.add_argument("--root", default=".", help="suite folder (default: current folder)")
    r.add_argument("--at", default=None, help="ISO 8601 time (default: now, UTC)")
    r.set_defaults(func=_cmd_retire)
