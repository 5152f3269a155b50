"""Gates and regression: promote, review or regress a candidate checkpoint against a baseline.

Seed 002, "Gates and regression": data validity, scoring consistency, interpretability,
in order; a hard-check failure stops the run.  Then each dimension is compared with the
test matching its type, corrected for multiple comparisons, and decided:

================  ===================================================================
dimension type    test (paired on the ``pair_by`` key, default the task)
================  ===================================================================
binary            McNemar mid-p on discordant pairs (``evaltk.stats.MCNEMAR_METHOD``, the
(x_task, x_safe,  test signed_bias reports), Newcombe paired interval of the
g_*)              difference; a paired cluster bootstrap when a key has several runs
ordinal (x_eff)   Wilcoxon signed-rank on paired differences (zero differences dropped,
                  Wilcoxon's convention), mean difference with a bootstrap interval
per-step rate     cluster bootstrap over keys of the pooled rate grounded / answered
(x_ctx)           (steps resampled with their trace, never alone)
================  ===================================================================

Holm's correction by default across the dimensions tested (``correction="fdr_bh"``
for Benjamini-Hochberg), through pingouin.  The caller sets the minimum practical
effect.  A significant drop at least that large is a **regress** on a calibrated
dimension and only a **review** on an uncalibrated one: there is
no validated measure to regress against.  Calibration belongs to the instrument: when
both sides share it (same scorer, version and fold rule) a calibration record on either
side applies to both, so a candidate scored with a fresh default manifest still regresses;
otherwise both sides must carry one.  A dimension **promotes** only when its
interval rules out a drop of the minimum practical effect (a non-significant result whose
interval still allows such a drop is inconclusive and routes to review), and only when
each side has at least ``min_pairs`` answered records: a dimension nobody answered, or
one switched off, measured nothing.  In the gate, abstentions resolve toward failure (``missing_evidence``,
``abstained`` and ``not_implemented`` count 0) while ``not_applicable`` stays out (a
run that never took the risk is not a failure); the scores themselves are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._display import HtmlTable
from .._validation import (
    check_choice,
    check_confidence_level,
    import_optional,
    recorded_seed,
    seeded_rng,
    zero_width,
)
from ..scoring import (
    GUIDE_MEASURES,
    TRACE_MEASURES,
    ScoreMatrix,
    instrument_differences,
    same_instrument,
    unpinned_sides,
)
from ..stats import (
    BootstrapConfig,
    BootstrapResult,
    bootstrap_sums,
    mcnemar_test,
    paired_difference_interval,
)
from ..values import CAUSES, MEASURE_LEVELS, PER_STEP_MEASURES, Abstention, Cause

#: The gate's test per measure, from the vocabulary's levels (values.MEASURE_LEVELS): a
#: per-step measure is a rate, an ordinal one ordinal, every other one binary.
DIMENSION_TYPES: dict[str, str] = {
    m: "per_step_rate" if m in PER_STEP_MEASURES else "ordinal" if MEASURE_LEVELS.get(m) == "ordinal" else "binary"
    for m in (*TRACE_MEASURES, *GUIDE_MEASURES)}

FAIL_CLOSED_CAUSES = ("missing_evidence", "abstained", "not_implemented")


class GateRefused(ValueError):
    """A hard check failed: the comparison is not run.  ``gate`` names which."""

    def __init__(self, gate: str, reasons: Sequence[str]) -> None:
        self.gate = gate
        self.reasons = list(reasons)
        super().__init__(f"{gate} check failed: " + "; ".join(self.reasons))


def data_validity(m: ScoreMatrix, name: str) -> list[str]:
    """Reasons ``m`` is not valid data: NaN without a cause, an incomplete ledger, missing measures."""
    out = []
    f = m.frame
    v = f["value"].to_numpy(float)
    c = f["cause"].notna().to_numpy()
    if (np.isnan(v) != c).any():
        out.append(f"{name}: {(np.isnan(v) != c).sum()} score rows break the value/cause invariant")
    bad_cause = set(f["cause"].dropna().astype(str)) - set(CAUSES)
    if bad_cause:
        out.append(f"{name}: unknown causes {sorted(bad_cause)}")
    if ((v < 0) | (v > 1)).any():
        out.append(f"{name}: values outside [0, 1]")
    led = m.ledger
    if led is None or led.empty:
        out.append(f"{name}: no ingest ledger (every input record must be accounted for)")
    else:
        if not led["status"].isin(["kept", "dropped"]).all():
            out.append(f"{name}: ledger has statuses other than kept/dropped")
        dropped = led[led["status"] == "dropped"]
        if dropped["reason"].isna().any():
            out.append(f"{name}: {int(dropped['reason'].isna().sum())} dropped records without a reason")
    missing = m.missing_measures()  # seed 002: every measure present, as a value or an abstention
    if len(missing):
        out.append(f"{name}: some traces miss measures ({', '.join(missing['measure'])}); every measure must "
                   "be present, as a value or an abstention")
    return out


def scoring_consistency(a: ScoreMatrix, b: ScoreMatrix, measures: Sequence[str]) -> list[str]:
    """Reasons the two matrices are not on one scale: their instruments differ (one reason per
    differing field: scorer, version, fold rule, each judge's model, rubric, template and
    decoding; :func:`evaltk.scoring.instrument_differences`), or a definition is superseded.

    An unpinned instrument is no reason here: it routes the dimension to review
    (:func:`unpinned_instruments`)."""
    out = []
    for meas in measures:
        sa, sb = a.manifest.status(meas), b.manifest.status(meas)
        out += [f"{d.describe()} (another instrument: the two numbers are not on one scale)"
                for d in instrument_differences(a.manifest.instrument(meas), b.manifest.instrument(meas))]
        if sa.lifecycle == "superseded" or sb.lifecycle == "superseded":
            out.append(f"{meas}: a superseded definition is not gated")
    return out


def unpinned_instruments(a: ScoreMatrix, b: ScoreMatrix, measure: str) -> list[str]:
    """Why the two sides' instruments of ``measure`` are not both pinned (empty: both are).

    Answers without judge metadata still score, but nothing shows the two sides were
    measured by one instrument: the gate routes such a dimension to review, never promote."""
    return unpinned_sides(a.manifest.instrument(measure), b.manifest.instrument(measure))


def _review_unpinned(dims: pd.DataFrame, a: ScoreMatrix, b: ScoreMatrix) -> pd.DataFrame:
    """A dimension whose instrument is unpinned on either side goes to review, whatever its test said."""
    why = [unpinned_instruments(a, b, m) for m in dims["measure"]]
    dims["instrument_pinned"] = [not w for w in why]
    for i, w in enumerate(why):
        if w and dims.at[i, "decision"] != "review":
            dims.at[i, "reason"] = (f"instrument unpinned ({'; '.join(w)}): the test said "
                                    f"{dims.at[i, 'decision']} ({dims.at[i, 'reason']}), but one instrument on "  # type: ignore[str-bytes-safe]  # words, never bytes
                                    "both sides is not established")
            dims.at[i, "decision"] = "review"
    return dims


@dataclass(frozen=True)
class GateResult(HtmlTable):
    """Per-dimension decisions and the overall one: ``promote``, ``review`` or ``regress``."""

    decision: str
    dimensions: pd.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)

    def _html_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [(f"GateResult: {self.decision}", self.dimensions)]

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "settings": dict(self.settings),
                "dimensions": json.loads(self.dimensions.to_json(orient="records"))}


def _gate_values(m: ScoreMatrix, measure: str) -> pd.DataFrame:
    f = m.scores("automatic")
    f = f[f["measure"] == measure][["trace_id", "value", "cause"]].copy()
    f["trace_id"] = f["trace_id"].astype(str)
    cause = f["cause"].astype(object)
    fail = cause.isin(FAIL_CLOSED_CAUSES).to_numpy()
    gv = f["value"].to_numpy(float).copy()
    gv[fail] = 0.0  # abstain in the score, fail in the gate
    f["gate_value"] = gv
    f["fail_closed"] = fail
    f["answered"] = ~np.isnan(f["value"].to_numpy(float))
    f = f[cause.ne("not_applicable").to_numpy()]
    return f


def _pair(a: ScoreMatrix, b: ScoreMatrix, measure: str, pair_by: str) -> pd.DataFrame:
    out = []
    for side, m in (("baseline", a), ("candidate", b)):
        if pair_by not in m.runs.columns:
            raise GateRefused("data validity", [f"{side}: runs have no `{pair_by}` column to pair on"])
        g = _gate_values(m, measure).merge(m.runs[["trace_id", pair_by]].astype({"trace_id": str}),
                                           on="trace_id", how="left")
        if measure == "x_ctx":
            d = m.diagnostics[["trace_id", "x_ctx_n_grounded", "x_ctx_n_answered", "x_ctx_n_gradable"]]
            g = g.merge(d.astype({"trace_id": str}), on="trace_id", how="left")
            # fail closed: a run whose x_ctx abstained counts its gradable steps (at least one) as
            # answered and none grounded; the score itself is untouched
            fc = g["fail_closed"].to_numpy(bool)
            g.loc[fc, "x_ctx_n_answered"] = np.maximum(g.loc[fc, "x_ctx_n_gradable"].to_numpy(float), 1.0)
            g.loc[fc, "x_ctx_n_grounded"] = 0.0
        g["side"] = side
        out.append(g)
    return pd.concat(out, ignore_index=True)


def _pvalue_boot(d: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a difference: twice the smaller tail beyond zero.

    Bounded below by 2 / (B + 1): a finite bootstrap never proves p = 0.
    """
    d = d[~np.isnan(d)]
    if d.size == 0:
        return float("nan")
    b = d.size
    return float(min(1.0, 2 * min(((d <= 0).sum() + 1) / (b + 1), ((d >= 0).sum() + 1) / (b + 1))))


def _interval_columns(ci: Any, n_resamples: int = 0, n_undefined: int = 0) -> dict[str, Any]:
    """The interval of a gate dimension (or the cause of its absence), with the replicates behind it counted."""
    undefined = isinstance(ci, Abstention)
    return {"ci_low": np.nan if undefined else ci[0], "ci_high": np.nan if undefined else ci[1],
            "ci_cause": ci.cause.value if undefined else None,
            "n_resamples": n_resamples, "n_undefined_resamples": n_undefined}


def _boot_columns(res: BootstrapResult) -> dict[str, Any]:
    return _interval_columns(res.confidence_interval, res.n_resamples, res.n_undefined)


#: A dimension with no paired key measured nothing: no effect, no interval, no test.
_NOT_TESTED = {"baseline": np.nan, "candidate": np.nan, "effect": np.nan,
               **_interval_columns(Abstention(Cause.MISSING_EVIDENCE, "no paired key")),
               "pvalue": np.nan, "test": "none"}


def _per_key(df: pd.DataFrame, idx: np.ndarray, col: str, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum of ``col`` and number of rows per key."""
    return (np.bincount(idx, weights=df[col].to_numpy(float), minlength=K),
            np.bincount(idx, minlength=K).astype(float))


def _ratio_difference(S: np.ndarray) -> np.ndarray:
    """``S[:, 0] / S[:, 1] - S[:, 2] / S[:, 3]``, NaN where a denominator is 0 (an undefined replicate)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(S[:, 1] > 0, S[:, 0] / np.where(S[:, 1] > 0, S[:, 1], 1.0), np.nan)
        b = np.where(S[:, 3] > 0, S[:, 2] / np.where(S[:, 3] > 0, S[:, 3], 1.0), np.nan)
    return a - b


def _mean_ratio(S: np.ndarray) -> np.ndarray:
    """``S[:, 0] / S[:, 1]``, NaN where no resampled key has both sides (an undefined replicate)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(S[:, 1] > 0, S[:, 0] / np.where(S[:, 1] > 0, S[:, 1], 1.0), np.nan)


def _compare_rate(base: pd.DataFrame, cand: pd.DataFrame, kb: np.ndarray, kc: np.ndarray, K: int,
                  cfg: BootstrapConfig) -> dict[str, Any]:
    """x_ctx: the pooled rate grounded / answered, keys resampled with all their steps."""
    cols = [_per_key(cand, kc, "x_ctx_n_grounded", K)[0], _per_key(cand, kc, "x_ctx_n_answered", K)[0],
            _per_key(base, kb, "x_ctx_n_grounded", K)[0], _per_key(base, kb, "x_ctx_n_answered", K)[0]]
    rows = np.column_stack(cols)
    tot = rows.sum(axis=0)
    rc = tot[0] / tot[1] if tot[1] else np.nan
    rb = tot[2] / tot[3] if tot[3] else np.nan
    res = bootstrap_sums(rows, _ratio_difference, method=cfg)
    return {"baseline": rb, "candidate": rc, "effect": rc - rb, **_boot_columns(res),
            "pvalue": _pvalue_boot(res.bootstrap_distribution), "test": "cluster bootstrap of the pooled step rate"}


def _compare_binary(mb: np.ndarray, mc: np.ndarray, cl: float) -> dict[str, Any]:
    """One run per key and side: McNemar (evaltk's one choice, mid-p) and Newcombe's paired interval."""
    cells = [[int(((mc == 1) & (mb == 1)).sum()), int(((mc == 1) & (mb == 0)).sum())],
             [int(((mc == 0) & (mb == 1)).sum()), int(((mc == 0) & (mb == 0)).sum())]]
    t = mcnemar_test(cells)  # MCNEMAR_METHOD, the same test signed_bias reports
    ci = paired_difference_interval(cells, confidence_level=cl)
    return {"baseline": mb.mean(), "candidate": mc.mean(), "effect": float(mc.mean() - mb.mean()),
            **_interval_columns(ci.confidence_interval),
            "pvalue": float(t.pvalue), "test": f"McNemar {t.method}; Newcombe paired interval"}


def _compare(p: pd.DataFrame, measure: str, pair_by: str, cfg: BootstrapConfig) -> dict[str, Any]:
    """One dimension's row: the counts on each side, then the test its type calls for."""
    kind = DIMENSION_TYPES[measure]
    keys = sorted(set(p.loc[p["side"] == "baseline", pair_by]) & set(p.loc[p["side"] == "candidate", pair_by]))
    p = p[p[pair_by].isin(keys)]
    base, cand = p[p["side"] == "baseline"], p[p["side"] == "candidate"]
    row: dict[str, Any] = {"measure": measure, "type": kind, "n_pairs": len(keys),
                           "n_answered_baseline": int(base["answered"].sum()),
                           "n_answered_candidate": int(cand["answered"].sum()),
                           "n_fail_closed_baseline": int(base["fail_closed"].sum()),
                           "n_fail_closed_candidate": int(cand["fail_closed"].sum())}
    if not keys:
        return {**row, **_NOT_TESTED}
    k_index = {k: i for i, k in enumerate(keys)}
    kb = base[pair_by].map(k_index).to_numpy(int)
    kc = cand[pair_by].map(k_index).to_numpy(int)
    if kind == "per_step_rate":
        return {**row, **_compare_rate(base, cand, kb, kc, len(keys), cfg)}
    return {**row, **_compare_means(base, cand, kb, kc, len(keys), kind, cfg)}


def _compare_means(base: pd.DataFrame, cand: pd.DataFrame, kb: np.ndarray, kc: np.ndarray, K: int, kind: str,
                   cfg: BootstrapConfig) -> dict[str, Any]:
    """Binary and ordinal dimensions: the per-key means of each side, paired on keys both sides have."""
    sb, nb = _per_key(base, kb, "gate_value", K)
    sc, nc = _per_key(cand, kc, "gate_value", K)
    both = (nb > 0) & (nc > 0)
    if not both.any():
        return {"n_pairs": 0, **_NOT_TESTED}
    mb, mc = sb[both] / nb[both], sc[both] / nc[both]
    paired = {"n_pairs": int(both.sum()), "baseline": mb.mean(), "candidate": mc.mean(),
              "effect": float(mc.mean() - mb.mean())}
    one_to_one = bool((nb[both] == 1).all() and (nc[both] == 1).all())
    if kind == "binary" and one_to_one:
        return {"n_pairs": paired["n_pairs"], **_compare_binary(mb, mc, cfg.confidence_level)}
    # paired cluster bootstrap over all keys: a replicate whose drawn keys have no pair is undefined
    diffs = np.zeros(K)
    diffs[both] = mc - mb
    res = bootstrap_sums(np.column_stack([diffs, both.astype(float)]), _mean_ratio, method=cfg)
    if kind == "ordinal" and one_to_one:
        from scipy.stats import wilcoxon

        nz = (mc - mb)[mc != mb]
        pv = float(wilcoxon(nz).pvalue) if nz.size else 1.0
        test = "Wilcoxon signed-rank; bootstrap interval of the mean difference"
    else:
        pv = _pvalue_boot(res.bootstrap_distribution)
        test = "paired cluster bootstrap over keys"
    return {**paired, **_boot_columns(res), "pvalue": pv, "test": test}


def gate(baseline: ScoreMatrix, candidate: ScoreMatrix, *, measures: Sequence[str] | None = None,
         pair_by: str = "task", min_effect: float | Mapping[str, float] = 0.05, alpha: float = 0.05,
         correction: str = "holm", min_pairs: int = 30, confidence_level: float = 0.95,
         n_resamples: int = 2000, rng: Any = 0) -> GateResult:
    """Compare a candidate checkpoint to a baseline and decide promote, review or regress.

    Parameters
    ----------
    baseline, candidate : ScoreMatrix
        Scored by the same scorer versions on the same tasks.
    measures : sequence of str, optional
        Dimensions to gate (default: the four trace dimensions).
    pair_by : str
        Column of ``runs`` that pairs a candidate run with a baseline run (the task).
    min_effect : float or mapping
        The minimum practical effect (on the measure's [0, 1] scale); a drop smaller
        than this is not a regression even when significant.
    correction : {"holm", "fdr_bh"}
        Multiple-comparison correction across the tested dimensions (pingouin).
    min_pairs : int
        Interpretability: fewer paired keys than this routes the dimension to review.

    Raises
    ------
    GateRefused
        When data validity or scoring consistency fails (nothing is compared).
    """
    cl = check_confidence_level(confidence_level)
    meas = _check_gate(correction, alpha, measures)
    _hard_checks(baseline, candidate, meas)
    gen, record = seeded_rng(rng)
    seed = recorded_seed(record)
    # one engine, one generator for every dimension; the keys (pair_by) are the resampled clusters
    # degenerate="keep": two runs equal on every key resample to a zero-width interval, which _decide
    # reads through the one rule (evaltk._validation.zero_width): review at a boundary, never promote
    cfg = BootstrapConfig(n_resamples=n_resamples, confidence_level=cl, unit="cluster", rng=gen,
                          degenerate="keep")
    dims = pd.DataFrame([_compare(_pair(baseline, candidate, x, pair_by), x, pair_by, cfg) for x in meas])
    # interpretability counts answered items on each side, not keys: a dimension nobody
    # answered (all cannot-tell, or switched off) measured nothing and cannot promote
    dims["interpretable"] = ((dims["n_pairs"] >= min_pairs) & (dims["n_answered_baseline"] >= min_pairs)
                             & (dims["n_answered_candidate"] >= min_pairs))
    dims["pvalue_adjusted"] = _adjusted_pvalues(dims, alpha, correction)
    me = {x: (min_effect.get(x, 0.05) if isinstance(min_effect, Mapping) else float(min_effect)) for x in meas}
    dims["min_effect"] = dims["measure"].map(me)
    dims["calibrated"] = [_calibrated(baseline, candidate, x) for x in meas]
    dims["decision"], dims["reason"] = zip(*(_decide(r, alpha, min_pairs) for r in dims.itertuples()), strict=True)
    dims = _review_unpinned(dims, baseline, candidate)
    decisions = set(dims["decision"])
    overall = "regress" if "regress" in decisions else "review" if "review" in decisions else "promote"
    settings = {"pair_by": pair_by, "alpha": alpha, "correction": correction, "min_pairs": min_pairs,
                "confidence_level": cl, "n_resamples": n_resamples, "min_effect": me,
                "fail_closed_causes": list(FAIL_CLOSED_CAUSES), "seed": seed}
    return GateResult(decision=overall, dimensions=dims, settings=settings)


def _calibrated(a: ScoreMatrix, b: ScoreMatrix, measure: str) -> bool:
    """Whether the dimension is calibrated for this comparison.  Calibration belongs to the
    instrument, not to one scored sample: when both sides share the pinned instrument
    (:func:`evaltk.scoring.same_instrument`: scorer and version, fold rule, and every
    judge's model, rubric, template and decoding) a record meeting the promotion rule on
    either side applies to both; otherwise each side must carry its own."""
    sa, sb = a.manifest.status(measure), b.manifest.status(measure)
    ca, cb = sa.evidence == "calibrated", sb.evidence == "calibrated"
    shared = same_instrument(a.manifest.instrument(measure), b.manifest.instrument(measure))
    return (ca or cb) if shared else (ca and cb)


def _check_gate(correction: str, alpha: float, measures: Sequence[str] | None) -> list[str]:
    """The gate's options, checked; the measures to gate (default: the trace dimensions)."""
    check_choice("correction", correction, ("holm", "fdr_bh"))
    if not 0 < alpha < 1:
        raise ValueError(f"`alpha` must be in (0, 1); got {alpha}.")
    meas = list(measures) if measures is not None else list(TRACE_MEASURES)
    unknown = [x for x in meas if x not in DIMENSION_TYPES]
    if unknown:
        raise ValueError(f"unknown measures {unknown}; gateable: {', '.join(DIMENSION_TYPES)}.")
    return meas


def _hard_checks(baseline: ScoreMatrix, candidate: ScoreMatrix, meas: Sequence[str]) -> None:
    """Data validity, then scoring consistency: a failure stops the run (:class:`GateRefused`)."""
    problems = data_validity(baseline, "baseline") + data_validity(candidate, "candidate")
    if problems:
        raise GateRefused("data validity", problems)
    problems = scoring_consistency(baseline, candidate, meas)
    if problems:
        raise GateRefused("scoring consistency", problems)


def _adjusted_pvalues(dims: pd.DataFrame, alpha: float, correction: str) -> pd.Series:
    """The multiple-comparison correction across the interpretable, tested dimensions (pingouin)."""
    pingouin = import_optional("pingouin", purpose="the regression gate's multiple-comparison correction")

    out = pd.Series(np.nan, index=dims.index)
    testable = dims["interpretable"] & dims["pvalue"].notna()
    if testable.any():
        _, padj = pingouin.multicomp(dims.loc[testable, "pvalue"].to_numpy(float), alpha=alpha, method=correction)
        out[testable] = padj
    return out


def _decide(r: Any, alpha: float, min_pairs: int) -> tuple[str, str]:
    """One dimension's decision and its reason, in the rule's order."""
    if not r.interpretable:
        return "review", (f"not interpretable: {r.n_pairs} paired keys, {r.n_answered_baseline} answered "
                          f"baseline and {r.n_answered_candidate} answered candidate records (< {min_pairs})")
    if not np.isfinite(r.pvalue_adjusted) or not np.isfinite(r.effect):
        return "review", "no test was possible on the paired data (no variation to test)"
    sig = r.pvalue_adjusted < alpha
    p = f"adjusted p={r.pvalue_adjusted:.3g}"
    if sig and r.effect <= -r.min_effect:
        if r.calibrated:
            return "regress", f"significant drop {r.effect:+.3f} ({p}) on a calibrated dimension"
        return "review", (f"significant drop {r.effect:+.3f} ({p}), but the dimension is uncalibrated: "
                          "no validated measure to regress against")
    if sig and r.effect >= r.min_effect:
        return "promote", f"significant gain {r.effect:+.3f} ({p})"
    why = zero_width((r.ci_low, r.ci_high), what="paired-difference", n=r.n_pairs, unit="paired keys",
                     fmt="+.3f") if np.isfinite(r.ci_low) else None
    if why:  # every resample gave one difference (a self-comparison): the bootstrap keeps it on purpose
        return "review", (f"at a boundary: effect {r.effect:+.3f}, but {why}; it rules out no drop "
                          f"(every paired key differs alike, as when both sides are the same scores; {p})")
    if np.isfinite(r.ci_low) and r.ci_low > -r.min_effect:
        return "promote", (f"no practically relevant drop: effect {r.effect:+.3f}, interval "
                           f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}] excludes drops of {r.min_effect:g} or more")
    return "review", (f"inconclusive: effect {r.effect:+.3f}, interval [{r.ci_low:+.3f}, {r.ci_high:+.3f}] "
                      f"still allows a drop of {r.min_effect:g} or more ({p})")
