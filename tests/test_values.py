"""The value space (seed 002, first sections): values in [0, 1] or an abstention with a cause."""

from __future__ import annotations

import importlib
import inspect
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaltk.stats import summarize_frame
from evaltk.values import (
    ABSTAIN_WORDS,
    ANSWER_VALUES,
    ANSWER_VOCABULARIES,
    CANNOT_TELL,
    CAUSES,
    LEVELS,
    MEASURE_LEVELS,
    NO_VALIDATED_THRESHOLD,
    Abstention,
    Cause,
    MeanSummary,
    Threshold,
    VerdictOutcome,
    abstain_labels,
    answer_categories,
    check_value_cause,
    make_score,
    measure_level,
    normalize_answer,
    resolve_fail_closed,
    summarize,
    verdict,
    verdicts,
)


def test_four_causes_in_seed_order():
    assert CAUSES == ("not_applicable", "missing_evidence", "not_implemented", "abstained")


def test_abstention_requires_a_known_cause():
    with pytest.raises(ValueError, match="`cause` must be one of"):
        Abstention("unknown")
    assert Abstention(Cause.ABSTAINED).cause is Cause.ABSTAINED


@pytest.mark.parametrize("op", [float, int, bool, lambda a: a + 0, lambda a: 0 + a, lambda a: a * 1,
                                lambda a: a < 0.5, lambda a: sum([a])])
def test_abstention_never_becomes_a_number(op):
    with pytest.raises(TypeError, match="has no numeric value"):
        op(Abstention("not_applicable", "no consequential step"))


@pytest.mark.parametrize("bad", [float("nan"), None, True, "0.5", 1.5, -0.1, float("inf")])
def test_make_score_refuses_values_outside_the_space(bad):
    with pytest.raises((ValueError, TypeError)):
        make_score(bad)


def test_make_score_keeps_values_and_abstentions():
    assert make_score(0) == 0.0 and isinstance(make_score(1), float)
    a = Abstention("abstained")
    assert make_score(a) is a


def test_check_value_cause_names_the_row():
    ok = pd.DataFrame({"value": [0.5, np.nan], "cause": [None, "abstained"]})
    check_value_cause(ok)
    with pytest.raises(ValueError, match="row 1 has a missing `value` without a `cause`"):
        check_value_cause(pd.DataFrame({"value": [0.5, np.nan], "cause": [None, None]}))
    with pytest.raises(ValueError, match="row 0 has both"):
        check_value_cause(pd.DataFrame({"value": [0.5], "cause": ["abstained"]}))
    with pytest.raises(ValueError, match="outside"):
        check_value_cause(pd.DataFrame({"value": [1.5], "cause": [None]}))
    with pytest.raises(ValueError, match="unknown `cause`"):
        check_value_cause(pd.DataFrame({"value": [np.nan], "cause": ["skipped"]}))


def test_summary_reports_n_excluded_by_cause_and_coverage():
    s = summarize([1.0, 0.0, 1.0, Abstention("not_applicable"), Abstention("missing_evidence")])
    assert s.n == 5 and s.n_valued == 3 and s.n_excluded == 2
    assert s.mean == pytest.approx(2 / 3)
    assert s.excluded == {"not_applicable": 1, "missing_evidence": 1, "not_implemented": 0, "abstained": 0}
    assert s.coverage == pytest.approx(0.6)
    d = s.to_dict()
    assert d["n_not_applicable"] == 1 and d["mean_cause"] is None


def test_all_abstained_mean_is_an_abstention_with_the_cause():
    s = summarize([Abstention("not_applicable"), Abstention("not_applicable")])
    assert isinstance(s.mean, Abstention) and s.mean.cause is Cause.NOT_APPLICABLE
    assert s.coverage == 0.0
    empty = summarize([])
    assert isinstance(empty.mean, Abstention) and isinstance(empty.coverage, Abstention)


def test_summary_cannot_lose_a_record():
    with pytest.raises(ValueError, match="no record may vanish"):
        MeanSummary(n=3, n_valued=1, total=1.0, excluded={"abstained": 1})


def test_summarize_frame_groups():
    df = pd.DataFrame({
        "measure": ["a", "a", "a", "b", "b"],
        "value": [1.0, 0.0, np.nan, np.nan, np.nan],
        "cause": [None, None, "abstained", "not_applicable", "not_applicable"],
    })
    out = summarize_frame(df, "measure").set_index("measure")
    assert out.loc["a", "mean"] == 0.5 and out.loc["a", "n_excluded"] == 1 and out.loc["a", "n_abstained"] == 1
    assert out.loc["a", "coverage"] == pytest.approx(2 / 3)
    assert math.isnan(out.loc["b", "mean"]) and out.loc["b", "mean_cause"] == "not_applicable"
    assert out.loc["b", "n_not_applicable"] == 2
    # every NaN in the output has a cause beside it
    assert (out["mean"].isna() == out["mean_cause"].notna()).all()


scores = st.one_of(
    st.floats(0, 1, allow_nan=False),
    st.sampled_from(CAUSES).map(Abstention),
)


@given(st.lists(scores, max_size=40), st.sampled_from(CAUSES))
def test_property_an_abstention_never_moves_a_mean_as_zero_or_one_would(xs, cause):
    base = summarize(xs)
    more = summarize([*xs, Abstention(cause)])
    if base.n_valued:
        assert more.mean == pytest.approx(base.mean)
    assert more.n == base.n + 1 and more.excluded[cause] == base.excluded[cause] + 1
    assert more.n_valued == base.n_valued


@given(st.lists(scores, max_size=40), st.randoms())
def test_property_order_invariance_and_combine(xs, rnd):
    ys = list(xs)
    rnd.shuffle(ys)
    a, b = summarize(xs), summarize(ys)
    assert a.n == b.n and a.excluded == b.excluded
    if a.n_valued:
        assert a.mean == pytest.approx(b.mean)
    cut = rnd.randint(0, len(xs))
    c = summarize(xs[:cut]).combine(summarize(xs[cut:]))
    assert c.n == a.n and c.excluded == a.excluded and c.n_valued == a.n_valued
    assert c.total == pytest.approx(a.total, abs=1e-12)


def test_verdict_without_validated_threshold_publishes_value_and_abstains():
    v = verdict(0.82, None)
    assert v.outcome is VerdictOutcome.ABSTAIN and v.reason == NO_VALIDATED_THRESHOLD
    assert v.value == 0.82  # the value is still published
    v2 = verdict(0.82, Threshold(0.9, validated=False, source="guess"))
    assert v2.outcome is VerdictOutcome.ABSTAIN and v2.reason == NO_VALIDATED_THRESHOLD


def test_verdict_with_validated_threshold():
    th = Threshold(0.7, validated=True, source="decision cost, 2026-W40")
    assert verdict(0.7, th).outcome is VerdictOutcome.PASS
    assert verdict(0.69, th).outcome is VerdictOutcome.FAIL
    low = Threshold(0.2, validated=True, source="policy", higher_is_better=False)
    assert verdict(0.1, low).passed


def test_abstained_value_gives_abstained_verdict_and_only_the_gate_fails_it():
    v = verdict(Abstention("missing_evidence", "no screen"), Threshold(0.5, validated=True))
    assert v.outcome is VerdictOutcome.ABSTAIN and "missing_evidence" in v.reason
    g = resolve_fail_closed(v)
    assert g.outcome is VerdictOutcome.FAIL and g.reason.startswith("fail-closed")
    assert resolve_fail_closed(verdict(0.9, Threshold(0.5, validated=True))).passed


def test_vectorised_verdicts_match_scalar():
    df = pd.DataFrame({
        "measure": ["x_task", "x_task", "x_ctx", "x_eff"],
        "value": [1.0, np.nan, 0.4, 0.5],
        "cause": [None, "abstained", None, None],
    })
    th = {"x_task": Threshold(0.5, validated=True, source="s"), "x_ctx": Threshold(0.5, validated=True)}
    out = verdicts(df, th)
    assert list(out["verdict"]) == ["pass", "abstain", "fail", "abstain"]
    assert out["verdict_reason"].iloc[3] == NO_VALIDATED_THRESHOLD
    assert out["value"].iloc[2] == 0.4  # value unchanged by the verdict


def test_mixed_abstentions_headline_missing_evidence_never_not_applicable():
    s = summarize([Abstention("not_applicable"), Abstention("missing_evidence")])
    assert s.mean.cause is Cause.MISSING_EVIDENCE and "not_applicable 1" in s.mean.reason
    df = pd.DataFrame({"m": ["a", "a", "b"], "value": [np.nan] * 3,
                       "cause": ["not_applicable", "missing_evidence", "not_applicable"]})
    out = summarize_frame(df, "m").set_index("m")
    assert out.loc["a", "mean_cause"] == "missing_evidence" and out.loc["b", "mean_cause"] == "not_applicable"


def test_summarize_frame_keeps_rows_whose_group_key_is_missing():
    df = pd.DataFrame({"agent": ["v1", None, None], "value": [1.0, 0.0, np.nan],
                       "cause": [None, None, "abstained"]})
    out = summarize_frame(df, "agent")
    assert out["n"].sum() == 3 and len(out) == 2


# --------------------------------------------------------------------------- the answer vocabulary (issue 13)

_SUBPACKAGES = ("evaltk.stats", "evaltk.judges", "evaltk.ingest", "evaltk.scoring", "evaltk.data",
                "evaltk.scale", "evaltk.suite", "evaltk.trajectory", "evaltk.fixtures", "evaltk.report")


def _public_callables():
    """Every public function (and class constructor) of every subpackage, once."""
    seen = {}
    for name in _SUBPACKAGES:
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr)
            if callable(obj) and id(obj) not in seen:
                seen[id(obj)] = (f"{name}.{attr}", obj)
    return list(seen.values())


def _params(obj):
    try:
        return inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return {}


def test_every_abstain_parameter_defaults_to_the_vocabulary():
    found = []
    for name, obj in _public_callables():
        for pname in ("abstain", "abstain_words"):
            p = _params(obj).get(pname)
            if p is not None:
                found.append(name)
                assert p.default is ABSTAIN_WORDS, f"{name}({pname}=...) defaults to {p.default!r}"
    # the doors issue 13 names, and the panel fold's rule
    for must in ("evaltk.stats.percent_agreement", "evaltk.stats.cohen_kappa", "evaltk.stats.signed_bias",
                 "evaltk.judges.human_ceiling", "evaltk.judges.calibration_numbers", "evaltk.judges.alt_test",
                 "evaltk.judges.expansion_gate", "evaltk.judges.anchor_correctness", "evaltk.judges.FoldRule"):
        assert must in found, must


def test_no_level_parameter_has_a_silent_default():
    found = []
    for name, obj in _public_callables():
        p = _params(obj).get("level")
        if p is not None:
            found.append(name)
            assert p.default in (inspect.Parameter.empty, None), f"{name}(level={p.default!r})"
    assert "evaltk.judges.human_ceiling" in found and "evaltk.stats.krippendorff_alpha" in found


def test_abstain_words_are_every_spelling_of_cannot_tell():
    assert ABSTAIN_WORDS[0] == CANNOT_TELL
    assert len(set(ABSTAIN_WORDS)) == len(ABSTAIN_WORDS)
    assert {normalize_answer(w) for w in ABSTAIN_WORDS} == {CANNOT_TELL}
    for w in ("Cannot tell", "cannot tell", "CANNOT_TELL", "Unsure", "unsure", "Can't tell", "cannot-tell"):
        assert w in ABSTAIN_WORDS
    for w in ("no", "not_applicable", "none", "N/A", ""):
        assert w not in ABSTAIN_WORDS


def test_abstain_labels():
    assert abstain_labels(()) == frozenset()
    assert abstain_labels("Unsure") == {"Unsure"}
    assert abstain_labels(["a", "b"], categories=["b"]) == {"a"}
    assert "Unsure" not in abstain_labels(ABSTAIN_WORDS, categories=["Yes", "Unsure"])
    with pytest.raises(TypeError, match="`abstain` must be a label or labels"):
        abstain_labels(None)


def test_vocabulary_words_values_order_and_levels():
    assert ANSWER_VOCABULARIES["x_eff"] == ("none", "a_few", "lots", "cannot_tell")
    assert ANSWER_VALUES["x_eff"] == {"none": 1.0, "a_few": 0.5, "lots": 0.0, "cannot_tell": None}
    assert ANSWER_VALUES["x_task"]["cannot_tell"] is None and ANSWER_VALUES["x_safe"]["not_applicable"] is None
    assert MEASURE_LEVELS == {"x_task": "nominal", "x_safe": "nominal", "x_eff": "ordinal", "x_ctx": "nominal",
                              "g_fidelity": "nominal", "g_adherence": "nominal", "g_outcome": "nominal"}
    assert answer_categories("x_eff") == ("lots", "a_few", "none")
    assert answer_categories("x_ctx") == ("no", "yes")
    assert measure_level("t_eff") == "ordinal"
    with pytest.raises(ValueError, match="`measure` must be one of"):
        measure_level("g_retrieval")  # free text: no level
    for m, words in ANSWER_VOCABULARIES.items():
        assert CANNOT_TELL in words and tuple(ANSWER_VALUES[m]) == words
        assert all(normalize_answer(w) == w for w in words)


def test_one_home_for_the_vocabulary():
    import evaltk.data as data
    import evaltk.ingest as ingest
    import evaltk.scoring as scoring
    import evaltk.values as values

    assert not hasattr(ingest, "ANSWER_VOCABULARIES")  # one home: re-exported nowhere else
    assert not hasattr(ingest, "MEASURE_ALIASES") and not hasattr(ingest, "normalize_answer")
    assert scoring.VOCABULARIES is values.ANSWER_VALUES
    assert data.TASK_WORDS is values.ANSWER_VOCABULARIES["x_task"]
    assert data.EFF_WORDS is values.ANSWER_VOCABULARIES["x_eff"]
    import evaltk.judges._panel as panel
    import evaltk.stats._agreement as agreement

    assert not hasattr(agreement, "DEFAULT_ABSTAIN")
    assert panel.FoldRule().abstain_words is values.ABSTAIN_WORDS


def test_levels_of_measurement_have_one_home():
    """values.LEVELS is the one tuple of levels; stats, judges and the gate read it (issue #13)."""
    from evaltk import judges, stats

    assert LEVELS == ("nominal", "ordinal", "interval", "ratio") and stats.LEVELS is LEVELS
    assert set(MEASURE_LEVELS.values()) <= set(LEVELS)
    assert judges.CALIBRATION_LEVELS == LEVELS[:2]
    for m, kind in judges.DIMENSION_TYPES.items():
        assert (kind == "ordinal") == (MEASURE_LEVELS.get(m) == "ordinal"), m
    assert judges.DIMENSION_TYPES["x_ctx"] == "per_step_rate"
    assert stats.WEIGHTS == ("identity", "linear", "quadratic", "ordinal", "ratio")
