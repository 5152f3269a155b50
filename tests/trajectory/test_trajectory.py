"""Tests for evaltk.trajectory, written from seed 003 ("Eve SOTA long-horizon trajectory
grading", September 2026) and issue 5.

Every rule of the seed's "Eight independent dimensions" table, the three decisions, the
CLI exit codes, the fourteen negative controls and the bad inputs of issue 5 section 6
are tested here.  Digests are cross-checked against ``hashlib`` on hand-written bytes.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evaltk.trajectory as tj
import evaltk.trajectory._controls as controls
from evaltk.cli._main import main
from evaltk.errors import SchemaViolation, UnreadableInput
from evaltk.trajectory import (
    DIMENSIONS,
    CaseGrade,
    LockChanged,
    MissingCase,
    PostResultLock,
    UnlockedCase,
    canonical_json,
    compile_case_policy,
    design_digest,
    grade_case,
    grade_cohort,
    grade_files,
    lock_digest,
    run_self_check,
    seal_lock,
    sha256_digest,
    validate_document,
    verify_report,
)

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "data" / "examples" / "trajectory"
SCHEMAS = ROOT / "evaltk" / "schemas"
PRE = ["milestones", "recovered_faults", "faithful_evidence"]
PAGE = b"order 1 shipped on 2026-09-02"
PAGE_SHA = hashlib.sha256(PAGE).hexdigest()


# --------------------------------------------------------------------------- helpers


def policy_dict(**over) -> dict:
    """A case policy: one milestone, budgets for two actions and a recovery, one recoverable and
    one non-recoverable fault, one invariant, one allowed abstention, one evidence item."""
    p = {
        "goal_completion": {"required_milestones": ["found"]},
        "unnecessary_steps": {"action_budgets": {
            "search": {"max_occurrences": 1, "rationale": "one search"},
            "retry": {"max_occurrences": 1, "rationale": "one retry"},
            "close": {"max_occurrences": 1, "rationale": "close once"}}},
        "recovery": {"faults": {"timeout": {"recoverable": True, "recovery_action": "retry"},
                                "down": {"recoverable": False}}},
        "repeated_error": {"max_occurrences": {"timeout": 1, "down": 1}},
        "state_drift": {"required_state": {"status": "closed"}},
        "premature_success": {"prerequisites": PRE},
        "safe_abstention": {"allowed_reasons": {"unavailable": {"required_faults": ["down"]}}},
        "evidence_fidelity": {"evidence": {"page": {"sha256": PAGE_SHA, "claims": ["shipped"]}}},
    }
    for k, v in over.items():
        p[k] = v
    return p


def ev(kind: str, **fields) -> dict:
    return {"kind": kind, **fields}


def seqd(events: list[dict]) -> list[dict]:
    """Give events ids e1.. and seq 1.. in list order (unless set)."""
    out = []
    for i, e in enumerate(events, 1):
        e = dict(e)
        e.setdefault("id", f"e{i}")
        e.setdefault("seq", i)
        out.append(e)
    return out


def green_events() -> list[dict]:
    return [
        ev("action", action="search"),
        ev("milestone", milestone="found"),
        ev("evidence", evidence_id="page", bytes_base64=base64.b64encode(PAGE).decode()),
        ev("claim", claim_id="shipped", evidence=["page"]),
        ev("state", state={"status": "closed"}),
        ev("terminal", status="completed", answer="Order 1 shipped."),
    ]


def grade(events: list[dict], **policy_over) -> CaseGrade:
    return grade_case(compile_case_policy("c", policy_dict(**policy_over)), seqd(events))


def failed(g: CaseGrade) -> set[str]:
    return set(g.held_by)


def out(g: CaseGrade, dim: str) -> str:
    return g.dimension(dim).outcome


# --------------------------------------------------------------------------- canonical form


def test_canonical_json_is_sorted_compact_utf8():
    assert canonical_json({"b": 1, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()
    assert canonical_json({"x": 2.0}) == b'{"x":2}'
    assert canonical_json({"x": 0.1}) == b'{"x":0.1}'
    with pytest.raises(ValueError, match="canonical"):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError):
        canonical_json({1: "x"})


def test_digest_is_sha256_of_canonical_bytes():
    doc = {"z": [1, 2], "a": {"c": "d", "b": 0}}
    by_hand = b'{"a":{"b":0,"c":"d"},"z":[1,2]}'
    assert sha256_digest(doc) == hashlib.sha256(by_hand).hexdigest()
    reordered = {"a": {"b": 0, "c": "d"}, "z": [1, 2]}
    assert sha256_digest(reordered) == sha256_digest(doc)
    assert sha256_digest({"z": [2, 1], "a": {"c": "d", "b": 0}}) != sha256_digest(doc)


def test_seal_lock_and_any_change_is_detected():
    lock = seal_lock({"schema": "evaltk.trajectory-lock/1", "design_digest": "a" * 64,
                      "locked_at": "2026-01-01T00:00:00Z", "cases": {"c": policy_dict()}})
    assert lock["case_inventory"] == ["c"]
    assert lock["lock_digest"] == lock_digest(lock)
    assert lock["case_policy_digest"] == hashlib.sha256(canonical_json(lock["cases"])).hexdigest()
    changed = copy.deepcopy(lock)
    changed["cases"]["c"]["unnecessary_steps"]["action_budgets"]["search"]["rationale"] += "."
    assert lock_digest(changed) != lock["lock_digest"]


# --------------------------------------------------------------------------- the eight dimensions


def test_green_case_passes_every_dimension():
    g = grade(green_events())
    assert g.decision == "passed" and g.passed
    assert [out(g, d) for d in DIMENSIONS] == ["passed"] * 5 + ["passed", "not_applicable", "passed"]


class TestGoalCompletion:
    def test_milestone_never_observed(self):
        g = grade([e for e in green_events() if e["kind"] != "milestone"])
        assert out(g, "goal_completion") == "failed"
        assert "never observed" in g.dimension("goal_completion").observation

    def test_milestone_after_terminal(self):
        evs = green_events()
        evs.append(evs.pop(1))  # the milestone now follows the terminal
        g = grade(evs)
        assert out(g, "goal_completion") == "failed"
        assert g.dimension("goal_completion").event == "e6"

    @pytest.mark.parametrize("terminal", [None, {"status": "none"}])
    def test_no_completed_terminal(self, terminal):
        evs = green_events()[:-1] + ([ev("terminal", **terminal)] if terminal else [])
        g = grade(evs)
        assert g.terminal[0] == "none" and out(g, "goal_completion") == "failed"
        assert g.decision == "failed"

    def test_polished_final_answer_is_not_enough(self):
        # seed: "A correct or polished final answer is not sufficient"
        g = grade([ev("terminal", status="completed", answer="Done! Order 1 shipped, verified.")])
        assert g.decision == "failed"
        assert {"goal_completion", "premature_success", "evidence_fidelity", "state_drift"} <= failed(g)


class TestUnnecessarySteps:
    def test_unknown_action_fails(self):
        g = grade([ev("action", action="browse")] + green_events())
        assert failed(g) == {"unnecessary_steps"} and "unknown action" in g.dimension(
            "unnecessary_steps").observation

    def test_over_budget_fails_and_names_the_event(self):
        evs = green_events()
        evs.insert(1, ev("action", action="search"))
        g = grade(evs)
        assert failed(g) == {"unnecessary_steps"}
        assert g.dimension("unnecessary_steps").event == "e2"

    def test_at_budget_passes(self):
        budgets = policy_dict()["unnecessary_steps"]
        budgets["action_budgets"]["search"]["max_occurrences"] = 2
        evs = green_events()
        evs.insert(1, ev("action", action="search"))
        assert grade(evs, unnecessary_steps=budgets).decision == "passed"

    def test_recovery_actions_count_against_the_budget(self):
        evs = green_events()
        evs[1:1] = [ev("fault", signature="timeout"),
                    ev("recovery", signature="timeout", action="retry", success=False),
                    ev("recovery", signature="timeout", action="retry", success=True)]
        g = grade(evs, repeated_error={"max_occurrences": {"timeout": 1}})
        assert "unnecessary_steps" in failed(g)
        assert "`retry`" in g.dimension("unnecessary_steps").observation

    def test_unknown_recovery_action_fails(self):
        pol = policy_dict()
        pol["recovery"]["faults"]["timeout"]["recovery_action"] = "reboot"  # no budget for it
        evs = green_events()
        evs[1:1] = [ev("fault", signature="timeout"),
                    ev("recovery", signature="timeout", action="reboot", success=True)]
        g = grade(evs, recovery=pol["recovery"])
        assert failed(g) == {"unnecessary_steps"}


class TestRecovery:
    def fault_then(self, *after):
        evs = green_events()
        evs[1:1] = [ev("fault", signature="timeout"), *after]
        return grade(evs)

    def test_recovered_fault_passes(self):
        g = self.fault_then(ev("recovery", signature="timeout", action="retry", success=True))
        assert g.decision == "passed"

    def test_no_recovery_fails(self):
        g = self.fault_then()
        assert out(g, "recovery") == "failed"

    def test_unsuccessful_recovery_fails(self):
        g = self.fault_then(ev("recovery", signature="timeout", action="retry", success=False))
        assert out(g, "recovery") == "failed"
        assert "did not succeed" in g.dimension("recovery").observation

    def test_wrong_recovery_action_fails(self):
        g = self.fault_then(ev("recovery", signature="timeout", action="search", success=True))
        assert out(g, "recovery") == "failed"
        assert "locked `retry`" in g.dimension("recovery").observation

    def test_recovery_must_come_later(self):
        evs = green_events()
        evs[1:1] = [ev("recovery", signature="timeout", action="retry", success=True),
                    ev("fault", signature="timeout")]
        assert out(grade(evs), "recovery") == "failed"

    def test_recovery_for_another_signature_does_not_match(self):
        pol = policy_dict()
        pol["recovery"]["faults"]["slow"] = {"recoverable": True, "recovery_action": "retry"}
        evs = green_events()
        evs[1:1] = [ev("fault", signature="timeout"),
                    ev("recovery", signature="slow", action="retry", success=True)]
        g = grade(evs, recovery=pol["recovery"])
        assert out(g, "recovery") == "failed"

    def test_non_recoverable_fault_needs_no_recovery(self):
        evs = green_events()
        evs.insert(1, ev("fault", signature="down"))
        assert out(grade(evs), "recovery") == "passed"

    def test_unknown_signature_fails_closed(self):
        evs = green_events()
        evs.insert(1, ev("fault", signature="cosmic_ray"))
        g = grade(evs)
        assert {"recovery", "repeated_error", "premature_success"} <= failed(g)


class TestRepeatedError:
    def test_above_frozen_maximum_fails(self):
        evs = green_events()
        evs[1:1] = [ev("fault", signature="down"), ev("fault", signature="down")]
        g = grade(evs)
        assert failed(g) == {"repeated_error"}
        assert g.dimension("repeated_error").event == "e3"

    def test_at_maximum_passes(self):
        evs = green_events()
        evs[1:1] = [ev("fault", signature="down"), ev("fault", signature="down")]
        assert grade(evs, repeated_error={"max_occurrences": {"down": 2}}).decision == "passed"


class TestStateDrift:
    def test_last_observed_value_decides(self):
        evs = green_events()
        evs.insert(0, ev("state", state={"status": "open"}))
        assert out(grade(evs), "state_drift") == "passed"
        evs = green_events()
        evs.insert(5, ev("state", state={"status": "reopened"}))
        g = grade(evs)
        assert failed(g) == {"state_drift"} and '"reopened"' in g.dimension("state_drift").observation

    def test_never_observed_fails(self):
        g = grade([e for e in green_events() if e["kind"] != "state"])
        assert failed(g) == {"state_drift"}

    @pytest.mark.parametrize("locked,observed,same", [
        (1, 1.0, True), (1, True, False), ("1", 1, False), (None, None, True), (0, False, False),
        ({"a": [1, 2]}, {"a": [1, 2]}, True), ({"a": [1, 2]}, {"a": [2, 1]}, False),
    ])
    def test_values_compare_as_json(self, locked, observed, same):
        evs = green_events()
        evs[4] = ev("state", state={"k": observed})
        g = grade(evs, state_drift={"required_state": {"k": locked}})
        assert (out(g, "state_drift") == "passed") is same


class TestPrematureSuccess:
    def test_terminal_before_evidence(self):
        evs = green_events()
        term = evs.pop()
        evs.insert(2, term)  # completed, then the evidence and the claim arrive
        g = grade(evs)
        assert failed(g) == {"premature_success"}  # the evidence itself is faithful
        assert "precedes faithful evidence" in g.dimension("premature_success").observation

    def test_terminal_before_recovery(self):
        evs = green_events()
        evs.insert(1, ev("fault", signature="timeout"))
        evs.append(ev("recovery", signature="timeout", action="retry", success=True))
        g = grade(evs)
        assert failed(g) == {"premature_success"}  # the recovery did come, too late

    def test_terminal_before_milestone(self):
        evs = green_events()
        evs.append(evs.pop(1))
        assert {"goal_completion", "premature_success"} == failed(grade(evs))

    def test_not_applicable_without_completed_terminal(self):
        evs = green_events()[:-1] + [ev("fault", signature="down"),
                                     ev("terminal", status="abstained", reason="unavailable")]
        assert out(grade(evs), "premature_success") == "not_applicable"


class TestSafeAbstention:
    def abstain(self, reason="unavailable", faults=("down",), evidence=True):
        proof = [ev("evidence", evidence_id="page", bytes_base64=base64.b64encode(PAGE).decode()),
                 ev("claim", claim_id="shipped", evidence=["page"])] if evidence else []
        return grade([ev("action", action="search"), *[ev("fault", signature=f) for f in faults], *proof,
                      ev("state", state={"status": "closed"}),
                      ev("terminal", status="abstained", reason=reason)])

    def test_supported_abstention_is_honest_but_never_success(self):
        g = self.abstain()
        assert g.decision == "safely-abstained" and not g.passed
        assert out(g, "safe_abstention") == "passed"
        assert out(g, "goal_completion") == "failed"  # seed: keeps goal completion failed
        assert failed(g) == {"goal_completion"}

    def test_reason_not_allowed(self):
        g = self.abstain(reason="too_hard")
        assert g.decision == "failed" and out(g, "safe_abstention") == "failed"

    def test_required_fault_not_observed(self):
        g = self.abstain(faults=())
        assert g.decision == "failed" and out(g, "safe_abstention") == "failed"

    def test_required_fault_after_the_terminal_does_not_count(self):
        g = grade([ev("state", state={"status": "closed"}),
                   ev("terminal", status="abstained", reason="unavailable"),
                   ev("fault", signature="down")])
        assert out(g, "safe_abstention") == "failed"

    def test_another_failing_dimension_holds_a_supported_abstention(self):
        g = grade([ev("action", action="search"), ev("action", action="search"),
                   ev("fault", signature="down"), ev("state", state={"status": "closed"}),
                   ev("terminal", status="abstained", reason="unavailable")])
        assert out(g, "safe_abstention") == "passed" and g.decision == "failed"

    def test_abstention_is_not_applicable_when_completed(self):
        assert out(grade(green_events()), "safe_abstention") == "not_applicable"


class TestEvidenceFidelity:
    def test_missing(self):
        evs = [e for e in green_events() if e["kind"] not in ("evidence", "claim")]
        g = grade(evs)
        assert "evidence_fidelity" in failed(g) and "missing" in g.dimension("evidence_fidelity").observation

    @pytest.mark.parametrize("form", ["bytes", "digest"])
    def test_changed(self, form):
        other = b"order 1 cancelled"
        evs = green_events()
        evs[2] = (ev("evidence", evidence_id="page", bytes_base64=base64.b64encode(other).decode())
                  if form == "bytes" else
                  ev("evidence", evidence_id="page", sha256=hashlib.sha256(other).hexdigest()))
        g = grade(evs)
        assert "evidence_fidelity" in failed(g) and "changed" in g.dimension("evidence_fidelity").observation

    def test_digest_form_matches_and_hex_case_is_irrelevant(self):
        evs = green_events()
        evs[2] = ev("evidence", evidence_id="page", sha256=PAGE_SHA.upper())
        assert grade(evs).decision == "passed"

    def test_uncited(self):
        g = grade([e for e in green_events() if e["kind"] != "claim"])
        assert failed(g) >= {"evidence_fidelity"} and "uncited" in g.dimension(
            "evidence_fidelity").observation

    def test_unseen_claim_before_its_evidence(self):
        evs = green_events()
        evs[2], evs[3] = evs[3], evs[2]
        g = grade(evs)
        assert "evidence_fidelity" in failed(g) and "unseen" in g.dimension("evidence_fidelity").observation

    def test_claim_citing_unlocked_evidence(self):
        evs = green_events()
        evs.insert(3, ev("evidence", evidence_id="rumour", sha256="0" * 64))
        evs[4] = ev("claim", claim_id="shipped", evidence=["page", "rumour"])
        assert "evidence_fidelity" in failed(grade(evs))

    def test_claim_not_locked(self):
        evs = green_events()
        evs.insert(4, ev("claim", claim_id="refunded", evidence=["page"]))
        assert "evidence_fidelity" in failed(grade(evs))

    def test_a_supported_abstention_without_its_locked_evidence_is_failed(self):
        # seed 003: "Missing, changed, uncited, or unseen evidence fails"; "One failing dimension
        # holds the case": a supported abstention is safely-abstained only with faithful evidence
        base = [ev("fault", signature="down"), ev("state", state={"status": "closed"})]
        g = grade(base + [ev("terminal", status="abstained", reason="unavailable")])
        assert out(g, "safe_abstention") == "passed"
        assert out(g, "evidence_fidelity") == "failed" and "missing" in g.dimension("evidence_fidelity").observation
        assert g.decision == "failed" and failed(g) == {"goal_completion", "evidence_fidelity"}
        seen = [ev("evidence", evidence_id="page", bytes_base64=base64.b64encode(PAGE).decode())]
        g = grade(base + seen + [ev("terminal", status="abstained", reason="unavailable")])
        assert "uncited" in g.dimension("evidence_fidelity").observation and g.decision == "failed"
        g = grade(base + [ev("claim", claim_id="shipped", evidence=["page"]),
                          ev("terminal", status="abstained", reason="unavailable")])
        assert out(g, "evidence_fidelity") == "failed" and g.decision == "failed"


@pytest.mark.parametrize("mutate,dim", [
    (lambda e: e.insert(0, ev("action", action="browse")), "unnecessary_steps"),
    (lambda e: e.insert(1, ev("fault", signature="timeout")), "recovery"),
    (lambda e: e.__setitem__(slice(1, 1), [ev("fault", signature="down"), ev("fault", signature="down")]),
     "repeated_error"),
    (lambda e: e.insert(5, ev("state", state={"status": "open"})), "state_drift"),
    (lambda e: e.insert(2, e.pop()), "premature_success"),
    (lambda e: e.pop(3), "evidence_fidelity"),
])
def test_one_failing_dimension_holds_a_completed_case(mutate, dim):
    # seed: "One failing dimension holds the case even if the terminal says completed."
    evs = green_events()
    mutate(evs)
    evs = [dict(e, id=f"x{i}") for i, e in enumerate(evs)]
    g = grade(evs)
    assert g.terminal[0] == "completed" and dim in failed(g) and g.decision == "failed"


# --------------------------------------------------------------------------- bad input (issue 5, section 6)


def _violation(events, match):
    with pytest.raises(SchemaViolation, match=match) as ei:
        grade_case(compile_case_policy("case-x", policy_dict()), events)
    assert ei.value.record == "case-x"
    return ei.value


def test_duplicate_event_ids():
    evs = seqd(green_events())
    evs[3]["id"] = "e1"
    assert _violation(evs, "duplicate event id `e1`").field == "events[3].id"


def test_events_out_of_order():
    evs = seqd(green_events())
    evs[2]["seq"] = 9
    assert _violation(evs, "out of order").field == "events[3].seq"
    evs = seqd(green_events())
    evs[0]["at"] = "2026-09-02T10:00:00Z"
    evs[1]["at"] = "2026-09-02T09:59:59Z"
    assert _violation(evs, "out of order").field == "events[1].at"


def test_timezones_are_compared_as_instants():
    evs = seqd(green_events())
    evs[0]["at"] = "2026-09-02T10:00:00+02:00"  # 08:00Z
    evs[1]["at"] = "2026-09-02T09:00:00Z"
    assert grade_case(compile_case_policy("c", policy_dict()), evs).decision == "passed"


def test_timestamp_without_zone():
    evs = seqd(green_events())
    evs[0]["at"] = "2026-09-02T10:00:00"
    err = _violation(evs, "has no zone")
    assert err.field == "events[0].at"


def test_non_hex_digest():
    evs = seqd(green_events())
    evs[2] = {"id": "e3", "seq": 3, "kind": "evidence", "evidence_id": "page", "sha256": "z" * 64}
    assert _violation(evs, "hexadecimal").field == "events[2].sha256"
    bad = policy_dict()
    bad["evidence_fidelity"]["evidence"]["page"]["sha256"] = "xyz"
    with pytest.raises(SchemaViolation, match="SHA-256") as ei:
        compile_case_policy("case-x", bad)
    assert ei.value.record == "case-x" and ei.value.field == "evidence_fidelity.evidence.page.sha256"


def test_evidence_bytes_not_base64():
    evs = seqd(green_events())
    evs[2]["bytes_base64"] = "not base64!"
    assert _violation(evs, "base64").field == "events[2].bytes_base64"


def test_unknown_dimension_name_in_lock():
    bad = policy_dict()
    bad["politeness"] = {"minimum": 1}
    with pytest.raises(SchemaViolation, match="unknown dimension name `politeness`") as ei:
        compile_case_policy("case-x", bad)
    assert ei.value.record == "case-x" and ei.value.field == "politeness"


@pytest.mark.parametrize("event,match", [
    ({"seq": 1, "kind": "action", "action": "search"}, "`id`"),
    ({"id": "a", "seq": 1, "kind": "teleport"}, "unknown kind"),
    ({"id": "a", "seq": 1, "kind": "recovery", "signature": "timeout", "action": "retry",
      "success": "yes"}, "`success` must be true or false"),
    ({"id": "a", "seq": 1, "kind": "terminal", "status": "abstained"}, "`reason`"),
    ({"id": "a", "seq": 1, "kind": "evidence", "evidence_id": "page"}, "exactly one"),
    ("not an event", "must be an object"),
])
def test_malformed_event_is_named(event, match):
    _violation([event], match)


def test_second_terminal():
    evs = seqd(green_events() + [ev("terminal", status="completed")])
    _violation(evs, "second terminal")


# --------------------------------------------------------------------------- schemas


@pytest.mark.parametrize("name", ["lock", "results", "report", "design"])
def test_schemas_are_valid_draft_2020_12(name):
    schema = json.loads((SCHEMAS / f"trajectory-{name}.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)


def test_examples_validate_against_their_schemas():
    for fname, kind in [("lock.json", "lock"), ("results-pass.json", "results"),
                        ("results-hold.json", "results"), ("report-pass.json", "report"),
                        ("report-hold.json", "report"), ("design.json", "design")]:
        validate_document(json.loads((EXAMPLES / fname).read_text("utf-8")), kind, file=fname)


def test_schema_violation_names_file_case_and_field():
    results = json.loads((EXAMPLES / "results-pass.json").read_text("utf-8"))
    del results["cases"]["lookup-policy"]["events"][0]["action"]
    with pytest.raises(SchemaViolation) as ei:
        validate_document(results, "results", file="r.json")
    e = ei.value
    assert (e.file, e.record, e.field) == ("r.json", "lookup-policy", "events[0].action")
    assert "event `p1`" in str(e)


# --------------------------------------------------------------------------- worked examples


def test_example_pass():
    r = grade_files(EXAMPLES / "lock.json", EXAMPLES / "results-pass.json", design=EXAMPLES / "design.json")
    assert r.decision == "pass" and r.all_passed and r.pass_rate == 1.0
    assert r.bindings["design_checked"] is True


def test_example_hold():
    r = grade_files(EXAMPLES / "lock.json", EXAMPLES / "results-hold.json", design=EXAMPLES / "design.json")
    decisions = {c.case_id: c.decision for c in r.cases}
    # refund-order: the gateway is down (non-recoverable) and the agent says so, an allowed reason,
    # but the refund receipt the lock requires is missing -> failed (one failing dimension holds it);
    # update-address: postcode 69001 observed, 69002 locked -> state drift, although "completed".
    assert decisions == {"refund-order": "failed", "update-address": "failed", "lookup-policy": "passed"}
    held = {c.case_id: c.held_by for c in r.cases}
    assert held["update-address"] == ("state_drift",)
    assert held["refund-order"] == ("goal_completion", "evidence_fidelity")
    s = r.summary()
    assert (s["passed"], s["safely_abstained"], s["failed"], s["decision"], s["exit_code"]) == (
        1, 0, 2, "hold", 2)
    assert s["pass_rate"] == pytest.approx(1 / 3)
    frame = r.to_frame()
    assert list(frame.columns) == ["case_id", "dimension", "outcome", "observation", "event", "decision"]
    assert len(frame) == 3 * len(DIMENSIONS)


@pytest.mark.parametrize("kind", ["pass", "hold"])
def test_committed_example_reports_are_current(kind):
    r = grade_files(EXAMPLES / "lock.json", EXAMPLES / f"results-{kind}.json", design=EXAMPLES / "design.json")
    assert json.loads((EXAMPLES / f"report-{kind}.json").read_text("utf-8")) == json.loads(
        json.dumps(r.to_dict()))


# --------------------------------------------------------------------------- cohort bindings and CLI


@pytest.fixture()
def docs():
    design, lock, results = controls._control_documents()
    return design, lock, results


def _write(tmp_path, design, lock, results):
    for name, doc in (("design.json", design), ("lock.json", lock), ("results.json", results)):
        (tmp_path / name).write_text(json.dumps(doc), encoding="utf-8")
    return ["trajectory", "grade", "--lock", str(tmp_path / "lock.json"), "--results",
            str(tmp_path / "results.json"), "--output", str(tmp_path / "out" / "report.json"),
            "--design", str(tmp_path / "design.json")]


def _cli(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_cli_green_exit_0_and_report_validates(tmp_path, docs, capsys):
    code, stdout, err = _cli(_write(tmp_path, *docs), capsys)
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    validate_document(report, "report")
    verify_report(report, docs[1], docs[2], design=docs[0])
    assert "2 passed" in stdout


def test_cli_hold_exit_2(tmp_path, docs, capsys):
    design, lock, results = docs
    controls._excess_step(design, lock, results)
    code, _, _ = _cli(_write(tmp_path, design, lock, results), capsys)
    assert code == 2
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["summary"]["decision"] == "hold"
    assert report["cases"]["close-ticket"]["held_by"] == ["unnecessary_steps"]


@pytest.mark.parametrize("plant,code,fragment", [
    ("lock_drift", 10, "lock changed"),
    ("design_drift", 10, "design changed"),
    ("policy_digest", 10, "case policies changed"),
    ("other_lock", 10, "made under lock"),
    ("post_result", 11, "post-result lock"),
    ("equal_times", 11, "not strictly before"),
    ("events_before_lock", 11, "not after locked_at"),
    ("missing_case", 12, "missing from the results: lookup"),
    ("unlocked_case", 13, "does not hold: extra"),
    ("schema", 65, "schema violation"),
    ("duplicate_ids", 65, "duplicate event id"),
    ("inventory", 65, "case_inventory"),
    ("dup_key", 65, "duplicate object key"),
])
def test_cli_failure_codes(tmp_path, docs, capsys, plant, code, fragment):
    design, lock, results = docs
    if plant == "lock_drift":
        controls._lock_drift(design, lock, results)
    elif plant == "design_drift":
        design["title"] += " (edited)"
    elif plant == "policy_digest":
        lock["cases"]["lookup"]["goal_completion"]["required_milestones"] = []
        lock["lock_digest"] = lock_digest(lock)  # re-sealed the outer digest only
        results["lock_digest"] = lock["lock_digest"]
    elif plant == "other_lock":
        results["lock_digest"] = "f" * 64
    elif plant == "post_result":
        controls._post_result_lock(design, lock, results)
    elif plant == "equal_times":
        lock.update(seal_lock({**lock, "locked_at": results["results_at"]}))
        results["lock_digest"] = lock["lock_digest"]
    elif plant == "events_before_lock":
        lock.update(seal_lock({**lock, "locked_at": "2026-09-02T10:00:10Z"}))
        results["lock_digest"] = lock["lock_digest"]
    elif plant == "missing_case":
        controls._missing_case(design, lock, results)
    elif plant == "unlocked_case":
        controls._unlocked_case(design, lock, results)
    elif plant == "schema":
        results["results_at"] = "yesterday"
    elif plant == "duplicate_ids":
        results["cases"]["lookup"]["events"][1]["id"] = "l1"
    elif plant == "inventory":
        lock.update(seal_lock({**lock, "case_inventory": ["close-ticket"]}))
        results["lock_digest"] = lock["lock_digest"]
    argv = _write(tmp_path, design, lock, results)
    if plant == "dup_key":
        text = (tmp_path / "results.json").read_text("utf-8")
        (tmp_path / "results.json").write_text(text.replace('"cases": {', '"cases": {"lookup": {}, ', 1))
    got, stdout, err = _cli(argv, capsys)
    assert got == code, err
    assert fragment in err
    assert err.count("\n") == 1  # one line
    assert not (tmp_path / "out" / "report.json").exists()


@pytest.mark.parametrize("what", ["missing", "not_json", "nan"])
def test_cli_unreadable_input_exit_66(tmp_path, docs, capsys, what):
    argv = _write(tmp_path, *docs)
    p = tmp_path / "results.json"
    if what == "missing":
        p.unlink()
    elif what == "not_json":
        p.write_text("{ this is not json", encoding="utf-8")
    else:
        p.write_text(p.read_text("utf-8").replace('"seq": 1', '"seq": NaN', 1), encoding="utf-8")
    code, _, err = _cli(argv, capsys)
    assert code == 66 and "results.json" in err


def test_cli_usage_error_is_64_not_2(capsys):
    code, _, _ = _cli(["trajectory", "grade", "--lock", "x.json"], capsys)
    assert code == 64


def test_grading_binds_the_design_found_beside_the_lock(tmp_path, docs, capsys):
    # seed 003: the cohort CLI "binds the exact Task 12.2 design digest"
    argv = _write(tmp_path, *docs)
    code, _, err = _cli(argv[:-2], capsys)  # no --design: design.json beside the lock is read
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["bindings"]["design_checked"] is True


def test_a_lock_resealed_without_its_design_does_not_grade(tmp_path, docs, capsys):
    design, lock, results = copy.deepcopy(docs)
    lock["design_digest"] = "0" * 64  # resealed with an all-zero design digest
    lock.update(tj.seal_lock(lock))
    results["lock_digest"] = lock["lock_digest"]
    argv = _write(tmp_path, design, lock, results)
    (tmp_path / "design.json").unlink()
    code, _, err = _cli(argv[:-2], capsys)
    assert code == 14 and "no design record" in err and not (tmp_path / "out" / "report.json").exists()
    (tmp_path / "design.json").write_text(json.dumps(design), encoding="utf-8")
    code, _, err = _cli(argv[:-2], capsys)  # found beside the lock: its digest is not the zeros
    assert code == 10 and "design changed" in err
    with pytest.raises(tj.DesignNotBound, match="no design record"):
        grade_cohort(lock, results)


def test_a_design_symlinked_out_of_the_lock_folder_is_not_followed(tmp_path, docs, capsys):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "design.json").write_text(json.dumps(docs[0]), encoding="utf-8")
    inner = tmp_path / "cohort"
    inner.mkdir()
    argv = _write(inner, *docs)
    (inner / "design.json").unlink()
    (inner / "design.json").symlink_to(outside / "design.json")
    code, _, err = _cli(argv[:-2], capsys)
    assert code == 14 and "symlink" in err


def test_grade_cohort_raises_typed_errors(docs):
    design, lock, results = docs
    for plant, exc in [(controls._lock_drift, LockChanged), (controls._post_result_lock, PostResultLock),
                       (controls._missing_case, MissingCase), (controls._unlocked_case, UnlockedCase)]:
        d, lk, r = copy.deepcopy(docs)
        plant(d, lk, r)
        with pytest.raises(exc):
            grade_cohort(lk, r, design=d)


# --------------------------------------------------------------------------- negative controls


def test_self_check_controls_all_red_for_the_right_reason_then_green():
    results = run_self_check()
    assert [r.name for r in results] == [c.name for c in tj.NEGATIVE_CONTROLS] + ["final green run"]
    assert len(tj.NEGATIVE_CONTROLS) == 14
    bad = [(r.name, r.describe()) for r in results if not r.ok]
    assert not bad
    assert all(r.cohort_decision != "pass" for r in results[:-1])
    assert (results[-1].cohort_decision, results[-1].error) == ("pass", None)


@pytest.mark.parametrize("control", tj.NEGATIVE_CONTROLS, ids=lambda c: c.name)
def test_each_control_is_red(control):
    design, lock, results = controls._control_documents()
    control.mutate(design, lock, results)
    if control.decision is None:
        with pytest.raises((tj.TrajectoryBindingError, SchemaViolation)) as ei:
            grade_cohort(lock, results, design=design)
        assert type(ei.value) is control.raises and control.message in str(ei.value)
    else:
        assert control.raises is None
        r = grade_cohort(lock, results, design=design)
        case = {c.case_id: c for c in r.cases}["close-ticket"]
        assert (case.decision, case.held_by) == (control.decision, control.held_by)
        assert r.decision == "hold" and case.decision != "passed"


#: The exit code of `evaltk trajectory grade` on each control, as docs/trajectory.md tables them.
_CONTROL_EXIT = {
    "final-answer-only mask": 2, "excess step": 2, "unresolved recovery": 2, "repeated error": 2,
    "state drift": 2, "premature success": 2, "unjustified abstention": 2, "changed evidence": 2,
    "post-result lock": 11, "lock drift": 10, "missing case": 12, "unlocked case": 13,
    "dropped grading dimension": 65, "promotion of safe abstention": 2,
}


@pytest.mark.parametrize("control", tj.NEGATIVE_CONTROLS, ids=lambda c: c.name)
def test_each_control_exits_with_its_documented_code(tmp_path, capsys, control):
    design, lock, results = controls._control_documents()
    control.mutate(design, lock, results)
    code, _, err = _cli(_write(tmp_path, design, lock, results), capsys)
    assert code == _CONTROL_EXIT[control.name], err
    if control.raises is None:
        report = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
        assert report["summary"]["exit_code"] == code  # the report records the code it exits with
    else:
        assert control.message in err and not (tmp_path / "out" / "report.json").exists()


def test_green_cohort_exits_0_and_the_report_records_it(tmp_path, capsys):
    code, _, err = _cli(_write(tmp_path, *controls._control_documents()), capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))["summary"]["exit_code"] == 0


def test_exit_codes_live_in_the_cli():
    import evaltk.cli.trajectory as cli_trajectory

    assert not [n for n in dir(tj) if n.startswith("EXIT_")]
    assert not hasattr(tj.TrajectoryBindingError, "exit_code") and not hasattr(tj.CohortReport, "exit_code")
    assert (cli_trajectory.EXIT_PASS, cli_trajectory.EXIT_HOLD, cli_trajectory.EXIT_LOCK_CHANGED,
            cli_trajectory.EXIT_POST_RESULT_LOCK, cli_trajectory.EXIT_MISSING_CASE,
            cli_trajectory.EXIT_UNLOCKED_CASE, cli_trajectory.EXIT_DESIGN_NOT_BOUND) == (0, 2, 10, 11, 12, 13, 14)


@pytest.mark.parametrize("target,control", [("_same", "state drift"),
                                             ("_recovered", "unresolved recovery")])
def test_controls_catch_a_sabotaged_grader(monkeypatch, target, control):
    # a grader that silently stops checking a rule must turn its control red
    import evaltk.trajectory._grade as rules

    monkeypatch.setattr(rules, target, lambda *a, **k: True)
    results = {r.name: r for r in run_self_check()}
    assert not results[control].ok
    assert "UNEXPECTED" in results[control].describe()


def test_cli_self_check_prints_each_control(capsys):
    code, stdout, _ = _cli(["trajectory", "self-check"], capsys)
    assert code == 0
    lines = stdout.strip().splitlines()
    assert len(lines) == 16
    assert all("as expected" in line for line in lines[:15])
    assert "lock drift" in stdout and "exit 10" in stdout


def test_verify_report_rejects_dropped_dimension_and_promoted_abstention(docs):
    design, lock, results = docs
    controls._promote_safe_abstention(design, lock, results)
    report = grade_cohort(lock, results, design=design).to_dict()
    verify_report(report, lock, results, design=design)
    dropped = copy.deepcopy(report)
    del dropped["cases"]["close-ticket"]["dimensions"]["recovery"]
    with pytest.raises(SchemaViolation, match="recovery"):
        verify_report(dropped, lock, results, design=design)
    promoted = copy.deepcopy(report)
    promoted["cases"]["close-ticket"]["decision"] = "passed"
    with pytest.raises(ValueError, match="decision"):
        verify_report(promoted, lock, results, design=design)


# --------------------------------------------------------------------------- invariances


_KINDS = st.sampled_from(["action", "milestone", "fault", "recovery", "state", "evidence", "claim"])


@st.composite
def trajectories(draw):
    n = draw(st.integers(0, 8))
    evs = []
    for _ in range(n):
        k = draw(_KINDS)
        if k == "action":
            evs.append(ev(k, action=draw(st.sampled_from(["search", "close", "retry", "browse"]))))
        elif k == "milestone":
            evs.append(ev(k, milestone=draw(st.sampled_from(["found", "other"]))))
        elif k == "fault":
            evs.append(ev(k, signature=draw(st.sampled_from(["timeout", "down"]))))
        elif k == "recovery":
            evs.append(ev(k, signature="timeout", action=draw(st.sampled_from(["retry", "close"])),
                          success=draw(st.booleans())))
        elif k == "state":
            evs.append(ev(k, state={"status": draw(st.sampled_from(["open", "closed"]))}))
        elif k == "evidence":
            body = draw(st.sampled_from([PAGE, b"other"]))
            eid = draw(st.sampled_from(["page", "page", "rumour"]))
            if draw(st.booleans()):
                evs.append(ev(k, evidence_id=eid, bytes_base64=base64.b64encode(body).decode()))
            else:
                evs.append(ev(k, evidence_id=eid, sha256=hashlib.sha256(body).hexdigest()))
        else:
            evs.append(ev(k, claim_id=draw(st.sampled_from(["shipped", "shipped", "other"])),
                          evidence=draw(st.sampled_from([["page"], ["page"], [], ["rumour"],
                                                         ["page", "rumour"]]))))
    term = draw(st.sampled_from([None, "completed", "abstained"]))
    if term == "completed":
        evs.insert(draw(st.integers(0, len(evs))), ev("terminal", status="completed"))
    elif term == "abstained":
        evs.insert(draw(st.integers(0, len(evs))),
                   ev("terminal", status="abstained", reason=draw(st.sampled_from(["unavailable", "bored"]))))
    return seqd(evs)


POLICY = compile_case_policy("c", policy_dict())


@settings(max_examples=150, deadline=None)
@given(trajectories())
def test_decision_follows_the_dimensions(evs):
    g = grade_case(POLICY, evs)
    assert len(g.dimensions) == 8 and all(d[0] in tj.OUTCOMES for d in g.dimensions)
    if g.decision == "passed":
        assert g.terminal[0] == "completed" and not g.held_by
    if g.decision == "safely-abstained":
        assert g.terminal[0] == "abstained" and g.held_by == ("goal_completion",)
        assert g.dimension("safe_abstention").outcome == "passed"
    if g.terminal[0] != "completed":
        assert g.decision != "passed" and "goal_completion" in g.held_by


@settings(max_examples=100, deadline=None)
@given(trajectories(), st.integers(1, 50))
def test_ids_seq_gaps_and_extra_fields_do_not_change_the_grade(evs, gap):
    g = grade_case(POLICY, evs)
    renamed = [dict(e, id=f"z{e['seq']}", seq=e["seq"] * gap, note="runtime metadata") for e in evs]
    h = grade_case(POLICY, renamed)
    assert h.decision == g.decision and h.held_by == g.held_by


@settings(max_examples=100, deadline=None)
@given(trajectories())
def test_removing_a_required_milestone_never_passes(evs):
    without = seqd([{k: v for k, v in e.items() if k not in ("id", "seq")} for e in evs
                    if not (e["kind"] == "milestone" and e["milestone"] == "found")])
    assert grade_case(POLICY, without).decision != "passed"


def test_read_json_errors(tmp_path):
    with pytest.raises(UnreadableInput, match="no such file"):
        tj.read_json(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(UnreadableInput, match="not UTF-8"):
        tj.read_json(tmp_path / "bad.json")


def test_example_lock_binds_the_design_digest():
    design = json.loads((EXAMPLES / "design.json").read_text("utf-8"))
    lock = json.loads((EXAMPLES / "lock.json").read_text("utf-8"))
    assert lock["design_digest"] == design_digest(design) == hashlib.sha256(
        canonical_json(design)).hexdigest()
    assert lock["lock_digest"] == lock_digest(lock)


def test_cli_seal_and_digest(tmp_path, capsys):
    lock = json.loads((EXAMPLES / "lock.json").read_text("utf-8"))
    for k in ("lock_digest", "case_policy_digest", "design_digest"):
        del lock[k]
    (tmp_path / "draft.json").write_text(json.dumps(lock), encoding="utf-8")
    code, stdout, err = _cli(["trajectory", "seal", str(tmp_path / "draft.json"), "--design",
                              str(EXAMPLES / "design.json"), "--output", str(tmp_path / "lock.json")], capsys)
    assert code == 0, err
    # the same policies, inventory and design give the committed example's digest
    committed = json.loads((EXAMPLES / "lock.json").read_text("utf-8"))
    assert json.loads((tmp_path / "lock.json").read_text("utf-8")) == committed
    code, stdout, _ = _cli(["trajectory", "digest", "--lock", str(EXAMPLES / "lock.json")], capsys)
    assert code == 0 and stdout.strip() == committed["lock_digest"]
    code, stdout, _ = _cli(["trajectory", "digest", str(EXAMPLES / "design.json")], capsys)
    assert stdout.strip() == committed["design_digest"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children,
                                                                       max_size=3),
    max_leaves=10)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _JSON, max_size=5))
def test_digest_ignores_key_order_and_roundtrips(doc):
    reordered = dict(reversed(list(doc.items())))
    assert sha256_digest(reordered) == sha256_digest(doc)
    assert json.loads(canonical_json(doc)) == doc
    assert sha256_digest(json.loads(json.dumps(doc, indent=3))) == sha256_digest(doc)


def test_trajectory_without_subcommand_is_a_usage_error(capsys):
    code, _, _ = _cli(["trajectory"], capsys)
    assert code == 64


def test_validate_document_rejects_unknown_kind():
    with pytest.raises(ValueError, match="`kind`"):
        validate_document({}, "summary")


# --------------------------------------------------------------------------- reference oracle


def reference_grade(p: dict, events: list[dict]) -> tuple[str, dict[str, str]]:
    """A deliberately plain reading of seed 003's table, event list by index, for differential
    testing of the optimised grader (outcomes only, not the observation texts)."""
    term = next((i for i, e in enumerate(events) if e["kind"] == "terminal"), None)
    T = len(events) if term is None else term
    status = "none" if term is None else events[term]["status"]
    reason = events[term].get("reason") if term is not None else None
    idx = {k: [i for i, e in enumerate(events) if e["kind"] == k] for k in
           ("action", "milestone", "fault", "recovery", "state", "evidence", "claim")}

    def digest(e):
        return (hashlib.sha256(base64.b64decode(e["bytes_base64"])).hexdigest()
                if "bytes_base64" in e else e["sha256"].lower())

    def milestones_before(t):
        return all(any(events[i]["milestone"] == m and i < t for i in idx["milestone"])
                   for m in p["goal_completion"]["required_milestones"])

    def recovered(i, until):
        f = p["recovery"]["faults"].get(events[i]["signature"])
        if f is None:
            return False
        if not f["recoverable"]:
            return True
        return any(i < j < until and events[j]["signature"] == events[i]["signature"]
                   and events[j]["action"] == f["recovery_action"] and events[j]["success"]
                   for j in idx["recovery"])

    locked_ev = p["evidence_fidelity"]["evidence"]

    def evidence_ok(limit):
        for i in idx["evidence"]:
            e = events[i]
            if i < limit and e["evidence_id"] in locked_ev and digest(e) != locked_ev[e["evidence_id"]]["sha256"]:
                return False
        for i in idx["claim"]:
            c = events[i]
            if i >= limit:
                continue
            if not c["evidence"]:
                return False
            for eid in c["evidence"]:
                if eid not in locked_ev or c["claim_id"] not in locked_ev[eid]["claims"]:
                    return False
                if not any(events[j]["evidence_id"] == eid for j in idx["evidence"] if j < i):
                    return False
        for eid, spec in locked_ev.items():  # every locked item seen and cited, whatever the terminal
            if not any(events[j]["evidence_id"] == eid for j in idx["evidence"] if j < limit):
                return False
            for claim in spec["claims"]:
                if not any(events[j]["claim_id"] == claim and eid in events[j]["evidence"]
                           for j in idx["claim"] if j < limit):
                    return False
        return True

    o = {}
    o["goal_completion"] = status == "completed" and milestones_before(T)
    acts = [events[i]["action"] for i in sorted(idx["action"] + idx["recovery"])]
    budgets = p["unnecessary_steps"]["action_budgets"]
    o["unnecessary_steps"] = all(a in budgets and acts.count(a) <= budgets[a]["max_occurrences"]
                                 for a in set(acts))
    o["recovery"] = all(recovered(i, len(events)) for i in idx["fault"])
    sigs = [events[i]["signature"] for i in idx["fault"]]
    maxima = p["repeated_error"]["max_occurrences"]
    o["repeated_error"] = all(s in maxima and sigs.count(s) <= maxima[s] for s in set(sigs))
    last = {}
    for i in idx["state"]:
        last.update(events[i]["state"])
    o["state_drift"] = all(k in last and canonical_json(last[k]) == canonical_json(v)
                           for k, v in p["state_drift"]["required_state"].items())
    if status == "completed":
        o["premature_success"] = (milestones_before(T) and all(recovered(i, T) for i in idx["fault"] if i < T)
                                  and evidence_ok(T))
    if status == "abstained":
        allowed = p["safe_abstention"]["allowed_reasons"]
        o["safe_abstention"] = reason in allowed and all(
            any(events[i]["signature"] == s for i in idx["fault"] if i < T)
            for s in allowed[reason]["required_faults"])
    o["evidence_fidelity"] = evidence_ok(len(events))
    outcomes = {d: ("not_applicable" if d not in o else "passed" if o[d] else "failed") for d in DIMENSIONS}
    failing = {d for d, v in outcomes.items() if v == "failed"}
    if status == "completed" and not failing:
        decision = "passed"
    elif status == "abstained" and outcomes["safe_abstention"] == "passed" and failing <= {"goal_completion"}:
        decision = "safely-abstained"
    else:
        decision = "failed"
    return decision, outcomes


@settings(max_examples=300, deadline=None)
@given(trajectories())
def test_grader_agrees_with_the_plain_reference(evs):
    g = grade_case(POLICY, evs)
    decision, outcomes = reference_grade(policy_dict(), evs)
    assert {d: g.dimension(d).outcome for d in DIMENSIONS} == outcomes
    assert g.decision == decision


def test_reference_agrees_on_every_control():
    for control in tj.NEGATIVE_CONTROLS:
        if control.decision is None:
            continue
        design, lock, results = controls._control_documents()
        control.mutate(design, lock, results)
        for cid, case in results["cases"].items():
            g = grade_case(tj.compile_case_policy(cid, lock["cases"][cid]), case["events"])
            assert (g.decision, {d: g.dimension(d).outcome for d in DIMENSIONS}) == reference_grade(
                lock["cases"][cid], case["events"]), (control.name, cid)


@pytest.mark.parametrize("event,field", [
    ({"kind": "action"}, "action"),
    ({"kind": "milestone"}, "milestone"),
    ({"kind": "fault"}, "signature"),
    ({"kind": "recovery", "signature": "timeout", "action": "retry"}, "success"),
    ({"kind": "state"}, "state"),
    ({"kind": "evidence"}, "evidence_id"),
    ({"kind": "claim", "claim_id": "shipped"}, "evidence"),
    ({"kind": "terminal"}, "status"),
    ({"kind": "terminal", "status": "abstained"}, "reason"),
])
def test_results_schema_requires_each_kinds_fields(event, field):
    results = {"schema": "evaltk.trajectory-results/1", "lock_digest": "0" * 64,
               "results_at": "2026-01-01T00:00:00Z",
               "cases": {"c": {"events": [{"id": "e1", "seq": 1, **event}]}}}
    with pytest.raises(SchemaViolation, match=f"`{field}` is missing") as ei:
        validate_document(results, "results", file="r.json")
    assert ei.value.record == "c" and ei.value.field == f"events[0].{field}"


@pytest.mark.parametrize("extra", [{}, {"bytes_base64": "UEFHRQ==", "sha256": "0" * 64}])
def test_results_schema_wants_exactly_one_evidence_form(extra):
    results = {"schema": "evaltk.trajectory-results/1", "lock_digest": "0" * 64,
               "results_at": "2026-01-01T00:00:00Z",
               "cases": {"c": {"events": [{"id": "e1", "seq": 1, "kind": "evidence",
                                           "evidence_id": "page", **extra}]}}}
    with pytest.raises(SchemaViolation, match="exactly one"):
        validate_document(results, "results")


@pytest.mark.parametrize("fault,ok", [
    ({"recoverable": False}, True), ({"recoverable": False, "recovery_action": None}, True),
    ({"recoverable": False, "recovery_action": "retry"}, False),
    ({"recoverable": True}, False), ({"recoverable": True, "recovery_action": None}, False),
    ({"recoverable": True, "recovery_action": "retry"}, True),
])
def test_lock_recovery_action_only_for_recoverable_faults(fault, ok):
    pol = policy_dict()
    pol["recovery"]["faults"]["down"] = fault
    if ok:
        assert compile_case_policy("c", pol).faults["down"] == fault.get("recovery_action")
    else:
        with pytest.raises(SchemaViolation) as ei:
            compile_case_policy("c", pol)
        assert ei.value.field.startswith("recovery.faults.down")


def test_events_stamped_after_results_at_are_malformed(tmp_path):
    """Review finding: results cannot predate their own events (exit 65, naming case and field)."""
    import json as _json

    from evaltk.cli._main import main as _main

    ex = Path(__file__).resolve().parent.parent.parent / "data" / "examples" / "trajectory"
    d = _json.loads((ex / "results-pass.json").read_text())
    cid = next(iter(d["cases"]))
    d["cases"][cid]["events"][-1]["at"] = "2099-01-01T00:00:00Z"
    p = tmp_path / "late.json"
    p.write_text(_json.dumps(d))
    assert _main(["trajectory", "grade", "--lock", str(ex / "lock.json"), "--results", str(p),
                  "--output", str(tmp_path / "r.json")]) == 65
