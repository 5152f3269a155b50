"""The lock's vocabulary and the digests that bind it (seed 003, "pre-result authority").

The eight dimension names every case policy must lock, the three decisions, the
canonical JSON serialisation behind every digest, the three digests a cohort binds
(design, case policies, lock) and :func:`seal_lock`, which fills them in when a lock
is authored.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

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


def _canon(x: Any, where: str) -> Any:
    """``x`` in canonical form, checked.  Iterative (an explicit stack, children visited in
    document order), so a document as deep as the reading limit allows is never cut short
    by Python's recursion limit."""
    root: list[Any] = [None]
    stack: list[tuple[Any, str, Any, Any]] = [(x, where, root, 0)]
    while stack:
        v, w, parent, key = stack.pop()
        if isinstance(v, dict):
            out: Any = {}
            kids = []
            for k, item in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"{w}: object key {k!r} is not a string.")
                out[k] = None
                kids.append((item, f"{w}.{k}", out, k))
            parent[key] = out
            stack.extend(reversed(kids))
        elif isinstance(v, list | tuple):
            out = [None] * len(v)
            parent[key] = out
            stack.extend((v[i], f"{w}[{i}]", out, i) for i in range(len(v) - 1, -1, -1))
        elif isinstance(v, bool) or v is None or isinstance(v, str | int):
            parent[key] = v
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError(f"{w}: {v!r} has no canonical JSON form.")
            parent[key] = int(v) if v.is_integer() else v
        else:
            raise TypeError(f"{w}: {type(v).__name__} is not a JSON value.")
    return root[0]


def canonical_json(obj: Any) -> bytes:
    """The canonical serialisation every trajectory digest is computed over.

    UTF-8 bytes of JSON with object keys sorted by Unicode code point, no
    whitespace (separators ``,`` and ``:``), non-ASCII characters written as
    themselves (``ensure_ascii=False``; only ``"``, ``\\`` and control characters
    are escaped), integers in plain decimal, a float with an integral value written
    as that integer (``2.0`` as ``2``), other floats in Python's shortest
    round-trip form (``0.1``, ``1e-07``); NaN and infinities are refused.  Arrays
    keep their order.

    Examples
    --------
    >>> canonical_json({"b": [1, 2.0], "a": "é"})
    b'{"a":"\\xc3\\xa9","b":[1,2]}'
    """
    return json.dumps(
        _canon(obj, "$"), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_digest(obj: Any) -> str:
    """Lower-case hex SHA-256 of :func:`canonical_json` of ``obj``.

    Examples
    --------
    >>> sha256_digest({})
    '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a'
    """
    return hashlib.sha256(canonical_json(obj)).hexdigest()


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
