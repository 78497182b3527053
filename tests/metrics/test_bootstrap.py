"""The one bootstrap helper: percentile intervals over whole units, as Interval values, each figure's by
hand on units whose resample distribution can be counted, and against scipy.stats.bootstrap."""

import numpy as np
import pytest
from scipy.stats import bootstrap

from harness.metrics.bootstrap import as_pair, cluster_interval, cluster_intervals


def test_a_share_of_one_in_four_units_by_hand() -> None:
    """Values 0, 0, 0, 1: a resample's mean is k/4, k ~ Binomial(4, 1/4). P(k = 0) = 81/256 puts the
    2.5% point at 0; P(k >= 3) = 13/256 (5.1%) and P(k = 4) = 1/256 (0.4%) put the 97.5% point at 3/4."""
    values = np.array([0.0, 0.0, 0.0, 1.0])
    interval = cluster_interval(4, lambda idx: float(values[idx].mean()), "sentence")
    assert (interval.low, interval.high) == (0.0, 0.75)
    assert (interval.method, interval.unit, interval.n, interval.level) == ("cluster_bootstrap", "sentence", 4, 0.95)
    assert interval.label() == "95% CI, cluster_bootstrap over 4 sentences"


def test_two_units_span_both_values_and_constant_units_none() -> None:
    """Values 0, 1: resample means 0, 1/2, 1 with probabilities 1/4, 1/2, 1/4: the interval is [0, 1]. Units
    that all score alike give no zero-width interval but the reason there is none."""
    values = np.array([0.0, 1.0])
    assert as_pair(cluster_interval(2, lambda idx: float(values[idx].mean()), "item")) == (0.0, 1.0)
    constant = cluster_interval(10, lambda idx: 1.0, "item")
    assert not constant.defined and constant.reason == "every resample of the 10 items gives 1"


def test_no_interval_says_why() -> None:
    one = cluster_interval(1, lambda idx: 0.0, "query")
    assert not one.defined and one.reason == "fewer than 2 queries" and one.n == 1 and as_pair(one) is None
    undefined = cluster_interval(10, lambda idx: None, "item")
    assert undefined.reason == "the figure is undefined"
    # defined on the full sample, undefined whenever a resample repeats a unit (almost always)
    rarely = cluster_interval(10, lambda idx: 1.0 if len(set(idx.tolist())) == 10 else None, "item")
    assert rarely.reason == "the figure is undefined on most resamples"


def test_figures_share_resamples_and_keep_their_method() -> None:
    values = np.array([0.0, 1.0] * 10)
    out = cluster_intervals(
        len(values), lambda idx: {"a": float(values[idx].mean()), "b": float(values[idx].mean())}, "item", "bootstrap"
    )
    assert out["a"] == out["b"] and out["a"].method == "bootstrap"


def test_a_mean_agrees_with_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0.4, 0.2, size=60)
    ours = cluster_interval(len(values), lambda idx: float(values[idx].mean()), "item", n_resamples=4000)
    theirs = bootstrap((values,), np.mean, n_resamples=4000, method="percentile", random_state=1).confidence_interval
    assert ours.low == pytest.approx(theirs.low, abs=0.01) and ours.high == pytest.approx(theirs.high, abs=0.01)
