"""Two runs' samples of one task, doc by doc: what a paired comparison of two models stands on.

Docs are matched by ``doc_id`` and must carry the same ``doc_hash`` in both runs (else the runs read
different data, and pairing them would be a silent misalignment: a one-line error says so). Only docs
scored in both runs count; the others are counted as dropped. A doc's score for a metric is its per-sample
value when that is a number (true/false count as 1/0), or the ``score_key`` field of a per-sample dict
(lmms-eval's convention); its cluster, when the task declares a ``cluster_key``, is that field of the
per-sample dict or of the doc.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord, read_run, read_samples

#: lmms-eval's default ``score_key``: the field of a per-sample dict that holds its score.
SCORE_KEY = "score"


@dataclass(frozen=True)
class PairedDocs:
    """One metric of one task on the docs two runs both scored, in ``doc_id`` order: ``a[i]`` and ``b[i]``
    are doc ``doc_ids[i]``'s scores, ``answers_a[i]``/``answers_b[i]`` its filtered answers, and
    ``clusters[i]`` its unit (None: each doc is its own). ``dropped`` docs of either run were not scored
    in both (missing from one run, an errored sample, an answer the metric could not parse)."""

    task: str
    metric: str
    doc_ids: tuple[int, ...]
    doc_hashes: tuple[str, ...]
    a: tuple[float, ...]
    b: tuple[float, ...]
    answers_a: tuple[Any, ...]
    answers_b: tuple[Any, ...]
    clusters: tuple[Any, ...] | None
    cluster_key: str | None
    dropped: int


def score_of(value: Any, score_key: str = SCORE_KEY) -> float | None:
    """A per-sample metric value as a number: a finite number (booleans as 0/1), or a dict's ``score_key``
    field; None for anything else (None, NaN, text, a dict without it)."""
    if isinstance(value, dict):
        value = value.get(score_key)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def numeric_metrics(records: list[SampleRecord], score_key: str = SCORE_KEY) -> list[str]:
    """The ``metric,filter`` keys that hold a number (:func:`score_of`) on at least one sample, in first-seen
    order; a metric whose per-sample values are never numbers (an aggregate over docs) is not paired."""
    seen: dict[str, None] = {}
    for record in records:
        for key, value in record.metrics.items():
            if key not in seen and score_of(value, score_key) is not None:
                seen[key] = None
    return list(seen)


def _by_doc(records: list[SampleRecord], task: str, label: str) -> dict[int, SampleRecord]:
    docs: dict[int, SampleRecord] = {}
    for record in records:
        if record.doc_id in docs:
            raise HarnessError(f"{task}: doc {record.doc_id} appears twice in {label}'s samples; the run is damaged")
        docs[record.doc_id] = record
    return docs


def cluster_of(record: SampleRecord, metric: str, cluster_key: str, task: str) -> Any:
    """A doc's unit: the ``cluster_key`` field of its per-sample ``metric`` dict, else of its doc (a value
    that is not a plain scalar stands as its repr); neither is a :class:`HarnessError` naming the doc."""
    value = record.metrics.get(metric)
    if isinstance(value, dict) and cluster_key in value:
        found = value[cluster_key]
    elif cluster_key in record.doc:
        found = record.doc[cluster_key]
    else:
        raise HarnessError(
            f"{task}: cluster_key {cluster_key!r} is neither a field of doc {record.doc_id} nor of its "
            f"{metric} value; fix the task's cluster_key"
        )
    return found if isinstance(found, str | int | float | bool) or found is None else repr(found)


def pair_docs(
    task: str,
    metric: str,
    records_a: list[SampleRecord],
    records_b: list[SampleRecord],
    labels: tuple[str, str] = ("A", "B"),
    cluster_key: str | None = None,
    score_key: str = SCORE_KEY,
) -> PairedDocs:
    """The docs of ``task`` both runs scored on ``metric``, matched by ``doc_id``; a doc whose
    ``doc_hash`` differs between the runs is a :class:`HarnessError` naming it."""
    docs_a, docs_b = _by_doc(records_a, task, labels[0]), _by_doc(records_b, task, labels[1])
    rows = []
    for doc_id in sorted(docs_a.keys() & docs_b.keys()):
        ra, rb = docs_a[doc_id], docs_b[doc_id]
        if ra.doc_hash != rb.doc_hash and ra.doc_hash and rb.doc_hash:
            raise HarnessError(
                f"{task}: doc {doc_id} differs between {labels[0]} (doc_hash {ra.doc_hash}) and {labels[1]} "
                f"(doc_hash {rb.doc_hash}): the runs read different data; compare runs of the same dataset"
            )
        sa, sb = score_of(ra.metrics.get(metric), score_key), score_of(rb.metrics.get(metric), score_key)
        if sa is None or sb is None or ra.error is not None or rb.error is not None:
            continue
        rows.append((doc_id, ra, rb, sa, sb))
    key = MetricKey.parse(metric)
    filter_name = key.filter if key is not None else "none"
    return PairedDocs(
        task=task,
        metric=metric,
        doc_ids=tuple(r[0] for r in rows),
        doc_hashes=tuple(r[1].doc_hash for r in rows),
        a=tuple(r[3] for r in rows),
        b=tuple(r[4] for r in rows),
        answers_a=tuple(r[1].filtered.get(filter_name) for r in rows),
        answers_b=tuple(r[2].filtered.get(filter_name) for r in rows),
        clusters=None if cluster_key is None else tuple(cluster_of(r[1], metric, cluster_key, task) for r in rows),
        cluster_key=cluster_key,
        dropped=len(docs_a.keys() | docs_b.keys()) - len(rows),
    )


@dataclass(frozen=True)
class RunSamples:
    """A run as a comparison reads it: its label, each task's sample records, and per task its config
    (``cluster_key``, ``score_key``) and which way each metric is better."""

    label: str
    model: str
    samples: dict[str, list[SampleRecord]]
    configs: dict[str, dict[str, Any]]
    higher_is_better: dict[str, dict[str, bool]]
    path: str | None = None

    def cluster_key(self, task: str) -> str | None:
        """The field naming the unit the task's docs share (its config's ``cluster_key``), if it declares one."""
        key = self.configs.get(task, {}).get("cluster_key")
        return key if isinstance(key, str) and key else None

    def score_key(self, task: str) -> str:
        """The field of a per-sample dict that holds its score (the config's ``score_key``, else ``score``)."""
        key = self.configs.get(task, {}).get("score_key")
        return key if isinstance(key, str) and key else SCORE_KEY


def read_run_samples(run_dir: Path, label: str | None = None, tasks: list[str] | None = None) -> RunSamples:
    """A run folder's ``results.json`` and the samples of its tasks (``tasks``: only those), as
    :class:`RunSamples` labelled ``label`` (default: the run's model)."""
    run = read_run(run_dir)
    wanted = list(run.counts)
    if tasks is not None:
        chosen = {m for name in tasks for m in run.group_subtasks.get(name, [name])}
        unknown = [name for name in tasks if name not in run.group_subtasks and name not in run.counts]
        if unknown:
            raise HarnessError(f"{run_dir}: no task {', '.join(unknown)} in this run (it has {', '.join(wanted)})")
        wanted = [t for t in wanted if t in chosen]
    return RunSamples(
        label=label or run.config.model,
        model=run.config.model,
        samples={task: read_samples(run_dir, task) for task in wanted},
        configs=run.configs,
        higher_is_better=run.higher_is_better,
        path=str(run_dir),
    )
