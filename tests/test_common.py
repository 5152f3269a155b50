"""Every public estimator through the same invariants, from one registry.

The way scikit-learn's ``sklearn/metrics/tests/test_common.py`` does it: each estimator
is registered with what holds for it (rater symmetry, antisymmetry, what makes it
undefined, what empty input does), and one test per invariant runs over the registry:

* the result shape: ``.statistic`` a float or an ``Abstention``, ``.confidence_interval``
  a ``ConfidenceInterval`` or an ``Abstention``, ``.defined``, and a ``to_frame()`` with
  no missing number whose cause is not given beside it;
* order invariance (permuting the items), label-type invariance (ints vs strings),
  rater symmetry (or antisymmetry: judge minus human flips sign);
* the undefined contract: constant raters / no pairable item give a result object
  whose statistic is an ``Abstention`` with a cause, and an ``UndefinedWarning``;
* the empty-input contract: no items is an ``InputError`` (count-based intervals take
  counts, and a rate over zero trials is undefined instead: registered as such).

A completeness check fails when a public function of ``evaltk.stats`` or
``evaltk.judges`` is neither registered nor listed in ``NOT_ESTIMATORS`` with a reason.

Every estimator is driven from two paired label vectors ``a, b`` (rater one and rater
two, or judge and human) through a small adapter, so the same data reaches all of them.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evaltk.judges as judges
import evaltk.stats as stats
from evaltk.errors import InputError
from evaltk.stats import ConfidenceInterval
from evaltk.values import Abstention, UndefinedWarning

BOOT = {"n_resamples": 50, "rng": 0}


def _table2(a: list[Any], b: list[Any], pos: Any) -> list[list[int]]:
    x = np.array([v == pos for v in a], dtype=bool)
    y = np.array([v == pos for v in b], dtype=bool)
    return [[int((x & y).sum()), int((x & ~y).sum())], [int((~x & y).sum()), int((~x & ~y).sum())]]


def _square(a: list[Any], b: list[Any], cats: list[Any]) -> np.ndarray:
    idx = {c: i for i, c in enumerate(cats)}
    t = np.zeros((len(cats), len(cats)), dtype=int)
    for x, y in zip(a, b, strict=True):
        t[idx[x], idx[y]] += 1
    return t


def _long(a: list[Any], b: list[Any]) -> pd.DataFrame:
    n = len(a)
    return pd.DataFrame({"item_id": [*range(n), *range(n)], "rater": ["r1"] * n + ["r2"] * n,
                         "rating": [*a, *b]})


@dataclass(frozen=True)
class Entry:
    """How to call one estimator on paired labels, and what holds for it."""

    call: Callable[[list[Any], list[Any], dict[str, Any]], Any]
    symmetry: str | None = "symmetric"  # "symmetric", "antisymmetric" or None
    constant_undefined: bool = True  # both raters give one and the same label -> undefined
    empty: str = "raises"  # "raises" (InputError) or "undefined" (counts: a rate over nothing)
    ordinal: bool = False  # needs an ordered numeric scale (labels mapped in order)
    counts: bool = False  # fed with counts of the labels: abstentions are not its concept
    pairable_undefined: bool = True  # no item with both labels -> undefined (False: it imputes, by design)
    exact_when_perfect: str | None = None  # why a zero-width interval is exact here (no sampling error)


def _labelled_pool(a: list[Any], b: list[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A one-stratum labelling design: item i is correct when the two labels agree, undecided when one is missing."""
    items = list(range(len(a)))
    correct = [None if x is None or y is None else bool(x == y) for x, y in zip(a, b, strict=True)]
    return (pd.DataFrame({"item": items, "stratum": [0] * len(a)}),
            pd.DataFrame({"item": items, "correct": pd.Series(correct, dtype=object)}))


def _unit(x: Any, ctx: dict[str, Any]) -> float | None:
    """A label on the ordered scale ``ctx["cats"]`` as a value in [0, 1]."""
    return None if x is None else ctx["cats"].index(x) / (len(ctx["cats"]) - 1)


def _coef(fn: Callable[..., Any], **kw: Any) -> Callable[[list[Any], list[Any], dict[str, Any]], Any]:
    return lambda a, b, ctx: fn(a, b, categories=ctx["cats"], **kw, **BOOT)


REGISTRY: dict[str, Entry] = {
    # agreement coefficients (stats)
    "percent_agreement": Entry(_coef(stats.percent_agreement), constant_undefined=False),
    "cohen_kappa": Entry(_coef(stats.cohen_kappa)),
    "scott_pi": Entry(_coef(stats.scott_pi)),
    "pabak": Entry(_coef(stats.pabak), constant_undefined=False),
    "brennan_prediger": Entry(_coef(stats.brennan_prediger), constant_undefined=False),
    "fleiss_kappa": Entry(_coef(stats.fleiss_kappa)),
    "conger_kappa": Entry(_coef(stats.conger_kappa)),
    "gwet_ac1": Entry(_coef(stats.gwet_ac1), constant_undefined=False),
    "gwet_ac2": Entry(_coef(stats.gwet_ac2, weights="quadratic"), constant_undefined=False),
    "krippendorff_alpha": Entry(_coef(stats.krippendorff_alpha, level="nominal")),
    "agreement_difference": Entry(
        lambda a, b, ctx: stats.agreement_difference(a, b, a, categories=ctx["cats"], **BOOT), symmetry=None),
    # classification (stats): accuracy is symmetric in judge and anchor
    "classification_metrics": Entry(
        lambda a, b, ctx: stats.classification_metrics(a, b, positive=ctx["pos"], categories=ctx["cats"]),
        constant_undefined=False),
    # intervals (stats), fed with the counts of the paired labels
    "wilson_interval": Entry(
        lambda a, b, ctx: stats.wilson_interval(sum(x == y for x, y in zip(a, b, strict=True)), len(a)),
        constant_undefined=False, empty="undefined", counts=True),
    "clopper_pearson_interval": Entry(
        lambda a, b, ctx: stats.clopper_pearson_interval(sum(x == y for x, y in zip(a, b, strict=True)), len(a)),
        constant_undefined=False, empty="undefined", counts=True),
    "paired_difference_interval": Entry(
        lambda a, b, ctx: stats.paired_difference_interval(_table2(a, b, ctx["pos"])),
        symmetry="antisymmetric", constant_undefined=False, empty="undefined", counts=True),
    # direction of error (stats)
    "mcnemar_test": Entry(lambda a, b, ctx: stats.mcnemar_test(_table2(a, b, ctx["pos"]), method="asymptotic"),
                          empty="undefined", counts=True),
    "stuart_maxwell_test": Entry(lambda a, b, ctx: stats.stuart_maxwell_test(_square(a, b, ctx["cats"])),
                                 empty="undefined", counts=True),
    "signed_bias": Entry(lambda a, b, ctx: stats.signed_bias(a, b, positive=ctx["pos"]),
                         symmetry="antisymmetric", constant_undefined=False),
    "direction_of_error": Entry(lambda a, b, ctx: stats.direction_of_error(a, b, positive=ctx["pos"]),
                                symmetry="antisymmetric", constant_undefined=False),
    "mean_signed_difference": Entry(
        lambda a, b, ctx: stats.mean_signed_difference(a, b, categories=ctx["cats"]),
        symmetry="antisymmetric", constant_undefined=False, ordinal=True),
    # the bootstrap engine on a user statistic (share of agreeing items)
    "bootstrap": Entry(lambda a, b, ctx: stats.bootstrap(
        (np.array([ctx["cats"].index(x) for x in a]), np.array([ctx["cats"].index(x) for x in b])),
        lambda x, y: float(np.mean(x == y)), **BOOT), constant_undefined=False, counts=True),
    # judge calibration (judges)
    "human_ceiling": Entry(lambda a, b, ctx: judges.human_ceiling(_long(a, b), level="nominal", categories=ctx["cats"], **BOOT),
                           constant_undefined=False),
    "calibration_numbers": Entry(
        lambda a, b, ctx: judges.calibration_numbers(_long(b, b), dict(enumerate(a)), level="nominal",
                                                     categories=ctx["cats"],
                                                     **BOOT),
        symmetry=None, constant_undefined=False),
    # active labelling (judges): one stratum, so the stratified estimate is the share of agreeing items
    "stratified_accuracy": Entry(lambda a, b, ctx: judges.stratified_accuracy(*_labelled_pool(a, b)),
                                 constant_undefined=False,
                                 exact_when_perfect="the adapter labels the whole pool: a census has no "
                                                    "sampling error (finite-population correction)"),
    # where you are (judges): the judge's answers on the labelled runs and as many more unlabelled,
    # labels on an ordered scale mapped into [0, 1]; a label whose judge answer is missing still
    # counts (the judge's answer is imputed without labels), so "no pairable item" is defined
    "level_estimate": Entry(
        lambda a, b, ctx: judges.level_estimate(
            {**{i: _unit(x, ctx) for i, x in enumerate(a)}, **{len(a) + i: _unit(x, ctx) for i, x in enumerate(a)}},
            {i: _unit(x, ctx) for i, x in enumerate(b)}),
        symmetry=None, constant_undefined=False, ordinal=True, pairable_undefined=False),
    # the expansion gate: its statistic is the agreement coefficient on the overlap sample
    "expansion_gate": Entry(lambda a, b, ctx: judges.expansion_gate(a, b, statistic="cohen_kappa")),
}

#: Interval options of registered estimators (issue #16), run through the same shape and symmetry
#: invariants: (estimator, keywords, what the result records as ``(method, distribution)``).
OPTIONS: dict[str, tuple[str, dict[str, Any], tuple[str, str | None]]] = {
    "percent_agreement[wilson]": ("percent_agreement", {"method": "wilson"}, ("wilson", None)),
    "percent_agreement[analytic, t]": ("percent_agreement", {"method": "analytic", "distribution": "t"},
                                       ("analytic", "t")),
    "percent_agreement[analytic, normal]": ("percent_agreement", {"method": "analytic", "distribution": "normal"},
                                            ("analytic", "normal")),
    **{f"{n}[analytic, {d}]": (n, {"method": "analytic", "distribution": d}, ("analytic", d))
       for n in ("cohen_kappa", "scott_pi", "pabak", "brennan_prediger", "fleiss_kappa", "conger_kappa",
                 "gwet_ac1", "krippendorff_alpha") for d in ("t", "normal")},
}

#: Public functions that are not estimators of one statistic, and why.
NOT_ESTIMATORS: dict[str, str] = {
    # stats
    "weight_matrix": "builds agreement weights; no data",
    "kappa_from_tables": "vectorised array core of cohen_kappa (arrays in, arrays out); checked against it "
                         "in test_calibration",
    "classification_report": "a per-class DataFrame (tidy per-group output)",
    "bootstrap_table": "the engine behind every agreement coefficient's interval (registered through them)",
    "bootstrap_sums": "the engine core (registered through bootstrap_table and the judges' gates)",
    "resample_counts": "draws resample counts; no statistic",
    "wilson_bounds": "vectorised array core of wilson_interval",
    "clopper_pearson_bounds": "vectorised array core of clopper_pearson_interval",
    "z_value": "a normal quantile",
    "critical_value": "a normal or Student t quantile",
    "absolute_level": "level_estimate on a score matrix, checked by check_use('absolute_level'): a use "
                      "decision around the registered estimator (tests/judges/test_level.py)",
    "human_level_labels": "folds a long labels table to one label per trace; no statistic",
    "expected_half_width": "plans the next labelling batch from a LevelEstimate; no data",
    "ppi_mean": "array core of judges.level_estimate (clean numbers in; abstentions folded by the caller); "
                "checked against ppi_py in tests/stats/test_ppi.py",
    "active_mean": "array core of judges.level_estimate's active design; tested in tests/stats/test_ppi.py",
    "rogan_gladen": "array core of judges.level_estimate(method='rogan_gladen'); tested in tests/stats/test_ppi.py",
    "lean_from_interval": "words for an interval; no data",
    "holm_adjust": "adjusts a family of p-values (no data); checked against statsmodels multipletests in "
                   "test_direction",
    "class_bias": "a per-class DataFrame of signed_bias one-vs-rest",
    "confusion_asymmetry": "a per-pair DataFrame of McNemar components",
    "direction_table": "a per-dimension DataFrame of direction_of_error",
    "table_direction": "direction_of_error on the label lists a ConfusionTable holds (tests/stats/test_direction.py)",
    "pass_at_k": "a closed-form count formula (float in, float out), tested in test_suite",
    "pass_hat_k": "a closed-form count formula (float in, float out), tested in test_suite",
    "score_partials": "mergeable summary tables (their coefficients are the registered ones)",
    "score_summary": "mergeable summary table",
    "confusion_table": "mergeable summary table; its .statistic() is cohen_kappa's batch formula",
    "calibration_table": "mergeable summary table",
    "unit_patterns": "mergeable summary table; its .statistic() is krippendorff_alpha's batch formula",
    "pass_counts": "mergeable summary table",
    "combine_all": "adds summary tables",
    # judges
    "fold_panel": "folds judge verdicts into one verdict (panel), no statistic",
    "fold_pairwise_trials": "folds pairwise trials into verdicts",
    "review_queue": "a queue of items for review",
    "agentrewardbench_ceiling": "a per-question DataFrame of human_ceiling",
    "summarize_frame": "a per-group table of means by cause (tests/test_summaries.py checks it against summarize)",
    "population_table": "a table of cell probabilities; no data",
    "promotion_check": "checks the promotion rule's conditions (a decision, not an estimate)",
    "calibration_record": "builds a record for the manifest",
    "alt_test": "a hypothesis test over annotators with min_items per annotator (refuses smaller data); "
                "its result shape is checked in test_alt_test_result_has_the_shape",
    "kappa_sample_size": "plans a sample size by simulation; no data",
    "anchor_correctness": "a per-answer table of correctness against the anchor",
    "judge_costs": "a per-judge table of cost and latency",
    "canary_hits": "a per-judge table of canary results",
    "select_judges": "a selection decision over judges (uses wilson_interval and bootstrap_sums)",
    "published_precision_recall": "puts intervals on a published table (a selection decision)",
    "pareto_frontier": "a frontier of points",
    "uncertainty_strata": "assigns strata for labelling",
    "propose_batch": "proposes items to label",
    "gate": "a promote / review / regress decision over dimensions",
    "data_validity": "a list of reasons",
    "scoring_consistency": "a list of reasons",
    "unpinned_instruments": "a list of reasons",
    "load_rubric": "reads a rubric file (tests/judges/test_rubric.py)",
    "unit_of": "a measure's unit, from the vocabulary",
    "judge_config": "builds a judge's configuration",
    "read_judges": "reads a sweep's judges file",
    "run_judge": "calls a judge over HTTP and returns an answers table (tests/judges/test_runner.py)",
    "sweep_judges": "runs judges then select_judges (tests/judges/test_judge_cli.py)",
}


# --------------------------------------------------------------------------- data


A = [0, 1, 1, 0, 2, 1, 0, 0, 1, 2, 2, 1, 0, 1]
B = [0, 1, 0, 0, 2, 1, 1, 0, 1, 2, 1, 1, 0, 2]
CATS = [0, 1, 2]
WORDS = {0: "low", 1: "mid", 2: "high"}


def _ctx(cats: list[Any] = CATS, pos: Any = 1) -> dict[str, Any]:
    return {"cats": list(cats), "pos": pos}


def _quiet(fn: Callable[..., Any], *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _stat(r: Any) -> float | Abstention:
    return r.statistic


def _close(x: Any, y: Any) -> bool:
    if isinstance(x, Abstention) or isinstance(y, Abstention):
        return isinstance(x, Abstention) and isinstance(y, Abstention)
    return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12)


def _check_shape(r: Any) -> None:
    assert not isinstance(r, Abstention), "a bare Abstention is never returned"
    st_ = r.statistic
    assert isinstance(st_, Abstention) or isinstance(st_, (int, float, np.floating)), type(st_)
    ci = r.confidence_interval
    assert isinstance(ci, (ConfidenceInterval, Abstention)), type(ci)
    if isinstance(ci, ConfidenceInterval):
        assert ci.low <= ci.high or math.isnan(ci.low)
    assert r.defined == (not isinstance(st_, Abstention))
    f = r.to_frame()
    assert isinstance(f, pd.DataFrame) and len(f) >= 1
    pairs = (("statistic", "cause"), ("ci_low", "ci_cause"), ("ci_high", "ci_cause"))
    if "value" in f.columns and "statistic" not in f.columns:  # one row per metric (classification): value, or the cause of its absence
        pairs = (("value", "cause"),)
    for col, cause in pairs:
        assert col in f.columns and cause in f.columns, (col, list(f.columns))
        missing = f[col].isna()
        assert f.loc[missing, cause].notna().all(), f"`{col}` is missing without a cause"


NAMES = sorted(REGISTRY)


# --------------------------------------------------------------------------- completeness


def test_every_public_estimator_is_registered_or_explained():
    public = {}
    for mod in (stats, judges):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                public[name] = obj
    unlisted = sorted(set(public) - set(REGISTRY) - set(NOT_ESTIMATORS))
    assert not unlisted, f"public functions neither registered nor explained in NOT_ESTIMATORS: {unlisted}"
    stale = sorted((set(REGISTRY) | set(NOT_ESTIMATORS)) - set(public))
    assert not stale, f"registered names that are no longer public: {stale}"
    assert not set(REGISTRY) & set(NOT_ESTIMATORS)
    assert all(reason.strip() for reason in NOT_ESTIMATORS.values())


# --------------------------------------------------------------------------- invariants


@pytest.mark.parametrize("name", NAMES)
def test_result_shape(name):
    r = _quiet(REGISTRY[name].call, A, B, _ctx())
    _check_shape(r)
    assert r.defined


@pytest.mark.parametrize("name", NAMES)
def test_order_invariance(name):
    e = REGISTRY[name]
    perm = np.random.default_rng(3).permutation(len(A))
    r0 = _quiet(e.call, A, B, _ctx())
    r1 = _quiet(e.call, [A[i] for i in perm], [B[i] for i in perm], _ctx())
    assert _close(_stat(r0), _stat(r1))


@pytest.mark.parametrize("name", NAMES)
def test_label_type_invariance(name):
    e = REGISTRY[name]
    r0 = _quiet(e.call, A, B, _ctx())
    if e.ordinal:  # an ordered scale given as words, in the same order
        words = [WORDS[c] for c in CATS]
        r1 = _quiet(e.call, [WORDS[x] for x in A], [WORDS[x] for x in B], _ctx(words, WORDS[1]))
    else:  # nominal: any names; sorted order differs from the ints' on purpose
        names = {0: "zebra", 1: "apple", 2: "mango"}
        r1 = _quiet(e.call, [names[x] for x in A], [names[x] for x in B],
                    _ctx([names[c] for c in CATS], names[1]))
    assert _close(_stat(r0), _stat(r1))


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].symmetry])
def test_rater_symmetry(name):
    e = REGISTRY[name]
    ab = _stat(_quiet(e.call, A, B, _ctx()))
    ba = _stat(_quiet(e.call, B, A, _ctx()))
    assert _close(ab, ba if e.symmetry == "symmetric" else -ba)


@pytest.mark.parametrize("name", [n for n in NAMES if not REGISTRY[n].counts and REGISTRY[n].pairable_undefined])
def test_no_pairable_item_is_undefined_with_a_cause_and_a_warning(name):
    # every item lacks one of the two labels; count-fed estimators have no abstentions
    # (their undefined cases are the constant-rater and empty-table tests)
    a, b = [0, None, 1, None], [None, 1, None, 2]
    with pytest.warns(UndefinedWarning):
        r = REGISTRY[name].call(a, b, _ctx())
    _check_shape(r)
    assert isinstance(r.statistic, Abstention) and r.statistic.cause.value == "missing_evidence"


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].constant_undefined])
def test_constant_raters_are_undefined_with_a_cause_and_a_warning(name):
    a = [1] * 8
    with pytest.warns(UndefinedWarning):
        r = REGISTRY[name].call(a, list(a), _ctx())
    _check_shape(r)
    assert not r.defined and r.statistic.reason


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_interval_options_keep_the_invariants_and_are_recorded(option):
    name, kw, (method, dist) = OPTIONS[option]
    fn = getattr(stats, name)
    extra = {"level": "nominal"} if name == "krippendorff_alpha" else {}
    r = _quiet(lambda a, b: fn(a, b, categories=CATS, **extra, **kw), A, B)
    _check_shape(r)
    assert r.defined and (r.method, r.distribution) == (method, dist)
    f = r.to_frame()
    assert f.loc[0, "method"] == method and (f.loc[0, "distribution"] == dist or dist is None)
    swapped = _quiet(lambda a, b: fn(a, b, categories=CATS, **extra, **kw), B, A)
    assert _close(r.statistic, swapped.statistic)
    assert _close(r.confidence_interval.low, swapped.confidence_interval.low)


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].exact_when_perfect is None])
@pytest.mark.parametrize("n", [2, 12])
def test_perfect_agreement_never_gives_a_zero_width_interval(name, n):
    """Issue #16: from a sample, an interval reflects the sample size or abstains with its cause."""
    a = [0, 1] * (n // 2)
    r = _quiet(REGISTRY[name].call, a, list(a), _ctx())
    _check_shape(r)
    ci = r.confidence_interval
    if isinstance(ci, Abstention):
        assert ci.reason
    else:
        assert ci.low < ci.high, (name, ci)


@pytest.mark.parametrize("name", NAMES)
def test_empty_input(name):
    e = REGISTRY[name]
    if e.empty == "raises":
        with pytest.raises(InputError):
            _quiet(e.call, [], [], _ctx())
    else:
        with pytest.warns(UndefinedWarning):
            r = e.call([], [], _ctx())
        _check_shape(r)
        assert not r.defined


def test_undefined_statistic_in_the_bootstrap_engine_is_a_result():
    with pytest.warns(UndefinedWarning):
        r = stats.bootstrap(np.array([1.0, 2.0]), lambda x: math.nan, **BOOT)
    _check_shape(r)
    assert not r.defined and isinstance(r.confidence_interval, Abstention)


def test_alt_test_result_has_the_shape():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 40)
    humans = {f"h{k}": {i: int(t if rng.random() > 0.2 else 1 - t) for i, t in enumerate(truth)}
              for k in range(3)}
    r = judges.alt_test(humans, {i: int(t) for i, t in enumerate(truth)})
    _check_shape(r)


# --------------------------------------------------------------------------- property-based


labels = st.lists(st.tuples(st.sampled_from(CATS), st.sampled_from(CATS)), min_size=3, max_size=30)


@pytest.mark.parametrize("name", ["cohen_kappa", "krippendorff_alpha", "gwet_ac1", "scott_pi",
                                  "percent_agreement", "signed_bias", "classification_metrics"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=labels, seed=st.integers(0, 2**16))
def test_invariants_hold_on_any_data(name, pairs, seed):
    e = REGISTRY[name]
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    r = _quiet(e.call, a, b, _ctx())
    _check_shape(r)
    perm = np.random.default_rng(seed).permutation(len(a))
    assert _close(_stat(r), _stat(_quiet(e.call, [a[i] for i in perm], [b[i] for i in perm], _ctx())))
    if e.symmetry:
        ba = _stat(_quiet(e.call, b, a, _ctx()))
        assert _close(_stat(r), ba if e.symmetry == "symmetric" or isinstance(ba, Abstention) else -ba)
