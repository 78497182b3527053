"""Per-condition tables, bootstrap 95% CIs and plots for the Stealth tasks (the tasks' report hooks).

Every figure gets a cluster-bootstrap CI that resamples samples (sentences, questions, words) with
all their conditions, so paired comparisons against the baseline stay paired.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.metrics.bootstrap import cluster_ci
from harness.protocols.plot_notes import plot_not_drawn
from harness.protocols.stealth import sentiment_bias as sb
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord

_NO_PARSE = (
    "none of the model's answers gave {what} (each counts as unparsed: see the run's Unparsed column "
    "and the answers in its samples file)"
)


def _items(records: list[SampleRecord], metric: str) -> list[dict[str, Any] | None]:
    key = MetricKey(metric).encoded
    return [r.metrics.get(key) for r in records if r.error is None and key in r.metrics]


def _figure(value: float | None, ci: tuple[float, float] | None, **extra: Any) -> dict[str, Any]:
    return {"value": value, "ci95": list(ci) if ci else None, **extra}


def sentiment_report(records: list[SampleRecord], out_dir: Path | None, metric: str, long_set: bool) -> dict[str, Any]:
    """B_c per condition, max +/- bias, Total Range (and long-set strategy) with bootstrap CIs."""
    matrix = sb.ScoreMatrix.from_items(_items(records, metric))
    n = len(matrix.samples)

    def ci(fn: Any) -> tuple[float, float] | None:
        return cluster_ci(n, lambda idx: fn(matrix.rows(idx)))

    bias = sb.condition_bias(matrix)
    by_condition = {c: _figure(v, ci(lambda m, c=c: sb.condition_bias(m).get(c))) for c, v in bias.items()}
    report: dict[str, Any] = {
        "sentences": n,
        "by_condition": by_condition,
        "max_positive_bias": _figure(
            sb.max_positive_bias(matrix),
            ci(sb.max_positive_bias),
            condition=max(bias, key=bias.__getitem__) if bias else None,
        ),
        "max_negative_bias": _figure(
            sb.max_negative_bias(matrix),
            ci(sb.max_negative_bias),
            condition=min(bias, key=bias.__getitem__) if bias else None,
        ),
        "total_range": _figure(sb.total_range(matrix), ci(sb.total_range)),
    }
    if long_set:
        rates = sb.strategy_rates(matrix)
        report.update(
            strategy=sb.strategy(matrix),
            primacy_rate=_figure(rates[0] if rates else None, ci(lambda m: (sb.strategy_rates(m) or (None,))[0])),
            recency_rate=_figure(rates[1] if rates else None, ci(lambda m: (sb.strategy_rates(m) or (None, None))[1])),
            adherence=_figure(sb.adherence(matrix), ci(sb.adherence)),
            color_bias_range=report.pop("total_range"),
        )
    name = "stealth_long" if long_set else "stealth_short"
    if out_dir is not None and bias:
        from harness.protocols.stealth.plots import bias_heatmap

        report["plot"] = bias_heatmap(bias, f"{name}: sentiment bias by condition", out_dir / f"{name}_bias.png").name
    elif out_dir is not None:
        report.update(plot_not_drawn(f"{name}_bias.png", _NO_PARSE.format(what="a sentiment score")))
    return report


def _grouped_mean_ci(units: list[str], values: list[float], keys: list[Any]) -> dict[Any, dict[str, Any]]:
    """Mean of ``values`` per key with a CI that resamples units (all of a unit's rows together)."""
    unit_ids = sorted(set(units))
    index = {u: k for k, u in enumerate(unit_ids)}
    out = {}
    for key in sorted(set(keys), key=str):
        rows = defaultdict(list)
        for u, v, k in zip(units, values, keys, strict=True):
            if k == key:
                rows[index[u]].append(v)
        per_unit = [rows.get(i, []) for i in range(len(unit_ids))]

        def mean_of(idx: np.ndarray, per_unit: list[list[float]] = per_unit) -> float | None:
            picked = [v for i in idx for v in per_unit[i]]
            return float(np.mean(picked)) if picked else None

        value = mean_of(np.arange(len(unit_ids)))
        out[key] = _figure(value, cluster_ci(len(unit_ids), mean_of), n=sum(len(r) for r in per_unit))
    return out


def vqa_report(records: list[SampleRecord], out_dir: Path | None) -> dict[str, Any]:
    """SQuAD F1 per condition and IER per gray level under Decoy Salient, with CIs, and their plot."""
    f1 = [i for i in _items(records, "f1") if i is not None]
    ier = [i for i in _items(records, "ier") if i is not None]
    report: dict[str, Any] = {
        "f1_by_condition": _grouped_mean_ci(
            [i["sample_id"] for i in f1], [i["f1"] for i in f1], [i["condition"] for i in f1]
        ),
        "ier_by_gray_level": _grouped_mean_ci(
            [i["sample_id"] for i in ier], [float(i["hit"]) for i in ier], [i["gray_level"] for i in ier]
        ),
    }
    if out_dir is not None and f1:
        from harness.protocols.stealth.plots import gray_curves

        series: dict[str, dict[int, float]] = defaultdict(dict)
        for cond, fig in report["f1_by_condition"].items():
            family, gray = cond.rsplit("-", 1)
            series[f"F1, {family}"][int(gray)] = fig["value"]
        for gray, fig in report["ier_by_gray_level"].items():
            series["IER, decoy salient"][int(gray)] = fig["value"]
        report["plot"] = gray_curves(
            dict(series), "F1 / IER", "stealth_vqa: contrast and saliency", out_dir / "stealth_vqa_f1_ier.png"
        ).name
    elif out_dir is not None:
        report.update(plot_not_drawn("stealth_vqa_f1_ier.png", _NO_PARSE.format(what="an F1 score")))
    return report


def ocr_report(records: list[SampleRecord], out_dir: Path | None) -> dict[str, Any]:
    """Readability (mean read score) per font size and gray level, with CIs over words."""
    items = [i for i in _items(records, "readability") if i is not None]
    table = _grouped_mean_ci(
        [i["word"] for i in items],
        [i["score"] for i in items],
        [f"{i['font_size']}px-{i['gray_level']}" for i in items],
    )
    report: dict[str, Any] = {"readability": table}
    if out_dir is not None and items:
        from harness.protocols.stealth.plots import gray_curves

        series: dict[str, dict[int, float]] = defaultdict(dict)
        for key, fig in table.items():
            size, gray = key.split("-")
            series[size][int(gray)] = fig["value"]
        report["plot"] = gray_curves(
            dict(series), "read score", "OCR proxy probe: readability", out_dir / "stealth_ocr_readability.png"
        ).name
    elif out_dir is not None:
        report.update(plot_not_drawn("stealth_ocr_readability.png", _NO_PARSE.format(what="a read score")))
    return report
