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

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
import warnings

import altair as alt
import pandas as pd
from IPython.display import Markdown, display

import evaltk
from evaltk import report
from evaltk.errors import InputError
from evaltk.values import Abstention, Threshold, UndefinedWarning

params = report.check_params(week=week, data_dir=data_dir, confidence_level=confidence_level, seed=seed,
                             n_traces=n_traces, judges=judges, dimensions=dimensions, n_resamples=n_resamples,
                             thresholds=thresholds, threshold_source=threshold_source)
report.use_theme()
sources = report.data_sources(params["data_dir"])
inputs = []
LEVELS = {"x_task": ("nominal", ["no", "yes"]), "x_ctx": ("nominal", ["no", "yes"]),
          "x_eff": ("ordinal", ["lots", "a_few", "none"])}
unknown = sorted(set(dimensions) - set(LEVELS))
if unknown:
    raise InputError(f"no human labels to calibrate {unknown} against; choose among {sorted(LEVELS)}.",
                     field="dimensions")
display(Markdown(f"**Week {params['week']}** · confidence level {confidence_level:.0%} · "
                 f"{n_resamples} bootstrap resamples (seed {seed})"))

# %% [markdown]
# ## Demo corpus: agreement per judge and dimension

# %%
demo, demo_files, demo_note = report.demo_data(sources, n_traces=n_traces, seed=seed)
inputs += demo_files
answers = demo.answers
if judges:
    missing = sorted(set(judges) - set(answers["rater"]))
    if missing:
        raise InputError(f"no answers from judge(s) {missing}; judges present: "
                         f"{sorted(answers['rater'].unique())}.", field="judges")
    answers = answers[answers["rater"].isin(judges)]


def item_ids(frame):
    """One id per question: the trace, plus the step for per-step dimensions."""
    step = frame["step"].astype("Int64").astype(str).replace("<NA>", "")
    return frame["trace_id"].astype(str) + step.map(lambda s: f"#{s}" if s else "")


rows, bands, numbers = [], {}, {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UndefinedWarning)  # undefined bootstrap replicates are counted on the results
    for dim in dimensions:
        level, cats = LEVELS[dim]
        hum = demo.labels[demo.labels["measure"] == dim]
        human = pd.DataFrame({"item_id": item_ids(hum), "rater": hum["rater"], "rating": hum["answer"]})
        ceiling = evaltk.human_ceiling(human, level=level, categories=cats, abstain=["cannot_tell"],
                                            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed)
        # a rater with a label on every item, so that the baseline covers every double-labelled item
        every_item = pd.Series(cats[0], index=human["item_id"].unique())
        base = evaltk.calibration_numbers(human, every_item, level=level, categories=cats,
                                               abstain=["cannot_tell"], confidence_level=confidence_level,
                                               n_resamples=n_resamples, rng=seed)
        bands[dim] = (ceiling, base)
        jd = answers[answers["measure"] == dim]
        for j, g in jd.groupby("rater", sort=True):
            nums = evaltk.calibration_numbers(
                human, pd.Series(g["answer"].to_numpy(), index=item_ids(g)), level=level, categories=cats,
                abstain=["cannot_tell"], confidence_level=confidence_level, n_resamples=n_resamples, rng=seed)
            if isinstance(nums, Abstention):
                display(Markdown(f"*{dim}, {j}: no agreement on the double-labelled items ({nums}).*"))
                continue
            numbers[(dim, j)] = nums
            k = nums.judge.kappa
            kci = k.confidence_interval if isinstance(k.confidence_interval, tuple) else (None, None)
            kstat = k.statistic if isinstance(k.statistic, float) else None
            cov = nums.judge_coverage
            rows.append({"dimension": dim, "judge": j, "statistic": nums.judge.statistic,
                         "ci_low": nums.judge.confidence_interval[0], "ci_high": nums.judge.confidence_interval[1],
                         "kappa": kstat, "kappa_low": kci[0], "kappa_high": kci[1],
                         "ceiling": nums.ceiling.statistic, "baseline": nums.baseline.statistic,
                         "n_items": nums.judge.n_items, "coverage": cov if isinstance(cov, float) else None,
                         "n_judge_abstained": nums.n_judge_abstained})
agree = pd.DataFrame(rows)
display(Markdown(f"Source: {demo_note}."))
charts = []
for dim in dimensions:
    ceiling, base = bands[dim]
    sub = agree[agree["dimension"] == dim]
    if isinstance(ceiling, evaltk.CeilingResult) and len(sub):
        charts.append(report.agreement_chart(
            sub, ceiling=(ceiling.statistic, *ceiling.confidence_interval),
            baseline=None if isinstance(base, Abstention) else base.baseline.statistic,
            statistic_title="percent agreement with the human labels",
            title=f"{dim}: judge agreement against the human ceiling ({ceiling.n_pairable} double-labelled items)"))
    else:
        display(Markdown(f"*{dim}: no item has two human labels, so there is no ceiling to draw.*"))
alt.vconcat(*charts) if charts else None

# %% [markdown]
# The dot is each judge's percent agreement with the human labels of the double-labelled
# items it answered, the bar its bootstrap interval.  The teal band is human-human
# agreement on all double-labelled items; the red dashed line is the always-majority rater
# on the same items.  x_eff is ordinal: its kappa uses quadratic weights.

# %%
t = agree.copy()
t["agreement [interval]"] = [report.format_interval(s, lo, hi, digits=3)
                             for s, lo, hi in zip(t["statistic"], t["ci_low"], t["ci_high"], strict=True)]
t["kappa [interval]"] = [report.format_interval(s, lo, hi, digits=3)
                         for s, lo, hi in zip(t["kappa"], t["kappa_low"], t["kappa_high"], strict=True)]
t["human ceiling"] = t["ceiling"].map("{:.3f}".format)
t["majority baseline"] = t["baseline"].map("{:.3f}".format)
t["coverage"] = t["coverage"].map(lambda c: "—" if pd.isna(c) else f"{c:.0%}")
t[["dimension", "judge", "agreement [interval]", "kappa [interval]", "human ceiling", "majority baseline",
   "n_items", "coverage", "n_judge_abstained"]].set_index(["dimension", "judge"])

# %% [markdown]
# ### Confusion: what each judge says where the humans agree on an answer
#
# Rows are the human anchor (the majority of the human labels on an item), columns the
# judge's answer, including "cannot_tell" (an abstention, not an error).  Colour is the
# share of the human row.

# %%
conf_charts = []
for dim in dimensions:
    c = evaltk.anchor_correctness(answers, demo.labels, measure=dim)
    counts = c.groupby(["judge", "human_answer", "judge_answer"], as_index=False).size().rename(columns={"size": "n"})
    order = [*LEVELS[dim][1], "cannot_tell"]
    conf_charts.append(report.confusion_heatmap(counts, truth="human_answer", predicted="judge_answer", count="n",
                                                facet="judge", order=order,
                                                title=f"{dim}: judge answer against the human anchor"))
alt.vconcat(*conf_charts)

# %% [markdown]
# ### The promotion check
#
# Seed 002: calibrated needs all five of a human ceiling, a degenerate baseline, a held-out
# set, a threshold set by decision cost and a stated interval.  Shown here for the judge
# with the highest agreement on each dimension (a threshold counts only with a
# `threshold_source`; the demo declares no held-out set, so nothing is promoted).

# %%
checks = []
for dim in dimensions:
    sub = agree[agree["dimension"] == dim].sort_values("statistic", ascending=False)
    if sub.empty:
        continue
    best = sub.iloc[0]["judge"]
    th = (Threshold(thresholds[dim], validated=bool(threshold_source), source=threshold_source or "report parameter")
          if dim in thresholds else None)
    pc = evaltk.promotion_check(numbers[(dim, best)], threshold=th).to_frame()
    pc.insert(0, "dimension", f"{dim} ({best})")
    checks.append(pc)
pd.concat(checks, ignore_index=True).set_index("dimension") if checks else None

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
if sources.agentrewardbench is None:
    display(Markdown("*No `agentrewardbench/annotations.csv` under the data folder: this section is empty. "
                     "Run with `--data ../shared/data` to include it.*"))
else:
    inputs.append(sources.agentrewardbench)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        arb = evaltk.agentrewardbench_ceiling(sources.agentrewardbench, confidence_level=confidence_level,
                                                   n_resamples=n_resamples, rng=seed)
    pa = arb[arb["statistic_name"] == "percent_agreement"].rename(columns={"question": "judge"})
    display(Markdown(f"Source: {sources.agentrewardbench}."))
    display(report.agreement_chart(pa, statistic_title="expert-expert percent agreement",
                                   title="AgentRewardBench: the human ceiling per question"))
    arb_t = arb.copy()
    arb_t["statistic [interval]"] = [report.format_interval(s, lo, hi, digits=3) for s, lo, hi in
                                     zip(arb_t["statistic"], arb_t["ci_low"], arb_t["ci_high"], strict=True)]
    display(arb_t[["question", "statistic_name", "statistic [interval]", "n_pairable", "n_ratings_abstained",
                   "n_items_lost_to_abstention", "interval_method"]].set_index(["question", "statistic_name"]))
    if sources.agentrewardbench_leaderboard is not None:
        inputs.append(sources.agentrewardbench_leaderboard)
        # intervals on the published table: counts reconstructed from precision, recall and the number of
        # trajectories the experts judged successful (first annotation of each trajectory; docs/judges.md)
        ratings = evaltk.load_agentrewardbench(sources.agentrewardbench)
        success = ratings[ratings["question"] == "success"].drop_duplicates("item_id")
        n_pos = int((success["rating"] == "Successful").sum())
        board = pd.read_csv(sources.agentrewardbench_leaderboard)
        pub = evaltk.published_precision_recall(board, n_pos, judge="Judge", precision="Overall",
                                                   recall="Recall", f1="F1", confidence_level=confidence_level)
        pt = pub.table.rename(columns={"precision": "statistic", "precision_ci_low": "ci_low",
                                       "precision_ci_high": "ci_high"})
        display(Markdown(f"Published judge precision (*Overall*) with Wilson intervals on counts reconstructed "
                         f"from precision, recall and the {n_pos} trajectories the experts judged successful "
                         f"(of {success['item_id'].nunique()}); every published F1 reproduced from them: "
                         f"{'yes' if pub.table.get('f1_consistent', pd.Series([True])).all() else 'no'}."))
        display(alt.vconcat(report.agreement_chart(
            pt, statistic_title="precision of 'successful' verdicts (published, with reconstructed interval)",
            title="AgentRewardBench: published judge precision")))
        supported = pub.orderings["supported"]
        display(Markdown(f"{int(supported.sum())} of {len(supported)} pairwise precision orderings are supported "
                         "by the intervals; the rest are not, whatever the published ranking says."))
        display(board.set_index("Judge"))

# %% [markdown]
# ## How this report was made

# %%
report.provenance("calibration", params, inputs, notes=[demo_note])
