"""The ratings adapter (issue #17): every input form gives the array path's numbers, errors name
the unit and the rater, and the boundary labels of issue #16 are handled by one declared rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltk.errors import InputError
from evaltk.stats import (
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    krippendorff_alpha,
)

LABELS = np.array(["low", "mid", "high"], dtype=object)


def _int_ratings(n: int = 300, r: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    return np.where(rng.random((n, r)) < 0.7, truth[:, None], rng.integers(0, 3, (n, r)))


def _same(a, b) -> None:
    assert a.statistic == pytest.approx(b.statistic, abs=1e-13)
    assert a.standard_error == pytest.approx(b.standard_error, abs=1e-13)
    assert (a.n_units, a.n_missing, a.n_abstained) == (b.n_units, b.n_missing, b.n_abstained)


def _forms(codes: np.ndarray) -> dict[str, object]:
    """The wide input forms an analyst holds, all spelling the same ratings as text."""
    text = LABELS[codes]
    cols = [f"r{g}" for g in range(codes.shape[1])]
    obj = pd.DataFrame(text, columns=cols)
    return {
        "object array": text,
        "numpy str array": text.astype(str),
        "object DataFrame": obj,
        "pandas str DataFrame": obj.astype("str"),
        "Arrow string DataFrame": obj.astype(pd.ArrowDtype(__import__("pyarrow").string())),
        "categorical DataFrame": obj.astype(pd.CategoricalDtype(["high", "low", "mid", "unused"])),
    }


@pytest.mark.parametrize("form", list(_forms(np.zeros((1, 3), int))))
@pytest.mark.parametrize("fn", [fleiss_kappa, gwet_ac1, conger_kappa])
def test_every_wide_form_gives_the_numbers_of_the_object_array(form, fn):
    codes = _int_ratings()
    forms = _forms(codes)
    _same(fn(forms[form]), fn(forms["object array"]))


@pytest.mark.parametrize("form", ["object", "str", "arrow", "category", "numpy str"])
def test_two_text_series_give_the_numbers_of_two_lists(form):
    codes = _int_ratings(r=2)
    a, b = (pd.Series(LABELS[codes[:, g]]) for g in range(2))
    conv = {"object": lambda s: s, "str": lambda s: s.astype("str"),
            "arrow": lambda s: s.astype(pd.ArrowDtype(__import__("pyarrow").string())),
            "category": lambda s: s.astype("category"),
            "numpy str": lambda s: s.to_numpy().astype(str)}[form]
    _same(cohen_kappa(conv(a), conv(b)), cohen_kappa(a.tolist(), b.tolist()))


def test_an_int_dataframe_and_a_long_table_give_the_numbers_of_the_array():
    codes = _int_ratings(r=4).astype(float)
    codes[::7, 1] = np.nan
    wide = pd.DataFrame(codes, index=[f"u{i}" for i in range(codes.shape[0])], columns=list("abcd"))
    long = wide.stack().rename("rating").rename_axis(["item_id", "rater"]).reset_index()
    for fn in (fleiss_kappa, conger_kappa):
        _same(fn(wide), fn(codes))
        _same(fn(data=long), fn(codes))
    _same(krippendorff_alpha(data=long, level="interval"), krippendorff_alpha(codes, level="interval"))


def test_a_categorical_long_table_gives_the_numbers_of_the_text_one():
    codes = _int_ratings(r=3)
    long = pd.DataFrame({"item_id": np.repeat(np.arange(codes.shape[0]), 3).astype(str),
                         "rater": np.tile(["x", "y", "z"], codes.shape[0]),
                         "rating": LABELS[codes.reshape(-1)]})
    cat = long.astype("category")
    _same(fleiss_kappa(data=cat), fleiss_kappa(data=long))


def test_errors_name_the_unit_and_the_rater_of_every_form():
    wide = pd.DataFrame({"alice": ["yes", "no", "yes"], "bob": ["yes", "maybe", "no"]},
                        index=["t1", "t2", "t3"])
    with pytest.raises(InputError, match="'maybe' \\(rater 'bob'\\)") as e:
        fleiss_kappa(wide, categories=["yes", "no"])
    assert e.value.record == "t2"
    long = wide.rename_axis("item_id").reset_index().melt("item_id", var_name="rater", value_name="rating")
    with pytest.raises(InputError, match="'maybe' \\(rater 'bob'\\)") as e:
        fleiss_kappa(data=long, categories=["yes", "no"])
    assert e.value.record == "t2"
    with pytest.raises(InputError, match="rater 'bob' rated item 't1' more than once") as e:
        fleiss_kappa(data=pd.concat([long, long.iloc[[3]]], ignore_index=True))
    assert e.value.record == 6
    ints = pd.DataFrame({"alice": [0, 1, 1], "bob": [0, 2, 1]}, index=["t1", "t2", "t3"])
    with pytest.raises(InputError, match="label 2 \\(rater 'bob'\\)") as e:
        cohen_kappa(ints, categories=[0, 1])
    assert e.value.record == "t2"
    with pytest.raises(InputError, match="missing 'rater' label") as e:
        fleiss_kappa(data=long.assign(rater=long["rater"].where(long.index != 4)))
    assert e.value.record == 4


# ----------------------------------------------------------------- issue #16, the ratings input


@pytest.mark.parametrize("call", [
    lambda r, **k: krippendorff_alpha(r, level="ordinal", **k),
    lambda r, **k: cohen_kappa(r[:, 0], r[:, 1], weights="linear", **k),
    lambda r, **k: fleiss_kappa(r, weights="quadratic", **k),
    lambda r, **k: gwet_ac2(r, weights="ordinal", **(k or {"categories": None})),
])
def test_an_order_is_never_guessed_from_text(call):
    """Issue #16: without declared categories, ordinal and weighted statistics sorted text labels
    alphabetically (high < low < mid) and reported ordinal alpha 0.148 where the order gives 0.708."""
    codes = _int_ratings(r=2)
    text = LABELS[codes]
    with pytest.raises(InputError, match="declare it with `categories="):
        call(text)
    declared = call(text, categories=list(LABELS))
    assert declared.statistic == pytest.approx(call(codes).statistic, abs=1e-12)


def test_ordinal_alpha_of_issue_16_takes_the_declared_order():
    r = np.array([["low", "low"], ["mid", "mid"], ["high", "high"], ["low", "mid"], ["mid", "high"],
                  ["high", "high"], ["low", "low"], ["mid", "low"]], dtype=object)
    ranks = {"low": 0, "mid": 1, "high": 2}
    as_ints = np.vectorize(ranks.get)(r)
    got = krippendorff_alpha(r, level="ordinal", categories=["low", "mid", "high"])
    assert got.statistic == pytest.approx(krippendorff_alpha(as_ints, level="ordinal").statistic, abs=1e-12)


@pytest.mark.parametrize("blank", ["", " ", "\t", "nan", "NaN"])
def test_blank_and_nan_text_is_no_rating(blank):
    """Issue #16: a white-space label and the text 'nan' became categories silently."""
    r = _int_ratings(n=60, r=3).astype(object)
    with_none = r.copy()
    with_none[::5, 1] = None
    with_text = r.copy()
    with_text[::5, 1] = blank
    a, b = fleiss_kappa(with_text), fleiss_kappa(with_none)
    _same(a, b)
    assert a.n_missing == 12 and len(a.categories) == 3


def test_a_numpy_string_array_with_nan_matches_the_missing_ratings():
    """np.array(["a", np.nan]) holds the text 'nan': it is a missing rating, not a category
    (on irrCAC's cac.raw.g1g2 layout Fleiss' kappa was 0.494 instead of Gwet's 0.657)."""
    obj = np.array([["a", "a", None], ["b", "b", "b"], ["a", None, "a"], ["c", "c", "b"],
                    ["b", None, None], ["a", "b", "a"], ["c", "c", "c"]], dtype=object)
    as_str = np.where(pd.isna(obj), np.nan, obj).astype(str)
    assert "nan" in as_str
    _same(fleiss_kappa(as_str), fleiss_kappa(obj))
    assert fleiss_kappa(as_str).categories == ("a", "b", "c")


@pytest.mark.parametrize("level", ["nominal", "interval", "ratio"])
def test_an_infinite_rating_is_refused_by_unit_and_rater(level):
    """Issue #16: an inf rating made alpha abstain with 'all pairable values are equal'."""
    r = pd.DataFrame({"ann": [1.0, 2.0, 3.0, 2.0], "ben": [1.0, 2.0, math.inf, 2.0]},
                     index=["i1", "i2", "i3", "i4"])
    with pytest.raises(InputError, match="rating inf \\(rater 'ben'\\) is not a finite number") as e:
        krippendorff_alpha(r, level=level)
    assert e.value.record == "i3"


def test_unit_patterns_reads_labels_by_the_same_rules():
    """The mergeable summary reads ratings through the same adapter: blank text is missing,
    an unknown label names its unit and rater, and its Fleiss' kappa is the function's."""
    from evaltk.stats import unit_patterns

    frame = pd.DataFrame({"ann": ["a", "b", " ", "a"], "ben": ["a", "b", "b", "nan"], "cy": ["b", "b", "b", "a"]},
                         index=["u1", "u2", "u3", "u4"])
    up = unit_patterns(frame)
    assert up.categories == ("a", "b") and up.n_units == 4
    assert up.statistic("fleiss_kappa") == pytest.approx(fleiss_kappa(frame).statistic, abs=1e-12)
    with pytest.raises(InputError, match="rater 'cy'") as e:
        unit_patterns(frame, categories=["a"])
    assert e.value.record == "u1"


# ----------------------------------------------------------------- issue #17, the long table


def _id_forms(long: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The same long table with its item and rater ids in every dtype a reader gives them."""
    pa = __import__("pyarrow")
    text = long.assign(item_id="item-" + long["item_id"].astype(str), rater="r" + long["rater"].astype(str))
    ids = ["item_id", "rater"]
    digest = {c: long[c].map(lambda v: __import__("hashlib").sha256(str(v).encode()).hexdigest()) for c in ids}
    half = len(long) // 2
    return {
        "int ids": long,
        "object int ids": long.astype({c: object for c in ids}),
        "hex digest ids (no order)": long.assign(**{c: d.str[:32] for c, d in digest.items()}).astype(
            {c: "str" for c in ids}),
        "80-character ids (no order)": long.assign(**{c: d + d[::-1].str[:16] for c, d in digest.items()}).astype(
            {c: "str" for c in ids}),
        "chunked pandas str ids": pd.concat([text.iloc[:half].astype({c: "str" for c in ids}),
                                             text.iloc[half:].astype({c: "str" for c in ids})]),
        "object text ids (the CLI's CSV)": text.astype({c: object for c in ids}),
        "pandas str ids (Parquet, read_csv)": text.astype({c: "str" for c in ids}),
        "Arrow string ids": text.astype({c: pd.ArrowDtype(pa.string()) for c in ids}),
        "Arrow large_string ids": text.astype({c: pd.ArrowDtype(pa.large_string()) for c in ids}),
        "categorical ids": text.astype({c: "category" for c in ids}),
    }


def _long_of(codes: np.ndarray, abstain_every: int = 0) -> pd.DataFrame:
    """One row per rating, grouped by item with the raters in one order (as a wide table melts)."""
    n, r = codes.shape
    rating = LABELS[codes.reshape(-1)].astype(object)
    if abstain_every:
        rating[::abstain_every] = "cannot_tell"
        rating[5::abstain_every + 2] = None          # a missing rating: a row with no label
    return pd.DataFrame({"item_id": np.repeat(np.arange(n) * 7 + 3, r), "rater": np.tile(np.arange(r), n),
                         "rating": rating})


def _py(x):
    return x.item() if isinstance(x, np.generic) else x


def _wide_of(long: pd.DataFrame) -> np.ndarray:
    n_units = int(long["item_id"].nunique())
    wide = np.full((n_units, long["rater"].nunique()), None, dtype=object)
    units = {u: i for i, u in enumerate(pd.unique(long["item_id"]))}
    raters = {g: j for j, g in enumerate(pd.unique(long["rater"]))}
    for u, g, v in long[["item_id", "rater", "rating"]].itertuples(index=False):
        wide[units[u], raters[g]] = v
    return wide


@pytest.mark.parametrize("layout", ["grouped", "shuffled", "incomplete", "interleaved", "by rater",
                                    "by rater, incomplete"])
@pytest.mark.parametrize("form", list(_id_forms(_long_of(np.zeros((1, 2), int)))))
@pytest.mark.parametrize("fn", [fleiss_kappa, gwet_ac1, conger_kappa])
def test_a_long_table_with_any_ids_gives_the_wide_statistic(fn, form, layout):
    """The long table read by the CLI (text ids) gives exactly what its wide array gives,
    whatever the row order: grouped by item (the fast layout), shuffled, with ratings left
    out (items of unequal runs), with the raters in a different order per item, or grouped
    by rater (each rater's ratings in one run, the items in one order)."""
    codes = _int_ratings(n=200, r=4, seed=3)
    long = _long_of(codes, abstain_every=11)
    rng = np.random.default_rng(5)
    if layout == "shuffled":
        long = long.iloc[rng.permutation(len(long))]
    elif layout == "incomplete":
        long = long.iloc[np.sort(rng.choice(len(long), size=len(long) - 60, replace=False))]
    elif layout == "interleaved":  # each item's raters in a rotated order
        unit, rater = np.repeat(np.arange(200), 4), np.tile(np.arange(4), 200)
        long = long.iloc[np.lexsort(((rater - unit) % 4, unit))]
    elif layout.startswith("by rater"):
        long = long.iloc[np.lexsort((np.repeat(np.arange(200), 4), np.tile(np.arange(4), 200)))]
        if layout.endswith("incomplete"):
            long = long.drop(index=long.index[rng.choice(len(long), size=60, replace=False)])
    long = long.reset_index(drop=True)
    table = _id_forms(long)[form]
    wide = _wide_of(long)
    got, want = fn(data=table), fn(wide)
    if layout in ("grouped", "by rater") and form != "categorical ids":
        assert got.statistic == want.statistic and got.standard_error == want.standard_error
    _same(got, want)
    assert got.n_abstained == want.n_abstained > 0 and got.n_missing == want.n_missing > 0


@pytest.mark.parametrize("form", ["object text ids (the CLI's CSV)", "pandas str ids (Parquet, read_csv)",
                                  "Arrow string ids", "int ids"])
def test_a_long_table_refuses_a_repeated_unit_and_rater_by_name(form):
    """A duplicate (unit, rater) is refused naming both and the row, however it hides: an item
    coming back in a later run of rows, or a rater twice inside every item's run."""
    long = _long_of(_int_ratings(n=50, r=3, seed=1))
    again = pd.concat([long, long.iloc[[6, 7, 8]]], ignore_index=True)   # item 2 (id 17) rated again at the end
    table = _id_forms(again)[form]
    item, rater = (_py(table[c].iloc[150]) for c in ("item_id", "rater"))
    with pytest.raises(InputError, match=f"rater {rater!r} rated item {item!r} more than once") as e:
        fleiss_kappa(data=table)
    assert e.value.record == 150 and e.value.field == "rating"
    twice = long.assign(rater=np.tile([0, 1, 0], 50))                    # rater 0 twice in every item
    table = _id_forms(twice)[form]
    with pytest.raises(InputError, match=f"rater {_py(table['rater'].iloc[2])!r} rated item "
                                         f"{_py(table['item_id'].iloc[2])!r} more than once") as e:
        fleiss_kappa(data=table)
    assert e.value.record == 2
    by_rater = long.iloc[np.lexsort((long["item_id"].to_numpy(), long["rater"].to_numpy()))].reset_index(drop=True)
    by_rater.loc[by_rater.index % 50 == 1, "item_id"] = by_rater.loc[0, "item_id"]   # item 3 twice per rater
    table = _id_forms(by_rater)[form]
    with pytest.raises(InputError, match=f"rater {_py(table['rater'].iloc[1])!r} rated item "
                                         f"{_py(table['item_id'].iloc[1])!r} more than once") as e:
        fleiss_kappa(data=table)
    assert e.value.record == 1


@pytest.mark.parametrize("form", ["object text ids (the CLI's CSV)", "pandas str ids (Parquet, read_csv)",
                                  "Arrow string ids"])
def test_errors_of_a_text_id_long_table_name_the_unit_and_rater_as_text(form):
    long = _long_of(_int_ratings(n=30, r=3, seed=2))
    long.loc[40, "rating"] = "maybe"                                       # item 13 (id 94), rater 1
    table = _id_forms(long)[form]
    with pytest.raises(InputError, match="label 'maybe' \\(rater 'r1'\\)") as e:
        fleiss_kappa(data=table, categories=list(LABELS))
    assert e.value.record == "item-94" and type(e.value.record) is str
    for col, row in (("item_id", 31), ("rater", 31), ("rater", 1)):
        missing = table.copy()
        missing.loc[row, col] = None
        with pytest.raises(InputError, match=f"missing {col!r} label") as e:
            fleiss_kappa(data=missing)
        assert e.value.record == row


def test_a_long_table_keeps_the_units_and_raters_in_order_of_first_appearance():
    """Unit order decides which units a bootstrap draws: text ids in a grouped table give the
    interval of the wide array, resample for resample."""
    codes = _int_ratings(n=80, r=3, seed=4)
    long = _long_of(codes)
    table = _id_forms(long)["pandas str ids (Parquet, read_csv)"]
    a = fleiss_kappa(data=table, method="percentile", n_resamples=200, rng=7)
    b = fleiss_kappa(_wide_of(long), method="percentile", n_resamples=200, rng=7)
    assert a.confidence_interval == b.confidence_interval


@pytest.mark.parametrize("form", ["pandas str ids (Parquet, read_csv)", "int ids"])
def test_runs_of_unequal_length_with_raters_in_a_cycle_are_not_taken_for_a_complete_table(form):
    """Raters cycling a, b, c over runs of 3, 1, 5 and 3 rows: item 2 holds b and c twice."""
    long = pd.DataFrame({"item_id": np.repeat([0, 1, 2, 3], [3, 1, 5, 3]), "rater": np.tile([0, 1, 2], 4),
                         "rating": LABELS[_int_ratings(n=4, r=3).reshape(-1)]})
    table = _id_forms(long)[form]
    with pytest.raises(InputError, match=f"rater {_py(table['rater'].iloc[7])!r} rated item "
                                         f"{_py(table['item_id'].iloc[7])!r} more than once") as e:
        fleiss_kappa(data=table)
    assert e.value.record == 7


@pytest.mark.parametrize("layout", ["grouped", "by rater", "shuffled"])
def test_a_long_table_longer_than_the_first_look_gives_the_wide_statistic(layout):
    """Past the first 4,096 rows the adapter looks at before it compares whole columns."""
    codes = _int_ratings(n=1500, r=4, seed=6)
    long = _long_of(codes, abstain_every=9)
    if layout == "by rater":
        long = long.iloc[np.lexsort((long["item_id"].to_numpy(), long["rater"].to_numpy()))]
    elif layout == "shuffled":
        long = long.iloc[np.random.default_rng(8).permutation(len(long))]
    long = long.reset_index(drop=True)
    table = _id_forms(long)["pandas str ids (Parquet, read_csv)"]
    got, want = conger_kappa(data=table), conger_kappa(_wide_of(long))
    _same(got, want)
    if layout != "shuffled":
        assert got.statistic == want.statistic and got.standard_error == want.standard_error


def test_object_ids_keep_bytes_and_text_apart_as_factorize_does():
    """b"t1" and "t1" are two items to pandas.factorize; the run shortcut must not merge them."""
    long = pd.DataFrame({"item_id": np.array([b"t1", b"t1", "t1", "t1", b"t2", b"t2"], dtype=object),
                         "rater": ["a", "b"] * 3, "rating": [1, 1, 2, 1, 2, 2]})
    got = fleiss_kappa(data=long)
    assert got.n_units == 3
    _same(got, fleiss_kappa(_wide_of(long)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-200, 200).map(float), st.just(math.nan),
                          st.sampled_from([0.5, -0.0, 127.0, 128.0, -128.0, -129.0, 1e6])),
                min_size=1, max_size=40))
def test_float_labels_encode_as_their_distinct_values(values):
    """Float ratings by every route (the int8 cast of small ranges, the int64 cast, the sort)
    give each cell the code of its value among the sorted distinct values, -1 where missing."""
    _check_float_codes(values)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-4, 5).map(float), st.just(math.nan), st.sampled_from([-128.0, 127.0])),
                min_size=1, max_size=40))
def test_few_float_labels_encode_as_their_distinct_values(values):
    """The usual ratings, a few whole numbers (counted by comparisons when the range holds at most
    eight, with or without NaN, with gaps, near the int8 bounds), encode as every other route."""
    _check_float_codes(values)


def _check_float_codes(values):
    from evaltk.stats._ratings import _uniques

    flat = np.asarray(values, dtype=float)
    got = _uniques(flat)
    miss = np.isnan(flat)
    distinct = sorted(set(flat[~miss].tolist()))
    assert got.labels == distinct
    span = max(distinct, default=0) - min(distinct, default=0)
    if span != 1e6:  # (at exactly 10^6 the missing-value sentinel decides the route)
        integral = all(v.is_integer() for v in distinct) and span < 1e6
        assert all(isinstance(v, int if integral else float) for v in got.labels)  # integral floats: int labels
    want = np.array([-1 if m else distinct.index(v) for v, m in zip(flat.tolist(), miss, strict=True)])
    np.testing.assert_array_equal(got.codes, want)
    np.testing.assert_array_equal(got.counts, [int((flat == v).sum()) for v in distinct])
    assert (got.missing is None) == (not miss.any())
    # int8 codes only from the few-values route: whole numbers whose range, with a NaN's sentinel
    # just below the minimum, is at most 8 values within int8
    low = min(distinct, default=0) - bool(miss.any())
    few = (bool(distinct) and all(v.is_integer() for v in distinct) and max(distinct) - low < 8
           and -128 <= low and max(distinct) <= 127)
    assert got.codes.dtype == (np.int8 if few else np.intp)
    from evaltk.stats._ratings import _encode_uniques
    for narrow in (False, True):   # the category codes: intp unless a caller asks for narrow ones
        rt = _encode_uniques(got, (flat.size, 1), categories=None, abstain=(), fn="f", narrow=narrow)
        np.testing.assert_array_equal(rt.codes.reshape(-1), want)
        assert rt.codes.dtype == (np.int8 if narrow and few else np.intp)


_PAIR_LABELS = st.sampled_from(["pass", "fail", "partial", "Cannot tell", "", None, math.nan, "nan"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_PAIR_LABELS, _PAIR_LABELS), min_size=1, max_size=30),
       st.sampled_from(["series", "category", "frame", "arrow"]),
       st.sampled_from([None, ["fail", "partial", "pass"], ["pass", "fail"]]))
def test_two_label_columns_give_the_numbers_and_errors_of_two_lists(pairs, form, categories):
    """Two label columns take a table built from each column's own codes (no units x 2 code
    matrix); two lists take the general path: the results, the counts and the errors agree."""
    from evaltk.stats import pabak, scott_pi

    a, b = (list(x) for x in zip(*pairs, strict=True))
    if form == "frame":
        frame = pd.DataFrame({"judge": pd.Series(a, dtype=object), "human": pd.Series(b, dtype=object)})
        args: tuple = (frame.set_axis([f"u{i}" for i in range(len(a))]),)
    elif form == "category":
        args = (pd.Series(a, dtype="category"), pd.Series(b, dtype="category"))
    elif form == "arrow":
        args = tuple(pd.Series([None if isinstance(v, float) else v for v in x],
                               dtype=pd.ArrowDtype(__import__("pyarrow").string())) for x in (a, b))
        a, b = ([None if isinstance(v, float) else v for v in x] for x in (a, b))
    else:
        args = (pd.Series(a, dtype=object), pd.Series(b, dtype=object))
    for fn in (cohen_kappa, scott_pi, pabak):
        try:
            want = fn(a, b, categories=categories)
        except InputError as e:
            with pytest.raises(InputError) as got:
                fn(*args, categories=categories)
            msg = str(e)[str(e).index(f"{fn.__name__}:"):]  # after the record and field
            if form == "frame":
                msg = msg.replace("(rater 0)", "(rater 'judge')").replace("(rater 1)", "(rater 'human')")
            assert str(got.value)[str(got.value).index(f"{fn.__name__}:"):] == msg
            assert got.value.record == (f"u{e.record}" if form == "frame" else e.record)
            continue
        got = fn(*args, categories=categories)
        assert (got.n_units, got.n_missing, got.n_abstained, got.n_units_pairable) == \
            (want.n_units, want.n_missing, want.n_abstained, want.n_units_pairable)
        assert got.categories == want.categories
        for x, y in ((got.statistic, want.statistic), (got.standard_error, want.standard_error)):
            assert (x == pytest.approx(y, abs=1e-13)) if isinstance(y, float) else type(x) is type(y)


def test_two_label_columns_bootstrap_by_cluster_as_two_lists():
    """The on-demand cells and the both-rated mask of two label columns feed a clustered
    bootstrap exactly as the general path's codes do."""
    rng = np.random.default_rng(3)
    words = np.array(["pass", "fail", "partial", None], dtype=object)
    a, b = words[rng.integers(0, 4, 400)], words[rng.integers(0, 4, 400)]
    clusters = rng.integers(0, 40, 400)
    kw = dict(method="percentile", n_resamples=200, rng=7, unit="cluster", clusters=clusters)
    got = cohen_kappa(pd.Series(a, dtype="category"), pd.Series(b, dtype="category"), **kw)
    want = cohen_kappa(list(a), list(b), **kw)
    assert got.confidence_interval == want.confidence_interval
    assert got.statistic == pytest.approx(want.statistic, abs=1e-13)


@pytest.mark.parametrize(("n", "r", "q"), [(3000, 20, 10), (500, 5, 4), (60, 3, 3)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float32])
def test_narrow_rating_dtypes_give_the_numbers_of_int64(n, r, q, dtype):
    """Ratings held in a narrow dtype code as the int64 ones do: every route that counts unit
    types (many raters and categories, a few rater patterns) does its arithmetic on wide codes
    (int8 codes once overflowed to negative bincount indices with 20 raters x 10 categories)."""
    rng = np.random.default_rng(n)
    truth = rng.integers(0, q, n)
    x = np.where(rng.random((n, r)) < 0.6, truth[:, None], rng.integers(0, q, (n, r)))
    xf = x.astype(float)
    xf[rng.random(x.shape) < 0.1] = np.nan
    for fn, kw in ((fleiss_kappa, {}), (gwet_ac1, {}), (conger_kappa, {}), (krippendorff_alpha, {"level": "nominal"})):
        want = fn(x, **kw)
        got = fn(x.astype(dtype), **kw)
        assert (got.statistic, got.standard_error) == (want.statistic, want.standard_error), (fn.__name__, dtype)
        if dtype is np.float32:   # and with missing ratings (NaN)
            want, got = fn(xf, **kw), fn(xf.astype(dtype), **kw)
            assert (got.statistic, got.standard_error) == (want.statistic, want.standard_error), fn.__name__
