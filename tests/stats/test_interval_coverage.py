"""The interval-coverage benchmark (benchmarks/interval_coverage.py) runs, tiny, and says what it measured.

The real configuration's table is in docs/calibration.md ("Coverage of every interval
method"); here only the machinery is checked: every method offered has a row per cell,
coverage is a share of the intervals given, abstentions are counted, and the peer
(statsmodels) runs on the same samples.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("interval_coverage", ROOT / "benchmarks" / "interval_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tiny_run_reports_every_method_in_every_cell(capsys):
    ic = _bench()
    assert ic.main(["--tiny", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "defaults the table supports" in out and "statsmodels" in out
    df = ic.run(4, 1, ns=(20,), n_resamples=50)
    assert len(df) == len(ic.POPULATIONS) * len(ic.METHODS)
    assert set(zip(df["coefficient"], df["method"], strict=True)) == set(ic.METHODS)
    given = 4 - df["abstained"]
    hits = (df["coverage"] * given)[given > 0]
    assert np.allclose(hits, hits.round())  # a share of the intervals given
    assert df.loc[given == 0, "coverage"].isna().all()
    assert np.allclose(df["coverage_all"], df["coverage"].fillna(0) * given / 4)
    # at agreement 0.98 and n = 20 most samples agree on every item: kappa abstains there, Wilson does not
    near = df[df["population"] == "near_perfect"].set_index(["coefficient", "method"])
    assert near.loc[("percent_agreement", "wilson"), "abstained"] == 0
    assert near.loc[("cohen_kappa", "analytic_t"), "abstained"] >= near.loc[("percent_agreement", "wilson"),
                                                                          "abstained"]


def test_population_values_are_the_coefficients_of_the_population_table():
    from evaltk.judges import population_table
    from evaltk.stats import cohen_kappa, gwet_ac1
    ic = _bench()
    t = ic.truths(0.6, 0.5)
    assert t["percent_agreement"] == np.trace(population_table(0.6, 0.5)) == 0.8
    # a large sample drawn in the population's proportions gives the population values
    counts = (population_table(0.6, 0.5) * 10_000).round().astype(int)
    y1, y2 = ic._cell(counts)
    assert abs(cohen_kappa(y1, y2).statistic - t["cohen_kappa"]) < 1e-9
    assert abs(gwet_ac1(y1, y2).statistic - t["gwet_ac1"]) < 1e-3
