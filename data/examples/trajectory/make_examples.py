"""Regenerate the worked trajectory example (synthetic contract cases, not a product result).

    .venv/bin/python data/examples/trajectory/make_examples.py

Writes ``design.json``, ``lock.json`` (sealed: its case-policy and lock digests filled
in), ``results-pass.json`` (every case passes: ``evaltk trajectory grade`` exits 0),
``results-hold.json`` (an honest hold: one case abstains for an allowed reason but
without the receipt the lock requires, so it is failed, and one fails on state drift,
exit 2) and the two reports the grader writes for them.  The lock is written
before the results and its ``locked_at`` precedes every result timestamp.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from evaltk.trajectory import design_digest, grade_files, seal_lock

HERE = Path(__file__).resolve().parent
RECEIPT = b"Refund R-7781 for order 5512: 42.00 EUR, status=issued"
POLICY_PAGE = b"Returns policy v3: items may be returned within 30 days of delivery."
PRE = ["milestones", "recovered_faults", "faithful_evidence"]


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def documents() -> tuple[dict, dict, dict, dict]:
    design = {
        "schema": "evaltk.trajectory-design/1",
        "design_id": "support-agent-2026-09",
        "title": "Support agent, long-horizon tasks (worked example)",
        "description": "Synthetic contract cases showing the lock / results / report formats.",
        "families": ["refunds", "account changes", "policy lookup"],
    }
    cases = {
        "refund-order": {
            "goal_completion": {"required_milestones": ["order_located", "refund_issued"]},
            "unnecessary_steps": {"action_budgets": {
                "find_order": {"max_occurrences": 1, "rationale": "the order id is in the request"},
                "issue_refund": {"max_occurrences": 1, "rationale": "a second refund would pay twice"},
                "retry_payment": {"max_occurrences": 2, "rationale": "the gateway rate-limits; two retries"},
            }},
            "recovery": {"faults": {
                "payment_rate_limited": {"recoverable": True, "recovery_action": "retry_payment"},
                "payments_down": {"recoverable": False, "rationale": "no refund path without the gateway"},
            }},
            "repeated_error": {"max_occurrences": {"payment_rate_limited": 2, "payments_down": 1}},
            "state_drift": {"required_state": {"order.duplicate_refunds": 0, "order.customer": "C-204"},
                            "note": "invariants that must hold however the case ends"},
            "premature_success": {"prerequisites": PRE},
            "safe_abstention": {"allowed_reasons": {
                "payments_unavailable": {"required_faults": ["payments_down"],
                                         "rationale": "say so and hand over; never claim a refund"}}},
            "evidence_fidelity": {"evidence": {
                "refund_receipt": {"sha256": _sha(RECEIPT), "claims": ["refund_issued_42_eur"]}}},
        },
        "update-address": {
            "goal_completion": {"required_milestones": ["identity_verified", "address_saved"]},
            "unnecessary_steps": {"action_budgets": {
                "verify_identity": {"max_occurrences": 1, "rationale": "one verification per session"},
                "save_address": {"max_occurrences": 1, "rationale": "one write"},
            }},
            "recovery": {"faults": {}},
            "repeated_error": {"max_occurrences": {}},
            "state_drift": {"required_state": {"account.address.city": "Lyon",
                                               "account.address.postcode": "69002"}},
            "premature_success": {"prerequisites": PRE},
            "safe_abstention": {"allowed_reasons": {}},
            "evidence_fidelity": {"evidence": {}},
        },
        "lookup-policy": {
            "goal_completion": {"required_milestones": ["policy_found"]},
            "unnecessary_steps": {"action_budgets": {
                "search_kb": {"max_occurrences": 2, "rationale": "the policy is in the top two hits"},
            }},
            "recovery": {"faults": {}},
            "repeated_error": {"max_occurrences": {}},
            "state_drift": {"required_state": {}},
            "premature_success": {"prerequisites": PRE},
            "safe_abstention": {"allowed_reasons": {}},
            "evidence_fidelity": {"evidence": {
                "returns_policy": {"sha256": _sha(POLICY_PAGE), "claims": ["return_window_30_days"]}}},
        },
    }
    lock = seal_lock({
        "schema": "evaltk.trajectory-lock/1",
        "lock_id": "support-agent-2026-09/trajectory",
        "design_digest": design_digest(design),
        "locked_at": "2026-09-01T08:00:00Z",
        "case_inventory": ["refund-order", "update-address", "lookup-policy"],
        "cases": cases,
    })

    def at(s: int) -> str:
        return f"2026-09-03T14:{s // 60:02d}:{s % 60:02d}Z"

    refund = [
        {"id": "r1", "seq": 1, "at": at(0), "kind": "action", "action": "find_order"},
        {"id": "r2", "seq": 2, "at": at(2), "kind": "milestone", "milestone": "order_located"},
        {"id": "r3", "seq": 3, "at": at(3), "kind": "action", "action": "issue_refund"},
        {"id": "r4", "seq": 4, "at": at(4), "kind": "fault", "signature": "payment_rate_limited"},
        {"id": "r5", "seq": 5, "at": at(9), "kind": "recovery", "signature": "payment_rate_limited",
         "action": "retry_payment", "success": True},
        {"id": "r6", "seq": 6, "at": at(10), "kind": "state",
         "state": {"order.status": "refunded", "order.duplicate_refunds": 0, "order.customer": "C-204"}},
        {"id": "r7", "seq": 7, "at": at(10), "kind": "milestone", "milestone": "refund_issued"},
        {"id": "r8", "seq": 8, "at": at(11), "kind": "evidence", "evidence_id": "refund_receipt",
         "bytes_base64": _b64(RECEIPT)},
        {"id": "r9", "seq": 9, "at": at(12), "kind": "claim", "claim_id": "refund_issued_42_eur",
         "evidence": ["refund_receipt"]},
        {"id": "r10", "seq": 10, "at": at(12), "kind": "terminal", "status": "completed",
         "answer": "Your refund of 42.00 EUR (R-7781) has been issued."},
    ]
    address = [
        {"id": "a1", "seq": 1, "at": at(30), "kind": "action", "action": "verify_identity"},
        {"id": "a2", "seq": 2, "at": at(31), "kind": "milestone", "milestone": "identity_verified"},
        {"id": "a3", "seq": 3, "at": at(33), "kind": "action", "action": "save_address"},
        {"id": "a4", "seq": 4, "at": at(34), "kind": "state",
         "state": {"account.address.city": "Lyon", "account.address.postcode": "69002"}},
        {"id": "a5", "seq": 5, "at": at(34), "kind": "milestone", "milestone": "address_saved"},
        {"id": "a6", "seq": 6, "at": at(35), "kind": "terminal", "status": "completed",
         "answer": "Your address is now 3 rue Mercière, 69002 Lyon."},
    ]
    lookup = [
        {"id": "p1", "seq": 1, "at": at(60), "kind": "action", "action": "search_kb"},
        {"id": "p2", "seq": 2, "at": at(61), "kind": "evidence", "evidence_id": "returns_policy",
         "sha256": _sha(POLICY_PAGE)},
        {"id": "p3", "seq": 3, "at": at(61), "kind": "milestone", "milestone": "policy_found"},
        {"id": "p4", "seq": 4, "at": at(62), "kind": "claim", "claim_id": "return_window_30_days",
         "evidence": ["returns_policy"]},
        {"id": "p5", "seq": 5, "at": at(62), "kind": "terminal", "status": "completed",
         "answer": "You can return items within 30 days of delivery."},
    ]
    results_pass = {
        "schema": "evaltk.trajectory-results/1",
        "lock_digest": lock["lock_digest"],
        "results_at": "2026-09-03T15:00:00Z",
        "producer": "worked example (synthetic)",
        "cases": {"refund-order": {"events": refund}, "update-address": {"events": address},
                  "lookup-policy": {"events": lookup}},
    }
    # The hold: the payment gateway is down, and the agent says so instead of claiming a refund
    # (an allowed reason, but the locked receipt is missing: failed, seed 003 "missing ...
    # evidence fails"); the address change leaves the postcode unchanged (state drift)
    # although its final answer claims success.
    refund_hold = [
        refund[0], refund[1], refund[2],
        {"id": "r4", "seq": 4, "at": at(4), "kind": "fault", "signature": "payments_down"},
        {"id": "r5", "seq": 5, "at": at(5), "kind": "state",
         "state": {"order.status": "paid", "order.duplicate_refunds": 0, "order.customer": "C-204"}},
        {"id": "r6", "seq": 6, "at": at(6), "kind": "terminal", "status": "abstained",
         "reason": "payments_unavailable",
         "answer": "The payment system is down; I could not issue the refund and passed it to a person."},
    ]
    address_hold = [dict(e) for e in address]
    address_hold[3] = {**address_hold[3], "state": {"account.address.city": "Lyon",
                                                    "account.address.postcode": "69001"}}
    results_hold = {**results_pass, "cases": {
        "refund-order": {"events": refund_hold}, "update-address": {"events": address_hold},
        "lookup-policy": {"events": lookup}}}
    return design, lock, results_pass, results_hold


def main() -> None:
    design, lock, results_pass, results_hold = documents()
    for name, doc in (("design.json", design), ("lock.json", lock),
                      ("results-pass.json", results_pass), ("results-hold.json", results_hold)):
        (HERE / name).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for kind in ("pass", "hold"):
        report = grade_files(HERE / "lock.json", HERE / f"results-{kind}.json", design=HERE / "design.json")
        (HERE / f"report-{kind}.json").write_text(
            json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"results-{kind}.json -> {report.decision}: "
              f"{ {c.case_id: c.decision for c in report.cases} }")


if __name__ == "__main__":
    main()
