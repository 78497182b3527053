"""The 95% interval of every figure of a task, made once when the task is scored (``results.json``'s ``intervals``).

One rule, by the figure's aggregation (Miller 2024, "Adding Error Bars to Evals"):

- ``mean``: the CLT interval over independent docs (``clt``, eq. 1), or, when the task names the unit its docs
  share (``cluster_key``), the clustered interval over those units (``clustered``, eq. 4);
- ``median``, ``sum``, ``perplexity`` and a task's own ``!function``: the percentile bootstrap of the aggregation
  itself over resampled docs (``bootstrap``) or whole units (``cluster_bootstrap``), seeded, so re-scoring gives
  the same interval;
- the stability metrics of ``--repeats``: means over docs of per-doc figures (expected accuracy clustered by
  doc, since a doc's k answers are not independent);
- none, with the reason, for fewer than 2 units, a figure that is not a number, per-doc values a mean cannot
  take, ``bypass`` (a placeholder), or an aggregation that takes lmms-eval's ``args`` (it writes files and
  keeps state, so it is not run again on resamples).
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import statistics
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from harness.engine.lmms_statistics import per_question_scores
from harness.metrics.uncertainty import Z95, bootstrap_interval, clt_interval, clustered_interval, wilson_interval
from harness.results.interval import Interval
from harness.results.metric_key import STABILITY, MetricKey, Stability
from harness.results.schema import SampleRecord
from harness.taskspec.config import MetricSpec, TaskConfig

Aggregation = Callable[[list[Any]], Any]


def unit_of(config: TaskConfig) -> str | None:
    """The unit a task's docs share, by which its figures are clustered or resampled: its ``cluster_key``
    (a per-sample field or a doc column). None: each doc is its own unit. A protocol's tasks name their
    protocol's declared unit there (Stealth's ``sample_id``, MIST's ``item_id``: ``Protocol.unit``, held to
    the YAML by ``tests/protocols/test_units.py``), so lmms-eval clusters by it too."""
    return config.cluster_key


def task_intervals(
    config: TaskConfig,
    records: Sequence[SampleRecord],
    results: Mapping[str, Any],
    aggregations: Mapping[str, Aggregation | None],
) -> dict[str, Interval]:
    """The interval of each figure in one task's ``results``, keyed ``"metric,filter"``. ``aggregations``
    maps each metric to the function a bootstrap may run again on resamples (None: it may not)."""
    scored = [r for r in records if r.error is None]
    unit = unit_of(config)
    out: dict[str, Interval] = {}
    for pipe in config.filters:
        for spec in config.metric_list:
            figure = MetricKey(spec.metric, pipe.name)
            if figure.encoded not in results:
                continue
            items = [(r, r.metrics[figure.encoded]) for r in scored if r.metrics.get(figure.encoded) is not None]
            out[figure.encoded] = _interval(spec, results[figure.encoded], items, unit, aggregations.get(spec.metric))
            out.update(_stability_intervals(scored, figure, config.score_key, unit))
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _cluster(record: SampleRecord, value: Any, unit: str) -> Hashable | None:
    """A doc's unit: the per-sample value's field (as lmms-eval reads ``cluster_key``), else the doc's column."""
    found = value.get(unit) if isinstance(value, dict) else None
    found = record.doc.get(unit) if found is None else found
    return None if found is None else found if isinstance(found, Hashable) else str(found)


def _interval(
    spec: MetricSpec,
    value: Any,
    items: list[tuple[SampleRecord, Any]],
    unit: str | None,
    aggregation: Aggregation | None,
) -> Interval:
    """One figure's interval by the rule of the module docstring."""
    if value is None:
        return Interval.missing("the figure has no value", len(items))
    if not _is_number(value):
        return Interval.missing("the figure is not a finite number", len(items))
    if spec.aggregation == "bypass":
        return Interval.missing("the bypass aggregation is lmms-eval's placeholder, not a figure", len(items))
    ids = [_cluster(r, v, unit) for r, v in items] if unit else []
    clustered = unit is not None and any(c is not None for c in ids)
    if spec.aggregation == "mean":
        values = [v for _, v in items]
        if not all(isinstance(v, int | float) for v in values):
            return Interval.missing("the per-doc values are not all numbers", len(items))
        return mean_interval([float(v) for v in values], _own_cluster_if_none(ids) if clustered else None, unit)
    if aggregation is None:
        return Interval.missing(
            "the aggregation takes lmms-eval's args (it may write files), so it is not run on resamples", len(items)
        )
    kept = np.empty(len(items), dtype=object)  # indexed by each resample's item indices at once
    kept[:] = [v for _, v in items]
    groups: dict[Hashable, list[int]] = {}
    for i, c in enumerate(_own_cluster_if_none(ids) if clustered else range(len(items))):
        groups.setdefault(c, []).append(i)

    def statistic(idx: np.ndarray) -> float | None:
        try:
            figure = aggregation(kept[idx].tolist())
        except Exception:  # an aggregation may refuse a resample (lmms-eval's MME asserts whole pairs)
            return None
        return float(figure) if _is_number(figure) else None

    name = unit if clustered and unit else "doc"
    with _quietly():
        return bootstrap_interval(list(groups.values()), statistic, name, clustered)


def mean_interval(
    scores: list[float], clusters: list[Hashable] | None, unit: str | None, share: bool | None = None
) -> Interval:
    """The interval of a mean: clustered over ``clusters`` (named ``unit``), else CLT over docs. Where no score
    differs from another (every doc scored 0, say), the normal interval has no width: a share (0/1 scores,
    unless ``share`` says otherwise) gets the Wilson interval over its units instead, anything else says why
    there is none. A share's interval is held to [0, 1]."""
    name = unit if clusters is not None and unit else "doc"
    interval = clt_interval(scores) if clusters is None else clustered_interval(scores, clusters, name)
    binary = all(s in (0.0, 1.0) for s in scores) if share is None else share  # a share stays within [0, 1]
    if not interval.defined or interval.low != interval.high:
        return interval.clipped(0.0, 1.0) if binary else interval
    if binary:  # every unit scores the same 0 or 1: a proportion of the units
        return wilson_interval(int(scores[0]) * interval.n, interval.n, name)
    return Interval.missing(
        f"every {name} scores {scores[0]:g}, so there is no spread to estimate from", interval.n, name
    )


def _own_cluster_if_none(ids: Sequence[Hashable | None]) -> list[Hashable]:
    """Cluster ids with each doc that names none standing alone (it shares its unit with no other doc)."""
    return [("doc without a unit", i) if c is None else c for i, c in enumerate(ids)]


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """A task's aggregation run again on a resample says nothing (it may print or log on every call)."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logging.disable(previous)


def _stability_intervals(
    records: Sequence[SampleRecord], figure: MetricKey, score_key: str, unit: str | None
) -> dict[str, Interval]:
    """The intervals of the stability metrics (harness.engine.lmms_statistics): each a mean over docs of a
    per-doc figure, clustered by the task's unit when its docs name one; expected accuracy pools every
    answer, and a doc's answers are not independent, so it is clustered by doc (or by the unit)."""
    questions: list[list[float]] = []
    ids: list[Hashable] = []
    shared = False
    for record in records:
        (scores,) = per_question_scores([record], figure, score_key) or [[]]
        if scores:
            found = _cluster(record, record.metrics.get(figure.encoded), unit) if unit else None
            shared = shared or found is not None
            questions.append(scores)
            ids.append(("doc", record.doc_id) if found is None else found)
    if not questions:
        return {}
    name = unit if shared and unit else "doc"
    variances = [(statistics.variance(q), c) for q, c in zip(questions, ids, strict=True) if len(q) >= 2]
    answer_ids = [c for q, c in zip(questions, ids, strict=True) for _ in q]
    per_doc: dict[Stability, tuple[list[float], list[Hashable]]] = {
        "expected_accuracy": ([s for q in questions for s in q], answer_ids),
        "consensus_accuracy": ([float(sum(q) > len(q) / 2) for q in questions], ids),
        "internal_variance": ([v for v, _ in variances], [c for _, c in variances]),
        "consistency_rate": ([float(len(set(q)) == 1) for q in questions], ids),
    }
    out = {}
    for kind in STABILITY:
        scores, clusters = per_doc[kind]
        clustered = kind == "expected_accuracy" or shared
        share = None if kind != "internal_variance" else False  # a variance of 0/1 scores is no share
        out[figure.stability(kind).encoded] = mean_interval(scores, clusters if clustered else None, name, share)
    return out


def group_interval(value: Any, members: Sequence[tuple[Interval | None, float]]) -> Interval:
    """A group's interval from its members' (interval, weight): the group's figure is the weighted mean of
    theirs over independent members, so ``SE^2 = sum_i (w_i / sum w)^2 SE_i^2``, each member's standard error
    read back from its interval (``SE_i = (high - low) / (2 z)``: exact for a normal one, an approximation
    for a Wilson one, which a member whose docs all score the same has); clustered when any member's is, and
    held to the span of the members' intervals.
    None, with the reason, where a member has no interval or a bootstrap one (not a mean's)."""
    n = sum(i.n for i, _ in members if i is not None)
    if not _is_number(value):
        return Interval.missing("the figure is not a finite number", n)
    total = sum(w for _, w in members)
    variance = 0.0
    for interval, weight in members:
        if interval is None or not interval.defined:
            return Interval.missing("a member task has no interval, so none is pooled", n)
        if interval.method not in ("clt", "clustered", "wilson"):
            return Interval.missing(f"a member task's interval is a {interval.method} one, so none is pooled", n)
        assert interval.low is not None and interval.high is not None
        variance += (weight / total) ** 2 * ((interval.high - interval.low) / (2 * Z95)) ** 2
    held = [i for i, _ in members if i is not None]
    units = {i.unit for i in held}
    se = math.sqrt(variance)
    pooled = Interval.of(
        value - Z95 * se,
        value + Z95 * se,
        "clustered" if any(i.method == "clustered" for i in held) else "clt",
        n,
        units.pop() if len(units) == 1 else "unit",
    )
    # a weighted mean of the members' figures cannot leave the span of their intervals
    return pooled.clipped(
        min(i.low for i in held if i.low is not None), max(i.high for i in held if i.high is not None)
    )
