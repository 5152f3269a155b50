"""The judge runner's own time per call, against the server's latency and a bare httpx client.

A chat-completions server (``tests/judges/chat_server.py``, in its own process) answers
every request after a fixed latency.  The same N prompts are sent at 64 concurrent calls

* by a bare ``httpx.AsyncClient`` loop (the peer: post the body, parse the JSON), and
* by ``evaltk.judges.run_judge`` (read the traces, render the rubric in the sandbox, send,
  read the reply into the vocabulary, cost it, commit it to the sqlite cache, build the
  answers table), with a fresh cache, and then again with every grade cached.

Measured in the client process: CPU time per call (``time.process_time``: everything the
client did, httpx and asyncio included, while the server's latency is not CPU time of
this process), wall time per call against the ideal ``latency / concurrency``, and the
latency evaltk recorded per call against the server's.  Target (issue #14): under 2 ms
of evaltk time per call at 64 concurrent calls.

Usage::

    python benchmarks/judge_runner.py [--calls 2048] [--concurrency 64] [--latency-ms 50] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.judges.chat_server", "--port", "0",
                             "--latency-ms", str(latency_ms)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("serving "):
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def traces(n: int) -> list[dict]:
    return [{"trace_id": f"t{i:05d}", "task": f"Turn on do-not-disturb until {i % 24}:00", "status": "complete",
             "steps": [{"index": 0, "action": "open_app", "target": "Settings", "screen": "Home screen: app grid"},
                       {"index": 1, "action": "tap", "target": "Focus", "screen": "Settings: Focus, Sound"},
                       {"index": 2, "action": "finish", "target": None, "screen": f"Do not disturb: on until {i}"}]}
            for i in range(n)]


async def bare_httpx(bodies: list[dict], base_url: str, concurrency: int, pools: int = 1) -> None:
    """Post every body, ``concurrency`` at a time, through ``pools`` httpx clients (worker
    ``w`` always uses pool ``w % pools``), and parse the replies."""
    import httpx

    size = -(-concurrency // pools)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    queue: asyncio.Queue = asyncio.Queue()
    for b in bodies:
        queue.put_nowait(b)
    out: list[str] = []
    clients = [httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) for _ in range(pools)]

    async def worker(w: int) -> None:
        client = clients[w % pools]
        while not queue.empty():
            r = await client.post("/chat/completions", json=queue.get_nowait())
            out.append(r.json()["choices"][0]["message"]["content"])

    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    for c in clients:
        await c.aclose()
    assert len(out) == len(bodies) and all(o == "yes" for o in out)


def measure(fn) -> tuple[float, float, object]:
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2048)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    # the second peer mirrors the client's pools (HTTP_POOL_SIZE connections each)
    from evaltk.judges import HTTP_POOL_SIZE, JudgeConfig, Price, load_rubric, run_judge

    n, c = args.calls, args.concurrency
    rubric = load_rubric("x_task")
    runs = traces(n)
    proc, base_url = start_server(args.latency_ms)
    try:
        judge = JudgeConfig("bench", "bench-model", "1", {"temperature": 0, "max_tokens": 4}, Price(0.15, 0.6),
                            base_url=base_url)
        from evaltk.ingest import read_traces

        facts = read_traces(runs)
        # the peer sends exactly the prompts evaltk sends
        res0 = run_judge(facts, rubric, judge=judge, concurrency=c)  # warm-up (imports, connections)
        assert len(res0.answers) == n
        bodies = [{**judge.decoding, "model": judge.model,
                   "messages": rubric.render({"task": r["task"], "screen": r["steps"][-1]["screen"]})}
                  for r in runs]
        asyncio.run(bare_httpx(bodies[:c], base_url, c))  # warm-up
        pools = -(-c // HTTP_POOL_SIZE)
        rows: dict[str, list[tuple[float, float]]] = {"httpx": [], "httpx_pools": [], "evaltk": [],
                                                      "evaltk_cached": []}
        lat: list[float] = []
        for _ in range(args.reps):
            cpu, wall, _ = measure(lambda: asyncio.run(bare_httpx(bodies, base_url, c)))
            rows["httpx"].append((cpu, wall))
            cpu, wall, _ = measure(lambda: asyncio.run(bare_httpx(bodies, base_url, c, pools)))
            rows["httpx_pools"].append((cpu, wall))
            with tempfile.TemporaryDirectory() as tmp:
                cache = Path(tmp) / "grades.sqlite"
                cpu, wall, res = measure(lambda cache=cache: run_judge(runs, rubric, judge=judge, cache=cache, concurrency=c))
                assert len(res.answers) == n and res.n_calls == n, res.summary()
                rows["evaltk"].append((cpu, wall))
                lat.append(float(res.answers["latency_ms"].median()))
                cpu, wall, res = measure(lambda cache=cache: run_judge(runs, rubric, judge=judge, cache=cache, concurrency=c))
                assert res.n_calls == 0 and res.n_cached == n
                rows["evaltk_cached"].append((cpu, wall))
    finally:
        proc.kill()
        proc.wait()

    def per_call(name: str) -> tuple[float, float]:
        cpu = statistics.median(r[0] for r in rows[name]) / n * 1000
        wall = statistics.median(r[1] for r in rows[name]) / n * 1000
        return cpu, wall

    ideal = args.latency_ms / c
    h_cpu, h_wall = per_call("httpx")
    p_cpu, p_wall = per_call("httpx_pools")
    e_cpu, e_wall = per_call("evaltk")
    k_cpu, k_wall = per_call("evaltk_cached")
    load = os.getloadavg()
    print(f"judge runner: {n} calls, {c} concurrent, server latency {args.latency_ms:g} ms "
          f"(its own process), median of {args.reps} runs; load average {load[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':28}{'CPU ms/call':>12}{'wall ms/call':>14}")
    print(f"{'bare httpx, one pool (peer)':28}{h_cpu:12.3f}{h_wall:14.3f}")
    print(f"{f'bare httpx, {pools} pools':28}{p_cpu:12.3f}{p_wall:14.3f}")
    print(f"{'evaltk run_judge':28}{e_cpu:12.3f}{e_wall:14.3f}")
    print(f"{'evaltk, all from the cache':28}{k_cpu:12.3f}{k_wall:14.3f}")
    print(f"ideal wall per call (latency / concurrency): {ideal:.3f} ms")
    print(f"client time per call with evaltk: {e_cpu:.3f} ms CPU, transport included; target < 2 ms: "
          f"{'met' if e_cpu < 2 else 'NOT met'}")
    print(f"evaltk's own part (beyond httpx in the same pools): {e_cpu - p_cpu:.3f} ms; ratio of evaltk's "
          f"client time to the one-pool httpx peer: {e_cpu / h_cpu:.2f}")
    print(f"median latency evaltk recorded per call: {statistics.median(lat):.1f} ms "
          f"(server latency {args.latency_ms:g} ms)")
    print(json.dumps({"calls": n, "concurrency": c, "latency_ms": args.latency_ms, "httpx_cpu_ms": h_cpu,
                      "httpx_pools_cpu_ms": p_cpu,
                      "evaltk_cpu_ms": e_cpu, "evaltk_cached_cpu_ms": k_cpu, "httpx_wall_ms": h_wall,
                      "evaltk_wall_ms": e_wall, "ideal_wall_ms": ideal, "load1": load[0]}))


if __name__ == "__main__":
    main()
