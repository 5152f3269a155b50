"""The join's exact check for a rater answering one question twice (``_repeated``).

Every branch (a few sorted runs, a small key space counted by ``bincount``, a large unsorted
one checked by a sort of the values before the argsort that names the rows) must flag exactly
the keys that occur more than once, every copy: pandas' ``duplicated(keep=False)`` is the
reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.ingest._join import _repeated


def _reference(key: np.ndarray) -> np.ndarray:
    return pd.Series(key).duplicated(keep=False).to_numpy()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 3000), space=st.sampled_from([1, 50, 5000, 10**6, 2**40]),
       layout=st.sampled_from(["random", "sorted", "runs"]), dups=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_repeated_flags_every_copy_of_a_repeated_key(n, space, layout, dups, seed):
    rng = np.random.default_rng(seed)
    key = rng.integers(0, space, n, dtype=np.int64)
    if n and dups:  # some copies placed anywhere, so even a huge key space has repeats
        at = rng.integers(0, n, dups)
        key[at] = key[rng.integers(0, n, dups)]
    if layout == "sorted":
        key.sort()
    elif layout == "runs":  # a few sorted runs: answers grouped by rater and measure, in trace order
        key = np.concatenate([np.sort(p) for p in np.array_split(key, 3)])
    np.testing.assert_array_equal(_repeated(key, space), _reference(key))


def test_a_large_unsorted_key_space_without_repeats_is_all_false_and_with_one_names_both_rows():
    rng = np.random.default_rng(3)
    key = rng.permutation(10**6)[:50_000].astype(np.int64) * 7   # distinct, unsorted, space >> 4n
    assert not _repeated(key, 7 * 10**6).any()
    key[123] = key[45_678]
    got = _repeated(key, 7 * 10**6)
    assert np.flatnonzero(got).tolist() == [123, 45_678]
