"""Rubrics as files: the question a judge is asked, its answers, its unit, its prompt.

Seed 002, "What a provisional score supports": *a rubric edit is a new instrument; the
two numbers are not on one scale.*  So a rubric is a file with an identity: a YAML
document (safe loader, a duplicate key refused) validated by
``evaltk/schemas/rubric.schema.json``, whose digest is over its canonical content (key
order, comments and layout do not change it; any change of meaning does).

A rubric names

* the **measure** it answers and the **answers** the judge may give: words of that
  measure's vocabulary (:data:`evaltk.values.ANSWER_VOCABULARIES`, the one vocabulary),
  every valued word offered;
* the **unit** one question is asked about (:data:`MEASURE_UNITS`): the terminal screen
  for x_task ("score the screen, not the agent's claim"), the run for x_eff, each
  gradable step for x_ctx, the guide for the g_ family;
* a **prompt**: a user (and optionally a system) message, Jinja2 templates rendered in
  an immutable sandbox with strict undefined variables.

The judge never sees the human vote (seed 002, "The four dimensions": *the human vote
y(t), carried for calibration and never shown to a judge*).  The template context is
built from the trace facts alone (:data:`UNIT_CONTEXT` lists every variable a unit
offers, and no label is among them); a template that names any other variable is
refused when the rubric is loaded, and one that reaches for a field a fact does not
have fails when it is rendered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .._io import loads_yaml, read_text, sha256_digest
from ..errors import SchemaViolation
from ..values import (
    ANSWER_VOCABULARIES,
    answer_categories,
    normalize_answer,
    normalize_measure,
)

#: The unit each judged measure is asked on (seed 002's cards): the terminal screen for
#: x_task, the run for x_eff, each gradable step for x_ctx; every ``g_*`` measure is asked
#: on the guide.  x_safe is computed from the trace, never asked of a judge.
MEASURE_UNITS: dict[str, str] = {"x_task": "screen", "x_eff": "run", "x_ctx": "step"}
_GUIDE_UNIT = "guide"

#: Every variable a template may use, per unit: the trace's facts and the rubric's own
#: text.  No label, no human vote, no other judge's answer, no trace id.
UNIT_CONTEXT: dict[str, tuple[str, ...]] = {
    "screen": ("task", "domain", "question", "answers", "n_steps", "screen"),
    "run": ("task", "domain", "question", "answers", "n_steps", "steps", "guide"),
    "step": ("task", "domain", "question", "answers", "n_steps", "step", "previous"),
    "guide": ("task", "domain", "question", "answers", "n_steps", "steps", "guide"),
}

RUBRIC_SCHEMA_ID = "evaltk.rubric/1"
#: The rubrics shipped with evaltk (``evaltk/judges/rubrics/<name>.yaml``).
SHIPPED_RUBRICS: tuple[str, ...] = ("x_task", "x_eff", "x_ctx")

_EXTRA = "the `judges` extra (pip install 'evaltk[judges]')"


def require(module: str) -> Any:
    """Import ``module`` (httpx, jinja2, tqdm), naming the extra that installs it when missing."""
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"evaltk judges need {module!r}, part of {_EXTRA}",
                                  name=module) from e


def unit_of(measure: str) -> str:
    """The unit a judged measure is asked on (:data:`MEASURE_UNITS`; ``guide`` for g_*).

    Examples
    --------
    >>> unit_of("t_task"), unit_of("x_ctx"), unit_of("g_fidelity")
    ('screen', 'step', 'guide')
    """
    m = normalize_measure(measure)
    if m in MEASURE_UNITS:
        return MEASURE_UNITS[m]
    if m.startswith("g_") and m in ANSWER_VOCABULARIES:
        return _GUIDE_UNIT
    if m == "x_safe":
        raise ValueError("x_safe is computed from the trace (seed 002), not asked of a judge; "
                         "a rubric cannot name it.")
    judged = [*MEASURE_UNITS, *(k for k in ANSWER_VOCABULARIES if k.startswith("g_"))]
    raise ValueError(f"no judge answers the measure {measure!r}; a rubric names one of "
                     f"{', '.join(judged)}.")


def _sandbox() -> Any:
    jinja2 = require("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
                                         keep_trailing_newline=False)


_SAMPLE_STEP = {"index": 0, "action": "tap", "target": "Search", "screen": "Home screen"}
#: One context per unit, with every variable present: a template is rendered on it when
#: the rubric is loaded, so a reach for a field no fact has fails then, not mid-run.
_SAMPLE_FACTS: dict[str, Any] = {
    "task": "Find the weather", "domain": "other", "question": "?", "answers": ["yes", "no"],
    "n_steps": 1, "screen": "Weather: 21C", "steps": [_SAMPLE_STEP], "step": _SAMPLE_STEP,
    "previous": [], "guide": {"id": "g", "steps": [{"id": "s1", "action": "tap"}]},
}


@dataclass(frozen=True)
class Rubric:
    """A loaded rubric (see :func:`load_rubric`).

    Attributes
    ----------
    id, measure, unit, question : str
        As in the file; ``measure`` canonical (``t_task`` reads as ``x_task``).
    answers : tuple of str
        The words the judge may reply with, canonical, in the file's order.
    meanings : tuple of str
        What each answer means, in the same order.
    system, user : str
        The prompt templates (``system`` may be empty).
    digest : str
        ``"sha256:<hex>"`` over the canonical content.
    template_digest : str
        ``"sha256:<hex>"`` over the two templates.
    source : str
        Where it was read from.
    """

    id: str
    measure: str
    unit: str
    question: str
    answers: tuple[str, ...]
    meanings: tuple[str, ...]
    system: str
    user: str
    digest: str
    template_digest: str
    source: str
    _templates: tuple[Any, Any] = field(repr=False, compare=False, default=(None, None))

    def render(self, facts: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages for one unit: the templates rendered on ``facts`` plus the
        rubric's own ``question`` and ``answers``.  Only :data:`UNIT_CONTEXT` variables are
        passed; anything else in ``facts`` is dropped before the template sees it."""
        allowed = UNIT_CONTEXT[self.unit]
        ctx = {k: facts[k] for k in allowed if k in facts}
        ctx["question"] = self.question
        ctx["answers"] = list(self.answers)
        sys_t, user_t = self._templates
        out = []
        if sys_t is not None:
            out.append({"role": "system", "content": _render(sys_t, ctx, self, "prompt.system")})
        out.append({"role": "user", "content": _render(user_t, ctx, self, "prompt.user")})
        return out

    def read_reply(self, text: Any) -> tuple[str | None, str | None]:
        """``(word, None)`` for a reply that reads as one of :attr:`answers`, else
        ``(None, "unreadable reply: ...")``.

        The reply is read whole, then its first and last non-empty lines, each trimmed of
        quotes and punctuation and of an ``Answer:`` prefix, through
        :func:`evaltk.values.normalize_answer` ("Cannot tell" and "cannot-tell" read
        alike); a JSON object's ``"answer"`` is read too.  A reply whose readings disagree
        is unreadable.

        Examples
        --------
        >>> r = load_rubric("x_task")
        >>> r.read_reply("Yes."), r.read_reply("Answer: cannot tell"), r.read_reply('{"answer": "no"}')
        (('yes', None), ('cannot_tell', None), ('no', None))
        >>> r.read_reply("lots")
        (None, "unreadable reply: 'lots' is not one of yes, no, cannot_tell")
        """
        if not isinstance(text, str) or not text.strip():
            return None, "unreadable reply: empty"
        lines = [ln for ln in text.splitlines() if ln.strip()]
        cands = [text, lines[0], lines[-1]]
        try:
            obj = json.loads(text)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("answer"), str):
            cands.insert(0, obj["answer"])
        found = []
        for c in cands:
            w = normalize_answer(_PREFIX.sub("", c.strip(_TRIM)).strip(_TRIM))
            if w in self.answers and w not in found:
                found.append(w)
        if len(found) == 1:
            return found[0], None
        shown = text.strip()
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        if found:
            return None, f"unreadable reply: {shown!r} reads as more than one answer ({', '.join(found)})"
        return None, f"unreadable reply: {shown!r} is not one of {', '.join(self.answers)}"


_TRIM = " \t\r\n\"'`*.!:;,()[]{}"
_PREFIX = re.compile(r"^(final\s+)?(answer|verdict)\s*[:=\-]\s*", re.IGNORECASE)


def _render(template: Any, ctx: Mapping[str, Any], rubric: Rubric, fld: str) -> str:
    import jinja2  # already imported: the template was compiled by it
    from jinja2.sandbox import SecurityError

    try:
        return str(template.render(**ctx))
    except (jinja2.UndefinedError, SecurityError, jinja2.TemplateError, TypeError) as e:
        raise SchemaViolation(f"the template cannot be rendered on the trace facts ({e}); a "
                              f"template sees only {', '.join(UNIT_CONTEXT[rubric.unit])}",
                              file=rubric.source, field=fld) from None


def _schema_errors(doc: Any) -> list[tuple[str, str]]:
    import jsonschema

    text = resources.files("evaltk").joinpath("schemas", "rubric.schema.json").read_text("utf-8")
    v = jsonschema.Draft202012Validator(json.loads(text))
    out = []
    for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        where = ".".join(map(str, e.absolute_path)) or "(top level)"
        msg = e.message
        if isinstance(e.instance, bool) and list(e.absolute_path)[-1:] == ["word"]:
            msg += " (quote yes and no: YAML reads them bare as booleans)"
        out.append((where, msg))
    return out


def load_rubric(source: str | Path | Mapping[str, Any]) -> Rubric:
    """Read and check a rubric: a shipped name (:data:`SHIPPED_RUBRICS`), a YAML file, or a mapping.

    Raises
    ------
    UnreadableInput
        The file is missing, not UTF-8 or not YAML.
    SchemaViolation
        A duplicate key, a schema violation, a word outside the measure's vocabulary, a
        unit that is not the measure's, or a template that names a variable the unit's
        context does not offer (a label, the human vote); each names the file and field.

    Examples
    --------
    >>> r = load_rubric("x_task")
    >>> r.measure, r.unit, r.answers, r.digest.startswith("sha256:")
    ('x_task', 'screen', ('yes', 'no', 'cannot_tell'), True)
    """
    if isinstance(source, Mapping):
        doc, name = dict(source), "<rubric>"
    else:
        if isinstance(source, str) and source in SHIPPED_RUBRICS:
            res = resources.files("evaltk.judges").joinpath("rubrics", f"{source}.yaml")
            name, text = f"evaltk/judges/rubrics/{source}.yaml", res.read_text("utf-8")
        else:
            name = str(source)
            text = read_text(source)
        doc = loads_yaml(text, file=name)
    return _checked(doc, name)


def _checked(doc: Any, name: str) -> Rubric:
    errors = _schema_errors(doc)
    if errors:
        where, msg = errors[0]
        raise SchemaViolation(msg, file=name, field=where)
    try:
        measure = normalize_measure(doc["measure"])
        unit = unit_of(measure)
    except ValueError as e:
        raise SchemaViolation(str(e), file=name, field="measure") from None
    if doc["unit"] != unit:
        raise SchemaViolation(f"{measure} is asked on the {unit}, not the {doc['unit']} (seed 002)",
                              file=name, field="unit")
    words = tuple(normalize_answer(a["word"]) for a in doc["answers"])
    vocab = ANSWER_VOCABULARIES[measure]
    for i, w in enumerate(words):
        if w not in vocab:
            raise SchemaViolation(f"{doc['answers'][i]['word']!r} is not an answer of {measure} "
                                  f"(its vocabulary: {', '.join(vocab)})", file=name,
                                  field=f"answers.{i}.word")
        if w in words[:i]:
            raise SchemaViolation(f"the answer {w!r} is listed twice", file=name, field=f"answers.{i}.word")
    missing = [w for w in answer_categories(measure) if w not in words]
    if missing:
        raise SchemaViolation(f"the answers must offer every valued word of {measure}; missing: "
                              f"{', '.join(missing)}", file=name, field="answers")
    prompt = doc["prompt"]
    canonical = {"schema": doc["schema"], "id": doc["id"], "measure": measure, "unit": unit,
                 "question": doc["question"], "description": doc.get("description", ""),
                 "answers": [{"word": w, "means": a["means"]} for w, a in zip(words, doc["answers"], strict=True)],
                 "prompt": {"system": prompt.get("system", ""), "user": prompt["user"]}}
    templates = _compile(canonical["prompt"], unit, name)
    rubric = Rubric(id=doc["id"], measure=measure, unit=unit, question=doc["question"], answers=words,
                    meanings=tuple(a["means"] for a in doc["answers"]), system=canonical["prompt"]["system"],
                    user=prompt["user"], digest="sha256:" + sha256_digest(canonical),
                    template_digest="sha256:" + sha256_digest(canonical["prompt"]), source=name,
                    _templates=templates)
    rubric.render(_SAMPLE_FACTS)  # a reach for a field no fact has fails now, not mid-run
    return rubric


def _compile(prompt: Mapping[str, str], unit: str, name: str) -> tuple[Any, Any]:
    """The two templates compiled in the sandbox, each checked to name only the unit's variables."""
    jinja2 = require("jinja2")
    from jinja2 import meta

    env = _sandbox()
    allowed = set(UNIT_CONTEXT[unit])
    out: list[Any] = []
    for key in ("system", "user"):
        src = prompt[key]
        if key == "system" and not src:
            out.append(None)
            continue
        try:
            ast = env.parse(src)
        except jinja2.TemplateSyntaxError as e:
            raise SchemaViolation(f"not a valid template: {e.message}", file=name,
                                  record=e.lineno, field=f"prompt.{key}") from None
        unknown = sorted(meta.find_undeclared_variables(ast) - allowed)
        if unknown:
            raise SchemaViolation(f"the template names {', '.join(unknown)}, which the {unit} context "
                                  f"does not offer (it has {', '.join(UNIT_CONTEXT[unit])}; a judge "
                                  f"never sees labels or the human vote)", file=name, field=f"prompt.{key}")
        out.append(env.from_string(src))
    return out[0], out[1]


__all__ = ["Rubric", "load_rubric", "MEASURE_UNITS", "UNIT_CONTEXT", "SHIPPED_RUBRICS", "unit_of",
           "require"]
