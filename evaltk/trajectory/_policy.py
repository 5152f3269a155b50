"""A case's pre-result authority: the lock entry under ``cases.<id>`` compiled for grading.

One field per fact a rule in seed 003's table reads (budgets, fault recoverability,
maxima, invariants, allowed abstention reasons, evidence digests and the claims they
support), plus the pass observations that depend only on the policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ._documents import validate_document
from ._lock import _LOCK_SCHEMA_ID


class DimensionOutcome(NamedTuple):
    """One dimension of one case: ``outcome`` (passed / failed / not_applicable), the
    ``observation`` that decided it and the ``event`` id it points at (or None)."""

    outcome: str
    observation: str
    event: str | None


class CasePolicy(NamedTuple):
    """One case's pre-result authority, compiled from the lock for fast grading.

    Build it with :func:`compile_case_policy`; it is immutable.
    """

    case_id: str
    milestones: tuple[str, ...]
    budgets: Mapping[str, int]
    faults: Mapping[str, str | None]
    max_faults: Mapping[str, int]
    required_state: tuple[tuple[str, Any], ...]
    reasons: Mapping[str, tuple[str, ...]]
    evidence: Mapping[str, str]
    evidence_claims: tuple[tuple[str, tuple[str, ...]], ...]
    claim_support: Mapping[str, frozenset[str]]
    evidence_ids: frozenset[str]
    claim_pairs: frozenset[tuple[str, str]]
    goal_pass: str
    state_pass: str
    evidence_pass: str
    #: The pass outcomes that depend only on the policy, built once.
    state_passed: DimensionOutcome
    evidence_passed: DimensionOutcome


def compile_case_policy(case_id: str, policy: Mapping[str, Any]) -> CasePolicy:
    """Compile one case's lock entry (the object under ``cases.<id>``) into a :class:`CasePolicy`.

    The entry is validated against the lock schema's case policy first, so an
    unknown or missing dimension name, a non-hex digest, a negative budget and so
    on raise :class:`~evaltk.errors.SchemaViolation` naming the case and field.
    """
    validate_document(
        {"schema": _LOCK_SCHEMA_ID, "design_digest": "0" * 64, "locked_at": "2000-01-01T00:00:00Z",
         "case_inventory": [case_id], "case_policy_digest": "0" * 64, "cases": {case_id: policy},
         "lock_digest": "0" * 64},
        "lock",
    )
    return _compile(case_id, policy)


def _compile(case_id: str, p: Mapping[str, Any]) -> CasePolicy:
    milestones = tuple(p["goal_completion"]["required_milestones"])
    budgets = {a: int(b["max_occurrences"]) for a, b in p["unnecessary_steps"]["action_budgets"].items()}
    faults = {s: (f["recovery_action"] if f["recoverable"] else None)
              for s, f in p["recovery"]["faults"].items()}
    max_faults = {s: int(m) for s, m in p["repeated_error"]["max_occurrences"].items()}
    required_state = tuple(p["state_drift"]["required_state"].items())
    reasons = {r: tuple(v["required_faults"]) for r, v in p["safe_abstention"]["allowed_reasons"].items()}
    ev = p["evidence_fidelity"]["evidence"]
    evidence = {e: v["sha256"].lower() for e, v in ev.items()}
    evidence_claims = tuple((e, tuple(v["claims"])) for e, v in ev.items())
    support: dict[str, set[str]] = {}
    for e, claims in evidence_claims:
        for c in claims:
            support.setdefault(c, set()).add(e)
    state_pass = (f"the last observed value of all {len(required_state)} required key(s) matches the lock"
                  if required_state else "no terminal invariant is locked")
    evidence_pass = (f"all {len(evidence)} locked evidence item(s) seen with the locked SHA-256 "
                     "before the claims that cite them, and every supported claim cites them"
                     if evidence else "no evidence is locked and no claim was made")
    return CasePolicy(
        case_id=case_id,
        milestones=milestones,
        budgets=budgets,
        faults=faults,
        max_faults=max_faults,
        required_state=required_state,
        reasons=reasons,
        evidence=evidence,
        evidence_claims=evidence_claims,
        claim_support={c: frozenset(es) for c, es in support.items()},
        evidence_ids=frozenset(evidence),
        claim_pairs=frozenset((c, e) for e, cs in evidence_claims for c in cs),
        goal_pass=(f"all {len(milestones)} required milestone(s) occur before the completed terminal"
                   if milestones else "no milestone is locked; the terminal is completed"),
        state_pass=state_pass,
        evidence_pass=evidence_pass,
        state_passed=DimensionOutcome("passed", state_pass, None),
        evidence_passed=DimensionOutcome("passed", evidence_pass, None),
    )
