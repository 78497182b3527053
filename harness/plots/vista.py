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
