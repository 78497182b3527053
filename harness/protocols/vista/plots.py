"""VISTA plots: the distribution of suspicion scores per model against the flag threshold."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def suspicion_distribution(scores: dict[str, list[float]], theta: float, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(scores)), 4), constrained_layout=True)
    names = list(scores)
    ax.boxplot([scores[n] or [0.0] for n in names], showfliers=True)
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
