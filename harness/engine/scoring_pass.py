"""One scoring pass: the same figures on every pass, under the seeds and in the order lmms-eval 0.7.3 scores.

Task scorers may draw random numbers (MMMU's answer parser guesses with ``random.choice`` when it finds no
option letter). lmms-eval seeds Python's ``random`` (0), numpy (1234) and torch (1234) once before it
evaluates (``evaluator.simple_evaluate``) and draws nothing from them before it scores; it then scores its
tasks one after the other, each filter pipeline over every doc in turn. Every scoring pass of the harness
(``harness eval``, ``harness score``, the leaderboard's re-scoring) is one :func:`score_tasks`: inside
:func:`seeded_scoring` and in :func:`scoring_order`, so a scorer that draws makes lmms-eval's picks,
and re-scoring a run gives identical files. The seeds are recorded in the run (``provenance.seeds.scoring``).
A run's pass (:func:`score_run_tasks`) scores its tasks, then aggregates the groups its command line named
(:func:`group_results`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.engine.intervals import group_interval
from harness.engine.task_scoring import TaskScorer
from harness.errors import TaskConfigError
from harness.metrics.aggregation import pooled_stderr, weighted_mean
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord, ScoringSeeds, TaskCounts
from harness.taskspec.registry import TaskRegistry

#: lmms-eval 0.7.3's defaults (``--seed 0,1234,1234,1234``: random, numpy, torch, few-shot).
LMMS_SCORING_SEEDS = ScoringSeeds(random=0, numpy=1234, torch=1234)


@contextmanager
def seeded_scoring(seeds: ScoringSeeds = LMMS_SCORING_SEEDS) -> Iterator[ScoringSeeds]:
    """Python's, numpy's and torch's global generators seeded as lmms-eval seeds them, for one scoring
    pass; the caller's generator states are put back afterwards."""
    saved = random.getstate(), np.random.get_state(), torch.random.get_rng_state()
    random.seed(seeds.random)
    np.random.seed(seeds.numpy)
    torch.manual_seed(seeds.torch)
    try:
        yield seeds
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.random.set_rng_state(saved[2])


def scoring_order(registry: TaskRegistry, names: Sequence[str], tasks: Sequence[str]) -> list[str]:
    """``tasks`` in the order lmms-eval scores a run of ``--tasks names``: it sorts the names, then builds
    its task dict as ``dict(ChainMap(*loaded))``, which yields the last name's tasks first, so the names
    come in reverse sorted order; a group's tasks come in their listed order. Tasks no name covers (a
    group the registry does not hold) follow in their given order."""
    order: list[str] = []
    for name in sorted(set(names), reverse=True):
        try:
            members = registry.expand([name])
        except TaskConfigError:
            members = [name]
        order.extend(t for t in members if t in tasks and t not in order)
    return order + [t for t in tasks if t not in order]


@dataclass(frozen=True)
class TaskScoring:
    """One task's answered samples, ready to score: its scorer, its records and the docs they answer."""

    scorer: TaskScorer
    records: list[SampleRecord]
    docs: Sequence[dict[str, Any]]


@dataclass(frozen=True)
class ScoredTask:
    """One task after scoring: its records with their metrics, its task-level values, its counts and each
    figure's interval."""

    records: list[SampleRecord]
    results: dict[str, Any]
    counts: TaskCounts
    intervals: dict[str, Interval]


def score_tasks(
    tasks: dict[str, TaskScoring], order: Sequence[str], args: Any = None
) -> tuple[dict[str, ScoredTask], ScoringSeeds]:
    """Score every task and aggregate it, as lmms-eval does: under its seeds, the tasks in ``order``
    (:func:`scoring_order`), all of them scored before any is aggregated. ``args`` goes to aggregations
    that take it; each figure's interval is made last, under the same seeds (a bootstrap re-runs the task's
    aggregation). Returns each task's outcome (in ``tasks``' order) and the seeds it ran under."""
    with seeded_scoring() as seeds:
        records = {t: tasks[t].scorer.score_all(tasks[t].records, tasks[t].docs) for t in order}
        values = {t: tasks[t].scorer.aggregate(records[t], args) for t in order}
        intervals = {t: tasks[t].scorer.intervals(records[t], values[t][0]) for t in order}
    return {t: ScoredTask(records[t], *values[t], intervals[t]) for t in tasks}, seeds


@dataclass(frozen=True)
class ScoredRun:
    """Every task of a run scored (:func:`score_tasks`), and the groups its command line named aggregated
    (:func:`group_results`, whose intervals join the tasks' in ``intervals``)."""

    samples: dict[str, list[SampleRecord]]
    results: dict[str, dict[str, Any]]
    counts: dict[str, TaskCounts]
    intervals: dict[str, dict[str, Interval]]
    groups: dict[str, dict[str, Any]]
    group_subtasks: dict[str, list[str]]
    seeds: ScoringSeeds


def score_run_tasks(
    registry: TaskRegistry, names: Sequence[str], tasks: dict[str, TaskScoring], args: Any = None
) -> ScoredRun:
    """The scoring pass of a run of ``--tasks names`` (``harness eval``, ``harness score``): its tasks
    scored in lmms-eval's order, then its groups."""
    scored, seeds = score_tasks(tasks, scoring_order(registry, names, list(tasks)), args)
    results = {task: out.results for task, out in scored.items()}
    counts = {task: out.counts for task, out in scored.items()}
    intervals = {task: out.intervals for task, out in scored.items()}
    groups, group_subtasks = group_results(registry, list(names), results, counts, intervals)
    samples = {task: out.records for task, out in scored.items()}
    return ScoredRun(samples, results, counts, intervals, groups, group_subtasks, seeds)


def group_results(
    registry: TaskRegistry,
    names: list[str],
    results: dict[str, dict[str, Any]],
    counts: dict[str, TaskCounts],
    intervals: dict[str, dict[str, Interval]] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Aggregate groups named on the command line by their ``aggregate_metric_list``; given the tasks'
    ``intervals``, each group's figures get theirs there too (:func:`harness.engine.intervals.group_interval`)."""
    groups: dict[str, dict[str, Any]] = {}
    subtasks: dict[str, list[str]] = {}
    for name in names:
        spec = registry.groups.get(name)
        if spec is None:
            continue
        members = registry.expand([name])
        subtasks[name] = members
        out: dict[str, Any] = {"alias": name}
        for agg in spec.aggregate_metric_list:
            metric = agg.metric
            for filt in agg.filter_list:
                figure = MetricKey(metric, filt)
                key, stderr_key = figure.encoded, figure.stderr.encoded
                have = [t for t in members if results[t].get(key) is not None]
                if not have:
                    continue
                sizes = [counts[t].scored for t in have]
                weights = sizes if agg.weight_by_size else [1] * len(have)
                out[key] = weighted_mean([results[t][key] for t in have], weights)
                if intervals is not None:
                    pooled = [(intervals.get(t, {}).get(key), w) for t, w in zip(have, weights, strict=True)]
                    intervals.setdefault(name, {})[key] = group_interval(out[key], pooled)
                stderrs = [results[t].get(stderr_key) for t in have]
                floats = [s for s in stderrs if isinstance(s, float)]
                ok = len(floats) == len(stderrs) and sum(sizes) > len(sizes)
                out[stderr_key] = pooled_stderr(floats, sizes) if ok else "N/A"
        groups[name] = out
    return groups, subtasks
