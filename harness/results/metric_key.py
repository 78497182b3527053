"""A task figure's name: its metric and the filter pipeline its answers went through.

lmms-eval spells it ``"metric,filter"`` in ``results.json`` (``"exact_match,none"``), with the standard error
under ``"metric_stderr,filter"``, and each sample's ``metrics`` use the same keys. That spelling is built and
read here only, so no other module joins or splits on the comma.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_STDERR = "_stderr"


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
        return MetricKey(self.metric + _STDERR, self.filter)

    @property
    def is_stderr(self) -> bool:
        """Whether this key names a standard error rather than a figure."""
        return self.metric.endswith(_STDERR)

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
    """Each figure of one task's (or group's) ``results`` entry with its value, in order; the ``alias``
    and the standard errors are left out (a figure's is at ``values.get(key.stderr.encoded)``)."""
    for text, value in values.items():
        key = MetricKey.parse(text)
        if key is not None and not key.is_stderr:
            yield key, value
