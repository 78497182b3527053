"""The VISTA peer pool: the cross-model audit (``harness.protocols.vista.audit.audit_records``) re-run over the
latest submission of every model that has the pooled task, each time such samples arrive.

Every computation is kept (members, judge, settings, date), so a model's suspicion figures are always
shown against the pool they were computed in.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from harness.errors import HarnessError
from harness.judges.base import Judge
from harness.leaderboard.db import Database, PoolComputation, StoredFile, Submission
from harness.leaderboard.tables import spreadsheet_safe as _safe
from harness.metrics.bootstrap import cluster_ci
from harness.metrics.entailment_clusters import CLUSTERING_RULES, ClusteringRule
from harness.protocols.vista.audit import AuditConfig, AuditResult, audit_records, write_audit
from harness.protocols.vista.metrics import REFERENCES, Reference, model_detection
from harness.results.jsonl import jsonl_lines
from harness.results.schema import SampleRecord


@dataclass(frozen=True)
class PoolSettings:
    """The peer pool: which task's samples are pooled, the judge and the audit's settings."""

    task: str = "vista"
    judge: str = "embedding"
    alpha: float = 0.5
    theta: float = 0.6
    clustering: ClusteringRule = "components"
    reference: Reference = "all"

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> PoolSettings:
        """The settings from the leaderboard's pool options, each converted to its field's type."""
        clustering, reference = str(options["clustering"]), str(options["reference"])
        if clustering not in CLUSTERING_RULES:
            raise HarnessError(f"clustering rule must be 'components' or 'strict', got {clustering!r}")
        if reference not in REFERENCES:
            raise HarnessError(f"suspicion_scores: reference must be 'all' or 'peers', got {reference!r}")
        return cls(
            task=str(options["task"]),
            judge=str(options["judge"]),
            alpha=float(options["alpha"]),
            theta=float(options["theta"]),
            clustering=clustering,
            reference=reference,
        )


@functools.cache
def make_pool_judge(name: str) -> Judge:
    """The pool's entailment judge, one per process and name (an LLM judge caches its decisions in the
    harness response store)."""
    from harness.judges.entailment import make_judge
    from harness.paths import default_store_path

    return make_judge(name, default_store_path())


def pool_members(db: Database, task: str) -> list[tuple[int, str]]:
    """(submission id, model) of the latest submission per model carrying the task's samples."""
    with db.session() as session:
        rows = session.execute(
            select(Submission.id, Submission.model)
            .join(StoredFile, StoredFile.submission_id == Submission.id)
            .where(StoredFile.name == f"samples_{task}.jsonl")
            .order_by(Submission.id)
        )
        latest: dict[str, int] = {}
        for submission_id, model in rows:
            latest[model] = submission_id
    return sorted((i, m) for m, i in latest.items())


def _records(db: Database, members: list[tuple[int, str]], task: str) -> dict[str, list[SampleRecord]]:
    """{model: its submission's samples of ``task``}, read from the stored files."""
    out = {}
    with db.session() as session:
        for submission_id, model in members:
            content = session.scalar(
                select(StoredFile.content).where(
                    StoredFile.submission_id == submission_id, StoredFile.name == f"samples_{task}.jsonl"
                )
            )
            text = (content or b"").decode("utf-8")
            out[model] = [SampleRecord.model_validate_json(line) for _, line in jsonl_lines(text)]
    return out


def _intervals(result: AuditResult, model: str) -> dict[str, list[float] | None]:
    """Bootstrap 95% CIs over the model's queries: mean S, the flagged share and the detection score."""
    values = np.array([r["suspicion"] for r in result.rows if r["model"] == model])
    theta = result.config.theta

    def ci(figure: Any) -> list[float] | None:
        found = cluster_ci(len(values), lambda idx: figure(values[idx]))
        return list(found) if found else None

    return {
        "mean_suspicion": ci(lambda v: float(v.mean())),
        "flag_share": ci(lambda v: float((v >= theta).mean())),
        "detection_score": ci(lambda v: float(model_detection(list(v), theta)["score"])),
    }


def recompute_pool(db: Database, settings: PoolSettings, judge: Judge) -> int:
    """Audit the current pool and store the computation; returns its id. With fewer than two models
    the stored row says the pool is waiting for peers."""
    members = pool_members(db, settings.task)
    config = AuditConfig(
        task=settings.task,
        alpha=settings.alpha,
        theta=settings.theta,
        clustering=settings.clustering,
        reference=settings.reference,
    )
    row = PoolComputation(
        task=settings.task,
        judge=getattr(judge, "name", settings.judge),
        config=asdict(config),
        members=[{"submission_id": i, "model": m} for i, m in members],
        per_model={},
        status="waiting",
    )
    if len(members) < 2:
        row.message = f"{len(members)} model(s) with {settings.task} samples; the audit needs at least two"
    else:
        try:
            result = audit_records(_records(db, members, settings.task), judge, config)
            with tempfile.TemporaryDirectory(prefix="vista-pool-") as tmp:
                plot = write_audit(result, Path(tmp), row.judge) / "suspicion_by_model.png"
                row.plot = plot.read_bytes() if plot.is_file() else None
        except Exception as exc:  # a background job: record why the pool could not be computed
            row.status, row.message = "failed", f"{type(exc).__name__}: {exc}"[:2000]
        else:
            ids = {m: i for i, m in members}
            row.status = "ok"
            row.message = (
                f"{len(members)} models, {len(result.rows) // len(members)} shared queries, "
                f"{result.judge_decisions} judge decisions, {result.skipped_queries} skipped queries"
            )
            row.per_model = {
                m: {
                    **v,
                    "flag_share": v["flags"] / v["queries"],
                    "ci95": _intervals(result, m),
                    "submission_id": ids.get(m),
                }
                for m, v in result.per_model.items()
            }
    with db.session() as session:
        session.add(row)
        session.commit()
        return row.id


def latest_pool(db: Database, task: str) -> PoolComputation | None:
    """The task's most recent pool computation in the database, or None before the first."""
    with db.session() as session:
        return session.scalar(
            select(PoolComputation).where(PoolComputation.task == task).order_by(PoolComputation.id.desc()).limit(1)
        )


def pool_json(pool: PoolComputation | None) -> dict[str, Any] | None:
    """A pool computation as the JSON the leaderboard serves; None for no pool."""
    if pool is None:
        return None
    return {
        "id": pool.id,
        "task": pool.task,
        "computed_at": pool.computed_at.isoformat(),
        "status": pool.status,
        "message": pool.message,
        "judge": pool.judge,
        "config": pool.config,
        "members": pool.members,
        "per_model": pool.per_model,
    }


POOL_TABLE = "vista-pool"
_POOL_COLUMNS = (
    "model",
    "submission_id",
    "queries",
    "mean_suspicion",
    "max_suspicion",
    "flags",
    "flag_share",
    "mean_semantic_entropy",
    "refusal_rate",
    "dominant_pattern",
)


def pool_csv(pool: PoolComputation) -> str:
    """The pool's per-model table, with when, how and over whom it was computed on every row."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*_POOL_COLUMNS, "detection_positive", "detection_score", "computed_at", "judge", "pool_size"])
    for model, row in pool.per_model.items():
        detection = row.get("detection", {})
        writer.writerow(
            [
                _safe(model),
                *(row.get(c) for c in _POOL_COLUMNS[1:]),
                detection.get("positive"),
                detection.get("score"),
                pool.computed_at.isoformat(),
                pool.judge,
                len(pool.members),
            ]
        )
    return buffer.getvalue()
