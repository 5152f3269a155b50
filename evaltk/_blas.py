"""One BLAS thread inside evaltk's estimators.

evaltk's estimators multiply small things: a weight vector over unit patterns by a
pattern x category matrix (1 x T by T x q), per-unit sums by a q x q weight table.
OpenBLAS splits a dot or a matrix-vector product longer than a few thousand over all
its threads, and on a machine with more runnable threads than cores (a shared notebook
server, a CI runner, a Dask worker beside others) each such product waits for a thread
the scheduler has not run yet, while the waiting threads spin.  Measured on the 2-core
machine at load average 9: ``v @ v`` for 20,000 doubles took 24 ms with OpenBLAS's two
threads and 0.003 ms with one; Krippendorff's alpha on 20,000 units x 20 raters took 54 ms
of CPU with two BLAS threads and 7.8 ms with one.  Nothing evaltk multiplies is large
enough for a second BLAS thread to pay for itself, so the estimators run with BLAS limited to
one thread and the previous limits are restored on return (threadpoolctl; about 12 us per
call).

The limit is process-wide while an estimator runs: another thread of the same process
doing BLAS work at that moment runs single-threaded too.  ``EVALTK_BLAS_THREADS=keep``
leaves BLAS as it is.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Set ``EVALTK_BLAS_THREADS=keep`` to leave BLAS threading alone.
ENV = "EVALTK_BLAS_THREADS"

_controller: Any = None
_lock = threading.Lock()
_active = 0          # estimator calls running, over all threads
_limited: Any = None  # the open threadpoolctl limit while _active > 0


def _enter() -> None:
    """The first running call limits BLAS to one thread (finding the libraries once: it is slow)."""
    global _controller, _active, _limited
    with _lock:
        if _active == 0:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
            _limited = _controller.limit(limits=1, user_api="blas")
        _active += 1


def _exit() -> None:
    """The last running call restores the limits found at the first."""
    global _active, _limited
    with _lock:
        _active -= 1
        if _active == 0 and _limited is not None:
            _limited.restore_original_limits()
            _limited = None


def serial_blas(fn: F) -> F:
    """Run ``fn`` with BLAS limited to one thread (see the module docstring).  Nested and
    concurrent calls share one limit: the first call sets it, the last one restores it.

    Examples
    --------
    >>> import numpy as np
    >>> @serial_blas
    ... def dot(v):
    ...     return float(v @ v)
    >>> dot(np.ones(20_000))
    20000.0
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if os.environ.get(ENV, "").strip().lower() == "keep":
            return fn(*args, **kwargs)
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _exit()

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature


@serial_blas
def sum_of_squares(v: Any) -> float:
    """The sum of squares of a float vector, ``v . v`` on one BLAS thread.

    OpenBLAS splits a long dot over its threads and adds the threads' parts, so the float
    depends on the thread count; on one thread it is the same float wherever it is computed.
    One home for every door to a mean's ``total_sq`` (:func:`evaltk.values.summarize`, the
    score partials the scale engines add up), so they agree bit for bit.

    >>> import numpy as np
    >>> sum_of_squares(np.array([1.0, 2.0, 3.0]))
    14.0
    """
    return float(v.dot(v))
