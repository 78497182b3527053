"""Leaderboard plots: one submission's task metrics with their 95% confidence intervals.

Drawn on a bare ``Figure`` (no pyplot state), so concurrent requests of the server can draw safely.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure


def metrics_with_ci(rows: list[tuple[str, float, float | None, float | None]], title: str) -> bytes:
    """A PNG of horizontal bars (label, value, CI low, CI high); a row without a CI has no whisker."""
    fig = Figure(figsize=(7, 0.45 * max(len(rows), 2) + 1.3), layout="constrained")
    ax = fig.add_subplot()
    labels = [r[0] for r in rows]
    values = [r[1] for r in rows]
    lower = [r[1] - r[2] if r[2] is not None else 0.0 for r in rows]
    upper = [r[3] - r[1] if r[3] is not None else 0.0 for r in rows]
    positions = list(range(len(rows)))
    ax.barh(positions, values, xerr=[lower, upper], color="#4c72b0", ecolor="#222222", capsize=4)
    ax.plot(values, positions, "o", color="#1b3a6b", markersize=4)  # keeps a value of 0 visible
    ax.set_yticks(positions, labels, fontsize=8)
    ax.invert_yaxis()
    ends = [v - lo for v, lo in zip(values, lower, strict=True)] + [v + hi for v, hi in zip(values, upper, strict=True)]
    ax.set_xlim(min(0.0, *ends), max(1.0, *ends) * 1.02)  # rates keep their 0..1 scale
    ax.set_xlabel("value (whiskers: 95% CI, value ± 1.96 stderr)")
    ax.set_title(title[:90], fontsize=10)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
