"""Speed of evaltk.stats against the libraries people use today, measured in one run.

Run:  .venv/bin/python benchmarks/agreement.py [--quick]

Each line prints the peer's time, evaltk's time and the ratio (peer / evaltk),
both measured in this process on the same data, best of several repeats.

1. Cohen's kappa, n = 10^6 label pairs: ``sklearn.metrics.cohen_kappa_score``
   vs ``evaltk.stats.cohen_kappa`` (which also computes both SEs and an interval).
2. 95% bootstrap interval of kappa, n = 10^4 paired labels, 2,000 resamples,
   percentile and BCa: ``scipy.stats.bootstrap`` called with scikit-learn's kappa
   (the way users call it; measured with fewer resamples and scaled linearly,
   stated on the line) and with a vectorised NumPy kappa (full 2,000 resamples),
   vs ``cohen_kappa(..., method=...)``.  The intervals are printed side by side
   (they agree to Monte Carlo error).
3. Krippendorff's alpha, nominal, 20 coders x 2,000 units, 10% missing:
   ``krippendorff.alpha`` vs ``krippendorff_alpha(..., level="nominal")``.
4. Fleiss' kappa, 10,000 subjects x 5 raters from raw ratings: statsmodels'
   ``aggregate_raters`` + ``fleiss_kappa`` vs ``fleiss_kappa``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def best_time(fn, repeats: int = 5) -> float:
    """Best of ``repeats`` runs; fast calls get more runs (up to 50, or about 1 s in total)."""
    best = float("inf")
    spent = 0.0
    runs = 0
    while runs < repeats or (runs < 50 and spent < 1.0):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        runs += 1
    return best


def line(name: str, peer: float, ours: float, target: float, note: str = "") -> None:
    ratio = peer / ours
    ok = "meets" if ratio >= target else "BELOW"
    print(f"{name:<58} peer {peer * 1e3:10.2f} ms  evaltk {ours * 1e3:8.2f} ms  "
          f"ratio {ratio:9.1f}x  (target >= {target:g}x: {ok}){note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and peer resamples")
    args = ap.parse_args()
    reps = 2 if args.quick else 5
    rng = np.random.default_rng(20261130)

    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    from evaltk.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha

    print("evaltk.stats benchmark (ratio = peer time / evaltk time, same run, best of repeats)")

    # 1. Cohen's kappa at n = 10^6 ----------------------------------------------------------
    n = 1_000_000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    k_sk = cohen_kappa_score(a, b)
    k_ev = cohen_kappa(a, b).statistic
    assert abs(k_sk - k_ev) < 1e-12, (k_sk, k_ev)
    line("1. Cohen's kappa, n=10^6 (sklearn cohen_kappa_score)",
         best_time(lambda: cohen_kappa_score(a, b), reps), best_time(lambda: cohen_kappa(a, b), reps), 10)

    # 2. bootstrap interval of kappa, n = 10^4, 2,000 resamples ------------------------------
    n = 10_000
    a = rng.integers(0, 2, n)
    b = np.where(rng.random(n) < 0.85, a, 1 - a)

    def np_kappa(x, y, axis=-1):
        po = np.mean(x == y, axis=axis)
        px, py = np.mean(x, axis=axis), np.mean(y, axis=axis)
        pe = px * py + (1 - px) * (1 - py)
        return (po - pe) / (1 - pe)

    peer_resamples = 20 if args.quick else 100
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        ours_t = best_time(lambda m=method: cohen_kappa(a, b, method=m, n_resamples=2000, rng=1), reps)
        ours = cohen_kappa(a, b, method=method, n_resamples=2000, rng=1)
        # scipy + sklearn: measured with fewer resamples and scaled to 2,000. BCa's jackknife
        # (n = 10^4 calls) does not scale with the resamples, so it is timed in full once.
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stats.bootstrap((a, b), cohen_kappa_score, paired=True, vectorized=False,
                            method="percentile", n_resamples=peer_resamples, random_state=2)
        per_resample = (time.perf_counter() - t0) / peer_resamples
        scaled = per_resample * 2000
        note = f"   [scipy+sklearn timed at {peer_resamples} resamples, scaled x{2000 // peer_resamples}"
        if method == "bca":
            jack_calls = 400 if args.quick else 2000
            idx = np.arange(n)
            t0 = time.perf_counter()
            for i in range(jack_calls):
                keep = idx != i
                cohen_kappa_score(a[keep], b[keep])
            jack = (time.perf_counter() - t0) / jack_calls * n
            scaled += jack
            note += f"; + jackknife of {n} calls timed on {jack_calls} and scaled"
        note += "]"
        line(f"2. kappa 95% {method} CI, n=10^4, B=2000 (scipy+sklearn kappa)", scaled, ours_t, 1000, note)
        t_vec = best_time(lambda sm=scipy_method: stats.bootstrap(
            (a, b), np_kappa, paired=True, vectorized=True, method=sm, n_resamples=2000,
            random_state=3), 1 if method == "bca" else reps)
        ref = stats.bootstrap((a, b), np_kappa, paired=True, vectorized=True, method=scipy_method,
                              n_resamples=2000, random_state=3)
        line(f"2. kappa 95% {method} CI, n=10^4, B=2000 (scipy+NumPy kappa)", t_vec, ours_t, 20,
             f"   [CI evaltk ({ours.confidence_interval[0]:.4f}, {ours.confidence_interval[1]:.4f}) "
             f"scipy ({ref.confidence_interval.low:.4f}, {ref.confidence_interval.high:.4f})]")

    # 3. Krippendorff's alpha ---------------------------------------------------------------
    import krippendorff

    units, coders = 2000, 20
    truth = rng.integers(0, 5, units)
    data = np.where(rng.random((units, coders)) < 0.7, truth[:, None],
                    rng.integers(0, 5, (units, coders))).astype(float)
    data[rng.random(data.shape) < 0.10] = np.nan
    kp = krippendorff.alpha(reliability_data=data.T, level_of_measurement="nominal")
    ev = krippendorff_alpha(data, level="nominal").statistic
    assert abs(kp - ev) < 1e-10, (kp, ev)
    line("3. Krippendorff alpha nominal, 20 coders x 2000 units, 10% NA",
         best_time(lambda: krippendorff.alpha(reliability_data=data.T, level_of_measurement="nominal"), reps),
         best_time(lambda: krippendorff_alpha(data, level="nominal"), reps), 2)

    # 4. Fleiss' kappa from raw ratings -----------------------------------------------------
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    subjects, raters = 10_000, 5
    truth = rng.integers(0, 4, subjects)
    raw = np.where(rng.random((subjects, raters)) < 0.6, truth[:, None],
                   rng.integers(0, 4, (subjects, raters)))
    sm = sm_fleiss(aggregate_raters(raw)[0])
    ev = fleiss_kappa(raw).statistic
    assert abs(sm - ev) < 1e-12, (sm, ev)
    line("4. Fleiss kappa, 10,000 subjects x 5 raters, raw (statsmodels)",
         best_time(lambda: sm_fleiss(aggregate_raters(raw)[0]), reps),
         best_time(lambda: fleiss_kappa(raw), reps), 20)


if __name__ == "__main__":
    main()
