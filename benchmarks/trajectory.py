"""Seed 003's frozen grader-performance check, run exactly.

1,000 warm-up grades, then four measured batches of 5,000 independent six-event
synthetic grades, all through :func:`evaltk.trajectory.grade_case` (the function
``evaltk trajectory grade`` calls for every case; no special path).  Prints the
worst batch's grades per second and the largest growth of the process's resident
high-water mark while a batch is graded (VmHWM, reset after the batch was generated:
``benchmarks/_memory.py``; not ``ru_maxrss``, which Linux keeps across exec), with
the seed's floor (5,000 grades/s, 128 MiB) and the project's target (100,000 grades/s,
16 MiB).

There is no peer library that grades trajectories; the peer measured in the same run
is ``jsonschema`` validating the same six-event case against the results schema's
event definition (what a grader that validated every case with jsonschema would pay
before grading anything).  The ratio grades/s : validations/s is printed.

Each batch's trajectories are generated before its timer starts and dropped after;
generation is not timed.  The grades are independent: each call gets its own
trajectory (mixed outcomes: passes, excess steps, changed evidence, state drift,
premature success, supported and unsupported abstentions) and nothing is cached
between calls.  The retained number is grader-overhead evidence only: not agent
latency, model quality or provider latency.

Run: ``.venv/bin/python benchmarks/trajectory.py`` (add ``--json`` for a JSON line).
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import json
import os
import random
import sys
import time

from _memory import PeakGrowth

from evaltk.trajectory import compile_case_policy, grade_case

WARMUP = 1_000
BATCHES = 4
BATCH_SIZE = 5_000
SEED_FLOOR_GRADES_PER_S = 5_000
SEED_FLOOR_RSS_MIB = 128
TARGET_GRADES_PER_S = 100_000
TARGET_RSS_MIB = 16

_BYTES = b"synthetic evidence page: order 1 shipped"
_SHA = hashlib.sha256(_BYTES).hexdigest()

POLICY = compile_case_policy("bench", {
    "goal_completion": {"required_milestones": ["order_found"]},
    "unnecessary_steps": {"action_budgets": {
        "lookup_order": {"max_occurrences": 1, "rationale": "one lookup finds the order"},
        "retry_lookup": {"max_occurrences": 1, "rationale": "one retry after a timeout"}}},
    "recovery": {"faults": {"timeout": {"recoverable": True, "recovery_action": "retry_lookup"},
                            "store_down": {"recoverable": False}}},
    "repeated_error": {"max_occurrences": {"timeout": 1, "store_down": 1}},
    "state_drift": {"required_state": {"order.status": "shipped"}},
    "premature_success": {"prerequisites": ["milestones", "recovered_faults", "faithful_evidence"]},
    "safe_abstention": {"allowed_reasons": {"store_unavailable": {"required_faults": ["store_down"]}}},
    "evidence_fidelity": {"evidence": {"order_page": {"sha256": _SHA, "claims": ["order_shipped"]}}},
})


def _trajectory(rng: random.Random, k: int) -> list[dict]:
    """One six-event trajectory; the variant and the payload bytes vary per grade."""
    v = rng.randrange(8)
    body = _BYTES if v != 2 else _BYTES + str(k).encode()  # variant 2: changed evidence
    ev = [
        {"id": f"{k}-1", "seq": 1, "kind": "action", "action": "lookup_order"},
        {"id": f"{k}-2", "seq": 2, "kind": "milestone", "milestone": "order_found"},
        {"id": f"{k}-3", "seq": 3, "kind": "evidence", "evidence_id": "order_page",
         "bytes_base64": base64.b64encode(body).decode("ascii")},
        {"id": f"{k}-4", "seq": 4, "kind": "claim", "claim_id": "order_shipped", "evidence": ["order_page"]},
        {"id": f"{k}-5", "seq": 5, "kind": "state",
         "state": {"order.status": "shipped" if v != 3 else "pending"}},  # variant 3: drift
        {"id": f"{k}-6", "seq": 6, "kind": "terminal", "status": "completed"},
    ]
    if v == 1:  # excess step
        ev[1] = {"id": f"{k}-2", "seq": 2, "kind": "action", "action": "lookup_order"}
    elif v == 4:  # premature success: the terminal comes before the evidence
        ev[2], ev[5] = {**ev[5], "seq": 3}, {**ev[2], "seq": 6}
        ev[3], ev[5] = {**ev[5], "seq": 4}, {**ev[3], "seq": 6}
    elif v == 5:  # supported abstention
        ev[1] = {"id": f"{k}-2", "seq": 2, "kind": "fault", "signature": "store_down"}
        ev[5] = {"id": f"{k}-6", "seq": 6, "kind": "terminal", "status": "abstained",
                 "reason": "store_unavailable"}
    elif v == 6:  # fault recovered
        ev[0] = {"id": f"{k}-1", "seq": 1, "kind": "fault", "signature": "timeout"}
        ev[1] = {"id": f"{k}-2", "seq": 2, "kind": "recovery", "signature": "timeout",
                 "action": "retry_lookup", "success": True}
    return ev


def _batch(seed: int, n: int) -> list[list[dict]]:
    rng = random.Random(seed)
    return [_trajectory(rng, seed * 100_000 + k) for k in range(n)]


def _timed(trajectories: list[list[dict]]) -> tuple[float, float, dict[str, int], float | None]:
    """Wall-clock seconds (the seed's measure), process CPU seconds, the decisions, and the peak
    resident growth while grading (VmHWM, reset after the batch was generated)."""
    decisions: dict[str, int] = {}
    g = grade_case
    pol = POLICY
    gc.collect()
    with PeakGrowth() as mem:
        c0 = time.process_time()
        t0 = time.perf_counter()
        for events in trajectories:
            d = g(pol, events).decision
            decisions[d] = decisions.get(d, 0) + 1
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dt, cpu, decisions, mem.mib


def _peer(trajectories: list[list[dict]]) -> float:
    """jsonschema validating the same cases against the results schema (validations/s)."""
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("evaltk").joinpath("schemas",
        "trajectory-results.schema.json").read_text("utf-8"))
    case_schema = {"$defs": schema["$defs"], "type": "object",
                   "properties": {"events": {"type": "array", "items": {"$ref": "#/$defs/event"}}}}
    v = jsonschema.Draft202012Validator(case_schema)
    t0 = time.perf_counter()
    for events in trajectories:
        v.validate({"events": events})
    return len(trajectories) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="also print one JSON line")
    args = ap.parse_args(argv)

    _timed(_batch(0, WARMUP))
    rates = []
    cpu_rates = []
    growths: list[float] = []
    totals: dict[str, int] = {}
    for b in range(1, BATCHES + 1):
        trajectories = _batch(b, BATCH_SIZE)
        dt, cpu, decisions, grew = _timed(trajectories)
        rates.append(BATCH_SIZE / dt)
        cpu_rates.append(BATCH_SIZE / cpu if cpu > 0 else float("inf"))
        if grew is not None:
            growths.append(grew)
        for k, v in decisions.items():
            totals[k] = totals.get(k, 0) + v
        del trajectories
    if not growths:
        raise SystemExit("no /proc/self/status here: this benchmark measures memory from VmHWM (Linux)")
    rss_growth = max(growths)
    worst = min(rates)
    peer = _peer(_batch(99, 1_000))

    print(f"trajectory grading, seed 003 frozen check: {WARMUP} warm-up grades, {BATCHES} batches of "
          f"{BATCH_SIZE} six-event grades through evaltk.trajectory.grade_case")
    for i, (r, c) in enumerate(zip(rates, cpu_rates, strict=True), 1):
        print(f"  batch {i}: {r:>10,.0f} grades/s wall clock  ({c:,.0f} per CPU-second of this process)")
    print(f"  decisions over the measured batches: {dict(sorted(totals.items()))}")
    print(f"worst batch: {worst:,.0f} grades/s  (seed floor {SEED_FLOOR_GRADES_PER_S:,}: "
          f"x{worst / SEED_FLOOR_GRADES_PER_S:.1f}; target {TARGET_GRADES_PER_S:,}: "
          f"x{worst / TARGET_GRADES_PER_S:.2f})")
    print(f"peak resident growth while grading (VmHWM): {rss_growth:.1f} MiB  (seed ceiling {SEED_FLOOR_RSS_MIB} MiB, "
          f"target < {TARGET_RSS_MIB} MiB)")
    print(f"peer, jsonschema validating the same case: {peer:,.0f} validations/s; "
          f"grader / peer = x{worst / peer:.1f}")
    seed_ok = worst >= SEED_FLOOR_GRADES_PER_S and rss_growth <= SEED_FLOOR_RSS_MIB
    target_ok = worst >= TARGET_GRADES_PER_S and rss_growth < TARGET_RSS_MIB
    print(f"seed floor: {'met' if seed_ok else 'NOT met'}; project target: {'met' if target_ok else 'NOT met'}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(load average at the end: {load:.2f} on {os.cpu_count()} CPUs; wall-clock rates fall when "
          "other jobs share the cores, CPU-second rates much less)")
    if args.json:
        print(json.dumps({"worst_grades_per_s": worst, "batch_grades_per_s": rates,
                          "batch_grades_per_cpu_s": cpu_rates,
                          "max_rss_growth_mib": rss_growth, "peer_jsonschema_per_s": peer,
                          "seed_floor_met": seed_ok, "target_met": target_ok}))
    return 0 if seed_ok else 1


if __name__ == "__main__":
    sys.exit(main())
