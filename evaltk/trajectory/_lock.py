"""The lock's vocabulary and the digests that bind it (seed 003, "pre-result authority").

The eight dimension names every case policy must lock, the three decisions, the
canonical JSON serialisation behind every digest, the three digests a cohort binds
(design, case policies, lock) and :func:`seal_lock`, which fills them in when a lock
is authored.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .._io import canonical_json, sha256_digest  # noqa: F401  (re-exported: the trajectory API)

#: The eight dimensions, in the seed's order.  Every case is graded on all eight.
DIMENSIONS: tuple[str, ...] = (
    "goal_completion",
    "unnecessary_steps",
    "recovery",
    "repeated_error",
    "state_drift",
    "premature_success",
    "safe_abstention",
    "evidence_fidelity",
)
#: The three case decisions.  Only ``passed`` is promotion-eligible.
DECISIONS: tuple[str, ...] = ("passed", "safely-abstained", "failed")
#: The outcome of one dimension for one case.
OUTCOMES: tuple[str, ...] = ("passed", "failed", "not_applicable")

_LOCK_SCHEMA_ID = "evaltk.trajectory-lock/1"
_RESULTS_SCHEMA_ID = "evaltk.trajectory-results/1"
_REPORT_SCHEMA_ID = "evaltk.trajectory-report/1"
_PREREQUISITES = ("milestones", "recovered_faults", "faithful_evidence")


# --------------------------------------------------------------------------- canonical form

# canonical_json and sha256_digest live in the foundation (evaltk._io): one home for every digest.


def design_digest(design: Mapping[str, Any]) -> str:
    """Digest of a design record: the SHA-256 of its whole canonical serialisation."""
    return sha256_digest(design)


def case_policy_digest(lock: Mapping[str, Any]) -> str:
    """Digest of the lock's ``cases`` object (the case-policy lock)."""
    return sha256_digest(lock["cases"])


def lock_digest(lock: Mapping[str, Any]) -> str:
    """Digest of the lock: its canonical serialisation without the ``lock_digest`` key."""
    return sha256_digest({k: v for k, v in lock.items() if k != "lock_digest"})


def seal_lock(lock: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``lock`` with ``case_inventory`` (when absent), ``case_policy_digest``
    and ``lock_digest`` filled in.  Use it when authoring a lock, before any result exists.

    Examples
    --------
    >>> sealed = seal_lock({"schema": "evaltk.trajectory-lock/1", "cases": {"a": {}}})
    >>> sealed["case_inventory"], sealed["lock_digest"] == lock_digest(sealed)
    (['a'], True)
    """
    out = copy.deepcopy(dict(lock))
    out.setdefault("case_inventory", sorted(out["cases"]))
    out["case_policy_digest"] = case_policy_digest(out)
    out.pop("lock_digest", None)
    out["lock_digest"] = lock_digest(out)
    return out
