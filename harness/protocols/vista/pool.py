"""The VISTA peer pool: the cross-model audit (``harness.protocols.vista.audit.audit_records``) re-run over the
latest submission of every model that has the pooled task, each time such samples arrive.

Every computation is kept (members, judge, settings, date), so a model's suspicion figures are always
shown against the pool they were computed in.
"""

from __future__ import annotations

import csv
import functools
import io
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.judges.base import Judge
from harness.metrics.entailment_clusters import CLUSTERING_RULES, ClusteringRule
from harness.paths import default_store_path
from harness.protocols.pool_store import PoolMember, PoolResult, PoolStore, StoredPool
from harness.protocols.vista.audit import AuditConfig, audit_records, write_audit
from harness.protocols.vista.metrics import REFERENCES, Reference
from harness.results.jsonl import jsonl_lines
from harness.results.schema import SampleRecord
from harness.results.spreadsheet import spreadsheet_safe


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

    return make_judge(name, default_store_path())


def _samples_file(task: str) -> str:
    return f"samples_{task}.jsonl"


def pool_members(store: PoolStore, task: str) -> list[PoolMember]:
    """The latest submission per model carrying the task's samples, by submission id."""
    latest: dict[str, PoolMember] = {}
    for member in store.submissions_with_file(_samples_file(task)):  # oldest first: the last one stays
        latest[member.model] = member
    return sorted(latest.values(), key=lambda m: m.submission_id)


def _records(store: PoolStore, members: list[PoolMember], task: str) -> dict[str, list[SampleRecord]]:
    """{model: its submission's samples of ``task``}, read from the stored files."""
    out = {}
    for member in members:
        text = (store.read_file(member.submission_id, _samples_file(task)) or b"").decode("utf-8")
        out[member.model] = [SampleRecord.model_validate_json(line) for _, line in jsonl_lines(text)]
    return out


def recompute_pool(store: PoolStore, settings: PoolSettings, judge: Judge) -> int:
    """Audit the current pool and store the computation; returns its id. With fewer than two models
    the stored computation says the pool is waiting for peers."""
    members = pool_members(store, settings.task)
    config = AuditConfig(
        task=settings.task,
        alpha=settings.alpha,
        theta=settings.theta,
        clustering=settings.clustering,
        reference=settings.reference,
    )
    judge_name = getattr(judge, "name", settings.judge)
    per_model: dict[str, dict[str, Any]] = {}
    plot: bytes | None = None
    if len(members) < 2:
        status, message = (
            "waiting",
            f"{len(members)} model(s) with {settings.task} samples; the audit needs at least two",
        )
    else:
        try:
            result = audit_records(_records(store, members, settings.task), judge, config)
            with tempfile.TemporaryDirectory(prefix="vista-pool-") as tmp:
                path = write_audit(result, Path(tmp), judge_name) / "suspicion_by_model.png"
                plot = path.read_bytes() if path.is_file() else None
        except Exception as exc:  # a background job: record why the pool could not be computed
            status, message = "failed", f"{type(exc).__name__}: {exc}"[:2000]
        else:
            ids = {m.model: m.submission_id for m in members}
            status = "ok"
            message = (
                f"{len(members)} models, {len(result.rows) // len(members)} shared queries, "
                f"{result.judge_decisions} judge decisions, {result.skipped_queries} skipped queries"
            )
            per_model = {
                m: {
                    **v,
                    "flag_share": v["flags"] / v["queries"],
                    "submission_id": ids.get(m),
                }
                for m, v in result.per_model.items()
            }
    return store.record_pool(
        PoolResult(
            task=settings.task,
            judge=judge_name,
            config=asdict(config),
            members=tuple(members),
            per_model=per_model,
            status=status,
            message=message,
            plot=plot,
        )
    )


def pool_json(pool: StoredPool | None) -> dict[str, Any] | None:
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
        "members": [asdict(m) for m in pool.members],
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


def pool_csv(pool: StoredPool) -> str:
    """The pool's per-model table, with when, how and over whom it was computed on every row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*_POOL_COLUMNS, "detection_positive", "detection_score", "computed_at", "judge", "pool_size"])
    for model, row in pool.per_model.items():
        detection = row.get("detection", {})
        writer.writerow(
            [
                spreadsheet_safe(model),
                *(row.get(c) for c in _POOL_COLUMNS[1:]),
                detection.get("positive"),
                detection.get("score"),
                pool.computed_at.isoformat(),
                pool.judge,
                len(pool.members),
            ]
        )
    return buffer.getvalue()
