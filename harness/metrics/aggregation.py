"""Named aggregations for ``metric_list`` (lmms-eval names) and their standard errors.

Per-sample values of ``None`` mean "could not be parsed": they are excluded from every denominator
here and counted separately by the scorer.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any


def _present(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if v is not None]


def mean(values: Sequence[Any]) -> float | None:
    """Arithmetic mean of the parsed values; None when nothing was parsed."""
    xs = _present(values)
    return sum(xs) / len(xs) if xs else None


def median(values: Sequence[Any]) -> float | None:
    """Median of the parsed values; None when nothing was parsed."""
    xs = _present(values)
    return statistics.median(xs) if xs else None


def total(values: Sequence[Any]) -> float | None:
    """Sum of the parsed values (the ``sum`` aggregation); None when nothing was parsed."""
    xs = _present(values)
    return sum(xs) if xs else None


def mean_stderr(values: Sequence[Any]) -> float | None:
    """Standard error of the mean, s / sqrt(n) with the n-1 sample standard deviation (as lm-eval)."""
    xs = _present(values)
    if len(xs) < 2:
        return None
    return statistics.stdev(xs) / math.sqrt(len(xs))


def perplexity(values: Sequence[Any]) -> float | None:
    """``exp(-mean(ll))`` over per-sample log-likelihoods ``ll`` (lmms-eval's and lm-eval's ``perplexity``)."""
    xs = _present(values)
    return math.exp(-sum(xs) / len(xs)) if xs else None


def bypass(values: Sequence[Any]) -> int:
    """lmms-eval's placeholder aggregation of a metric kept for the samples only: always 999."""
    return 999


AGGREGATIONS: dict[str, Callable[[Sequence[Any]], Any]] = {
    "mean": mean,
    "median": median,
    "sum": total,
    "perplexity": perplexity,
    "bypass": bypass,
}
STDERRS: dict[str, Callable[[Sequence[Any]], Any]] = {"mean": mean_stderr}


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """Group score over subtasks: sum(w_i x_i) / sum(w_i) (weights = sizes, or all 1)."""
    return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)


def pooled_stderr(stderrs: Sequence[float], sizes: Sequence[int]) -> float:
    """Group stderr as lm-eval pools it: sqrt(sum((n_i - 1) s_i^2 n_i) / (sum(n_i) - k)) / sqrt(sum(n_i))."""
    variances = [(s * math.sqrt(n)) ** 2 for s, n in zip(stderrs, sizes, strict=True)]
    pooled = sum((n - 1) * v for n, v in zip(sizes, variances, strict=True)) / (sum(sizes) - len(sizes))
    return math.sqrt(pooled / sum(sizes))
