"""Empirical coverage of every interval method evaltk offers for agreement (issue #16).

Two exchangeable raters label n items (binary) drawn from a population table with a known
percent agreement, Cohen's kappa, Gwet's AC1 and Krippendorff's alpha
(:func:`evaltk.judges.population_table`); for every n in (20, 50, 200, 1000) and two
populations (``moderate``: agreement 0.80, kappa 0.60; ``near_perfect``: agreement 0.98,
kappa 0.96) it draws ``--reps`` samples and counts how often each interval covers the
population value:

* percent agreement: ``wald`` (the old default: analytic, normal quantile), ``analytic_t``,
  ``wilson`` (the new default), bootstrap ``percentile`` and ``bca``; the peers
  ``statsmodels.stats.proportion.proportion_confint`` ``normal`` and ``wilson`` on the same
  samples;
* Cohen's kappa: ``analytic_z``, ``analytic_t``, ``percentile``, ``bca``; the peer
  ``statsmodels.stats.inter_rater.cohens_kappa`` (asymptotic, normal);
* Gwet's AC1 and nominal Krippendorff's alpha: ``analytic_z``, ``analytic_t``, ``percentile``, ``bca``.

An interval that abstains (a sample at the boundary: every item agrees, so the SE is 0 or
every resample is equal) is counted in ``abstained``; ``coverage`` is over the intervals
given, ``coverage_all`` counts an abstention as a miss (the price of saying nothing).
``mc_se`` is the Monte Carlo standard error of ``coverage``.  The speed line prints evaltk
against statsmodels on the same samples (the peer measured in the same run).

Run:  python benchmarks/interval_coverage.py [--reps 1000] [--n-resamples 1000] [--seed 0]
      (``--tiny`` is the configuration ``tests/stats/test_interval_coverage.py`` runs).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from evaltk.judges import population_table
from evaltk.stats import cohen_kappa, gwet_ac1, krippendorff_alpha, percent_agreement
from evaltk.values import Abstention, EvaltkWarning

#: The populations: name -> (kappa, prevalence); percent agreement = 1 - 2 p (1 - p) (1 - kappa).
POPULATIONS: dict[str, tuple[float, float]] = {"moderate": (0.6, 0.5), "near_perfect": (0.96, 0.5)}
NS: tuple[int, ...] = (20, 50, 200, 1000)

Interval = Callable[[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]], Any]


def _ev(fn: Callable[..., Any], **kw: Any) -> Interval:
    def call(y1: np.ndarray, y2: np.ndarray, table: np.ndarray, boot: dict[str, Any]) -> Any:
        extra = boot if kw.get("method") in ("percentile", "bca") else {}
        return fn(y1, y2, categories=[0, 1], **kw, **extra).confidence_interval
    return call


def _sm_prop(method: str) -> Interval:
    def call(y1: np.ndarray, y2: np.ndarray, table: np.ndarray, boot: dict[str, Any]) -> Any:
        n = int(table.sum())
        return proportion_confint(int(table[0, 0] + table[1, 1]), n, alpha=0.05, method=method)
    return call


def _sm_kappa(y1: np.ndarray, y2: np.ndarray, table: np.ndarray, boot: dict[str, Any]) -> Any:
    if min(table.sum(axis=0).min(), table.sum(axis=1).min()) == 0:
        return None  # one rater used one category: statsmodels divides by zero
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sm_cohens_kappa(table)
    return float(r.kappa_low), float(r.kappa_upp)


#: (coefficient, method) -> the interval on one sample; "peer" rows are statsmodels.
METHODS: dict[tuple[str, str], Interval] = {
    ("percent_agreement", "wald"): _ev(percent_agreement, method="analytic", distribution="normal"),
    ("percent_agreement", "analytic_t"): _ev(percent_agreement, method="analytic", distribution="t"),
    ("percent_agreement", "wilson"): _ev(percent_agreement, method="wilson"),
    ("percent_agreement", "percentile"): _ev(percent_agreement, method="percentile"),
    ("percent_agreement", "bca"): _ev(percent_agreement, method="bca"),
    ("percent_agreement", "peer:statsmodels_normal"): _sm_prop("normal"),
    ("percent_agreement", "peer:statsmodels_wilson"): _sm_prop("wilson"),
    ("cohen_kappa", "analytic_z"): _ev(cohen_kappa, method="analytic", distribution="normal"),
    ("cohen_kappa", "analytic_t"): _ev(cohen_kappa, method="analytic", distribution="t"),
    ("cohen_kappa", "percentile"): _ev(cohen_kappa, method="percentile"),
    ("cohen_kappa", "bca"): _ev(cohen_kappa, method="bca"),
    ("cohen_kappa", "peer:statsmodels"): _sm_kappa,
    ("gwet_ac1", "analytic_z"): _ev(gwet_ac1, method="analytic", distribution="normal"),
    ("gwet_ac1", "analytic_t"): _ev(gwet_ac1, method="analytic", distribution="t"),
    ("gwet_ac1", "percentile"): _ev(gwet_ac1, method="percentile"),
    ("gwet_ac1", "bca"): _ev(gwet_ac1, method="bca"),
    ("krippendorff_alpha", "analytic_z"): _ev(krippendorff_alpha, level="nominal", method="analytic",
                                              distribution="normal"),
    ("krippendorff_alpha", "analytic_t"): _ev(krippendorff_alpha, level="nominal", method="analytic",
                                              distribution="t"),
    ("krippendorff_alpha", "percentile"): _ev(krippendorff_alpha, level="nominal", method="percentile"),
    ("krippendorff_alpha", "bca"): _ev(krippendorff_alpha, level="nominal", method="bca"),
}


def truths(kappa: float, prevalence: float) -> dict[str, float]:
    """Population values: agreement, kappa, AC1 (pe = 2 pi (1 - pi)) and alpha (= Scott's pi = kappa here)."""
    pa = float(np.trace(population_table(kappa, prevalence)))
    pe_ac1 = 2.0 * prevalence * (1.0 - prevalence)
    return {"percent_agreement": pa, "cohen_kappa": kappa, "gwet_ac1": (pa - pe_ac1) / (1.0 - pe_ac1),
            "krippendorff_alpha": kappa}


def _cell(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cells = np.repeat(np.arange(4), table.ravel())
    return cells // 2, cells % 2


def run(reps: int, seed: int, *, ns: tuple[int, ...] = NS, n_resamples: int = 1000,
        populations: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """One row per (population, n, coefficient, method): coverage, abstained, width, time."""
    rng = np.random.default_rng(seed)
    rows = []
    for pop, (kappa, prev) in (populations or POPULATIONS).items():
        truth = truths(kappa, prev)
        probs = population_table(kappa, prev).ravel()
        for n in ns:
            stats = {k: {"hit": 0, "given": 0, "width": 0.0, "seconds": 0.0} for k in METHODS}
            for _ in range(reps):
                table = rng.multinomial(n, probs).reshape(2, 2)
                y1, y2 = _cell(table)
                boot = {"n_resamples": n_resamples, "rng": rng}
                for key, fn in METHODS.items():
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", EvaltkWarning)
                        try:
                            ci = fn(y1, y2, table, boot)
                        except ValueError:  # statsmodels on a degenerate table
                            ci = None
                    st = stats[key]
                    st["seconds"] += time.perf_counter() - t0
                    if ci is None or isinstance(ci, Abstention) or not all(math.isfinite(v) for v in ci):
                        continue
                    st["given"] += 1
                    st["width"] += ci[1] - ci[0]
                    st["hit"] += ci[0] <= truth[key[0]] <= ci[1]
            for (coef, method), st in stats.items():
                cov = st["hit"] / st["given"] if st["given"] else math.nan
                rows.append({
                    "population": pop, "truth": truth[coef], "n": n, "coefficient": coef, "method": method,
                    "coverage": cov, "coverage_all": st["hit"] / reps,
                    "mc_se": math.sqrt(cov * (1 - cov) / st["given"]) if st["given"] else math.nan,
                    "abstained": reps - st["given"],
                    "mean_width": st["width"] / st["given"] if st["given"] else math.nan,
                    "ms_per_interval": 1000 * st["seconds"] / reps,
                })
    return pd.DataFrame(rows)


def defaults_supported(df: pd.DataFrame) -> list[str]:
    """The default choices the table supports, read from it (not typed in).

    Read on the ``moderate`` population at n <= 200, where every method gives an interval
    on (almost) every sample: near perfect agreement the analytic and bootstrap intervals
    abstain on the samples where every item agrees, so their coverage there is over the
    other samples only and cannot rank z against t.  The measure is the mean absolute
    distance of coverage from 0.95 over those n.
    """
    out = []
    mod = df[(df["population"] == "moderate") & (df["n"] <= 200)]
    if mod.empty:
        return ["no moderate-population cell with n <= 200 in this run"]
    cov = mod.set_index(["coefficient", "method", "n"])["coverage"].sort_index()

    def dist(coef: str, method: str) -> float:
        return float((cov.loc[(coef, method)] - 0.95).abs().mean())

    ns = sorted(int(n) for n in mod["n"].unique())
    for coef in ("cohen_kappa", "gwet_ac1", "krippendorff_alpha"):
        z, t = dist(coef, "analytic_z"), dist(coef, "analytic_t")
        cz = ", ".join(f"{v:.3f}" for v in cov.loc[(coef, "analytic_z")])
        ct = ", ".join(f"{v:.3f}" for v in cov.loc[(coef, "analytic_t")])
        out.append(f"{coef}, moderate, n = {ns}: t {ct} vs z {cz}; mean |coverage - 0.95| t {t:.4f}, z {z:.4f} "
                   f"-> {'t' if t <= z else 'z'}")
    near = df[df["population"] == "near_perfect"].set_index(["coefficient", "method", "n"])["coverage_all"].sort_index()
    if not near.empty:
        w = ", ".join(f"{v:.3f}" for v in near.loc[("percent_agreement", "wilson")])
        wald = ", ".join(f"{v:.3f}" for v in near.loc[("percent_agreement", "peer:statsmodels_normal")])
        out.append(f"percent agreement, near perfect, n = {sorted(int(n) for n in df['n'].unique())}: wilson covers {w} "
                   f"(never abstains); the Wald interval (statsmodels normal, no abstention) {wald} -> wilson")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--tiny", action="store_true", help="a few samples at n = 20 and 50 (the test's run)")
    ap.add_argument("--csv", help="also write the table to this CSV file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    reps, ns, nb = (args.reps, NS, args.n_resamples) if not args.tiny else (5, (20, 50), 100)
    df = run(reps, args.seed, ns=ns, n_resamples=nb)
    if args.csv:
        df.to_csv(args.csv, index=False)
    pd.set_option("display.width", 200)
    print(f"Coverage of nominal 95% intervals ({reps} samples per cell, seed {args.seed}, "
          f"{nb} bootstrap resamples; load average at start {load:.2f})")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    ours = df[(df["coefficient"] == "percent_agreement") & (df["method"] == "wilson")]["ms_per_interval"].sum()
    peer = df[df["method"] == "peer:statsmodels_wilson"]["ms_per_interval"].sum()
    k_ours = df[(df["coefficient"] == "cohen_kappa") & (df["method"] == "analytic_t")]["ms_per_interval"].sum()
    k_peer = df[df["method"] == "peer:statsmodels"]["ms_per_interval"].sum()
    print(f"\nspeed (same samples): percent agreement wilson {ours:.3f} ms vs statsmodels proportion_confint "
          f"{peer:.3f} ms (ratio {peer / ours:.2f}x, evaltk starts from labels, statsmodels from counts); "
          f"kappa analytic {k_ours:.3f} ms vs statsmodels cohens_kappa {k_peer:.3f} ms "
          f"(ratio {k_peer / k_ours:.2f}x)")
    print("\ndefaults the table supports:")
    for line in defaults_supported(df):
        print(f"  {line}")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s; load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
