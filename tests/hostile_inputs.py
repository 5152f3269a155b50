"""Hostile inputs for every reader, and the driver that runs them through the CLI.

``tests/test_fuzz_readers.py`` builds, for each reader, a list of cases (a hostile file
and the ``evaltk`` command that reads it), writes them as a plan and runs this file in a
child interpreter: ``python tests/hostile_inputs.py PLAN RESULTS``.  The child sets its
own resource limits first (address space, CPU time), then runs each case through
:func:`evaltk.cli.main` with its output captured, and appends one JSON line per case to
RESULTS (a ``start`` line before each, so a case that kills the child is named).  A case
that passes its CPU budget is recorded as ``"cpu-budget"``, one that runs out of memory
as ``"MemoryError"``: both fail the test, as any crash of the child does.

The generators are deterministic (a seeded ``random.Random``); the test file adds
hypothesis properties of the screens themselves.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Resource limits of the child: the address space (bounded memory) and the CPU time each
#: case may use (bounded time, measured by the kernel, not a speed assertion).
ADDRESS_SPACE = 4 << 30
CASE_CPU_SECONDS = 30

DEEP = 20_000  # the bracket depth that killed pyarrow's JSON reader (issue 15)

# --------------------------------------------------------------------------- JSON documents


def _leaves(doc: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(doc, dict):
        return {k: _leaves(v, fn) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_leaves(v, fn) for v in doc]
    return fn(doc)


def _first_key(doc: Any) -> str | None:
    return next(iter(doc), None) if isinstance(doc, dict) and doc else None


def json_document_variants(text: str) -> Iterator[tuple[str, bytes, str | None]]:
    """(name, bytes, a word the message must hold or None) of hostile versions of a valid
    JSON document ``text``.  More than 30."""
    doc = json.loads(text)
    key = _first_key(doc)
    yield "empty", b"", None
    yield "blank", b"  \n\t\n", None
    yield "bom", b"\xef\xbb\xbf" + text.encode(), None
    yield "utf16", text.encode("utf-16"), None
    yield "latin1-byte", text.encode()[:10] + b"\xe9" + text.encode()[10:], "UTF-8"
    yield "nul-byte", text.encode()[:5] + b"\x00" + text.encode()[5:], None
    yield "truncated", text.encode()[: len(text) // 2], None
    yield "trailing-garbage", text.encode() + b" }{ x", None
    yield "deep-arrays-5000", ("[" * 5000 + "]" * 5000).encode(), "depth"
    yield "deep-objects-5000", ('{"a":' * 5000 + "1" + "}" * 5000).encode(), "depth"
    yield "deep-20000", ('{"a":' + "[" * DEEP + "]" * DEEP + "}").encode(), "depth"
    if key is not None:
        inner = json.dumps(doc)[1:]
        yield "deep-inside", ('{"x_deep": ' + "[" * 5000 + "]" * 5000 + ", " + inner).encode(), "depth"
        yield "nan-value", ('{"x_nan": NaN, ' + inner).encode(), "NaN"
        yield "infinity-value", ('{"x_inf": Infinity, ' + inner).encode(), "Infinity"
        yield "minus-infinity", ('{"x_inf": -Infinity, ' + inner).encode(), "Infinity"
        yield "overflow-number", ('{"x_big": 1e999, ' + inner).encode(), "1e999"
        yield "huge-integer", ('{"x_big": ' + "9" * 5000 + ", " + inner).encode(), None
        yield "duplicate-key", ('{' + json.dumps(key) + ': 1, ' + inner).encode(), "duplicate"
        yield "escape-codes-in-key", ('{"\\u001b[2J\\u001b]0;pwn\\u0007": 1, ' + inner).encode(), None
        yield "lone-surrogate", ('{"x_s": "\\ud800", ' + inner).encode(), None
        yield "every-leaf-null", json.dumps(_leaves(doc, lambda v: None)).encode(), None
        yield "every-leaf-zero", json.dumps(_leaves(doc, lambda v: 0)).encode(), None
        yield "every-leaf-string", json.dumps(_leaves(doc, lambda v: "\x1b[31mx")).encode(), None
        yield "every-leaf-list", json.dumps(_leaves(doc, lambda v: [[v]])).encode(), None
        yield "every-leaf-object", json.dumps(_leaves(doc, lambda v: {"v": v})).encode(), None
        yield "first-key-dropped", json.dumps({k: v for k, v in doc.items() if k != key}).encode(), None
        yield "first-value-nested-deep", json.dumps({**doc, key: json.loads("[" * 400 + "]" * 400)}).encode(), None
        yield "long-string", json.dumps({**doc, key: "x" * 2_000_000}).encode(), None
    yield "top-array", b"[1, 2, 3]", None
    yield "top-string", b'"text"', None
    yield "top-null", b"null", None
    yield "top-number", b"42", None
    yield "top-true", b"true", None
    yield "crlf", text.replace("\n", "\r\n").encode(), None
    yield "not-json", b"this is not json at all", None


def yaml_only_variants(text: str) -> Iterator[tuple[str, bytes, str | None]]:
    """Hostile YAML for a reader that takes YAML: the same rules as JSON, in YAML's words."""
    yield "yaml-duplicate-key", b"a: 1\na: 2\n", "duplicate"
    yield "yaml-nan", b"a: .nan\n", "nan"
    yield "yaml-inf", b"a: -.inf\n", "inf"
    yield "yaml-python-tag", b"a: !!python/object/apply:os.system ['echo pwned']\n", None
    yield "yaml-deep-flow", ("a: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "depth"
    yield "yaml-deep-block", "".join("  " * i + f"k{i}:\n" for i in range(600)).encode(), "depth"
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join('*' + p for _ in range(9))}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    yield "yaml-billion-laughs", laughs.encode(), None
    yield "yaml-tab-indent", b"a:\n\tb: 1\n", None
    yield "yaml-two-documents", text.encode() + b"\n---\n" + text.encode(), None


# --------------------------------------------------------------------------- special files


def special_paths(tmp: Path) -> Iterator[tuple[str, Path, str]]:
    """(name, path, a word the message must hold) of paths that are not a readable file."""
    fifo = tmp / "special-fifo.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    yield "fifo", fifo, "FIFO"
    dev = tmp / "special-zero.json"
    if not dev.exists():
        dev.symlink_to("/dev/zero")
    yield "dev-zero", dev, "device"
    d = tmp / "special-dir.json"
    d.mkdir(exist_ok=True)
    yield "directory", d, "directory"
    yield "missing", tmp / "special-missing.json", "no"


# --------------------------------------------------------------------------- JSON Lines traces


def trace_line_variants(lines: list[str], rng: random.Random) -> Iterator[tuple[str, list[bytes], str | None]]:
    """(name, the lines of a trace file, a word the hostile line's ledger reason holds) of
    hostile trace files built from valid trace ``lines``; the hostile line is line 2."""
    base = [ln.encode() for ln in lines]
    rec = json.loads(lines[1])

    def with_line(b: bytes) -> list[bytes]:
        return [base[0], b, *base[2:]]

    def with_rec(**changes: Any) -> list[bytes]:
        r = dict(rec)
        r.update(changes)
        return with_line(json.dumps(r, allow_nan=True).encode())

    step0 = dict(rec["steps"][0])
    yield "deep-20000", with_line(('{"trace_id": "d", "a": ' + "[" * DEEP + "]" * DEEP + "}").encode()), "depth"
    yield "deep-5000-objects", with_line(('{"trace_id": "d", "a": ' + '{"a":' * 5000 + "1" + "}" * 5001).encode()), "depth"
    yield "deep-600-in-steps", with_rec(steps=json.loads("[" * 600 + "]" * 600)), "depth"
    yield "deep-400-guide", with_rec(guide=json.loads('{"g":' * 400 + "1" + "}" * 400)), None
    yield "nan-needs-confirmation", with_rec(steps=[{**step0, "needs_confirmation": float("nan")}]), "NaN"
    yield "infinity-index", with_rec(steps=[{**step0, "index": float("inf")}]), "Infinity"
    yield "overflow-number", with_line(json.dumps(rec)[:-1].encode() + b', "x": 1e999}'), "1e999"
    yield "duplicate-key", with_line(b'{"trace_id": "a", ' + json.dumps(rec)[1:].encode()), "duplicate"
    yield "duplicate-nested-key", with_line(json.dumps(rec).replace('"index": 0', '"index": 0, "index": 1', 1).encode()), "duplicate"
    yield "truncated-line", with_line(base[1][: len(base[1]) // 2]), "JSON"
    yield "latin1-line", with_line(base[1].replace(b'"', b'"\xe9', 1)), "UTF-8"
    yield "bare-null-line", with_line(b"null"), None
    yield "array-line", with_line(b"[1, 2]"), None
    yield "string-line", with_line(b'"run"'), None
    yield "number-line", with_line(b"7"), None
    yield "escape-codes-id", with_rec(trace_id="ev\x1b[2J\x1b]0;pwn\x07il", steps="x"), None
    yield "lone-surrogate-id", with_line(json.dumps(rec).replace(rec["trace_id"], "\\ud800", 1).encode()), None
    yield "steps-not-list", with_rec(steps={"0": step0}), None
    yield "steps-null", with_rec(steps=None), None
    yield "status-unknown", with_rec(status="\x1b[31mdone"), None
    yield "trace-id-missing", with_line(json.dumps({k: v for k, v in rec.items() if k != "trace_id"}).encode()), None
    yield "trace-id-number", with_rec(trace_id=12), None
    yield "huge-integer-index", with_line(json.dumps(rec).replace('"index": 0', '"index": ' + "9" * 5000, 1).encode()), None
    yield "conflicting-duplicate-id", [*base, json.dumps({**json.loads(lines[0]), "task": "other"}).encode()], None
    yield "identical-duplicate-id", [*base, base[0]], None
    yield "blank-lines", [base[0], b"", b"   ", *base[1:]], None
    yield "crlf", [b + b"\r" for b in base], None
    yield "nul-in-line", with_line(base[1].replace(b'"', b'"\x00', 1)), None
    yield "type-changes-between-lines", with_rec(task=["a", "list"]), None
    yield "long-line", with_rec(task="x" * 3_000_000), None
    yield "random-bytes", with_line(bytes(rng.randrange(256) for _ in range(300))), None
    yield "random-brackets", with_line("".join(rng.choice("[]{}\",:\\") for _ in range(4000)).encode()), None
    for k in range(6):  # seeded mutation: one byte of the line changed
        b = bytearray(base[1])
        i = rng.randrange(len(b))
        b[i] = rng.choice(b'{}[]":,\\nN0 ')
        yield f"mutated-byte-{k}", with_line(bytes(b)), None


# --------------------------------------------------------------------------- CSV


def csv_line_variants(lines: list[str], rng: random.Random, *, id_col: int = 0, text_col: int = 3,
                      answer_col: int = 4, number_col: int | None = 5, step_col: int | None = 2
                      ) -> Iterator[tuple[str, list[str], int | None]]:
    """(name, the CSV's lines, how many data records it holds: None when it is the number
    of non-blank data lines, -1 when not known) of hostile CSVs built from valid ``lines``
    (header first); the hostile line is line 3.  The ``*_col`` say which cell holds what."""
    head, body = lines[0], lines[1:]
    cells = body[1].split(",")

    def with_line(s: str) -> list[str]:
        return [head, body[0], s, *body[2:]]

    def with_cell(i: int, v: str) -> list[str]:
        c = list(cells)
        c[i] = v
        return with_line(",".join(c))

    yield "unterminated-quote", with_cell(answer_col, '"yes'), None
    yield "unterminated-quote-first-cell", with_cell(id_col, '"run'), None
    yield "quote-inside-cell", with_cell(answer_col, 'y"es'), None
    yield "text-after-quote", with_cell(answer_col, '"yes"x'), None
    yield "ragged-short", with_line(",".join(cells[:2])), None
    yield "ragged-long", with_line(",".join([*cells, "x", "y"])), None
    yield "blank-line", with_line(""), None
    yield "only-commas", with_line("," * (len(cells) - 1)), None
    for w in ("NA", "None", "null", "NaN", "N/A", "nan", "#N/A", ""):
        yield f"answer-{w or 'empty'}", with_cell(answer_col, w), None
        yield f"id-{w or 'empty'}", with_cell(id_col, w), None
    if number_col is not None:
        yield "number-nan", with_cell(number_col, "nan"), None
        yield "number-inf", with_cell(number_col, "inf"), None
        yield "number-overflow", with_cell(number_col, "1e999"), None
    if step_col is not None:
        yield "step-huge", with_cell(step_col, "9" * 400), None
    yield "escape-codes-id", with_cell(id_col, "ev\x1b[2J\x1b]0;pwn\x07il"), None
    yield "formula-cell", with_cell(text_col, '=HYPERLINK(""http://x"")'), None
    yield "nul-cell", with_cell(text_col, "a\x00b"), None
    yield "latin1-cell", with_cell(text_col, "caf\udce9"), None  # written as the byte 0xe9
    yield "crlf", [ln + "\r" for ln in lines], None
    yield "bom", ["\ufeff" + head, *body], None
    yield "long-cell", with_cell(text_col, "x" * 1_000_000), None
    yield "duplicated-header-column", [head + "," + head.split(",")[0], *[b + ",x" for b in body]], None
    yield "header-only", [head], None
    yield "quoted-newline", with_cell(text_col, '"two\nlines"'), len(body)
    yield "random-line", with_line("".join(rng.choice('ab,"\r;') for _ in range(200))), -1
    for k in range(4):
        b = list(body[1])
        b[rng.randrange(len(b))] = rng.choice('",\\')
        yield f"mutated-char-{k}", with_line("".join(b)), -1


# --------------------------------------------------------------------------- the driver


def _ends(text: str, n: int = 3000) -> str:
    return text if len(text) <= 2 * n else text[:n] + "\n[...]\n" + text[-n:]


class _Budget(BaseException):
    """A case passed its CPU budget (raised by the profiling timer)."""


def _drive(plan_path: str, results_path: str) -> None:
    import resource
    import signal

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    def over(signum: int, frame: Any) -> None:
        raise _Budget

    signal.signal(signal.SIGPROF, over)
    from evaltk.cli import main

    plan = json.loads(Path(plan_path).read_text("utf-8"))
    with open(results_path, "a", encoding="utf-8") as out:
        for case in plan:
            out.write(json.dumps({"start": case["id"]}) + "\n")
            out.flush()
            os.chdir(case["cwd"])
            so, se = io.StringIO(), io.StringIO()
            t0 = time.perf_counter()
            signal.setitimer(signal.ITIMER_PROF, CASE_CPU_SECONDS)
            try:
                with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
                    rc: Any = main(case["argv"])
            except _Budget:
                rc = "cpu-budget"
            except MemoryError:
                rc = "MemoryError"
            except SystemExit as e:
                rc = e.code
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            out.write(json.dumps({"id": case["id"], "rc": rc, "seconds": round(time.perf_counter() - t0, 3),
                                  "stdout": _ends(so.getvalue()),
                                  "stderr": _ends(se.getvalue())}) + "\n")
            out.flush()


if __name__ == "__main__":
    _drive(sys.argv[1], sys.argv[2])
