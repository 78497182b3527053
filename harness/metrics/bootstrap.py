"""Bootstrap confidence intervals over independent units (sentences, questions, words)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

N_RESAMPLES = 1000
SEED = 0


def cluster_ci(n_units: int, figure: Callable[[np.ndarray], float | None], n_resamples: int = N_RESAMPLES,
               confidence: float = 0.95, seed: int = SEED) -> tuple[float, float] | None:
    """Percentile CI of ``figure(unit_indices)`` when whole units are resampled with replacement.

    Resampling units (not single answers) keeps every condition of a sentence together, so paired
    baseline-vs-condition differences stay paired. A resample on which the figure is undefined (None
    or NaN, e.g. no sentence with both answers parsed) is dropped; None when fewer than 2 units exist
    or most resamples are undefined. (scipy.stats.bootstrap cannot drop undefined resamples.)
    """
    if n_units < 2:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for idx in rng.integers(0, n_units, size=(n_resamples, n_units)):
        value = figure(idx)
        if value is not None and np.isfinite(value):
            values.append(float(value))
    if len(values) < n_resamples / 2:
        return None
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high)
