"""Percentile bootstrap intervals over whole units (a protocol's unit: a sentence with all its conditions,
a query with all its answers, an item with all its arms), returned as :class:`Interval` values.

The one bootstrap helper of the harness: every protocol's figures that are not a plain mean of
independent docs (ratios, shares of a subset, maxima, differences) get their interval here, resampling
the protocol's declared unit (``harness.protocols.base.Protocol.unit``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Literal, TypeVar

import numpy as np

from harness.results.interval import LEVEL, Interval, plural

K = TypeVar("K", bound=Hashable)

N_RESAMPLES = 1000
SEED = 0

#: How the resampled units relate to the figure: ``cluster_bootstrap`` when a unit holds several
#: answers (all resampled together), ``bootstrap`` when each unit is one answer, ``paired_bootstrap``
#: when the figure is a difference whose two sides are resampled together.
BootstrapMethod = Literal["bootstrap", "cluster_bootstrap", "paired_bootstrap"]


def cluster_intervals(
    n_units: int,
    figures: Callable[[np.ndarray], Mapping[K, float | None]],
    unit: str,
    method: BootstrapMethod = "cluster_bootstrap",
    n_resamples: int = N_RESAMPLES,
    confidence: float = LEVEL,
    seed: int = SEED,
) -> dict[K, Interval]:
    """The percentile interval of every figure ``figures(unit_indices)`` returns, over ``n_resamples``
    resamples of the ``n_units`` units with replacement (all figures see the same resamples, so
    differences between them stay paired). ``figures`` is called once on the full sample first: every
    figure it names gets an Interval, one without an interval saying why.

    A resample on which a figure is undefined (None or NaN) is dropped for that figure; a figure
    undefined on the full sample, or on most resamples, has no interval, nor has one that every resample
    gives alike (all units score the same): it says so rather than print ``[v, v]``. (scipy.stats.bootstrap cannot
    drop undefined resamples; on a plain mean it gives the same percentile interval.)"""
    full = figures(np.arange(n_units))
    if n_units < 2:
        why = f"fewer than 2 {plural(unit)}"
        return {name: Interval.missing(why, n_units, unit, confidence) for name in full}
    rng = np.random.default_rng(seed)
    values: dict[K, list[float]] = {name: [] for name in full}
    for idx in rng.integers(0, n_units, size=(n_resamples, n_units)):
        for name, value in figures(idx).items():
            if value is not None and np.isfinite(value) and name in values:
                values[name].append(float(value))
    alpha = (1 - confidence) / 2
    out: dict[K, Interval] = {}
    for name, kept in values.items():
        value = full[name]
        if value is None or not np.isfinite(value):
            out[name] = Interval.missing("the figure is undefined", n_units, unit, confidence)
        elif len(kept) < n_resamples / 2:
            out[name] = Interval.missing("the figure is undefined on most resamples", n_units, unit, confidence)
        else:
            low, high = np.quantile(kept, [alpha, 1 - alpha])
            if low == high:  # a zero-width interval would claim certainty that n units cannot give
                why = f"every resample of the {n_units} {plural(unit)} gives {low:.3g}"
                out[name] = Interval.missing(why, n_units, unit, confidence)
            else:
                out[name] = Interval.of(float(low), float(high), method, n_units, unit, confidence)
    return out


def cluster_interval(
    n_units: int,
    figure: Callable[[np.ndarray], float | None],
    unit: str,
    method: BootstrapMethod = "cluster_bootstrap",
    n_resamples: int = N_RESAMPLES,
    confidence: float = LEVEL,
    seed: int = SEED,
) -> Interval:
    """The percentile interval of one figure (:func:`cluster_intervals`)."""
    return cluster_intervals(n_units, lambda idx: {0: figure(idx)}, unit, method, n_resamples, confidence, seed)[0]


def as_pair(interval: Interval) -> tuple[float, float] | None:
    """``(low, high)``, or None without an interval: for the older report fields that hold a bare pair."""
    return (interval.low, interval.high) if interval.low is not None and interval.high is not None else None
