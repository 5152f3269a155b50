"""pass@k and pass^k: the unbiased estimators of "at least one" and "all" of ``k`` trials passing.

Both are computed exactly (integer binomials, one rounding), so a vectorised table of
them (the suite's per-task tables, :class:`~evaltk.stats.PassCounts`) agrees with the
scalar functions to the last bit.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np


def _check_counts(n: Any, c: Any, k: Any) -> tuple[int, int, int]:
    for name, v in (("n", n), ("c", c), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"`{name}` must be an int; got {type(v).__name__} {v!r}.")
    n, c, k = int(n), int(c), int(k)
    if n < 1:
        raise ValueError(f"`n` must be at least 1; got {n}.")
    if not 0 <= c <= n:
        raise ValueError(f"`c` must be in [0, n] = [0, {n}]; got {c}.")
    if not 1 <= k <= n:
        raise ValueError(f"`k` must be in [1, n] = [1, {n}]; got {k}.")
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of ``k`` trials drawn without
    replacement from ``n`` (of which ``c`` passed) passes.

    Parameters
    ----------
    n : int
        Trials run (``n >= 1``).
    c : int
        Trials that passed (``0 <= c <= n``).
    k : int
        Trials drawn (``1 <= k <= n``).

    Returns
    -------
    float
        ``1 - C(n - c, k) / C(n, k)``, computed exactly and rounded once.

    Notes
    -----
    With ``k = n`` (evaltk's default ``k``, the suite's trial count) pass@k is 1 when
    any trial passed and 0 otherwise; with ``k = 1`` it is ``c / n``.

    References
    ----------
    Chen, M. et al. (2021). Evaluating Large Language Models Trained on Code.
    arXiv:2107.03374, section 2.1 (the unbiased estimator).

    Examples
    --------
    >>> pass_at_k(5, 3, 1)
    0.6
    >>> pass_at_k(5, 1, 2)
    0.4
    """
    n, c, k = _check_counts(n, c, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all ``k`` trials drawn without replacement from
    ``n`` (of which ``c`` passed) pass.

    Returns ``C(c, k) / C(n, k)``, computed exactly and rounded once.  With ``k = n``
    it is 1 when every trial passed and 0 otherwise; with ``k = 1`` it is ``c / n``.

    References
    ----------
    Yao, S. et al. (2024). tau-bench: A Benchmark for Tool-Agent-User Interaction in
    Real-World Domains. arXiv:2406.12045, section 4 (pass^k).

    Examples
    --------
    >>> pass_hat_k(5, 3, 1)
    0.6
    >>> pass_hat_k(5, 3, 2)
    0.3
    """
    n, c, k = _check_counts(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))
