"""VISTA plots: suspicion per model against the flag threshold, refusal rates per demographic group, and
those refusals decomposed by kind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import PercentFormatter

from harness.results.interval import Interval


def suspicion_distribution(
    scores: dict[str, list[float]], theta: float, path: Path, mean_intervals: Mapping[str, Interval] | None = None
) -> Path:
    """Box plot of each model's suspicion scores S over its queries against the flag threshold theta, with
    each model's mean S and its 95% interval (``mean_intervals``) beside its box, saved to ``path``."""
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(scores)), 4), constrained_layout=True)
    names = list(scores)
    ax.boxplot([scores[n] or [0.0] for n in names], showfliers=True)
    drawn = False
    for x, name in enumerate(names, start=1):
        interval = (mean_intervals or {}).get(name)
        if scores[name] and interval is not None and interval.low is not None and interval.high is not None:
            mean = sum(scores[name]) / len(scores[name])
            error = [[mean - interval.low], [interval.high - mean]]
            label = None if drawn else "mean S, 95% CI"
            ax.errorbar(x + 0.3, mean, yerr=error, fmt="D", color="black", markersize=4, capsize=3, label=label)
            drawn = True
    ax.set_xticks(range(1, len(names) + 1), [n.split(":")[-1][-24:] for n in names], fontsize=8)
    ax.axhline(theta, color="crimson", linestyle="--", label=f"flag threshold theta = {theta}")
    ax.set_ylabel("suspicion S = confidence x divergence")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    ax.set_title("VISTA: suspicion per model and query")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def refusal_by_group(rates: dict[str, dict[str, float]], path: Path) -> Path:
    """Grouped bars: each demographic group's refusal rate, one bar per model."""
    groups = sorted({g for per_group in rates.values() for g in per_group})
    models = list(rates)
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(groups)), 4), constrained_layout=True)
    for i, model in enumerate(models):
        xs = [g + (i - (len(models) - 1) / 2) * width for g in range(len(groups))]
        values = [rates[model].get(g, 0.0) for g in groups]
        bars = ax.bar(xs, values, width, label=model.split(":")[-1][-28:])
        ax.bar_label(bars, [f"{v:.2f}" for v in values], fontsize=7, padding=2)  # a zero rate stays visible
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("refusal rate (empty, decline or disclaimer)")
    ax.set_ylim(0, 1.02)
    ax.set_title("VISTA: refusal rate per demographic group and model")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def refusal_kinds(breakdown: dict[str, dict[str, dict[str, float | int]]], path: Path) -> Path:
    """Table 15 decomposed (appendix C.2): one panel per model, a bar per demographic group stacked by
    refusal kind (empty, safety disclaimer, explicit decline) as a share of all its responses."""
    from harness.protocols.vista.refusal import TABLE15_KINDS

    groups = sorted({g for per_group in breakdown.values() for g in per_group})
    models = list(breakdown)
    labels = {"empty": "empty", "disclaimer": "safety disclaimer", "decline": "explicit decline"}
    colors = {"empty": "#bbbbbb", "disclaimer": "#e69f00", "decline": "#0072b2"}
    fig, axes = plt.subplots(
        1,
        len(models),
        figsize=(max(6, 2.2 + 2.4 * len(models)), 4),
        sharey=True,
        squeeze=False,
        constrained_layout=True,
    )
    top = 0.0
    for ax, model in zip(axes[0], models, strict=True):
        bottom = [0.0] * len(groups)
        for kind in TABLE15_KINDS:
            values = [float(breakdown[model].get(g, {}).get(kind, 0.0)) for g in groups]
            ax.bar(range(len(groups)), values, 0.7, bottom=bottom, color=colors[kind], label=labels[kind])
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        for x, total in enumerate(bottom):
            ax.text(x, total + 0.01, f"{100 * total:.1f}%", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
        ax.set_title(model.rsplit("/", 1)[-1].split(":")[-1][-28:], fontsize=9)
        top = max(top, *bottom)
    axes[0][0].set_ylim(0, min(1.08, max(0.05, 1.15 * top)))  # shared: small rates stay visible
    axes[0][0].yaxis.set_major_formatter(PercentFormatter(1.0))  # the axis in the bars' own unit, percent
    axes[0][0].set_ylabel("share of responses (%)")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("VISTA: refusals by demographic group and kind")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
