"""Two or more models scored on the same docs: paired differences, their tests, power, and rank intervals.

Notation (Miller 2024, "Adding Error Bars to Evals", sections 2-5): model A's and model B's scores on the
n shared docs are ``s_A,i`` and ``s_B,i``; the paired difference is ``d_i = s_A,i - s_B,i`` and the figure
reported is its mean ``d_bar`` (= mean(s_A) - mean(s_B)).

- **Interval**: the percentile interval of ``d_bar`` over resamples of the units, both models resampled
  together (``paired_bootstrap``). A unit is a doc, or a cluster of docs sharing a ``cluster_key`` value
  (an image, a passage): a resample then draws whole clusters.
- **Test, 0/1 scores without clusters**: McNemar's exact test on the discordant pairs ``n10`` (A right,
  B wrong) and ``n01`` (A wrong, B right): two-sided ``p_exact = min(1, 2 P[X <= min(n10, n01)])`` with
  ``X ~ Binomial(n10 + n01, 1/2)``, and the mid-p ``p_mid = p_exact - P[X = min(n10, n01)]`` (Fagerland,
  Lydersen and Laake 2013: closer to nominal size, still conservative in their study), which is the
  p-value reported.
- **Test, other scores without clusters**: the paired t-test on ``d`` (``t = d_bar / (s_d / sqrt(n))``,
  n - 1 degrees of freedom), as lmms-eval's ``--baseline`` runs it. It tests the mean difference, the
  figure reported; a Wilcoxon signed-rank test would test a location shift of ``d`` instead, and drops the
  zero differences that discrete metrics are full of.
- **Test, with clusters**: ``z = d_bar / SE_clustered(d)`` against the normal, where (Miller eq. 4)
  ``SE_clustered^2 = SE_CLT^2 + (1/n^2) sum_c sum_i sum_{j != i} (d_ic - d_bar)(d_jc - d_bar)`` and
  ``SE_CLT^2 = s_d^2 / n``; McNemar's and the t-test both assume independent pairs, which clusters break.
- **Minimum detectable effect** (Miller section 5, the paired power formula solved for the effect):
  ``MDE = (z_{1-alpha/2} + z_{power}) * SE``, ``SE = s_d / sqrt(n)`` (or ``SE_clustered``): the smallest
  true difference a two-sided test at ``alpha`` detects with probability ``power`` at this n. Since
  ``Var(d) = Var(s_A) + Var(s_B) - 2 Cov(s_A, s_B)``, the pairing's correlation is in ``s_d``.
- **Rank intervals**: each model's rank (1 + the number of models with a strictly better mean) on every
  resample of the shared units (all models resampled together); the interval holds the 2.5th and
  97.5th percentiles of those ranks. Models whose rank intervals overlap are not told apart: tied.

A test whose ``d`` has no spread (``s_d = 0``) follows lmms-eval's convention: p = 1 when ``d_bar = 0``,
else p = 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from harness.metrics.bootstrap import N_RESAMPLES, SEED, cluster_interval
from harness.metrics.uncertainty import clustered_stderr, paired_ttest
from harness.results.interval import LEVEL, Interval

ALPHA = 0.05
POWER = 0.8
RESAMPLE_CHUNK = 100  # resamples drawn at once by rank_intervals (memory: models x units x this)

#: Which test gave a comparison's p-value: McNemar's mid-p (0/1 scores), the paired t-test, or the
#: clustered z-test (docs share a cluster unit).
PairedTestName = Literal["mcnemar_midp", "paired_t", "clustered_z"]
PAIRED_TESTS: tuple[PairedTestName, ...] = get_args(PairedTestName)


class PairedStats(BaseModel):
    """Model A against model B on the same ``n`` units: means, ``difference`` = mean(A) - mean(B) with its
    paired-bootstrap ``interval``, the ``test`` and its ``p_value``, and the minimum detectable effect."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(description="paired docs")
    units: int = Field(description="resampled units: docs, or clusters of docs")
    mean_a: float
    mean_b: float
    difference: float = Field(description="mean(A) - mean(B) over the paired docs")
    interval: Interval
    test: PairedTestName
    statistic: float | None = Field(description="t, z, or for McNemar the smaller discordant count")
    p_value: float | None = Field(description="two-sided; McNemar: the mid-p")
    p_exact: float | None = Field(default=None, description="McNemar's exact p (0/1 scores only)")
    standard_error: float | None = Field(description="of the difference: s_d / sqrt(n), or clustered")
    mde: float | None = Field(description="minimum detectable effect at alpha 0.05, power 0.8")
    a_better: int = Field(description="docs where A scored higher than B")
    b_better: int = Field(description="docs where B scored higher than A")


def is_binary(values: np.ndarray) -> bool:
    """Whether every score is 0 or 1 (McNemar's case)."""
    return bool(np.all((values == 0) | (values == 1)))


def mcnemar_p_values(n10: int, n01: int) -> tuple[float, float]:
    """McNemar's exact two-sided p and its mid-p from the discordant counts ``n10`` (A right, B wrong) and
    ``n01`` (A wrong, B right): ``p_exact = min(1, 2 P[X <= k])``, ``p_mid = p_exact - P[X = k]`` with
    ``k = min(n10, n01)``, ``X ~ Binomial(n10 + n01, 1/2)``. No discordant pair: both 1."""
    total, k = n10 + n01, min(n10, n01)
    if total == 0:
        return 1.0, 1.0
    exact = float(mcnemar([[0, n10], [n01, 0]], exact=True).pvalue)  # statsmodels: the binomial test
    return exact, exact - float(stats.binom.pmf(k, total, 0.5))


def normal_test(difference: float, se: float | None) -> tuple[float | None, float | None]:
    """``(z, p)`` of ``difference / se`` against the standard normal, two-sided (the clustered test);
    ``se = 0`` follows the no-spread convention."""
    if se is None:
        return None, None
    if se == 0:
        return (math.copysign(math.inf, difference) if difference else 0.0), (0.0 if difference else 1.0)
    z = difference / se
    return z, 2 * NormalDist().cdf(-abs(z))


def minimum_detectable_effect(se: float | None, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """``(z_{1-alpha/2} + z_{power}) * se``: the smallest true difference a two-sided test at ``alpha``
    finds with probability ``power`` (Miller section 5; lmms-eval's ``min_detectable_effect``). None
    without a standard error, or with a zero one (no spread in ``d``: the variance estimate says nothing)."""
    if not se:
        return None
    normal = NormalDist()
    return (normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)) * se


@dataclass(frozen=True)
class Units:
    """The docs grouped into resampling units: ``labels[i]`` is doc i's unit (0 .. ``count`` - 1), and
    ``name`` says what a unit is (``doc``, or the cluster key: ``image_id``)."""

    labels: np.ndarray
    count: int
    name: str

    @classmethod
    def of(cls, n_docs: int, clusters: Sequence[Hashable] | None, name: str = "doc") -> Units:
        """One unit per doc, or one per distinct cluster value (named ``name``)."""
        if clusters is None:
            return cls(np.arange(n_docs), n_docs, "doc")
        members = _cluster_members(clusters)
        labels = np.empty(n_docs, dtype=int)
        for unit, docs in enumerate(members.values()):
            labels[docs] = unit
        return cls(labels, len(members), name)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per unit, the sum of ``values`` over its docs (``values``: docs, or models x docs)."""
        rows = np.atleast_2d(values)
        out = np.stack([np.bincount(self.labels, weights=row, minlength=self.count) for row in rows])
        return out if values.ndim == 2 else out[0]

    def sizes(self) -> np.ndarray:
        """How many docs each unit holds."""
        return np.bincount(self.labels, minlength=self.count).astype(float)


def _cluster_members(clusters: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    members: dict[Hashable, list[int]] = {}
    for i, c in enumerate(clusters):
        members.setdefault(c, []).append(i)
    return members


def paired_bootstrap_interval(
    d: np.ndarray, units: Units, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> Interval:
    """The percentile interval of ``d_bar`` over resamples of whole units (each resample's mean is its
    units' summed differences over their summed sizes); missing for fewer than 2 units."""
    sums, sizes = units.sums(d), units.sizes()
    return cluster_interval(
        units.count,
        lambda idx: float(sums[idx].sum() / sizes[idx].sum()),
        units.name,
        "paired_bootstrap",
        n_resamples,
        LEVEL,
        seed,
    )


def compare_paired(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    clusters: Sequence[Hashable] | None = None,
    unit: str = "doc",
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> PairedStats:
    """A against B on the same docs (``a[i]``, ``b[i]`` the two scores of doc i; ``clusters[i]`` its unit
    when docs share one, named ``unit``): the difference, its interval, the test (McNemar's mid-p for 0/1
    scores, the paired t-test otherwise, the clustered z-test with clusters), p and the MDE."""
    sa, sb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = sa - sb
    units = Units.of(len(d), clusters, unit)
    difference = float(np.mean(d)) if len(d) else math.nan
    p_exact = None
    test: PairedTestName
    if clusters is not None:
        test, se = "clustered_z", clustered_stderr(d.tolist(), clusters)
        statistic, p = normal_test(difference, se)
    else:
        se = float(np.std(d, ddof=1)) / math.sqrt(len(d)) if len(d) >= 2 else None
        if is_binary(sa) and is_binary(sb):
            n10, n01 = int(np.sum(d > 0)), int(np.sum(d < 0))
            test, statistic = "mcnemar_midp", float(min(n10, n01))
            p_exact, p = mcnemar_p_values(n10, n01)
        else:
            test, ttest = "paired_t", paired_ttest(sa.tolist(), sb.tolist())
            statistic, p = (None, None) if ttest.n < 2 else (ttest.t_stat, ttest.p_value)
    return PairedStats(
        n=len(d),
        units=units.count,
        mean_a=float(np.mean(sa)) if len(d) else math.nan,
        mean_b=float(np.mean(sb)) if len(d) else math.nan,
        difference=difference,
        interval=paired_bootstrap_interval(d, units, n_resamples, seed),
        test=test,
        statistic=statistic,
        p_value=p,
        p_exact=p_exact,
        standard_error=se,
        mde=minimum_detectable_effect(se),
        a_better=int(np.sum(d > 0)),
        b_better=int(np.sum(d < 0)),
    )


class RankInterval(BaseModel):
    """A model's rank among others on the same units (1 is best) and its 95% interval ``[low, high]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int = Field(description="1 + the models with a strictly better mean on all units")
    low: int
    high: int

    def text(self) -> str:
        """``2`` when the interval is one rank, else ``1-3``."""
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"

    def overlaps(self, other: RankInterval) -> bool:
        """Whether the two intervals share a rank (the models are then shown as tied)."""
        return self.low <= other.high and other.low <= self.high


def ranks(means: np.ndarray, higher_is_better: bool = True) -> np.ndarray:
    """Competition ranks along the first axis: 1 + how many models have a strictly better mean (equal
    means share a rank)."""
    better = means[None, :] > means[:, None] if higher_is_better else means[None, :] < means[:, None]
    return np.asarray(1 + better.sum(axis=1))


def rank_intervals(
    scores: np.ndarray,
    units: Units,
    higher_is_better: bool = True,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> list[RankInterval]:
    """Each model's rank and its percentile interval over resamples of ``units`` (``scores``: models x
    docs, every model scored on every doc); all models see the same resamples."""
    sums, sizes = units.sums(scores), units.sizes()
    point = ranks(sums.sum(axis=1) / sizes.sum(), higher_is_better)
    rng = np.random.default_rng(seed)
    drawn = np.empty((len(sums), n_resamples), dtype=int)
    for start in range(0, n_resamples, RESAMPLE_CHUNK):
        k = min(RESAMPLE_CHUNK, n_resamples - start)
        picks = rng.integers(0, units.count, size=(k, units.count)) + units.count * np.arange(k)[:, None]
        # how often each resample drew each unit: its mean is sums @ counts / sizes @ counts
        counts = np.bincount(picks.ravel(), minlength=k * units.count).reshape(k, units.count).T.astype(float)
        drawn[:, start : start + k] = ranks((sums @ counts) / (sizes @ counts), higher_is_better)
    alpha = (1 - LEVEL) / 2
    low = np.quantile(drawn, alpha, axis=1, method="inverted_cdf")
    high = np.quantile(drawn, 1 - alpha, axis=1, method="inverted_cdf")
    return [RankInterval(rank=int(p), low=int(lo), high=int(hi)) for p, lo, hi in zip(point, low, high, strict=True)]
