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
# # Suite gating (RFC 0246): the reported score against the score the gate reads
#
# An eval suite reports, per task, the mean of its trials' output scores, and the suite an
# aggregate of those.  Under RFC 0246 the *pass decisions* read a different number: a
# trial that failed its expected trajectory (or failed closed on a fixture miss)
# contributes **0** to the task's and the suite's gating score, while its reported score
# stays what it was ("the answer was good, the path was wrong").  A deployment gate reads
# `passed`, which follows the **gated** aggregate.
#
# What this does not support: a suite's scores are measurements of the tasks in the suite;
# they say nothing about tasks the suite does not contain, and an aggregate that clears
# the bar is not a pass when the gated aggregate does not.

# %% tags=["parameters"]
week = ""  # ISO week like 2026-W48; empty means the current week
data_dir = ""  # folder holding suite/run.json; empty means the example run shipped with evaltk
suite_run = ""  # path to a suite run file, JSON or YAML; overrides data_dir
host_summary = ""  # optional: an EvalSummary another host produced for this run, checked against RFC 0246

# %%
# ruff: noqa: E402  (in a notebook the imports follow the parameters cell)
from pathlib import Path

import pandas as pd
from IPython.display import Markdown, display

from evaltk import report, suite
from evaltk.errors import UnreadableInput

params = report.check_params(week=week, data_dir=data_dir, suite_run=suite_run, host_summary=host_summary)
report.use_theme()
sources = report.data_sources(params["data_dir"])
run_path = Path(suite_run) if suite_run else sources.suite_run
if run_path is None:
    raise UnreadableInput("no suite run: pass `suite_run`, or a data folder holding suite/run.json.",
                          field="suite_run")
run = suite.load_suite_run(run_path)
summary = suite.summarize_suite(run)
inputs = [run_path]
display(Markdown(f"**Week {params['week']}** · suite `{run.suite}` · source: {run_path}"))

# %% [markdown]
# ## The decision

# %%
verdict = "PASSED" if summary.passed else "DID NOT PASS"
lines = [f"### The suite {verdict}", ""]
lines += [f"- {r}" for r in summary.reasons]
lines += ["", f"Reported aggregate score **{summary.aggregate_score:.4f}**; gated aggregate (what the gate reads) "
          f"**{summary.gated_aggregate_score:.4f}**; passScore {run.thresholds.to_dict()['passScore']}; "
          f"{summary.passed_count} of {run.task_count} tasks passed under passRule `{run.pass_rule}` "
          f"with {run.count} trial(s) each."]
display(Markdown("\n".join(lines)))
report.show_suite_conditions(summary.conditions)

# %% [markdown]
# ## Per task: reported score and gating score

# %%
tasks = summary.to_frame()
# the gating score is drawn where RFC 0246 reports it (a trajectory task) or where it differs (a fixture miss)
tasks["gated_shown"] = tasks["gated_score"].where(tasks["gated_score_reported"]
                                                  | (tasks["gated_score"] != tasks["score"]))
report.suite_gating_chart(tasks, task="task_id", gated="gated_shown",
                          pass_score=run.thresholds.to_dict()["passScore"],
                          aggregate=summary.aggregate_score, gated_aggregate=summary.gated_aggregate_score,
                          title=f"Suite {run.suite}: reported score against gating score")

# %% [markdown]
# Grey bars are the reported scores (measurements, never zeroed); blue bars the gating
# scores the pass decisions read.  Where the blue bar is shorter, trials failed their
# trajectory or a fixture: the answer may have been good, the path was not.

# %%
report.show_suite_tasks(tasks)

# %% [markdown]
# ### Every trial

# %%
report.show_suite_trials(summary.to_frame("trial"))

# %% [markdown]
# ## Another host's summary, checked against RFC 0246

# %%
if not host_summary:
    display(Markdown("*No host summary given (`host_summary`): nothing to check.*"))
else:
    inputs.append(Path(host_summary))
    violations = suite.check_summary(run, host_summary)
    if not violations:
        display(Markdown(f"`{host_summary}` conforms to RFC 0246 for this run."))
    else:
        display(Markdown(f"`{host_summary}` breaks RFC 0246 in {len(violations)} place(s):"))
        display(pd.DataFrame([v.to_dict() for v in violations]).set_index("rule"))

# %% [markdown]
# ## How this report was made

# %%
report.provenance("suite_gating", params, inputs)
