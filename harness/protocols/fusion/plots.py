"""FusionAudit plots: per-attack ASR with R0 and R+ per model, and RUG and OAR by fusion level."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from harness.metrics.bootstrap import as_pair
from harness.results.interval import Interval

BARS = [
    ("asr_vis_pgd", "Vis-PGD"),
    ("asr_end_pgd", "End-PGD"),
    ("asr_typo_evid", "Typo-Evid"),
    ("asr_mantis", "MANTIS"),
    ("asr_nat_evid", "Nat-Evid"),
    ("r0", "R0"),
    ("r_plus", "R+"),
]


def _errors(values: list[float], intervals: Sequence[Interval | None]) -> np.ndarray:
    """Error bars from each value's interval (none where it has no interval)."""
    cis = [None if i is None else as_pair(i) for i in intervals]
    low = [v - ci[0] if ci else 0.0 for v, ci in zip(values, cis, strict=True)]
    high = [ci[1] - v if ci else 0.0 for v, ci in zip(values, cis, strict=True)]
    errors: np.ndarray = np.clip(np.array([low, high]), 0, None)
    return errors


def _mark_missing(ax: Any, xs: Any, raw: list[Any]) -> None:
    for x, v in zip(xs, raw, strict=True):
        if v is None:
            ax.text(x, 0.01, "n/a", ha="center", va="bottom", fontsize=7, rotation=90, color="gray")


def asr_bars(models: dict[str, dict[str, Any]], path: Path) -> Path:
    """Grouped bars per model: each attack's ASR, R0 and R+ as shares of C with their 95% CIs (n/a where
    an attack was not run), saved to ``path``."""
    names = list(models)
    fig, ax = plt.subplots(figsize=(max(8, 2.2 * len(names) + 3), 4.4), constrained_layout=True)
    width = 0.8 / len(BARS)
    for k, (key, label) in enumerate(BARS):
        raw = [models[m]["figures"][key] for m in names]
        values = [v or 0.0 for v in raw]
        cis = [models[m]["intervals"].get(key) for m in names]
        xs = np.arange(len(names)) + (k - (len(BARS) - 1) / 2) * width
        ax.bar(
            xs,
            values,
            width,
            label=label,
            yerr=_errors(values, cis),
            capsize=2,
            hatch="//" if key in {"r0", "r_plus"} else None,
        )
        _mark_missing(ax, xs, raw)
    ax.set_xticks(
        range(len(names)),
        [f"{n.split(':')[-1][-28:]}\n|C|={int(models[n]['figures']['n_clean_correct'])}" for n in names],
        fontsize=8,
    )
    ax.set_ylabel("share of the clean-correct set C")
    ax.set_ylim(0, 1.05)
    # below the axes, inside the figure (constrained layout makes room for it); 8 inches hold its one row
    fig.legend(loc="outside lower center", ncol=len(BARS), fontsize=8, frameon=False)
    ax.set_title(
        "FusionAudit: per-attack ASR, baseline risk R0 and pathway-complete risk R+\n"
        "(95% CI, paired bootstrap over clean-correct items)",
        fontsize=10,
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rug_oar_by_level(levels: dict[str, dict[str, Any]], path: Path) -> Path:
    """Two panels by fusion level: the macro-average RUG of Typo-Evid and Nat-Evid, and the Typo-Evid OAR
    against OAR = 1, with 95% CIs, saved to ``path``."""
    names = list(levels)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for k, (key, label) in enumerate((("rug_typo", "Typo-Evid"), ("rug_natevid", "Nat-Evid"))):
        raw = [levels[n]["macro"][key] for n in names]
        values = [v or 0.0 for v in raw]
        cis = [levels[n]["intervals"].get(key) for n in names]
        xs = np.arange(len(names)) + (k - 0.5) * 0.38
        left.bar(xs, values, 0.38, label=label, yerr=_errors(values, cis), capsize=3)
        _mark_missing(left, xs, raw)
    left.axhline(0, color="black", linewidth=0.8)
    left.set_xticks(range(len(names)), [f"{n}\n({len(levels[n]['models'])} model(s))" for n in names])
    left.set_ylabel("RUG = P_read - P_use")
    left.set_title("Read-use gap by fusion level (macro average, 95% CI)")
    left.legend(fontsize=8)
    raw = [levels[n]["macro"]["oar"] for n in names]
    values = [v or 0.0 for v in raw]
    right.bar(
        range(len(names)),
        values,
        0.5,
        yerr=_errors(values, [levels[n]["intervals"].get("oar") for n in names]),
        capsize=3,
        color="tab:purple",
    )
    _mark_missing(right, np.arange(len(names)), raw)
    right.axhline(1, color="crimson", linestyle="--", label="OAR = 1 (attention proportional to area)")
    right.set_xticks(range(len(names)), names)
    right.set_ylabel("overlay attention ratio")
    right.set_title("OAR of the Typo-Evid region by fusion level")
    right.legend(fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep_plot(rows: dict[str, dict[str, dict[str, float | None]]], xlabel: str, path: Path) -> Path:
    """One panel per attack: each fusion level's macro ASR over the swept values (``rows[attack][x][level]``),
    saved to ``path``."""
    attacks = list(rows)
    fig, axes = plt.subplots(1, len(attacks), figsize=(3.6 * len(attacks), 3.2), constrained_layout=True, squeeze=False)
    for ax, attack in zip(axes[0], attacks, strict=True):
        xs = list(rows[attack])
        levels = sorted({lv for row in rows[attack].values() for lv in row})
        for level in levels:
            ys = [rows[attack][x].get(level) for x in xs]
            ax.plot(xs, [np.nan if y is None else y for y in ys], marker="o", label=level)
        ax.set_title(attack)
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1)
    axes[0][0].set_ylabel("ASR (macro over models)")
    axes[0][-1].legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
