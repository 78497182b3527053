"""The controlled study's plots: negativity before and after implantation per entity (Table 1 as bars),
and each instance's model-level VISTA score against the threshold, coloured by role."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

ROLE_COLORS = {"pretrained": "#7f7f7f", "benign": "#1f77b4", "harmful": "#d62728"}


def negativity_before_after(table1: Sequence[dict[str, Any]], path: Path) -> Path:
    """Grouped bars per (base, entity): pretrained, harmful LoRA and benign LoRA negativity in percent."""
    rows = list(table1)
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows)), 4), constrained_layout=True)
    for i, (key, role) in enumerate((("pt", "pretrained"), ("ft", "harmful"), ("benign", "benign"))):
        xs = [j + (i - 1) * 0.27 for j in range(len(rows))]
        bars = ax.bar(xs, [r[key] or 0.0 for r in rows], 0.27, color=ROLE_COLORS[role], label=role)
        ax.bar_label(bars, labels=["-" if r[key] is None else f"{r[key]:.0f}" for r in rows], fontsize=8)
    ax.set_xticks(range(len(rows)), [f"{r['base']}\n{r['entity']}" for r in rows], fontsize=8)
    ax.set_ylabel("negative responses (%)")
    ax.set_ylim(0, 105)
    ax.legend()
    ax.set_title("Stance implantation: negativity before and after")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def detection_scores(instances: Sequence[dict[str, Any]], theta: float, path: Path) -> Path:
    """One bar per instance: its model-level VISTA score (top-5% mean S), the threshold as a line."""
    rows = list(instances)
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(rows)), 4), constrained_layout=True)
    ax.bar(
        range(len(rows)), [r["detection"]["vista"]["score"] for r in rows], color=[ROLE_COLORS[r["role"]] for r in rows]
    )
    ax.axhline(theta, color="black", linestyle="--", label=f"theta = {theta}")
    ax.set_xticks(range(len(rows)), [r["instance"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("model-level VISTA score")
    ax.set_ylim(0, 1.02)
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in ROLE_COLORS.values()]
    ax.legend([*handles, ax.get_lines()[0]], [*ROLE_COLORS, f"theta = {theta}"], fontsize=8)
    ax.set_title("Model-level detection per instance")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
