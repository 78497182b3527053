"""A task figure's name: its metric and the filter pipeline its answers went through.

lmms-eval spells it ``"metric,filter"`` in ``results.json`` (``"exact_match,none"``), with its standard errors
under ``"metric_stderr,filter"`` (the aggregation's own: bootstrap, or s/sqrt(n) for a mean),
``"metric_stderr_clt,filter"`` and ``"metric_stderr_clustered,filter"``, its stability across repeats under
``"metric_expected_accuracy,filter"`` and the like, and each sample's ``metrics`` use the same keys. That
spelling is built and read here only, so no other module joins or splits on the comma.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

#: lmms-eval 0.7.3's standard errors of a figure, by the suffix of their metric name.
StderrKind = Literal["_stderr", "_stderr_clt", "_stderr_clustered"]
STDERR_KINDS: tuple[StderrKind, ...] = get_args(StderrKind)
#: lmms-eval 0.7.3's stability of a figure across the k answers of ``--repeats`` (figures of their own).
Stability = Literal["expected_accuracy", "consensus_accuracy", "internal_variance", "consistency_rate"]
STABILITY: tuple[Stability, ...] = get_args(Stability)


@dataclass(frozen=True, order=True)
class MetricKey:
    """One figure of a task: ``metric`` scored on the answers of filter pipeline ``filter``."""

    metric: str
    filter: str = "none"

    def __str__(self) -> str:
        return self.encoded

    @property
    def encoded(self) -> str:
        """The key as written in ``results.json`` and the samples files: ``"metric,filter"``."""
        return f"{self.metric},{self.filter}"

    @property
    def stderr(self) -> MetricKey:
        """The key of this figure's standard error (``metric_stderr``, same filter)."""
        return self.stderr_of("_stderr")

    def stderr_of(self, kind: StderrKind) -> MetricKey:
        """The key of this figure's standard error of one kind (``metric_stderr_clt``, same filter)."""
        return MetricKey(self.metric + kind, self.filter)

    def stability(self, kind: Stability) -> MetricKey:
        """The key of this figure's stability across repeats (``metric_consistency_rate``, same filter)."""
        return MetricKey(f"{self.metric}_{kind}", self.filter)

    @property
    def is_stderr(self) -> bool:
        """Whether this key names a standard error (of any kind) rather than a figure."""
        return self.metric.endswith(STDERR_KINDS)

    @property
    def label(self) -> str:
        """The figure as tables and charts name it: the metric, with its filter in brackets unless ``none``."""
        return self.metric if self.filter in ("", "none") else f"{self.metric} ({self.filter})"

    @classmethod
    def parse(cls, key: str) -> MetricKey | None:
        """The figure a results key names, split at its first comma (a filter name may hold commas, a
        metric name never does); None for a key that names none (``alias``)."""
        metric, sep, filt = key.partition(",")
        return cls(metric, filt) if sep else None


def label_of(key: str) -> str:
    """The display name of a stored ``"metric,filter"`` key (:attr:`MetricKey.label`); a key that names no
    figure is shown as it is."""
    figure = MetricKey.parse(key)
    return key if figure is None else figure.label


def figures(values: Mapping[str, Any]) -> Iterator[tuple[MetricKey, Any]]:
    """Each figure of one task's (or group's) ``results`` entry with its value, in order; the ``alias``, the
    baseline comparison's fields and the standard errors of every kind are left out (a figure's are at
    ``values.get(key.stderr.encoded)``, ``key.stderr_of("_stderr_clt")``, ...)."""
    for text, value in values.items():
        key = MetricKey.parse(text)
        if key is not None and not key.is_stderr:
            yield key, value
