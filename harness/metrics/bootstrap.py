"""Bootstrap confidence intervals over independent units (sentences, questions, words, items)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)

N_RESAMPLES = 1000
SEED = 0

CI = tuple[float, float]


def cluster_cis(
    n_units: int,
    figures: Callable[[np.ndarray], Mapping[K, float | None]],
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = SEED,
) -> dict[K, CI | None]:
    """Percentile CIs of every figure ``figures(unit_indices)`` returns, over resamples of whole units
    with replacement (all figures see the same resamples, so differences between them stay paired).

    A resample on which a figure is undefined (None or NaN) is dropped for that figure; a figure is None
    when most resamples leave it undefined; empty when fewer than 2 units exist. (scipy.stats.bootstrap
    cannot drop undefined resamples.)"""
    if n_units < 2:
        return {}
    rng = np.random.default_rng(seed)
    values: dict[K, list[float]] = {}
    for idx in rng.integers(0, n_units, size=(n_resamples, n_units)):
        for name, value in figures(idx).items():
            bucket = values.setdefault(name, [])
            if value is not None and np.isfinite(value):
                bucket.append(float(value))
    alpha = (1 - confidence) / 2
    out: dict[K, CI | None] = {}
    for name, kept in values.items():
        if len(kept) < n_resamples / 2:
            out[name] = None
        else:
            low, high = np.quantile(kept, [alpha, 1 - alpha])
            out[name] = (float(low), float(high))
    return out


def cluster_ci(
    n_units: int,
    figure: Callable[[np.ndarray], float | None],
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = SEED,
) -> CI | None:
    """The percentile CI of one figure (:func:`cluster_cis`); resampling units (not single answers) keeps
    every condition of a sentence together, so paired baseline-vs-condition differences stay paired.
    None when fewer than 2 units exist or most resamples are undefined."""
    return cluster_cis(n_units, lambda idx: {0: figure(idx)}, n_resamples, confidence, seed).get(0)
