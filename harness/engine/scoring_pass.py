"""One scoring pass: the same figures on every pass, under the seeds and in the order lmms-eval 0.7.3 scores.

Task scorers may draw random numbers (MMMU's answer parser guesses with ``random.choice`` when it finds no
option letter). lmms-eval seeds Python's ``random`` (0), numpy (1234) and torch (1234) once before it
evaluates (``evaluator.simple_evaluate``) and draws nothing from them before it scores; it then scores its
tasks one after the other, each filter pipeline over every doc in turn. Every scoring pass of the harness
(``harness eval``, ``harness score``, the leaderboard's re-scoring) is one :func:`score_tasks`: inside
:func:`seeded_scoring` and in :func:`scoring_order`, so a scorer that draws makes lmms-eval's picks,
and re-scoring a run gives identical files. The seeds are recorded in the run (``provenance.seeds.scoring``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from harness.engine.task_runtime import TaskRuntime
from harness.errors import TaskConfigError
from harness.results.interval import Interval
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
    """One task's answered samples, ready to score: its runtime, its records and the docs they answer."""

    runtime: TaskRuntime
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
        records = {t: tasks[t].runtime.score_all(tasks[t].records, tasks[t].docs) for t in order}
        values = {t: tasks[t].runtime.aggregate(records[t], args) for t in order}
        intervals = {t: tasks[t].runtime.intervals(records[t], values[t][0]) for t in order}
    return {t: ScoredTask(records[t], *values[t], intervals[t]) for t in tasks}, seeds
