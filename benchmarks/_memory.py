"""Memory of the benchmark's own process, from its high-water mark (shared by the benchmarks).

``ru_maxrss`` is the wrong gauge: Linux keeps it across ``exec``, so a benchmark started
from a large process reports that process's peak (a growth of 0.0 MiB).  ``VmHWM`` in
``/proc/self/status`` belongs to this process image alone, and writing ``5`` to
``/proc/self/clear_refs`` resets it to the current resident size, so a benchmark can
measure the peak of the measured step alone, after its set-up.  Where neither exists
(not Linux) the functions say so rather than guess.
"""

from __future__ import annotations


def _status_mib(key: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def rss_mib() -> float | None:
    """Resident memory now (VmRSS), MiB; None where /proc is absent."""
    return _status_mib("VmRSS")


def peak_mib() -> float | None:
    """This process's resident high-water mark (VmHWM), MiB; None where /proc is absent."""
    return _status_mib("VmHWM")


def reset_peak() -> bool:
    """Reset the high-water mark to the current resident size; False where not permitted."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


class PeakGrowth:
    """``with PeakGrowth() as g: step()`` then ``g.mib``: the step's peak above the resident size at entry.

    ``g.how`` says how it was measured: ``"VmHWM reset at entry"``, or, when the reset is
    not permitted, ``"VmHWM since start"`` (the peak may then belong to the set-up: run the
    step in a fresh child).
    """

    def __enter__(self) -> PeakGrowth:
        self.reset = reset_peak()
        self.start = rss_mib() if self.reset else peak_mib()
        self.how = "VmHWM reset at entry" if self.reset else "VmHWM since start (reset not permitted)"
        self.mib: float | None = None
        return self

    def __exit__(self, *exc: object) -> None:
        end = peak_mib()
        self.mib = None if end is None or self.start is None else end - self.start


_TOUCH = """
import resource, sys
import numpy as np
mib = int(sys.argv[1])
r0 = resource.getrusage(resource.RUSAGE_SELF)
held = [np.ones(2**25) for _ in range(mib // 256)]   # held at once: mib MiB of distinct pages
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(r1.ru_stime - r0.ru_stime)
"""


def touch_fresh_memory(mib: int) -> float:
    """System CPU seconds per GiB that a fresh child spends touching ``mib`` MiB it holds at once.

    A process's first touch of a page costs the kernel a page fault and a zeroed page; in a
    virtual machine whose memory the host backs lazily (Firecracker here), the first touch of
    guest memory the VM has never used also costs the host, several times more: on this
    machine 2.3-2.4 s of system CPU per GiB where the host had taken the pages back, 0.1-0.3 s
    right after they were used (2026-12-04).  A benchmark whose process grows by gigabytes pays
    that as system time, so a larger size looks slower per item than it is; this measures the
    state of the machine (and, as a side effect, warms ``mib`` MiB of it).  ``mib``: a multiple
    of 256."""
    if mib < 256 or mib % 256:
        raise ValueError(f"mib must be a positive multiple of 256 (the probe's block); got {mib}")
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TOUCH, str(mib)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip()) / (mib / 1024)
