"""The statistics lmms-eval 0.7.3 adds to every figure of a task, under its keys and with its values.

For each ``metric,filter``: ``metric_stderr_clt`` (SE_CLT over the per-doc scores) and ``metric_stderr_clustered``
(clustered by the task's ``cluster_key``), each "N/A" where lmms-eval writes "N/A"; with several answers per
doc (``--repeats``), the four stability metrics over each answer scored alone (``metric_expected_accuracy``,
``_consensus_accuracy``, ``_internal_variance``, ``_consistency_rate``). A per-doc value is a score when it is a
number, or a mapping holding the task's ``score_key`` (its cluster under ``cluster_key``), as lmms-eval reads
them (``evaluator_utils.TaskOutput.calculate_clt_aggregate_metric`` and ``calculate_stability_metrics``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from harness.metrics.uncertainty import (
    clt_stderr,
    clustered_stderr,
    consensus_accuracy,
    consistency_rate,
    expected_accuracy,
    internal_variance,
)
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord
from harness.taskspec.config import TaskConfig

NA = "N/A"  # lmms-eval's value of a statistic it cannot compute


def score_of(value: Any, score_key: str) -> Any:
    """A per-doc value's score as lmms-eval reads it: a number itself, a mapping's ``score_key`` entry;
    None when it holds none."""
    if isinstance(value, int | float):
        return value
    if isinstance(value, dict) and score_key in value:
        return value[score_key]
    return None


def _cluster_of(value: Any, cluster_key: str | None) -> Hashable | None:
    """A per-doc value's cluster id as lmms-eval reads it: a mapping's ``cluster_key`` entry, else None."""
    if cluster_key is None or not isinstance(value, dict):
        return None
    found = value.get(cluster_key)
    return found if isinstance(found, Hashable) else str(found)


def stderrs(figure: MetricKey, values: Sequence[Any], config: TaskConfig) -> dict[str, Any]:
    """``metric_stderr_clt`` and ``metric_stderr_clustered`` of one figure from its per-doc ``values``: the
    clustered one only where the values name more than one cluster, as in lmms-eval."""
    kept = [(score_of(v, config.score_key), _cluster_of(v, config.cluster_key)) for v in values]
    kept = [(s, c) for s, c in kept if isinstance(s, int | float)]  # lmms-eval fails on a score that is no number
    scores, clusters = [s for s, _ in kept], [c for _, c in kept]
    clt = clt_stderr(scores)
    named = {c for c in clusters if c is not None}
    clustered = clustered_stderr(scores, clusters) if len(named) > 1 else None
    return {
        figure.stderr_of("_stderr_clt").encoded: NA if clt is None else clt,
        figure.stderr_of("_stderr_clustered").encoded: NA if clustered is None else clustered,
    }


def per_question_scores(records: Sequence[SampleRecord], figure: MetricKey, score_key: str) -> list[list[float]]:
    """Each doc's k answers' scores of one figure (answers scored alone; docs with none left out)."""
    out = []
    for record in records:
        scores = [score_of(v, score_key) for v in record.response_metrics.get(figure.encoded, [])]
        numbers = [float(s) for s in scores if isinstance(s, int | float)]
        if numbers:
            out.append(numbers)
    return out


def stability(records: Sequence[SampleRecord], figure: MetricKey, score_key: str) -> dict[str, float]:
    """The four stability metrics of one figure over the docs answered several times; empty when none was
    (lmms-eval writes them only under repeats)."""
    questions = per_question_scores(records, figure, score_key)
    if not questions:
        return {}
    return {
        figure.stability("expected_accuracy").encoded: expected_accuracy(questions),
        figure.stability("consensus_accuracy").encoded: consensus_accuracy(questions),
        figure.stability("internal_variance").encoded: internal_variance(questions),
        figure.stability("consistency_rate").encoded: consistency_rate(questions),
    }
