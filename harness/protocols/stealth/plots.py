"""Stealth Prompt Testset plots: bias heatmaps, F1 / IER against gray level, readability curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HUES = ("red", "green", "blue", "yellow", "cyan", "magenta")
INTENSITIES = (34, 85, 136)


def bias_heatmap(bias: dict[str, float], title: str, path: Path) -> Path:
    """Hue x intensity grids of B_c, one panel per colored polarity (diverging colors around 0)."""
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), constrained_layout=True)
    limit = max([abs(v) for v in bias.values()] + [0.05])
    for ax, polarity in zip(axes, ("positive", "negative"), strict=True):
        grid = np.full((len(HUES), len(INTENSITIES)), np.nan)
        for i, hue in enumerate(HUES):
            for j, inten in enumerate(INTENSITIES):
                grid[i, j] = bias.get(f"{polarity}-{hue}-{inten}", np.nan)
        im = ax.imshow(grid, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, "n/a" if np.isnan(v) else f"{v:+.2f}", ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(INTENSITIES)), [f"{v}" for v in INTENSITIES])
        ax.set_yticks(range(len(HUES)), HUES)
        ax.set_xlabel("intensity (RGB magnitude)")
        ax.set_title(f"{polarity} words colored")
    fig.colorbar(im, ax=axes, label="sentiment bias vs. all-black baseline")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def gray_curves(series: dict[str, dict[int, dict[str, Any]]], ylabel: str, title: str, path: Path) -> Path:
    """One line per series (condition family or font size) of a figure against the gray level, each point
    a report figure (``value`` and ``interval``), its 95% interval drawn as a band around the line."""
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for name, points in series.items():
        xs = [x for x in sorted(points) if points[x]["value"] is not None]
        (line,) = ax.plot(xs, [points[x]["value"] for x in xs], marker="o", label=name)
        bands = [(x, points[x].get("interval") or {}) for x in xs]
        defined = [(x, i["low"], i["high"]) for x, i in bands if i.get("low") is not None]
        if defined:
            bx, low, high = zip(*defined, strict=True)
            ax.fill_between(bx, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    ax.set_xlabel("gray level of the text (0 black, 255 white)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"{title}\n(bands: 95% CI, bootstrap over units)", fontsize=10)
    ax.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
