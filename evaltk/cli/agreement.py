"""The ``evaltk`` command-line layer for the agreement coefficients of ``evaltk.stats``."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import _io
from .._io import json_text
from ..errors import InputError
from ..stats import (
    ANALYTIC_DISTRIBUTIONS,
    DISTRIBUTION,
    INTERVAL_METHODS,
    LEVELS,
    WEIGHTS,
    AgreementResult,
    brennan_prediger,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    krippendorff_alpha,
    pabak,
    percent_agreement,
    scott_pi,
)
from ..values import ABSTAIN_WORDS, Abstention, EvaltkWarning

_CLI_COEFFICIENTS: dict[str, Callable[..., AgreementResult]] = {
    "percent_agreement": percent_agreement, "cohen_kappa": cohen_kappa, "scott_pi": scott_pi,
    "pabak": pabak, "fleiss_kappa": fleiss_kappa, "conger_kappa": conger_kappa,
    "krippendorff_alpha": krippendorff_alpha, "gwet_ac1": gwet_ac1, "gwet_ac2": gwet_ac2,
    "brennan_prediger": brennan_prediger,
}


#: A rating cell that reads as a number: ``1``, ``-2``, ``2.5``, ``.5``, ``1e3`` (nothing else:
#: no blanks around it, no ``1_000``, no ``0x1f``).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: A cell that spells a non-finite number: ``nan``, ``inf``, ``-Infinity`` (any case).
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def _line_of(frame: pd.DataFrame, index: Any) -> Any:
    """The file line of a row (kept in ``frame.attrs`` by the reader), else the row label."""
    lines = frame.attrs.get("lines")
    return lines[index] if lines is not None else index


def _numeric_ratings(frame: pd.DataFrame, rating: str, path: str) -> pd.DataFrame:
    """Turn a text rating column into numbers when every non-empty cell is a finite number.

    ``"1"`` and ``"2.5"`` are numbers; ``"None"``, ``"NA"``, ``"yes"`` are words, and one word
    keeps the whole column as text.  A column of numbers with a ``nan`` or ``inf`` cell (or
    a number too large for a float) raises :class:`~evaltk.errors.SchemaViolation` naming
    the file, line and field: a rating that is not a value.
    """
    from ..errors import SchemaViolation

    col = frame[rating]
    present = col.notna().to_numpy()
    if not present.any():
        return frame
    # each distinct text is looked at once (ratings repeat: a handful of values over many rows)
    codes, uniq = pd.factorize(col[present])
    texts = [str(u) for u in uniq]
    is_number = np.fromiter((bool(_NUMBER.fullmatch(t)) for t in texts), bool, len(texts))
    is_non_finite = np.fromiter((bool(_NON_FINITE.fullmatch(t)) for t in texts), bool, len(texts))
    if not is_number.any() or not (is_number | is_non_finite).all():
        return frame  # words (or only nan spellings, which are words here): text
    # every text is spelled as a number, so a NaN from "coerce" is one too large for a float
    # ("1e999": pandas 3 reads inf, pandas 2.3 refuses the string without saying where)
    numbers = (None if is_non_finite.any()
               else pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy())
    bad_value = is_non_finite if numbers is None else ~np.isfinite(numbers.astype(float))  # nan spelled, 1e999
    if bad_value.any():
        idx = col.index[np.flatnonzero(present)[np.flatnonzero(bad_value[codes])[0]]]  # the first such row
        raise SchemaViolation(f"rating {col[idx]!r} is not a finite number (the other ratings are "
                              "numbers)", file=path, record=_line_of(frame, idx), field=rating)
    assert numbers is not None
    if present.all():  # what pd.to_numeric gives on the whole column: int64 for integers, else float64
        values = numbers[codes]
    else:
        values = np.full(len(col), np.nan)
        values[present] = numbers[codes]
    out = frame.copy()
    out[rating] = pd.Series(values, index=col.index)
    return out


def _finite_or_raise(frame: pd.DataFrame, rating: str, path: str) -> None:
    """A typed (JSONL / Parquet) rating column may not hold ``inf`` (``1e999``)."""
    from ..errors import SchemaViolation

    col = frame[rating]
    if col.dtype.kind == "f":  # a float column: one vectorised test
        inf = np.flatnonzero(np.isinf(col.to_numpy()))
        rows = list(col.index[inf[:1]])
    else:  # mixed values: the floats among them
        rows = [idx for idx, v in col.items()
                if isinstance(v, (float, np.floating)) and not math.isnan(v) and not math.isfinite(v)][:1]
    for idx in rows:
        raise SchemaViolation(f"rating {col[idx]!r} is not a finite number", file=path,
                              record=_line_of(frame, idx), field=rating)


def _read_jsonl_table(path: str) -> pd.DataFrame:
    from .._io import loads_json, read_text
    from ..errors import SchemaViolation

    rows, lines = [], []
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        obj = loads_json(line, file=path, record=n)  # NaN / Infinity refused
        if not isinstance(obj, dict):
            raise SchemaViolation("a line must be a JSON object", file=path, record=n)
        rows.append(obj)
        lines.append(n)
    frame = pd.DataFrame(rows)
    frame.attrs["lines"] = lines
    return frame


def _read_parquet_table(path: str, rating: str) -> pd.DataFrame:
    import pyarrow.compute as pc
    import pyarrow.types as pt

    from ..errors import SchemaViolation

    table = _io.read_parquet(path)  # one thread; 0-byte or garbage files named
    if rating in table.column_names and pt.is_floating(table.schema.field(rating).type):
        nan = pc.fill_null(pc.is_nan(table.column(rating)), False).to_numpy(zero_copy_only=False)
        if nan.any():  # NaN stored as a value, not a null: not a rating
            raise SchemaViolation("rating NaN is not a finite number (a missing rating is a null)",
                                  file=path, record=str(int(nan.argmax()) + 1), field=rating)
    frame = _io.arrow_frame(table)
    frame.attrs["lines"] = [str(i + 1) for i in range(len(frame))]  # "record 3": the row
    return frame


def _read_long_table(path: str, fields: Sequence[str], rating: str) -> pd.DataFrame:
    """The long table at ``path``: CSV as text (nothing guessed), JSONL and Parquet as typed.

    CSV cells stay text (ids ``NA`` / ``None`` too; an empty cell is missing); the rating
    column becomes numbers only when every non-empty cell is a finite number
    (:func:`_numeric_ratings`).  JSONL is read strictly (a repeated key, ``NaN`` refused).
    """
    from .._io import read_csv_text
    from ..errors import SchemaViolation, UnreadableInput

    lower = path.lower()
    try:
        if lower.endswith(".parquet"):
            frame = _read_parquet_table(path, rating)
        elif lower.endswith((".jsonl", ".ndjson")):
            frame = _read_jsonl_table(path)
        else:
            frame = read_csv_text(path, empty_is_missing=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise UnreadableInput(f"cannot open: {e.strerror or e}", file=path) from None
    except (OSError, ValueError) as e:
        if isinstance(e, (UnreadableInput, SchemaViolation)):
            raise
        raise UnreadableInput(f"cannot parse as a table: {e}", file=path) from None
    except ImportError as e:  # pragma: no cover - pyarrow is a dependency
        raise UnreadableInput(f"cannot read Parquet ({e})", file=path) from None
    for col in fields:
        if col not in frame.columns:
            raise SchemaViolation(f"column {col!r} is missing; columns are {list(frame.columns)!r}",
                                  file=path, field=col)
    if lower.endswith((".parquet", ".jsonl", ".ndjson")):
        _finite_or_raise(frame, rating, path)
        return frame
    return _numeric_ratings(frame, rating, path)


def _cli_categories(values: Sequence[str] | None, column: pd.Series) -> list[Any] | None:
    """Declared categories from the command line, typed like the rating column."""
    if not values:
        return None
    if pd.api.types.is_numeric_dtype(column):
        out: list[Any] = []
        for v in values:
            try:
                x = float(v)
            except ValueError:
                out.append(v)
                continue
            out.append(int(x) if x.is_integer() else x)
        return out
    return list(values)


def _cmd_agreement(args: Any) -> int:

    from ..errors import SchemaViolation
    from ._main import EXIT_USAGE, CliError

    fn = _CLI_COEFFICIENTS[args.coefficient]
    frame = _read_long_table(args.file, (args.item, args.rater, args.rating), args.rating)
    kwargs: dict[str, Any] = dict(
        data=frame, item=args.item, rater=args.rater, rating=args.rating,
        categories=_cli_categories(args.categories, frame[args.rating]),
        abstain=ABSTAIN_WORDS if args.abstain is None else tuple(args.abstain), confidence_level=args.confidence_level,
        n_resamples=args.n_resamples, rng=args.seed,
    )
    if args.method is not None:
        if args.method == "wilson" and args.coefficient != "percent_agreement":
            raise CliError("usage: --method wilson is percent_agreement's score interval", EXIT_USAGE)
        kwargs["method"] = args.method
    if args.distribution is not None:
        kwargs["distribution"] = args.distribution
    if args.coefficient == "krippendorff_alpha":
        if args.level is None:
            raise CliError("usage: krippendorff_alpha needs --level (nominal, ordinal, interval, ratio)",
                           EXIT_USAGE)
        kwargs["level"] = args.level
    elif args.level is not None:
        raise CliError("usage: --level applies to krippendorff_alpha only", EXIT_USAGE)
    if args.coefficient in ("gwet_ac2",) and args.weights is None:
        raise CliError("usage: gwet_ac2 needs --weights", EXIT_USAGE)
    if args.weights is not None:
        if args.coefficient in ("gwet_ac1", "pabak", "krippendorff_alpha"):
            raise CliError(f"usage: --weights does not apply to {args.coefficient}", EXIT_USAGE)
        kwargs["weights"] = args.weights
    if args.coefficient == "gwet_ac2":
        kwargs.setdefault("categories", None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvaltkWarning)
            res = fn(**kwargs)
    except InputError as e:
        record = e.record  # the row label: the file's line (or record) where the reader kept it
        try:
            record = _line_of(frame, record) if record is not None else None
        except (KeyError, IndexError, TypeError):
            pass
        raise SchemaViolation(e.detail, file=args.file, record=record, field=e.field) from None
    notes = [str(w.message) for w in caught if issubclass(w.category, EvaltkWarning)]
    row = res.to_frame().iloc[0].to_dict()
    row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
    row = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
    if args.json:
        out = {"result": row, "warnings": notes}
        if res.per_category is not None:
            pc = res.per_category.astype(object).where(res.per_category.notna(), None)
            out["per_category"] = pc.to_dict(orient="records")  # type: ignore[assignment]  # pandas-stubs: str column labels
        print(json_text(out, default=str))
        return 0
    st = res.statistic
    if isinstance(st, Abstention):
        print(f"{args.coefficient}: undefined ({st.reason})")
    else:
        ci = res.confidence_interval
        ci_txt = (f"[{ci[0]:.4f}, {ci[1]:.4f}]" if not isinstance(ci, Abstention) else "no interval")
        se = res.standard_error
        se_txt = f"{se:.4f}" if not isinstance(se, Abstention) else "n/a"
        how = res.method if res.distribution is None else f"{res.method}, {res.distribution}" + (
            f" on {res.df} df" if res.distribution == "t" else "")
        print(f"{args.coefficient} = {st:.4f}  SE {se_txt}  {res.confidence_level:.0%} CI {ci_txt} ({how})")
        if isinstance(ci, Abstention):
            print(f"no interval: {ci.reason}")
    cov = res.coverage
    cov_txt = f"{cov:.3f}" if not isinstance(cov, Abstention) else "n/a"
    print(f"units {res.n_units}, pairable units {res.n_units_pairable}, pairable ratings "
          f"{res.n_pairable_ratings}, abstained {res.n_abstained}, coverage {cov_txt}")
    for note in notes:
        print(f"warning: {note}")
    return 0


def register_cli(subparsers: Any) -> None:
    """Add ``evaltk agreement``: one coefficient, its SEs and interval, from a long table."""
    import argparse

    p = subparsers.add_parser(
        "agreement",
        help="an agreement coefficient with SE and interval from a long table (item, rater, rating)",
        description=(
            "Compute one agreement coefficient from a long CSV / JSONL / Parquet table with one row "
            "per (item, rater).  Exit codes: 0 computed (an undefined coefficient is reported as such, "
            "still 0); 64 usage error; 65 input violates the format (missing column, label outside "
            "--categories, a rater rating an item twice, a rating nan or inf); 66 unreadable file.\n\n"
            "A CSV is read as text, nothing guessed: ids and ratings spelled None, NA, null or NaN "
            "stay those words; an empty cell is a missing rating.  The rating column becomes numbers "
            "only when every non-empty cell is a finite decimal number (1, -2, 2.5, 1e3), so "
            "--level interval / ratio work on numeric ratings; one word (None, NA, yes) keeps the "
            "column as text, and nan or inf among numbers is an error (exit 65, naming the line); "
            "in a text column a blank cell or the word nan (any case) is no rating, as everywhere "
            "in evaltk (evaltk.values.MISSING_TEXT).  "
            "JSONL and Parquet keep their own types."),
        epilog="Example: evaltk agreement data/examples/agreement/ratings.csv --coefficient krippendorff_alpha --level nominal "
               "--abstain cannot_tell --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="long table: CSV, JSONL (.jsonl) or Parquet (.parquet)")
    p.add_argument("--coefficient", default="krippendorff_alpha", choices=sorted(_CLI_COEFFICIENTS))
    p.add_argument("--item", default="item_id", help="item column (default item_id)")
    p.add_argument("--rater", default="rater", help="rater column (default rater)")
    p.add_argument("--rating", default="rating", help="rating column (default rating)")
    p.add_argument("--level", choices=list(LEVELS), help="Krippendorff level (required for alpha)")
    p.add_argument("--weights", choices=list(WEIGHTS), help="agreement weights")
    p.add_argument("--categories", nargs="+", help="declared category domain, in order")
    p.add_argument("--abstain", nargs="*", default=None,
                   help="labels meaning 'declined' (counted); default: the vocabulary's abstain words (cannot tell, "
                        "Unsure, ...); --abstain with no label: none")
    p.add_argument("--method", choices=list(INTERVAL_METHODS),
                   help="interval method (default: analytic; wilson for percent_agreement)")
    p.add_argument("--distribution", choices=list(ANALYTIC_DISTRIBUTIONS),
                   help=f"reference distribution of the analytic interval (default {DISTRIBUTION}: "
                        "Student's t on n - 1 df, as Gwet's irrCAC)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--n-resamples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_agreement)
