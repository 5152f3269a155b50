"""Benchmark: `evaltk.fixtures.validate_suite` against the peer, PyYAML + jsonschema.

The peer reads every task.yaml with ``yaml.safe_load`` (libyaml's CSafeLoader when
available) and validates it with ``jsonschema`` against evaltk's own
``task.schema.json``: the obvious way to check fixtures with stock libraries.  It
checks less (no journey names, ids against folders, context escapes, duplicate
keys, holdout ledger, coverage), so the ratio is the price of those checks.

Run:  .venv/bin/python benchmarks/fixtures.py [N_FIXTURES]
Prints the wall time of each (best of 3) and evaltk / peer.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
import yaml

from evaltk.fixtures import default_journey, validate_suite

SCHEMA = Path(__file__).resolve().parent.parent / "evaltk" / "schemas" / "task.schema.json"
KINDS = ["larger-change", "new-dependency", "process-change", "no-change"]


def build_suite(root: Path, n: int) -> None:
    j = default_journey()
    phases = " | ".join(p.label for p in j.phases)
    gates = " | ".join(f"gate-{k}: check {k}: pass" for k in range(1, 6))
    for i in range(n):
        if i % 4 == 3:
            d = root / "fixtures" / "trajectories" / f"t{i}"
            d.mkdir(parents=True)
            (d / "task.yaml").write_text(
                f'kind: trajectory\nid: t{i}\npath: full\nprompt: "Change request {i}."\n'
                f'phases: "{phases}"\ngates: "{gates}"\nterminal_state: merged\n'
                f"final_head_sha: {'a' * 40}\nvisibility: public\n"
                f"expected_answer_kind: {KINDS[i % 4]}\n")
        else:
            d = root / "fixtures" / "refactor" / f"f{i}"
            (d / "repo").mkdir(parents=True)
            (d / "repo" / "app.py").write_text("x = 1\n")
            (d / "task.yaml").write_text(
                f"id: f{i}\nclass: refactor\nprompt: |\n  Task {i}: make it maintainable.\n"
                f"context:\n  - Inline note {i}.\n  - file: repo/app.py\n"
                f"ground_truth: Split the module.\nexpected_boundary: unit\n"
                f"visibility: public\nexpected_answer_kind: {KINDS[i % 4]}\n")


def peer(root: Path, validator: jsonschema.protocols.Validator) -> int:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    n_err = 0
    for p in sorted(root.rglob("task.yaml")):
        data = yaml.load(p.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 - safe loader
        n_err += sum(1 for _ in validator.iter_errors(data))
    return n_err


def best_of(fn, k: int = 3) -> float:
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(n: int = 400) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        build_suite(tmp, n)
        validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
        report = validate_suite(tmp)
        assert report.valid, report.errors[:3]
        assert peer(tmp, validator) == 0
        t_evaltk = best_of(lambda: validate_suite(tmp))
        t_peer = best_of(lambda: peer(tmp, validator))
        print(f"fixtures: {n}")
        print(f"evaltk validate_suite      : {t_evaltk:8.3f} s  ({n / t_evaltk:8.0f} fixtures/s)")
        print(f"peer yaml.safe_load+jsonschema: {t_peer:8.3f} s  ({n / t_peer:8.0f} fixtures/s)")
        print(f"ratio evaltk / peer        : {t_evaltk / t_peer:8.2f}")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
