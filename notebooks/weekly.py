# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Weekly evaluation report
#
# One screen: what was scored this week, which judge to trust and which way it errs, how
# far judges are from the human ceiling, and whether the eval suite passes its gate.  The
# detail is on four pages beside this one:
# [calibration](calibration.html) ·
# [judge selection](judge_selection.html) ·
# [direction of error](direction_of_error.html) ·
# [suite gating](suite_gating.html).
#
# **How to read it.** Every dimension is *provisional* (seed 002): no dimension has a held-out
# calibration record yet.  A provisional score says **which way things moved**, not where
# you are: comparing agents scored by the same scorer version on the same population, and
# spotting a regression, are supported; an absolute level ("90% safe"), comparisons across
# populations or scorer versions, and rankings whose intervals overlap are not.

# %% tags=["parameters"]
week = ""  # ISO week like 2026-W48; empty means the current week
data_dir = ""  # folder with real data: agentrewardbench, judgebench, suite, or a demo folder; empty means demo only
confidence_level = 0.95
seed = 0
n_traces = 3000  # size of the generated demo corpus when no demo folder is given
measure = "x_task"  # the dimension judges are selected and calibrated on
n_resamples = 2000  # bootstrap resamples for intervals
thresholds = {"x_safe": 1.0}  # bar per dimension: a value at or above it passes, once validated
threshold_source = ""  # the decision-cost record that validates the thresholds; empty means not validated
baseline_agent = "agent-v2"  # checkpoint gate: the baseline agent of the demo corpus
candidate_agent = "agent-v3"  # checkpoint gate: the candidate agent

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
import warnings

import pandas as pd
from IPython.display import Markdown, display

from evaltk import (
    calibration,
    datasets,
    direction,
    regression,
    report,
    scoring,
    selection,
    suite,
    trajectory,
)
from evaltk.errors import InputError
from evaltk.stats import summarize_frame
from evaltk.values import Abstention, Threshold, UndefinedWarning, verdicts

params = report.check_params(week=week, data_dir=data_dir, confidence_level=confidence_level, seed=seed,
                             n_traces=n_traces, measure=measure, n_resamples=n_resamples, thresholds=thresholds,
                             threshold_source=threshold_source, baseline_agent=baseline_agent,
                             candidate_agent=candidate_agent)
report.use_theme()
if measure not in ("x_task", "x_ctx", "x_eff"):
    raise InputError(f"judges are selected on x_task, x_ctx or x_eff; got {measure!r}.", field="measure")
unknown = sorted(set(thresholds) - set(scoring.MEASURES))
if unknown:
    raise InputError(f"no dimension {unknown}; thresholds apply to {', '.join(scoring.MEASURES)}.", field="thresholds")
sources = report.data_sources(params["data_dir"])
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
inputs = list(demo_files)
warnings.simplefilter("ignore", UndefinedWarning)  # undefined replicates are counted on each result

# scores of the week (automatic tier: what the judges and the trace scorers produced)
sm = scoring.score_traces(demo.traces, demo.answers, demo.labels)
auto = sm.frame[sm.frame["tier"] == "automatic"]
# judge selection on `measure`
ans = demo.answers[demo.answers["measure"] == measure]
correct = selection.anchor_correctness(ans, demo.labels, measure=measure)
sel = selection.select_judges(correct, selection.judge_costs(ans), canaries=selection.canary_hits(ans, demo.canaries),
                              confidence_level=confidence_level, n_resamples=n_resamples, rng=seed)
# direction of error of each judge on `measure`
lean_rows = []
for j, g in correct.groupby("judge", sort=True):
    r = direction.direction_of_error(g["judge_answer"].tolist(), g["human_answer"].tolist(),
                                     scale="ordinal" if measure == "x_eff" else "binary", positive="yes",
                                     categories={"lots": 0.0, "a_few": 0.5, "none": 1.0} if measure == "x_eff" else None,
                                     abstain=["cannot_tell"], confidence_level=confidence_level)
    lean_rows.append({"judge": j, "lean": r.lean, "estimate": r.statistic,
                      "ci": r.confidence_interval or (None, None)})
leans = pd.DataFrame(lean_rows)
# the human ceiling on `measure`
hum = demo.labels[demo.labels["measure"] == measure]
item = hum["trace_id"].astype(str) + hum["step"].astype("Int64").astype(str).replace("<NA>", "").map(
    lambda s: f"#{s}" if s else "")
ceiling = calibration.human_ceiling(pd.DataFrame({"item_id": item, "rater": hum["rater"], "rating": hum["answer"]}),
                                    level="ordinal" if measure == "x_eff" else "nominal",
                                    categories=["lots", "a_few", "none"] if measure == "x_eff" else ["no", "yes"],
                                    abstain=["cannot_tell"], confidence_level=confidence_level,
                                    n_resamples=n_resamples, rng=seed)
# the suite gate
summary = suite.summarize_suite(sources.suite_run) if sources.suite_run else None
if sources.suite_run:
    inputs.append(sources.suite_run)

# %% [markdown]
# ## This week at a glance

# %%
fmt = report.format_interval
t = sel.table
eligible = sel.eligible
best = t[t["judge"].isin(eligible)].sort_values("accuracy", ascending=False)
rows = [("week", params["week"]),
        ("runs scored", f"{auto['trace_id'].nunique()} traces, {len(auto)} scores, scorer versions "
                        f"{', '.join(sorted(auto['scorer_version'].astype(str).unique()))} (all dimensions provisional)")]
cov = summarize_frame(auto, by="measure")
rows.append(("coverage per dimension", "; ".join(f"{r.measure} {r.coverage:.0%}" for r in cov.itertuples())))
rows.append((f"judges on the frontier ({measure}), not rejected by a canary",
             "; ".join(f"{r.judge}: accuracy {fmt(r.accuracy, r.ci_low, r.ci_high)}, "
                       f"${r.cost_per_item:.4f}/item, p50 {r.latency_p50:.0f} ms" for r in best.itertuples()) or "none"))
rej = t[t["rejected"]]
rows.append(("rejected by the canary set", "; ".join(f"{r.judge} (passed {len(r.canaries_passed)})"
                                                    for r in rej.itertuples()) or "none"))
unsupported = sel.orderings[~sel.orderings["supported"]]
rows.append(("orderings the data does not support", "; ".join(unsupported["verdict"].str.split(":").str[0]) or "none"))
rows.append((f"direction of error on {measure}", "; ".join(f"{r.judge}: {r.lean}" for r in leans.itertuples())))
if isinstance(ceiling, Abstention):
    rows.append((f"human ceiling on {measure}", f"unknown ({ceiling})"))
else:
    rows.append((f"human ceiling on {measure}", f"{fmt(ceiling.statistic, *ceiling.confidence_interval)} percent "
                                                f"agreement on {ceiling.n_pairable} double-labelled items"))
if summary is not None:
    rows.append((f"suite {summary.run.suite}", ("PASSED" if summary.passed else "DID NOT PASS") +
                 f": gated aggregate {summary.gated_aggregate_score:.3f} (reported {summary.aggregate_score:.3f}), "
                 f"passScore {summary.run.thresholds.to_dict()['passScore']}"))
else:
    rows.append(("suite gate", "no suite run found"))
if sources.trajectory is not None:
    _c = trajectory.grade_files(sources.trajectory[0], sources.trajectory[1], design=sources.trajectory[2]).summary()
    rows.append(("long-horizon trajectories", f"{_c['decision']}: {_c['passed']} passed, {_c['safely_abstained']} "
                                              f"safely abstained, {_c['failed']} failed of {_c['cases']} cases"))
if sources.agentrewardbench is not None:
    inputs.append(sources.agentrewardbench)
    arb = calibration.agentrewardbench_ceiling(sources.agentrewardbench, confidence_level=confidence_level,
                                               n_resamples=n_resamples, rng=seed)
    pa = arb[arb["statistic_name"] == "percent_agreement"]
    rows.append(("AgentRewardBench human ceiling (expert-expert agreement)",
                 "; ".join(f"{r.question} {fmt(r.statistic, r.ci_low, r.ci_high)}" for r in pa.itertuples())))
if sources.judgebench is not None:
    inputs.append(sources.judgebench)
    jb = datasets.judgebench_pair_outcomes(datasets.load_judgebench(sources.judgebench))
    jb_sel = selection.select_judges(jb.rename(columns={"judge_model": "judge"})[["judge", "pair_id", "correct"]],
                                     confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
                                     item=["pair_id"])
    jt = jb_sel.table.sort_values("accuracy", ascending=False)
    rows.append(("JudgeBench pair accuracy (published fold)",
                 "; ".join(f"{r.judge} {fmt(r.accuracy, r.ci_low, r.ci_high)}" for r in jt.itertuples())))
display(Markdown(f"Sources: {demo_note}" + (f"; real data from {sources.data_dir}" if sources.data_dir else "") + "."))
display(Markdown("\n".join(f"- **{k}**: {v}" for k, v in rows)))

# %% [markdown]
# ## Coverage is part of the result
#
# Every trace gets every dimension, as a value or an abstention with its cause.  A
# dimension that abstains often is not "doing well"; its mean is over fewer runs.

# %%
report.abstention_chart(auto, title="Scores this week: valued and abstained, per dimension and cause")

# %% [markdown]
# ## Agents side by side (same scorer version, same task population: a supported comparison)
#
# Means over valued scores, with coverage.  Read the differences between checkpoints, not the
# levels: the levels are provisional.

# %%
agents = pd.DataFrame({"trace_id": [t_["trace_id"] for t_ in demo.traces],
                       "agent": [t_.get("agent", "unknown") for t_ in demo.traces]})
by_agent = summarize_frame(auto.merge(agents, on="trace_id", how="left"), by=["measure", "agent"])
by_agent = by_agent[by_agent["measure"].isin(scoring.TRACE_MEASURES)]
by_agent["mean (coverage)"] = [("—" if pd.isna(m) else f"{m:.3f}") + f" ({c:.0%})"
                               for m, c in zip(by_agent["mean"], by_agent["coverage"], strict=True)]
by_agent.pivot(index="measure", columns="agent", values="mean (coverage)")

# %% [markdown]
# ## Value is not verdict
#
# A threshold turns a value into a verdict (pass, fail, or abstain with a reason).  Without a
# validated threshold (one set by decision cost, named in `threshold_source`) every verdict
# abstains with "no validated threshold", and the values above are still published: a gate
# may then fail closed, a score never does.

# %%
if not thresholds:
    display(Markdown("*No thresholds given: no verdicts.*"))
else:
    th = {m: Threshold(v, validated=bool(threshold_source), source=threshold_source or "report parameter")
          for m, v in thresholds.items()}
    v = verdicts(auto[auto["measure"].isin(list(thresholds))].astype({"measure": str}), th)
    counts = v.groupby(["measure", "verdict", "verdict_reason"], observed=True).size().rename("runs")
    display(counts.reset_index().set_index(["measure", "verdict"]))

# %% [markdown]
# ## Checkpoint gate: candidate against baseline
#
# The candidate agent's runs against the baseline's, paired by task, each dimension with the
# test matching its type and corrected for multiple comparisons (Holm): **promote**,
# **review** or **regress**.  Every dimension is uncalibrated, so a significant drop can only
# route to review, never regress (seed 002): there is no validated measure to regress
# against.  In the gate an abstention counts as a failure (not applicable stays out); the
# scores above are untouched.

# %%
agent_of = {t_["trace_id"]: t_.get("agent") for t_ in demo.traces}
present = sorted({a for a in agent_of.values() if a})
if baseline_agent not in present or candidate_agent not in present:
    display(Markdown(f"*No runs of `{baseline_agent}` and `{candidate_agent}` in these traces "
                     f"(agents present: {', '.join(present) or 'none'}): no checkpoint gate.*"))
else:
    matrices = {}
    for a in (baseline_agent, candidate_agent):
        ids = {k for k, v in agent_of.items() if v == a}
        matrices[a] = scoring.score_traces([t_ for t_ in demo.traces if t_["trace_id"] in ids],
                                           demo.answers[demo.answers["trace_id"].isin(ids)],
                                           demo.labels[demo.labels["trace_id"].isin(ids)])
    try:
        g = regression.gate(matrices[baseline_agent], matrices[candidate_agent], confidence_level=confidence_level,
                            n_resamples=n_resamples, rng=seed)
    except regression.GateRefused as e:
        display(Markdown(f"**The gate refused to compare:** {e}"))
    else:
        display(Markdown(f"**{candidate_agent} against {baseline_agent}: {g.decision.upper()}**"))
        gd = g.dimensions.assign(dimension=f"{candidate_agent} − {baseline_agent}")
        display(report.bias_forest_chart(gd, judge="measure", bias="effect", lean="decision",
                                         bias_title="candidate − baseline (gate values, paired by task)",
                                         title="Checkpoint gate per dimension",
                                         subtitle="left of zero: the candidate is worse; the decision is beside "
                                                  "each dimension",
                                         estimate_header="effect [interval]", lean_header="decision"))
        gt = g.dimensions.copy()
        gt["adjusted p"] = gt["pvalue_adjusted"].map(lambda p: "—" if pd.isna(p) else f"{p:.3g}")
        display(gt[["measure", "type", "decision", "reason", "n_pairs", "adjusted p", "calibrated"]].set_index("measure"))

# %% [markdown]
# ## Long-horizon trajectories (seed 003)
#
# Each case is graded on eight dimensions against a policy locked before any result existed;
# one failing dimension holds the case, a supported abstention is honest but never a
# success.  Detail: `evaltk trajectory` (docs/trajectory.md).

# %%
if sources.trajectory is None:
    display(Markdown("*No trajectory lock and results found: nothing to show.*"))
else:
    lock_path, results_path, design_path = sources.trajectory
    inputs += [p for p in sources.trajectory if p]
    cohort = trajectory.grade_files(lock_path, results_path, design=design_path)
    s_ = cohort.summary()
    display(Markdown(f"Source: {results_path} against {lock_path}. **{s_['decision'].upper()}**: "
                     f"{s_['passed']} passed, {s_['safely_abstained']} safely abstained, {s_['failed']} failed "
                     f"of {s_['cases']} locked cases."))
    display(report.trajectory_grid_chart(cohort.to_frame(), dimensions=trajectory.DIMENSIONS))

# %% [markdown]
# ## Judge frontier on this week's anchor
#
# Detail, orderings and the canary list: [judge selection](judge_selection.html).

# %%
report.judge_frontier_chart(sel.table, cost="cost_per_item", latency="latency_p50", canary_rejected="rejected",
                            cost_title="cost per item (USD)", title=f"Judges on {measure}: accuracy against cost")

# %% [markdown]
# ## How this report was made

# %%
report.provenance("weekly", params, inputs, notes=[demo_note])
