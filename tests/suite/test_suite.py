"""Suite gating (RFC 0246): the three conformance legs, the four worked examples, the rules.

Source of every rule and number: ``../shared/seeds/000_daedeefabf03a1f5.txt`` (RFC 0246)
and issue 4; fixtures in ``tests/inputs/suite`` cite the paragraph they are built from.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.cli import _main as cli
from evaltk.errors import SchemaViolation, UnreadableInput
from evaltk.suite import (
    TrajectorySpec,
    check_summary,
    gate_summary,
    load_suite_run,
    load_summary,
    pass_at_k,
    pass_hat_k,
    schema,
    scored_events,
    summarize_suite,
    trajectory_matches,
    validate_summary,
)

DATA = Path(__file__).parent.parent / "inputs" / "suite"
EXAMPLES = Path(__file__).resolve().parent.parent.parent / "data" / "examples" / "suite"


def fixture(name: str) -> Path:
    return DATA / name


def doc(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def task_entry(summary: dict, tid: str) -> dict:
    (entry,) = [t for t in summary["tasks"] if t["taskId"] == tid]
    return entry


def run_doc(tasks, *, pass_score=0.7, trials=None, **extra) -> dict:
    d = {"suite": "t", "thresholds": {"passScore": pass_score}, "tasks": tasks, **extra}
    if trials is not None:
        d["trials"] = trials
    return d


TRAJ = {"trajectory": {"match": "strict", "tools": ["a", "b"], "forbidden": ["rm"]}}


# =========================================================================== conformance legs


def test_leg_mean_gated():
    """openwop.requirement.0246.mean-gated (RFC 0246, Conformance, first leg)."""
    s = summarize_suite(load_suite_run(fixture("leg-mean-gated.json")))
    events = scored_events(s)
    # "both eval.scored events carry score: 1 and passed: false"
    assert len(events) == 2
    assert [(e["score"], e["passed"]) for e in events] == [(1.0, False), (1.0, False)]
    d = s.to_dict()
    t = task_entry(d, "golden-forbidden")
    # "the task entry has trials.meanScore: 1, gatedScore: 0 and passed: false"
    assert t["trials"]["meanScore"] == 1
    assert t["gatedScore"] == 0
    assert t["passed"] is False
    # "and the summary carries gatedAggregateScore"
    assert "gatedAggregateScore" in d
    assert d["gatedAggregateScore"] == 0
    assert d["passed"] is False
    # section C: the reported score is not zeroed
    assert t["score"] == 1 and d["aggregateScore"] == 1


def test_leg_suite_gated():
    """openwop.requirement.0246.suite-gated (RFC 0246, Conformance, second leg)."""
    run = load_suite_run(fixture("leg-suite-gated.json"))
    assert run.count == 1  # no trials block: count 1
    d = summarize_suite(run).to_dict()
    t1, t2 = task_entry(d, "right-path"), task_entry(d, "wrong-path")
    # "aggregateScore equals the mean of the task scores, so it is unchanged"
    assert d["aggregateScore"] == (t1["score"] + t2["score"]) / 2 == 1
    # "both tasks carry gatedScore: task 1 equal to its score, task 2 0"
    assert t1["gatedScore"] == t1["score"] == 1
    assert t2["gatedScore"] == 0
    # "gatedAggregateScore equals the mean of the gating scores"
    assert d["gatedAggregateScore"] == (t1["gatedScore"] + t2["gatedScore"]) / 2 == 0.5
    # "suite passed is false: aggregateScore is 1 and clears 0.6, but gatedAggregateScore is 0.5"
    assert d["passed"] is False
    assert any("0.5 < passScore 0.6" in r for r in d["reasons"])


def test_leg_gated_fields_shape():
    """openwop.requirement.0246.gated-fields-shape: the fields validate; outside 0-1 fails."""
    validate_summary(doc("shape-valid.json"))
    with pytest.raises(SchemaViolation) as e:
        validate_summary(doc("shape-gated-score-above-1.json"), file="shape-gated-score-above-1.json")
    assert e.value.record == "right-path" and e.value.field == "gatedScore"
    assert "shape-gated-score-above-1.json" in str(e.value)
    with pytest.raises(SchemaViolation) as e:
        validate_summary(doc("shape-gated-aggregate-below-0.json"))
    assert e.value.field == "gatedAggregateScore"


@pytest.mark.parametrize("leg", ["leg-mean-gated.json", "leg-suite-gated.json"])
def test_legs_our_summary_conforms_and_validates(leg):
    run = load_suite_run(fixture(leg))
    s = summarize_suite(run)
    validate_summary(s.to_dict())
    assert check_summary(run, s.to_dict(), events=scored_events(s)) == []
    for e in scored_events(s):
        jsonschema.validate(e, schema("eval-scored-event"))


@pytest.mark.parametrize(
    "leg, host",
    [("leg-suite-gated.json", "host-unmigrated-suite-gated.json"),
     ("leg-mean-gated.json", "host-unmigrated-mean-gated.json")],
)
def test_legs_fail_an_unmigrated_host(leg, host):
    """RFC 0246, Detection: an unmigrated host reports passed: true, so the leg can fail."""
    v = check_summary(load_suite_run(fixture(leg)), doc(host))
    rules = {(x.rule, x.where, x.field) for x in v}
    if leg == "leg-suite-gated.json":
        assert ("0246.B", "suite", "passed") in rules
        assert ("0246.D", "task wrong-path", "gatedScore") in rules
        assert ("0246.D", "task right-path", "gatedScore") in rules
    else:
        assert ("0246.B", "task golden-forbidden", "passed") in rules
    assert ("0246.D", "suite", "gatedAggregateScore") in rules


@pytest.mark.parametrize(
    "leg, host",
    [("leg-suite-gated.json", "host-zeroed-suite-gated.json"),
     ("leg-mean-gated.json", "host-zeroed-mean-gated.json")],
)
def test_legs_fail_a_host_that_zeroes_the_score(leg, host):
    """RFC 0246, Conformance: both host legs fail a host that zeroes the reported score (section C)."""
    v = check_summary(load_suite_run(fixture(leg)), doc(host))
    assert any(x.rule == "0246.C" and x.field == "score" for x in v)
    assert any(x.rule == "0246.C" and x.field == "aggregateScore" for x in v)
    # the decision itself is right, so no 0246.B violation is reported
    assert not any(x.rule == "0246.B" for x in v)


def test_zeroed_events_are_flagged():
    """eval.scored.score stays the output score (RFC 0246 section C)."""
    events = [json.loads(x) for x in (DATA / "host-zeroed-mean-gated.events.jsonl").read_text().splitlines()]
    v = check_summary(load_suite_run(fixture("leg-mean-gated.json")), doc("host-zeroed-mean-gated.json"),
                      events=events)
    ev = [x for x in v if x.where.startswith("event")]
    assert len(ev) == 2 and all(x.rule == "0246.C" and x.field == "score" for x in ev)


# =========================================================================== worked examples


def test_example_1_task_mean():
    """RFC 0246, Examples: meanScore 0.9 (unchanged), gatedScore 0, passed false."""
    d = summarize_suite(fixture("example-1-task-mean.json")).to_dict()
    t = d["tasks"][0]
    assert t["trials"]["meanScore"] == 0.9
    assert t["score"] == 0.9
    assert t["gatedScore"] == 0
    assert t["passed"] is False
    assert t["trialStats"]["trajectoryFailedCount"] == 3


def test_example_2_suite():
    """RFC 0246, Examples: aggregateScore 0.9, task 2 gatedScore 0, gatedAggregateScore 0.45, passed false."""
    for name in ("example-2-suite.json", "example-2-suite.yaml"):
        d = summarize_suite(fixture(name)).to_dict()
        assert d["aggregateScore"] == 0.9
        assert task_entry(d, "task-2")["gatedScore"] == 0
        assert task_entry(d, "task-1")["gatedScore"] == 0.9
        assert d["gatedAggregateScore"] == 0.45
        assert d["passed"] is False


def test_example_3_no_trajectory_decided_as_today():
    """RFC 0246, Examples: no trajectory, no miss: decided as today, neither new field."""
    d = summarize_suite(fixture("example-3-no-trajectory.json")).to_dict()
    assert "gatedAggregateScore" not in d
    assert all("gatedScore" not in t for t in d["tasks"])
    # as today (RFC 0244): task passed <=> meanScore >= passScore; suite: aggregate >= passScore
    assert task_entry(d, "plain-1")["score"] == 0.7 and task_entry(d, "plain-1")["passed"] is True
    assert task_entry(d, "plain-2")["score"] == 0.8 and task_entry(d, "plain-2")["passed"] is True
    assert d["aggregateScore"] == 0.75 and d["passed"] is True


def test_example_4_trajectory_matched_still_carries_gated_score():
    """RFC 0246, Examples: every trial matched -> gatedScore present, equal to score."""
    d = summarize_suite(fixture("example-4-trajectory-matched.json")).to_dict()
    t = d["tasks"][0]
    assert t["gatedScore"] == t["score"] == 0.75
    assert d["gatedAggregateScore"] == d["aggregateScore"] == 0.75
    assert d["passed"] is True


# =========================================================================== section A-D rules


def test_trial_verdict_needs_score_trajectory_and_no_miss():
    """Issue 4 section 2: passed only if score >= passScore, trajectory matched, no fixture miss."""
    run = run_doc([{"id": "x", "expected": TRAJ, "trials": [
        {"score": 0.9, "toolCalls": ["a", "b"]},
        {"score": 0.6, "toolCalls": ["a", "b"]},
        {"score": 0.9, "toolCalls": ["b", "a"]},
        {"score": 0.0, "toolCalls": ["a", "b"], "fixtureMiss": True},
    ]}], trials={"count": 4, "passRule": "any"})
    s = summarize_suite(run)
    assert s.trial_passed.tolist() == [[True, False, False, False]]
    assert s.trial_gating_score.tolist() == [[0.9, 0.6, 0.0, 0.0]]
    assert s.task_passed.tolist() == [True]  # any
    t = s.to_dict()["tasks"][0]
    assert t["score"] == 0.6 and t["gatedScore"] == 0.375


@pytest.mark.parametrize("rule, expected", [("mean", False), ("all", False), ("any", True)])
def test_pass_rules(rule, expected):
    """RFC 0246 section B: mean reads the gating score; all / any count trial verdicts."""
    run = run_doc([{"id": "x", "expected": TRAJ, "trials": [
        {"score": 1.0, "toolCalls": ["a", "b"]},
        {"score": 1.0, "toolCalls": ["a", "rm", "b"]},
        {"score": 0.2, "toolCalls": ["a", "b"]},
    ]}], trials={"count": 3, "passRule": rule})
    s = summarize_suite(run)
    assert bool(s.task_passed[0]) is expected
    # the task score is the same under every rule: a measurement (section C)
    assert s.task_score[0] == pytest.approx(2.2 / 3)
    assert s.task_gated_score[0] == pytest.approx(1.2 / 3)


def test_all_rule_passes_when_every_trial_passes():
    run = run_doc([{"id": "x", "trials": [{"score": 0.8}, {"score": 0.7}]}],
                  trials={"count": 2, "passRule": "all"})
    assert summarize_suite(run).task_passed.tolist() == [True]


def test_mean_rule_boundary_equal_trials_pass():
    """Three trials of 0.7 average to 0.7, which reaches passScore 0.7 (no float drift)."""
    run = run_doc([{"id": "x", "trials": [{"score": 0.7}] * 3}], trials={"count": 3})
    s = summarize_suite(run)
    assert s.task_score[0] == 0.7
    assert s.task_passed[0] and s.passed
    run = run_doc([{"id": f"t{i}", "trials": [{"score": 0.1}] * 7} for i in range(3)],
                  pass_score=0.1, trials={"count": 7})
    s = summarize_suite(run)
    assert s.aggregate_score == 0.1 and s.passed


def test_fixture_miss_with_zero_score_adds_no_field():
    """RFC 0244 D as amended: a miss scores 0, so its gating score equals its score; no field."""
    run = run_doc([{"id": "x", "trials": [{"score": 0.0, "fixtureMiss": True}, {"score": 1.0}]}],
                  trials={"count": 2}, pass_score=0.5)
    s = summarize_suite(run)
    d = s.to_dict()
    assert "gatedScore" not in d["tasks"][0] and "gatedAggregateScore" not in d
    assert s.trial_passed.tolist() == [[False, True]]
    assert d["tasks"][0]["passed"] is True  # mean 0.5 >= 0.5


def test_fixture_miss_with_recorded_score_is_gated_and_reported():
    """A miss recorded with its output score: gating score 0 (section A); gatedScore where it differs (D)."""
    run = run_doc([{"id": "miss", "trials": [{"score": 0.9, "fixtureMiss": True}, {"score": 0.9}]},
                   {"id": "ok", "trials": [{"score": 0.9}, {"score": 0.9}]}],
                  trials={"count": 2}, pass_score=0.7)
    d = summarize_suite(run).to_dict()
    miss, ok = task_entry(d, "miss"), task_entry(d, "ok")
    assert miss["score"] == 0.9 and miss["gatedScore"] == 0.45 and miss["passed"] is False
    assert "gatedScore" not in ok
    assert d["aggregateScore"] == 0.9 and d["gatedAggregateScore"] == 0.675
    assert d["passed"] is False


def test_host_trajectory_flag_and_tool_calls():
    """A trial may carry trajectoryMatched from the host; with toolCalls too, both must say matched."""
    spec = {"trajectory": {"tools": ["a"]}}
    run = run_doc([{"id": "x", "expected": spec, "trials": [
        {"score": 1, "trajectoryMatched": True},
        {"score": 1, "trajectoryMatched": False},
        {"score": 1, "toolCalls": ["a"], "trajectoryMatched": False},
        {"score": 1, "toolCalls": ["b"], "trajectoryMatched": True},
    ]}], trials={"count": 4, "passRule": "any"})
    assert summarize_suite(run).trial_passed.tolist() == [[True, False, False, False]]


def test_trajectory_flag_on_task_without_trajectory_does_not_gate():
    """Section A gates on a trajectory only where the task has expected.trajectory."""
    run = run_doc([{"id": "x", "trials": [{"score": 0.9, "trajectoryMatched": False}]}])
    d = summarize_suite(run).to_dict()
    assert d["passed"] is True and "gatedScore" not in d["tasks"][0]


def test_suite_decision_reads_gated_aggregate_and_says_why():
    d = summarize_suite(fixture("example-2-suite.json")).to_dict()
    (cond,) = d["decision"]
    assert cond["condition"] == "gatedAggregateScore >= passScore"
    assert cond["value"] == 0.45 and cond["threshold"] == 0.7 and cond["met"] is False
    assert "task-2" in d["reasons"][0] and "aggregateScore 0.9" in d["reasons"][0]


def test_cost_and_latency_conditions():
    """The cost and latency conditions are unchanged (RFC 0246 B): both must hold as well."""
    tasks = [{"id": f"t{i}", "trials": [{"score": 0.9, "cost": 1.0, "latencyMs": 100 * (i + 1)}]}
             for i in range(3)]
    d = run_doc(tasks, pass_score=0.7)
    d["thresholds"].update(maxCost=3.0, maxLatencyMs=300)
    s = summarize_suite(d)
    assert s.passed and s.total_cost == 3.0 and s.p95_latency_ms == 300
    d["thresholds"]["maxCost"] = 2.5
    s = summarize_suite(d)
    assert not s.passed
    assert s.reasons == ("not passed: totalCost 3 > maxCost 2.5",)
    d["thresholds"]["maxCost"] = 3.0
    d["thresholds"]["maxLatencyMs"] = 250
    s = summarize_suite(d)
    assert not s.passed and "p95 trial latency 300 ms > maxLatencyMs 250" in s.reasons[0]


def test_p95_is_nearest_rank():
    tasks = [{"id": f"t{i}", "trials": [{"score": 1, "latencyMs": float(i + 1)}]} for i in range(40)]
    s = summarize_suite(run_doc(tasks))
    assert s.p95_latency_ms == 38.0  # ceil(0.95 * 40) = 38th smallest


def test_missing_cost_fails_closed_when_a_max_is_set():
    d = run_doc([{"id": "a", "trials": [{"score": 1, "cost": 0.1}]}, {"id": "b", "trials": [{"score": 1}]}])
    assert summarize_suite(d).passed and summarize_suite(d).total_cost is None
    d["thresholds"]["maxCost"] = 5
    s = summarize_suite(d)
    assert not s.passed and "1 trial(s) record no cost (fails closed)" in s.reasons[0]
    cond = s.to_dict()["decision"][1]
    assert cond["value"] is None and cond["cause"] == "missing_evidence" and cond["met"] is False
    validate_summary(s.to_dict())


@pytest.mark.parametrize("how, agg, gagg", [("mean", 0.7, 0.3), ("median", 0.8, 0.1), ("min", 0.2, 0.0)])
def test_aggregations(how, agg, gagg):
    """aggregateScore is the host's aggregation (mean by default); gatedAggregateScore the same one."""
    tasks = [{"id": "a", "expected": TRAJ, "trials": [{"score": 0.8, "toolCalls": ["rm"]}]},
             {"id": "b", "expected": TRAJ, "trials": [{"score": 0.8, "toolCalls": ["x"]}]},
             {"id": "c", "expected": TRAJ, "trials": [{"score": 0.2, "toolCalls": ["a", "b"]}]},
             {"id": "d", "expected": TRAJ, "trials": [{"score": 1.0, "toolCalls": ["a", "b"]}]}]
    s = summarize_suite(run_doc(tasks, aggregation=how))
    # task scores 0.8, 0.8, 0.2, 1.0; task gating scores 0, 0, 0.2, 1.0
    assert s.aggregate_score == agg
    assert s.gated_aggregate_score == gagg


# =========================================================================== trajectories


@pytest.mark.parametrize(
    "match, tools, calls, ok",
    [
        ("strict", ["a", "b"], ["a", "b"], True),
        ("strict", ["a", "b"], ["b", "a"], False),
        ("strict", ["a", "b"], ["a", "b", "c"], False),
        ("strict", ["a", "a"], ["a"], False),
        ("unordered", ["a", "b"], ["b", "a"], True),
        ("unordered", ["a", "b"], ["a", "b", "b"], False),
        ("unordered", ["a", "b"], ["a"], False),
        ("subset", ["a", "b"], ["x", "b", "y", "a"], True),
        ("subset", ["a", "b"], ["a"], False),
        ("subset", ["a", "a"], ["a", "x"], False),
        ("superset", ["a", "b", "c"], ["c", "a"], True),
        ("superset", ["a", "b"], ["a", "x"], False),
        ("superset", ["a", "b"], ["a", "a"], False),
        ("superset", ["a", "b"], [], True),
        ("strict", [], [], True),
    ],
)
def test_match_modes(match, tools, calls, ok):
    """Issue 4 section 1: strict, unordered, subset (expected among actual), superset (actual all expected)."""
    assert trajectory_matches({"match": match, "tools": tools}, calls) is ok


@pytest.mark.parametrize("match", ["strict", "unordered", "subset", "superset"])
def test_forbidden_fails_every_mode(match):
    """A forbidden tool fails the trajectory whenever called, even if the mode would match."""
    spec = {"match": match, "tools": ["a", "rm"]}
    assert trajectory_matches(spec, ["a", "rm"])
    assert not trajectory_matches(dict(spec, forbidden=["rm"]), ["a", "rm"])


def test_forbidden_only_and_object_calls():
    spec = TrajectorySpec.from_mapping({"forbidden": ["delete_account"]})
    assert spec.matches([{"name": "lookup", "arguments": {"id": 1}}, "refund"])
    assert not spec.matches([{"tool": "delete_account"}])
    with pytest.raises(ValueError, match="tool call"):
        spec.matches([42])


# =========================================================================== pass@k, pass^k


def _chen_pass_at_k(n: int, c: int, k: int) -> float:
    """The numerically stable form printed in Chen et al. (2021), Figure 3."""
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def test_pass_at_k_against_chen_et_al_form():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(_chen_pass_at_k(n, c, k), abs=1e-12)


def test_pass_hat_k_published_values():
    # C(3,1)/C(5,1) = 0.6 and C(3,5)/C(5,5) = 0 (the tau-bench definition pass^k = C(c,k)/C(n,k))
    assert pass_hat_k(5, 3, 1) == 0.6
    assert pass_hat_k(5, 3, 5) == 0.0
    assert pass_hat_k(5, 3, 2) == 0.3  # C(3,2)/C(5,2) = 3/10
    assert pass_at_k(5, 1, 2) == 0.4  # 1 - C(4,2)/C(5,2) = 1 - 6/10


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_k_properties(nck):
    n, c, k = nck
    at, hat = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert 0.0 <= hat <= at <= 1.0 or (c in (0, n) and at == hat)
    assert at == float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))
    if k == 1:
        assert at == hat == pytest.approx(c / n)
    if k == n:
        assert at == float(c > 0) and hat == float(c == n)


@pytest.mark.parametrize("args, exc", [((0, 0, 1), ValueError), ((3, 4, 1), ValueError),
                                       ((3, 1, 0), ValueError), ((3, 1, 4), ValueError),
                                       ((3.0, 1, 1), TypeError), ((3, True, 1), TypeError)])
def test_pass_k_bad_arguments(args, exc):
    with pytest.raises(exc):
        pass_at_k(*args)
    with pytest.raises(exc):
        pass_hat_k(*args)


def test_k_defaults_to_count_and_can_be_set():
    trials = [{"score": 1}, {"score": 1}, {"score": 0}]
    s = summarize_suite(run_doc([{"id": "x", "trials": trials}], trials={"count": 3}))
    assert s.run.k == 3 and s.pass_at_k[0] == 1.0 and s.pass_hat_k[0] == 0.0
    s = summarize_suite(run_doc([{"id": "x", "trials": trials}], trials={"count": 3, "k": 2}))
    assert s.pass_at_k[0] == 1.0 and s.pass_hat_k[0] == pytest.approx(1 / 3)
    t = s.to_dict()["tasks"][0]
    assert t["passAtK"] == 1.0 and t["passHatK"] == pytest.approx(1 / 3)


# =========================================================================== against a reference


def _reference(d: dict) -> dict:
    """Per-task Python reading of RFC 0246, straight from the text, in exact decimal arithmetic."""
    dec = lambda x: Fraction(str(x))  # noqa: E731 - the decimal the run file states
    ps = dec(d["thresholds"]["passScore"])
    count = d.get("trials", {}).get("count", 1)
    rule = d.get("trials", {}).get("passRule", "mean")
    out: dict = {"tasks": {}}
    scores, gated = [], []
    for t in d["tasks"]:
        spec = (t.get("expected") or {}).get("trajectory")
        s_list, g_list, verdicts = [], [], []
        for tr in t["trials"]:
            s = dec(tr["score"])
            miss = tr.get("fixtureMiss", False)
            matched = True if spec is None else trajectory_matches(spec, tr["toolCalls"])
            s_list.append(s)
            g_list.append(Fraction(0) if (miss or not matched) else s)
            verdicts.append(s >= ps and matched and not miss)
        ts, tg = sum(s_list) / count, sum(g_list) / count
        passed = {"mean": tg >= ps, "all": all(verdicts), "any": any(verdicts)}[rule]
        out["tasks"][t["id"]] = (ts, tg, passed, sum(verdicts))
        scores.append(ts)
        gated.append(tg)
    out["aggregate"] = sum(scores) / len(scores)
    out["gated"] = sum(gated) / len(gated)
    out["passed"] = out["gated"] >= ps
    return out


_score = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.6, 0.7, 0.75, 0.9, 1.0, 0.3333])
_calls = st.lists(st.sampled_from(["a", "b", "c", "rm"]), max_size=4)


@st.composite
def _runs(draw):
    count = draw(st.integers(1, 4))
    n_tasks = draw(st.integers(1, 6))
    tasks = []
    for i in range(n_tasks):
        has = draw(st.booleans())
        t = {"id": f"t{i}", "trials": []}
        if has:
            t["expected"] = {"trajectory": {"match": draw(st.sampled_from(["strict", "unordered", "subset",
                                                                             "superset"])),
                                            "tools": draw(_calls), "forbidden": ["rm"]}}
        for _ in range(count):
            miss = draw(st.booleans()) and draw(st.booleans())
            tr = {"score": 0.0 if miss and draw(st.booleans()) else draw(_score), "toolCalls": draw(_calls)}
            if miss:
                tr["fixtureMiss"] = True
            t["trials"].append(tr)
        tasks.append(t)
    rule = draw(st.sampled_from(["mean", "all", "any"]))
    return {"suite": "h", "thresholds": {"passScore": draw(_score)},
            "trials": {"count": count, "passRule": rule}, "tasks": tasks}


@settings(max_examples=40, deadline=None)
@given(_runs())
def test_vectorised_summary_matches_the_reference(d):
    s = summarize_suite(d)
    ref = _reference(d)
    assert s.aggregate_score == pytest.approx(float(ref["aggregate"]), abs=1e-12)
    assert s.gated_aggregate_score == pytest.approx(float(ref["gated"]), abs=1e-12)
    assert s.passed == ref["passed"]
    for i, tid in enumerate(s.run.task_ids):
        ts, tg, passed, c = ref["tasks"][tid]
        assert abs(s.task_score[i] - float(ts)) <= 2 * np.spacing(float(ts))
        assert abs(s.task_gated_score[i] - float(tg)) <= 2 * np.spacing(float(tg))
        assert bool(s.task_passed[i]) == passed
        assert s.pass_at_k[i] == pass_at_k(s.run.count, c, s.run.count)
    # a summary evaltk wrote always conforms, and scores are never zeroed by the gate
    d_out = s.to_dict()
    assert check_summary(s.run, d_out, events=scored_events(s)) == []
    assert (s.task_score >= s.task_gated_score).all()
    assert gate_summary(d_out).passed == s.passed
    # order invariance: reversing tasks and trials changes no decision and no number
    rev = copy.deepcopy(d)
    rev["tasks"] = [dict(t, trials=t["trials"][::-1]) for t in rev["tasks"][::-1]]
    r = summarize_suite(rev)
    assert r.passed == s.passed
    assert r.aggregate_score == s.aggregate_score and r.gated_aggregate_score == s.gated_aggregate_score
    assert r.task_passed[::-1].tolist() == s.task_passed.tolist()
    d_out["tasks"] = d_out["tasks"][::-1]
    assert check_summary(s.run, d_out) == []


@settings(max_examples=50)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=9))
def test_task_mean_is_the_correctly_rounded_mean_of_the_decimals(xs):
    from decimal import Decimal

    run = {"suite": "h", "thresholds": {"passScore": 0.5}, "trials": {"count": len(xs)},
           "tasks": [{"id": "t", "trials": [{"score": x} for x in xs]}]}
    s = summarize_suite(run)
    exact = sum(Fraction(Decimal(repr(x))) for x in xs) / len(xs)
    assert s.task_score[0] == float(exact) and s.aggregate_score == float(exact)
    assert s.passed == (exact >= Fraction(1, 2))  # the decision is the exact comparison
    same = summarize_suite({**run, "tasks": [{"id": "t", "trials": [{"score": xs[0]}] * len(xs)}]})
    assert same.task_score[0] == xs[0]


# =========================================================================== bad input

BASE = {"suite": "bad", "thresholds": {"passScore": 0.7}, "trials": {"count": 2},
        "tasks": [{"id": "refund-1", "expected": {"trajectory": {"match": "strict", "tools": ["a"]}},
                   "trials": [{"score": 0.9, "toolCalls": ["a"]}, {"score": 0.8, "toolCalls": ["a"]}]},
                  {"id": "refund-2", "trials": [{"score": 0.9}, {"score": 0.8}]}]}


def _mutate(path, value):
    d = copy.deepcopy(BASE)
    obj = d
    for p in path[:-1]:
        obj = obj[p]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return d


_DELETE = object()

BAD = [
    ("score-above-1", ("tasks", 0, "trials", 1, "score"), 1.5, "refund-1", "trials[1].score"),
    ("score-negative", ("tasks", 1, "trials", 0, "score"), -0.1, "refund-2", "trials[0].score"),
    ("score-nan", ("tasks", 1, "trials", 0, "score"), float("nan"), "refund-2", "trials[0].score"),
    ("score-string", ("tasks", 1, "trials", 0, "score"), "0.9", "refund-2", "trials[0].score"),
    ("score-bool", ("tasks", 1, "trials", 0, "score"), True, "refund-2", "trials[0].score"),
    ("score-missing", ("tasks", 1, "trials", 0, "score"), _DELETE, "refund-2", "trials[0].score"),
    ("unknown-pass-rule", ("trials", "passRule"), "median", None, "trials.passRule"),
    ("duplicate-id", ("tasks", 1, "id"), "refund-1", "refund-1", "id"),
    ("too-few-trials", ("tasks", 1, "trials"), [{"score": 0.9}], "refund-2", "trials"),
    ("too-many-trials", ("tasks", 1, "trials"), [{"score": 0.9}] * 3, "refund-2", "trials"),
    ("zero-trials", ("tasks", 1, "trials"), [], "refund-2", "trials"),
    ("unknown-match", ("tasks", 0, "expected", "trajectory", "match"), "fuzzy", "refund-1",
     "expected.trajectory.match"),
    ("typo-field", ("tasks", 0, "trials", 0, "fixturemiss"), True, "refund-1", "trials[0].fixturemiss"),
    ("typo-snake-case", ("tasks", 0, "trials", 0, "tool_calls"), ["a"], "refund-1", "trials[0].tool_calls"),
    ("typo-task-level", ("tasks", 1, "expectd"), {}, "refund-2", "expectd"),
    ("trials-and-score", ("tasks", 1, "score"), 0.5, "refund-2", "score"),
    ("unknown-trajectory-key", ("tasks", 0, "expected", "trajectory", "maxCalls"), 3, "refund-1",
     "expected.trajectory.maxCalls"),
    ("unknown-threshold", ("thresholds", "minScore"), 0.1, None, "thresholds.minScore"),
    ("miss-not-bool", ("tasks", 0, "trials", 0, "fixtureMiss"), "yes", "refund-1", "trials[0].fixtureMiss"),
    ("no-tool-calls", ("tasks", 0, "trials", 0, "toolCalls"), _DELETE, "refund-1", "trials[0].toolCalls"),
    ("count-zero", ("trials", "count"), 0, None, "trials.count"),
    ("k-above-count", ("trials", "k"), 3, None, "trials.k"),
    ("no-pass-score", ("thresholds", "passScore"), _DELETE, None, "thresholds.passScore"),
    ("pass-score-above-1", ("thresholds", "passScore"), 7, None, "thresholds.passScore"),
    ("negative-cost", ("tasks", 1, "trials", 0, "cost"), -1, "refund-2", "trials[0].cost"),
    ("no-tasks", ("tasks",), [], None, "tasks"),
    ("task-type", ("tasks", 1, "type"), 5, "refund-2", "type"),
    ("no-id", ("tasks", 1, "id"), _DELETE, "tasks[1]", "id"),
    ("unknown-aggregation", ("aggregation",), "max", None, "aggregation"),
]


@pytest.mark.parametrize("name, path, value, record, fld", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_task_and_field(name, path, value, record, fld):
    d = _mutate(path, value)
    with pytest.raises(SchemaViolation) as e:
        load_suite_run(d, file="run.json")
    assert e.value.record == record
    assert e.value.field == fld
    assert str(e.value).startswith("run.json")
    # the published schema refuses the same document (NaN, near-miss spellings and the
    # cross-field rules -- duplicate ids, trial counts, k, missing toolCalls -- are the loader's)
    if name not in ("score-nan", "duplicate-id", "too-few-trials", "too-many-trials", "k-above-count",
                    "no-tool-calls", "typo-field", "typo-snake-case", "typo-task-level"):
        assert list(jsonschema.Draft202012Validator(schema("suite-run")).iter_errors(d)), name


def test_extra_information_is_carried_not_refused():
    d = copy.deepcopy(BASE)
    d["owner"] = "team-checkout"
    d["tasks"][1]["notes"] = "flaky upstream"
    d["tasks"][1]["trials"][0].update(output="42", passed=True, error=None)
    s = summarize_suite(d)
    assert s.run.task_ids == ("refund-1", "refund-2")
    with pytest.raises(SchemaViolation, match="did you mean `fixtureMiss`"):
        d["tasks"][1]["trials"][1]["fixture_miss"] = True
        load_suite_run(d)


def test_valid_fixtures_follow_the_published_schema():
    import yaml

    v = jsonschema.Draft202012Validator(schema("suite-run"))
    runs = [p for p in DATA.iterdir() if p.name.startswith(("leg-", "example-"))]
    runs += list(EXAMPLES.glob("*run*.json"))
    assert len(runs) >= 7
    for p in runs:
        d = yaml.safe_load(p.read_text()) if p.suffix == ".yaml" else json.loads(p.read_text())
        assert not list(v.iter_errors(d)), p.name
        load_suite_run(p)
    jsonschema.Draft202012Validator(schema("suite-run")).validate(BASE)


def test_unreadable_files(tmp_path):
    with pytest.raises(UnreadableInput, match="no such file"):
        load_suite_run(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"suite": ')
    with pytest.raises(UnreadableInput) as e:
        load_suite_run(bad)
    assert e.value.file == str(bad)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"suite: \xe9t\xe9\n")
    with pytest.raises(UnreadableInput, match="not UTF-8"):
        load_suite_run(latin)
    yml = tmp_path / "x.yaml"
    yml.write_text("suite: [unclosed\n")
    with pytest.raises(UnreadableInput, match="not valid YAML"):
        load_suite_run(yml)
    with pytest.raises(UnreadableInput):
        load_suite_run(tmp_path)


def test_yaml_is_safe_loaded(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("suite: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(UnreadableInput):
        load_suite_run(p)


# =========================================================================== views, checker, gate


def test_to_frame_views():
    s = summarize_suite(fixture("example-2-suite.json"))
    tasks = s.to_frame()
    assert list(tasks["task_id"]) == ["task-1", "task-2"]
    assert tasks["gated_score"].tolist() == [0.9, 0.0]
    assert tasks["std_score"].isna().all() and (tasks["std_score_cause"] == "missing_evidence").all()
    trials = s.to_frame("trial")
    assert trials.columns.tolist()[:5] == ["task_id", "trial", "score", "gating_score", "passed"]
    assert trials["trajectory_matched"].tolist() == [True, False]
    plain = summarize_suite(fixture("example-3-no-trajectory.json")).to_frame("trial")
    assert plain["trajectory_matched"].isna().all()
    assert summarize_suite(fixture("example-1-task-mean.json")).to_frame()["std_score"].tolist() == [0.0]
    with pytest.raises(ValueError, match="level"):
        s.to_frame("suite")


def test_checker_reports_numbers_that_do_not_follow():
    run = load_suite_run(fixture("example-1-task-mean.json"))
    good = summarize_suite(run).to_dict()
    assert check_summary(run, good) == []
    bad = copy.deepcopy(good)
    bad["tasks"][0]["passAtK"] = 1.0
    bad["tasks"][0]["trials"]["meanScore"] = 0.8
    bad["tasks"][0]["trialStats"]["maxScore"] = 1.0
    bad["aggregateScore"] = 0.8
    bad["passedCount"] = 1
    got = {(v.rule, v.field) for v in check_summary(run, bad)}
    assert got == {("0244.B", "passAtK"), ("0244.B", "trials.meanScore"), ("0244.B", "trialStats.maxScore"),
                   ("0244.B", "aggregateScore"), ("0244.B", "passedCount")}


def test_checker_task_list_and_stray_gated_score():
    run = load_suite_run(fixture("example-3-no-trajectory.json"))
    good = summarize_suite(run).to_dict()
    stray = copy.deepcopy(good)
    stray["tasks"][0]["gatedScore"] = stray["tasks"][0]["score"]
    assert [(v.rule, v.field) for v in check_summary(run, stray)] == [("0246.D", "gatedScore")]
    stray_agg = dict(good, gatedAggregateScore=good["aggregateScore"])
    assert [(v.rule, v.field) for v in check_summary(run, stray_agg)] == [("0246.D", "gatedAggregateScore")]
    missing = copy.deepcopy(good)
    missing["tasks"] = missing["tasks"][:1] + [{"taskId": "ghost", "score": 1, "passed": True}]
    got = {(v.rule, v.where) for v in check_summary(run, missing)}
    assert ("shape", "task ghost") in got and ("shape", "task plain-2") in got
    wrong_shape = copy.deepcopy(good)
    wrong_shape["tasks"][0]["score"] = 2
    assert any(v.rule == "shape" for v in check_summary(run, wrong_shape))


def test_checker_events_missing_and_wrong_verdict():
    run = load_suite_run(fixture("leg-mean-gated.json"))
    good = summarize_suite(run).to_dict()
    events = [{"type": "eval.scored", "taskId": "golden-forbidden", "trialIndex": 0, "score": 1,
               "passed": True}]
    v = check_summary(run, good, events=events)
    assert ("0246.B", "passed") in {(x.rule, x.field) for x in v}
    assert any(x.field == "eval.scored" and "trial 1" in x.where for x in v)


def test_gate_fails_closed_on_a_contradicting_summary():
    d = doc("shape-valid.json")
    assert gate_summary(d).passed is False
    lying = dict(d, passed=True, thresholds={"passScore": 0.6})
    g = gate_summary(lying)
    assert g.passed is False and any("0.5 < passScore 0.6" in r for r in g.reasons)
    no_agg = dict(doc("host-unmigrated-suite-gated.json"))
    no_agg["tasks"] = [dict(t, gatedScore=t["score"]) for t in no_agg["tasks"]]
    assert gate_summary(no_agg).passed is False
    ok = summarize_suite(fixture("example-4-trajectory-matched.json"))
    assert gate_summary(ok).passed is True and gate_summary(ok.to_dict()).passed is True


def test_gate_never_reads_absent_gated_fields_as_ungated():
    """RFC 0246 section D: a consumer never infers absent => ungated (review finding)."""
    ok = summarize_suite(fixture("example-4-trajectory-matched.json")).to_dict()
    stripped = {k: v for k, v in ok.items() if k not in ("gatedAggregateScore", "decision", "reasons")}
    stripped["tasks"] = [{k: v for k, v in t.items() if k != "gatedScore"} for t in ok["tasks"]]
    stripped["passed"] = True
    g = gate_summary(stripped)
    assert g.passed is False and any("absent never means ungated" in r for r in g.reasons)
    no_bar = {k: v for k, v in ok.items() if k != "thresholds"}
    assert gate_summary(no_bar).passed is False
    inflated = dict(ok, gatedAggregateScore=0.99, decision=[])
    inflated["tasks"] = [dict(t, gatedScore=0.0) for t in ok["tasks"]]
    assert gate_summary(inflated).passed is False


def test_gate_says_plainly_that_gated_aggregate_score_is_missing():
    """Each condition the gate reads without a gatedAggregateScore names the missing field and
    what was read instead (review finding)."""
    ok = summarize_suite(fixture("example-4-trajectory-matched.json")).to_dict()
    bare = {k: v for k, v in ok.items() if k not in ("gatedAggregateScore", "decision", "reasons")}
    bare["passed"] = True
    g = gate_summary(bare)  # its tasks still carry gatedScore
    assert not g.passed
    assert any("gatedAggregateScore is missing although" in r and "carry gatedScore" in r for r in g.reasons)
    plain = dict(bare, tasks=[{k: v for k, v in t.items() if k not in ("gatedScore", "hasTrajectory")}
                              for t in ok["tasks"]])
    g = gate_summary(plain)
    assert g.passed and g.reasons == (f"passed: aggregateScore {plain['aggregateScore']:g} >= passScore "
                                      f"{plain['thresholds']['passScore']:g} (the summary has no "
                                      "gatedAggregateScore, so aggregateScore was read)",)
    low = dict(plain, aggregateScore=0.1, tasks=[dict(t, score=0.1) for t in plain["tasks"]])
    g = gate_summary(low)
    assert not g.passed and any("aggregateScore 0.1 < passScore" in r and "has no gatedAggregateScore" in r
                                for r in g.reasons), g.reasons


def test_load_summary_errors(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"aggregateScore": 0.5, "tasks": []}))
    with pytest.raises(SchemaViolation, match="passed"):
        load_summary(p)


# =========================================================================== CLI


@pytest.fixture
def evaltk_main(monkeypatch):
    monkeypatch.setattr(cli, "_MODULES", ("evaltk.cli.suite",))
    return cli.main


def test_cli_summarize_gate_check(evaltk_main, tmp_path, capsys):
    out, ev = tmp_path / "summary.json", tmp_path / "events.jsonl"
    assert evaltk_main(["suite", "summarize", str(fixture("leg-suite-gated.json")), "--out", str(out),
                        "--events", str(ev)]) == 0
    d = json.loads(out.read_text())
    assert d["passed"] is False and d["gatedAggregateScore"] == 0.5
    lines = [json.loads(x) for x in ev.read_text().splitlines()]
    assert [(e["taskId"], e["score"], e["passed"]) for e in lines] == [("right-path", 1, True),
                                                                      ("wrong-path", 1, False)]
    capsys.readouterr()
    assert evaltk_main(["suite", "gate", str(out)]) == 1
    text = capsys.readouterr().out
    assert "NOT PASSED" in text and "gatedAggregateScore 0.5 < passScore 0.6" in text
    assert evaltk_main(["suite", "check", str(fixture("leg-suite-gated.json")), str(out), "--events",
                        str(ev)]) == 0
    assert evaltk_main(["suite", "check", str(fixture("leg-suite-gated.json")),
                        str(fixture("host-unmigrated-suite-gated.json"))]) == 1
    assert "[0246.B] suite: passed" in capsys.readouterr().out
    passing = tmp_path / "ok.json"
    assert evaltk_main(["suite", "summarize", str(fixture("example-4-trajectory-matched.json")), "--out",
                        str(passing)]) == 0
    assert evaltk_main(["suite", "gate", str(passing), "--json"]) == 0
    capsys.readouterr()
    assert evaltk_main(["suite", "check", str(fixture("leg-suite-gated.json")),
                        str(fixture("host-zeroed-suite-gated.json")), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["conforms"] is False and {v["rule"] for v in report["violations"]} == {"0246.C"}


def test_cli_exit_codes_for_bad_input(evaltk_main, tmp_path, capsys):
    assert evaltk_main(["suite", "summarize", str(tmp_path / "nope.json")]) == 66
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_mutate(("tasks", 1, "trials"), [{"score": 0.9}])))
    assert evaltk_main(["suite", "summarize", str(bad)]) == 65
    err = capsys.readouterr().err
    assert "refund-2" in err and "trials" in err and "bad.json" in err
    assert evaltk_main(["suite", "gate", str(fixture("shape-gated-score-above-1.json"))]) == 65
    assert evaltk_main(["suite", "gate", str(tmp_path / "nope.json")]) == 66
    assert evaltk_main(["suite", "check", str(bad), str(fixture("shape-valid.json"))]) == 65
    assert evaltk_main(["suite"]) == 64
    assert evaltk_main(["suite", "summarize"]) == 64


def test_cli_summarize_to_stdout(evaltk_main, capsys):
    assert evaltk_main(["suite", "summarize", str(fixture("example-2-suite.yaml"))]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["gatedAggregateScore"] == 0.45


# =========================================================================== demo data


def test_demo_run_and_summary_are_in_sync():
    """data/examples/suite: the committed summary is what summarize_suite gives for the run."""
    run = load_suite_run(EXAMPLES / "run.json")
    committed = json.loads((EXAMPLES / "summary.json").read_text())
    assert check_summary(run, committed) == []
    assert committed == json.loads(json.dumps(summarize_suite(run).to_dict()))
    events = [json.loads(x) for x in (EXAMPLES / "events.jsonl").read_text().splitlines()]
    assert check_summary(run, committed, events=events) == []


def test_non_decimal_scores_use_the_float_path():
    """Scores that are not short decimals (1/3 to 16 digits): double-double means, tolerant compare."""
    third = 1 / 3
    run = run_doc([{"id": "a", "trials": [{"score": third}] * 3},
                   {"id": "b", "trials": [{"score": 2 / 3}, {"score": 0.0}, {"score": 1 / 3}]}],
                  pass_score=third, trials={"count": 3})
    s = summarize_suite(run)
    assert s.task_score[0] == third and bool(s.task_passed[0])
    assert s.task_score[1] == pytest.approx(1 / 3) and bool(s.task_passed[1])
    assert s.aggregate_score == pytest.approx(third) and s.passed


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=1, max_size=5),
       st.floats(0, 1))
def test_float_path_matches_exact_binary_arithmetic(rows, ps):
    run = run_doc([{"id": f"t{i}", "trials": [{"score": x} for x in r]} for i, r in enumerate(rows)],
                  pass_score=ps, trials={"count": 3})
    s = summarize_suite(run)
    fps = Fraction(ps)
    for i, r in enumerate(rows):
        exact = sum(Fraction(x) for x in r) / 3
        assert abs(s.task_score[i] - float(exact)) <= np.spacing(float(exact))
        if abs(exact - fps) > 1e-11:
            assert bool(s.task_passed[i]) == (exact >= fps)


def test_run_to_frame_and_object_tool_calls():
    run = load_suite_run(run_doc([{"id": "x", "expected": {"trajectory": {"tools": ["a"]}},
                                   "trials": [{"score": 0.5, "toolCalls": [{"name": "a", "arguments": {}}],
                                               "latencyMs": 12}]}]))
    f = run.to_frame()
    rec = f.drop(columns="cost").to_dict("records")
    assert rec == [{"task_id": "x", "trial": 0, "score": 0.5, "trajectory_matched": True,
                    "fixture_miss": False, "latency_ms": 12.0}]
    assert math.isnan(f["cost"][0])
    with pytest.raises(SchemaViolation) as e:
        load_suite_run(run_doc([{"id": "x", "trials": [{"score": 0.5, "toolCalls": [3]}]}]))
    assert e.value.field == "trials[0].toolCalls"


def test_gate_needs_a_valid_summary():
    with pytest.raises(SchemaViolation) as e:
        gate_summary({"aggregateScore": 0.9, "tasks": []})
    assert "passed" in str(e.value)


# =========================================================================== columnar input


def test_from_frame_round_trips_the_run():
    from evaltk.suite import suite_run_from_frame

    for name in ("leg-mean-gated.json", "leg-suite-gated.json", "example-3-no-trajectory.json"):
        run = load_suite_run(fixture(name))
        table = run.to_frame().sample(frac=1.0, random_state=1)  # row order must not matter
        table = table.sort_values("task_id", key=lambda c: c.map(run.task_ids.index), kind="stable")
        back = suite_run_from_frame(table, suite=run.suite, pass_score=run.thresholds.pass_score,
                                    pass_rule=run.pass_rule)
        a, b = summarize_suite(run).to_dict(), summarize_suite(back).to_dict()
        for d in (a, b):
            for t in d["tasks"]:
                t.pop("type", None)
        assert a == b, name
    demo = load_suite_run(EXAMPLES / "run.json")
    back = suite_run_from_frame(demo.to_frame(), suite=demo.suite, pass_score=0.7, max_cost=2.5,
                                max_latency_ms=60000, version=demo.version)
    assert summarize_suite(back).gated_aggregate_score == summarize_suite(demo).gated_aggregate_score


def test_from_frame_bad_tables():
    import pandas as pd

    from evaltk.suite import suite_run_from_frame

    good = pd.DataFrame({"task_id": ["a", "a", "b", "b"], "trial": [0, 1, 0, 1], "score": [0.5] * 4})
    cases = [
        (good.assign(score=[0.5, 1.5, 0.5, 0.5]), "a", "score"),
        (good.assign(score=[0.5, 0.5, float("nan"), 0.5]), "b", "score"),
        (good.iloc[:3], "b", "trial"),
        (good.assign(trial=[0, 0, 0, 1]), "a", "trial"),
        (good.assign(trajectory_matched=[True, None, None, None]), "a", "trajectory_matched"),
        (good.assign(fixture_miss=[False, "no", False, False]), "a", "fixture_miss"),
        (good.assign(cost=[0.1, -1.0, 0.1, 0.1]), "a", "cost"),
        (good.drop(columns="score"), None, "score"),
    ]
    for table, record, fld in cases:
        with pytest.raises(SchemaViolation) as e:
            suite_run_from_frame(table, suite="s", pass_score=0.5)
        assert (e.value.record, e.value.field) == (record, fld)
        # the trial and the value as a user wrote them, not NumPy 2's repr (`trial np.int64(1)`)
        assert "np." not in str(e.value), str(e.value)
    with pytest.raises(SchemaViolation, match=r"trial 1: must be a finite number >= 0; got -1\.0$"):
        suite_run_from_frame(good.assign(cost=[0.1, -1.0, 0.1, 0.1]), suite="s", pass_score=0.5)


def test_cost_sums_are_exact_on_decimals():
    """0.1 + 0.2 is 0.30000000000000004 in floats; a maxCost of 0.3 must still be met."""
    d = run_doc([{"id": "a", "trials": [{"score": 1, "cost": 0.1}]},
                 {"id": "b", "trials": [{"score": 1, "cost": 0.2}]}])
    d["thresholds"]["maxCost"] = 0.3
    s = summarize_suite(d)
    assert s.total_cost == 0.3 and s.passed
    assert [t["cost"] for t in s.to_dict()["tasks"]] == [0.1, 0.2]


def test_checker_events_without_trial_index_are_taken_in_order():
    run = load_suite_run(fixture("leg-mean-gated.json"))
    s = summarize_suite(run)
    events = [{k: v for k, v in e.items() if k != "trialIndex"} for e in scored_events(s)]
    assert check_summary(run, s.to_dict(), events=events) == []
    assert len(check_summary(run, s.to_dict(), events=events[:1])) == 1


@pytest.mark.parametrize("leg, host", [("leg-suite-gated.json", "shape-valid.json"),
                                       ("leg-mean-gated.json", "host-conforming-mean-gated.json")])
def test_checker_accepts_a_migrated_host(leg, host):
    """A host summary in RFC 0081 vocabulary that follows RFC 0246 has no violation."""
    assert check_summary(load_suite_run(fixture(leg)), doc(host)) == []


def test_suite_name_is_optional(tmp_path):
    p = tmp_path / "nightly.json"
    p.write_text(json.dumps({"thresholds": {"passScore": 0.5}, "tasks": [{"id": "a", "score": 1}]}))
    assert load_suite_run(p).suite == "nightly"
    assert summarize_suite(p).to_dict()["suite"] == "nightly"


def test_a_fixture_miss_may_omit_its_score():
    """RFC 0244 D as amended: a trial that failed closed scores 0."""
    d = run_doc([{"id": "a", "trials": [{"fixtureMiss": True}, {"score": 1.0}]},
                 {"id": "b", "fixtureMiss": True}], trials=None)
    with pytest.raises(SchemaViolation):  # task a has 2 trials but count is 1
        load_suite_run(d)
    d["trials"] = {"count": 2}
    d["tasks"][1] = {"id": "b", "trials": [{"fixtureMiss": True, "score": None}, {"score": 0.5}]}
    s = summarize_suite(d)
    assert s.run.score.tolist() == [[0.0, 1.0], [0.0, 0.5]]
    assert s.trial_passed.tolist() == [[False, True], [False, False]]
    jsonschema.Draft202012Validator(schema("suite-run")).validate(d)
    one = run_doc([{"id": "b", "fixtureMiss": True}])
    assert summarize_suite(one).task_score.tolist() == [0.0]


def test_duplicate_keys_and_null_trajectories_are_refused(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{"suite": "s", "thresholds": {"passScore": 0.5}, "tasks": [{"id": "a", '
                 '"trials": [{"score": 1, "score": 0}]}]}')
    with pytest.raises(SchemaViolation, match="duplicate object key 'score'"):
        load_suite_run(p)
    doc_ = {"suite": "s", "thresholds": {"passScore": 0.5},
            "tasks": [{"id": "a", "expected": {"trajectory": None}, "trials": [{"score": 1.0}]}]}
    with pytest.raises(SchemaViolation, match="null") as e:
        load_suite_run(doc_)
    assert e.value.field == "expected.trajectory"


def test_identical_trial_scores_spread_exactly_zero():
    """Example 1's three trials all score 0.9: their sample standard deviation is 0, not 1e-16."""
    t = summarize_suite(fixture("example-1-task-mean.json")).to_dict()["tasks"][0]
    assert t["trialStats"]["stdDev"] == 0.0


# =========================================================================== pinned outputs
#
# The full output documents of the loader, the summary, the events, the columnar reader and
# the checker on every fixture and example, and the exact messages of malformed inputs, as
# the code gave them before the rule families were split into functions of their own
# (tests/inputs/suite/pinned-outputs.json, written once from that code). A refactoring that
# changes any number, field, order or word fails here.

PINNED = DATA / "pinned-outputs.json"
_RUNS = sorted(p.name for p in DATA.glob("*") if p.name.startswith(("example-", "leg-")))
_HOSTS = [("leg-mean-gated.json", "host-conforming-mean-gated.json", None),
          ("leg-mean-gated.json", "host-unmigrated-mean-gated.json", None),
          ("leg-mean-gated.json", "host-zeroed-mean-gated.json", "host-zeroed-mean-gated.events.jsonl"),
          ("leg-suite-gated.json", "host-unmigrated-suite-gated.json", None),
          ("leg-suite-gated.json", "host-zeroed-suite-gated.json", None),
          ("leg-suite-gated.json", "shape-gated-aggregate-below-0.json", None),
          ("leg-suite-gated.json", "shape-gated-score-above-1.json", None),
          ("leg-suite-gated.json", "shape-valid.json", None)]


def _bad_hosts() -> dict:
    """Host summaries broken in ways the checker must word exactly."""
    good = summarize_suite(load_suite_run(EXAMPLES / "run.json")).to_dict()
    out = {}
    for name, edit in [
        ("score-off", lambda h: h["tasks"][0].update(score=0.123)),
        ("mean-off", lambda h: h["tasks"][0]["trials"].update(meanScore=0.5)),
        ("gated-off", lambda h: h["tasks"][1].update(gatedScore=0.01)),
        ("passed-flipped", lambda h: h["tasks"][2].update(passed=not h["tasks"][2]["passed"])),
        ("pass-at-k-off", lambda h: h["tasks"][0].update(passAtK=0.333)),
        ("stats-off", lambda h: h["tasks"][0]["trialStats"].update(minScore=0.0, stdDev=9.0)),
        ("task-dropped", lambda h: h["tasks"].pop()),
        ("task-twice", lambda h: h["tasks"].append(dict(h["tasks"][0]))),
        ("task-stray", lambda h: h["tasks"].append({**h["tasks"][0], "taskId": "stray", "id": "stray"})),
        ("suite-numbers-off", lambda h: h.update(aggregateScore=0.1, gatedAggregateScore=0.2, passed=True,
                                                  passedCount=99, taskCount=1, totalCost=1.0)),
        ("not-an-object", None),
    ]:
        h = copy.deepcopy(good)
        if edit is None:
            h = ["not", "a", "summary"]
        else:
            edit(h)
        out[name] = h
    return out


def _bad_frames() -> dict:
    import pandas as pd

    good = pd.DataFrame({"task_id": ["a", "a", "b", "b"], "trial": [0, 1, 0, 1], "score": [0.5] * 4})
    return {
        "score-above-1": (good.assign(score=[0.5, 1.5, 0.5, 0.5]), {}),
        "score-nan": (good.assign(score=[0.5, 0.5, float("nan"), 0.5]), {}),
        "score-bool": (good.assign(score=[True, 0.5, 0.5, 0.5]), {}),
        "uneven": (good.iloc[:3], {}),
        "repeated-trial": (good.assign(trial=[0, 0, 0, 1]), {}),
        "mixed-verdicts": (good.assign(trajectory_matched=[True, None, None, None]), {}),
        "verdict-not-bool": (good.assign(trajectory_matched=["y", "n", None, None]), {}),
        "miss-not-bool": (good.assign(fixture_miss=[False, "no", False, False]), {}),
        "negative-cost": (good.assign(cost=[0.1, -1.0, 0.1, 0.1]), {}),
        "infinite-latency": (good.assign(latency_ms=[1.0, float("inf"), 1.0, 1.0]), {}),
        "no-score-column": (good.drop(columns="score"), {}),
        "no-rows": (good.iloc[:0], {}),
        "no-task-id": (good.assign(task_id=["a", None, "b", "b"]), {}),
        "mixed-trial-labels": (good.assign(trial=[0, "x", 0, 1]), {}),
        "bad-pass-rule": (good, {"pass_rule": "most"}),
        "bad-aggregation": (good, {"aggregation": "max"}),
        "bad-k": (good, {"k": 3}),
        "bad-pass-score": (good, {"pass_score": 1.5}),
        "bad-max-cost": (good, {"max_cost": -2}),
        "bad-suite": (good, {"suite": ""}),
        "bad-max-latency": (good, {"max_latency_ms": float("nan")}),
        "k-bool": (good, {"k": True}),
        "score-strings": (good.assign(score=["0.5", "x", "0.5", "0.5"]), {}),
        "cost-strings": (good.assign(cost=["a", None, None, None]), {}),
        "miss-nullable": (good.assign(fixture_miss=pd.array([True, None, False, False], dtype="boolean")), {}),
    }


# More loader inputs, each pinned to its error or, when valid, to its full summary: every
# branch of the reader's rule families (document, thresholds, trials block, tasks, trials,
# trajectories) that BAD above does not reach.
MORE_LOADS = [
    ("suite-not-string", ("suite",), 5), ("version-not-string", ("version",), 3),
    ("no-thresholds", ("thresholds",), _DELETE), ("thresholds-list", ("thresholds",), [1]),
    ("max-cost-string", ("thresholds", "maxCost"), "x"), ("max-latency-negative", ("thresholds", "maxLatencyMs"), -1),
    ("max-cost-usd", ("thresholds", "maxCostUsd"), 1.0), ("max-p95", ("thresholds", "maxP95LatencyMs"), 10),
    ("trials-list", ("trials",), [1]), ("trials-unknown-key", ("trials", "n"), 1),
    ("k-bool", ("trials", "k"), True), ("k-one", ("trials", "k"), 1), ("count-bool", ("trials", "count"), True),
    ("pass-rule-all", ("trials", "passRule"), "all"), ("pass-rule-any", ("trials", "passRule"), "any"),
    ("no-trials-block", ("trials",), _DELETE), ("aggregation-min", ("aggregation",), "min"),
    ("aggregation-median", ("aggregation",), "median"), ("top-near-miss", ("tresholds",), {}),
    ("top-extra", ("owner",), "x"), ("top-x", ("x-owner",), "x"), ("suite-id", ("suiteId",), "other"),
    ("tasks-object", ("tasks",), {}), ("task-string", ("tasks", 1), "x"), ("task-id-int", ("tasks", 1, "id"), 5),
    ("task-id-alias", ("tasks", 1), {"taskId": "refund-2", "trials": [{"score": 0.9}, {"score": 0.8}]}),
    ("type-empty", ("tasks", 1, "type"), ""), ("kind-alias", ("tasks", 1, "kind"), "rubric"),
    ("expected-list", ("tasks", 0, "expected"), [1]),
    ("trajectory-null", ("tasks", 0, "expected", "trajectory"), None),
    ("trajectory-string", ("tasks", 0, "expected", "trajectory"), "x"),
    ("tools-string", ("tasks", 0, "expected", "trajectory", "tools"), "a"),
    ("tools-bad-entry", ("tasks", 0, "expected", "trajectory", "tools"), [1]),
    ("tools-objects", ("tasks", 0, "expected", "trajectory", "tools"), [{"name": "a"}]),
    ("tools-absent", ("tasks", 0, "expected", "trajectory", "tools"), _DELETE),
    ("forbidden-bad", ("tasks", 0, "expected", "trajectory", "forbidden"), [""]),
    ("forbidden-hit", ("tasks", 0, "expected", "trajectory", "forbidden"), ["a"]),
    ("no-trials", ("tasks", 1, "trials"), _DELETE), ("trials-object", ("tasks", 1, "trials"), {"a": 1}),
    ("trial-int", ("tasks", 1, "trials", 0), 5),
    ("trial-miss-only", ("tasks", 1, "trials", 0), {"fixtureMiss": True}),
    ("trial-miss-null-score", ("tasks", 1, "trials", 0), {"score": None, "fixtureMiss": True}),
    ("trial-miss-false", ("tasks", 1, "trials", 0, "fixtureMiss"), False),
    ("trial-score-int", ("tasks", 1, "trials", 0, "score"), 1),
    ("trial-score-null", ("tasks", 1, "trials", 0, "score"), None),
    ("trial-extra", ("tasks", 1, "trials", 0, "notes"), "x"),
    ("latency-negative", ("tasks", 1, "trials", 0, "latencyMs"), -5),
    ("latency-float", ("tasks", 1, "trials", 0, "latencyMs"), 5.5),
    ("cost-usd-string", ("tasks", 1, "trials", 0, "costUsd"), "1"),
    ("cost-usd", ("tasks", 1, "trials", 0, "costUsd"), 0.5), ("cost-int", ("tasks", 1, "trials", 0, "cost"), 1),
    ("host-verdict-string", ("tasks", 0, "trials", 0, "trajectoryMatched"), "yes"),
    ("host-verdict-false", ("tasks", 0, "trials", 0, "trajectoryMatched"), False),
    ("host-verdict-only", ("tasks", 0, "trials", 0), {"score": 0.9, "trajectoryMatched": True}),
    ("tool-calls-string", ("tasks", 0, "trials", 0, "toolCalls"), "a"),
    ("tool-calls-bad-entry", ("tasks", 0, "trials", 0, "toolCalls"), [5]),
    ("tool-calls-objects", ("tasks", 0, "trials", 0, "toolCalls"), [{"name": "a"}]),
    ("tool-calls-wrong", ("tasks", 0, "trials", 0, "toolCalls"), ["b"]),
    ("plain-tool-calls-bad", ("tasks", 1, "trials", 0, "toolCalls"), [5]),
    ("plain-tool-calls-objects", ("tasks", 1, "trials", 0, "toolCalls"), [{"tool": "a"}]),
    ("short-task", ("tasks", 1), {"id": "refund-2", "score": 0.5}),
    ("trials-and-miss", ("tasks", 1, "fixtureMiss"), True),
    ("trials-and-metadata", ("tasks", 1, "metadata"), {"a": 1}),
    ("short-task-and-trials", ("tasks", 1), {"id": "refund-2", "score": 0.5, "trials": [{"score": 0.5}] * 2}),
]


def _plain_bad_hosts() -> dict:
    """Host summaries of a run without trajectories, broken in the remaining ways."""
    good = summarize_suite(fixture("example-3-no-trajectory.json")).to_dict()
    out = {}
    for name, edit in [
        ("gated-equal-on-plain", lambda h: h["tasks"][0].update(gatedScore=h["tasks"][0]["score"])),
        ("gated-aggregate-on-plain", lambda h: h.update(gatedAggregateScore=h["aggregateScore"])),
        ("gated-aggregate-off", lambda h: h.update(gatedAggregateScore=0.01)),
        ("gated-string", lambda h: h["tasks"][0].update(gatedScore="x")),
        ("pass-at-k-declared", lambda h: (h["trials"].update(k=1), h["tasks"][0].update(passAtK=0.2))),
        ("pass-hat-k-in-trials", lambda h: h["tasks"][0]["trials"].update(passHatK="x")),
        ("population-std", lambda h: h["tasks"][0]["trialStats"].update(stdDev=0.1)),
        ("mean-string", lambda h: h["tasks"][0]["trials"].update(meanScore="x")),
        ("score-missing", lambda h: h["tasks"][0].pop("score")),
        ("passed-missing", lambda h: (h["tasks"][0].pop("passed"), h.pop("passed"))),
        ("aggregate-missing", lambda h: h.pop("aggregateScore")),
        ("aggregate-off", lambda h: h.update(aggregateScore=0.3)),
        ("task-id-missing", lambda h: h["tasks"][0].pop("taskId")),
        ("task-not-object", lambda h: h["tasks"].append(5)),
    ]:
        h = copy.deepcopy(good)
        edit(h)
        out[name] = h
    return out


def _pinned_outputs() -> dict:
    from evaltk.suite import suite_run_from_frame

    def error(fn):
        try:
            fn()
        except (SchemaViolation, UnreadableInput, TypeError, ValueError) as e:
            return {"type": type(e).__name__, "message": str(e),
                    "record": getattr(e, "record", None), "field": getattr(e, "field", None)}
        return None

    runs = {name: DATA / name for name in _RUNS} | {"examples/run.json": EXAMPLES / "run.json"}
    out: dict = {"summaries": {}, "events": {}, "from_frame": {}, "checks": {}, "load_errors": {},
                 "frame_errors": {}, "bad_hosts": {}, "more_loads": {}, "bad_hosts_plain": {}}
    for name, path in runs.items():
        run = load_suite_run(path)
        s = summarize_suite(run)
        out["summaries"][name] = s.to_dict()
        out["events"][name] = scored_events(s)
        back = suite_run_from_frame(
            run.to_frame(), suite=run.suite, pass_score=run.thresholds.pass_score, pass_rule=run.pass_rule,
            k=run.k, aggregation=run.aggregation, max_cost=run.thresholds.max_cost,
            max_latency_ms=run.thresholds.max_latency_ms, version=run.version)
        out["from_frame"][name] = summarize_suite(back).to_dict()
    for leg, host, events in _HOSTS:
        v = check_summary(fixture(leg), fixture(host), events=None if events is None else fixture(events))
        out["checks"][f"{leg} / {host}"] = [x.to_dict() for x in v]
    demo = load_suite_run(EXAMPLES / "run.json")
    demo_events = scored_events(summarize_suite(demo))
    for name, host in _bad_hosts().items():
        out["bad_hosts"][name] = [x.to_dict() for x in check_summary(demo, host)]
    bad_events = copy.deepcopy(demo_events)
    bad_events[0]["score"] = 0
    bad_events[1]["passed"] = not bad_events[1]["passed"]
    bad_events[2]["taskId"] = "nobody"
    bad_events[3]["trialIndex"] = 99
    bad_events.append(dict(bad_events[4]))
    del bad_events[5]
    out["bad_hosts"]["events"] = [x.to_dict() for x in check_summary(
        demo, summarize_suite(demo).to_dict(), events=bad_events)]
    for name, path, value, _, _ in BAD:
        bad = _mutate(path, value)
        out["load_errors"][name] = error(lambda d=bad: load_suite_run(d, file="run.json"))
    for name, (table, kw) in _bad_frames().items():
        args = {"suite": "s", "pass_score": 0.5} | kw
        out["frame_errors"][name] = error(lambda t=table, a=args: suite_run_from_frame(t, **a))
    out["frame_errors"]["not-a-frame"] = error(lambda: suite_run_from_frame([1], suite="s", pass_score=0.5))
    out["more_loads"] = {}
    for name, path, value in MORE_LOADS:
        bad = _mutate(path, value)
        out["more_loads"][name] = error(lambda d=bad: load_suite_run(d, file="run.json")) or \
            summarize_suite(load_suite_run(bad, file="run.json")).to_dict()
    out["more_loads"]["not-an-object"] = error(lambda: load_suite_run([1], file="run.json"))
    out["more_loads"]["unnamed"] = summarize_suite(load_suite_run(
        {"thresholds": {"passScore": 0.5}, "tasks": [{"id": "a", "score": 0.5}]})).to_dict()
    plain = load_suite_run(fixture("example-3-no-trajectory.json"))
    out["bad_hosts_plain"] = {name: [x.to_dict() for x in check_summary(plain, h)]
                              for name, h in _plain_bad_hosts().items()}
    return json.loads(json.dumps(out))


def test_outputs_are_pinned():
    want = json.loads(PINNED.read_text("utf-8"))
    got = _pinned_outputs()
    assert got.keys() == want.keys()
    for section in want:
        assert got[section].keys() == want[section].keys(), section
        for name in want[section]:
            assert got[section][name] == want[section][name], f"{section}: {name}"


# =========================================================================== issue 16: RFC 0246 read exactly


def test_a_gating_score_just_below_pass_score_does_not_pass_and_the_reason_shows_it():
    # RFC 0246 B: "gating aggregate >= thresholds.passScore"; no tolerance lets 0.6999999999995 reach 0.7
    s = summarize_suite({"suite": "edge", "thresholds": {"passScore": 0.7},
                         "tasks": [{"id": "t", "trials": [{"score": 0.6999999999995}]}]})
    assert s.passed is False and not s.task_passed[0] and not s.trial_passed[0, 0]
    assert "aggregateScore 0.6999999999995 < passScore 0.7" in s.reasons[0]
    at = summarize_suite({"suite": "edge", "thresholds": {"passScore": 0.7},
                          "tasks": [{"id": "t", "trials": [{"score": 0.7}]}]})
    assert at.passed is True and "0.7 >= passScore 0.7" in at.reasons[0]
    # an exact mean that only rounds to the threshold is printed with the digits that decide
    three = summarize_suite({"suite": "edge", "thresholds": {"passScore": 0.7}, "trials": {"count": 3},
                             "tasks": [{"id": "t", "trials": [{"score": 0.7}, {"score": 0.7},
                                                              {"score": 0.6999999999999998}]}]})
    assert three.passed is False and "0.699999999999999933333333333333... < passScore 0.7" in three.reasons[0]
    gated = {"suite": "g", "aggregateScore": 0.7, "gatedAggregateScore": 0.6999999999995, "passed": True,
             "thresholds": {"passScore": 0.7}, "tasks": [{"taskId": "t", "score": 0.7, "gatedScore": 0.6999999999995,
                                                          "passed": True}]}
    g = gate_summary(gated)
    assert g.passed is False and any("0.6999999999995 < passScore 0.7" in r for r in g.reasons)


@pytest.mark.parametrize("where", ["gatedAggregateScore", "gatedScore"])
def test_the_summary_schema_refuses_nan_gated_fields(where):
    # RFC 0246, 0246.gated-fields-shape: "gatedScore and gatedAggregateScore ... numbers in 0-1"
    doc = {"aggregateScore": 0.9, "gatedAggregateScore": 0.45, "passed": False,
           "tasks": [{"taskId": "t", "score": 0.9, "gatedScore": 0.45, "passed": False}]}
    if where == "gatedScore":
        doc["tasks"][0]["gatedScore"] = float("nan")
    else:
        doc["gatedAggregateScore"] = float("nan")
    with pytest.raises(SchemaViolation, match="finite") as e:
        validate_summary(doc)
    assert e.value.field == where
    doc2 = copy.deepcopy(doc)
    doc2["tasks"][0]["gatedScore"] = doc2["gatedAggregateScore"] = float("inf")
    with pytest.raises(SchemaViolation):
        validate_summary(doc2)


def _no_trajectory_miss_run():
    return {"suite": "m", "thresholds": {"passScore": 0.5},
            "tasks": [{"id": "ok", "trials": [{"score": 0.9}]},
                      {"id": "miss", "trials": [{"score": 0, "fixtureMiss": True}]}]}


def test_check_accepts_a_gated_aggregate_on_a_suite_with_a_fixture_miss():
    # RFC 0246 D: only "a suite with no expected.trajectory and no fixture misses ... carries neither field"
    run = _no_trajectory_miss_run()
    host = {"suite": "m", "aggregateScore": 0.45, "gatedAggregateScore": 0.45, "passed": False,
            "tasks": [{"taskId": "ok", "score": 0.9, "passed": True},
                      {"taskId": "miss", "score": 0, "passed": False}]}
    assert check_summary(run, host) == []
    wrong = dict(host, gatedAggregateScore=0.9)
    assert [v.rule for v in check_summary(run, wrong)] == ["0246.A"]
    clean = {"suite": "c", "thresholds": {"passScore": 0.5}, "tasks": [{"id": "ok", "trials": [{"score": 0.9}]}]}
    stray = {"suite": "c", "aggregateScore": 0.9, "gatedAggregateScore": 0.9, "passed": True,
             "tasks": [{"taskId": "ok", "score": 0.9, "passed": True}]}
    assert [v.rule for v in check_summary(clean, stray)] == ["0246.D"]  # no trajectory, no miss


def test_a_fixture_miss_on_a_trajectory_task_needs_no_tool_calls(evaltk_main, tmp_path):
    # RFC 0246 A: the gating score is 0 on a fixture miss whatever the trial's path
    run = {"suite": "fm", "thresholds": {"passScore": 0.5}, "trials": {"count": 2},
           "tasks": [{"id": "t", "expected": {"trajectory": {"tools": ["a"]}},
                      "trials": [{"score": 0.9, "toolCalls": ["a"]}, {"fixtureMiss": True}]}]}
    s = summarize_suite(run)
    assert s.trial_gating_score.tolist() == [[0.9, 0.0]] and s.task_gated_score[0] == pytest.approx(0.45)
    assert s.trial_passed.tolist() == [[True, False]]
    p = tmp_path / "run.json"
    p.write_text(json.dumps(run))
    assert evaltk_main(["suite", "summarize", str(p), "--out", str(tmp_path / "s.json")]) == 0  # not 65
    no_calls = copy.deepcopy(run)
    no_calls["tasks"][0]["trials"][1] = {"score": 0.0}
    with pytest.raises(SchemaViolation, match="toolCalls"):
        summarize_suite(no_calls)  # without a miss, a trajectory trial still needs its calls


@pytest.mark.parametrize("enabled", [True, False])
def test_to_dict_leaves_the_garbage_collector_as_it_found_it(enabled):
    """to_dict pauses the collector and moves its entries to the oldest generation: the
    collector's state comes back, and nothing stays frozen."""
    import gc

    s = summarize_suite(DATA / "example-2-suite.json")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        d = s.to_dict()
        assert gc.isenabled() is enabled and gc.get_freeze_count() == 0
        assert d == s.to_dict() and len(d["tasks"]) == s.run.task_count
    finally:
        (gc.enable if was else gc.disable)()
