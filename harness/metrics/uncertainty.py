"""How sure a figure is: standard errors, intervals, stability across repeats, paired tests and power.

The formulas are those of Miller (2024), "Adding Error Bars to Evals" (arXiv 2411.00640), as lmms-eval 0.7.3
writes them (``lmms_eval/api/metrics.py``, ``lmms_eval/evaluator_utils.py``): the same inputs give the same
values, so a results file holds the same keys with the same numbers in either tool. Symbols: ``s_i`` a doc's
score, ``n`` the number of scores, ``s_bar`` their mean, ``c`` a cluster (docs sharing an image, a video, a
passage), ``k`` the answers per question under ``--repeats``.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from harness.metrics.bootstrap import cluster_interval
from harness.results.interval import LEVEL, Interval, plural

#: The two-sided 95% normal quantile z_{0.975} (Miller's 1.96).
Z95 = float(stats.norm.ppf(0.5 + LEVEL / 2))


def clt_stderr(scores: Sequence[float]) -> float | None:
    """SE_CLT = s / sqrt(n), with s the sample standard deviation (n - 1 in its denominator): Miller's
    eq. 1 standard error of a mean over independent questions, lmms-eval's ``<metric>_stderr_clt``
    (``np.std(x, ddof=1) / sqrt(n)``). None for fewer than 2 scores."""
    if len(scores) < 2:
        return None
    return float(stats.sem(np.asarray(scores, dtype=float), ddof=1))


def clustered_stderr(scores: Sequence[float], clusters: Sequence[Hashable | None]) -> float | None:
    """The standard error of a mean whose questions share clusters (Miller's eq. 4, lmms-eval's ``clustered_stderr``).

    Questions of one cluster ``c`` are not independent, so

    ``SE_clustered^2 = SE_CLT^2 + (1/n^2) sum_c sum_i sum_{j != i} (s_ic - s_bar)(s_jc - s_bar)``.

    ``clusters[i]`` is score i's cluster; None is one cluster of its own (lmms-eval groups the items that
    carry no id together). None for fewer than 2 scores."""
    n = len(scores)
    if n < 2:
        return None
    if len(clusters) != n:
        raise ValueError(f"{n} scores but {len(clusters)} cluster ids")
    values = np.asarray(scores, dtype=float)
    deviations = values - values.mean()
    se_clt_squared = float(deviations @ deviations) / (n - 1) / n
    sums: dict[Hashable | None, float] = defaultdict(float)
    squares: dict[Hashable | None, float] = defaultdict(float)
    for d, c in zip(deviations.tolist(), clusters, strict=True):
        sums[c] += d
        squares[c] += d * d
    # sum_{i != j} d_i d_j within a cluster = (sum_i d_i)^2 - sum_i d_i^2
    cross = sum(sums[c] ** 2 - squares[c] for c in sums) / (n * n)
    return math.sqrt(se_clt_squared + cross)


# -- stability across k answers per question (lmms-eval's --repeats) ----------------------------------


def expected_accuracy(per_question: Sequence[Sequence[float]]) -> float:
    """EA: the mean of all n x k scores (lmms-eval's ``expected_accuracy``); NaN with no question."""
    scores = [s for question in per_question for s in question]
    return sum(scores) / len(scores) if scores else math.nan


def consensus_accuracy(per_question: Sequence[Sequence[float]]) -> float:
    """CA: the share of questions whose majority vote is right, ``sum_i s_i > k/2`` (lmms-eval's
    ``consensus_accuracy``; a tie is not a majority); NaN with no question."""
    if not per_question:
        return math.nan
    return sum(1 for q in per_question if q and sum(q) > len(q) / 2) / len(per_question)


def internal_variance(per_question: Sequence[Sequence[float]]) -> float:
    """IV: the mean over questions with k >= 2 of their sample variance (k - 1 in its denominator;
    lmms-eval's ``internal_variance``); lower is steadier. NaN when no question has two scores."""
    variances = [statistics.variance(q) for q in per_question if len(q) >= 2]
    return sum(variances) / len(variances) if variances else math.nan


def consistency_rate(per_question: Sequence[Sequence[float]]) -> float:
    """CR: the share of questions whose k scores are all equal (lmms-eval's ``consistency_rate``); NaN with
    no question."""
    if not per_question:
        return math.nan
    return sum(1 for q in per_question if q and len(set(q)) == 1) / len(per_question)


# -- paired comparison with a baseline, and power ------------------------------------------------------


@dataclass(frozen=True)
class PairedTest:
    """lmms-eval's ``paired_ttest`` of current minus baseline scores on the same questions (Miller sec. 4)."""

    mean_diff: float  # d_bar = mean(s_current - s_baseline)
    se_diff: float  # sqrt(var(d) / n), var with n - 1
    ci_lower: float  # d_bar - t_{0.975, n-1} * se_diff
    ci_upper: float
    t_stat: float  # d_bar / se_diff (+-inf or 0 when se_diff is 0)
    p_value: float  # 2 * (1 - T_{n-1}(|t|)); 0 or 1 when se_diff is 0
    n: int


def paired_ttest(current: Sequence[float], baseline: Sequence[float]) -> PairedTest:
    """The paired t-test of ``current`` against ``baseline`` (same questions, same order), exactly as
    lmms-eval 0.7.3 computes it: every field NaN for fewer than 2 pairs; with all differences equal the
    standard error is 0, t is +-inf (0 when the mean is 0) and p is 0 (1)."""
    if len(current) != len(baseline):
        raise ValueError(f"score lists differ in length: current {len(current)}, baseline {len(baseline)}")
    n = len(current)
    if n < 2:
        nan = math.nan
        return PairedTest(nan, nan, nan, nan, nan, nan, n)
    diffs = [c - b for c, b in zip(current, baseline, strict=True)]
    mean_diff = sum(diffs) / n
    se_diff = math.sqrt(sum((d - mean_diff) ** 2 for d in diffs) / (n - 1) / n)
    if se_diff == 0:
        t_stat = math.inf if mean_diff > 0 else -math.inf if mean_diff < 0 else 0.0
        p_value = 0.0 if mean_diff != 0 else 1.0
    else:
        t_stat = mean_diff / se_diff
        p_value = float(2 * (1 - stats.t.cdf(abs(t_stat), n - 1)))
    t_crit = float(stats.t.ppf(0.975, n - 1))
    return PairedTest(
        mean_diff, se_diff, mean_diff - t_crit * se_diff, mean_diff + t_crit * se_diff, t_stat, p_value, n
    )


@dataclass(frozen=True)
class Power:
    """lmms-eval's ``power_analysis`` of a paired comparison (Miller sec. 5)."""

    min_n: int  # questions needed to detect effect_size: ceil(((z_{1-alpha/2} + z_power) / d)^2)
    effect_size: float  # delta, the difference to detect (0.03 = 3 points)
    std_a: float
    std_b: float
    alpha: float
    power: float
    correlation: float  # rho between the paired scores
    current_n: int | None = None
    current_power: float | None = None  # Phi(d sqrt(n) - z_{1-alpha/2}), rounded to 4 places as lmms-eval does
    min_detectable_effect: float | None = None  # (z_{1-alpha/2} + z_power) * sigma_diff / sqrt(n), 4 places


def power_analysis(
    effect_size: float,
    std_a: float | None = None,
    std_b: float | None = None,
    alpha: float = 0.05,
    power: float = 0.80,
    correlation: float = 0.5,
    current_n: int | None = None,
) -> Power:
    """Questions needed for a paired test to detect ``effect_size`` (and, given ``current_n``, the power and
    minimum detectable effect at that size), as lmms-eval 0.7.3 computes it:
    ``sigma_diff^2 = std_a^2 + std_b^2 - 2 rho std_a std_b``, ``d = delta / sigma_diff``. A missing std is
    the other one, or 0.5 (a 0/1 score) when both are missing. ``sigma_diff`` must be positive."""
    if std_a is None and std_b is None:
        std_a = std_b = 0.5
    std_a = std_b if std_a is None else std_a
    std_b = std_a if std_b is None else std_b
    assert std_a is not None and std_b is not None
    var_diff = std_a**2 + std_b**2 - 2 * correlation * std_a * std_b
    if not var_diff > 0:
        raise ValueError(f"the paired difference has no spread (sigma_diff^2 = {var_diff}); power is undefined")
    std_diff = math.sqrt(var_diff)
    z_alpha = float(stats.norm.ppf(1 - alpha / 2))
    z_beta = float(stats.norm.ppf(power))
    d = effect_size / std_diff
    result = Power(math.ceil(((z_alpha + z_beta) / d) ** 2), effect_size, std_a, std_b, alpha, power, correlation)
    if current_n is None:
        return result
    return dataclasses.replace(
        result,
        current_n=current_n,
        current_power=round(float(stats.norm.cdf(d * math.sqrt(current_n) - z_alpha)), 4),
        min_detectable_effect=round((z_alpha + z_beta) * std_diff / math.sqrt(current_n), 4),
    )


# -- 95% intervals -------------------------------------------------------------------------------------


def clt_interval(scores: Sequence[float], unit: str = "doc") -> Interval:
    """s_bar +- z_{0.975} SE_CLT over independent units (Miller eq. 1), or why there is none."""
    se = clt_stderr(scores)
    if se is None:
        return Interval.missing(f"fewer than 2 {plural(unit)}", len(scores), unit)
    mean = float(np.mean(scores))
    return Interval.of(mean - Z95 * se, mean + Z95 * se, "clt", len(scores), unit)


def wilson_interval(successes: int, n: int, unit: str = "doc") -> Interval:
    """The Wilson score interval of a proportion ``successes / n`` (statsmodels' ``proportion_confint``):
    unlike the CLT interval it keeps a width when every unit scores 0 or every unit scores 1."""
    if n < 2:
        return Interval.missing(f"fewer than 2 {plural(unit)}", n, unit)
    low, high = proportion_confint(successes, n, alpha=1 - LEVEL, method="wilson")
    # at 0 (or n) successes the end is exactly 0 (1); statsmodels' arithmetic leaves a rounding error there
    low, high = (0.0 if successes == 0 else float(low)), (1.0 if successes == n else float(high))
    return Interval.of(low, high, "wilson", n, unit)


def clustered_interval(scores: Sequence[float], clusters: Sequence[Hashable | None], unit: str) -> Interval:
    """s_bar +- z_{0.975} SE_clustered (Miller eq. 4) over the clusters named ``unit``, or why there is none;
    ``n`` counts clusters, the independent units."""
    n_clusters = len(set(clusters))
    se = clustered_stderr(scores, clusters)
    if se is None or n_clusters < 2:
        return Interval.missing(f"fewer than 2 {plural(unit)}", n_clusters, unit)
    mean = float(np.mean(scores))
    return Interval.of(mean - Z95 * se, mean + Z95 * se, "clustered", n_clusters, unit)


def bootstrap_interval(
    units: Sequence[Sequence[int]], statistic: Callable[[np.ndarray], float | None], unit: str, clustered: bool
) -> Interval:
    """The percentile bootstrap interval of ``statistic`` (of the indices of the items it is computed over)
    over resamples of whole ``units`` (each a list of item indices: one item a unit, or one cluster of
    items), seeded, so the same items give the same interval (harness.metrics.bootstrap). Named
    ``cluster_bootstrap`` when units are clusters of items."""
    method: Literal["bootstrap", "cluster_bootstrap"] = "cluster_bootstrap" if clustered else "bootstrap"
    if len(units) < 2:
        return Interval.missing(f"fewer than 2 {plural(unit)}", len(units), unit)
    members = [np.asarray(u, dtype=np.intp) for u in units]
    single = all(len(u) == 1 for u in members)
    items = np.concatenate(members)

    def on(idx: np.ndarray) -> float | None:
        return statistic(items[idx] if single else np.concatenate([members[u] for u in idx]))

    return cluster_interval(len(units), on, unit, method)
