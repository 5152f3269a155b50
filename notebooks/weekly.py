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
scored = ""  # a scored dataset (evaltk scale score --out): scores from its summaries, no row loaded; empty: in memory
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

from IPython.display import Markdown, display

import evaltk
from evaltk import report, scoring

params = report.check_params(week=week, data_dir=data_dir, scored=scored, confidence_level=confidence_level,
                             seed=seed, n_traces=n_traces, measure=measure, n_resamples=n_resamples,
                             thresholds=thresholds, threshold_source=threshold_source, baseline_agent=baseline_agent, candidate_agent=candidate_agent)
report.use_theme()
sources = report.data_sources(params["data_dir"])
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
warnings.simplefilter("ignore", evaltk.UndefinedWarning)  # undefined replicates are counted on each result
wk = report.weekly_scores(sources, demo, scored=params["scored"])  # imported runs, a scored dataset, or the demo
inputs = [*demo_files, *sources.files(), *wk.files]
ans = report.select_answers(demo.answers, measure=measure)
sel = report.judge_selection(ans, demo.labels, demo.canaries, measure=measure, confidence_level=confidence_level,
                             n_resamples=n_resamples, rng=seed)
leans = report.judge_direction_table(ans, demo.labels, measures=[measure], confidence_level=confidence_level)
ceilings = report.human_ceiling_table(demo.labels, measures=[measure], confidence_level=confidence_level,
                                      n_resamples=n_resamples, rng=seed, baseline=False)
summary = evaltk.summarize_suite(sources.suite_run) if sources.suite_run else None
cohort = evaltk.grade_files(*sources.trajectory[:2], design=sources.trajectory[2]) if sources.trajectory else None
arb = (evaltk.agentrewardbench_ceiling(sources.agentrewardbench, confidence_level=confidence_level,
                                       n_resamples=n_resamples, rng=seed) if sources.agentrewardbench else None)
jb = (report.judgebench_selection(evaltk.load_judgebench(sources.judgebench), confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=seed) if sources.judgebench else None)

# %% [markdown]
# ## This week at a glance

# %%
cal = wk.calibration(confidence_level=confidence_level, n_resamples=n_resamples, rng=seed)  # judges vs humans, from the summaries
glance = report.week_at_a_glance(week=params["week"], measure=measure, scores=wk, selection=sel, directions=leans,
                                 ceilings=ceilings, suite=summary, trajectory=cohort and cohort.summary(),
                                 agentrewardbench=arb, judgebench=jb, calibration=cal)
display(Markdown(f"Sources: {wk.note}{demo_note}" + (f"; real data from {sources.data_dir}" if sources.data_dir else "") + "."))
display(Markdown(report.markdown_list(glance)))

# %% [markdown]
# ## Coverage is part of the result
#
# Every trace gets every dimension, as a value or an abstention with its cause.  A
# dimension that abstains often is not "doing well"; its mean is over fewer runs.

# %%
report.abstention_chart(wk, title="Scores this week: valued and abstained, per dimension and cause")

# %% [markdown]
# ## Agents side by side (same scorer version, same task population: a supported comparison)
#
# Means over valued scores, with coverage.  Read the differences between checkpoints, not the
# levels: the levels are provisional.

# %%
report.show_agents(wk.summary(by="agent"), measures=scoring.TRACE_MEASURES)

# %% [markdown]
# ## Where you are
#
# A level on the human scale ("x_task is at 0.71") is given only where seed 002 allows one:
# the dimension calibrated on a record, its instrument pinned, and a prediction-powered
# estimate from held-out human labels and the judge on every run.  Everywhere else the
# reason is shown instead of a number.

# %%
report.show_levels(wk.levels(demo.labels, measures=scoring.TRACE_MEASURES, confidence_level=confidence_level))

# %% [markdown]
# ## Value is not verdict
#
# A threshold turns a value into a verdict (pass, fail, or abstain with a reason).  Without a
# validated threshold (one set by decision cost, named in `threshold_source`) every verdict
# abstains with "no validated threshold", and the values above are still published: a gate
# may then fail closed, a score never does.

# %%
wk.verdicts(report.thresholds_of(thresholds, threshold_source)).set_index(["measure", "verdict"]) if thresholds else Markdown("*No thresholds given: no verdicts.*")

# %% [markdown]
# ## Checkpoint gate: candidate against baseline
#
# The candidate agent's runs against the baseline's, paired by task, each dimension with the
# test matching its type and corrected for multiple comparisons (Holm): **promote**,
# **review** or **regress**.  Every dimension is uncalibrated, so a significant drop can only
# route to review, never regress (seed 002): there is no validated measure to regress
# against.  In the gate an abstention counts as a failure (not applicable stays out); the
# scores above are untouched.  The demo's synthetic judges carry their instrument (model,
# rubric, template, decoding), one on both sides, so a judged dimension can promote; answers
# without that metadata would be unpinned and only route to review (docs/judges.md, "The
# instrument is compared before anything else").

# %%
headline, g = report.checkpoint_gate_headline(demo, baseline_agent=baseline_agent, candidate_agent=candidate_agent,
                                              confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
                                              scores=wk)
display(Markdown(headline))
if g is not None:
    display(report.gate_chart(g.dimensions, baseline=baseline_agent, candidate=candidate_agent))
    display(report.show_gate(g.dimensions))

# %% [markdown]
# ## Long-horizon trajectories (seed 003)
#
# Each case is graded on eight dimensions against a policy locked before any result existed;
# one failing dimension holds the case, a supported abstention is honest but never a
# success.  Detail: `evaltk trajectory` (docs/trajectory.md).

# %%
display(Markdown(report.trajectory_note(sources.trajectory, cohort and cohort.summary())))
if cohort is not None:
    display(report.trajectory_grid_chart(cohort.to_frame(), dimensions=evaltk.trajectory.DIMENSIONS))

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
