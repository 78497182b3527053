"""Honest ranks and paired comparisons between submissions, from their stored samples.

**Rank intervals.** Per table and per task metric, the submissions whose task the server re-scored
(``verified``, ``rescored`` or ``partial``: their per-doc scores are the server's) are ranked on the docs
they all scored, matched by ``doc_id`` and ``doc_hash``; every resample of those docs (or of the task's
``cluster_key`` units, from the server's own copy of the task) draws them for all models together, and each
model's rank interval holds the 2.5th and 97.5th percentiles of its ranks
(:func:`harness.metrics.paired.rank_intervals`). Models whose intervals overlap are shown as tied.

**Paired comparison.** Any two submissions compared as ``harness compare`` compares two runs
(:func:`harness.engine.compare.compare_samples`), on their stored samples.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.engine.compare import CompareReport, compare_samples
from harness.leaderboard.checks import PARTIAL, RESCORED, VERIFIED
from harness.leaderboard.db import Database, Submission
from harness.leaderboard.public import redact
from harness.leaderboard.records import get_file
from harness.metrics.paired import RankInterval, Units, rank_intervals
from harness.results.jsonl import jsonl_lines
from harness.results.metric_key import MetricKey, label_of
from harness.results.pairing import RunSamples, cluster_of, numeric_metrics, score_of
from harness.results.schema import SampleRecord
from harness.taskspec.registry import TaskRegistry

RANKED_STATES = frozenset({VERIFIED, RESCORED, PARTIAL})  # per-doc scores equal to the server's re-scoring

DocKey = tuple[int, str]  # (doc_id, doc_hash)


@dataclass(frozen=True)
class RankCell:
    """A submission's rank on one task metric, or why it has none."""

    interval: RankInterval | None
    tied_with: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def text(self) -> str:
        """``1-3``, or a dash."""
        return self.interval.text() if self.interval else "\N{EN DASH}"


@dataclass(frozen=True)
class RankColumn:
    """A task metric ranked: on how many shared docs, over how many units of which kind."""

    key: str
    label: str
    docs: int
    units: int
    unit: str
    note: str = ""


@dataclass(frozen=True)
class TableRanks:
    """The rank intervals of one table: its columns and, per submission id, a cell per column key."""

    protocol: str
    columns: list[RankColumn] = field(default_factory=list)
    cells: dict[int, dict[str, RankCell]] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def task_configs(include_paths: tuple[str, ...]) -> TaskRegistry:
    """The server's own task registry (read once per set of include paths: it sets ``cluster_key``)."""
    return TaskRegistry.discover(list(include_paths), shadowing="error")


def _config(registry: TaskRegistry, task: str) -> dict[str, Any]:
    try:
        return dict(registry.get(task).raw)
    except Exception:  # a task the server no longer knows: no cluster key, default score key
        return {}


def stored_samples(db: Database, submission_id: int, task: str) -> list[SampleRecord]:
    """A submission's stored ``samples_<task>.jsonl`` records (validated when it was stored); none
    without the file."""
    content = get_file(db, submission_id, f"samples_{task}.jsonl")
    if content is None:
        return []
    return [SampleRecord.model_validate_json(line) for _, line in jsonl_lines(content.decode("utf-8"))]


@dataclass(frozen=True)
class DocScores:
    """One task of one submission, per numeric metric: each scored doc's score, and each doc's unit."""

    scores: dict[str, dict[DocKey, float]]
    clusters: dict[DocKey, Any] | None


@functools.lru_cache(maxsize=512)
def _doc_scores(db: Database, submission_id: int, task: str, cluster_key: str | None, score_key: str) -> DocScores:
    """Cached per submission (records are immutable): what the rank intervals read of its samples."""
    records = [r for r in stored_samples(db, submission_id, task) if r.error is None]
    scores: dict[str, dict[DocKey, float]] = {}
    for metric in numeric_metrics(records, score_key):
        found = {(r.doc_id, r.doc_hash): score_of(r.metrics.get(metric), score_key) for r in records}
        scores[metric] = {k: v for k, v in found.items() if v is not None}
    clusters = None
    if cluster_key is not None and records:
        metric = next(iter(scores), "")
        clusters = {(r.doc_id, r.doc_hash): cluster_of(r, metric, cluster_key, task) for r in records}
    return DocScores(scores, clusters)


_COMPUTED: dict[tuple[str, tuple[str, ...], tuple[str, ...]], dict[str, TableRanks]] = {}
_LOCK = threading.Lock()
_KEEP = 4  # sets of ranks kept: a page drawn again with no new submission reuses its ranks


def table_ranks(
    db: Database, records: Sequence[Submission], include_paths: tuple[str, ...] = ()
) -> dict[str, TableRanks]:
    """Per table (protocol, or group of tasks of no protocol), the rank intervals of its task metrics;
    computed once per set of submissions (keyed by their content hashes: records never change)."""
    key = (db.url, tuple(r.content_hash for r in records), include_paths)
    with _LOCK:  # the server draws pages in threads
        if key not in _COMPUTED:
            while len(_COMPUTED) >= _KEEP:
                _COMPUTED.pop(next(iter(_COMPUTED)))
            _COMPUTED[key] = _table_ranks(db, records, include_paths)
        return _COMPUTED[key]


def _table_ranks(db: Database, records: Sequence[Submission], include_paths: tuple[str, ...]) -> dict[str, TableRanks]:
    registry = task_configs(include_paths)
    out: dict[str, TableRanks] = {}
    for table in sorted({s.protocol for r in records for s in r.scores}):
        ranks = TableRanks(table)
        metrics = {
            (s.task, s.metric): s.higher_is_better
            for r in records
            for s in r.scores
            if s.protocol == table and s.version != "group"
        }
        for (task, metric), higher in sorted(metrics.items()):
            _rank_metric(db, records, table, task, metric, higher is not False, _config(registry, task), ranks)
        out[table] = ranks
    return out


def _rank_metric(
    db: Database,
    records: Sequence[Submission],
    table: str,
    task: str,
    metric: str,
    higher_is_better: bool,
    config: dict[str, Any],
    ranks: TableRanks,
) -> None:
    """Adds one task metric's column and cells to ``ranks`` (nothing when fewer than two models hold it)."""
    cluster_key = config.get("cluster_key") if isinstance(config.get("cluster_key"), str) else None
    score_key = config.get("score_key") if isinstance(config.get("score_key"), str) else "score"
    key = f"{task}/{metric}"
    holders = [r for r in records if any(s.task == task and s.metric == metric for s in r.scores)]
    members, found, skipped = [], [], {}
    for record in holders:
        state = next(s.status for s in record.scores if s.task == task and s.metric == metric)
        scores = _doc_scores(db, record.id, task, cluster_key, score_key) if state in RANKED_STATES else None
        if scores is None or metric not in scores.scores:
            skipped[record.id] = f"not ranked: {state}" if state not in RANKED_STATES else "no per-doc scores"
            continue
        members.append(record)
        found.append(scores)
    if len(members) < 2:
        return
    shared = sorted(set.intersection(*(set(f.scores[metric]) for f in found)))
    clusters = None if cluster_key is None or found[0].clusters is None else [found[0].clusters[k] for k in shared]
    units = Units.of(len(shared), clusters, cluster_key or "doc")
    label = f"{task} {label_of(metric)}"
    cells = {i: RankCell(None, reason=why) for i, why in skipped.items()}
    if units.count < 2:
        ranks.columns.append(
            RankColumn(key, label, len(shared), units.count, units.name, f"fewer than 2 shared {units.name}s")
        )
        cells |= {r.id: RankCell(None, reason=f"fewer than 2 shared {units.name}s") for r in members}
    else:
        matrix = np.array([[f.scores[metric][k] for k in shared] for f in found])
        intervals = rank_intervals(matrix, units, higher_is_better)
        names = [f"{redact(r.model)} #{r.id}" for r in members]
        for i, (record, interval) in enumerate(zip(members, intervals, strict=True)):
            tied = tuple(n for j, n in enumerate(names) if j != i and interval.overlaps(intervals[j]))
            cells[record.id] = RankCell(interval, tied)
        ranks.columns.append(RankColumn(key, label, len(shared), units.count, units.name))
    for record_id, cell in cells.items():
        ranks.cells.setdefault(record_id, {})[key] = cell


def submission_run(db: Database, record: Submission, include_paths: tuple[str, ...] = ()) -> RunSamples:
    """A submission as ``harness compare`` reads a run: its re-scored tasks' stored samples, the server's
    task configs, and which way each metric is better; labelled ``model #id``."""
    registry = task_configs(include_paths)
    tasks = sorted({s.task for s in record.scores if s.version != "group" and s.status in RANKED_STATES})
    higher: dict[str, dict[str, bool]] = {}
    for s in record.scores:
        if s.higher_is_better is not None:
            name = MetricKey.parse(s.metric)
            higher.setdefault(s.task, {})[name.metric if name else s.metric] = s.higher_is_better
    return RunSamples(
        label=f"{redact(record.model)} #{record.id}",
        model=redact(record.model),
        samples={task: stored_samples(db, record.id, task) for task in tasks},
        configs={task: _config(registry, task) for task in tasks},
        higher_is_better=higher,
    )


def compare_submissions(
    db: Database, a: Submission, b: Submission, include_paths: tuple[str, ...] = ()
) -> CompareReport:
    """Two submissions compared on the docs both scored, task by task (:func:`compare_samples`)."""
    return compare_samples([submission_run(db, a, include_paths), submission_run(db, b, include_paths)])
