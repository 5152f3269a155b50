"""The instrument behind each measure: what produced its numbers, recorded, digested, compared.

Seed 002, "What a provisional score supports": comparing across scorer versions is not
supported; "a rubric edit is a new instrument; the two numbers are not on one scale".
The instrument of a measure is

* evaltk's scorer and its version (:data:`evaltk.scoring.SCORERS`),
* for a measure folded from judges' answers: the fold rule
  (:meth:`evaltk.scoring.FoldRule.to_dict`) and the panel, per judge its name, model id
  and version, rubric id and content digest, prompt-template digest and decoding
  settings (the answers' :data:`evaltk.ingest.INSTRUMENT_COLUMNS`) and its
  ``rater_version`` when given;
* for a deterministic scorer (x_safe, the guide family): ``"rule"``, nothing else.

A judge whose answers lack any instrument column, or carry several values of one, is
**unpinned**; so is a measure no judge answered and a manifest written before evaltk
recorded instruments.  Two instruments *differ* when a field known on both sides has
different values (:func:`instrument_differences`); they are the *same* only when both are
pinned and nothing differs (:func:`same_instrument`).  A field known on one side only is
not a proven difference: it leaves the comparison unpinned, which the gate routes to
review, never to promote.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._io import canonical_json

#: The judge-instrument fields of a panel member, in the answers table's order, then the
#: judge's ``rater_version`` (compared when both sides give it; not needed to pin).
MEMBER_FIELDS: tuple[str, ...] = ("judge_model", "judge_model_version", "rubric_id", "rubric_digest",
                                  "template_digest", "decoding", "rater_version")
_PINNING = MEMBER_FIELDS[:-1]  # == evaltk.ingest.INSTRUMENT_COLUMNS (tests check it)

#: ``Instrument.kind``: a deterministic rule, a panel of judges, or nothing recorded.
INSTRUMENT_KINDS: tuple[str, ...] = ("rule", "panel", "unrecorded")

_UNRECORDED = "the manifest records no instrument for this measure (an older manifest, or one the scale engines wrote)"


@dataclass(frozen=True)
class PanelMember:
    """One judge of a measure's panel as its answers describe it.

    A field is None when the answers do not give one value for it (absent on some rows,
    or several values); ``problems`` says which, and makes the member unpinned.
    ``n_answers`` is how many answers it gave; it is reported, not part of the identity.
    """

    rater: str
    judge_model: str | None = None
    judge_model_version: str | None = None
    rubric_id: str | None = None
    rubric_digest: str | None = None
    template_digest: str | None = None
    decoding: str | None = None
    rater_version: str | None = None
    n_answers: int = 0
    problems: tuple[str, ...] = ()

    @property
    def pinned(self) -> bool:
        return not self.problems

    def identity(self) -> dict[str, Any]:
        return {"rater": self.rater, **{f: getattr(self, f) for f in MEMBER_FIELDS}}

    def to_dict(self) -> dict[str, Any]:
        return {**self.identity(), "n_answers": int(self.n_answers), "problems": list(self.problems)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PanelMember:
        return cls(rater=str(d["rater"]), **{f: d.get(f) for f in MEMBER_FIELDS},
                   n_answers=int(d.get("n_answers", 0)), problems=tuple(d.get("problems", ())))


@dataclass(frozen=True)
class Instrument:
    """What produced one measure's numbers (module docstring); compared before any comparison.

    Attributes
    ----------
    measure, scorer, scorer_version : str
    kind : {"rule", "panel", "unrecorded"}
    fold_rule : mapping or None
        :meth:`FoldRule.to_dict` of the fold (``kind="panel"`` only).
    panel : tuple of PanelMember
        Every judge that answered the measure, by name.
    """

    measure: str
    scorer: str
    scorer_version: str
    kind: str = "unrecorded"
    fold_rule: Mapping[str, Any] | None = None
    panel: tuple[PanelMember, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in INSTRUMENT_KINDS:
            raise ValueError(f"`kind` must be one of {', '.join(INSTRUMENT_KINDS)}; got {self.kind!r}.")

    @property
    def unpinned_reasons(self) -> tuple[str, ...]:
        """Why this instrument is not pinned (empty when it is)."""
        if self.kind == "rule":
            return ()
        if self.kind == "unrecorded":
            return (_UNRECORDED,)
        if not self.panel:
            return (f"no judge answered {self.measure}",)
        by_problem: dict[str, list[str]] = {}  # one line per problem, naming every judge with it
        for m in self.panel:
            for p in m.problems:
                by_problem.setdefault(p, []).append(m.rater)
        return tuple(f"{', '.join(who)}: {p}" for p, who in by_problem.items())

    @property
    def pinned(self) -> bool:
        return not self.unpinned_reasons

    @property
    def status(self) -> str:
        """``"rule"``, ``"pinned"`` or ``"unpinned"``."""
        return "rule" if self.kind == "rule" else "pinned" if self.pinned else "unpinned"

    def identity(self) -> dict[str, Any]:
        """The fields that make the instrument, in canonical form (what :attr:`digest` covers)."""
        return {"measure": self.measure, "scorer": self.scorer, "scorer_version": self.scorer_version,
                "kind": self.kind, "fold_rule": None if self.fold_rule is None else dict(self.fold_rule),
                "panel": [m.identity() for m in sorted(self.panel, key=lambda m: m.rater)]}

    @property
    def digest(self) -> str:
        """``"sha256:<hex>"`` of the canonical JSON of :meth:`identity`."""
        return "sha256:" + hashlib.sha256(canonical_json(self.identity())).hexdigest()

    def describe(self) -> str:
        """One line: the scorer, the fold and each judge's model and rubric, or why it is unpinned."""
        head = f"{self.scorer} {self.scorer_version}"
        if self.kind == "rule":
            return f"rule: {head}"
        if self.kind == "unrecorded":
            return f"{head}; unpinned: {_UNRECORDED}"
        fold = (self.fold_rule or {}).get("name", "?")
        judges = "; ".join(_member_line(m) for m in self.panel) or "no judge"
        n_un = sum(not m.pinned for m in self.panel)
        tail = "" if self.pinned else f"; unpinned ({n_un} of {len(self.panel)} judges)" if n_un else "; unpinned"
        return f"{head}, {fold} fold over {len(self.panel)} judge(s) ({judges}){tail}"

    def to_dict(self) -> dict[str, Any]:
        """The instrument as the manifest stores it (scorer and version live on the measure's status)."""
        return {"kind": self.kind, "status": self.status, "digest": self.digest,
                "fold_rule": None if self.fold_rule is None else dict(self.fold_rule),
                "panel": [m.to_dict() for m in self.panel], "unpinned_reasons": list(self.unpinned_reasons)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, *, measure: str, scorer: str, scorer_version: str) -> Instrument:
        """Read :meth:`to_dict` back (None: an ``unrecorded`` instrument); the digest must match."""
        if d is None:
            return cls(measure, scorer, scorer_version)
        out = cls(measure, scorer, scorer_version, kind=d["kind"], fold_rule=d.get("fold_rule"),
                  panel=tuple(PanelMember.from_dict(m) for m in d.get("panel", ())))
        if "digest" in d and d["digest"] != out.digest:
            raise ValueError(f"the recorded digest {d['digest']} does not match the instrument's content "
                             f"({out.digest}): the manifest was edited")
        return out


def _member_line(m: PanelMember) -> str:
    def short(x: str | None) -> str:
        return "?" if x is None else x[:15] + "..." if x.startswith("sha256:") and len(x) > 18 else x
    if all(getattr(m, f) is None for f in _PINNING):
        return m.rater
    return (f"{m.rater}: {short(m.judge_model)} {short(m.judge_model_version)}, rubric {short(m.rubric_id)} "
            f"{short(m.rubric_digest)}")


# --------------------------------------------------------------------------- building it from answers


def panel_members(answers: pd.DataFrame, rows: np.ndarray | None = None) -> tuple[PanelMember, ...]:
    """The panel members of one measure's answers (``rows`` of ``answers``, default all): per
    ``rater``, each instrument field's one value, or None with the problem recorded (absent
    on some answers, or several values).  Reads the integer codes ingest remembers
    (:mod:`evaltk._columns`), so a large table is not hashed again per measure."""
    return _members(_FieldCodes.of(answers), rows)


class _FieldCodes:
    """An answers table's ``rater`` and instrument columns as integer codes (-1: missing),
    built once per table; a column missing on every row is None."""

    def __init__(self, n: int, rater: tuple[np.ndarray, np.ndarray],
                 fields: dict[str, tuple[np.ndarray, np.ndarray] | None]) -> None:
        self.n, self.rater, self.fields = n, rater, fields

    @classmethod
    def of(cls, answers: pd.DataFrame) -> _FieldCodes:
        from .. import _columns

        fields: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        for f in MEMBER_FIELDS:
            col = answers[f] if f in answers.columns else None
            if col is None or _all_missing(col):
                fields[f] = None
                continue
            c, u = _columns.codes(col)
            u = np.asarray(u, dtype=object)
            blank = np.flatnonzero(np.array([not isinstance(x, str) or not x.strip() for x in u], bool))
            c = np.asarray(c, np.int64)
            if blank.size:
                c = np.where(np.isin(c, blank), -1, c)
            fields[f] = (c, u)
        rc, ru = _columns.codes(answers["rater"])
        return cls(len(answers), (np.asarray(rc, np.int64), np.asarray(ru, dtype=object)), fields)


def _all_missing(col: pd.Series) -> bool:
    arr = getattr(col.array, "_pa_array", None)
    if arr is not None:
        return arr.null_count == len(arr)
    return bool(col.isna().all())


def _members(fc: _FieldCodes, rows: np.ndarray | None, per_rater: np.ndarray | None = None
             ) -> tuple[PanelMember, ...]:
    """The members of ``rows``; ``per_rater`` (answers per rater code), when given, spares the
    pass over the rows while no instrument column is present."""
    if per_rater is not None and all(v is None for v in fc.fields.values()):
        used = np.flatnonzero(per_rater)
        counted = sorted((str(fc.rater[1][u]), int(per_rater[u])) for u in used)
        return tuple(PanelMember(r, n_answers=n, problems=("no instrument columns on the answers",))
                     for r, n in counted)
    rows = np.arange(fc.n) if rows is None else np.asarray(rows, np.int64)
    if not rows.size:
        return ()
    rc = fc.rater[0][rows]
    used = np.flatnonzero(np.bincount(rc, minlength=len(fc.rater[1])))  # a pass, not a sort
    names = [str(fc.rater[1][u]) for u in used]
    order = np.argsort(names, kind="stable")  # members in name order
    lookup = np.full(len(fc.rater[1]), -1, np.int64)
    lookup[used[order]] = np.arange(len(order))
    codes = lookup[rc]
    names = [names[i] for i in order]
    k = len(names)
    n_answers = np.bincount(codes, minlength=k)
    values: dict[str, list[str | None]] = {}
    problems: list[list[str]] = [[] for _ in range(k)]
    gone: list[list[str]] = [[] for _ in range(k)]
    for f in MEMBER_FIELDS:
        vals, probs, mixed, absent = _field_per_rater(fc.fields[f], rows, codes, k, n_answers, f)
        values[f] = vals
        for j in range(k):
            if f not in _PINNING:  # rater_version is compared when given; only several values unpin
                if mixed[j]:
                    problems[j].append(probs[j])
            elif absent[j]:
                gone[j].append(f)
            elif probs[j]:
                problems[j].append(probs[j])
    for j in range(k):
        if gone[j]:
            problems[j].insert(0, "no instrument columns on the answers" if len(gone[j]) == len(_PINNING)
                               else "no " + ", ".join(gone[j]) + " on the answers")
    return tuple(PanelMember(names[j], **{f: values[f][j] for f in MEMBER_FIELDS},
                             n_answers=int(n_answers[j]), problems=tuple(problems[j])) for j in range(k))


def _field_per_rater(coded: tuple[np.ndarray, np.ndarray] | None, rows: np.ndarray, codes: np.ndarray, k: int,
                     n_answers: np.ndarray, f: str) -> tuple[list[str | None], list[str], np.ndarray, np.ndarray]:
    """Per rater: the one value or None, the problem or "", several values, absent on every answer."""
    if coded is None:
        return [None] * k, [""] * k, np.zeros(k, bool), np.ones(k, bool)
    vc, uniques = coded[0][rows], coded[1]
    present = vc >= 0
    who, v = codes[present], vc[present]
    n_present = np.bincount(who, minlength=k)
    lo = np.full(k, np.iinfo(np.int64).max, np.int64)
    hi = np.full(k, -1, np.int64)
    np.minimum.at(lo, who, v)
    np.maximum.at(hi, who, v)
    mixed = (n_present > 0) & (lo != hi)
    vals: list[str | None] = []
    probs: list[str] = []
    for j in range(k):
        if n_present[j] == 0:
            vals.append(None)
            probs.append("")
        elif mixed[j]:
            vals.append(None)
            probs.append(f"{np.unique(v[who == j]).size} different {f} values (several instruments under one name)")
        elif n_present[j] < n_answers[j]:
            vals.append(None)
            probs.append(f"{int(n_answers[j] - n_present[j])} of {int(n_answers[j])} answers have no {f}")
        else:
            vals.append(str(uniques[lo[j]]))
            probs.append("")
    return vals, probs, mixed, n_present == 0


def judged_instruments(answers: pd.DataFrame | None, measures: Mapping[str, tuple[str, str]],
                       fold_rule: Mapping[str, Any]) -> dict[str, Instrument]:
    """The instrument of each measure folded from ``answers`` under ``fold_rule``:
    ``measures`` maps a measure to its (scorer, version); a measure's panel is every rater
    of its rows."""
    from .. import _columns

    if answers is None or answers.empty:
        return {m: Instrument(m, sc, v, kind="panel", fold_rule=dict(fold_rule)) for m, (sc, v) in measures.items()}
    fc = _FieldCodes.of(answers)
    mc, mu = _columns.codes(answers["measure"])
    n_r = len(fc.rater[1])
    ok = (mc >= 0) & (fc.rater[0] >= 0)
    # answers per (measure code, rater code) in one pass: without instrument columns no more is read
    per = np.bincount(np.asarray(mc, np.int64)[ok] * n_r + fc.rater[0][ok],
                      minlength=len(mu) * n_r).reshape(len(mu), n_r)
    out = {}
    for m, (sc, v) in measures.items():
        hit = [i for i, x in enumerate(mu) if x == m]
        lazy = all(x is None for x in fc.fields.values())
        rows = None if lazy else (np.flatnonzero(np.isin(mc, hit)) if hit else np.zeros(0, np.int64))
        panel = _members(fc, rows, per[hit].sum(axis=0)) if lazy else _members(fc, rows)
        out[m] = Instrument(m, sc, v, kind="panel", fold_rule=dict(fold_rule), panel=panel)
    return out


# --------------------------------------------------------------------------- comparing two


class InstrumentDifference(NamedTuple):
    """One field on which two instruments of ``measure`` differ; ``member`` names the judge
    (``"a / b"`` when two differently named judges stand in the same place)."""

    measure: str
    field: str
    member: str | None
    first: Any
    second: Any

    def describe(self, first: str = "baseline", second: str = "candidate") -> str:
        who = f" of judge {self.member}" if self.member else ""
        return f"{self.measure}: {self.field}{who} differs ({first} {self.first!r}, {second} {self.second!r})"


def instrument_differences(a: Instrument, b: Instrument) -> list[InstrumentDifference]:
    """Every field known on both sides whose values differ (empty: no proven difference).

    Judges are matched by name; when the same number of judges on each side is left
    unmatched, they are paired in name order and compared field by field (the rater name
    is then one of the differing fields).  A field unknown on either side (None, an
    ``unrecorded`` instrument, a side no judge answered) is not compared: that leaves the
    pair unpinned instead.

    Examples
    --------
    >>> a = Instrument("x_task", "s", "1.0", "panel", {"name": "unanimity"}, (PanelMember("j", rubric_id="v1"),))
    >>> b = Instrument("x_task", "s", "1.0", "panel", {"name": "majority"}, (PanelMember("j", rubric_id="v9"),))
    >>> [(d.field, d.first, d.second) for d in instrument_differences(a, b)]
    [('fold_rule', 'unanimity', 'majority'), ('rubric_id', 'v1', 'v9')]
    """
    m = a.measure
    out = [InstrumentDifference(m, f, None, getattr(a, f), getattr(b, f))
           for f in ("scorer", "scorer_version") if getattr(a, f) != getattr(b, f)]
    if "unrecorded" in (a.kind, b.kind):
        return out
    if a.kind != b.kind:
        return [*out, InstrumentDifference(m, "kind", None, a.kind, b.kind)]
    if a.kind == "rule":
        return out
    fa, fb = dict(a.fold_rule or {}), dict(b.fold_rule or {})
    if fa != fb:
        name_a, name_b = fa.get("name"), fb.get("name")
        out.append(InstrumentDifference(m, "fold_rule", None, *((name_a, name_b) if name_a != name_b else (fa, fb))))
    if not a.panel or not b.panel:  # no judge answered on a side: nothing to compare it with (unpinned)
        return out
    pa_ = {x.rater: x for x in a.panel}
    pb_ = {x.rater: x for x in b.panel}
    pairs = [(pa_[r], pb_[r]) for r in sorted(set(pa_) & set(pb_))]
    left, right = sorted(set(pa_) - set(pb_)), sorted(set(pb_) - set(pa_))
    if len(left) != len(right):
        out.append(InstrumentDifference(m, "panel", None, sorted(pa_), sorted(pb_)))
    else:
        pairs += [(pa_[x], pb_[y]) for x, y in zip(left, right, strict=True)]
    for x, y in pairs:
        who = x.rater if x.rater == y.rater else f"{x.rater} / {y.rater}"
        if x.rater != y.rater:
            out.append(InstrumentDifference(m, "rater", who, x.rater, y.rater))
        for f in MEMBER_FIELDS:
            vx, vy = getattr(x, f), getattr(y, f)
            if vx is not None and vy is not None and vx != vy:
                out.append(InstrumentDifference(m, f, who, vx, vy))
    return out


def same_instrument(a: Instrument, b: Instrument) -> bool:
    """Both instruments pinned (or rules) and no field differs: the two numbers share one scale.

    The test a calibration record of one side needs before it may stand for the other.
    """
    return a.pinned and b.pinned and not instrument_differences(a, b)


def unpinned_sides(a: Instrument, b: Instrument, names: Sequence[str] = ("baseline", "candidate")) -> list[str]:
    """``"<side>: <reason>"`` for every reason either side is unpinned (empty: both pinned)."""
    return [f"{name} {r}" for name, ins in zip(names, (a, b), strict=True) for r in ins.unpinned_reasons]
