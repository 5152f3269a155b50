"""Speed of evaltk.stats against the libraries people use today and the NumPy floor, in one run.

Run:  .venv/bin/python benchmarks/agreement.py [--quick] [--rounds N] [--only N ...]

Every workload is timed in interleaved rounds: each round runs every contender once
(in a rotating order), so a burst of load on the shared machine hits all of them alike;
a ratio is the median over rounds of the per-round (paired) ratio, printed with its
range over the rounds, for wall-clock time and for the process's CPU time (which other
jobs on the machine disturb much less).  BLAS runs single-threaded.  The load average is printed at the
start and the end: read each ratio against it.

Workloads (issue #17):

1. Cohen's kappa, n = 10^6 int labels: two arrays, two Series, a units x 2 DataFrame;
   floor: ``np.bincount`` of the cell codes and kappa from the table; peer:
   ``sklearn.metrics.cohen_kappa_score``.
2. Cohen's kappa, n = 10^5 text labels in every form an analyst holds (object and NumPy
   string arrays, pandas ``str``, Arrow-backed and categorical Series, a text DataFrame):
   against the int-array path on the same ratings, against ``pd.factorize`` of both
   columns (the floor for text), and sklearn on the same labels.
3. Fleiss' kappa, 100,000 units x 5 raters: an array, a units x raters DataFrame, the long
   table ``data=`` (int ids; pandas ``str`` ids, as Parquet and ``pandas.read_csv`` give them;
   object ids; the table the CLI's CSV reader ``read_csv_text`` gives; rows grouped by item, by rater, shuffled,
   or with 5% of the ratings left out); floor: a NumPy Fleiss from ``np.bincount``; peer:
   statsmodels ``aggregate_raters`` + ``fleiss_kappa`` on the ready array, and on the same
   long table after the ``pivot`` it needs first (the fair peer on a long table).
4. Krippendorff's alpha, 20 coders x 20,000 units, 10% missing, every level: the statistic
   alone (``ci=False``) and the default call (with its interval) against a NumPy
   coincidence-matrix alpha (the floor) and ``krippendorff.alpha``.
5. Conger's kappa with its SE against Gwet's AC1 (with its SE) on the same 100,000 x 5
   ratings; and irrCAC's Conger, AC1, Fleiss and Krippendorff (timed when irrCAC is
   installed: its 0.4.4 release pins pandas < 3, scipy == 1.12 and coverage < 7, so it is
   not in the dev extra; ``pip install --no-deps irrCAC`` keeps the venv's own versions,
   where a plain install downgrades pandas, NumPy and SciPy under everything else timed).
6. The 95% percentile and BCa bootstrap interval of kappa, n = 10^4, 2,000 resamples:
   ``scipy.stats.bootstrap`` with a vectorised NumPy kappa (paired rounds) and with
   scikit-learn's kappa (the way users call it; timed at fewer resamples and scaled, as
   the line says).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def paired(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, np.ndarray]:
    """Wall and CPU times (rounds, 2) of every contender, interleaved: round k runs each once,
    order rotated."""
    names = list(contenders)
    for f in contenders.values():   # warm up (imports, caches)
        f()
    out = {k: np.empty((rounds, 2)) for k in names}
    for k in range(rounds):
        order = names[k % len(names):] + names[:k % len(names)]
        for name in order:
            t0, c0 = time.perf_counter(), time.process_time()
            contenders[name]()
            out[name][k] = (time.perf_counter() - t0, time.process_time() - c0)
    return out


def ratio(t: dict[str, np.ndarray], num: str, den: str, col: int = 0) -> str:
    r = t[num][:, col] / np.maximum(t[den][:, col], 1e-9)
    return f"{np.median(r):8.2f}x  [{r.min():.2f}-{r.max():.2f}]"


def report(title: str, t: dict[str, np.ndarray], rows: list[tuple[str, str, str, str]]) -> None:
    """Print ``label: num / den`` for each row (wall clock, then CPU time), with the median wall times."""
    print(f"\n{title}")
    for label, num, den, goal in rows:
        print(f"  {label:<58} wall {ratio(t, num, den)}  cpu {ratio(t, num, den, 1)}   "
              f"({num} {np.median(t[num][:, 0]) * 1e3:.2f} ms, {den} {np.median(t[den][:, 0]) * 1e3:.2f} ms)"
              f"{'   goal ' + goal if goal else ''}")


def np_kappa_from_codes(a: np.ndarray, b: np.ndarray, q: int) -> float:
    t = np.bincount(a * q + b, minlength=q * q).reshape(q, q) / a.size
    po, pe = np.trace(t), t.sum(1) @ t.sum(0)
    return float((po - pe) / (1 - pe))


def np_fleiss(raw: np.ndarray, q: int) -> float:
    n, m = raw.shape
    c = np.bincount((np.arange(n)[:, None] * q + raw).reshape(-1), minlength=n * q).reshape(n, q)
    p = c.sum(0) / (n * m)
    pbar = ((c * (c - 1)).sum(1) / (m * (m - 1))).mean()
    pe = (p * p).sum()
    return float((pbar - pe) / (1 - pe))


def np_alpha(data: np.ndarray, values: np.ndarray, level: str) -> float:
    """Krippendorff's alpha from the coincidence matrix, plain NumPy (units x coders, NaN missing)."""
    n, _ = data.shape
    q = values.size
    ok = ~np.isnan(data)
    codes = np.searchsorted(values, np.where(ok, data, values[0]))
    rows = np.broadcast_to(np.arange(n)[:, None], data.shape)
    c = np.bincount((rows * q + codes)[ok], minlength=n * q).reshape(n, q).astype(float)
    m = c.sum(1)
    c, m = c[m >= 2], m[m >= 2]
    cw = c / (m - 1)[:, None]
    o = cw.T @ c - np.diag(cw.sum(0))
    nc = o.sum(1)
    tot = nc.sum()
    if level == "nominal":
        d2 = 1.0 - np.eye(q)
    elif level == "interval":
        d2 = (values[:, None] - values[None, :]) ** 2
    elif level == "ratio":
        d2 = ((values[:, None] - values[None, :]) / (values[:, None] + values[None, :])) ** 2
    else:
        cs = np.cumsum(nc)
        k = np.arange(q)
        lo, hi = np.minimum(k[:, None], k[None, :]), np.maximum(k[:, None], k[None, :])
        d2 = (cs[hi] - np.concatenate([[0.0], cs[:-1]])[lo] - (nc[lo] + nc[hi]) / 2.0) ** 2
    do = (o * d2).sum()
    de = (nc[:, None] * nc[None, :] * d2).sum() / (tot - 1.0)
    return float(1.0 - do / de)


def cohen_section(rounds: int, rng: np.random.Generator) -> None:
    from sklearn.metrics import cohen_kappa_score

    from evaltk.stats import cohen_kappa

    n = 1_000_000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    sa, sb = pd.Series(a), pd.Series(b)
    frame = pd.DataFrame({"judge": a, "human": b})
    k = cohen_kappa(a, b).statistic
    assert abs(cohen_kappa_score(a, b) - k) < 1e-12 and abs(np_kappa_from_codes(a, b, 3) - k) < 1e-12
    assert cohen_kappa(frame).statistic == k and cohen_kappa(sa, sb).statistic == k
    t = paired({"floor": lambda: np_kappa_from_codes(a, b, 3), "arrays": lambda: cohen_kappa(a, b),
                "Series": lambda: cohen_kappa(sa, sb), "DataFrame": lambda: cohen_kappa(frame),
                "sklearn": lambda: cohen_kappa_score(a, b)}, rounds)
    report("1. Cohen's kappa, n = 10^6 int labels (evaltk also computes both SEs and an interval)", t, [
        ("arrays / NumPy floor", "arrays", "floor", ""),
        ("two Series / arrays", "Series", "arrays", "<= 2x"),
        ("units x 2 DataFrame / arrays", "DataFrame", "arrays", "<= 2x"),
        ("sklearn / arrays", "sklearn", "arrays", ">= 10x"),
        ("sklearn / DataFrame", "sklearn", "DataFrame", ">= 10x"),
    ])


def text_section(rounds: int, rng: np.random.Generator) -> None:
    import pyarrow as pa
    from sklearn.metrics import cohen_kappa_score

    from evaltk.stats import cohen_kappa

    n = 100_000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    words = np.array(["fail", "partial", "pass"], dtype=object)
    oa, ob = words[a], words[b]
    forms: dict[str, tuple[object, object]] = {
        "object arrays": (oa, ob),
        "NumPy str arrays": (oa.astype(str), ob.astype(str)),
        "pandas str Series": (pd.Series(oa).astype("str"), pd.Series(ob).astype("str")),
        "Arrow string Series": (pd.Series(oa).astype(pd.ArrowDtype(pa.string())),
                                pd.Series(ob).astype(pd.ArrowDtype(pa.string()))),
        "categorical Series": (pd.Series(oa).astype("category"), pd.Series(ob).astype("category")),
    }
    frame = pd.DataFrame({"judge": oa, "human": ob}).astype("str")
    k = cohen_kappa(a, b).statistic
    for x, y in forms.values():
        assert abs(cohen_kappa(x, y).statistic - k) < 1e-12
    assert abs(cohen_kappa(frame).statistic - k) < 1e-12
    contenders: dict[str, Callable[[], object]] = {
        "int arrays": lambda: cohen_kappa(a, b),
        "sklearn": lambda: cohen_kappa_score(oa, ob),
        "text DataFrame": lambda: cohen_kappa(frame),
        "factorize text DataFrame": lambda: (pd.factorize(frame["judge"]), pd.factorize(frame["human"])),
    }
    for name, (x, y) in forms.items():
        contenders[name] = lambda x=x, y=y: cohen_kappa(x, y)
        contenders[f"factorize {name}"] = lambda x=x, y=y: (pd.factorize(x), pd.factorize(y))
    t = paired(contenders, rounds)
    rows = []
    for name in [*forms, "text DataFrame"]:
        rows.append((f"{name} / pd.factorize of its two columns", name, f"factorize {name}", "<= 2x"))
        rows.append((f"{name} / int arrays", name, "int arrays", ""))
    rows.append(("sklearn (object arrays) / pandas str Series", "sklearn", "pandas str Series", ">= 10x"))
    rows.append(("sklearn (object arrays) / object arrays", "sklearn", "object arrays", ">= 10x"))
    report("2. Cohen's kappa, n = 10^5 text labels (3 words), every input form", t, rows)


def fleiss_section(rounds: int, rng: np.random.Generator) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    from evaltk.stats import fleiss_kappa

    n, m = 100_000, 5
    truth = rng.integers(0, 4, n)
    raw = np.where(rng.random((n, m)) < 0.6, truth[:, None], rng.integers(0, 4, (n, m)))
    wide = pd.DataFrame(raw, columns=[f"rater_{g}" for g in range(m)])
    long = pd.DataFrame({"item_id": np.repeat(np.arange(n), m), "rater": np.tile(np.arange(m), n),
                         "rating": raw.reshape(-1)})
    text_ids = long.assign(item_id="item-" + long["item_id"].astype(str), rater="r" + long["rater"].astype(str))
    tables = {  # the same ratings as a long table, one row per rating
        "str ids": text_ids.astype({"item_id": "str", "rater": "str"}),       # Parquet, pandas.read_csv
        "object ids": text_ids.astype({"item_id": object, "rater": object}),  # a frame of Python strings
        "CLI's CSV": cli_table(text_ids),  # what `evaltk agreement FILE.csv` reads: read_csv_text, numeric ratings
    }
    tables["str ids, by rater"] = tables["str ids"].iloc[np.lexsort((long["item_id"], long["rater"]))]
    tables["str ids, shuffled"] = tables["str ids"].iloc[rng.permutation(n * m)]
    incomplete = tables["str ids"].iloc[np.sort(rng.choice(n * m, size=n * m * 19 // 20, replace=False))]
    k = fleiss_kappa(raw).statistic
    for got in (sm_fleiss(aggregate_raters(raw)[0]), np_fleiss(raw, 4), fleiss_kappa(wide).statistic,
                fleiss_kappa(data=long).statistic, *(fleiss_kappa(data=t).statistic for t in tables.values()),
                *(sm_fleiss(aggregate_raters(pivot(t))[0]) for t in tables.values())):
        assert abs(got - k) < 1e-12, (got, k)
    contenders: dict[str, Callable[[], object]] = {
        "floor": lambda: np_fleiss(raw, 4), "array": lambda: fleiss_kappa(raw),
        "DataFrame": lambda: fleiss_kappa(wide), "long int ids": lambda: fleiss_kappa(data=long),
        "incomplete": lambda: fleiss_kappa(data=incomplete),
        "statsmodels": lambda: sm_fleiss(aggregate_raters(raw)[0])}
    for name, t in tables.items():
        contenders[name] = lambda t=t: fleiss_kappa(data=t)
        contenders[f"pivot+sm {name}"] = lambda t=t: sm_fleiss(aggregate_raters(pivot(t))[0])
    t = paired(contenders, rounds)
    rows = [
        ("array / NumPy floor", "array", "floor", ""),
        ("units x raters DataFrame / array", "DataFrame", "array", "<= 2x"),
        ("statsmodels / array", "statsmodels", "array", ">= 10x"),
        ("statsmodels / long table data= (int ids)", "statsmodels", "long int ids", ">= 10x"),
    ]
    for name, what in (("str ids", "pandas str ids (Parquet)"), ("object ids", "object ids"),
                       ("CLI's CSV", "the CLI's CSV reader (read_csv_text)"),
                       ("str ids, by rater", "str ids, rows by rater"),
                       ("str ids, shuffled", "str ids, rows shuffled")):
        rows.append((f"statsmodels (array) / data=, {what}", "statsmodels", name, ">= 10x"))
        rows.append((f"statsmodels after pivot of it / data=, {what}", f"pivot+sm {name}", name, ">= 10x"))
    rows += [("long table (int ids) / array", "long int ids", "array", ""),
             ("long table (str ids) / array", "str ids", "array", ""),
             ("long table (str ids, 5% of rows left out) / array", "incomplete", "array", "")]
    report("3. Fleiss' kappa, 100,000 units x 5 raters (long tables: 500,000 rows, grouped by item "
           "unless said)", t, rows)


def cli_table(long: pd.DataFrame) -> pd.DataFrame:
    """The long table as the agreement command reads it: written to CSV, read back by
    ``evaltk._io.read_csv_text`` (every cell text), the ratings then numbers, as the command
    makes them when every rating reads as one."""
    import tempfile

    from evaltk._io import read_csv_text

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ratings.csv")
        long.to_csv(path, index=False)
        t0 = time.process_time()
        frame = read_csv_text(path, empty_is_missing=True)
        cpu = time.process_time() - t0
    print(f"  (read_csv_text of the {len(frame):,}-row CSV: {cpu * 1e3:.0f} ms CPU; columns "
          f"{', '.join(f'{c} {frame[c].dtype}' for c in frame.columns)})")
    return frame.assign(rating=pd.to_numeric(frame["rating"]))


def pivot(long: pd.DataFrame) -> np.ndarray:
    """The peer's first step on a long table: pandas pivots it to units x raters."""
    return long.pivot(index="item_id", columns="rater", values="rating").to_numpy()


def alpha_section(rounds: int, rng: np.random.Generator) -> None:
    import krippendorff

    from evaltk.stats import krippendorff_alpha

    units, coders = 20_000, 20
    truth = rng.integers(1, 6, units)
    data = np.where(rng.random((units, coders)) < 0.7, truth[:, None],
                    rng.integers(1, 6, (units, coders))).astype(float)
    data[rng.random(data.shape) < 0.10] = np.nan
    values = np.arange(1.0, 6.0)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        ours = krippendorff_alpha(data, level=level, ci=False).statistic
        for got in (np_alpha(data, values, level), krippendorff.alpha(reliability_data=data.T,
                                                                      level_of_measurement=level)):
            assert abs(got - ours) < 1e-9, (level, got, ours)
        default = krippendorff_alpha(data, level=level)
        t = paired({"floor": lambda lv=level: np_alpha(data, values, lv),
                    "statistic": lambda lv=level: krippendorff_alpha(data, level=lv, ci=False),
                    "default": lambda lv=level: krippendorff_alpha(data, level=lv),
                    "krippendorff": lambda lv=level: krippendorff.alpha(reliability_data=data.T,
                                                                        level_of_measurement=lv)}, rounds)
        report(f"4. Krippendorff's alpha, {level}, 20 coders x 20,000 units, 10% missing "
               f"(default interval: {default.method})", t, [
                   ("statistic alone (ci=False) / NumPy floor", "statistic", "floor", "<= 3x"),
                   (f"default call ({default.method} interval) / NumPy floor", "default", "floor", ""),
                   ("krippendorff / statistic alone", "krippendorff", "statistic", ">= 1x"),
                   (f"krippendorff / default call ({default.method} interval)", "krippendorff", "default", ">= 1x"),
               ])


def conger_section(rounds: int, rng: np.random.Generator) -> None:
    from evaltk.stats import conger_kappa, fleiss_kappa, gwet_ac1, krippendorff_alpha

    n, m = 100_000, 5
    truth = rng.integers(0, 4, n)
    full = np.where(rng.random((n, m)) < 0.6, truth[:, None], rng.integers(0, 4, (n, m))).astype(float)
    raw = full.copy()
    raw[rng.random(raw.shape) < 0.05] = np.nan
    t = paired({"conger": lambda: conger_kappa(raw), "ac1": lambda: gwet_ac1(raw)}, rounds)
    report("5. Conger's kappa with its SE", t, [
        ("Conger's kappa + SE / Gwet's AC1 + SE, 100,000 x 5, 5% missing", "conger", "ac1", "<= 3x")])
    try:
        from irrCAC.raw import CAC  # type: ignore[import-not-found]
    except ImportError:
        print("  (irrCAC is not installed: not timed)")
        return
    # irrCAC 0.4.4 counts NaN as a category (its AC1 then differs), so it gets complete ratings
    frame = pd.DataFrame(full)
    ours = {"conger": lambda: conger_kappa(full), "gwet": lambda: gwet_ac1(full),
            "fleiss": lambda: fleiss_kappa(full), "krippendorff": lambda: krippendorff_alpha(full, level="nominal")}
    for name, f in ours.items():
        peer = getattr(CAC(frame), name)()["est"]
        assert abs(peer["coefficient_value"] - f().statistic) < 1e-5, (name, peer)
    contenders: dict[str, Callable[[], object]] = {}
    for name, f in ours.items():
        contenders[name] = f
        contenders[f"irrCAC {name}"] = lambda nm=name: getattr(CAC(frame), nm)()
    t = paired(contenders, max(2, rounds // 3))
    report("5b. irrCAC (Python port, coefficient + SE + interval) vs evaltk, 100,000 x 5, complete", t,
           [(f"irrCAC {name} / evaltk", f"irrCAC {name}", name, ">= 10x") for name in ours])


def bootstrap_section(rounds: int, rng: np.random.Generator, quick: bool) -> None:
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    from evaltk.stats import cohen_kappa

    n = 10_000
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.85, a, 1 - a)

    def np_kappa(x, y, axis=-1):
        po = np.mean(x == y, axis=axis)
        px, py = np.mean(x, axis=axis), np.mean(y, axis=axis)
        pe = px * py + (1 - px) * (1 - py)
        return (po - pe) / (1 - pe)

    peer_resamples = 20 if quick else 100
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        t = paired({"evaltk": lambda m=method: cohen_kappa(a, b, method=m, n_resamples=2000, rng=1),
                    "scipy+NumPy": lambda sm=scipy_method: stats.bootstrap(
                        (a, b), np_kappa, paired=True, vectorized=True, method=sm, n_resamples=2000,
                        random_state=3)}, max(2, rounds // 3))
        # scipy + sklearn, the way users call it: timed at fewer resamples and scaled to 2,000
        # (BCa's jackknife of n calls does not scale with the resamples: timed on a part, scaled)
        t0 = time.perf_counter()
        stats.bootstrap((a, b), cohen_kappa_score, paired=True, vectorized=False, method="percentile",
                        n_resamples=peer_resamples, random_state=2)
        scaled = (time.perf_counter() - t0) / peer_resamples * 2000
        note = f"scipy+sklearn timed at {peer_resamples} resamples, scaled x{2000 // peer_resamples}"
        if method == "bca":
            calls = 400 if quick else 2000
            keep = np.ones(n, bool)
            t0 = time.perf_counter()
            for i in range(calls):
                keep[i] = False
                cohen_kappa_score(a[keep], b[keep])
                keep[i] = True
            scaled += (time.perf_counter() - t0) / calls * n
            note += f", + a jackknife of {n:,} calls timed on {calls:,} and scaled"
        ours = cohen_kappa(a, b, method=method, n_resamples=2000, rng=1).confidence_interval
        ref = stats.bootstrap((a, b), np_kappa, paired=True, vectorized=True, method=scipy_method,
                              n_resamples=2000, random_state=3).confidence_interval
        med = float(np.median(t["evaltk"][:, 0]))
        report(f"6. 95% {method} interval of Cohen's kappa, n = 10^4, B = 2,000 "
               f"(CI evaltk [{ours[0]:.4f}, {ours[1]:.4f}], scipy [{ref.low:.4f}, {ref.high:.4f}])", t, [
                   ("scipy.stats.bootstrap + NumPy kappa / evaltk", "scipy+NumPy", "evaltk", ">= 20x")])
        print(f"  {'scipy.stats.bootstrap + sklearn kappa / evaltk':<58} {scaled / med:8.0f}x"
              f"   ({note}: {scaled:.1f} s)   goal >= 1000x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per workload (default 9, quick 3)")
    ap.add_argument("--only", type=int, action="append", choices=range(1, 7), metavar="N",
                    help="run only workload N (1-6; repeat for several); default all")
    args = ap.parse_args()
    only = set(args.only or range(1, 7))
    rounds = args.rounds or (3 if args.quick else 9)
    rng = np.random.default_rng(20261130)
    warnings.simplefilter("ignore")
    print(f"evaltk.stats benchmark: median of {rounds} paired rounds [range], single-threaded BLAS; "
          f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    sections: list[Callable[[], None]] = [
        lambda: cohen_section(rounds, rng), lambda: text_section(rounds, rng),
        lambda: fleiss_section(rounds, rng), lambda: alpha_section(rounds, rng),
        lambda: conger_section(rounds, rng), lambda: bootstrap_section(rounds, rng, args.quick)]
    for number, section in enumerate(sections, 1):
        if number in only:
            section()
    print(f"\nload average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
