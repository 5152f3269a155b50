"""Tests for evaltk._io: the readers and the atomic writer every format shares."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evaltk import _io
from evaltk.errors import SchemaViolation, UnreadableInput


def test_read_json_is_strict(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"a": 1, "a": 2}')
    with pytest.raises(SchemaViolation, match="duplicate object key 'a'") as e:
        _io.read_json(p)
    assert e.value.file == str(p) and e.value.field == "a"
    p.write_text('{"a": NaN}')
    with pytest.raises(UnreadableInput, match="NaN is not JSON"):
        _io.read_json(p)
    assert _io.loads_json('{"a": NaN}', allow_nan=True)["a"] != 0
    p.write_text('{\n "a": }')
    with pytest.raises(UnreadableInput, match=r"not JSON: .*\(column 7\)") as e:
        _io.read_json(p)
    assert e.value.record == 2
    with pytest.raises(UnreadableInput, match="no such file"):
        _io.read_json(tmp_path / "absent.json")
    with pytest.raises(UnreadableInput, match="is a directory"):
        _io.read_json(tmp_path)


def test_utf8_errors_name_byte_offset_and_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_bytes(b'\xef\xbb\xbf{"a":\n"\xe9"}')
    with pytest.raises(UnreadableInput, match=r"not UTF-8 \(byte 0xe9 at offset 10\)") as e:
        _io.read_text(p)
    assert e.value.record == 2
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert _io.read_json(p) == {"a": 1}


def test_read_jsonl_names_the_line(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n')
    with pytest.raises(UnreadableInput) as e:
        _io.read_jsonl(p)
    assert e.value.record == 4
    p.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert _io.read_jsonl(p) == [{"a": 1}, {"a": 2}]


def test_read_ipc_keeps_metadata_and_names_a_file_that_is_not_arrow(tmp_path):
    import pyarrow as pa
    import pyarrow.ipc as ipc

    t = pa.table({"a": [1, 2, 3]}).replace_schema_metadata({b"k": b"v"})
    with ipc.new_file(tmp_path / "t.arrow", t.schema, options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(t)
    got = _io.read_ipc(tmp_path / "t.arrow")
    assert got.equals(t) and got.schema.metadata == {b"k": b"v"}
    for bad in (b"", b"ARROW1 but no more", t.schema.serialize().to_pybytes()):
        (tmp_path / "bad.arrow").write_bytes(bad)
        with pytest.raises(UnreadableInput, match="not a readable Arrow IPC file") as e:
            _io.read_ipc(tmp_path / "bad.arrow")
        assert e.value.file == str(tmp_path / "bad.arrow")


def test_write_json_is_atomic(tmp_path):
    p = tmp_path / "sub" / "out.json"
    _io.write_json(p, {"é": 1})
    assert json.loads(p.read_text("utf-8")) == {"é": 1}
    with pytest.raises(ValueError):
        _io.write_json(p, {"x": float("nan")})  # refused: the old file stays whole
    assert json.loads(p.read_text("utf-8")) == {"é": 1}
    assert [q.name for q in p.parent.iterdir()] == ["out.json"]


# --------------------------------------------------------------------------- issue 15: the reading layer

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

from evaltk.cli import main  # noqa: E402
from evaltk.errors import InputError, LimitExceeded  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
DEEP_LINE = '{"trace_id": "deep", "a": ' + "[" * 20_000 + "]" * 20_000 + "}"


def _traces(tmp_path, extra=(), n=6, name="t.jsonl"):
    lines = (DEMO / "traces.jsonl").read_text("utf-8").splitlines()[:n]
    p = tmp_path / name
    p.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return p


def test_limits_defaults_context_env_and_errors(monkeypatch):
    lim = _io.Limits()
    assert (lim.depth, lim.line_bytes, lim.records, lim.categories, lim.file_bytes, lim.regular_only) == (
        512, 64 << 20, 50_000_000, 1000, 8 << 30, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lim.depth = 3  # frozen
    with _io.limits(depth=9, records=4) as inner:
        assert _io.current_limits() == inner and inner.depth == 9
    assert _io.current_limits() == lim
    monkeypatch.setenv("EVALTK_LIMITS", "depth=33,file_bytes=1e6,regular_only=false")
    assert (_io.current_limits().depth, _io.current_limits().file_bytes,
            _io.current_limits().regular_only) == (33, 1_000_000, False)
    for bad in ("depth=0", "depth=1.5", "nope=3", "depth"):
        with pytest.raises(ValueError):
            _io.parse_limits(bad)
    import evaltk
    assert evaltk.Limits is _io.Limits and evaltk.limits is _io.limits


def test_limit_option_is_taken_anywhere_on_every_command(tmp_path, capsys):
    p = _traces(tmp_path)
    assert main(["ingest", str(p), "--limit", "records=3"]) == 65
    err = capsys.readouterr().err
    assert "records=3" in err and str(p) in err and "--limit records=N" in err
    assert main(["--limit=records=100", "ingest", str(p)]) == 0
    assert main(["ingest", str(p), "--limit", "depth=0"]) == 64
    assert main(["ingest", str(p), "--limit", "bogus=1"]) == 64
    assert "not a limit" in capsys.readouterr().err


def test_fifo_and_devices_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)  # opening it would block until a writer came: it is never opened
    with pytest.raises(LimitExceeded, match="FIFO") as e:
        _io.read_bytes(fifo)
    assert e.value.limit == "regular_only" and e.value.file == str(fifo)
    with pytest.raises(LimitExceeded, match="device"):
        _io.read_bytes("/dev/zero")
    with _io.limits(regular_only=False, file_bytes=1 << 16), pytest.raises(LimitExceeded, match="file_bytes"):
        _io.read_bytes("/dev/zero")  # a stream is read up to the cap, never further
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 600 + b"0]")
    with _io.limits(file_bytes=1000), pytest.raises(LimitExceeded, match="file size 1203 bytes"):
        _io.read_json(big)


@pytest.mark.parametrize("text, word, kind", [
    ('{"a": NaN}', "NaN", UnreadableInput), ('{"a": -Infinity}', "Infinity", UnreadableInput),
    ('{"a": 1e999}', "1e999", UnreadableInput), ('{"a": 1, "a": 2}', "duplicate", SchemaViolation),
    ('{"a": "\\ud800"}', "surrogate", UnreadableInput), ("[" * 5000 + "]" * 5000, "depth", LimitExceeded),
    ('{"a": ' + "9" * 5000 + "}", "digits", UnreadableInput),
])
def test_strict_json_refuses(text, word, kind):
    with pytest.raises(kind, match=word):
        _io.loads_json(text, file="x.json")


@pytest.mark.parametrize("text, word, kind", [
    ("a: 1\na: 2\n", "duplicate key `a`", SchemaViolation), ("a: .nan\n", "NaN", SchemaViolation),
    ("a: -.inf\n", "infinity", SchemaViolation), ("a: " + "[" * 5000 + "]" * 5000 + "\n", "depth", LimitExceeded),
    ("a: " + "9" * 5000 + "\n", "digits", UnreadableInput), ("a: !!python/object:os.system x\n", "not valid YAML",
                                                           UnreadableInput),
    ("a: [1\n", "not valid YAML", UnreadableInput),
])
def test_strict_yaml_refuses(text, word, kind):
    with pytest.raises(kind, match=word) as e:
        _io.loads_yaml(text, file="x.yaml")
    assert e.value.file == "x.yaml"


def test_a_legal_500_deep_document_is_read_everywhere(tmp_path):
    from evaltk.trajectory import canonical_json

    doc = {"a": json.loads("[" * 500 + "]" * 500), "b": json.loads('{"x":' * 500 + "1" + "}" * 500)}
    text = json.dumps(doc)
    assert _io.loads_json(text) == doc and _io.loads_yaml(text) == doc
    assert canonical_json(doc) == json.dumps(doc, separators=(",", ":")).encode()
    p = _traces(tmp_path, [json.dumps({**json.loads(_traces(tmp_path, n=1).read_text()),
                                       "trace_id": "deep-guide", "guide": doc["b"]})])
    from evaltk.ingest import read_traces

    assert "deep-guide" in read_traces(p).runs["trace_id"].tolist()


def _run(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def test_a_20000_deep_line_never_reaches_a_native_parser(tmp_path):
    """It killed `ingest`, `score`, `scale score` and `score_traces()` with a segmentation fault
    inside pyarrow's JSON reader (issue 15); now it is a malformed record naming the limit."""
    p = _traces(tmp_path, [DEEP_LINE])
    script = ("import sys; from evaltk import score_traces; m = score_traces(sys.argv[1]); "
              "print(m.ledger[m.ledger.status == 'dropped'].reason.tolist())")
    procs = {
        "ingest": _run(["-m", "evaltk", "ingest", str(p), "--out", str(tmp_path / "i")]),
        "score": _run(["-m", "evaltk", "score", str(p), "--out", str(tmp_path / "s")]),
        "scale": _run(["-m", "evaltk", "scale", "score", str(p), "--out", str(tmp_path / "sc")]),
        "score_traces": _run(["-c", script, str(p)]),
    }
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (name, proc.returncode, err[-2000:])
        assert "Traceback" not in err
    led = pd.read_csv(tmp_path / "i" / "ledger.csv")
    row = led[led["record"] == 7]
    assert row["status"].tolist() == ["dropped"] and "depth=512" in row["reason"].iloc[0]
    assert "nesting depth 20001" in out


def test_nan_in_trace_json_is_malformed_not_false(tmp_path):
    from evaltk.ingest import read_traces

    rec = json.loads(_traces(tmp_path, n=1).read_text())
    rec["steps"][0]["needs_confirmation"] = float("nan")
    lines = [json.dumps(rec | {"trace_id": t}) for t in ("a", "b")]
    p = _traces(tmp_path, lines)  # the fast path (a clean chunk) and ...
    q = tmp_path / "alone.jsonl"
    q.write_text(lines[0] + "\n")  # ... a file of that line alone
    for f, records in ((p, [7, 8]), (q, [1])):
        led = read_traces(f).ledger
        bad = led[led["record"].isin(records)]
        assert len(bad) == len(records) and (bad["status"] == "dropped").all(), bad
        assert bad["reason"].str.contains("NaN is not JSON").all(), bad["reason"].tolist()


def test_suite_run_yaml_duplicate_key_is_refused(tmp_path):
    from evaltk.suite import load_suite_run

    src = ROOT / "tests" / "inputs" / "suite" / "example-2-suite.yaml"
    text = src.read_text("utf-8")
    p = tmp_path / "run.yaml"
    p.write_text("suite: another\n" + text, encoding="utf-8")  # `suite` twice: which one counts?
    with pytest.raises(SchemaViolation, match="duplicate key `suite`") as e:
        load_suite_run(p)
    assert e.value.file == str(p) and e.value.record == 3 and e.value.field == "suite"


def test_unterminated_quote_spoils_one_csv_record(tmp_path, capsys):
    # the demo's answers without the instrument columns: their quoted `decoding` would close the quote
    lines = [",".join(x.split(",")[:9]) for x in (DEMO / "answers.csv").read_text("utf-8").splitlines()[:17]]
    lines[3] = lines[3].replace(",yes,", ',"yes,', 1)
    a = tmp_path / "a.csv"
    a.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["ingest", str(_traces(tmp_path)), "--answers", str(a), "--out", str(tmp_path / "o")]) == 0
    led = pd.read_csv(tmp_path / "o" / "ledger.csv")
    rows = led[led["source"] == str(a)]
    assert sorted(rows["record"]) == list(range(2, 18))  # 16 data lines, 16 ledger rows
    bad = rows[rows["record"] == 4]
    assert bad["status"].tolist() == ["dropped"] and "unterminated quote" in bad["reason"].iloc[0]
    lab = tmp_path / "l.csv"
    lab.write_text("item_id,rater,rating\nx,a,\"yes\nx,b,no\n", encoding="utf-8")
    with pytest.raises(SchemaViolation, match="unterminated quote") as e:
        _io.read_csv_text(lab)
    assert e.value.record == 2


def test_agreement_reads_na_words_as_text(tmp_path, capsys):
    p = tmp_path / "r.csv"
    words = ["None", "NA", "null", "NaN"]
    p.write_text("item_id,rater,rating\n" + "".join(f"{w},{r},{w if r == 'a' else 'x'}\n" for w in words
                                                    for r in "ab"), encoding="utf-8")
    assert main(["agreement", str(p), "--coefficient", "percent_agreement", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["result"]["n_units"] == 4  # every id and every rating kept, none read as missing
    frame = _io.read_csv_text(p, missing=["NA"])
    assert frame["rating"].isna().sum() == 1  # only what is declared missing is


def test_fleiss_with_many_categories_is_refused_fast(tmp_path, capsys):
    p = tmp_path / "r.csv"
    p.write_text("item_id,rater,rating\n" + "".join(f"i{i},{r},L{i}{r}\n" for i in range(2000) for r in "ab"),
                 encoding="utf-8")
    assert main(["agreement", str(p), "--coefficient", "fleiss_kappa"]) == 65
    err = capsys.readouterr().err
    assert "distinct categories 4000" in err and "categories=1000" in err and "`rating`" in err
    assert main(["--limit", "categories=5000", "agreement", str(p), "--coefficient", "fleiss_kappa"]) == 0


def test_alt_test_neg_rmse_refuses_non_finite_labels(tmp_path, capsys):
    from evaltk.judges import alt_test

    humans = {h: {f"i{i}": float((i + k) % 5) for i in range(30)} for k, h in enumerate("abc")}
    judge = {f"i{i}": float(i % 5) for i in range(30)}
    for bad in ("NaN", "Infinity", "1e999"):
        text = json.dumps(humans).replace("1.0", bad, 1)
        h, j = tmp_path / "h.json", tmp_path / "j.json"
        h.write_text(text)
        j.write_text(json.dumps({"judge": judge}))
        assert main(["calibration", "alt-test", str(h), str(j), "--metric", "neg_rmse"]) == 66
        assert str(h) in capsys.readouterr().err
    humans["a"]["i3"] = float("inf")
    with pytest.raises(InputError, match="finite labels") as e:
        alt_test(humans, judge, metric="neg_rmse")
    assert e.value.record == "a/i3"


def test_ingest_json_on_clean_input(tmp_path, capsys):
    assert main(["ingest", str(_traces(tmp_path)), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dropped"] == 0 and doc["by_reason"] == [{"kind": "run", "status": "kept", "reason": None, "n": 6}]


def test_gate_manifest_problems_are_exit_65_naming_the_field(tmp_path, capsys):
    import shutil

    v1 = tmp_path / "v1"
    assert main(["score", str(_traces(tmp_path, n=30)), "--out", str(v1)]) == 0
    doc = json.loads((v1 / "manifest.json").read_text())
    m = next(iter(doc["measures"]))
    for name, change in (("not-object", lambda d: d["measures"].__setitem__(m, "x")),
                         ("cal-list", lambda d: d["measures"][m].__setitem__("calibration", [1])),
                         ("cal-str", lambda d: d["measures"][m].__setitem__("calibration", "yes"))):
        c = tmp_path / name
        shutil.copytree(v1, c)
        bad = json.loads(json.dumps(doc))
        change(bad)
        (c / "manifest.json").write_text(json.dumps(bad))
        capsys.readouterr()
        assert main(["gate", "--baseline", str(v1), "--candidate", str(c)]) == 65, name
        err = capsys.readouterr().err
        assert str(c / "manifest.json") in err and f"measures.{m}" in err and "Traceback" not in err


def test_scale_refuses_a_bad_parquet_partition_by_name(tmp_path, capsys):
    store = tmp_path / "store"
    (store / "a=1").mkdir(parents=True)
    (store / "a=2").mkdir()
    _traces(store / "a=1", name="p.jsonl")
    for content in (b"", b"garbage, not parquet"):
        (store / "a=2" / "p.parquet").write_bytes(content)
        # --overwrite: the first refused run leaves an unfinished output that a plain rerun refuses (64)
        assert main(["scale", "score", str(store), "--out", str(tmp_path / "o"), "--overwrite"]) == 66
        err = capsys.readouterr().err
        assert str(store / "a=2" / "p.parquet") in err and "Parquet" in err and "Traceback" not in err


def test_terminal_escapes_from_user_data_are_printed_escaped(tmp_path, capsys):
    rec = json.loads(_traces(tmp_path, n=1).read_text())
    rec.update(trace_id="ev\x1b[2J\x1b]0;pwn\x07il", steps="x")
    p = tmp_path / "e.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    assert main(["ingest", str(p)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "ev\\x1b[2J\\x1b]0;pwn\\x07il" in out
    from evaltk.cli import printable

    assert printable("a\u202eb\r\n\t") == "a\\u202eb\\x0d\n\t"


def test_ingest_and_score_share_one_exit_rule(tmp_path, capsys):
    p = _traces(tmp_path, ['{"trace_id": "bad", "status": "complete", "steps": 3}'])
    assert main(["ingest", str(p)]) == 0 and main(["score", str(p), "--out", str(tmp_path / "s")]) == 0
    assert main(["ingest", str(p), "--strict"]) == 65
    assert main(["score", str(p), "--strict", "--out", str(tmp_path / "s2")]) == 65
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "records dropped" in readme.split("## Exit codes")[1].split("\n## ")[0]


def test_arrow_frame_gives_every_text_column_the_str_dtype_whatever_the_pandas():
    """pandas 2.3's ``to_pandas()`` makes Python objects of text, which the readers then
    check one at a time (23 s against 4 s for 10^5 traces' answers); ``arrow_frame`` maps
    ``string`` and ``large_string`` to the Arrow-backed ``str`` dtype on every pandas."""
    import pyarrow as pa

    from evaltk._io import arrow_frame, str_dtype

    t = pa.table({"a": pa.array(["x", None], pa.string()), "b": pa.array(["y", ""], pa.large_string()),
                  "n": pa.array([1.5, None])})
    f = arrow_frame(t)
    assert f["a"].dtype == str_dtype() and f["b"].dtype == str_dtype()
    assert f["a"].isna().tolist() == [False, True] and f["b"].tolist() == ["y", ""]
    assert f["n"].dtype == "float64"


def test_release_memory_waits_for_growth_unless_told_always(monkeypatch):
    """Freed memory is handed back once the process has grown by a quarter (at least 256 MiB)
    since the last release; ``EVALTK_RELEASE_MEMORY=always`` releases on every call (what
    ``benchmarks/scale.py --release-always`` measures a worker's kept memory with)."""
    monkeypatch.delenv(_io.RELEASE_ENV, raising=False)
    monkeypatch.setattr(_io, "_RELEASED_AT", [2**40])  # as if last released at 1 TiB: no growth since
    _io.release_memory()
    assert _io.released_rss() == 2**40
    monkeypatch.setenv(_io.RELEASE_ENV, "always")
    _io.release_memory()
    assert 0 < _io.released_rss() < 2**40  # released now: this process's resident size
