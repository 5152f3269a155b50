"""Shared answers joined by a shuffle, not a scan (issue 19).

Answers and labels not stored beside the traces are repartitioned once by their
trace's partition (one DuckDB join, its rows streamed into one Arrow IPC file per
partition); each partition then reads only its own rows.  Before, every partition scanned the whole answer source
(quadratic: 1.92 s per partition at 50M answer rows).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("duckdb", reason="the shuffle runs in DuckDB (the `scale` extra)")

from evaltk._io import read_ipc  # noqa: E402
from evaltk.data._datasets import make_demo  # noqa: E402
from evaltk.scale import discover_partitions, score_dataset, summarize_dataset  # noqa: E402
from evaltk.scale._remote import Root  # noqa: E402
from evaltk.scale._scale import _proc_status, _shuffle_shared  # noqa: E402

from .conftest import write_parts  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    return make_demo(n_traces=200, rng=21)


def test_each_partition_gets_exactly_its_traces_answers(demo, tmp_path):
    store = write_parts(tmp_path / "store", demo, 4, shared_answers=True)
    parts, shared = discover_partitions(store / "traces", store / "answers.parquet", store / "labels.csv")
    assert shared["answers"] and shared["labels"]
    limit = f"{(_proc_status('self', 'VmRSS') + 512 * 2**20) // 2**20}MiB"  # room for the shuffle, whatever this holds
    new, left = _shuffle_shared(parts, shared, Root(tmp_path / "out"), memory_limit=limit, temp_directory=None,
                                storage_options=None)
    assert left == {"answers": None, "labels": None}
    ids_of = [{json.loads(line)["trace_id"] for line in open(p.traces)} for p in parts]
    all_ids = set().union(*ids_of)
    tid = demo.answers["trace_id"].astype(str)
    orphans = set(tid[~tid.isin(all_ids)])
    assert orphans  # the demo has answers without a run
    n = 0
    for i, (p, ids) in enumerate(zip(new, ids_of, strict=True)):
        got = read_ipc(p.answers).to_pandas()
        mine = ids | orphans if i == 0 else ids  # the first partition also gets the rows of no partition
        assert set(got["trace_id"].astype(str)) <= mine and "evaltk_part" not in got.columns
        assert len(got) == int(tid.isin(mine).sum())
        n += len(got)
    assert n == len(demo.answers)  # every row, to be kept or ledgered


def test_more_partitions_than_open_files_split_in_levels(demo, tmp_path, monkeypatch):
    """Past ``_SHUFFLE_OPEN_FILES`` partitions the rows go to group files first, each split in
    turn: the same rows per partition, no group file left, never more files open at once."""
    import pyarrow.ipc as ipc

    import evaltk.scale._scale as S

    store = write_parts(tmp_path / "store", demo, 7, shared_answers=True)
    parts, shared = discover_partitions(store / "traces", store / "answers.parquet", None)
    flat, _ = _shuffle_shared(parts, shared, Root(tmp_path / "flat"), memory_limit=None, temp_directory=None,
                              storage_options=None)
    opened: list[int] = []
    real = ipc.new_file
    live: set[int] = set()

    class Counted:  # counts the staged files open at once
        def __init__(self, path, *a, **k):
            self.w, self.id = real(path, *a, **k), id(self)
            live.add(self.id)
            opened.append(len(live))

        def write_table(self, t):
            self.w.write_table(t)

        def close(self):
            self.w.close()
            live.discard(self.id)

    monkeypatch.setattr(ipc, "new_file", Counted)
    monkeypatch.setattr(S, "_SHUFFLE_OPEN_FILES", 2)
    lev, _ = _shuffle_shared(parts, shared, Root(tmp_path / "lev"), memory_limit=None, temp_directory=None,
                             storage_options=None)
    assert max(opened) <= 2 and len(opened) > len(parts)  # group files, then partition files
    assert sorted(p.name for p in (tmp_path / "lev" / "_shuffle" / "answers").iterdir()) == sorted(
        Path(p.answers).name for p in lev)
    for a, b in zip(flat, lev, strict=True):
        x, y = read_ipc(a.answers), read_ipc(b.answers)
        assert x.schema.metadata == y.schema.metadata and "evaltk_part" not in y.column_names
        assert x.sort_by([("evaltk_file", "ascending"), ("evaltk_record", "ascending")]).equals(
            y.sort_by([("evaltk_file", "ascending"), ("evaltk_record", "ascending")]))


def test_a_source_that_breaks_mid_stream_is_named(demo, tmp_path, monkeypatch):
    """A row group DuckDB cannot decode after the join has started streaming: Arrow hands the
    error over as an OSError; it is still the named unreadable input it was with COPY."""
    import pyarrow as pa

    import evaltk.scale._scale as S
    from evaltk.errors import UnreadableInput

    store = write_parts(tmp_path / "store", demo, 3, shared_answers=True)
    a = pa.Table.from_pandas(demo.answers, preserve_index=False)
    p = store / "answers.parquet"
    pq.write_table(pa.concat_tables([a] * 8), p, row_group_size=len(a), compression="none")
    md = pq.read_metadata(p)
    off = md.row_group(md.num_row_groups - 1).column(0).data_page_offset
    data = bytearray(p.read_bytes())
    data[off + 20:off + 2000] = b"\xff" * 1980  # the last row group's first pages; the footer intact
    p.write_bytes(bytes(data))
    monkeypatch.setattr(S, "_SHUFFLE_BATCH_ROWS", 64)  # batches go out before DuckDB reaches it
    parts, shared = discover_partitions(store / "traces", p, None)
    with pytest.raises(UnreadableInput, match="cannot shuffle the answers") as e:
        _shuffle_shared(parts, shared, Root(tmp_path / "out"), memory_limit=None, temp_directory=None,
                        storage_options=None)
    assert e.value.file == str(p)
    assert not (tmp_path / "out" / "_shuffle").exists()


def test_trace_ids_are_read_per_format_and_numbered_by_file(tmp_path):
    """The trace ids of every partition file come from one read per format (a UNION ALL of one
    read per file ran out of 1.8 GiB at 400 files), each row numbered by its file, even when a
    trace carries a field named ``filename`` of its own (DuckDB's file-name column is renamed)."""
    import duckdb
    import pyarrow as pa

    from evaltk.scale._scale import _ids_sql

    pq.write_table(pa.table({"trace_id": ["a", "b"], "filename": ["g2.parquet", "zz"]}), tmp_path / "g1.parquet")
    pq.write_table(pa.table({"trace_id": ["c", None], "filename": ["g1.parquet"] * 2}), tmp_path / "g2.parquet")
    (tmp_path / "g3.jsonl").write_text('{"trace_id": "e", "filename": "g1.parquet"}\n{"trace_id": "f"}\n')
    files = [str(tmp_path / f) for f in ("g1.parquet", "g3.jsonl", "g2.parquet")]
    con = duckdb.connect()
    got = sorted(con.sql(_ids_sql(files, "CAST(trace_id AS VARCHAR) AS t, {i} AS p")).fetchall())
    assert got == [("a", 0), ("b", 0), ("c", 2), ("e", 1), ("f", 1)]
    con.close()


def test_wide_rows_come_in_smaller_batches(tmp_path):
    """The stream's batches are held beside DuckDB, outside its memory limit: about 64 MiB of
    Arrow per batch whatever the width of a row (an answer with a long rationale), at most 2^20."""
    import duckdb
    import pyarrow as pa

    from evaltk.scale._scale import _SHUFFLE_BATCH_ROWS, _batch_rows

    con = duckdb.connect()
    narrow = pa.table({"trace_id": [f"t{i}" for i in range(20_000)], "answer": ["yes"] * 20_000})
    wide = narrow.append_column("rationale", pa.array(["why " * 1000] * 20_000))
    for name, t in (("narrow", narrow), ("wide", wide)):
        pq.write_table(t, tmp_path / f"{name}.parquet")
    assert _batch_rows(con, f"read_parquet('{tmp_path / 'narrow.parquet'}')") == _SHUFFLE_BATCH_ROWS
    rows = _batch_rows(con, f"read_parquet('{tmp_path / 'wide.parquet'}')")
    assert 1024 <= rows <= 64 * 2**20 // 4000  # 4 kB per row: about 16,000 rows
    con.close()


def test_an_interrupt_mid_stream_is_duckdbs_own_error_again():
    """The memory_limit watchdog stops the shuffle with ``con.interrupt()``; mid-stream Arrow
    raises it as an OSError, which _streamed turns back into duckdb.InterruptException (what
    _bounded reads as the watchdog's stop: exit 65, not a traceback)."""
    import duckdb

    from evaltk.scale._scale import _streamed

    con = duckdb.connect()
    reader = con.sql("SELECT range AS x FROM range(100000000)").to_arrow_reader(1024)
    got = 0
    with pytest.raises(duckdb.InterruptException):
        for batch in _streamed(reader, duckdb):
            got += batch.num_rows
            con.interrupt()
    assert 0 < got < 100_000_000
    con.close()


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_shared_answers_score_as_co_partitioned_ones(demo, tmp_path, engine):
    co = write_parts(tmp_path / "co", demo, 4)
    sh = write_parts(tmp_path / "sh", demo, 4, shared_answers=True)
    a = score_dataset(co / "traces", co / "answers", co / "labels.csv", out=tmp_path / "a", engine=engine)
    b = score_dataset(sh / "traces", sh / "answers.parquet", sh / "labels.csv", out=tmp_path / "b", engine=engine)
    pd.testing.assert_frame_equal(a.summary.to_frame(), b.summary.to_frame(), check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(a.summary.to_frame(tier="human"), b.summary.to_frame(tier="human"),
                                  check_exact=False, rtol=1e-12)
    for k in ("part-0", "part-3"):
        x = pq.read_table(tmp_path / "a" / "scores" / f"{k}.parquet").to_pandas()
        y = pq.read_table(tmp_path / "b" / "scores" / f"{k}.parquet").to_pandas()
        pd.testing.assert_frame_equal(x, y)
    assert not (tmp_path / "b" / "_shuffle").exists()
    assert summarize_dataset(tmp_path / "b").n_runs == a.summary.n_runs


def test_an_unreadable_trace_file_is_named_by_the_shuffle(demo, tmp_path):
    from evaltk.errors import UnreadableInput

    store = write_parts(tmp_path / "store", demo, 3, shared_answers=True)
    (store / "traces" / "part-1.jsonl").unlink()
    (store / "traces" / "part-1.parquet").write_bytes(b"corrupt")
    with pytest.raises(UnreadableInput, match="part-1.parquet"):
        score_dataset(store / "traces", store / "answers.parquet", out=tmp_path / "o", check_ids=False)


def test_a_repeated_trace_id_is_refused_before_the_shuffle(demo, tmp_path):
    """The id check runs first: a store it refuses spends no shuffle (the shared answers here are
    not even readable: the shuffle would have failed on them instead) and leaves an earlier
    result in ``out`` as it was, even with ``overwrite``."""
    from evaltk.errors import InputError, UnreadableInput

    store = write_parts(tmp_path / "store", demo, 3, shared_answers=True)
    score_dataset(store / "traces", store / "answers.parquet", out=tmp_path / "out")
    before = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*"))
    first = (store / "traces" / "part-0.jsonl").read_text(encoding="utf-8").splitlines()[0]
    with open(store / "traces" / "part-2.jsonl", "a", encoding="utf-8") as fh:
        fh.write(first + "\n")  # part-0's first trace, again in part-2
    (store / "answers.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="two partitions") as e:
        score_dataset(store / "traces", store / "answers.parquet", out=tmp_path / "out", overwrite=True)
    assert not isinstance(e.value, UnreadableInput) and e.value.field == "trace_id"
    assert sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*")) == before


# --------------------------------------------------------------------------- the ledger names the source


def _answers_with_faults(demo) -> pd.DataFrame:
    """The demo answers shuffled (a warehouse export is in no order), with an unknown answer word, a
    second unknown word, an identical duplicate (dropped naming the first copy's record) and a
    rater_version holding a newline (a quoted newline in CSV: the records after it start one line
    further)."""
    a = demo.answers.sample(frac=1.0, random_state=3).reset_index(drop=True)
    a.loc[37, "answer"] = "banana"
    a.loc[400, "answer"] = "kumquat"
    a.loc[12, "rater_version"] = "v1\nbeta"
    return pd.concat([a, a.iloc[[5]]], ignore_index=True)


def _write_answers(frame: pd.DataFrame, path, fmt: str) -> None:
    """``frame`` as CSV or JSONL with blank lines inside (ingest skips them, numbering by line),
    or Parquet."""
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
        return
    text = frame.to_csv(index=False) if fmt == "csv" else frame.to_json(orient="records", lines=True)
    lines = text.splitlines()
    lines[100:100] = ["", ""]
    lines[300:300] = ["   "] if fmt == "jsonl" else [""]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")


def _ledger_rows(out, kind: str = "answer") -> pd.DataFrame:
    led = pd.concat([pd.read_parquet(f) for f in sorted((out / "ledger").rglob("*.parquet"))], ignore_index=True)
    return _sorted(led[led["kind"] == kind])


def _sorted(led: pd.DataFrame) -> pd.DataFrame:
    cols = ["source", "record", "trace_id", "status", "reason", "field"]
    led = led[cols].astype({"source": str, "record": "int64", "trace_id": object, "status": str,
                            "reason": object, "field": object})
    return led.sort_values(["source", "record"], ignore_index=True)


def _direct(demo, sources, kind: str = "answer") -> pd.DataFrame:
    """The ledger ingest writes for the answer files read themselves beside every trace: every
    record, an answer without a run too (the shuffle sends the rows of no partition's trace to the
    first partition)."""
    from evaltk.ingest import ingest_traces

    ing = (ingest_traces(list(demo.traces), sources) if kind == "answer"
           else ingest_traces(list(demo.traces), labels=sources))
    return _sorted(ing.ledger[ing.ledger["kind"] == kind])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_the_ledger_names_the_shared_file_and_its_record(demo, tmp_path, fmt):
    store = write_parts(tmp_path / "store", demo, 4)
    src = tmp_path / f"export.{fmt}"
    frame = _answers_with_faults(demo)
    _write_answers(frame, src, fmt)
    ref = _direct(demo, str(src))
    bad = ref[ref["reason"].astype(str).str.contains("banana|kumquat|identical to record")]
    assert len(bad) == 3, bad  # the faults are there to be named
    score_dataset(store / "traces", src, out=tmp_path / "out")
    got = _ledger_rows(tmp_path / "out")
    pd.testing.assert_frame_equal(got, ref)
    assert not (tmp_path / "out" / "_shuffle").exists()
    assert not got["source"].str.contains("_shuffle").any() and not got["reason"].astype(str).str.contains(
        "_shuffle").any()


def test_the_record_numbers_are_the_lines_ingest_reads(demo, tmp_path):
    """Checked against the file itself, not only against ingest: a CSV record's number is the line
    its row starts on (the header is line 1)."""
    store = write_parts(tmp_path / "store", demo, 2)
    src = tmp_path / "export.csv"
    _write_answers(_answers_with_faults(demo), src, "csv")
    score_dataset(store / "traces", src, out=tmp_path / "out")
    got = _ledger_rows(tmp_path / "out")
    lines = src.read_text(encoding="utf-8").split("\n")
    for word in ("banana", "kumquat"):
        row = got[got["reason"].astype(str).str.contains(word)].iloc[0]
        assert f",{word}," in lines[row["record"] - 1], (word, row["record"])


def test_a_strict_run_names_the_shared_file_not_the_staged_copy(demo, tmp_path):
    from evaltk.errors import SchemaViolation
    from evaltk.ingest import read_answers

    store = write_parts(tmp_path / "store", demo, 4)
    src = tmp_path / "export.csv"
    frame = demo.answers.sample(frac=1.0, random_state=4).reset_index(drop=True)
    frame.loc[250, "answer"] = "banana"
    _write_answers(frame, src, "csv")
    with pytest.raises(SchemaViolation) as direct:
        read_answers(src, strict=True)
    with pytest.raises(SchemaViolation) as e:
        score_dataset(store / "traces", src, out=tmp_path / "out", strict=True)
    assert (e.value.file, e.value.record, e.value.field) == (str(src), direct.value.record, direct.value.field)
    assert "_shuffle" not in str(e.value) and "banana" in str(e.value)
    assert not (tmp_path / "out" / "_shuffle").exists()  # removed on failure too


def test_several_shared_files_in_hive_folders_each_name_their_own(demo, tmp_path):
    """A hive-partitioned store, and a folder of answer exports whose folders match none of its
    partitions: every ledger row names its own export file and its record there, for answers and
    for labels alike."""
    traces = list(demo.traces)
    for i, week in enumerate(("2026-W40", "2026-W41", "2026-W42")):
        d = tmp_path / "store" / "traces" / f"week={week}"
        d.mkdir(parents=True)
        with open(d / "part-0.jsonl", "w", encoding="utf-8") as fh:
            for r in traces[i::3]:
                fh.write(json.dumps(r) + "\n")
    frame = _answers_with_faults(demo)
    files = []
    for day, rows in (("1", frame.iloc[::2]), ("2", frame.iloc[1::2])):
        (tmp_path / "export" / f"day={day}").mkdir(parents=True)
        files.append(str(tmp_path / "export" / f"day={day}" / f"answers-{day}.csv"))
        _write_answers(rows, Path(files[-1]), "csv")
    labels = demo.labels.copy()
    labels.loc[7, "answer"] = "banana"
    labels.to_csv(tmp_path / "labels.csv", index=False)
    score_dataset(tmp_path / "store" / "traces", tmp_path / "export", tmp_path / "labels.csv", out=tmp_path / "out")
    got = _ledger_rows(tmp_path / "out")
    pd.testing.assert_frame_equal(got, _direct(demo, files))
    assert set(got["source"]) == set(files)
    pd.testing.assert_frame_equal(_ledger_rows(tmp_path / "out", "label"),
                                  _direct(demo, str(tmp_path / "labels.csv"), "label"))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_rows_selected_for_a_url_out_name_the_shared_file_and_lose_none(demo, tmp_path, fmt):
    """With an object-storage ``out`` there is no shuffle: each partition selects its rows from the
    source, and they are named the same way; the first partition also selects the rows of no
    partition's trace (an answer without a run, a line that is no record, a trace id that is no
    text), so the ledger is ingest's, row for row, as with a local ``out``."""
    import uuid

    import fsspec

    store = write_parts(tmp_path / "store", demo, 3)
    src = tmp_path / f"export.{fmt}"
    _write_answers(_answers_with_faults(demo), src, fmt)
    _with_lines_that_are_no_record(src, fmt, str(demo.traces[0]["trace_id"]))
    ref = _direct(demo, str(src))
    assert (ref["reason"].astype(str) == "answer without run").any()
    out = f"memory://evaltk-{uuid.uuid4().hex}/scored"
    score_dataset(store / "traces", src, out=out)
    fs = fsspec.filesystem("memory")
    led = pd.concat([pd.read_parquet(fs.open(f)) for f in sorted(fs.glob(out.split("://")[1] + "/ledger/*.parquet"))],
                    ignore_index=True)
    pd.testing.assert_frame_equal(_sorted(led[led["kind"] == "answer"]), ref)


# --------------------------------------------------------------------------- nothing lost


def _with_lines_that_are_no_record(path, fmt: str, tid: str) -> None:
    """Insert lines ingest keeps as malformed records: for JSONL not JSON, an array, no trace id, a
    duplicated key and a trace id that is a number; for CSV a ragged row and an unterminated quote."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if fmt == "jsonl":
        t = json.dumps(tid)
        bad = ['{"trace_id": ' + t + ', "measure": "x_task"', "[1, 2]",
               '{"measure": "x_task", "rater": "j", "answer": "yes"}',
               '{"trace_id": ' + t + ', "measure": "x_task", "rater": "j", "answer": "yes", "answer": "no"}',
               '{"trace_id": 7, "measure": "x_task", "rater": "j", "answer": "yes"}']
    else:
        bad = [f"{tid},x_task,,j", f'{tid},x_task,,"j,yes']
    lines[5:5] = bad
    path.write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_lines_that_are_no_record_are_ledgered_as_ingest_ledgers_them(demo, tmp_path, fmt):
    """Read through evaltk.ingest.answer_rows, not DuckDB's own CSV/JSON reader: a line that is no
    record (or has no trace id) is a ledger row, as in ``evaltk ingest``, not a failed or silent run."""
    store = write_parts(tmp_path / "store", demo, 3)
    src = tmp_path / f"export.{fmt}"
    _write_answers(_answers_with_faults(demo), src, fmt)
    _with_lines_that_are_no_record(src, fmt, str(demo.traces[0]["trace_id"]))
    ref = _direct(demo, str(src))
    assert ref["reason"].astype(str).str.contains("malformed").sum() >= (5 if fmt == "jsonl" else 2)
    score_dataset(store / "traces", src, out=tmp_path / "out")
    pd.testing.assert_frame_equal(_ledger_rows(tmp_path / "out"), ref)


def test_answer_rows_read_back_give_the_files_ledger(demo, tmp_path):
    """The row-level reader's rows, read by read_answers, are the file as read_answers reads it."""
    from evaltk.ingest import answer_rows, read_answers

    src = tmp_path / "export.jsonl"
    _write_answers(_answers_with_faults(demo), src, "jsonl")
    _with_lines_that_are_no_record(src, "jsonl", "t-1")
    rows = answer_rows(src)
    whole = read_answers(src)
    again = read_answers([json.loads(r) for r in rows["row"].to_pylist()])
    rec = rows["record"].to_numpy()
    got = again.ledger.assign(record=rec[again.ledger["record"].to_numpy() - 1], source=str(src))
    cols = ["record", "trace_id", "status", "reason", "field"]
    pd.testing.assert_frame_equal(got[cols].astype(object), whole.ledger[cols].astype(object))


def test_strict_cli_exits_65_at_the_sources_first_bad_row(demo, tmp_path, capsys):
    """The first malformed row of the shared file, whichever partition its trace is in: its file,
    record and field, as ``read_answers(strict=True)`` names them."""
    from evaltk.cli import main
    from evaltk.errors import SchemaViolation
    from evaltk.ingest import read_answers

    store = write_parts(tmp_path / "store", demo, 3)
    ids2 = {json.loads(line)["trace_id"] for line in open(store / "traces" / "part-2.jsonl")}
    ids0 = {json.loads(line)["trace_id"] for line in open(store / "traces" / "part-0.jsonl")}
    frame = demo.answers.sample(frac=1.0, random_state=5).reset_index(drop=True)  # an export: in no order
    first = int(frame.index[frame["trace_id"].astype(str).isin(ids2)][0])  # an early row of the last partition
    later = int(frame.index[frame["trace_id"].astype(str).isin(ids0)][-1])  # a later row of the first
    assert first < later
    frame.loc[first, "rater"] = ""
    frame.loc[later, "answer"] = "banana"
    src = tmp_path / "export.csv"
    _write_answers(frame, src, "csv")
    with pytest.raises(SchemaViolation) as direct:
        read_answers(src, strict=True)
    code = main(["scale", "score", str(store / "traces"), "--answers", str(src), "--out", str(tmp_path / "out"),
                 "--engine", "pandas", "--strict"])
    err = capsys.readouterr().err
    assert code == 65, err
    assert str(src) in err and f"line {direct.value.record}:" in err and "`rater`" in err, err
    assert direct.value.field == "rater"
    assert not (tmp_path / "out" / "_shuffle").exists()


# --------------------------------------------------------------------------- the typed route


def _clean_export(demo, path, fmt: str) -> pd.DataFrame:
    """The demo answers shuffled, with faults every row of a column can hold in one type (a JSONL
    file stays one Arrow reads: the typed route), written without a blank line or a quoted newline:
    an unknown word, a confidence out of range, an empty rater, a step on a trace-level measure, a
    negative step, an unknown measure, an empty trace id and an identical duplicate."""
    a = demo.answers.sample(frac=1.0, random_state=8).reset_index(drop=True)
    a.loc[11, "answer"] = "banana"
    a.loc[23, "confidence"] = 1.5
    a.loc[31, "rater"] = ""
    task = a.index[a["measure"] == "x_task"]
    a.loc[task[0], "step"] = 2
    ctx = a.index[a["measure"] == "x_ctx"]
    a.loc[ctx[0], "step"] = -1
    a.loc[47, "measure"] = "x_nope"
    a.loc[53, "trace_id"] = ""
    a = pd.concat([a, a.iloc[[5]]], ignore_index=True)
    if fmt == "csv":
        a.to_csv(path, index=False)
    else:
        a.to_json(path, orient="records", lines=True)
    return a


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_clean_file_travels_typed_and_is_ledgered_as_ingest_ledgers_it(demo, tmp_path, fmt):
    """No row of a clean export goes through the per-row route, and the ledger is still ingest's,
    row for row (each kind of fault named as ingest names it)."""
    from evaltk.ingest import answer_rows

    store = write_parts(tmp_path / "store", demo, 4)
    src = tmp_path / f"export.{fmt}"
    _clean_export(demo, src, fmt)
    rows = answer_rows(src)
    assert rows["row"].null_count == rows.num_rows  # typed: no JSON text
    ref = _direct(demo, str(src))
    fields = set(ref.loc[ref["status"] != "kept", "field"].dropna())
    assert {"answer", "confidence", "rater", "step", "measure", "trace_id"} <= fields, fields
    score_dataset(store / "traces", src, out=tmp_path / "out")
    pd.testing.assert_frame_equal(_ledger_rows(tmp_path / "out"), ref)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_strict_run_over_a_typed_file_names_its_first_bad_row(demo, tmp_path, fmt):
    from evaltk.errors import SchemaViolation
    from evaltk.ingest import read_answers

    store = write_parts(tmp_path / "store", demo, 3)
    src = tmp_path / f"export.{fmt}"
    _clean_export(demo, src, fmt)
    with pytest.raises(SchemaViolation) as direct:
        read_answers(src, strict=True)
    with pytest.raises(SchemaViolation) as e:
        score_dataset(store / "traces", src, out=tmp_path / "out", strict=True)
    assert (e.value.file, e.value.record, e.value.field) == (str(src), direct.value.record, direct.value.field)
    assert direct.value.field is not None and "_shuffle" not in str(e.value)


def test_jsonl_files_whose_field_types_differ_each_read_as_ingest_reads_them(demo, tmp_path):
    """A folder of JSONL exports whose fields Arrow types differently: a file whose ``step`` is
    always null (a field of no type: left out on the way, given back), and a file whose
    ``rater_version`` is a number and whose ``latency_ms`` a fraction (another type than the first
    file gave them: that file travels as JSON).  Each row is ledgered as ingest of its file does."""
    import duckdb

    from evaltk.scale._scale import _numbered_sql

    store = write_parts(tmp_path / "store", demo, 3)
    a = demo.answers.sample(frac=1.0, random_state=9).reset_index(drop=True)
    a.loc[3, "answer"] = "banana"
    (tmp_path / "export").mkdir()
    files = [str(tmp_path / "export" / f"answers-{k}.jsonl") for k in range(3)]
    a.iloc[:3000].to_json(files[0], orient="records", lines=True)
    task = a.iloc[3000:][a.iloc[3000:]["measure"] == "x_task"].copy()
    task.loc[task.index[4], "answer"] = "kumquat"
    task.to_json(files[1], orient="records", lines=True)
    odd = a.iloc[3000:][a.iloc[3000:]["measure"] != "x_task"].copy()
    odd["rater_version"] = 7
    odd["latency_ms"] = odd["latency_ms"] + 0.5
    odd.to_json(files[2], orient="records", lines=True)
    con = duckdb.connect()
    try:
        meta = _numbered_sql(str(tmp_path / "export"), con)[1]
    finally:
        con.close()
    assert meta["files"] == files and meta["schemas"][0] and meta["schemas"][1] and meta["schemas"][2] is None
    ref = _direct(demo, files)
    assert ref["reason"].astype(str).str.contains("banana|kumquat").sum() == 2
    assert (ref["field"] == "rater_version").sum() == len(odd)  # a number is no text: each row says so
    score_dataset(store / "traces", tmp_path / "export", out=tmp_path / "out")
    pd.testing.assert_frame_equal(_ledger_rows(tmp_path / "out"), ref)


def test_a_strict_run_checks_the_source_batch_by_batch_and_names_its_first_bad_row(demo, tmp_path, monkeypatch):
    """The strict check reads the source in batches (here of 100 rows): the error still names the
    first malformed row of the source, in the order of its files and records, however far in."""
    from evaltk.errors import SchemaViolation
    from evaltk.ingest import read_answers
    from evaltk.scale import _scale

    monkeypatch.setattr(_scale, "_STRICT_BATCH_ROWS", 100)
    store = write_parts(tmp_path / "store", demo, 3)
    a = demo.answers.sample(frac=1.0, random_state=6).reset_index(drop=True)
    b = a.iloc[2000:4000].reset_index(drop=True)
    b.loc[[250, 700], "answer"] = "banana"
    (tmp_path / "export").mkdir()
    first, second = tmp_path / "export" / "answers-1.csv", tmp_path / "export" / "answers-2.csv"
    a.iloc[:2000].to_csv(first, index=False)
    _write_answers(b, second, "csv")  # blank lines inside: this file comes row by row
    with pytest.raises(SchemaViolation) as direct:
        read_answers(second, strict=True)
    assert direct.value.record > 250
    with pytest.raises(SchemaViolation) as e:
        score_dataset(store / "traces", tmp_path / "export", out=tmp_path / "out", strict=True)
    assert (e.value.file, e.value.record, e.value.field) == (str(second), direct.value.record, "answer")


def test_staged_rows_in_any_order_read_as_in_their_files_order():
    """A partition's staged rows are put back in the order of their files and records (the shuffle
    usually writes them so, and then nothing is sorted): the ledger and the table are the same
    whichever order the rows come in, and each dropped row names its own file and record."""
    import numpy as np
    import pyarrow as pa

    from evaltk.scale._scale import (
        _FILE_COL,
        _RECORD_COL,
        _located_answers,
        _sources_meta,
        _with_sources,
    )

    rows = pa.table({
        "trace_id": ["a", "a", "b", "b", "c", "a"],
        "measure": ["x_task", "x_eff", "x_task", "x_task", "x_task", "x_task"],
        "step": pa.array([None] * 6, pa.int64()),
        "rater": ["j1", "j1", "j1", "j2", "j1", "j2"],
        "answer": ["yes", "lots", "no", "nope", "yes", "no"],   # "nope": not a word, dropped
        _FILE_COL: pa.array([0, 0, 0, 1, 1, 1], pa.int32()),
        _RECORD_COL: pa.array([1, 2, 5, 1, 3, 4], pa.int64()),
    })
    meta = _sources_meta("answers/", ["answers/f0.parquet", "answers/f1.parquet"], [None, None])
    ordered = _located_answers(_with_sources(rows, meta), "answers/", meta["files"], "answer", False)
    # shuffled, and the files in order with the records of each reversed
    for perm in [*(np.random.default_rng(seed).permutation(rows.num_rows) for seed in range(3)), [2, 1, 0, 5, 4, 3]]:
        got = _located_answers(_with_sources(rows.take(perm), meta), "answers/", meta["files"], "answer", False)
        pd.testing.assert_frame_equal(got.table, ordered.table)
        pd.testing.assert_frame_equal(got.ledger, ordered.ledger)
    bad = ordered.ledger[ordered.ledger["status"] == "dropped"]
    assert bad[["source", "record"]].astype(str).values.tolist() == [["answers/f1.parquet", "1"]]
    assert ordered.ledger["record"].tolist() == [1, 2, 5, 1, 3, 4]
