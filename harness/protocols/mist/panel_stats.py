"""MIST human-panel statistics as the paper reports them: the difference in Fleiss' kappa between the
two trios with a bootstrap CI, and Welch t-tests on per-item agreement.

Symbols: a panel of n annotators labels items i into the k = 4 scale categories; n_ij is how many of
them put item i in category j. Per-item agreement P_i = sum_j n_ij (n_ij - 1) / (n (n - 1)) (the share
of annotator pairs that agree on i); Fleiss' kappa = (mean_i P_i - P_e) / (1 - P_e) with
P_e = sum_j p_j^2 (statsmodels' ``fleiss_kappa``).

- Trio difference: Delta kappa = kappa(informed) - kappa(blind) (the paper: 0.65 - 0.57 = +0.08
  [-0.05, +0.22], p = 0.22) on the items both trios labelled completely. The 95% CI is a percentile
  bootstrap over items, one resample shared by both trios (paired: the trios labelled the same items);
  resamples where a kappa is undefined (P_e = 1) are dropped. The paper names the bootstrap for the
  interval but not the test behind its p; choice: p is Welch's t-test (scipy, unequal variances,
  two-sided) of the trios' per-item agreement P_i, the test the paper names for its panel comparisons.
- Condition contrast within a trio: Welch's t-test of P_i on the items the trio saw with an aligned
  image against those it saw with a misleading one (the paper: blind p = 0.27, informed p = 0.92).
  Items whose annotators saw them under different conditions belong to neither group; they are counted
  as ``mixed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from harness.errors import HarnessError
from harness.metrics.bootstrap import cluster_interval
from harness.protocols.mist.rows import UNIT
from harness.results.interval import Interval

N_CATEGORIES = 4


Panel = Mapping[str, Mapping[str, int]]  # annotator -> {item -> label 0..3}


def complete_items(panel: Panel) -> list[str]:
    """The items every annotator of the panel labelled."""
    return sorted(set.intersection(*(set(labels) for labels in panel.values()))) if panel else []


def category_counts(panel: Panel, items: Sequence[str]) -> np.ndarray:
    """n_ij: items x categories counts of the panel's labels (every annotator must label every item)."""
    from statsmodels.stats.inter_rater import aggregate_raters

    if not items:
        return np.zeros((0, N_CATEGORIES), dtype=int)
    missing = [(a, i) for a, labels in panel.items() for i in items if i not in labels]
    if missing:
        raise HarnessError(f"panel statistics: annotator {missing[0][0]!r} has no label for item {missing[0][1]!r}")
    matrix = np.array([[panel[a][i] for a in sorted(panel)] for i in items], dtype=int)
    counts: np.ndarray = aggregate_raters(matrix, n_cat=N_CATEGORIES)[0]
    return counts


def fleiss(counts: np.ndarray) -> float | None:
    """Fleiss' kappa of an n_ij table (statsmodels); None when undefined (one category only, P_e = 1)."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    if len(counts) == 0:
        return None
    p = counts.sum(axis=0) / counts.sum()
    if np.isclose((p**2).sum(), 1.0):
        return None
    return float(fleiss_kappa(counts, method="fleiss"))


def per_item_agreement(counts: np.ndarray) -> np.ndarray:
    """P_i: the share of annotator pairs that agree on each item."""
    n = counts.sum(axis=1)
    agreement: np.ndarray = (counts * (counts - 1)).sum(axis=1) / (n * (n - 1))
    return agreement


@dataclass(frozen=True)
class WelchTest:
    """Welch's two-sample t-test (scipy ``ttest_ind(equal_var=False)``), two-sided."""

    mean_a: float | None
    mean_b: float | None
    n_a: int
    n_b: int
    t: float | None
    df: float | None
    p_value: float | None


def welch(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> WelchTest:
    """Welch's t-test of a against b; t, df and p are None with fewer than 2 values a side or no variance."""
    from scipy.stats import ttest_ind

    a_, b_ = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    means = (float(a_.mean()) if len(a_) else None, float(b_.mean()) if len(b_) else None)
    if len(a_) < 2 or len(b_) < 2 or (a_.var() == 0 and b_.var() == 0):
        return WelchTest(*means, len(a_), len(b_), None, None, None)
    res = ttest_ind(a_, b_, equal_var=False)
    return WelchTest(*means, len(a_), len(b_), float(res.statistic), float(res.df), float(res.pvalue))


@dataclass(frozen=True)
class KappaDifference:
    """Delta kappa = kappa_a - kappa_b on shared items, its paired bootstrap 95% interval over items and the
    Welch p on P_i."""

    kappa_a: float | None
    kappa_b: float | None
    difference: float | None
    interval: Interval
    welch: WelchTest
    items: int


def kappa_difference(panel_a: Panel, panel_b: Panel, n_resamples: int = 1000, seed: int = 0) -> KappaDifference:
    """kappa(panel_a) - kappa(panel_b) on the items both panels labelled completely (module docstring)."""
    items = sorted(set(complete_items(panel_a)) & set(complete_items(panel_b)))
    counts_a, counts_b = category_counts(panel_a, items), category_counts(panel_b, items)

    def diff(idx: np.ndarray) -> float | None:
        ka, kb = fleiss(counts_a[idx]), fleiss(counts_b[idx])
        return None if ka is None or kb is None else ka - kb

    ka, kb = fleiss(counts_a), fleiss(counts_b)
    return KappaDifference(
        ka,
        kb,
        diff(np.arange(len(items))),
        cluster_interval(len(items), diff, UNIT.name, "paired_bootstrap", n_resamples=n_resamples, seed=seed),
        welch(per_item_agreement(counts_a), per_item_agreement(counts_b)),
        len(items),
    )


@dataclass(frozen=True)
class ConditionContrast:
    """One trio's per-item agreement and kappa, aligned against misleading items, with Welch's test."""

    kappa_aligned: float | None
    kappa_misleading: float | None
    welch: WelchTest
    mixed: int


def condition_contrast(panel: Panel, seen: Mapping[str, Mapping[str, str]]) -> ConditionContrast:
    """Aligned vs misleading items of one trio (``seen``: annotator -> {item -> condition})."""
    groups: dict[str, list[str]] = {"aligned": [], "misleading": []}
    mixed = 0
    for item in complete_items(panel):
        conditions = {seen[a][item] for a in panel}
        if len(conditions) > 1:
            mixed += 1
        elif (c := conditions.pop()) in groups:
            groups[c].append(item)
    aligned, misleading = category_counts(panel, groups["aligned"]), category_counts(panel, groups["misleading"])
    return ConditionContrast(
        fleiss(aligned), fleiss(misleading), welch(per_item_agreement(aligned), per_item_agreement(misleading)), mixed
    )
