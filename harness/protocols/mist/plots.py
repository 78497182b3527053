"""MIST plots: change rates with CIs per judge, and direction-type shares against the 50% chance line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _bars(ax: Any, figures: dict[str, dict[str, Any]]) -> None:
    names = list(figures)
    values = [figures[n]["value"] if figures[n]["value"] is not None else 0.0 for n in names]
    lows = [v - (figures[n]["ci95"] or [v, v])[0] for n, v in zip(names, values, strict=True)]
    highs = [(figures[n]["ci95"] or [v, v])[1] - v for n, v in zip(names, values, strict=True)]
    ax.bar(range(len(names)), values, yerr=[lows, highs], capsize=4, color="#4477aa")
    ax.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=8)
    ax.set_ylim(0, 1.05)


def mist_figures(change: dict[str, dict[str, Any]], shares: dict[str, dict[str, Any]], title: str, path: Path) -> Path:
    """Left: change rates (aligned, misleading, prompt-edit controls); right: direction, same-side and
    image-following shares with the 50% line that undirected changes would give."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    _bars(left, change)
    left.set_title("label change rate (95% CI)")
    _bars(right, shares)
    right.axhline(0.5, color="gray", linestyle="--", label="chance (50%)")
    right.set_title("where changed labels went (95% CI)")
    right.legend()
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
