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
# # Judge selection: accuracy, cost and latency, the Pareto frontier, the canaries
#
# Which judge should score this week's runs?  Each candidate judge is swept against the
# human anchor (the human labels of an item folded by majority) on **accuracy with an
# interval**, **cost** and **latency**, and the **Pareto frontier** is drawn: a judge is on
# it when no other judge is at least as accurate, as cheap and as fast, and strictly
# better on one of them.  A **canary set** of known failures rejects any judge that passes
# one, whatever its place on the frontier (seed 002, "Judge selection").
#
# What this does not support: where two judges' accuracy intervals overlap, their order is
# not supported by the data, whatever the point estimates say (seed 002, "Ranking anything
# whose intervals overlap: No").  The table below says which orderings are supported.

# %% tags=["parameters"]
week = ""  # ISO week like 2026-W48; empty means the current week
data_dir = ""  # folder with real data: judgebench/judgments.csv or a demo folder; empty means demo only
confidence_level = 0.95
seed = 0
n_traces = 3000  # size of the generated demo corpus (when no demo folder is given)
measure = "x_task"  # the dimension judges are selected on
judges = []  # judges to include; empty means all
n_resamples = 2000  # paired bootstrap resamples for the differences between judges
judge_costs = {}  # JudgeBench has no prices: a mapping judge_name to cost per pair draws a frontier

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
from IPython.display import Markdown, display

import evaltk
from evaltk import report

params = report.check_params(week=week, data_dir=data_dir, confidence_level=confidence_level, seed=seed,
                             n_traces=n_traces, measure=measure, judges=judges, n_resamples=n_resamples,
                             judge_costs=judge_costs)
report.use_theme()
sources = report.data_sources(params["data_dir"])
inputs = []
display(Markdown(f"**Week {params['week']}** · confidence level {confidence_level:.0%} · "
                 f"selection measure `{measure}`"))

# %% [markdown]
# ## Demo corpus: four judges against the human labels

# %%
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
inputs += demo_files
answers = report.select_answers(demo.answers, judges=judges, measure=measure)
correct = evaltk.anchor_correctness(answers, demo.labels, measure=measure)
sel = evaltk.select_judges(correct, evaltk.judge_costs(answers), canaries=evaltk.canary_hits(answers, demo.canaries),
                           confidence_level=confidence_level, n_resamples=n_resamples, rng=seed)
display(Markdown(f"Source: {demo_note}. Human anchor: {correct.attrs['anchor']['items_with_anchor']} "
                 f"labelled items on `{measure}`; canary set: {len(demo.canaries)} known failures."))
report.judge_frontier_chart(sel.table, cost="cost_per_item", latency="latency_p50",
                            canary_rejected="rejected", cost_title="cost per item (USD)",
                            title=f"Judge selection on {measure}: accuracy against cost")

# %% [markdown]
# Dots are judges; the vertical bar is the accuracy interval; the dot's size is the median
# latency.  Faded judges are dominated; red crosses passed at least one canary and are
# rejected; triangles answered fewer of the anchored items than the coverage floor and are
# not eligible.  Accuracy is computed on the items the judge answered; coverage (the share
# it answered) is never folded into accuracy, but no judge dominates one whose coverage is
# materially higher (more than 5 points), and eligibility needs the floor in the table's
# coverage column (`select_judges(min_coverage=, coverage_margin=)`).

# %%
report.show_judges(sel.table)

# %% [markdown]
# ### Which orderings the data supports
#
# Every pair of judges: the point order, whether the accuracy intervals overlap, and the
# paired bootstrap interval of the difference on the items both answered.  An ordering
# is supported only when the intervals do not overlap.

# %%
report.show_orderings(sel.orderings)

# %% [markdown]
# ## JudgeBench: published judges on real pairwise data
#
# When the data folder holds JudgeBench (Tan et al., 2024), each judge's accuracy is
# recomputed from the raw judgments with JudgeBench's own fold rule (the two orderings of a
# pair: +1 per trial that matches the label, -1 per trial that contradicts it; the pair is
# correct when the sum is positive; a tie counts as not correct, as JudgeBench publishes it),
# with a Wilson interval.  JudgeBench records no cost, latency or canary set, so no frontier
# is drawn unless you pass `judge_costs`.
#
# Read with care: claude-3-haiku was run on a different population of pairs (responses of
# claude-3.5-sonnet, 270 pairs) from the other judges (gpt-4o responses, 350 pairs), so its
# accuracy is not comparable with theirs (seed 002: no comparison across populations).

# %%
if sources.judgebench is None:
    display(Markdown("*No `judgebench/judgments.csv` under the data folder: this section is empty. "
                     "Run with `--data ../shared/data` to include it.*"))
else:
    inputs.append(sources.judgebench)
    jb = evaltk.load_judgebench(sources.judgebench)
    jb_sel = report.judgebench_selection(jb, judge_costs=judge_costs, confidence_level=confidence_level,
                                         n_resamples=n_resamples, rng=seed)
    display(Markdown(f"Source: {sources.judgebench} ({len(jb)} judgments, {jb['pair_id'].nunique()} response pairs, "
                     f"{jb_sel.table.shape[0]} judges)."))
    display(report.judge_frontier_chart(jb_sel.table, cost="cost_per_item", latency=None,
                                        cost_title="cost per pair (your prices)",
                                        title="JudgeBench: accuracy against the cost you supplied") if judge_costs
            else report.judge_accuracy_chart(jb_sel.table, accuracy_title="pair accuracy (JudgeBench fold)",
                                             title="JudgeBench: per-judge accuracy with intervals"))
    display(report.show_judge_accuracy(jb_sel.table))
    display(report.show_orderings(jb_sel.orderings))

# %% [markdown]
# ## How this report was made

# %%
report.provenance("judge_selection", params, inputs, notes=[demo_note])
