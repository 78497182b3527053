"""The MIST task report: every figure with its 95% interval (a percentile cluster bootstrap over items, the
protocol's unit: an item with all its techniques and arms, clipped to [0, 1]), the alt-test per human panel and
prompting technique, the panels' own agreement and the paper's panel statistics, and the plots.

The alt-test compares each annotator's label on an item with the judge's label under the condition that
annotator saw the item in (no image, aligned or misleading), at the paper's slack per panel tier
(epsilon = 0.20 informed, 0.15 blind; the task's ``metadata.alt_test_epsilon`` can change it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.metrics.alttest import matched_alt_test
from harness.metrics.bootstrap import cluster_intervals
from harness.protocols.mist import metrics as mist
from harness.protocols.mist import panel_stats
from harness.protocols.mist.rows import UNIT, MistJudgeDoc
from harness.protocols.plot_notes import plot_not_drawn
from harness.results.metric_key import MetricKey

Labels = dict[mist.Cell, int | None]
PAPER_EPSILON = {"informed": 0.20, "blind": 0.15}  # the slack the paper prescribes per panel tier


def labels_from_items(items: list[Any]) -> tuple[Labels, dict[str, str], dict[str, int | None]]:
    """Judge labels per cell, item senses and human majorities from the per-answer items."""
    labels: Labels = {}
    senses: dict[str, str] = {}
    majority: dict[str, int | None] = {}
    for item in items:
        if item is None:
            continue
        labels[(item["item"], item["technique"], item["arm"])] = item["label"]
        senses[item["item"]] = item["sense"]
        majority[item["item"]] = item.get("majority")
    return labels, senses, majority


def _resampled(
    labels: Labels, senses: dict[str, str], majority: dict[str, int | None], units: list[str], idx: np.ndarray
) -> tuple[Labels, dict[str, str], dict[str, int | None]]:
    """The data of a bootstrap resample of items (a repeated item becomes a distinct copy)."""
    by_item: dict[str, list[tuple[mist.Cell, int | None]]] = {}
    for cell, label in labels.items():
        by_item.setdefault(cell[0], []).append((cell, label))
    out: Labels = {}
    s: dict[str, str] = {}
    m: dict[str, int | None] = {}
    for copy, k in enumerate(idx):
        item = units[k]
        name = f"{item}#{copy}"
        for (_, technique, arm), label in by_item.get(item, []):
            out[(name, technique, arm)] = label
        s[name], m[name] = senses[item], majority.get(item)
    return out, s, m


def _figures(
    labels: Labels, senses: dict[str, str], majority: dict[str, int | None]
) -> dict[str, Callable[..., float | None]]:
    return {
        "change_rate_aligned": lambda lb, s, m: mist.change_rate(lb, "aligned"),
        "change_rate_misleading": lambda lb, s, m: mist.change_rate(lb, "misleading"),
        "control_rate_aligned": lambda lb, s, m: mist.control_rate(lb, "aligned"),
        "control_rate_misleading": lambda lb, s, m: mist.control_rate(lb, "misleading"),
        "disagreement_rate": lambda lb, s, m: mist.direction_counts(lb, s).disagreement_rate,
        "direction": lambda lb, s, m: mist.direction(lb, s),
        "same_side_fraction": lambda lb, s, m: mist.same_side_fraction(lb, s),
        "image_following_aligned": lambda lb, s, m: mist.image_following_ratio(lb, s, "aligned"),
        "image_following_misleading": lambda lb, s, m: mist.image_following_ratio(lb, s, "misleading"),
        "agreement_none": lambda lb, s, m: mist.agreement(lb, m, "none"),
        "agreement_aligned": lambda lb, s, m: mist.agreement(lb, m, "aligned"),
        "agreement_misleading": lambda lb, s, m: mist.agreement(lb, m, "misleading"),
    }


@dataclass(frozen=True)
class Panel:
    """One human panel: annotator -> {item -> label}, and the condition each annotator saw each item in."""

    labels: dict[str, dict[str, int]]
    seen: dict[str, dict[str, str]]


def panels_from_records(records: list[Any]) -> dict[str, Panel]:
    """The human panels stored on the docs (every doc of an item carries the same human labels)."""
    panels: dict[str, Panel] = {}
    for record in records:
        for h in MistJudgeDoc.read(record.doc, "human_labels", None) or []:
            item = MistJudgeDoc.read(record.doc, "item_id")
            panel = panels.setdefault(h["panel"], Panel({}, {}))
            panel.labels.setdefault(h["annotator"], {})[item] = h["label"]
            panel.seen.setdefault(h["annotator"], {})[item] = h["condition"]
    return panels


def judge_as_seen(
    labels: Labels, panel: Panel, technique: str, arm: mist.InstructionArm = mist.PAPER_ARM
) -> dict[str, dict[str, int]]:
    """Annotator -> {item -> the judge's label under the condition that annotator saw the item in}: no
    image, or the same image with the ``arm`` prompt (``ignore`` by default: the human guidelines also
    tell annotators to disregard the image). Unparsed judge labels leave the item out for that annotator."""
    out: dict[str, dict[str, int]] = {}
    for annotator, seen in panel.seen.items():
        picked = {
            item: labels.get((item, technique, "none" if c == "none" else f"{c}-{arm}")) for item, c in seen.items()
        }
        out[annotator] = {item: label for item, label in picked.items() if label is not None}
    return out


def panel_statistics(panels: dict[str, Panel]) -> dict[str, Any]:
    """The paper's panel comparisons: kappa(informed) - kappa(blind) with its CI, and each trio's
    aligned-vs-misleading Welch test (``harness.protocols.mist.panel_stats``)."""
    difference = None
    if "informed" in panels and "blind" in panels:
        found = panel_stats.kappa_difference(panels["informed"].labels, panels["blind"].labels)
        difference = {**asdict(found), "interval": found.interval.model_dump()}
    return {
        "kappa_difference_informed_minus_blind": difference,
        "condition_contrast": {
            name: asdict(panel_stats.condition_contrast(p.labels, p.seen)) for name, p in sorted(panels.items())
        },
    }


def mist_report(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """The MIST judge report of one run: every figure with its item-bootstrap 95% CI, the direction cells,
    the alt-test per human panel and technique, the panels' agreement and statistics, and (given
    ``out_dir``) the plot."""
    items = [r.metrics.get(MetricKey("change_rate_aligned").encoded) for r in records if r.error is None]
    labels, senses, majority = labels_from_items(items)
    units = sorted(senses)
    figures = _figures_with_intervals(labels, senses, majority, units)
    panels = panels_from_records(records)
    alt = _alt_tests(labels, panels, metadata)
    counts = mist.direction_counts(labels, senses)
    report: dict[str, Any] = {
        "items": len(units),
        "figures": figures,
        "direction_cells": asdict(counts),
        "alt_test": alt,
        "human_agreement": {name: mist.panel_agreement(panel.labels) for name, panel in sorted(panels.items())},
        "panel_statistics": panel_statistics(panels),
    }
    if out_dir is not None:
        report.update(_plot(figures, bool(labels), out_dir))
    return report


def _figures_with_intervals(
    labels: Labels, senses: dict[str, str], majority: dict[str, int | None], units: list[str]
) -> dict[str, dict[str, Any]]:
    """Every figure's value with its cluster-bootstrap 95% interval over items, clipped to [0, 1]."""
    fns = _figures(labels, senses, majority)

    def resampled(idx: np.ndarray) -> dict[str, float | None]:
        data = _resampled(labels, senses, majority, units, idx)  # built once, read by every figure
        return {name: fn(*data) for name, fn in fns.items()}

    intervals = cluster_intervals(len(units), resampled, UNIT.name)
    return {
        name: {"value": fn(labels, senses, majority), "interval": intervals[name].clipped(0.0, 1.0).model_dump()}
        for name, fn in fns.items()
    }


def _alt_tests(labels: Labels, panels: dict[str, Panel], metadata: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Panel -> technique -> the alt-test of the judge against that panel's annotators (the paper's arm)."""
    epsilons = metadata.get("alt_test_epsilon", PAPER_EPSILON)
    alt: dict[str, dict[str, Any]] = {}
    for name, panel in sorted(panels.items()):
        for technique in sorted({cell[1] for cell in labels}):
            result = matched_alt_test(
                judge_as_seen(labels, panel, technique),
                panel.labels,
                "accuracy",
                epsilon=float(epsilons.get(name, 0.2)),
                q_fdr=float(metadata.get("alt_test_q_fdr", 0.05)),
                min_instances_per_human=int(metadata.get("alt_test_min_instances_per_human", 30)),
            )
            alt.setdefault(name, {})[technique] = {"arm": mist.PAPER_ARM, **result.as_dict()}
    return alt


def _plot(figures: dict[str, dict[str, Any]], any_label: bool, out_dir: Path) -> dict[str, Any]:
    """The report's ``plot`` entry: the judge-stability figure, or why it was not drawn (no readable label)."""
    if not any_label:
        return plot_not_drawn(
            "mist_judge.png",
            "none of the model's answers could be read as a literal or "
            "idiomatic label (each counts as unparsed: see the run's Unparsed column and "
            "the answers in its samples file)",
        )
    from harness.protocols.mist.plots import mist_figures

    change = {
        k: figures[k]
        for k in (
            "change_rate_aligned",
            "change_rate_misleading",
            "control_rate_aligned",
            "control_rate_misleading",
        )
    }
    shares = {
        k: figures[k]
        for k in ("direction", "same_side_fraction", "image_following_aligned", "image_following_misleading")
    }
    return {"plot": mist_figures(change, shares, "MIST: judge stability", out_dir / "mist_judge.png").name}
