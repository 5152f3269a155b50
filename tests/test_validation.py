"""The shared checks of ``evaltk._validation`` that no one estimator's tests cover."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from evaltk._validation import plain


@pytest.mark.parametrize(("x", "want"), [
    (np.int64(3), 3), (np.float64(-1.5), -1.5), (np.bool_(True), True), (np.str_("a"), "a"),
    (pa.scalar(7), 7), (pa.scalar("b"), "b"), (pa.scalar(None, pa.int64()), None),
    ("c", "c"), (4, 4), (None, None),
])
def test_plain_gives_the_python_value_a_message_shows(x, want):
    got = plain(x)
    assert got == want and type(got) is type(want)
    assert "np." not in repr(got) and "pyarrow" not in repr(got)


def test_plain_leaves_other_objects_with_an_as_py_alone():
    class Look:
        def as_py(self):  # not a pyarrow scalar: not called
            raise AssertionError("called")

    x = Look()
    assert plain(x) is x
