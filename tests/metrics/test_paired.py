"""Paired comparisons of models on the same docs: each formula pinned by a hand-computed case and checked
against scipy / statsmodels where they implement it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from harness.metrics.multiple_testing import benjamini_yekutieli
from harness.metrics.paired import (
    RankInterval,
    Units,
    compare_paired,
    mcnemar_p_values,
    minimum_detectable_effect,
    paired_bootstrap_interval,
    rank_intervals,
)
from harness.metrics.uncertainty import clustered_stderr


def test_mcnemar_exact_and_mid_p_by_hand_and_against_statsmodels() -> None:
    # n10 = 5, n01 = 1: X ~ Binomial(6, 1/2), P[X <= 1] = 7/64, P[X = 1] = 6/64
    exact, mid = mcnemar_p_values(5, 1)
    assert exact == pytest.approx(14 / 64) and mid == pytest.approx(8 / 64)
    assert exact == pytest.approx(mcnemar([[3, 5], [1, 2]], exact=True).pvalue)
    assert exact == pytest.approx(stats.binomtest(1, 6, 0.5).pvalue)  # the same test, as scipy runs it
    assert mcnemar_p_values(0, 0) == (1.0, 1.0)
    assert mcnemar_p_values(3, 3)[0] == 1.0  # capped at 1


def test_paired_t_by_hand_and_against_scipy() -> None:
    a, b = np.array([3.0, 4.0, 5.0, 9.0]), np.array([2.0, 2.0, 2.0, 3.0])
    stats_ab = compare_paired(a, b)  # d = 1, 2, 3, 6: mean 3, s^2 = 14/3, t = 3 / sqrt(14/12)
    assert stats_ab.test == "paired_t" and stats_ab.statistic == pytest.approx(2.777460)
    ref = stats.ttest_rel(a, b)
    assert (stats_ab.statistic, stats_ab.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    same = compare_paired([1.0, 2.0], [0.5, 1.5])  # no spread, a difference: lmms-eval's rule
    assert (same.statistic, same.p_value) == (math.inf, 0.0)
    assert (compare_paired([0.3, 0.5], [0.3, 0.5]).statistic, compare_paired([0.3, 0.5], [0.3, 0.5]).p_value) == (
        0.0,
        1.0,
    )
    assert (compare_paired([0.5], [0.2]).statistic, compare_paired([0.5], [0.2]).p_value) == (None, None)


def test_clustered_stderr_of_differences_against_statsmodels_sandwich() -> None:
    import statsmodels.api as sm

    d, groups = np.array([1.0, 1.0, 0.0, 0.0]), ["x", "x", "y", "y"]
    # dev = .5, .5, -.5, -.5; SE_CLT^2 = (1/3)/4; cross = ((1)^2 - .5) + ((-1)^2 - .5) = 1, over n^2 = 16
    se = clustered_stderr(d.tolist(), groups)
    assert se == pytest.approx(math.sqrt(1 / 12 + 1 / 16))
    # Miller's eq. 4 = the uncorrected cluster sandwich plus s^2 / n^2 (its i = j terms use n - 1)
    rng = np.random.default_rng(3)
    d = rng.normal(size=30)
    groups = list(rng.integers(0, 7, size=30))
    fit = sm.OLS(d, np.ones(30)).fit(cov_type="cluster", cov_kwds={"groups": np.array(groups), "use_correction": False})
    expected = fit.bse[0] ** 2 + np.var(d, ddof=1) / 30**2
    assert clustered_stderr(d.tolist(), groups) ** 2 == pytest.approx(expected)
    # one doc per cluster: the CLT standard error
    assert clustered_stderr(d.tolist(), list(range(30))) == pytest.approx(np.std(d, ddof=1) / math.sqrt(30))


def test_minimum_detectable_effect_by_hand_and_against_statsmodels_power() -> None:
    assert minimum_detectable_effect(0.1) == pytest.approx((1.959964 + 0.841621) * 0.1, abs=1e-6)
    sd, n = 0.4, 50
    standardized = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0)
    assert minimum_detectable_effect(sd / math.sqrt(n)) == pytest.approx(standardized * sd, rel=1e-4)
    assert minimum_detectable_effect(None) is None and minimum_detectable_effect(0.0) is None


def test_paired_bootstrap_interval_by_hand_and_against_scipy() -> None:
    # two docs, d = 0 and 1: resample means 0, .5, 1 with chances 1/4, 1/2, 1/4
    ci = paired_bootstrap_interval(np.array([0.0, 1.0]), Units.of(2, None))
    assert (ci.low, ci.high, ci.method, ci.n, ci.unit) == (0.0, 1.0, "paired_bootstrap", 2, "doc")
    rng = np.random.default_rng(0)
    d = rng.normal(0.2, 1.0, size=200)
    ours = paired_bootstrap_interval(d, Units.of(200, None), n_resamples=4000)
    ref = stats.bootstrap((d,), np.mean, n_resamples=4000, method="percentile", random_state=1).confidence_interval
    assert ours.low == pytest.approx(ref.low, abs=0.03) and ours.high == pytest.approx(ref.high, abs=0.03)
    one = paired_bootstrap_interval(np.array([1.0, 0.0]), Units.of(2, ["img", "img"], "image_id"))
    assert not one.defined and one.reason == "fewer than 2 image_ids" and one.unit == "image_id"


def test_cluster_bootstrap_draws_whole_clusters() -> None:
    # clusters {d0, d1} (sum 2, size 2) and {d2} (sum 0, size 1): resample means 1, 2/3, 0
    units = Units.of(3, ["a", "a", "b"], "image")
    assert units.count == 2 and list(units.sizes()) == [2.0, 1.0]
    ci = paired_bootstrap_interval(np.array([1.0, 1.0, 0.0]), units, n_resamples=2000)
    assert (ci.low, ci.high, ci.unit, ci.n) == (0.0, 1.0, "image", 2)


def test_compare_paired_picks_its_test() -> None:
    a = [1, 1, 1, 1, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 0, 1, 1, 0]  # n10 = 5, n01 = 1
    binary = compare_paired(a, b)
    assert binary.test == "mcnemar_midp" and binary.p_value == pytest.approx(8 / 64)
    assert binary.p_exact == pytest.approx(14 / 64) and (binary.a_better, binary.b_better) == (5, 1)
    assert binary.difference == pytest.approx(0.5) and binary.n == binary.units == 8
    d = np.array(a, float) - np.array(b, float)
    assert binary.mde == pytest.approx(minimum_detectable_effect(float(np.std(d, ddof=1)) / math.sqrt(8)))
    assert binary.interval.defined and binary.interval.low <= 0.5 <= binary.interval.high
    graded = compare_paired([0.5, 0.7, 0.9], [0.4, 0.7, 0.2])
    assert graded.test == "paired_t" and graded.p_exact is None
    assert graded.p_value == pytest.approx(stats.ttest_rel([0.5, 0.7, 0.9], [0.4, 0.7, 0.2]).pvalue)
    clustered = compare_paired(a, b, clusters=[0, 0, 1, 1, 2, 2, 3, 3], unit="image")
    assert clustered.test == "clustered_z" and clustered.units == 4 and clustered.interval.unit == "image"
    se = clustered_stderr(d.tolist(), [0, 0, 1, 1, 2, 2, 3, 3])
    assert clustered.p_value == pytest.approx(2 * stats.norm.sf(0.5 / se))


def test_rank_intervals_by_hand() -> None:
    # A = [1, 1], B = [0, 0], C = [1, 0]. Resamples: {d0,d0} 1/4, {d0,d1} 1/2, {d1,d1} 1/4.
    # C's mean 1, .5, 0: it ties A (rank 1), sits between (2), ties B (2). B: 3, 3, 2.
    scores = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    a, b, c = rank_intervals(scores, Units.of(2, None), n_resamples=4000)
    assert (a.rank, a.low, a.high) == (1, 1, 1) and a.text() == "1"
    assert (c.rank, c.low, c.high) == (2, 1, 2) and c.text() == "1-2"
    assert (b.rank, b.low, b.high) == (3, 2, 3)
    assert a.overlaps(c) and c.overlaps(b) and not a.overlaps(b)
    lower = rank_intervals(scores, Units.of(2, None), higher_is_better=False, n_resamples=4000)
    assert [r.rank for r in lower] == [3, 1, 2]
    assert RankInterval(rank=2, low=2, high=2).text() == "2"


def test_benjamini_yekutieli_by_hand_and_as_statsmodels() -> None:
    # m = 3, c(3) = 11/6: p_i * 3 * 11/6 / i = .055 each
    rejected, adjusted = benjamini_yekutieli([0.01, 0.02, 0.03], q=0.06)
    assert adjusted == pytest.approx([0.055, 0.055, 0.055]) and rejected == [True, True, True]
    p = [0.001, 0.2, 0.04, 0.03, 0.5]
    ref = multipletests(p, alpha=0.05, method="fdr_by")
    assert benjamini_yekutieli(p) == (list(ref[0]), pytest.approx(list(ref[1])))
    assert benjamini_yekutieli([]) == ([], [])
