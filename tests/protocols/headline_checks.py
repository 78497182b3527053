"""Shared by each protocol's headline tests: hand-built samples and reports handed to the protocol's leaderboard
hooks, and the figures its ``headline`` returns."""

from __future__ import annotations

from typing import Any

from harness.leaderboard.hooks import hooks_of
from harness.protocols.base import get_protocol
from harness.protocols.leaderboard_hooks import Estimate, Evidence
from harness.results.interval import Interval, IntervalMethod
from harness.results.sample_error import SampleError
from harness.results.schema import SampleRecord


def record(
    task: str,
    doc_id: int,
    metrics: dict[str, Any],
    doc: dict[str, Any] | None = None,
    responses: list[str] | None = None,
    error: SampleError | None = None,
) -> SampleRecord:
    return SampleRecord(
        task=task,
        doc_id=doc_id,
        doc_hash=str(doc_id),
        doc=doc or {"id": f"i{doc_id}"},
        responses=responses if responses is not None else ["x"],
        metrics=metrics,
        error=error,
    )


def evidence(
    samples: dict[str, list[SampleRecord]],
    reports: dict[str, dict[str, Any]] | None = None,
    model_type: str | None = None,
) -> Evidence:
    return Evidence(model="tiny:m", model_type=model_type, results={}, reports=reports or {}, samples=samples)


def headline(protocol: str, evidence: Evidence) -> dict[str, Estimate]:
    hooks = hooks_of(get_protocol(protocol))
    assert hooks is not None and hooks.headline is not None
    keys = {f.key for f in hooks.figures}
    figures = dict(hooks.headline(evidence))
    assert set(figures) <= keys
    return figures


def ci(low: float, high: float, n: int = 3, method: IntervalMethod = "cluster_bootstrap") -> Interval:
    """A 95% interval over ``n`` items, by the cluster bootstrap unless ``method`` says otherwise."""
    return Interval.of(low, high, method, n, "item")
