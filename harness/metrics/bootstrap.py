"""Bootstrap confidence intervals over independent units (sentences, questions), via scipy."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

N_RESAMPLES = 1000
SEED = 0


def cluster_ci(n_units: int, figure: Callable[[np.ndarray], float], n_resamples: int = N_RESAMPLES,
               confidence: float = 0.95, seed: int = SEED) -> tuple[float, float] | None:
    """Percentile CI of ``figure(unit_indices)`` when whole units are resampled with replacement.

    Resampling units (not individual answers) keeps every condition of a sentence together, so the
    paired baseline-vs-condition differences stay paired. None when there are fewer than 2 units or the
    figure is undefined on resamples.
    """
    if n_units < 2:
        return None
    from scipy.stats import bootstrap

    def stat(idx: np.ndarray) -> float:
        value = figure(np.asarray(idx, dtype=int))
        return np.nan if value is None else float(value)

    with warnings.catch_warnings():  # constant figures are a valid (zero-width) answer here
        warnings.simplefilter("ignore")
        result = bootstrap((np.arange(n_units),), stat, vectorized=False, n_resamples=n_resamples,
                           confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    low, high = result.confidence_interval
    if np.isnan(low) or np.isnan(high):
        return None
    return float(low), float(high)
