"""The Dask engine on real worker processes (issue 19): ``dask scheduler`` and two
``dask worker`` processes started by the test (conftest ``dask_cluster``), in a working
folder that is not the test's.

* a failed run cancels what it sent and nothing is written after the call has raised;
* relative paths are made absolute on the driver: the workers write where the driver
  looks, not into their own working folder.
"""

from __future__ import annotations

import time

import pytest

distributed = pytest.importorskip("distributed", reason="the Dask engine needs the `scale` extra")
pytest.importorskip("duckdb", reason="the Dask engine's id check needs the `scale` extra")

from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.errors import InputError  # noqa: E402
from evaltk.scale import partitions_done, score_dataset, summarize_dataset  # noqa: E402

from .conftest import count_files, write_parts  # noqa: E402

pytestmark = pytest.mark.slow  # starts a scheduler and two worker processes


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=1200, rng=8)


def test_a_failed_dask_run_writes_nothing_after_it_raised(dask_cluster, demo, tmp_path):
    address, _ = dask_cluster
    store = write_parts(tmp_path / "store", demo, 12)
    (store / "traces" / "part-0.jsonl").unlink()
    (store / "traces" / "part-0.parquet").write_bytes(b"corrupt")  # the first task fails at once
    out = tmp_path / "out"
    with distributed.Client(address) as client:
        with pytest.raises(InputError, match="part-0.parquet"):
            score_dataset(store / "traces", store / "answers", out=out, engine=client, check_ids=False)
        at_raise = count_files(out)
        time.sleep(4.0)
        assert count_files(out) == at_raise  # nothing still running writes into `out`
        assert partitions_done(out) < 11 and not (out / "_complete.json").exists()
        assert not client.processing() or not any(client.processing().values())


def test_relative_paths_resolve_on_the_driver(dask_cluster, demo, tmp_path, monkeypatch):
    address, worker_cwd = dask_cluster
    write_parts(tmp_path / "store", demo, 4)
    monkeypatch.chdir(tmp_path)
    with distributed.Client(address) as client:
        res = score_dataset("store/traces", "store/answers", "store/labels.csv", out="scored", engine=client)
        assert res.out == tmp_path / "scored"
        assert count_files(tmp_path / "scored") == 12
        assert not (worker_cwd / "scored").exists()
        s = summarize_dataset("scored", engine=client)
    ref = score_dataset("store/traces", "store/answers", "store/labels.csv", out="ref")
    assert s.n_runs == res.summary.n_runs == ref.summary.n_runs
    assert s.to_frame()["n"].tolist() == ref.summary.to_frame()["n"].tolist()


@pytest.mark.parametrize(("body", "unguarded_line"), [
    ("f()\n", 4),
    ('if __name__ == "__main__":\n    f()\n', None),
    ('if "__main__" == __name__ and True:\n    f()\n', None),
    ("def main():\n    f()\n\n\nmain()\n", 8),
    ('if __name__ == "__main__":\n    pass\nf()\n', 6),
    ("if True:\n    f()\n", 5),
    ('try:\n    if __name__ == "__main__":\n        f()\nexcept KeyboardInterrupt:\n    pass\n', None),
    ('if __name__ != "__main__":\n    pass\nelse:\n    f()\n', None),
    ('with open(__file__):\n    f()\n', 5),
    ('if __name__ == "__main__":\n    with open(__file__):\n        try:\n            f()\n'
     '        finally:\n            pass\n', None),
    ('import functools\nif __name__ == "__main__":\n    @functools.lru_cache\n    @(lambda g: (f(), g)[1])\n'
     '    def h(): pass\n', None),
    ('# caf\xe9 (the file is Latin-1)\nf()\n', 5),
])
def test_a_call_from_a_scripts_top_level_is_found_outside_the_main_guard(tmp_path, body, unguarded_line):
    """The Dask engine refuses such a call before it starts a cluster (some Dask releases hang
    instead of failing): the call's line, or None when it runs under the guard."""
    import subprocess
    import sys

    from .conftest import ROOT

    script = tmp_path / "s.py"
    script.write_bytes(("# -*- coding: latin-1 -*-\nfrom evaltk.scale._scale import _unguarded_script_line\n"
                        "def f(): print(_unguarded_script_line())\n" + body).encode("latin-1"))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ("None" if unguarded_line is None else f"{script}:{unguarded_line}")


def test_a_packages_main_run_with_dash_m_is_not_refused(tmp_path):
    """``python -m pkg`` runs ``pkg/__main__.py``, which spawned processes do not re-import (as
    multiprocessing decides: a main module named ``__main__`` or ``*.__main__``), so a top-level
    call there needs no guard; ``python -m pkg.run`` is re-imported, and is refused."""
    import os
    import subprocess
    import sys

    from .conftest import ROOT

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    code = "from evaltk.scale._scale import _unguarded_script_line\nprint(_unguarded_script_line())\n"
    (tmp_path / "pkg" / "__main__.py").write_text(code)
    (tmp_path / "pkg" / "run.py").write_text(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    out = [subprocess.run([sys.executable, "-m", m], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env) for m in ("pkg", "pkg.run")]
    assert [p.returncode for p in out] == [0, 0], [p.stderr for p in out]
    assert out[0].stdout.strip() == "None"
    assert out[1].stdout.strip() == f"{tmp_path / 'pkg' / 'run.py'}:2"


def test_a_script_without_a_main_guard_gets_a_clear_error(tmp_path):
    import os
    import subprocess
    import sys

    import pandas as pd

    from .conftest import ROOT

    d = make_demo(n_traces=20, rng=0)
    pd.DataFrame(d.traces).to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    script = tmp_path / "noguard.py"
    script.write_text("from evaltk.scale import score_dataset\n"
                      "score_dataset('t.jsonl', out='out', engine='dask', n_workers=1)\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode != 0
    assert p.stderr.strip().splitlines()[-1].startswith("RuntimeError: engine='dask' could not start")
    assert 'if __name__ == "__main__":' in p.stderr.strip().splitlines()[-1]
