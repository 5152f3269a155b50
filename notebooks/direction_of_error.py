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
# # Direction of error: which way each judge leans against the humans
#
# A provisional measure is not noise: its error usually has a direction even when its size
# is unknown, and the direction is what tells you which conclusions survive (seed 002,
# "What stands in for each construct, and which way the error runs").  Here the direction
# is measured, per judge and dimension, against the human anchor on the items both
# labelled:
#
# * **binary dimensions** (`x_task`, per-step `x_ctx`): signed bias = the judge's "yes" rate
#   minus the humans' "yes" rate, with Newcombe's paired interval;
# * **ordinal dimensions** (`x_eff`: lots 0, a few 0.5, none 1): the mean of judge minus
#   human on that scale, with a t interval.
#
# The lean is read from the interval: *overstates* when it lies above zero, *understates*
# below zero, *no detectable lean* when it covers zero, *unknown* without a human anchor.
# "Cannot tell" on either side takes the item out, and is counted.
#
# What this does not support: a judge's lean against humans says how the *judge* errs; it
# does not make the dimension calibrated, and it does not give an absolute level (a
# provisional score says which way things moved, not where you are).

# %% tags=["parameters"]
week = ""  # ISO week like 2026-W48; empty means the current week
data_dir = ""  # folder with real data: judgebench/judgments.csv or a demo folder; empty means demo only
confidence_level = 0.95
seed = 0
n_traces = 3000  # size of the generated demo corpus when no demo folder is given
judges = []  # judges to include; empty means all
dimensions = ["x_task", "x_ctx", "x_eff"]  # demo dimensions to analyse
scored = ""  # a scored dataset (evaltk scale score --out): its runs' lean from its summaries; empty: in memory

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
from IPython.display import Markdown, display

import evaltk
from evaltk import report

params = report.check_params(week=week, data_dir=data_dir, confidence_level=confidence_level, seed=seed,
                             n_traces=n_traces, judges=judges, dimensions=dimensions, scored=scored)
report.use_theme()
sources = report.data_sources(params["data_dir"])
inputs = []
display(Markdown(f"**Week {params['week']}** · confidence level {confidence_level:.0%}"))

# %% [markdown]
# ## Demo corpus: every judge against the human anchor

# %%
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
inputs += demo_files
answers = report.select_answers(demo.answers, judges=judges)
table = report.judge_direction_table(answers, demo.labels, measures=dimensions, confidence_level=confidence_level)
display(Markdown(f"Source: {demo_note}."))
report.bias_forest_chart(table.rename(columns={"statistic": "bias"}),
                         bias_title="judge − human (binary: yes-rate difference; x_eff: mean on 0..1)",
                         title="Direction of error per judge and dimension (demo corpus)",
                         subtitle="right of zero: the judge is kinder than the humans (more yes, less waste); "
                                  "left: harsher")

# %% [markdown]
# Each row is one dimension and judge.  Right of the dashed zero line the judge is kinder
# than the humans (more "yes", less waste); left of it, harsher.

# %%
report.show_direction(table)

# %% [markdown]
# ### What the standard says the proxies measure, beside what was measured here
#
# The seed's direction-of-error note for each dimension is about the *construct* a deployed
# proxy measures; the lean above is about each *judge* against humans on this data.  They
# answer different questions and both belong in a reading of the scores.

# %%
report.show_construct_direction(report.construct_direction_table(table))

# %% [markdown]
# ## This week's scored runs: the judges' folded score against the human tier
#
# The score the weekly page reports is the judges' answers folded into one value per run
# (the automatic tier).  Its lean against the human tier, on the runs that carry both, per
# dimension with a judge-vs-human table; the runs without a human label are excluded and
# counted, and the coverage says how few runs carry the comparison.  From a scored dataset
# (`scored`, `evaltk report --scored DIR`) this comes from its per-partition count tables,
# without loading a run; otherwise from the runs scored in memory.

# %%
wk = report.weekly_scores(sources, demo, scored=params["scored"])
inputs += wk.files
runs_lean = wk.directions(confidence_level=confidence_level)
display(Markdown(f"Source: {wk.origin}."))
report.show_direction(runs_lean)

# %% [markdown]
# ## JudgeBench: position bias of real judges
#
# With JudgeBench in the data folder, each judge's preference for the response shown
# **first** is measured against the label in the frame it was shown (the pair is shown
# in both orders; "A>B" means the first-shown response wins).  *Overstates* means the judge
# picks the first-shown response more often than the labels warrant: a first-position
# bias.  Ties ("A=B") and unparsable verdicts are abstentions, excluded and counted.
# The two orderings of one pair are treated as two items, so the interval is somewhat
# narrower than one that resampled pairs would be.

# %%
if sources.judgebench is None:
    display(Markdown("*No `judgebench/judgments.csv` under the data folder: this section is empty. "
                     "Run with `--data ../shared/data` to include it.*"))
else:
    inputs.append(sources.judgebench)
    jb_table = report.position_bias_table(evaltk.load_judgebench(sources.judgebench), confidence_level=confidence_level)
    display(Markdown(f"Source: {sources.judgebench}."))
    display(report.bias_forest_chart(jb_table.rename(columns={"statistic": "bias"}),
                                     bias_title="judge 'first wins' rate − label 'first wins' rate",
                                     title="JudgeBench: position bias per judge",
                                     subtitle="right of zero: the judge picks the first-shown response "
                                              "more often than the labels do"))
    display(report.show_position_bias(jb_table))

# %% [markdown]
# ## How this report was made

# %%
report.provenance("direction_of_error", params, inputs, notes=[demo_note])
