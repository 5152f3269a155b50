"""The join: answers and labels to kept runs on ``trace_id`` (and the step index per step)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import _columns
from .._validation import as_frame
from ._answers import (
    _OPTIONAL_TEXT,
    _Flags,
    _int_view,
    _keep_rows,
    read_answers,
)
from ._records import _STR, CATEGORICAL_COLUMNS, POSITION_DTYPE, AnswerRecords
from ._series import (
    _BLOCK,
    _blocks,
    _cat_from_codes,
    _concat,
    _empty_str,
    _encode,
    _int64,
    _set_rows,
)


def _positions(keys: pd.Series, index: pd.Series) -> np.ndarray:
    """Row of each key in ``index`` (unique values), -1 where absent (an Arrow hash join)."""
    if not len(keys):
        return np.zeros(0, np.int64)
    k = pa.array(keys.astype(_STR).array)
    v = pa.array(index.astype(_STR).array)
    return _int64(pc.index_in(k, value_set=v))


def _no_run_reasons(trace_id: pd.Series, where: np.ndarray, trace_ledger: pd.DataFrame, kind: str) -> list[str]:
    """Why the answers at rows ``where`` have no run: the reason of the last trace-ledger row
    with their id ("run not kept: <reason>"), or "<kind> without run" (never seen, or seen
    without a reason).  An Arrow hash lookup into the ledger's ids read backwards (the first
    match is the last row), not a pandas index of the ledger (which turned both id columns into
    Python strings: about 0.27 GiB at 10^6 traces, alive for the rest of the join)."""
    ids = pa.array(trace_ledger["trace_id"].astype(_STR).array)
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    back = np.arange(len(ids) - 1, -1, -1)
    keys = pa.array(trace_id.astype(_STR).array).take(pa.array(where))
    hit = _int64(pc.index_in(keys, value_set=ids.take(pa.array(back))))
    reason = trace_ledger["reason"]  # a categorical (CATEGORICAL_COLUMNS), NaN where kept
    codes = np.append(reason.cat.codes.to_numpy()[back], -1)  # hit -1 (no such id) reads the -1 after them
    rcodes = codes[hit]
    # one message per ledger reason (a dropped run has many answers); code -1 (last): none
    msgs = np.array([f"run not kept: {str(x).split(':', 1)[0]}" for x in reason.cat.categories]
                    + [f"{kind} without run"], dtype=object)
    return msgs[rcodes].tolist()


def _search_steps(s_run: np.ndarray, s_idx: np.ndarray, a_run: np.ndarray, a_idx: np.ndarray,
                  n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Row in steps of each (run, index), by binary search: (rows, found)."""
    if len(s_idx) and int(s_idx.max()) < 2**31 and n_runs < 2**31:
        width = int(s_idx.max()) + 1
        skey = s_run * width + s_idx
        akey = a_run * width + np.minimum(a_idx, width - 1)
        pos = np.minimum(np.searchsorted(skey, akey), len(skey) - 1)
        found = (a_idx < width) & (skey[pos] == akey)
    elif len(s_idx):
        mi = pd.MultiIndex.from_arrays([s_run, s_idx])
        pos = mi.get_indexer(pd.MultiIndex.from_arrays([a_run, a_idx]))
        found = pos >= 0
    else:
        pos = np.zeros(len(a_idx), np.int64)
        found = np.zeros(len(a_idx), bool)
    return pos, found


def _step_rows(steps: pd.DataFrame, run_pos: np.ndarray, step: np.ndarray, sel: np.ndarray,
               n_runs: int) -> np.ndarray:
    """Row in ``steps`` of each selected (run, step index); -1 where there is none or
    the row is not selected.

    Steps are ordered by run then index; when a run's indices are consecutive (the
    usual case) step i of a run sits at a fixed offset from the run's first step, so
    most rows are found by arithmetic and only the rest by binary search.
    """
    s_run = steps["run_pos"].to_numpy(np.int64)
    s_idx = steps["index"].to_numpy(np.int64)
    m, n = len(s_idx), len(run_pos)
    same = s_run[1:] == s_run[:-1]
    if m and (s_run[0] >= 0 and s_run[-1] < n_runs and bool(np.all(s_run[1:] >= s_run[:-1]))
              and bool(np.all(s_idx[1:][same] > s_idx[:-1][same]))):
        count = np.bincount(s_run, minlength=n_runs)
        first_row = np.cumsum(count) - count
        base = first_row - s_idx[np.minimum(first_row, m - 1)]  # the row of index 0
        out = np.empty(n, np.int64)
        rest = np.empty(n, bool)
        for i in range(0, n, _BLOCK):  # in blocks: the temporaries stay small
            j = min(i + _BLOCK, n)
            r, st = run_pos[i:j], step[i:j]
            cand = np.take(base, r, mode="clip")
            cand += st
            np.clip(cand, 0, m - 1, out=cand)
            found = s_run[cand] == r
            found &= s_idx[cand] == st
            found &= sel[i:j]
            out[i:j] = np.where(found, cand, -1)
            rest[i:j] = sel[i:j] & ~found
    else:  # not in order: binary search only
        out = np.full(n, -1, np.int64)
        rest = sel
    rows = np.flatnonzero(rest)
    if rows.size:
        pos, found = _search_steps(s_run, s_idx, run_pos[rows], step[rows], n_runs)
        out[rows] = np.where(found, pos, -1)
    return out


def _int_or_float_steps(col: pd.Series) -> tuple[np.ndarray, np.ndarray, Callable[[int], int]]:
    """(step as int64, present mask, row -> the step as the message shows it); read only,
    arbitrary where absent."""
    ints = _int_view(col)
    if ints is not None:
        values, present, _ = ints
        return values, present, lambda j: int(values[j])
    f = col.to_numpy(dtype=np.float64, na_value=np.nan)
    present = ~np.isnan(f)
    return np.where(present, f, 0).astype(np.int64), present, lambda j: int(f[j])


def _combine_keys(parts: Sequence[np.ndarray], *, own_first: bool = False) -> tuple[np.ndarray, int]:
    """One non-negative int64 key per row for a tuple of integer columns (equal tuples,
    equal keys; distinct tuples, distinct keys) and the size of its key space.
    ``own_first``: the first column is an int64 array the key may be built in."""
    key = None
    space = 1
    for p in parts:
        lo = int(p.min()) if p.size else 0
        size = (int(p.max()) if p.size else 0) - lo + 1
        if key is None:
            key = p if own_first and p.dtype == np.int64 else np.array(p, np.int64)
            if lo:
                key -= lo
            space = size
            continue
        if space * size >= 2**62:  # compress what is there so far to dense ids
            u, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
            space = len(u)
        key *= size
        key += p
        if lo:
            key -= lo
        space *= size
    return key, space  # type: ignore[return-value]  # the loop set key


def _distinct_questions(ok: np.ndarray, has_step: np.ndarray, step_pos: np.ndarray,
                        run_pos: np.ndarray, n_steps: int, n_runs: int, measure: np.ndarray,
                        rater: np.ndarray) -> bool:
    """True when no rater answers one question (step or run) of one measure twice among
    the ``ok`` rows, shown cheaply; False when there may be a repeat (the caller then
    finds them exactly).

    Per-step and per-run questions are looked at apart (their keys never meet: a step's
    lies below every run's).  In the usual input each family comes in question order (a
    table grouped by trace, or by rater and measure in trace order), so a block of rows
    spans a narrow window of the key space: a bitmap over the key space finds a key seen
    in an earlier block, and the count of bits the block sets in its window, below the
    block's size, a key repeated within it.  A block whose keys spread wider than a
    small multiple of its size means a layout this does not recognise: False.  Work is
    block by block; only the bitmap is full size.
    """
    n = len(ok)
    if not n:
        return True
    m_lo, r_lo = int(measure.min()), int(rater.min())
    n_m, n_r = int(measure.max()) - m_lo + 1, int(rater.max()) - r_lo + 1
    space = (n_steps + n_runs) * n_m * n_r
    if space > 16 * n + (1 << 16):
        return False
    seen = np.zeros(space, bool)
    for i, j in _blocks(n):
        key = run_pos[i:j] + n_steps
        np.copyto(key, step_pos[i:j], where=has_step[i:j])
        key *= n_m
        key += measure[i:j]
        key -= m_lo
        key *= n_r
        key += rater[i:j]
        key -= r_lo
        block_ok, block_step = ok[i:j], has_step[i:j]
        for family in (block_ok & block_step, block_ok & ~block_step):
            fkey = key[family]
            if not fkey.size:
                continue
            lo, hi = int(fkey.min()), int(fkey.max()) + 1
            if hi - lo > 64 * fkey.size + 4096:  # not in question order: the exact check decides
                return False
            window = seen[lo:hi]
            before = np.count_nonzero(window)
            fkey -= lo
            if window[fkey].any():  # a key an earlier block holds
                return False
            window[fkey] = True
            if np.count_nonzero(window) - before != fkey.size:  # a key twice in this block
                return False
    return True


def _repeated(key: np.ndarray, space: int) -> np.ndarray:
    """True where a key occurs more than once (every copy)."""
    n = len(key)
    few_runs = n > 1 and np.count_nonzero(key[1:] < key[:-1]) < 16
    small = space <= 4 * n + 4096
    if n > 1 and (few_runs or not small):
        # usually there is no repeat at all, and a sort of the values alone shows it: a merge of a
        # few sorted runs (answers grouped by rater and measure, in trace order) is linear, and any
        # other sort is a fraction of the argsort below that finds which rows repeat (500k random
        # keys: 3.4 ms against 46 ms); a small key space is counted instead
        sk = np.sort(key, kind="stable" if few_runs else None)
        if not (sk[1:] == sk[:-1]).any():
            return np.zeros(n, bool)
        del sk
    if small:
        return np.bincount(key, minlength=space)[key] > 1
    order = np.argsort(key, kind="stable")
    sk = key[order]
    eq = sk[1:] == sk[:-1]
    d = np.zeros(n, bool)
    d[1:] |= eq
    d[:-1] |= eq
    out = np.empty(n, bool)
    out[order] = d
    return out


def _join(recs: AnswerRecords, trace_ledger: pd.DataFrame, runs: pd.DataFrame,
          steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Join answers to kept runs and steps; update the ledger.  Returns (table, ledger)."""
    kind = recs.kind
    t = recs.table
    ledger = recs.ledger
    n = len(t)
    fl = _Flags(n)
    run_pos = _positions(t["trace_id"], runs["trace_id"])
    no_run = run_pos < 0
    if no_run.any():
        where = np.flatnonzero(no_run)
        fl.add(where, _no_run_reasons(t["trace_id"], where, trace_ledger, kind), ["trace_id"] * where.size)
    # per-step: the step must exist in the run
    step, has_step, shown = _int_or_float_steps(t["step"])
    sel = has_step & ~no_run
    step_pos = _step_rows(steps, run_pos, step, sel, len(runs))
    miss = np.flatnonzero(sel & (step_pos < 0))
    if miss.size:
        fl.add(miss, [f"step not in run: the run has no step with index {shown(j)}" for j in miss],  # type: ignore[arg-type]  # a numpy int
               ["step"] * miss.size)
    # duplicated answers: the same rater answering the same question twice
    ok = ~fl.done
    mcodes, rcodes = _columns.codes(t["measure"])[0], _columns.codes(t["rater"])[0]
    if ok.any() and not _distinct_questions(ok, has_step, step_pos, run_pos, len(steps), len(runs),
                                            mcodes, rcodes):
        # one rater, one question: a question is a step (per-step measures) or a run
        question = run_pos + len(steps)
        np.copyto(question, step_pos, where=has_step)
        parts = [question, mcodes, rcodes]
        rows_ok = None if ok.all() else np.flatnonzero(ok)
        if rows_ok is not None:
            parts = [p[rows_ok] for p in parts]
        del question
        key, space = _combine_keys(parts, own_first=True)  # built in the question array
        del parts
        dup = _repeated(key, space)
        if dup.any():
            sub = np.flatnonzero(dup)
            rows = sub if rows_ok is None else rows_ok[sub]
            ans = t["answer"].iloc[rows].to_numpy(dtype=object)
            recno = t["record"].to_numpy()[rows]
            d_rows, d_reasons, d_fields = [], [], []
            for members in pd.Series(np.arange(rows.size)).groupby(key[sub], sort=False).indices.values():
                mi = np.sort(members)
                if all(ans[m] == ans[mi[0]] for m in mi):
                    for m in mi[1:]:
                        d_rows.append(rows[m])
                        d_reasons.append(f"duplicate {kind}: identical to record {int(recno[mi[0]])}")
                        d_fields.append("rater")
                else:
                    where = ", ".join(str(int(recno[m])) for m in mi)  # type: ignore[assignment]  # the name reused for the text
                    for m in mi:
                        d_rows.append(rows[m])
                        d_reasons.append(f"duplicate {kind}: conflicting answers from one rater to "
                                         f"one question (records {where}); none kept")
                        d_fields.append("answer")
            if d_rows:
                fl.add(np.asarray(d_rows, np.int64), d_reasons, d_fields)
    drop = fl.done
    any_drop = bool(drop.any())
    if any_drop:
        flagged, d_why, where_ = fl.rows()
        lrow = t["ledger_row"].to_numpy()[flagged]
        ledger = ledger.assign(status=_set_rows(ledger["status"], lrow, ["dropped"] * len(lrow)),
                               reason=_set_rows(ledger["reason"], lrow, d_why),
                               field=_set_rows(ledger["field"], lrow, where_))
    keep = ~drop
    # the checks' arrays go first: the step values and the measure and rater codes are views
    # of the table's columns, and held here they would outlive them (at 10^6 traces about
    # 0.2 GiB); the positions shrink to their table dtype now, not after the table is built
    del step, shown, has_step, sel, no_run, ok, mcodes, rcodes
    run_pos, step_pos = run_pos.astype(POSITION_DTYPE), step_pos.astype(POSITION_DTYPE)
    # the input table's columns, handed to the new table one by one: each can be freed as
    # soon as its kept rows are taken (the caller passes the records without keeping them)
    cols = {c: t[c] for c in t.columns if c not in ("ledger_row", "record")}
    del t, recs
    out = _keep_rows(cols, keep if any_drop else None)
    if any_drop:
        run_pos, step_pos = run_pos[keep], step_pos[keep]
    no_step = step_pos < 0
    np.maximum(step_pos, 0, out=step_pos)
    out["run_pos"] = run_pos
    out["step_pos"] = pd.arrays.IntegerArray(step_pos, no_step)
    # scoring reads these positions instead of looking the trace ids up again
    _columns.remember_positions(out["trace_id"], runs["trace_id"], run_pos)
    # (-1 where an answer has no step: its step_pos is 0 there and its step missing; no
    # temporary of the table's length but the remembered copies)
    step_col = out["step"].array
    if isinstance(step_col, pd.arrays.IntegerArray):
        data, mask = step_col._data, step_col._mask  # type: ignore[attr-defined]  # pandas-stubs: the masked array's buffers
        _columns.remember_step_positions(out["trace_id"], steps["trace_id"], step_pos, data, no_step | mask)
    else:  # pragma: no cover - the joined step column is Int64
        _columns.remember_step_positions(out["trace_id"], steps["trace_id"], np.where(no_step, -1, step_pos),
                                         out["step"].to_numpy(dtype=np.int64, na_value=-1))
    return out, ledger


def _empty_answers() -> pd.DataFrame:
    return _encode(pd.DataFrame({  # the joined shape
        "trace_id": _empty_str(), "measure": _empty_str(), "step": pd.Series(pd.array([], dtype="Int64")),
        "rater": _empty_str(), "answer": _empty_str(), "confidence": np.zeros(0), "cost": np.zeros(0),
        "latency_ms": np.zeros(0), **{c: _empty_str() for c in _OPTIONAL_TEXT}, "run_pos": np.zeros(0, POSITION_DTYPE),
        "step_pos": pd.Series(pd.arrays.IntegerArray(np.zeros(0, POSITION_DTYPE), np.zeros(0, bool))),
    }), CATEGORICAL_COLUMNS["answers"])


def _as_answer_sources(x: Any) -> list[Any]:
    if x is None:
        return []
    x = as_frame(x)
    if isinstance(x, str | Path | pd.DataFrame | AnswerRecords | Mapping):
        return [x]
    if isinstance(x, Sequence) and x and all(isinstance(as_frame(e), str | Path | pd.DataFrame | AnswerRecords)
                                            for e in x):
        return [as_frame(e) for e in x]
    return [x]


def _gather(x: Any, kind: str, strict: bool) -> AnswerRecords | None:
    parts = []
    for src in _as_answer_sources(x):
        if isinstance(src, AnswerRecords):
            parts.append(src if src.kind == kind else AnswerRecords(
                src.table, src.ledger.assign(kind=_cat_from_codes(np.zeros(len(src.ledger), np.int8), [kind])),
                kind))
        else:
            parts.append(read_answers(src, strict=strict, kind=kind))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    offset = np.cumsum([0] + [len(p.ledger) for p in parts[:-1]])
    tables = [p.table.assign(ledger_row=p.table["ledger_row"] + off) for p, off in zip(parts, offset, strict=True)]
    return AnswerRecords(_concat(tables), _concat([p.ledger for p in parts]), kind)
