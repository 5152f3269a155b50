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
# # Calibration: judges against humans, the human ceiling and the degenerate baseline
#
# Seed 002's promotion rule asks for three numbers on the same items before a dimension
# can be called *calibrated*: the **human ceiling** (how well humans agree with each other),
# the **judge's agreement with humans**, and a **degenerate baseline** (a rater that always
# gives the majority answer), each with an interval, on a set held out from everything
# that shaped the scorer, with a threshold set by decision cost.
#
# This notebook computes the first three on the items two or more humans labelled.  What it
# does not support: the demo judges' prompts are not declared, so nothing here shows the
# items were held out, and no threshold is validated; every dimension therefore stays
# **provisional**, whatever its agreement (see the promotion check at the end).  A judge
# whose interval sits inside the human band agrees with humans about as well as humans
# agree with each other; above the red line it beats a constant.

# %% tags=["parameters"]
week = ""  # ISO week like 2026-W48; empty means the current week
data_dir = ""  # folder with real data: agentrewardbench/annotations.csv or a demo folder; empty means demo only
confidence_level = 0.95
seed = 0
n_traces = 3000  # size of the generated demo corpus when no demo folder is given
judges = []  # judges to include; empty means all
dimensions = ["x_task", "x_eff", "x_ctx"]  # demo dimensions to calibrate
n_resamples = 2000  # item bootstrap resamples for the agreement intervals
thresholds = {}  # a decision threshold per dimension, for the promotion check
threshold_source = ""  # the decision-cost record those thresholds come from; empty means not validated
scored = ""  # a scored dataset (evaltk scale score --out): its runs' agreement from its summaries; empty: in memory

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
import warnings

from IPython.display import Markdown, display

import evaltk
from evaltk import report

params = report.check_params(week=week, data_dir=data_dir, confidence_level=confidence_level, seed=seed,
                             n_traces=n_traces, judges=judges, dimensions=dimensions, n_resamples=n_resamples,
                             thresholds=thresholds, threshold_source=threshold_source, scored=scored)
report.use_theme()
warnings.simplefilter("ignore", evaltk.UndefinedWarning)  # a missing interval is shown with its reason
sources = report.data_sources(params["data_dir"])
inputs = []
display(Markdown(f"**Week {params['week']}** · confidence level {confidence_level:.0%} · "
                 f"{n_resamples} bootstrap resamples (seed {seed})"))

# %% [markdown]
# ## Demo corpus: agreement per judge and dimension

# %%
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
inputs += demo_files
answers = report.select_answers(demo.answers, judges=judges)
ceilings = report.human_ceiling_table(demo.labels, measures=dimensions, confidence_level=confidence_level,
                                      n_resamples=n_resamples, rng=seed)
agree = report.judge_agreement_table(answers, demo.labels, measures=dimensions, confidence_level=confidence_level,
                                     n_resamples=n_resamples, rng=seed)
display(Markdown(f"Source: {demo_note}."))
report.calibration_chart(agree, ceilings)

# %% [markdown]
# The dot is each judge's percent agreement with the human labels of the double-labelled
# items it answered, the bar its bootstrap interval.  The teal band is human-human
# agreement on all double-labelled items; the red dashed line is the always-majority rater
# on the same items.  x_eff is ordinal: its kappa uses quadratic weights.

# %%
report.show_agreement(agree)

# %% [markdown]
# ### Confusion: what each judge says where the humans agree on an answer
#
# Rows are the human anchor (the majority of the human labels on an item), columns the
# judge's answer, including "cannot_tell" (an abstention, not an error).  Colour is the
# share of the human row.

# %%
report.judge_confusion_chart(answers, demo.labels, measures=dimensions)

# %% [markdown]
# ### The promotion check
#
# Seed 002: calibrated needs all five of a human ceiling, a degenerate baseline, a held-out
# set, a threshold set by decision cost and a stated interval.  Shown here for the judge
# with the highest agreement on each dimension (a threshold counts only with a
# `threshold_source`; the demo declares no held-out set, so nothing is promoted).

# %%
report.show_promotion(report.promotion_table(answers, demo.labels, agree, thresholds=thresholds,
                                             threshold_source=threshold_source, confidence_level=confidence_level,
                                             n_resamples=n_resamples, rng=seed))

# %% [markdown]
# ## This week's scored runs: the judges' folded score against the human tier
#
# The score the weekly page reports folds the judges' answers into one value per run (the
# automatic tier).  Its agreement with the human tier on the runs that carry both: Cohen's
# kappa with an item-bootstrap interval, and what each side left out, by cause.  From a
# scored dataset (`scored`, `evaltk report --scored DIR`) it is drawn from the dataset's
# per-partition count tables without loading a run, and equals the rows' interval for the
# same seed; otherwise the runs are scored in memory.

# %%
wk = report.weekly_scores(sources, demo, scored=params["scored"])
inputs += wk.files
display(Markdown(f"Source: {wk.origin}."))
report.show_runs_calibration(wk.calibration(confidence_level=confidence_level, n_resamples=n_resamples, rng=seed))

# %% [markdown]
# ## AgentRewardBench: the human ceiling on real web-agent trajectories
#
# With AgentRewardBench (Lù et al., 2025) in the data folder: expert agreement on the
# trajectories two experts annotated, per question, with "Unsure" as an abstention.  This
# is the ceiling any automatic judge of these trajectories is read against.  The
# per-trajectory judge verdicts are not in the data, so judge agreement cannot be
# recomputed here: the authors' published precision table is shown with intervals put on
# it (counts reconstructed from precision and recall), which says which of its orderings
# the data supports.

# %%
arb_files, arb_shown = report.agentrewardbench_section(sources, confidence_level=confidence_level,
                                                      n_resamples=n_resamples, rng=seed)
inputs += arb_files
display(*arb_shown)

# %% [markdown]
# ## How this report was made

# %%
report.provenance("calibration", params, inputs, notes=[demo_note])
