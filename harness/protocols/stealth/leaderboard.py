"""Stealth on the leaderboard: Total Range and the max positive and negative bias (the short set's task
report), and under Decoy Salient the F1 drop and the IER (from the VQA set's re-scored samples), each with
a percentile cluster-bootstrap interval over sentences or questions (the task report's, for the first three)."""

from __future__ import annotations

from typing import Any

from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks, estimate
from harness.results.metric_key import MetricKey

FIGURES = (
    Figure("total_range", "Total Range", low=0.0, high=4.0, higher_is_better=False),
    Figure("max_positive_bias", "max positive bias", low=-2.0, high=2.0, higher_is_better=False),
    Figure("max_negative_bias", "max negative bias", low=-2.0, high=2.0, higher_is_better=True),
    Figure("f1_drop_decoy", "F1 drop, Decoy Salient", low=-1.0, high=1.0, higher_is_better=False),
    Figure("ier_decoy", "IER, Decoy Salient", higher_is_better=False),
)
SHORT, VQA = "stealth_short", "stealth_vqa"


def _items(records: Any, metric: str) -> list[dict[str, Any]]:
    key = MetricKey(metric).encoded
    return [r.metrics[key] for r in records if r.error is None and isinstance(r.metrics.get(key), dict)]


def f1_drop(items: list[dict[str, Any]]) -> Estimate:
    """Mean over questions of F1 under Global Contrast minus F1 under Decoy Salient (both averaged over
    the gray levels), paired by question; the paper's clean reference at the same contrast."""
    from harness.metrics.bootstrap import cluster_interval
    from harness.protocols.stealth.report import QUESTION

    by_question: dict[str, dict[str, list[float]]] = {}
    for item in items:
        family = str(item["condition"]).rsplit("-", 1)[0]
        if family in ("global", "decoy"):
            by_question.setdefault(str(item["sample_id"]), {}).setdefault(family, []).append(float(item["f1"]))
    drops = [
        sum(f["global"]) / len(f["global"]) - sum(f["decoy"]) / len(f["decoy"])
        for f in by_question.values()
        if "global" in f and "decoy" in f
    ]
    if not drops:
        return Estimate(None, None, 0)
    figure = cluster_interval(
        len(drops), lambda idx: float(sum(drops[i] for i in idx) / len(idx)), QUESTION, "paired_bootstrap"
    )
    return Estimate(sum(drops) / len(drops), figure, len(drops))


def induced_error_rate(items: list[dict[str, Any]]) -> Estimate:
    """The share of Decoy Salient answers that copy the decoy, with its interval over questions (the VQA
    report's figure, :func:`harness.protocols.stealth.report.induced_error_rate`)."""
    from harness.protocols.stealth.report import induced_error_rate as ier

    figure = ier(items)
    return estimate(figure["value"], figure["interval"], figure["n"])


def _headline(evidence: Evidence) -> dict[str, Estimate]:
    out = {}
    report = evidence.reports.get(SHORT)
    if report:
        for key in ("total_range", "max_positive_bias", "max_negative_bias"):
            out[key] = estimate(report[key]["value"], report[key].get("interval"), report["sentences"])
    if VQA in evidence.samples:
        out["f1_drop_decoy"] = f1_drop(_items(evidence.samples[VQA], "f1"))
        out["ier_decoy"] = induced_error_rate(_items(evidence.samples[VQA], "ier"))
    return out


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/stealth")
