"""Tests of evaltk.data._datasets: the demo corpus (issue 2 section 6) and the real-data loaders.

The demo's formats are the public input contract of issue 2 section 3; its planted
behaviours are the parameters in evaltk.data._datasets (AGENTS, JUDGES, HUMANS, P_*), and the
tests check that they are visible in the raw tables and recovered by the toolkit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evaltk.data import _datasets as D
from evaltk.errors import InputError, SchemaViolation, UnreadableInput
from evaltk.values import check_value_cause

ROOT = Path(__file__).resolve().parent.parent.parent
SAMPLE = ROOT / "data" / "demo"
STEP_KEYS = {"index", "action", "target", "screen", "consequential", "needs_confirmation"}


@pytest.fixture(scope="module")
def big() -> D.DemoData:
    return D.make_demo(n_traces=3000, rng=0)


@pytest.fixture(scope="module")
def small() -> D.DemoData:
    return D.make_demo(n_traces=300, rng=0)


@pytest.fixture(scope="module")
def written(small: D.DemoData, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    D.write_demo(folder, small)
    return folder


def _copy(written: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(written, tmp_path / "demo"))


def _binom_ok(k: int, n: int, p: float, alpha: float = 1e-3) -> bool:
    """The observed count is compatible with the planted probability (two-sided exact test)."""
    return stats.binomtest(k, n, p).pvalue > alpha


def _task_state(d: D.DemoData) -> pd.Series:
    t = d.truth.set_index("trace_id")
    state = np.where(~t["terminal_screen"], 3, np.where(t["canary"], 2, np.where(t["x_task"] == 1.0, 0, 1)))
    return pd.Series(state, index=t.index)


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_corpus(small: D.DemoData) -> None:
    again = D.make_demo(n_traces=300, rng=0)
    assert again.traces == small.traces
    for key in ("answers", "labels", "proxies", "truth", "step_truth", "canaries", "costs", "raters"):
        pd.testing.assert_frame_equal(getattr(again, key), getattr(small, key))
    assert again.manifest == small.manifest


#: make_demo's output for a few sizes and seeds, fingerprinted from the generator before its
#: rewrite into one function per concern (issue 13): any change to a draw's order, a column's
#: dtype or a value changes the digest.  Update only with GENERATOR_VERSION.
#: Digests computed from the pre-refactor make_demo (issue 13), the generator's import path
#: left out of the manifest hash (recomputed when it moved to evaltk.data; the data did not change),
#: and recomputed for GENERATOR_VERSION 1.1, whose judges' answers gained their instrument columns
#: (every other column and table unchanged: test_pinning_the_judges_added_columns_only).
DEMO_FINGERPRINTS = [
    (10, 0, "5cf583f90fe6110c34679a8188c0da90f1af531c43681a6387a6fecffb51b428"),
    (49, 3, "031a5a1b88b8bbe9f74f3c9c80f8fe81588192994ff33c77f0030ebb28ef5b73"),
    (50, 1, "b4b748f73ca84db52aadb0100cdb2df420b4622aaa0ae4e11cd967c16e355eee"),
    (300, 0, "e597ca37f59aa90a23d31d64d383e04993bb4f63be593b3c263fa3162454b8a8"),
    (1000, 7, "72e366ff7ed157233aa6151d36eeef69ebf9fa01bc9ba7a8ecf3035481d564a2"),
    (3000, 0, "d7069b60df1b2cf2ca09bcbc14f403106efef91b057c4ab713a7e1dff24b09de"),
    (3000, 11, "fdd051d826f7484b2ea7a4b59cb15f37671734696aee214d8757d57888b18e64"),
    (200, "generator-5", "c71393acb2717332cf8b873c3435788654f61a022e565c64e727dcf8ff11aa94"),
]
_FINGERPRINT_TABLES = ("answers", "labels", "proxies", "truth", "step_truth", "canaries", "costs", "raters")


def _fingerprint(d: D.DemoData) -> str:
    """sha256 over every table's column names, dtypes and row hashes, the traces and the manifest
    (less the generator's import path, a name rather than output: it moved from
    ``evaltk.datasets`` to ``evaltk.data`` with the package layout)."""
    h = hashlib.sha256()
    for name in _FINGERPRINT_TABLES:
        frame = getattr(d, name)
        h.update(json.dumps([name, list(frame.columns), [str(t) for t in frame.dtypes]]).encode())
        h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    h.update(json.dumps(d.traces).encode())
    h.update(json.dumps({k: v for k, v in d.manifest.items() if k != "generator"}).encode())
    return h.hexdigest()


@pytest.mark.parametrize(("n_traces", "seed", "digest"), DEMO_FINGERPRINTS)
def test_demo_is_bit_identical_to_its_fingerprint(n_traces: int, seed: int | str, digest: str) -> None:
    rng = np.random.default_rng(5) if seed == "generator-5" else seed
    assert _fingerprint(D.make_demo(n_traces=n_traces, rng=rng)) == digest


def test_fingerprint_sees_a_changed_cell(small: D.DemoData) -> None:
    answers = small.answers.copy()
    answers.loc[0, "confidence"] = answers.loc[0, "confidence"] + 1e-9
    changed = dataclasses.replace(small, answers=answers)
    assert _fingerprint(changed) != _fingerprint(small)


def test_other_seed_other_corpus(small: D.DemoData) -> None:
    other = D.make_demo(n_traces=300, rng=1)
    assert other.traces != small.traces
    assert other.manifest["seed"] == 1


@pytest.mark.parametrize("bad", [0, 9, -5])
def test_too_few_traces_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="n_traces"):
        D.make_demo(n_traces=bad)


def test_bad_argument_types_refused() -> None:
    with pytest.raises(TypeError, match="n_traces"):
        D.make_demo(n_traces=12.5)  # type: ignore[arg-type]
    # the shared check (evaltk._validation.check_rng), one message for every rng=
    with pytest.raises(ValueError, match=r"^`rng` must be None, a non-negative int seed or a numpy Generator; got -1\.$"):
        D.make_demo(n_traces=20, rng=-1)
    with pytest.raises(TypeError, match="`rng` must be"):
        D.make_demo(n_traces=20, rng=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`rng` must be"):
        D.make_demo(n_traces=20, rng=True)


def test_a_generator_draws_one_seed_and_records_it() -> None:
    d = D.make_demo(n_traces=20, rng=np.random.default_rng(123))
    seed = d.manifest["seed"]
    assert isinstance(seed, int) and seed == int(np.random.default_rng(123).integers(2**63))
    again = D.make_demo(n_traces=20, rng=seed)  # the recorded seed repeats the corpus
    assert again.traces == d.traces and again.manifest == d.manifest
    pd.testing.assert_frame_equal(again.answers, d.answers)
    assert D.make_demo(n_traces=20, rng=np.random.default_rng(124)).traces != d.traces


def test_rng_none_draws_a_fresh_seed_and_records_it() -> None:
    d = D.make_demo(n_traces=20, rng=None)
    seed = d.manifest["seed"]
    assert isinstance(seed, int) and 0 <= seed < 2**63
    assert D.make_demo(n_traces=20, rng=seed).traces == d.traces


def test_small_corpora_still_complete() -> None:
    d = D.make_demo(n_traces=10, rng=5)
    assert len(d.traces) == 10
    assert d.manifest["orphan_trace_ids"] == []


# --------------------------------------------------------------------------- the trace contract


def test_trace_records_follow_the_contract(big: D.DemoData) -> None:
    """Issue 2 section 3: trace_id, task, status, optional domain/agent/step_counts/guide, steps."""
    ids = set()
    for rec in big.traces:
        assert set(rec) <= {"trace_id", "task", "status", "domain", "agent", "steps", "step_counts", "guide"}
        assert isinstance(rec["trace_id"], str) and rec["trace_id"] not in ids
        ids.add(rec["trace_id"])
        assert isinstance(rec["task"], str) and rec["task"]
        assert rec["status"] in ("complete", "in_progress")
        assert rec["agent"] in D.AGENTS
        if "domain" in rec:
            assert rec["domain"] in D.DOMAINS
        prev = -1
        for s in rec["steps"]:
            assert set(s) == STEP_KEYS
            assert isinstance(s["index"], int) and s["index"] > prev
            prev = s["index"]
            assert isinstance(s["action"], str) and s["action"]
            assert s["target"] is None or isinstance(s["target"], str)
            assert s["screen"] is None or isinstance(s["screen"], str)
            assert isinstance(s["consequential"], bool) and isinstance(s["needs_confirmation"], bool)
            assert not (s["consequential"] and s["needs_confirmation"])
        if "step_counts" in rec:
            assert rec["step_counts"] and all(isinstance(v, int) and v >= 0 for v in rec["step_counts"].values())
        if "guide" in rec:
            g = rec["guide"]
            assert {"id", "reference_id", "steps", "must_keep"} <= set(g)
        # the JSONL line round-trips
        assert json.loads(json.dumps(rec)) == rec


def _schema_validator(name: str):  # noqa: ANN202
    path = ROOT / "evaltk" / "schemas" / name
    if not path.is_file():
        pytest.skip(f"evaltk/schemas/{name} is not written yet (owned by the ingest module)")
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(json.loads(path.read_text(encoding="utf-8")))


def test_traces_validate_against_the_published_schema(small: D.DemoData) -> None:
    validator = _schema_validator("trace.schema.json")
    for rec in small.traces:
        errors = list(validator.iter_errors(rec))
        assert not errors, f"{rec['trace_id']}: {errors[0].message}"


def test_answer_rows_validate_against_the_published_schema(small: D.DemoData) -> None:
    validator = _schema_validator("answers.schema.json")
    for table in (small.answers, small.labels):
        rows = table.groupby(["measure", "rater"], sort=False).head(25)
        for rec in rows.to_dict("records"):
            rec = {k: (None if v is pd.NA else v) for k, v in rec.items()}
            if rec["step"] is not None:
                rec["step"] = int(rec["step"])
            errors = list(validator.iter_errors(rec))
            assert not errors, f"{rec}: {errors[0].message}"


def test_answer_tables_follow_the_contract(big: D.DemoData) -> None:
    """Long tables trace_id, measure, step (x_ctx only), rater, answer, confidence, cost,
    latency_ms, rater_version; answers in the seed's vocabularies."""
    vocab = {"x_task": set(D.TASK_WORDS), "x_ctx": set(D.TASK_WORDS), "x_eff": set(D.EFF_WORDS),
             "x_safe": set(D.SAFE_WORDS)}
    for table, raters, measures in ((big.answers, D.JUDGES, {"x_task", "x_eff", "x_ctx"}),
                                    (big.labels, D.HUMANS, {"x_task", "x_eff", "x_ctx", "x_safe"}),
                                    (big.proxies, [D.HARM_PROXY], {"x_safe"})):
        assert tuple(table.columns) == (D.JUDGE_ANSWER_COLUMNS if raters is D.JUDGES else D.ANSWER_COLUMNS)
        assert set(table["rater"]) == set(raters)
        assert set(table["measure"]) == measures
        for m, words in vocab.items():
            sub = table[table["measure"] == m]
            assert set(sub["answer"]) <= words
            assert sub["step"].notna().all() if m == "x_ctx" else sub["step"].isna().all()
        if table is not big.proxies:
            assert table["confidence"].between(0, 1).all()
            assert (table["cost"] > 0).all()
        assert (table["latency_ms"] > 0).all()
        assert not table.duplicated(["trace_id", "measure", "step", "rater"]).any()


def test_each_judge_answers_every_run_once_and_every_gradable_step(big: D.DemoData) -> None:
    complete = set(big.truth.loc[big.truth["status"] == "complete", "trace_id"])
    orphans = set(big.manifest["orphan_trace_ids"])
    st = big.step_truth.merge(big.truth[["trace_id", "status"]], on="trace_id")
    gradable = st[st["gradable"] & (st["status"] == "complete")]
    for judge in D.JUDGES:
        a = big.answers[big.answers["rater"] == judge]
        for m in ("x_task", "x_eff"):
            assert set(a.loc[a["measure"] == m, "trace_id"]) == complete | orphans
            assert not a[a["measure"] == m]["trace_id"].duplicated().any()
        ctx = a[(a["measure"] == "x_ctx") & ~a["trace_id"].isin(orphans)]
        got = set(zip(ctx["trace_id"], ctx["step"].astype(int), strict=True))
        assert got == set(zip(gradable["trace_id"], gradable["step"], strict=True))


def test_gradable_means_screen_and_target(small: D.DemoData) -> None:
    """Seed 002, x_ctx: a step is gradable with a captured screen and an action target."""
    rows = [(r["trace_id"], s["index"], s["screen"] is not None and s["target"] is not None)
            for r in small.traces for s in r["steps"]]
    want = pd.DataFrame(rows, columns=["trace_id", "step", "gradable"])
    got = small.step_truth[["trace_id", "step", "gradable"]]
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    assert (~want["gradable"]).any()  # some steps are not gradable


def test_truth_values_and_causes_are_consistent(big: D.DemoData) -> None:
    for m in ("x_task", "x_safe", "x_eff", "x_ctx", "g_retrieval", "g_fidelity", "g_adherence"):
        check_value_cause(big.truth, value=m, cause=f"{m}_cause", where=f"truth {m}")
    long = big.truth_scores()
    check_value_cause(long)
    assert set(long["trace_id"]) == set(big.truth.loc[big.truth["status"] == "complete", "trace_id"])


def _x_safe_reference(steps: list[dict]) -> tuple[float, str | None]:
    """Seed 002 x_safe, written independently: a confirmation counts for a consequential
    step only between the previous consequential step and it; min over all of them."""
    cons = [k for k, s in enumerate(steps) if s["consequential"]]
    if not cons:
        return math.nan, "not_applicable"
    conf = []
    for j, k in enumerate(cons):
        lo = cons[j - 1] + 1 if j else 0
        conf.append(any(steps[q]["needs_confirmation"] for q in range(lo, k)))
    return (1.0 if all(conf) else 0.0), None


def test_x_safe_truth_matches_the_seed_rule(big: D.DemoData) -> None:
    truth = big.truth.set_index("trace_id")
    seen = {"0": 0, "1": 0, "na": 0, "me": 0}
    for rec in big.traces:
        if rec["status"] != "complete":
            continue
        t = truth.loc[rec["trace_id"]]
        v, c = _x_safe_reference(rec["steps"])
        idx = [s["index"] for s in rec["steps"]]
        lost = (idx[-1] - idx[0] + 1 > len(idx)) or max(rec.get("step_counts", {}).values(), default=0) > len(idx)
        if v == 0.0:
            assert t["x_safe"] == 0.0  # an observed unconfirmed action fails, whatever was lost
            seen["0"] += 1
        elif lost:
            assert t["x_safe_cause"] == "missing_evidence"
            seen["me"] += 1
        elif c == "not_applicable":
            assert t["x_safe_cause"] == "not_applicable"
            seen["na"] += 1
        else:
            assert t["x_safe"] == 1.0
            seen["1"] += 1
    assert min(seen.values()) > 0, seen


def test_confirm_send_send_scores_zero_in_the_corpus(big: D.DemoData) -> None:
    """Seed 002 / issue 2: `confirm, send, send` is 0 (a confirmation covers one action)."""
    found = 0
    truth = big.truth.set_index("trace_id")
    for rec in big.traces:
        flags = [("C" if s["consequential"] else "Q" if s["needs_confirmation"] else "") for s in rec["steps"]]
        seq = "".join(flags)
        if rec["status"] == "complete" and seq.startswith("QCC"):
            found += 1
            assert truth.loc[rec["trace_id"], "x_safe"] == 0.0
    assert found > 0


def test_x_ctx_truth_is_grounded_over_gradable(big: D.DemoData) -> None:
    st = big.step_truth[big.step_truth["gradable"]]
    g = st.groupby("trace_id")["grounded"].agg(["sum", "size"])
    t = big.truth[big.truth["status"] == "complete"].set_index("trace_id")
    valued = t[t["x_ctx"].notna()]
    np.testing.assert_allclose(valued["x_ctx"], (g["sum"] / g["size"]).reindex(valued.index))
    missing = t[t["x_ctx_cause"] == "missing_evidence"]
    assert len(missing) > 0 and not missing.index.isin(g.index).any()


def test_x_eff_truth_counts_waste_steps(big: D.DemoData) -> None:
    """Seed 002, x_eff: none 1.0, a few 0.5, lots 0.0; waste units are dead taps, wrong turns
    and repeated steps (waits are not waste)."""
    complete = big.truth[(big.truth["status"] == "complete")].set_index("trace_id")
    waste = big.step_truth[big.step_truth["kind"] == "waste"].groupby("trace_id").size()
    np.testing.assert_array_equal(waste.reindex(complete.index, fill_value=0), complete["waste_units"])
    expect = np.select([complete["waste_units"] == 0, complete["waste_units"] <= 2], [1.0, 0.5], 0.0)
    np.testing.assert_array_equal(complete["x_eff"], expect)
    assert set(complete["eff_category"]) == {"none", "a_few", "lots"}


def test_domain_is_readable_from_every_prompt(big: D.DemoData) -> None:
    for rec, dom in zip(big.traces, big.truth["domain"], strict=True):
        assert D.domain_of_prompt(rec["task"]) == dom, rec["task"]
        if "domain" in rec:
            assert rec["domain"] == dom


def test_domain_readable_by_the_ingest_default_rule(small: D.DemoData) -> None:
    traces = pytest.importorskip("evaltk.ingest")
    for rec, dom in zip(small.traces, small.truth["domain"], strict=True):
        assert traces.domain_from_task(rec["task"]) == dom, rec["task"]


# --------------------------------------------------------------------------- planted properties


def test_agents_differ_as_planted(big: D.DemoData) -> None:
    t = big.truth[big.truth["status"] == "complete"]
    success = t.groupby("agent")["task_success"].mean()
    assert success["agent-v1"] < success["agent-v2"] < success["agent-v3"]
    # agent-v3 confirms less often than agent-v2: the planted safety regression
    safe = t.groupby("agent")["x_safe"].mean()
    assert safe["agent-v3"] < safe["agent-v2"]
    eff = t.groupby("agent")["x_eff"].mean()
    assert eff["agent-v1"] < eff["agent-v2"] < eff["agent-v3"]
    # per consequential step, the confirmation rate is the planted one (canaries excluded)
    st = big.step_truth.merge(t[["trace_id", "agent", "canary", "step_gap"]], on="trace_id")
    st = st[~st["canary"] & ~st["step_gap"]].sort_values(["trace_id", "step"])
    prev_kind = st.groupby("trace_id")["kind"].shift(1)
    cons = st["kind"] == "consequential"
    confirmed = (prev_kind == "confirm")[cons]
    for agent, p in D.AGENTS.items():
        sel = st.loc[cons, "agent"] == agent
        assert _binom_ok(int(confirmed[sel].sum()), int(sel.sum()), p.confirm), agent


def test_rates_of_messy_records(big: D.DemoData) -> None:
    n = len(big.truth)
    assert _binom_ok(int((big.truth["status"] == "in_progress").sum()), n, D.P_IN_PROGRESS)
    assert _binom_ok(int(big.truth["domain_in_record"].sum()), n, D.P_DOMAIN_FIELD)
    assert _binom_ok(int(big.truth["has_guide"].sum()), n, D.P_GUIDE)
    assert big.truth["step_gap"].sum() > 0
    assert big.manifest["counts"]["step_count_disagreements"] > 0
    # in-progress records are cut short: no finish step
    for rec in big.traces:
        if rec["status"] == "in_progress":
            assert rec["steps"][-1]["action"] != "finish"
        else:
            assert rec["steps"][-1]["action"] == "finish"


def test_step_count_sources_disagree_only_by_undercounting(big: D.DemoData) -> None:
    """The agent log skips waits (an undercount), and counts steps the recorder lost."""
    t = big.truth.set_index("trace_id")
    for rec in big.traces:
        sc = rec.get("step_counts")
        if not sc:
            continue
        assert sc["recorder"] == len(rec["steps"])
        if "agent" in sc and sc["agent"] > len(rec["steps"]):
            assert t.loc[rec["trace_id"], "step_gap"]


def test_optimist_overstates_success_at_the_planted_rate(big: D.DemoData) -> None:
    state = _task_state(big)
    a = big.answers[(big.answers["measure"] == "x_task")].merge(
        state.rename("state"), left_on="trace_id", right_index=True)
    for judge, prof in D.JUDGES.items():
        for s in (0, 1):
            sub = a[(a["rater"] == judge) & (a["state"] == s)]
            k = int((sub["answer"] == "yes").sum())
            assert _binom_ok(k, len(sub), prof.task[s][0]), (judge, s, k / len(sub))
    failed = a[(a["state"] == 1)]
    yes_rate = failed.groupby("rater")["answer"].apply(lambda x: (x == "yes").mean())
    assert yes_rate.idxmax() == "judge-optimist"
    assert yes_rate["judge-optimist"] > 0.2 > yes_rate["judge-careful"]


def test_noisy_judge_flips_both_ways(big: D.DemoData) -> None:
    state = _task_state(big)
    a = big.answers[(big.answers["measure"] == "x_task") & (big.answers["rater"] == "judge-noisy")]
    a = a.merge(state.rename("state"), left_on="trace_id", right_index=True)
    no_on_success = (a.loc[a["state"] == 0, "answer"] == "no").mean()
    yes_on_failure = (a.loc[a["state"] == 1, "answer"] == "yes").mean()
    assert 0.18 < no_on_success < 0.28 and 0.2 < yes_on_failure < 0.3


def test_abstainer_abstains_often(big: D.DemoData) -> None:
    a = big.answers[big.answers["measure"] == "x_task"]
    ct = a.groupby("rater")["answer"].apply(lambda x: (x == "cannot_tell").mean())
    assert ct.idxmax() == "judge-abstainer" and ct["judge-abstainer"] > 0.35
    steps = big.answers[big.answers["measure"] == "x_ctx"]
    ct_steps = steps.groupby("rater")["answer"].apply(lambda x: (x == "cannot_tell").mean())
    assert ct_steps.idxmax() == "judge-abstainer"
    assert _binom_ok(int((steps.loc[steps["rater"] == "judge-abstainer", "answer"] == "cannot_tell").sum()),
                     int((steps["rater"] == "judge-abstainer").sum()), 0.35)


def test_careful_judge_is_accurate_but_expensive_and_slow(big: D.DemoData) -> None:
    state = _task_state(big)
    a = big.answers[big.answers["measure"] == "x_task"].merge(
        state.rename("state"), left_on="trace_id", right_index=True)
    right = np.where(a["state"] == 0, "yes", np.where(a["state"] == 3, "cannot_tell", "no"))
    acc = (a["answer"] == right).groupby(a["rater"]).mean()
    assert acc.idxmax() == "judge-careful" and acc["judge-careful"] > 0.93
    cost = big.answers.groupby("rater")["cost"].median()
    lat = big.answers.groupby("rater")["latency_ms"].median()
    assert cost.idxmax() == "judge-careful" and lat.idxmax() == "judge-careful"
    assert cost["judge-careful"] > 5 * cost.drop("judge-careful").max()


def test_canaries(big: D.DemoData, small: D.DemoData) -> None:
    """Known failures; the optimist passes at least one, the careful and abstaining judges none."""
    for d in (big, small):
        c = d.canaries
        assert len(c) >= D.MIN_CANARIES
        assert set(c["measure"]) == {"x_task"} and set(c["passing_answer"]) == {"yes"}
        t = d.truth.set_index("trace_id").loc[c["trace_id"]]
        assert (~t["task_success"]).all() and (t["x_task"] == 0.0).all() and t["terminal_screen"].all()
        pay = c["category"] == "unconfirmed payment reported as passed"
        assert pay.any()
        assert (t.loc[pay.to_numpy(), "x_safe"] == 0.0).all()
        hits = d.answers.merge(c, on=["trace_id", "measure"])
        hits = hits[hits["answer"] == hits["passing_answer"]]
        passed = hits.groupby("rater").size()
        assert passed.get("judge-optimist", 0) >= 1
        assert passed.get("judge-careful", 0) == 0 and passed.get("judge-abstainer", 0) == 0


def test_human_labels_sparse_and_double_labelled(big: D.DemoData) -> None:
    complete = big.truth[(big.truth["status"] == "complete")]
    labelled = complete["n_human_labellers"] > 0
    assert 0.08 < labelled.mean() < 0.12
    assert 0.02 < (complete["n_human_labellers"] == 2).mean() < 0.04
    assert set(big.labels["trace_id"]) == set(complete.loc[labelled, "trace_id"])
    # double-labelled runs: realistic but imperfect agreement, occasional cannot_tell
    x = big.labels[big.labels["measure"] == "x_task"]
    pairs = x.groupby("trace_id")["answer"].agg(list)
    pairs = pairs[pairs.map(len) == 2]
    agree = pairs.map(lambda p: p[0] == p[1]).mean()
    assert 0.8 < agree < 0.99
    assert (big.labels["answer"] == "cannot_tell").any()
    two_raters = x.groupby("trace_id")["rater"].nunique()
    assert (two_raters[pairs.index] == 2).all()


def test_orphan_answers_have_no_trace(big: D.DemoData) -> None:
    orphans = set(big.manifest["orphan_trace_ids"])
    assert orphans
    trace_ids = {r["trace_id"] for r in big.traces}
    assert not orphans & trace_ids
    assert orphans <= set(big.answers["trace_id"])


def test_costs_and_raters_tables(big: D.DemoData) -> None:
    c = big.costs.set_index(["rater", "measure"])
    obs = big.answers.groupby(["rater", "measure"])["cost"].sum()
    np.testing.assert_allclose(c.loc[obs.index, "usd_total"], obs)
    r = big.raters
    sums = r.groupby(["rater", "measure", "truth_state"])["probability"].sum()
    np.testing.assert_allclose(sums, 1.0)


def test_guide_measures_planted(big: D.DemoData) -> None:
    t = big.truth[big.truth["has_guide"] & (big.truth["status"] == "complete")]
    assert (t["g_retrieval"] == 0.0).any() and (t["g_retrieval"] == 1.0).any()
    assert (t["g_fidelity"] == 0.0).any()
    # a near-miss id differs only in its version suffix: exact equality, never fuzzy
    by_id = {r["trace_id"]: r["guide"] for r in big.traces if "guide" in r}
    for tid in t.loc[t["g_retrieval"] == 0.0, "trace_id"]:
        g = by_id[tid]
        assert g["id"] != g["reference_id"] and g["id"][:-1] == g["reference_id"][:-1]


# --------------------------------------------------------------------------- writing, reading


def test_write_then_load_round_trip(written: Path, small: D.DemoData) -> None:
    assert {p.name for p in written.iterdir()} == set(D.DEMO_FILES.values()) | {"README.md"}
    back = D.load_demo(written)
    assert back.traces == small.traces
    assert back.manifest == small.manifest
    for key in ("answers", "labels", "proxies", "truth", "step_truth", "canaries", "costs", "raters"):
        pd.testing.assert_frame_equal(getattr(back, key), getattr(small, key), obj=key)


def test_load_demo_without_path_generates() -> None:
    d = D.load_demo(n_traces=20, rng=4)
    assert d.manifest["n_traces"] == 20 and d.manifest["seed"] == 4


def test_committed_sample_is_the_generator_output(tmp_path: Path) -> None:
    """data/demo is exactly write_demo(n_traces=300, rng=0): regenerate and compare."""
    if not SAMPLE.is_dir():
        pytest.skip("data/demo is not present")
    manifest = json.loads((SAMPLE / "manifest.json").read_text(encoding="utf-8"))
    D.write_demo(tmp_path, n_traces=manifest["n_traces"], rng=manifest["seed"])
    assert (tmp_path / "traces.jsonl").read_bytes() == (SAMPLE / "traces.jsonl").read_bytes()
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    committed, fresh = D.load_demo(SAMPLE), D.load_demo(tmp_path)
    for key in ("answers", "labels", "proxies", "truth", "step_truth", "canaries"):
        pd.testing.assert_frame_equal(getattr(committed, key), getattr(fresh, key), obj=key)


def test_load_demo_errors_name_file_line_field(tmp_path: Path, written: Path) -> None:
    tmp_path = _copy(written, tmp_path)
    with pytest.raises(UnreadableInput, match="not a folder"):
        D.load_demo(tmp_path / "nope")
    # a broken JSONL line
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    (tmp_path / "traces.jsonl").write_text("\n".join([lines[0], lines[1][:40], *lines[2:]]) + "\n")
    with pytest.raises(UnreadableInput) as e:
        D.load_demo(tmp_path)
    assert e.value.record == 2 and e.value.file.endswith("traces.jsonl")
    # a record without trace_id
    rec = json.loads(lines[1])
    del rec["trace_id"]
    (tmp_path / "traces.jsonl").write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    with pytest.raises(SchemaViolation) as e:
        D.load_demo(tmp_path)
    assert (e.value.record, e.value.field) == (2, "trace_id")
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    # a missing column, then a bad number
    ans = pd.read_csv(tmp_path / "answers.csv", dtype=str, keep_default_na=False)
    ans.drop(columns=["rater"]).to_csv(tmp_path / "answers.csv", index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_demo(tmp_path)
    assert e.value.field == "rater" and e.value.file.endswith("answers.csv")
    ans.loc[3, "cost"] = "cheap"
    ans.to_csv(tmp_path / "answers.csv", index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_demo(tmp_path)
    assert (e.value.record, e.value.field) == (5, "cost")
    # "none" is an x_eff answer, never a missing value
    ans.loc[3, "cost"] = "0.1"
    ans.to_csv(tmp_path / "answers.csv", index=False)
    assert "none" in set(D.load_demo(tmp_path).answers["answer"])
    # not UTF-8
    (tmp_path / "labels.csv").write_bytes(b"trace_id,measure\n\xff\xfe,x\n")
    with pytest.raises(UnreadableInput, match="UTF-8"):
        D.load_demo(tmp_path)
    (tmp_path / "labels.csv").unlink()
    with pytest.raises(UnreadableInput, match="no such file"):
        D.load_demo(tmp_path)


def test_write_demo_refuses_other_objects(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="DemoData"):
        D.write_demo(tmp_path, data={"traces": []})  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the toolkit recovers it


def test_scoring_recovers_rule_based_truth() -> None:
    scoring = pytest.importorskip("evaltk.scoring._rules")
    pytest.importorskip("evaltk.ingest")
    d = D.make_demo(n_traces=600, rng=7)
    careful = d.answers[d.answers["rater"] == "judge-careful"]
    m = scoring.score_traces(d.traces, careful)
    wide = m.wide().set_index("trace_id")
    truth = d.truth[d.truth["status"] == "complete"].set_index("trace_id")
    assert set(wide.index) == set(truth.index)  # in-progress runs were dropped
    wide = wide.loc[truth.index]
    for meas in ("x_safe", "g_retrieval", "g_fidelity", "g_adherence"):
        np.testing.assert_array_equal(wide[meas].to_numpy(float), truth[meas].to_numpy(float), err_msg=meas)
        got = wide[f"{meas}_cause"].astype(object).where(wide[f"{meas}_cause"].notna(), None)
        assert list(got) == list(truth[f"{meas}_cause"]), meas
    # the careful judge alone recovers the terminal-screen truth on nearly every run
    both = truth["x_task"].notna() & wide["x_task"].notna()
    assert (wide.loc[both, "x_task"] == truth.loc[both, "x_task"]).mean() > 0.93
    # and overall x_ctx per agent keeps the planted ordering
    ctx = wide.groupby(truth["agent"])["x_ctx"].mean()
    assert ctx["agent-v1"] < ctx["agent-v3"]


# --------------------------------------------------------------------------- CLI


def test_cli_demo_writes_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evaltk.cli._main import main

    out = tmp_path / "demo"
    assert main(["demo", str(out), "--n-traces", "20", "--seed", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["traces"] == 20
    assert D.load_demo(out).traces == D.make_demo(n_traces=20, rng=2).traces
    assert main(["demo", str(out), "--n-traces", "3"]) == 64
    assert main(["demo"]) == 64


# --------------------------------------------------------------------------- JudgeBench


def _jb_write(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows, columns=list(D.JUDGEBENCH_COLUMNS)).to_csv(path, index=False)
    return path


def _jb_row(**kw: object) -> dict:
    base = {"pair_id": "p1", "source": "mmlu-pro-math", "response_model": "gpt-4o", "label": "A>B",
            "judge_name": "arena_hard", "judge_model": "m", "trial": 0, "decision": "A>B",
            "score_a": None, "score_b": None}
    base.update(kw)
    return base


@pytest.mark.realdata
def test_judgebench_real_file(shared_data: Path) -> None:
    """../shared/data/README.md: 4,740 rows, seven judges, claude-3-haiku on 270 pairs, the
    others on the same 350 pairs, two trials each."""
    f = D.load_judgebench(shared_data / "judgebench")
    assert len(f) == 4740
    assert f["judge_model"].nunique() == 7
    pairs = f.groupby("judge_model")["pair_id"].nunique()
    assert pairs["claude-3-haiku-20240307"] == 270
    assert (pairs.drop("claude-3-haiku-20240307") == 350).all()
    assert set(f["trial"]) == {0, 1}
    # reward models: the decision is the larger score, in the frame of the trial
    rm = f[f["score_a"].notna()]
    derived = np.where(rm["score_a"] > rm["score_b"], "A>B", np.where(rm["score_a"] < rm["score_b"], "B>A", "A=B"))
    assert (derived == rm["decision"].to_numpy(object)).mean() > 0.99
    # trial 1 swapped the responses: flipped back, a reward model mostly agrees with itself
    wide = rm.pivot_table(index=["judge_model", "pair_id"], columns="trial", values="decision_original",
                          aggfunc="first")
    assert (wide[0] == wide[1]).mean() > 0.95
    out = D.judgebench_pair_outcomes(f)
    assert len(out) == 6 * 350 + 270
    assert set(out["score"]) <= {-2, -1, 0, 1, 2}
    acc = out.groupby("judge_model")["correct"].mean()
    assert acc.between(0.25, 0.8).all()  # hard benchmark: no judge near perfect


def test_judgebench_fold_rule(tmp_path: Path) -> None:
    """JudgeBench's published scoring (shared data README): +1 per trial matching the label,
    -1 per trial matching the opposite (trial 1 flipped back first); correct when positive."""
    rows = [
        _jb_row(pair_id="a", trial=0, decision="A>B"), _jb_row(pair_id="a", trial=1, decision="B>A"),  # +2
        _jb_row(pair_id="b", trial=0, decision="A>B"), _jb_row(pair_id="b", trial=1, decision="A>B"),  # 0
        _jb_row(pair_id="c", trial=0, decision="A=B"), _jb_row(pair_id="c", trial=1, decision="B>A"),  # +1
        _jb_row(pair_id="d", trial=0, decision=None), _jb_row(pair_id="d", trial=1, decision="A>B"),  # -1
    ]
    f = D.load_judgebench(_jb_write(tmp_path / "j.csv", rows))
    assert f.loc[f["pair_id"] == "a", "decision_original"].tolist() == ["A>B", "A>B"]
    assert f.loc[f["pair_id"] == "d", "decision"].iloc[0] is None
    out = D.judgebench_pair_outcomes(f).set_index("pair_id")
    assert out["score"].to_dict() == {"a": 2, "b": 0, "c": 1, "d": -1}
    assert out["correct"].to_dict() == {"a": True, "b": False, "c": True, "d": False}
    with pytest.raises(ValueError, match="decision_original"):
        D.judgebench_pair_outcomes(f.drop(columns=["decision_original"]))


@pytest.mark.parametrize(
    ("row", "field", "exc"),
    [
        ({"label": "A<B"}, "label", SchemaViolation),
        ({"decision": "maybe"}, "decision", SchemaViolation),
        ({"trial": 2}, "trial", SchemaViolation),
        ({"score_a": "high"}, "score_a", SchemaViolation),
        ({"pair_id": None}, "pair_id", SchemaViolation),
    ],
)
def test_judgebench_bad_cells(tmp_path: Path, row: dict, field: str, exc: type) -> None:
    p = _jb_write(tmp_path / "j.csv", [_jb_row(pair_id="x"), _jb_row(**{"pair_id": "y", **row})])
    with pytest.raises(exc) as e:
        D.load_judgebench(p)
    assert e.value.field == field and e.value.record == 3 and e.value.file == str(p)


def test_judgebench_bad_files(tmp_path: Path) -> None:
    with pytest.raises(UnreadableInput, match="no such file"):
        D.load_judgebench(tmp_path / "missing.csv")
    with pytest.raises(UnreadableInput, match="no such file"):
        D.load_judgebench(tmp_path)  # a folder without judgments.csv
    p = tmp_path / "j.csv"
    pd.DataFrame([_jb_row()]).drop(columns=["judge_model"]).to_csv(p, index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_judgebench(p)
    assert e.value.field == "judge_model"
    _jb_write(p, [_jb_row(), _jb_row()])
    with pytest.raises(SchemaViolation, match="twice") as e:
        D.load_judgebench(p)
    assert e.value.record == 3
    p.write_bytes(b"pair_id,label\n\xff,A>B\n")
    with pytest.raises(UnreadableInput, match="UTF-8"):
        D.load_judgebench(p)
    p.write_text("")
    with pytest.raises(UnreadableInput, match="CSV"):
        D.load_judgebench(p)


# --------------------------------------------------------------------------- AltTest

#: ../shared/data/README.md, the alttest table: humans and items per dataset.
ALTTEST_TABLE = {
    "10k_prompts": (13, 1698), "cebab_aspects": (10, 1008), "cebab_stars": (10, 711),
    "framing": (4, 2552), "kilogram": (50, 993), "lesion": (6, 500), "lgbteen": (4, 880),
    "mtbench": (3, 120), "summeval": (3, 6400), "wax": (8, 246),
}


@pytest.mark.realdata
@pytest.mark.parametrize("dataset", sorted(ALTTEST_TABLE))
def test_alttest_real_datasets(shared_data: Path, dataset: str) -> None:
    f = D.load_alttest(shared_data / "alttest", dataset)
    humans, items = ALTTEST_TABLE[dataset]
    assert list(f.columns) == ["dataset", "item_id", "rater", "rating", "rater_kind"]
    assert f.loc[f["rater_kind"] == "human", "rater"].nunique() == humans
    assert f["item_id"].nunique() == items
    assert 4 <= f.loc[f["rater_kind"] == "llm", "rater"].nunique() <= 6
    assert not f.duplicated(["item_id", "rater"]).any()
    assert f["rating"].notna().all()
    # the long table holds exactly the ratings in the two files
    raw = {k: json.loads((shared_data / "alttest" / dataset / f"{k}_annotations.json").read_text())
           for k in ("human", "llm")}
    assert len(f) == sum(len(v) for d in raw.values() for v in d.values())
    if dataset in ("summeval", "lesion", "10k_prompts", "cebab_stars"):
        assert f["rating"].dtype == np.int64


def _alt(tmp_path: Path, human: object, llm: object, name: str = "toy") -> Path:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "human_annotations.json").write_text(json.dumps(human))
    (d / "llm_annotations.json").write_text(json.dumps(llm))
    return tmp_path


def test_alttest_toy_long_table(tmp_path: Path) -> None:
    root = _alt(tmp_path, {"h1": {"i1": 3, "i2": 4}, "h2": {"i1": 2}}, {"gpt": {"i1": 3, "i2": 5}})
    f = D.load_alttest(root, "toy")
    assert f[["item_id", "rater", "rating", "rater_kind"]].values.tolist() == [
        ["i1", "h1", 3, "human"], ["i2", "h1", 4, "human"], ["i1", "h2", 2, "human"],
        ["i1", "gpt", 3, "llm"], ["i2", "gpt", 5, "llm"]]
    assert f["rating"].dtype == np.int64
    root = _alt(tmp_path, {"h1": {"i1": "yes"}}, {"gpt": {"i1": "no"}}, "text")
    assert D.load_alttest(root, "text")["rating"].tolist() == ["yes", "no"]
    # the one reader: the long table is exactly the two files load_alt_test_annotations reads
    files = {k: D.load_alt_test_annotations(root / "toy" / f"{k}_annotations.json") for k in ("human", "llm")}
    assert [tuple(r) for r in f[["rater_kind", "rater", "item_id", "rating"]].values.tolist()] == [
        (k, r, i, v) for k, d in (("human", files["human"]), ("llm", files["llm"]))
        for r, per in d.items() for i, v in per.items()]
    # the generic long-table profile: the calibration functions read it with their defaults
    from evaltk.judges import human_ceiling
    from evaltk.values import RATING_TABLE_COLUMNS

    assert set(RATING_TABLE_COLUMNS) <= set(f.columns)
    assert human_ceiling(f[f["rater_kind"] == "human"], level="nominal", rng=0, n_resamples=50).n_pairable == 1


@pytest.mark.parametrize(
    ("human", "llm", "record", "field"),
    [
        ([1, 2], {}, None, None),
        ({"h1": [1]}, {}, "h1", "h1"),
        ({"h1": {"i1": None}}, {}, "h1/i1", "rating"),
        ({"h1": {"i1": True}}, {}, "h1/i1", "rating"),
        ({"h1": {"i1": {"x": 1}}}, {}, "h1/i1", "rating"),
        ({"h1": {"i1": 1}}, {"h1": {"i1": 2}}, "h1", "rater"),
        ({"h1": {"i1": 1, "i2": "two"}}, {}, "h1/i2", "rating"),
    ],
)
def test_alttest_schema_violations(tmp_path: Path, human: object, llm: object, record: object,
                                   field: object) -> None:
    root = _alt(tmp_path, human, llm)
    with pytest.raises(SchemaViolation) as e:
        D.load_alttest(root, "toy")
    assert e.value.record == record and e.value.field == field
    assert e.value.file is not None and e.value.file.endswith(".json")


def test_alttest_unreadable(tmp_path: Path) -> None:
    root = _alt(tmp_path, {"h1": {"i1": 1}}, {"gpt": {"i1": 1}})
    with pytest.raises(UnreadableInput, match="available: toy"):
        D.load_alttest(root, "summeval")
    (root / "toy" / "llm_annotations.json").write_text('{"gpt": {"i1": 1,,}}')
    with pytest.raises(UnreadableInput, match="not JSON") as e:
        D.load_alttest(root, "toy")
    assert e.value.record == 1
    (root / "toy" / "llm_annotations.json").unlink()
    with pytest.raises(UnreadableInput, match="no such file"):
        D.load_alttest(root, "toy")
    for bad in ("../toy", "", "."):
        with pytest.raises(ValueError, match="dataset"):
            D.load_alttest(root, bad)
    assert issubclass(UnreadableInput, InputError)


def test_direction_and_canaries_recover_the_planted_judges(big: D.DemoData) -> None:
    """The judge pipeline finds what was planted: against the human anchor the optimist
    overstates x_task and the careful judge shows no lean; canaries catch the optimist
    and never the careful judge or the abstainer."""
    direction = pytest.importorskip("evaltk.stats._direction")
    selection = pytest.importorskip("evaltk.judges._selection")
    human = big.labels[big.labels["measure"] == "x_task"].drop_duplicates("trace_id")[["trace_id", "answer"]]
    lean = {}
    for judge in ("judge-optimist", "judge-careful"):
        a = big.answers[(big.answers["measure"] == "x_task") & (big.answers["rater"] == judge)]
        m = a[["trace_id", "answer"]].merge(human, on="trace_id", suffixes=("_j", "_h"))
        r = direction.signed_bias(m["answer_j"].tolist(), m["answer_h"].tolist(), positive="yes",
                                  negative="no", abstain=["cannot_tell"])
        lo, hi = r.confidence_interval
        lean[judge] = direction.lean_from_interval(lo, hi)
    assert lean == {"judge-optimist": "overstates", "judge-careful": "no detectable lean"}
    hits = selection.canary_hits(big.answers, big.canaries)
    assert "judge-optimist" in set(hits["judge"])
    assert not {"judge-careful", "judge-abstainer"} & set(hits["judge"])


def test_ingest_ledger_drops_exactly_what_was_planted(small: D.DemoData) -> None:
    """Ingest drops the in-progress runs and the answers whose trace line was lost, and
    keeps every other record of the demo."""
    traces = pytest.importorskip("evaltk.ingest")
    ing = traces.ingest_traces(small.traces, small.answers, small.labels)
    led = ing.ledger
    dropped = led[led["status"] != "kept"]
    runs = dropped[dropped["kind"] == "run"]
    planted = set(small.truth.loc[small.truth["status"] == "in_progress", "trace_id"])
    assert set(runs["trace_id"]) == planted and len(runs) == len(planted)
    others = dropped[dropped["kind"] != "run"]
    assert set(others["trace_id"]) == set(small.manifest["orphan_trace_ids"])
    n_orphan_rows = small.answers["trace_id"].isin(small.manifest["orphan_trace_ids"]).sum()
    assert len(others) == n_orphan_rows
    assert len(led) == len(small.traces) + len(small.answers) + len(small.labels)


@pytest.mark.parametrize(
    ("file", "row", "column", "value", "field"),
    [
        ("answers.csv", 0, "answer", "maybe", "answer"),
        ("answers.csv", 0, "measure", "x_fun", "measure"),
        ("labels.csv", 0, "step", "", "step"),
        ("truth.csv", 0, "x_task_cause", "unknown", "x_task_cause"),
        ("truth.csv", 0, "x_eff", "1.5", "x_eff"),
        ("truth.csv", 0, "x_eff_cause", "abstained", "x_eff"),
        ("step_truth.csv", 0, "gradable", "maybe", "gradable"),
    ],
)
def test_load_demo_checks_cells(tmp_path: Path, written: Path, file: str, row: int, column: str,
                                value: str, field: str) -> None:
    tmp_path = _copy(written, tmp_path)
    f = pd.read_csv(tmp_path / file, dtype=str, keep_default_na=False)
    if file == "labels.csv":
        row = int(np.flatnonzero(f["measure"] == "x_ctx")[0])
    f.loc[row, column] = value
    f.to_csv(tmp_path / file, index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_demo(tmp_path)
    assert e.value.file.endswith(file) and e.value.field == field and e.value.record == row + 2


def test_harm_proxy_is_blind_to_confirmation(big: D.DemoData) -> None:
    """Seed 002, "Safety Confirmation": the deployed proxy asks whether harm occurred, so an
    unconfirmed action that caused no harm scores safe, a confirmed harmful one unsafe, and
    a run with no consequential action scores 1 (yes) instead of not applicable."""
    t = big.truth[big.truth["status"] == "complete"].set_index("trace_id")
    p = big.proxies.set_index("trace_id")
    assert set(p.index) == set(t.index) | set(big.manifest["orphan_trace_ids"])
    p = p.loc[t.index]
    np.testing.assert_array_equal(p["answer"] == "no", t["harm"])
    assert (p.loc[t["x_safe_cause"] == "not_applicable", "answer"] == "yes").all()
    unconfirmed = t["x_safe"] == 0.0
    assert (p.loc[unconfirmed, "answer"] == "yes").mean() > 0.9  # overstates safety
    assert (p.loc[t["x_safe"] == 1.0, "answer"] == "no").any()  # and errs the other way too
    # near-chance agreement with the construct on runs where it is defined
    both = t["x_safe"].notna()
    proxy_safe = (p.loc[both, "answer"] == "yes").to_numpy()
    kappa = _cohen_kappa(proxy_safe, (t.loc[both, "x_safe"] == 1.0).to_numpy())
    assert -0.1 < kappa < 0.2


def _cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


def test_human_x_safe_labels_follow_the_rule(big: D.DemoData) -> None:
    t = big.truth.set_index("trace_id")
    lab = big.labels[big.labels["measure"] == "x_safe"]
    assert set(lab["trace_id"]) == set(big.labels["trace_id"])
    truth_word = np.select([t["x_safe"] == 1.0, t["x_safe"] == 0.0, t["x_safe_cause"] == "not_applicable"],
                           ["yes", "no", "not_applicable"], "cannot_tell")
    want = pd.Series(truth_word, index=t.index).loc[lab["trace_id"]].to_numpy()
    agree = (lab["answer"].to_numpy() == want).mean()
    assert 0.9 < agree < 0.99


def test_only_consequential_steps_carry_consequential_actions(big: D.DemoData) -> None:
    """A repeated (wasted) step never copies a confirmation or a consequential action without
    its flag: every purchase/send/delete/book/send_invite step is marked consequential and
    every ask_user step needs_confirmation."""
    cons_actions = {"purchase", "send", "delete", "book", "send_invite"}
    for rec in big.traces:
        for s in rec["steps"]:
            assert s["consequential"] == (s["action"] in cons_actions), rec["trace_id"]
            assert s["needs_confirmation"] == (s["action"] == "ask_user"), rec["trace_id"]


# --------------------------------------------------------------------------- AgentRewardBench


def test_load_agentrewardbench_errors(tmp_path):
    with pytest.raises(UnreadableInput, match="no such file"):
        D.load_agentrewardbench(tmp_path / "none.csv")
    cols = ["annotator_name", "benchmark", "task_id", "model_name", "exp_name", "trajectory_success",
            "trajectory_side_effect", "trajectory_optimality", "trajectory_looping"]
    good = ["A", "webarena", "webarena.1", "m", "e", "Successful", "No", "2. Suboptimal", "No"]
    p = tmp_path / "a.csv"
    pd.DataFrame([good], columns=cols).drop(columns="trajectory_looping").to_csv(p, index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_agentrewardbench(p)
    assert e.value.field == "trajectory_looping"
    bad = list(good)
    bad[5] = "Maybe"
    pd.DataFrame([good, bad], columns=cols).to_csv(p, index=False)
    with pytest.raises(SchemaViolation) as e:
        D.load_agentrewardbench(p)
    assert e.value.record == 3 and e.value.field == "trajectory_success" and "'Maybe'" in str(e.value)
    pd.DataFrame([good, good], columns=cols).to_csv(p, index=False)
    with pytest.raises(SchemaViolation, match="twice"):
        D.load_agentrewardbench(p)


def test_load_agentrewardbench_long_table_has_one_home(tmp_path):
    import evaltk
    from evaltk import judges

    assert evaltk.load_agentrewardbench is D.load_agentrewardbench
    assert not hasattr(judges, "load_agentrewardbench")  # judges reads through evaltk.data
    p = tmp_path / "annotations.csv"
    p.write_text("annotator_name,benchmark,task_id,model_name,exp_name,trajectory_success,"
                 "trajectory_side_effect,trajectory_optimality,trajectory_looping\n"
                 " H,webarena,webarena.7,gpt,e,Unsure,No,4. Completely Optimal,Yes\n", encoding="utf-8")
    f = D.load_agentrewardbench(p)
    assert list(f.columns) == ["item_id", "benchmark", "task_id", "model_name", "rater", "question", "rating", "line"]
    assert list(f["question"]) == list(D.AGENTREWARDBENCH_QUESTIONS)
    assert set(f["rater"]) == {"H"} and set(f["item_id"]) == {"webarena/webarena.7/gpt"} and set(f["line"]) == {2}
    assert list(f["rating"]) == ["Unsure", "No", "4. Completely Optimal", "Yes"]


def test_the_demo_judges_are_pinned_instruments() -> None:
    """GENERATOR_VERSION 1.1: each synthetic judge carries its instrument (derived, not drawn:
    one per judge and measure), so scoring pins it and the checkpoint gate can promote."""
    from evaltk.judges import gate
    from evaltk.scoring import score_traces
    from evaltk.values import INSTRUMENT_COLUMNS

    d = D.make_demo(n_traces=1200, rng=0)
    inst = d.answers[["rater", "measure", *INSTRUMENT_COLUMNS]].drop_duplicates()
    assert len(inst) == len(d.answers[["rater", "measure"]].drop_duplicates())  # one instrument each
    assert inst[list(INSTRUMENT_COLUMNS)].notna().all().all()
    assert inst["rubric_digest"].str.fullmatch(r"sha256:[0-9a-f]{64}").all()
    assert tuple(c for c in d.answers.columns if c not in INSTRUMENT_COLUMNS) == D.ANSWER_COLUMNS
    agent = {t["trace_id"]: t.get("agent") for t in d.traces}
    sides = []
    for a in ("agent-v1", "agent-v2"):
        ids = {k for k, v in agent.items() if v == a}
        sides.append(score_traces([t for t in d.traces if t["trace_id"] in ids],
                                  d.answers[d.answers["trace_id"].isin(ids)]))
    assert (sides[0].manifest.instruments()["instrument_status"] != "unpinned").all()
    res = gate(*sides, n_resamples=300)
    assert res.dimensions["instrument_pinned"].all()
    assert (res.dimensions["decision"] == "promote").any(), res.dimensions[["measure", "decision", "reason"]]
