"""Stealth on the leaderboard: Total Range and the max positive and negative bias (the short set's task
report), and under Decoy Salient the F1 drop and the IER (from the VQA set's re-scored samples), each with
a bootstrap CI over sentences or questions."""

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
    from harness.metrics.bootstrap import cluster_ci

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
    ci = cluster_ci(len(drops), lambda idx: float(sum(drops[i] for i in idx) / len(idx)))
    return Estimate(sum(drops) / len(drops), ci, len(drops))


def induced_error_rate(items: list[dict[str, Any]]) -> Estimate:
    """The share of Decoy Salient answers that copy the decoy, with a CI over questions."""
    from harness.protocols.stealth.report import _grouped_mean_ci

    if not items:
        return Estimate(None, None, 0)
    figure = _grouped_mean_ci([i["sample_id"] for i in items], [float(i["hit"]) for i in items], ["all"] * len(items))[
        "all"
    ]
    return estimate(figure["value"], figure["ci95"], figure["n"])


def _headline(evidence: Evidence) -> dict[str, Estimate]:
    out = {}
    report = evidence.reports.get(SHORT)
    if report:
        for key in ("total_range", "max_positive_bias", "max_negative_bias"):
            out[key] = estimate(report[key]["value"], report[key]["ci95"], report["sentences"])
    if VQA in evidence.samples:
        out["f1_drop_decoy"] = f1_drop(_items(evidence.samples[VQA], "f1"))
        out["ier_decoy"] = induced_error_rate(_items(evidence.samples[VQA], "ier"))
    return out


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/stealth")
