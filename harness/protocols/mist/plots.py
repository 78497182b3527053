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
    ends = [_ends(figures[n].get("interval"), v) for n, v in zip(names, values, strict=True)]
    lows = [v - low for (low, _), v in zip(ends, values, strict=True)]
    highs = [high - v for (_, high), v in zip(ends, values, strict=True)]
    ax.bar(range(len(names)), values, yerr=[lows, highs], capsize=4, color="#4477aa")
    ax.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=8)
    ax.set_ylim(0, 1.05)


def _ends(interval: dict[str, Any] | None, value: float) -> tuple[float, float]:
    """An interval's ends, or the value twice (no bar) where there is none."""
    if not interval or interval.get("low") is None:
        return value, value
    return float(interval["low"]), float(interval["high"])


def mist_figures(change: dict[str, dict[str, Any]], shares: dict[str, dict[str, Any]], title: str, path: Path) -> Path:
    """Left: change rates (aligned, misleading, prompt-edit controls); right: direction, same-side and
    image-following shares with the 50% line that undirected changes would give."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    _bars(left, change)
    left.set_title("label change rate (95% CI, bootstrap over items)")
    _bars(right, shares)
    right.axhline(0.5, color="gray", linestyle="--", label="chance (50%)")
    right.set_title("where changed labels went (95% CI, bootstrap over items)")
    right.legend()
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
