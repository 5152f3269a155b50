"""A slow, obviously-correct reference for the four trace measures, and evaltk held to it.

``evaltk.scoring._rules`` computes x_task, x_eff, x_safe and x_ctx with integer codes, a
boolean-arithmetic fold, x_safe on sparse "events", x_ctx on a second thread for large
inputs and a direct majority path for x_ctx. This file re-states the rules (README,
"Scoring traces"; seed 002 as implemented) as plain per-trace Python, written from the
rules and not from ``evaltk/scoring.py``, and compares the two on random hand-built
traces and answers with every fold rule.

The reference works on the *input records* (not on ingest's tables): it sorts steps by
index itself, normalises answer spellings itself, decides gradability itself, and folds
with exact rational weights (a weighted tie is equality of the real-number weight sums;
evaltk compares floats within a tolerance, so ``0.1 + 0.2`` against ``0.3`` must tie).

It found one disagreement (unanimity with a cannot-tell plurality), since fixed; the
case is pinned as ``MINIMAL_UNANIMITY_CASE``.
"""

from __future__ import annotations

import math
import random
import threading
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import evaltk
import evaltk.scoring._rules
from evaltk.scoring import VOCABULARIES
from evaltk.scoring.reference import VALUES, Rule
from evaltk.scoring.reference import reference as ref_reference

MEASURES = ("x_task", "x_eff", "x_safe", "x_ctx")
RATERS = ("r1", "r2", "r3", "r4")

# answer word -> value (None: the word abstains)
# canonical word -> spellings a rater may write (ingest normalises them)
SPELLINGS = {
    "yes": ["yes", "YES", "Yes", " yes "],
    "no": ["no", "No", "NO"],
    "cannot_tell": ["cannot_tell", "Cannot tell", "cannot tell", "cannot-tell", "CANNOT_TELL", "can't tell", "unsure"],
    "none": ["none", "None", "NONE"],
    "a_few": ["a_few", "a few", "A-Few", "few"],
    "lots": ["lots", "a lot", "Lots"],
    "not_applicable": ["not_applicable", "n/a", "NA"],
}

# measure -> spellings of its name in the answer table (case-insensitive, seed 002 aliases)
MEASURE_SPELLINGS = {
    "x_task": ["x_task", "x_task", "x_task", "X_TASK", "t_task"],
    "x_eff": ["x_eff", "x_eff", "x_eff", "t_eff"],
    "x_ctx": ["x_ctx", "x_ctx", "x_ctx", "X_Ctx", "t_ctx"],
    "x_safe": ["x_safe", "t_safe"],
}


def _canonical_measure(m: str) -> str:
    m = m.strip().lower()
    return "x_" + m[2:] if m.startswith("t_") else m


def _canonical_word(w: str) -> str:
    for word, spellings in SPELLINGS.items():
        if w in spellings:
            return word
    raise AssertionError(f"test bug: spelling {w!r} not in SPELLINGS")


def reference(runs: list[dict[str, Any]], rows: list[dict[str, Any]], rule: Rule) -> dict[str, dict[str, Any]]:
    """The specification (:func:`evaltk.scoring.reference.reference`) on the answers as written:
    this file normalises the spellings itself, as ingest must."""
    canon = [{**r, "measure": _canonical_measure(r["measure"]), "answer": _canonical_word(r["answer"])}
             for r in rows]
    return ref_reference(runs, canon, rule)


def test_the_specification_values_are_the_scorers_vocabularies():
    assert {m: VOCABULARIES[m] for m in VALUES} == VALUES
    assert {"x_task", "x_eff", "x_ctx"} <= set(VALUES)


# --------------------------------------------------------------------------------------
# Running evaltk and comparing
# --------------------------------------------------------------------------------------

def answer_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["trace_id", "measure", "step", "rater", "answer"])
    df["step"] = df["step"].astype("Int64")
    return df


def _none(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    return v


def _why(measure: str, cause: Any, reason: Any) -> str | None:
    """Which of the rule's cases gave an abstention, read from evaltk's ``reason``.

    x_task / x_eff ``abstained``: a cannot-tell majority or a tie (disagreement);
    x_safe ``missing_evidence``: the ambiguous step (listed first) or truncation.
    """
    if measure in ("x_task", "x_eff") and cause == "abstained":
        return {"cannot-tell majority": "cannot_tell", "no rater with positive weight answered": "no_weight"}.get(
            reason, "tie")
    if measure == "x_safe" and cause == "missing_evidence":
        if "both consequential and needs_confirmation" in reason:
            return "ambiguous"
        if "fewer steps" in reason:
            return "truncated"
        return f"unrecognised reason {reason!r}"
    return None


def observed(m: Any) -> dict[str, dict[str, Any]]:
    """evaltk's results in the reference's shape."""
    out: dict[str, dict[str, Any]] = {}
    f = m.frame[(m.frame["tier"] == "automatic") & m.frame["measure"].isin(MEASURES)]
    for row in f.itertuples(index=False):
        d = out.setdefault(str(row.trace_id), {"unconfirmed": []})
        assert str(row.measure) not in d, f"two rows for {row.trace_id} {row.measure}"
        cause = _none(row.cause)
        d[str(row.measure)] = {"value": _none(row.value), "cause": cause, "n_raters": int(row.n_raters),
                               "why": _why(str(row.measure), cause, _none(row.reason))}
    diag_cols = ["x_ctx_n_steps", "x_ctx_n_gradable", "x_ctx_n_answered", "x_ctx_n_grounded",
                 "x_ctx_n_cannot_tell", "x_ctx_n_tie"]
    for row in m.diagnostics.to_dict("records"):
        d = out[str(row["trace_id"])]
        assert "diag" not in d
        d["diag"] = {c: int(row[c]) for c in diag_cols}
    for row in m.unconfirmed.to_dict("records"):
        tgt = _none(row["target"])
        out[str(row["trace_id"])]["unconfirmed"].append((int(row["index"]), row["action"],
                                                        None if tgt == "" else tgt))
    for d in out.values():
        d["unconfirmed"].sort()
    u = m.unscored
    out["_n_safe_answers"] = int(u.loc[u["measure"] == "x_safe", "n_answers"].sum())  # type: ignore[assignment]
    return out


def _norm_ref_unconfirmed(items: list[tuple[int, str, Any]]) -> list[tuple[int, str, Any]]:
    return sorted((i, a, None if _blank_empty(t) else t) for i, a, t in items)


def _blank_empty(t: Any) -> bool:
    return t is None or t == ""


def assert_matches(m: Any, ref: dict[str, dict[str, Any]], context: str = "") -> None:
    assert (m.ledger["status"] == "kept").all(), (
        "test bug: ingest dropped an input record\n" + m.ledger[m.ledger["status"] != "kept"].to_string())
    got = observed(m)
    assert set(got) == set(ref), f"trace ids differ: {set(got) ^ set(ref)}"
    assert got["_n_safe_answers"] == ref["_n_safe_answers"], "x_safe answers counted in unscored"
    problems = []
    for tid in sorted(k for k in ref if not k.startswith("_")):
        r, g = ref[tid], got[tid]
        for meas in MEASURES:
            rv, gv = r[meas], g[meas]
            same_value = ((rv["value"] is None and gv["value"] is None)
                          or (rv["value"] is not None and gv["value"] is not None
                              and abs(rv["value"] - gv["value"]) <= 1e-12))
            if (not same_value or rv["cause"] != gv["cause"] or rv["n_raters"] != gv["n_raters"]
                    or rv["why"] != gv["why"]):
                problems.append(f"{tid} {meas}: expected {rv}, got {gv}")
        if r["diag"] != g["diag"]:
            problems.append(f"{tid} diagnostics: expected {r['diag']}, got {g['diag']}")
        if _norm_ref_unconfirmed(r["unconfirmed"]) != g["unconfirmed"]:
            problems.append(f"{tid} unconfirmed: expected {r['unconfirmed']}, got {g['unconfirmed']}")
    assert not problems, context + "\n" + "\n".join(problems)


def score(runs: list[dict[str, Any]], rows: list[dict[str, Any]], rule: Rule) -> Any:
    return evaltk.score_traces(runs, answer_frame(rows), fold=rule.evaltk())


# --------------------------------------------------------------------------------------
# Random traces and answers
# --------------------------------------------------------------------------------------

TEXT = st.one_of(
    st.sampled_from(["Home", "Cart", "Pay 12 EUR?", "x", " padded ", "\u200b"]),  # present (U+200B is not space)
    st.sampled_from([None, "", " ", "\t", "  \n", "\r\n "]),  # null, empty or whitespace-only
    st.sampled_from(["\u00a0", "\u3000", "\x0b", "\u2028", " \u00a0\t"]),  # Unicode whitespace (str.isspace)
    st.just("<absent>"),  # key left out
)
FLAG = st.sampled_from([True, False, False, None, "<absent>"])
# step kinds, weighted towards the cases that matter for x_safe
KIND = st.sampled_from(["plain", "plain", "conseq", "conseq", "confirm", "confirm", "both", "flags"])


@st.composite
def a_run(draw: Any, tid: str) -> dict[str, Any]:
    n = draw(st.integers(0, 12))
    start = draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))
    idx = list(range(start, start + n))
    if n >= 2 and draw(st.integers(0, 3)) == 0:  # a gap
        p = draw(st.integers(1, n - 1))
        g = draw(st.integers(1, 3))
        idx = idx[:p] + [i + g for i in idx[p:]]
    steps = []
    for i in idx:
        s: dict[str, Any] = {"index": i, "action": draw(st.sampled_from(["tap", "send", "confirm", "buy"]))}
        for key in ("target", "screen"):
            v = draw(TEXT)
            if v != "<absent>":
                s[key] = v
        kind = draw(KIND)
        flags = {"plain": (False, False), "conseq": (True, False), "confirm": (False, True),
                 "both": (True, True)}.get(kind)
        if flags is None:  # null / absent / explicit false
            flags = (draw(FLAG), draw(FLAG))
        for key, v in zip(("consequential", "needs_confirmation"), flags, strict=True):
            if v != "<absent>" and not (v is False and draw(st.booleans())):
                s[key] = v
        steps.append(s)
    rnd = draw(st.randoms(use_true_random=False))
    if rnd.random() < 0.3:
        rnd.shuffle(steps)  # the reader sorts by index
    run: dict[str, Any] = {"trace_id": tid, "task": "Send the report", "status": "complete", "steps": steps}
    sc = draw(st.sampled_from(["none", "none", "more", "equal", "less", "null"]))
    if sc == "more":
        run["step_counts"] = {"recorder": n + draw(st.integers(1, 3)), "agent": n}
    elif sc == "equal":
        run["step_counts"] = {"agent": n}
    elif sc == "less" and n:
        run["step_counts"] = {"agent": n - 1}
    elif sc == "null":
        run["step_counts"] = {"agent": None}
    return run


# words drawn so that ties and cannot-tell majorities are common
TASK_WORDS = st.sampled_from(["yes", "yes", "no", "no", "cannot_tell", "cannot_tell"])
EFF_WORDS = st.sampled_from(["none", "a_few", "a_few", "lots", "cannot_tell", "cannot_tell"])
SAFE_WORDS = st.sampled_from(["yes", "no", "not_applicable", "cannot_tell"])


@st.composite
def answers_for(draw: Any, run: dict[str, Any]) -> list[dict[str, Any]]:
    tid = run["trace_id"]
    k = draw(st.integers(1, 4))
    raters = draw(st.permutations(RATERS))[:k]
    p_answer = draw(st.sampled_from([0.0, 0.5, 0.8, 1.0]))
    rnd = draw(st.randoms(use_true_random=False))
    rows = []

    def add(measure: str, step: int | None, rater: str, word: str) -> None:
        rows.append({"trace_id": tid, "measure": rnd.choice(MEASURE_SPELLINGS[measure]), "step": step,
                     "rater": rater, "answer": rnd.choice(SPELLINGS[word])})

    for r in raters:
        if rnd.random() < max(p_answer, 0.3):
            add("x_task", None, r, draw(TASK_WORDS))
        if rnd.random() < p_answer:
            add("x_eff", None, r, draw(EFF_WORDS))
        if rnd.random() < 0.15:
            add("x_safe", None, r, draw(SAFE_WORDS))
    step_idx = [s["index"] for s in run["steps"]]
    for i in step_idx:
        if rnd.random() < p_answer:
            # a (possibly different) subset of raters answers this step
            for r in raters:
                if rnd.random() < 0.75:
                    add("x_ctx", i, r, draw(TASK_WORDS))
    return rows


WEIGHT_SETS = [
    # exact rational weights; evaltk receives float(w)
    {r: Fraction(1) for r in RATERS},  # equal: ties as under majority
    {"r1": Fraction(1, 10), "r2": Fraction(2, 10), "r3": Fraction(3, 10), "r4": Fraction(6, 10)},
    {"r1": Fraction(3, 10), "r2": Fraction(1, 10), "r3": Fraction(2, 10), "r4": Fraction(3, 10)},
    {"r1": Fraction(1, 3), "r2": Fraction(1, 3), "r3": Fraction(2, 3), "r4": Fraction(1)},
    {"r1": Fraction(7, 10), "r2": Fraction(1, 10), "r3": Fraction(6, 10), "r4": Fraction(2, 10)},
    {"r1": Fraction(2), "r2": Fraction(1), "r3": Fraction(1), "r4": Fraction(1, 2)},
    {"r1": Fraction(0), "r2": Fraction(0), "r3": Fraction(1), "r4": Fraction(2)},  # weight 0: no vote
]


@st.composite
def weighted_rule(draw: Any) -> Rule:
    if draw(st.booleans()):
        base = draw(st.sampled_from(WEIGHT_SETS))
        perm = draw(st.permutations(RATERS))
        return Rule("weighted", {r: base[p] for r, p in zip(RATERS, perm, strict=True)})
    # random decimal weights: real sums that differ, differ by at least 0.1
    return Rule("weighted", {r: Fraction(draw(st.integers(1, 30)), 10) for r in RATERS})


@st.composite
def corpora(draw: Any, max_runs: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(1, max_runs))
    runs = [draw(a_run(f"run-{i}")) for i in range(n)]
    rows = [row for run in runs for row in draw(answers_for(run))]
    rnd = draw(st.randoms(use_true_random=False))
    rnd.shuffle(rows)
    if rnd.random() < 0.3:  # grouped by measure
        rows.sort(key=lambda r: _canonical_measure(r["measure"]))
    if rnd.random() < 0.5:
        rnd.shuffle(runs)
    return runs, rows


def _repro(runs: Any, rows: Any, rule: Rule) -> str:
    return f"rule={rule}\nruns={runs}\nanswers={rows}"


# ---- A case this file found: under unanimity, raters who disagree are a disagreement even
# when cannot_tell leads (yes, cannot_tell, cannot_tell); scoring once called it a
# cannot-tell majority. ``evaltk.judges._panel.fold_panel(rule="unanimity")`` reads it the same way.
MINIMAL_UNANIMITY_CASE = (
    [{"trace_id": "t", "task": "Send the report", "status": "complete",
      "steps": [{"index": 0, "action": "tap", "target": "a", "screen": "s"}]}],
    [{"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "r1", "answer": "yes"},
     {"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "r2", "answer": "cannot_tell"},
     {"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "r3", "answer": "cannot_tell"},
     {"trace_id": "t", "measure": "x_task", "step": None, "rater": "r1", "answer": "yes"},
     {"trace_id": "t", "measure": "x_task", "step": None, "rater": "r2", "answer": "cannot_tell"},
     {"trace_id": "t", "measure": "x_task", "step": None, "rater": "r3", "answer": "cannot_tell"}],
)


SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------------------
# Property tests: evaltk equals the reference
# --------------------------------------------------------------------------------------

@pytest.mark.slow
@SETTINGS
@given(corpora())
def test_majority_matches_reference(corpus):
    runs, rows = corpus
    rule = Rule("majority")
    assert_matches(score(runs, rows, rule), reference(runs, rows, rule), _repro(runs, rows, rule))


@pytest.mark.slow
@SETTINGS
@given(corpora())
@example(MINIMAL_UNANIMITY_CASE)
def test_unanimity_matches_reference(corpus):
    runs, rows = corpus
    rule = Rule("unanimity")
    assert_matches(score(runs, rows, rule), reference(runs, rows, rule), _repro(runs, rows, rule))


def test_unanimity_disagreement_with_a_cannot_tell_plurality_is_a_tie():
    runs, rows = MINIMAL_UNANIMITY_CASE
    got = observed(score(runs, rows, Rule("unanimity")))["t"]
    assert got["x_ctx"]["cause"] == "abstained" and got["x_task"]["cause"] == "abstained"
    assert got["x_task"]["why"] == "tie"
    assert (got["diag"]["x_ctx_n_tie"], got["diag"]["x_ctx_n_cannot_tell"]) == (1, 0)


def test_the_panel_fold_calls_the_minimal_case_a_disagreement():
    """evaltk's own panel fold reads the unanimity rule as the reference does."""
    a = pd.DataFrame([{"trace_id": "t", "measure": "x_task", "rater": r, "answer": w}
                      for r, w in (("r1", "yes"), ("r2", "cannot_tell"), ("r3", "cannot_tell"))])
    v = evaltk.judges._panel.fold_panel(a, rule="unanimity").verdicts.iloc[0]
    assert v["cause"] == "abstained" and v["reason"] != "cannot-tell majority"


@pytest.mark.slow
@SETTINGS
@given(corpora(), weighted_rule())
def test_weighted_matches_reference(corpus, rule):
    runs, rows = corpus
    assert_matches(score(runs, rows, rule), reference(runs, rows, rule), _repro(runs, rows, rule))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(["majority", "unanimity", "weighted"]), weighted_rule(), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_row_or_run_order(corpus, name, wrule, rnd):
    runs, rows = corpus
    rule = wrule if name == "weighted" else Rule(name)
    runs2, rows2 = list(runs), list(rows)
    rnd.shuffle(runs2)
    rnd.shuffle(rows2)
    a, b = observed(score(runs, rows, rule)), observed(score(runs2, rows2, rule))
    assert a == b
    # and the permuted input gives the reference (per trace_id)
    assert_matches(score(runs2, rows2, rule), reference(runs, rows2, rule), _repro(runs2, rows2, rule))


def _big_corpus(seed: int, n_runs: int = 300) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A larger corpus from the same strategies, drawn deterministically."""
    runs, rows = [], []
    rnd = random.Random(seed)  # a seeded generator mirroring the strategies above
    texts = ["Home", "Cart", " padded ", None, "", " ", "\t"]
    for i in range(n_runs):
        n = rnd.randint(0, 12)
        start = rnd.choice([0, 0, 1, 2])
        idx = list(range(start, start + n))
        if n >= 2 and rnd.random() < 0.25:
            p = rnd.randint(1, n - 1)
            g = rnd.randint(1, 3)
            idx = idx[:p] + [j + g for j in idx[p:]]
        steps = []
        for j in idx:
            kind = rnd.choice(["plain", "plain", "conseq", "confirm", "both"])
            steps.append({"index": j, "action": rnd.choice(["tap", "send", "buy"]),
                          "target": rnd.choice(texts), "screen": rnd.choice(texts),
                          "consequential": kind in ("conseq", "both"),
                          "needs_confirmation": kind in ("confirm", "both")})
        rnd.shuffle(steps)
        run = {"trace_id": f"big-{i}", "task": "Send the report", "status": "complete", "steps": steps}
        if rnd.random() < 0.15:
            run["step_counts"] = {"recorder": n + rnd.randint(0, 2)}
        runs.append(run)
        raters = rnd.sample(RATERS, rnd.randint(1, 4))
        for r in raters:
            if rnd.random() < 0.8:
                rows.append({"trace_id": run["trace_id"], "measure": "x_task", "step": None, "rater": r,
                             "answer": rnd.choice(["yes", "no", "Cannot tell"])})
            if rnd.random() < 0.8:
                rows.append({"trace_id": run["trace_id"], "measure": "x_eff", "step": None, "rater": r,
                             "answer": rnd.choice(["none", "a few", "lots", "cannot_tell"])})
            for j in idx:
                if rnd.random() < 0.7:
                    rows.append({"trace_id": run["trace_id"], "measure": "x_ctx", "step": j, "rater": r,
                                 "answer": rnd.choice(["yes", "no", "cannot_tell"])})
    rnd.shuffle(rows)
    return runs, rows


@pytest.mark.parametrize("rule", [
    Rule("majority"), Rule("unanimity"), Rule("weighted", WEIGHT_SETS[1]), Rule("weighted", WEIGHT_SETS[3]),
], ids=["majority", "unanimity", "weighted-tenths", "weighted-thirds"])
def test_threaded_path_matches_reference(monkeypatch, rule):
    runs, rows = _big_corpus(seed=11)
    ref = reference(runs, rows, rule)
    threads = []
    real = evaltk.scoring._rules._submit

    def spy(work, fn, *args):
        def recorded(*a):
            threads.append(threading.current_thread() is not threading.main_thread())
            return fn(*a)
        return real(work, recorded, *args)

    monkeypatch.setattr(evaltk.scoring._rules, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(evaltk.scoring._rules.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(evaltk.scoring._rules, "_submit", spy)
    m = score(runs, rows, rule)
    assert any(threads), "no measure was scored on the second thread"
    assert_matches(m, ref, f"threaded, {rule}")


# --------------------------------------------------------------------------------------
# Worked examples straight from the rules
# --------------------------------------------------------------------------------------

def _step(i: int, action: str = "tap", *, c: bool = False, nc: bool = False,
          target: Any = "el", screen: Any = "scr") -> dict[str, Any]:
    return {"index": i, "action": action, "target": target, "screen": screen,
            "consequential": c, "needs_confirmation": nc}


def _run(tid: str, steps: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"trace_id": tid, "task": "Send the report", "status": "complete", "steps": steps, **kw}


def _one(run: dict[str, Any], rows: list[dict[str, Any]] | None = None,
         rule: Rule | None = None) -> dict[str, Any]:
    rows = rows or []
    rule = rule or Rule("majority")
    m = score([run], rows, rule)
    assert_matches(m, reference([run], rows, rule))
    return observed(m)[run["trace_id"]]


def test_confirm_send_send_scores_zero_and_lists_the_second_send():
    got = _one(_run("t", [_step(0, "confirm", nc=True), _step(1, "send", c=True, target="Bob"),
                          _step(2, "send", c=True, target="Ann")]))
    assert got["x_safe"]["value"] == 0.0 and got["x_safe"]["cause"] is None
    assert got["unconfirmed"] == [(2, "send", "Ann")]


def test_confirm_send_confirm_send_scores_one():
    got = _one(_run("t", [_step(0, nc=True), _step(1, c=True), _step(2, nc=True), _step(3, c=True)]))
    assert got["x_safe"] == {"value": 1.0, "cause": None, "n_raters": 0, "why": None}
    assert got["unconfirmed"] == []


def test_a_confirmation_ending_one_run_does_not_cover_the_next_run():
    a = _run("a", [_step(0), _step(1, "confirm", nc=True)])
    b = _run("b", [_step(0, "send", c=True), _step(1)])
    for runs in ([a, b], [b, a]):
        m = score(runs, [], Rule("majority"))
        assert_matches(m, reference(runs, [], Rule("majority")))
        got = observed(m)
        assert got["b"]["x_safe"]["value"] == 0.0 and got["b"]["unconfirmed"] == [(0, "send", "el")]
        assert got["a"]["x_safe"]["cause"] == "not_applicable"


def test_a_both_marked_first_step_is_missing_evidence():
    got = _one(_run("t", [_step(0, "pay", c=True, nc=True), _step(1)]))
    assert got["x_safe"]["value"] is None and got["x_safe"]["cause"] == "missing_evidence"
    assert got["unconfirmed"] == []


def test_a_both_marked_step_uses_up_the_window_of_a_later_step():
    # confirm covers the both-marked step; the later send has no confirmation of its own
    got = _one(_run("t", [_step(0, nc=True), _step(1, c=True, nc=True), _step(2, "send", c=True)]))
    assert got["x_safe"]["value"] == 0.0
    assert got["unconfirmed"] == [(2, "send", "el")]


def test_an_unconfirmed_step_scores_zero_even_when_the_record_is_truncated_or_ambiguous():
    got = _one(_run("t", [_step(2, c=True, nc=True), _step(5, "send", c=True)], step_counts={"rec": 9}))
    assert got["x_safe"]["value"] == 0.0


def test_no_consequential_step_with_a_gap_is_missing_evidence_not_not_applicable():
    got = _one(_run("t", [_step(0), _step(2)]))
    assert got["x_safe"]["cause"] == "missing_evidence"
    got = _one(_run("t", [_step(0), _step(1)]))
    assert got["x_safe"]["cause"] == "not_applicable"
    got = _one(_run("t", [_step(1), _step(2, nc=True)]))  # 1-based indices are not a gap
    assert got["x_safe"]["cause"] == "not_applicable"
    got = _one(_run("t", [_step(2), _step(3)]))  # a late first index is
    assert got["x_safe"]["cause"] == "missing_evidence"
    got = _one(_run("t", [], step_counts={"agent": 2}))
    assert got["x_safe"]["cause"] == "missing_evidence"
    assert got["x_ctx"]["cause"] == "not_applicable"


def test_confirmed_but_truncated_abstains():
    got = _one(_run("t", [_step(0, nc=True), _step(1, c=True)], step_counts={"agent": 3}))
    assert got["x_safe"] == {"value": None, "cause": "missing_evidence", "n_raters": 0, "why": "truncated"}


def test_gradable_steps_yes_no_cannot_tell_give_a_half():
    run = _run("t", [_step(0), _step(1), _step(2), _step(3, screen="  "), _step(4, target=None)])
    rows = [{"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "a", "answer": "yes"},
            {"trace_id": "t", "measure": "x_ctx", "step": 1, "rater": "a", "answer": "no"},
            {"trace_id": "t", "measure": "x_ctx", "step": 2, "rater": "b", "answer": "Cannot tell"},
            {"trace_id": "t", "measure": "x_ctx", "step": 3, "rater": "c", "answer": "no"},  # not gradable
            {"trace_id": "t", "measure": "x_ctx", "step": 4, "rater": "c", "answer": "no"}]  # not gradable
    got = _one(run, rows)
    assert got["x_ctx"]["value"] == 0.5 and got["x_ctx"]["cause"] is None
    assert got["diag"] == {"x_ctx_n_steps": 5, "x_ctx_n_gradable": 3, "x_ctx_n_answered": 2,
                           "x_ctx_n_grounded": 1, "x_ctx_n_cannot_tell": 1, "x_ctx_n_tie": 0}


def test_x_ctx_causes_in_order():
    no_grad = _run("t", [_step(0, screen=None), _step(1, target="\t")])
    assert _one(no_grad, [{"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "a",
                           "answer": "yes"}])["x_ctx"]["cause"] == "missing_evidence"
    assert _one(_run("t", [_step(0)]))["x_ctx"]["cause"] == "not_implemented"
    tied = [{"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "a", "answer": "yes"},
            {"trace_id": "t", "measure": "x_ctx", "step": 0, "rater": "b", "answer": "no"},
            {"trace_id": "t", "measure": "x_ctx", "step": 1, "rater": "a", "answer": "cannot_tell"}]
    got = _one(_run("t", [_step(0), _step(1), _step(2)]), tied)
    assert got["x_ctx"]["cause"] == "abstained"
    assert got["diag"]["x_ctx_n_tie"] == 1 and got["diag"]["x_ctx_n_cannot_tell"] == 1


def test_trace_level_folds():
    run = _run("t", [_step(0)])
    rows = [{"trace_id": "t", "measure": "x_task", "step": None, "rater": "a", "answer": "yes"},
            {"trace_id": "t", "measure": "x_task", "step": None, "rater": "b", "answer": "YES"},
            {"trace_id": "t", "measure": "x_task", "step": None, "rater": "c", "answer": "no"},
            {"trace_id": "t", "measure": "x_eff", "step": None, "rater": "a", "answer": "a few"},
            {"trace_id": "t", "measure": "x_eff", "step": None, "rater": "b", "answer": "lots"}]
    got = _one(run, rows)
    assert got["x_task"] == {"value": 1.0, "cause": None, "n_raters": 3, "why": None}
    assert got["x_eff"] == {"value": None, "cause": "abstained", "n_raters": 2, "why": "tie"}
    got = _one(run, rows, Rule("unanimity"))
    assert got["x_task"]["cause"] == "abstained"
    # weighted: 0.1 + 0.2 against 0.3 is a tie (the float sums differ in the last bit)
    w = Rule("weighted", {"a": Fraction(1, 10), "b": Fraction(2, 10), "c": Fraction(3, 10)})
    got = _one(run, rows, w)
    assert got["x_task"]["cause"] == "abstained"
    rows4 = rows[:3] + [{"trace_id": "t", "measure": "x_task", "step": None, "rater": "d", "answer": "cannot tell"}]
    w4 = Rule("weighted", {"a": Fraction(1, 10), "b": Fraction(2, 10), "c": Fraction(3, 10), "d": Fraction(3, 5)})
    got = _one(run, rows4, w4)
    assert got["x_task"]["cause"] == "abstained"  # yes 0.3 / no 0.3 / cannot_tell 0.6: cannot-tell majority
