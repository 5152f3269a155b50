"""``memory_limit`` bounds the DuckDB engine's whole scoring phase, not only DuckDB's SQL (issue 19).

The limit covers this process plus its worker processes: partitions are admitted largest
first, the first alone, and the worker peak measured on it (VmHWM) sets how many run at
once; a watchdog kills the workers when the resident total passes the limit and the run is
refused (``LimitExceeded``, exit 65) naming the partition.  The id check and the shuffle of
shared answers run DuckDB in this process: it gets half of what the limit leaves, watched the
same way, and a phase that cannot fit is refused naming it.  The limits below are computed
from memory measured in the test (this process's size, a worker's peak), never typed in.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

pytest.importorskip("duckdb", reason="the DuckDB engine needs the `scale` extra")
psutil = pytest.importorskip("psutil", reason="watching the worker processes needs psutil")

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.errors import LimitExceeded  # noqa: E402
from evaltk.scale import score_dataset  # noqa: E402
from evaltk.scale._scale import _proc_status, _size_bytes  # noqa: E402

from .conftest import ROOT, count_files, write_parts  # noqa: E402

pytestmark = pytest.mark.slow  # starts worker processes


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("mem") / "store", make_demo(n_traces=600, rng=5), 4)


class Watch:
    """Every 20 ms: the resident size of this process plus its descendants, and per descendant
    its VmHWM, its parent and whether it was using CPU (two workers at once: two partitions)."""

    def __init__(self) -> None:
        self.total = 0
        self.hwm: dict[int, int] = {}
        self.cpu: dict[int, float] = {}
        self.parent: dict[int, int] = {}
        self.busy: list[set[int]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = me.memory_info().rss
            busy = set()
            for c in me.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    total += c.memory_info().rss
                    t = c.cpu_times()
                    now = t.user + t.system
                    if now - self.cpu.get(c.pid, now) > 0.005:
                        busy.add(c.pid)
                    self.cpu[c.pid] = now
                    self.parent[c.pid] = c.ppid()
                    self.hwm[c.pid] = max(self.hwm.get(c.pid, 0), _proc_status(c.pid, "VmHWM"))
            self.busy.append(busy)
            self.total = max(self.total, total)
            time.sleep(0.02)

    @property
    def workers(self) -> set[int]:
        """The workers: leaf processes forked by the forkserver.  Not the forkserver (their parent:
        only imports and forks), nor a leaf child of this process (the resource tracker, a server
        another test's fixture started)."""
        me = os.getpid()
        return {p for p in set(self.cpu) - set(self.parent.values()) if self.parent[p] != me}

    @property
    def overlap(self) -> bool:
        return any(len(b & self.workers) >= 2 for b in self.busy)

    def __enter__(self) -> Watch:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def _mib(b: float) -> str:
    return f"{int(b // 2**20)}MiB"


def test_size_reading():
    assert _size_bytes("4GB") == 4 * 10**9
    assert _size_bytes("512MiB") == 512 * 2**20
    assert _size_bytes(" 1.5 GiB ") == int(1.5 * 2**30)


def _admitted(store, out, limit):
    gc.collect()
    with Watch() as w:
        res = score_dataset(store / "traces", store / "answers", store / "labels.csv", out=out,
                            engine="duckdb", n_workers=2, memory_limit=limit)
    return res, w


def test_the_limit_sets_how_many_partitions_run_at_once(store, tmp_path):
    ref = score_dataset(store / "traces", store / "answers", store / "labels.csv", out=tmp_path / "ref")
    # a limit far above need: the engine records what it measured when it admitted the second partition
    # (the rest of the process tree, the first partition's worker peak), the same measures it will use
    # under a tight limit.  Sizing the limit from them, not from memory this test measured at another
    # moment, keeps the decision away from the noise of a shared machine (another pytest process).
    cal, _ = _admitted(store, tmp_path / "cal", "1000GiB")
    first = cal.memory["admissions"][0]
    assert first.width == 2 and first.worker_peak > 0, cal.memory
    rest, peak = first.rest, first.worker_peak
    # room for one worker's peak and a half: one partition at a time, and the total stays under the limit
    limit = _mib(rest + peak * 3 // 2)
    res, one = _admitted(store, tmp_path / "one", limit)
    assert [a.width for a in res.memory["admissions"]] == [1], (limit, res.memory)
    assert not one.overlap, "two partitions ran at once although the limit holds one"
    assert one.total <= _size_bytes(limit), (one.total, limit)
    pd.testing.assert_frame_equal(res.summary.to_frame(), ref.summary.to_frame(), check_exact=False, rtol=1e-12)
    for k in range(4):
        a = pd.read_parquet(tmp_path / "ref" / "scores" / f"part-{k}.parquet")
        b = pd.read_parquet(tmp_path / "one" / "scores" / f"part-{k}.parquet")
        pd.testing.assert_frame_equal(a, b)
    # room for three peaks: both workers admitted
    res, two = _admitted(store, tmp_path / "two", _mib(rest + peak * 3))
    assert [a.width for a in res.memory["admissions"]] == [2], res.memory
    # two worker processes exist only when two partitions were admitted at once; both scored
    assert len(two.workers) >= 2 and len([p for p in two.workers if two.cpu[p] > 0.1]) >= 2, two.cpu


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Two partitions: scored one after the other unless the first has a companion."""
    return write_parts(tmp_path_factory.mktemp("pair") / "store", make_demo(n_traces=600, rng=7), 2)


def _same_scores(a, b, keys):
    for k in keys:
        pd.testing.assert_frame_equal(pd.read_parquet(a / "scores" / f"{k}.parquet"),
                                      pd.read_parquet(b / "scores" / f"{k}.parquet"))


def test_far_below_the_limit_the_first_partition_has_a_companion(pair, tmp_path):
    """A limit far off: the first partition does not run alone (two partitions at once before any
    worker peak is measured), and the scores are the same."""
    ref = score_dataset(pair / "traces", pair / "answers", pair / "labels.csv", out=tmp_path / "ref")
    res, w = _admitted(pair, tmp_path / "far", "1000GiB")
    sizes = {k: sum(os.path.getsize(pair / d / f"{k}.{x}") for d, x in (("traces", "jsonl"), ("answers", "csv")))
             for k in ("part-0", "part-1")}
    (c,) = res.memory["companions"]
    assert c.stopped_at is None, res.memory
    assert c.key == min(sizes, key=lambda k: (sizes[k], k)), (c, sizes)  # the second largest: taken second
    assert w.overlap, "the two partitions ran one after the other"
    assert res.n_partitions == 2 and res.summary.to_frame().equals(ref.summary.to_frame())
    _same_scores(tmp_path / "ref", tmp_path / "far", ("part-0", "part-1"))


def test_near_the_limit_the_first_partition_runs_alone(pair, tmp_path):
    cal, _ = _admitted(pair, tmp_path / "cal", "1000GiB")
    first = cal.memory["admissions"][0] if cal.memory["admissions"] else None
    peak = cal.memory["worker"]
    rest = first.rest if first is not None else _tree_rss()
    res, w = _admitted(pair, tmp_path / "near", _mib(rest + peak * 3))  # under 8 workers' start: no companion
    assert res.memory["companions"] == (), res.memory
    assert not w.overlap, "two partitions ran at once before a worker peak was measured"


def test_a_companion_past_its_share_is_stopped_and_scored_later(pair, tmp_path, monkeypatch):
    """The watchdog stops the companion once the total passes its share of the room (here: at
    once, a share of 0): the first partition keeps running, the companion's partition is scored
    after it, nothing it left behind stays, and the result is the same as without a limit."""
    from evaltk.scale import _scale

    ref = score_dataset(pair / "traces", pair / "answers", pair / "labels.csv", out=tmp_path / "ref")
    monkeypatch.setattr(_scale, "_COMPANION_SHED", 0.0)
    res, _ = _admitted(pair, tmp_path / "shed", "1000GiB")
    (c,) = res.memory["companions"]  # stopped: no other companion after it
    assert c.stopped_at is not None and c.stopped_at > 0, res.memory
    assert res.n_partitions == 2 and res.summary.to_frame().equals(ref.summary.to_frame())
    _same_scores(tmp_path / "ref", tmp_path / "shed", ("part-0", "part-1"))
    assert (tmp_path / "shed" / "_complete.json").is_file()
    assert not [f for f in (tmp_path / "shed").rglob("*") if f.name.endswith(".tmp")]


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """One large partition and three small ones (3,000 and 100 traces each)."""
    demo = make_demo(n_traces=3300, rng=11)
    root = tmp_path_factory.mktemp("uneven") / "store"
    traces = list(demo.traces)
    (root / "traces").mkdir(parents=True)
    (root / "answers").mkdir()
    for i, (a, b) in enumerate(((0, 3000), (3000, 3100), (3100, 3200), (3200, 3300))):
        chunk = traces[a:b]
        (root / "traces" / f"part-{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk))
        ids = {str(r["trace_id"]) for r in chunk}
        demo.answers[demo.answers["trace_id"].astype(str).isin(ids)].to_csv(root / "answers" / f"part-{i}.csv",
                                                                             index=False)
    return root


def test_until_the_largest_partition_is_measured_companions_run_beside_it_one_at_a_time(uneven, tmp_path):
    """A small companion finishes long before the large first partition: the next small one
    becomes the companion (stoppable like the first), not a partition admitted on the small
    one's peak, which would say nothing of the large one's (the width is set only once the
    largest is measured).  All three small partitions are scored beside the large one."""
    ref = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "ref")
    gc.collect()
    with Watch() as w:
        res = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "out", engine="duckdb",
                            n_workers=2, memory_limit="1000GiB")
    comps = res.memory["companions"]
    assert [c.stopped_at for c in comps] == [None] * 3, res.memory
    assert sorted(c.key for c in comps) == ["part-1", "part-2", "part-3"], res.memory
    assert res.memory["admissions"] == (), res.memory  # nothing was left to admit once the first was measured
    assert not any(len(b & w.workers) > 2 for b in w.busy), "more than two partitions ran at once"
    assert res.summary.to_frame().equals(ref.summary.to_frame())
    _same_scores(tmp_path / "ref", tmp_path / "out", ("part-0", "part-1", "part-2", "part-3"))


@pytest.fixture
def late_stop(monkeypatch):
    """Past the companion's threshold just as it has finished: once ``concurrent.futures.wait``
    returns a finished partition while a companion is live and another partition still runs
    (the companion, beside the large first one), the threshold drops to 1 and this thread waits
    until the watchdog has taken it (it lifts the threshold before it stops a companion), so the
    watchdog acts before the finished companion is taken.  The budget is the engine's own, seen
    through a wrapper of its constructor that changes nothing."""
    import concurrent.futures as cf

    from evaltk.scale import _scale

    budgets, fired = [], []
    init = _scale._MemoryBudget.__init__

    def seen(self, *a, **k):
        init(self, *a, **k)
        budgets.append(self)

    wait = cf.wait

    def late(fs, *a, **k):
        done, pending = wait(fs, *a, **k)
        if budgets and budgets[-1].shed_above is not None and pending and not fired:
            fired.append(1)
            budgets[-1].shed_above = 1
            t = time.monotonic() + 5.0
            while budgets[-1].shed_above is not None and time.monotonic() < t:
                time.sleep(0.005)
            time.sleep(0.05)  # the stop itself: a /proc read or two and the kill
        return done, pending

    monkeypatch.setattr(_scale._MemoryBudget, "__init__", seen)
    monkeypatch.setattr(cf, "wait", late)
    return fired


def test_a_stop_that_comes_after_the_companion_finished_leaves_it_and_its_pool_alone(uneven, tmp_path, late_stop):
    """The companion's process is idle once it has finished: stopping it would save nothing and
    break the pool the next companion is sent to (which raised ``BrokenProcessPool`` and ended
    the run).  The watchdog's stop sees the finished future and leaves it."""
    ref = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "ref")
    res = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "out", engine="duckdb",
                        n_workers=2, memory_limit="1000GiB")
    assert late_stop, "the stop was never provoked"
    comps = res.memory["companions"]
    # not stopped, and its pool kept: the next small partition went to it as a companion (a
    # stopped one, even scored, ends the companions: the room is tight)
    assert len(comps) >= 2 and [c.stopped_at for c in comps] == [None] * len(comps), res.memory
    assert res.summary.to_frame().equals(ref.summary.to_frame())
    _same_scores(tmp_path / "ref", tmp_path / "out", ("part-0", "part-1", "part-2", "part-3"))


def test_a_companion_stopped_as_it_sent_its_result_is_kept_and_its_broken_pool_is_dropped(uneven, tmp_path,
                                                                                          late_stop, monkeypatch):
    """The one window the stop cannot see: the companion has sent its result and its future is
    not done yet, so the kill lands on its idle process.  Its partition is scored (kept), its pool
    is broken, so no partition is sent to it, and no other companion follows (the room is tight).
    The window is opened here by a future that reads as not done to the watchdog's stop once, and
    late: the main thread must not take the finish and start the next companion meanwhile (the
    kill would then hit that one, in the same process, and end the run)."""
    import concurrent.futures as cf

    done, lied = cf.Future.done, []

    def done_late(self):
        if not lied and sys._getframe(1).f_code.co_name == "shed" and done(self):
            lied.append(1)
            time.sleep(0.3)  # long enough for the main thread to take the finish and start the next
            return False     # companion in the same process, were the stop not holding them off
        return done(self)

    monkeypatch.setattr(cf.Future, "done", done_late)
    ref = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "ref")
    res = score_dataset(uneven / "traces", uneven / "answers", out=tmp_path / "out", engine="duckdb",
                        n_workers=2, memory_limit="1000GiB")
    assert late_stop and lied, "the stop was never provoked"
    (c,) = res.memory["companions"]  # scored; none after it
    assert c.stopped_at is None, res.memory
    assert res.n_partitions == 4 and res.summary.to_frame().equals(ref.summary.to_frame())
    _same_scores(tmp_path / "ref", tmp_path / "out", ("part-0", "part-1", "part-2", "part-3"))
    assert not [f for f in (tmp_path / "out").rglob("*") if f.name.endswith(".tmp")]


def test_a_stopped_workers_temporaries_are_removed_and_nothing_else(tmp_path):
    from evaltk._io import _temp_name
    from evaltk.scale._scale import _remove_temporaries

    kept = []
    for key in ("week=1/part-0", "week=1/part-01", "week=1/part-0.parquet.x", "week=1/part-0.json.y"):
        for rel in ("scores/{}.parquet", "runs/{}.parquet", "ledger/{}.parquet", "summaries/{}.json",
                    "_partitions/{}.json"):
            final = tmp_path / rel.format(key)
            final.parent.mkdir(parents=True, exist_ok=True)
            final.write_text("x")
            tmp = _temp_name(final)
            kept += [final] if key.endswith("-0") else [final, tmp]
    _remove_temporaries(str(tmp_path), "week=1/part-0")
    assert sorted(f for f in tmp_path.rglob("*") if f.is_file()) == sorted(kept)


def _worker_size(env=None):
    """The resident size of a fresh process that imports what a worker imports (bytes)."""
    probe = subprocess.run([sys.executable, "-c", "import evaltk.cli, evaltk.scale, duckdb, pandas, pyarrow;"
                            "print(open('/proc/self/status').read())"], capture_output=True, text=True, env=env)
    return next(int(x.split()[1]) * 1024 for x in probe.stdout.splitlines() if x.startswith("VmRSS:"))


def test_a_partition_that_cannot_fit_is_refused_by_name(store, tmp_path):
    out = tmp_path / "out"
    # half a worker's size above this process: what this process adds before the budget is made
    # (partition discovery) fits in it, and the forkserver and a worker each hold a whole worker's
    # imports, so the first partition cannot fit.  No DuckDB phase before the scoring (no shared
    # labels to shuffle, no id check): they are bounded too (the tests at the end of this file)
    limit = _proc_status("self", "VmRSS") + _worker_size() // 2
    with pytest.raises(LimitExceeded) as e:
        score_dataset(store / "traces", store / "answers", out=out, engine="duckdb", check_ids=False,
                      n_workers=2, memory_limit=_mib(limit))
    assert e.value.limit == "memory_limit"
    msg = str(e.value)
    assert "cannot hold the scoring of partition" in msg and "part-" in msg and "Raise memory_limit" in msg
    assert e.value.file is not None and os.path.basename(e.value.file).startswith("part-")
    at_raise = count_files(out)
    time.sleep(1.0)
    assert count_files(out) == at_raise and not (out / "_complete.json").exists()


def test_a_limit_below_this_process_is_refused_before_scoring(store, tmp_path):
    with pytest.raises(LimitExceeded, match="before any partition is scored"):
        score_dataset(store / "traces", store / "answers", out=tmp_path / "out", engine="duckdb", n_workers=2,
                      memory_limit=_mib(_proc_status("self", "VmRSS") // 2))
    assert count_files(tmp_path / "out") == 0


def test_the_command_line_exits_65_naming_the_partition(store, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rss = _worker_size(env)
    p = subprocess.run([sys.executable, "-m", "evaltk", "scale", "score", str(store / "traces"), "--answers",
                        str(store / "answers"), "--out", str(tmp_path / "out"), "--engine", "duckdb",
                        "--workers", "2", "--memory-limit", _mib(rss + 240 * 2**20)],  # the id check fits, a worker not
                       capture_output=True, text=True, env=env)
    assert p.returncode == 65, p.stderr
    assert "cannot hold the scoring of partition" in p.stderr and "Traceback" not in p.stderr


# --------------------------------------------------------------------------- the DuckDB phases of this process


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    return write_parts(tmp_path_factory.mktemp("shm") / "store", make_demo(n_traces=600, rng=5), 4,
                       shared_answers=True)


def _tree_rss() -> int:
    me = psutil.Process()
    return me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))


@pytest.mark.parametrize("layout", ["shared", "co"])
def test_a_limit_the_duckdb_phase_cannot_fit_is_refused_naming_it(store, shared_store, tmp_path, layout):
    """The id check and the shuffle run in this process: a limit that leaves them less than DuckDB's
    least room is refused before DuckDB starts, naming the phase, with nothing scored."""
    s = shared_store if layout == "shared" else store
    answers = s / ("answers.parquet" if layout == "shared" else "answers")
    phase = ("the shuffle of the shared answers" if layout == "shared"
             else "the check that no trace id is in two partitions")
    out = tmp_path / "out"
    limit = _tree_rss() + 64 * 2**20  # this process as it is, and 64 MiB: DuckDB's half is too small
    with pytest.raises(LimitExceeded) as e:
        # the id check runs first (before the shuffle): skipped for the shared layout, to reach the shuffle
        score_dataset(s / "traces", answers, out=out, engine="duckdb", n_workers=2, memory_limit=_mib(limit),
                      check_ids=layout == "co")
    assert e.value.limit == "memory_limit"
    assert f"cannot hold {phase}" in str(e.value) and "needs at least 64 MiB" in str(e.value), str(e.value)
    assert count_files(out) == 0 and not (out / "_shuffle").exists()


def test_a_shared_answers_run_under_a_tight_limit_stays_under_it(shared_store, tmp_path):
    """A fresh process (its VmHWM is its own): the run without a limit measures what it grows by; the
    run under ``memory_limit`` = the resident size then + that growth + twice DuckDB's least share (64 MiB)
    completes, with the same scores, and the process's VmHWM over it stays under the limit."""
    script = r"""
import json, sys
from pathlib import Path
import duckdb, pandas, pyarrow  # noqa: F401 - loaded before the resident size is read
from evaltk.scale import score_dataset
from evaltk.scale._scale import _proc_status

store, out = Path(sys.argv[1]), Path(sys.argv[2])
args = (store / "traces", store / "answers.parquet", store / "labels.csv")

def reset():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _proc_status("self", "VmRSS")

base = reset()
score_dataset(*args, out=out / "free", engine="pandas")
grew = _proc_status("self", "VmHWM") - base
start = reset()
limit = start + grew + 128 * 2**20
score_dataset(*args, out=out / "bound", engine="pandas", memory_limit=f"{limit // 2**20}MiB")
print(json.dumps({"grew": grew, "start": start, "limit": limit // 2**20 * 2**20, "peak": _proc_status("self", "VmHWM")}))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", script, str(shared_store), str(tmp_path)], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["peak"] <= r["limit"], r
    for k in ("part-0", "part-3"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "free" / "scores" / f"{k}.parquet"),
                                      pd.read_parquet(tmp_path / "bound" / "scores" / f"{k}.parquet"))


def test_the_command_line_exits_65_naming_the_shuffle(shared_store, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "evaltk", "scale", "score", str(shared_store / "traces"), "--answers",
                        str(shared_store / "answers.parquet"), "--out", str(tmp_path / "out"), "--engine", "duckdb",
                        "--memory-limit", "1MiB"], capture_output=True, text=True, env=env)
    assert p.returncode == 65, p.stderr
    assert "memory_limit=1MiB" in p.stderr and "Traceback" not in p.stderr


def test_the_sql_summary_of_a_scored_dataset_is_bounded_too(store, tmp_path):
    """``summarize_dataset`` on DuckDB: the limit bounds its SQL summary as it bounds the id check
    and the shuffle; a limit that leaves DuckDB less than its floor is refused naming the phase,
    and a sufficient one gives the unbounded summary."""
    from evaltk.scale import summarize_dataset

    score_dataset(store / "traces", store / "answers", store / "labels.csv", out=tmp_path / "out")
    free = summarize_dataset(tmp_path / "out", engine="duckdb")
    with pytest.raises(LimitExceeded, match="cannot hold the SQL summary of the scored dataset") as e:
        summarize_dataset(tmp_path / "out", engine="duckdb",
                          memory_limit=_mib(_proc_status("self", "VmRSS") + 64 * 2**20))  # DuckDB's half: 32 MiB
    assert "nothing was summarised" in str(e.value) and e.value.limit == "memory_limit"
    bound = summarize_dataset(tmp_path / "out", engine="duckdb",
                              memory_limit=_mib(_proc_status("self", "VmRSS") + 2**30))
    pd.testing.assert_frame_equal(bound.to_frame(), free.to_frame())
