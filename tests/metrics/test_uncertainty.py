"""Each figure of harness.metrics.uncertainty pinned by a hand-computed case and checked against scipy or
statsmodels where they implement the formula (lmms-eval's own functions: tests/test_lmms_cross_run.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.power import NormalIndPower

from harness.metrics import uncertainty as u


def test_clt_stderr_is_s_over_root_n() -> None:
    # mean 3/4; s^2 = (3 * 0.25^2 + 0.75^2) / 3 = 0.25; SE = 0.5 / 2
    assert u.clt_stderr([1, 0, 1, 1]) == pytest.approx(0.25, abs=1e-15)
    xs = [0.2, 0.9, 0.4, 0.4, 1.0]
    assert u.clt_stderr(xs) == pytest.approx(stats.sem(xs), abs=1e-15)
    assert u.clt_stderr([1.0]) is None and u.clt_stderr([]) is None


def test_clustered_stderr_is_millers_equation_4() -> None:
    # s_bar = 0.5, d = (.5, .5, -.5, -.5); SE_CLT^2 = 1 / 3 / 4; within-cluster cross terms: 2 * (1 - 0.5) / 16
    assert u.clustered_stderr([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(math.sqrt(7 / 48), abs=1e-15)
    # singleton clusters have no cross terms: the CLT standard error
    assert u.clustered_stderr([1, 0, 1, 1], [1, 2, 3, 4]) == pytest.approx(0.25, abs=1e-15)
    # items without an id form one cluster, as lmms-eval groups them
    assert u.clustered_stderr([1, 1, 0, 0], [None, None, "b", "b"]) == pytest.approx(math.sqrt(7 / 48), abs=1e-15)
    assert u.clustered_stderr([1.0], ["a"]) is None
    with pytest.raises(ValueError):
        u.clustered_stderr([1, 0], ["a"])


def test_clustered_stderr_against_statsmodels_cluster_robust() -> None:
    """statsmodels' cluster-robust variance of an intercept without correction is sum_c (sum_i d_ic)^2 / n^2;
    eq. 4 differs from it only in the CLT part: s^2 / n instead of sum d^2 / n^2."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 2, 40).astype(float)
    groups = rng.integers(0, 7, 40)
    fit = sm.OLS(scores, np.ones(40)).fit(cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False})
    d = scores - scores.mean()
    expected = fit.bse[0] ** 2 + float(d @ d) / (40**2 * 39)
    se = u.clustered_stderr(scores.tolist(), groups.tolist())
    assert se is not None and se**2 == pytest.approx(expected, rel=1e-12)


def test_stability_metrics_by_hand() -> None:
    q = [[1, 1, 0], [0, 0, 0], [1, 1, 1], [1, 0, 0]]
    assert u.expected_accuracy(q) == 0.5  # 6 of 12 answers right
    assert u.consensus_accuracy(q) == 0.5  # majorities: right, wrong, right, wrong
    assert u.internal_variance(q) == pytest.approx((1 / 3 + 0 + 0 + 1 / 3) / 4)  # var([1,1,0]) = 1/3 (k-1)
    assert u.consistency_rate(q) == 0.5  # [0,0,0] and [1,1,1]
    assert u.consensus_accuracy([[1, 0]]) == 0.0  # a tie is no majority
    assert math.isnan(u.internal_variance([[1], [0]]))  # no question has 2 answers
    for fn in (u.expected_accuracy, u.consensus_accuracy, u.internal_variance, u.consistency_rate):
        assert math.isnan(fn([]))


def test_paired_ttest_by_hand_and_against_scipy() -> None:
    current, baseline = [1, 1, 0, 1], [0, 1, 0, 0]
    test = u.paired_ttest(current, baseline)
    # d = (1, 0, 0, 1): d_bar = 0.5, var = 1/3, se = sqrt(1/12), t = 0.5 / se = sqrt(3)
    assert test.mean_diff == 0.5 and test.se_diff == pytest.approx(math.sqrt(1 / 12))
    assert test.t_stat == pytest.approx(math.sqrt(3))
    t_crit = 3.182446305284263  # t_{0.975, 3}
    assert test.ci_lower == pytest.approx(0.5 - t_crit * math.sqrt(1 / 12))
    assert test.ci_upper == pytest.approx(0.5 + t_crit * math.sqrt(1 / 12))
    reference = stats.ttest_rel(current, baseline)
    assert test.p_value == pytest.approx(reference.pvalue, abs=1e-12)
    assert test.t_stat == pytest.approx(reference.statistic, abs=1e-12)
    assert test.n == 4


def test_paired_ttest_degenerate_cases_as_lmms_eval() -> None:
    same = u.paired_ttest([1, 0, 1], [0, -1, 0])  # every difference 1: se 0
    assert (same.t_stat, same.p_value, same.ci_lower, same.ci_upper) == (math.inf, 0.0, 1.0, 1.0)
    equal = u.paired_ttest([1, 0], [1, 0])
    assert (equal.t_stat, equal.p_value) == (0.0, 1.0)
    one = u.paired_ttest([1], [0])
    assert one.n == 1 and math.isnan(one.p_value) and math.isnan(one.mean_diff)
    with pytest.raises(ValueError):
        u.paired_ttest([1, 0], [1])


def test_power_analysis_by_hand_and_against_statsmodels() -> None:
    # sigma_diff^2 = .25 + .25 - 2 * .5 * .25 = .25, d = .03 / .5 = .06, n = ((1.959964 + 0.841621) / .06)^2
    power = u.power_analysis(0.03, current_n=1000)
    assert power.min_n == 2181 and (power.std_a, power.std_b, power.correlation) == (0.5, 0.5, 0.5)
    assert power.current_power == 0.475  # Phi(0.06 sqrt(1000) - 1.959964), to 4 places
    assert power.min_detectable_effect == 0.0443  # 2.801585 * 0.5 / sqrt(1000)
    # statsmodels' one-sample normal power (ratio=0) adds the far tail's ~1e-4, which rounding hides
    normal = NormalIndPower()
    assert power.min_n == math.ceil(normal.solve_power(effect_size=0.06, alpha=0.05, power=0.8, ratio=0))
    assert power.current_power == pytest.approx(normal.power(0.06, 1000, 0.05, ratio=0), abs=2e-4)
    only_a = u.power_analysis(0.05, std_a=0.3, correlation=0.0)
    assert only_a.std_b == 0.3 and only_a.current_power is None
    with pytest.raises(ValueError, match="no spread"):
        u.power_analysis(0.03, std_a=0.5, std_b=0.5, correlation=1.0)


def test_intervals_say_their_method_and_why_there_is_none() -> None:
    clt = u.clt_interval([1, 0, 1, 1])
    assert clt.method == "clt" and clt.n == 4 and clt.unit == "doc"
    assert (clt.low, clt.high) == pytest.approx((0.75 - u.Z95 * 0.25, 0.75 + u.Z95 * 0.25))
    assert abs(u.Z95 - 1.959963984540054) < 1e-15
    clustered = u.clustered_interval([1, 1, 0, 0], ["a", "a", "b", "b"], "image_id")
    assert clustered.method == "clustered" and clustered.n == 2 and clustered.unit == "image_id"
    assert clustered.high == pytest.approx(0.5 + u.Z95 * math.sqrt(7 / 48))
    one = u.clt_interval([1.0])
    assert not one.defined and one.reason == "fewer than 2 docs" and one.n == 1
    single_cluster = u.clustered_interval([1, 0, 1], ["a", "a", "a"], "image_id")
    assert single_cluster.reason == "fewer than 2 image_ids" and single_cluster.n == 1


def test_wilson_interval_keeps_a_width_at_zero_and_one() -> None:
    # 0 of 8: z^2 / (n + z^2) is the upper end = 3.8415 / 11.8415
    zero = u.wilson_interval(0, 8)
    assert zero.method == "wilson" and zero.low == 0.0
    assert zero.high == pytest.approx(u.Z95**2 / (8 + u.Z95**2), abs=1e-12)
    half = u.wilson_interval(4, 8)  # centre 1/2, half-width z sqrt(n/4 + z^2/4) / (n + z^2)
    assert half.high - 0.5 == pytest.approx(u.Z95 * math.sqrt(8 / 4 + u.Z95**2 / 4) / (8 + u.Z95**2), abs=1e-12)
    assert u.wilson_interval(0, 6).low == 0.0 and u.wilson_interval(6, 6).high == 1.0  # no rounding error at the ends
    assert u.wilson_interval(1, 1).reason == "fewer than 2 docs"


def test_bootstrap_interval_resamples_whole_units() -> None:
    values = [0.0, 1.0] * 20
    boot = u.bootstrap_interval(
        [[i] for i in range(40)], lambda idx: float(np.median([values[i] for i in idx])), "doc", False
    )
    assert boot.method == "bootstrap" and boot.n == 40 and boot.low == 0.0 and boot.high == 1.0
    # two clusters of constant values: every resample's mean is 0, 0.5 or 1
    clusters = [[0, 1], [2, 3]]
    flat = [0.0, 0.0, 1.0, 1.0]
    again = u.bootstrap_interval(clusters, lambda idx: float(np.mean(np.take(flat, idx))), "passage", True)
    assert again.method == "cluster_bootstrap" and again.n == 2 and (again.low, again.high) == (0.0, 1.0)
    assert u.bootstrap_interval([[0]], lambda idx: 1.0, "doc", False).reason == "fewer than 2 docs"
    undefined = u.bootstrap_interval([[0], [1]], lambda idx: None, "doc", False)
    assert undefined.reason == "the figure is undefined"
