"""DiaVLo plots: class shares per model and source, similarity vs performance, concept effects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from harness.protocols.diavlo.metrics import CLASSES
from harness.protocols.plot_notes import plot_not_drawn

#: Why each plot may have nothing to show (a random-weight model's third turn holds no triplet, so no pair
#: has a similarity or a class); the plot is then not drawn, and the report says so.
NO_CLASSES = "no pair has a class (every pair's RK triplets are empty or unusable)"
NO_POINTS = "no pair has both a similarity and a performance (RK triplets empty or unusable)"
NO_EFFECTS = "no concept effect was estimated (no pair with concepts to occlude, or too few rows)"

COLORS = {"Aligned": "#2ca02c", "Expanded": "#1f77b4", "Divergent": "#d62728", "Unnamed": "#999999"}


def _short(name: str) -> str:
    return name.split(":")[-1].split("/")[-1][-22:]


def class_shares_plot(shares: dict[tuple[str, str], dict[str, Any]], path: Path) -> Path | None:
    """Stacked bars: one bar per (model, source), the share of each class among classified pairs; a segment
    tall enough is labelled with its share and 95% interval (``shares[key]["intervals"]``). None (and one
    warning) when no pair has a class."""
    if not any(s["n"] for s in shares.values()):
        plot_not_drawn(path.name, NO_CLASSES)
        return None
    keys = list(shares)
    fig, ax = plt.subplots(figsize=(max(5, 1.7 * len(keys) + 2), 4), constrained_layout=True)
    bottom = [0.0] * len(keys)
    for cls in CLASSES:
        values = [shares[k].get(cls) or 0.0 for k in keys]
        ax.bar(range(len(keys)), values, bottom=bottom, color=COLORS[cls], label=cls)
        for x, key in enumerate(keys):
            interval = (shares[key].get("intervals") or {}).get(cls) or {}
            if values[x] >= 0.12 and interval.get("low") is not None:
                text = f"{values[x]:.2f}\n[{interval['low']:.2f}, {interval['high']:.2f}]"
                ax.text(x, bottom[x] + values[x] / 2, text, ha="center", va="center", fontsize=6)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    for k, key in enumerate(keys):
        if not shares[key]["n"]:
            ax.text(k, 0.5, "no classified pair\n(RK empty or unusable)", ha="center", fontsize=7, color="gray")
    ax.set_xticks(
        range(len(keys)),
        [f"{_short(m)}\n{s.removeprefix('diavlo_')}\n(n={shares[(m, s)]['n']})" for m, s in keys],
        fontsize=8,
    )
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("share of classified pairs")
    ax.set_title("DiaVLo behaviour classes (SK vs RK; 95% CI, bootstrap over questions)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def similarity_performance_plot(rows: dict[str, list[dict[str, Any]]], path: Path) -> Path | None:
    """Similarity (x) against performance (y), one colour per model; class thresholds as guides. None (and one
    warning) when no pair has both."""
    points = {
        model: [
            (r["similarity"], r["performance"])
            for r in model_rows
            if r["similarity"] is not None and r["performance"] is not None
        ]
        for model, model_rows in rows.items()
    }
    if not any(points.values()):
        plot_not_drawn(path.name, NO_POINTS)
        return None
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for model, pts in points.items():
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, alpha=0.6, s=22, label=f"{_short(model)} (n={len(pts)})")
    for x, name in ((0.35, "tau_d = tau_e"), (0.75, "tau_a")):
        ax.axvline(x, color="gray", linestyle=":", linewidth=1)
        ax.text(x, 1.04, name, fontsize=7, ha="center")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.1)
    ax.set_xlabel("SK-RK similarity (mean cosine of best-matched triplets)")
    ax.set_ylabel("performance")
    ax.set_title("DiaVLo: similarity vs performance", pad=14)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def concept_effects_plot(effects: dict[str, list[dict[str, Any]]], outcome: str, path: Path) -> Path | None:
    """Per model, each concept's DML effect with its 95% CI (hollow: inconclusive) and its placebo; None (and
    one warning) when no effect was estimated."""
    if not any(r["estimate"] is not None for rows in effects.values() for r in rows):
        plot_not_drawn(path.name, NO_EFFECTS)
        return None
    fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(effects) + 2), 4), constrained_layout=True)
    for m, rows in enumerate(effects.values()):
        rows = [r for r in rows if r["estimate"] is not None]
        for k, row in enumerate(rows):
            x = m + (k - (len(rows) - 1) / 2) * min(0.25, 0.8 / max(len(rows), 1))
            est = row["estimate"]
            face = "white" if row["inconclusive"] else "#1f77b4"
            ax.errorbar(
                x,
                est["effect"],
                yerr=[[est["effect"] - est["ci95"][0]], [est["ci95"][1] - est["effect"]]],
                fmt="o",
                color="#1f77b4",
                markerfacecolor=face,
                capsize=2,
                markersize=5,
            )
            ax.plot(x, row["placebo"]["effect"], "x", color="#d62728", markersize=4)
            ax.annotate(
                row["concept"][:14],
                (x, est["ci95"][1]),
                textcoords="offset points",
                xytext=(0, 3),
                ha="center",
                fontsize=7,
            )
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set_xlim(-0.6, len(effects) - 0.4)
    ax.set_xticks(range(len(effects)), [_short(m) for m in effects], fontsize=8)
    ax.set_ylabel(f"effect of occluding a concept on {outcome.replace('_', ' ')}")
    ax.set_title("DiaVLo concept effects (DML)\no: estimate with 95% CI (hollow: inconclusive); x: placebo", fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
