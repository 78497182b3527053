"""Per-condition tables, bootstrap 95% intervals and plots for the Stealth tasks (the tasks' report hooks).

Every figure gets a percentile cluster-bootstrap interval (``interval``, an ``Interval`` as JSON) that
resamples samples (sentences, questions, words: the protocol's unit, ``rows.UNIT``) with all their
conditions, so paired comparisons against the baseline stay paired; each is clipped to its figure's range.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.metrics.bootstrap import cluster_interval
from harness.protocols.plot_notes import plot_not_drawn
from harness.protocols.stealth import sentiment_bias as sb
from harness.protocols.stealth.rows import UNIT
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord

QUESTION = "question"  # the VQA set's sentence is a question: its unit, named so in its intervals
_NO_PARSE = (
    "none of the model's answers gave {what} (each counts as unparsed: see the run's Unparsed column "
    "and the answers in its samples file)"
)


def _items(records: list[SampleRecord], metric: str) -> list[dict[str, Any] | None]:
    key = MetricKey(metric).encoded
    return [r.metrics.get(key) for r in records if r.error is None and key in r.metrics]


#: The range each kind of figure lies in (intervals are clipped to it): a bias B_c in [-2, 2], a range of
#: biases in [0, 4], a rate, an F1 or a read score in [0, 1].
BIAS, RANGE, SHARE = (-2.0, 2.0), (0.0, 4.0), (0.0, 1.0)


def _figure(value: float | None, interval: Interval, bounds: tuple[float, float], **extra: Any) -> dict[str, Any]:
    return {"value": value, "interval": interval.clipped(*bounds).model_dump(), **extra}


def sentiment_report(records: list[SampleRecord], out_dir: Path | None, metric: str, long_set: bool) -> dict[str, Any]:
    """B_c per condition, max +/- bias, Total Range (and long-set strategy) with bootstrap CIs."""
    matrix = sb.ScoreMatrix.from_items(_items(records, metric))
    n = len(matrix.samples)

    def ci(fn: Any) -> Interval:
        return cluster_interval(n, lambda idx: fn(matrix.rows(idx)), UNIT.name)

    bias = sb.condition_bias(matrix)
    by_condition = {c: _figure(v, ci(lambda m, c=c: sb.condition_bias(m).get(c)), BIAS) for c, v in bias.items()}
    report: dict[str, Any] = {
        "sentences": n,
        "by_condition": by_condition,
        "max_positive_bias": _figure(
            sb.max_positive_bias(matrix),
            ci(sb.max_positive_bias),
            BIAS,
            condition=max(bias, key=bias.__getitem__) if bias else None,
        ),
        "max_negative_bias": _figure(
            sb.max_negative_bias(matrix),
            ci(sb.max_negative_bias),
            BIAS,
            condition=min(bias, key=bias.__getitem__) if bias else None,
        ),
        "total_range": _figure(sb.total_range(matrix), ci(sb.total_range), RANGE),
    }
    if long_set:
        rates = sb.strategy_rates(matrix)
        report.update(
            strategy=sb.strategy(matrix),
            primacy_rate=_figure(
                rates[0] if rates else None, ci(lambda m: (sb.strategy_rates(m) or (None,))[0]), SHARE
            ),
            recency_rate=_figure(
                rates[1] if rates else None, ci(lambda m: (sb.strategy_rates(m) or (None, None))[1]), SHARE
            ),
            adherence=_figure(sb.adherence(matrix), ci(sb.adherence), SHARE),
            color_bias_range=report.pop("total_range"),
        )
    name = "stealth_long" if long_set else "stealth_short"
    if out_dir is not None and bias:
        from harness.protocols.stealth.plots import bias_heatmap

        report["plot"] = bias_heatmap(bias, f"{name}: sentiment bias by condition", out_dir / f"{name}_bias.png").name
    elif out_dir is not None:
        report.update(plot_not_drawn(f"{name}_bias.png", _NO_PARSE.format(what="a sentiment score")))
    return report


def grouped_mean(units: list[str], values: list[float], keys: list[Any], unit: str) -> dict[Any, dict[str, Any]]:
    """Mean of ``values`` (each in [0, 1]) per key with an interval that resamples units (all of a unit's
    rows together; ``unit`` names them: question, word)."""
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
        interval = cluster_interval(len(unit_ids), mean_of, unit)
        out[key] = _figure(value, interval, SHARE, n=sum(len(r) for r in per_unit))
    return out


def induced_error_rate(items: list[dict[str, Any]]) -> dict[str, Any]:
    """IER = (1/N) sum_i 1[d_i in a_i] over every Decoy Salient answer (all gray levels), with its interval
    over questions (a question's answers at every gray level resampled together)."""
    if not items:
        return _figure(None, Interval.missing("no Decoy Salient answer", 0, QUESTION), SHARE, n=0)
    units, hits = [str(i["sample_id"]) for i in items], [float(i["hit"]) for i in items]
    return grouped_mean(units, hits, ["all"] * len(items), QUESTION)["all"]


def vqa_report(records: list[SampleRecord], out_dir: Path | None) -> dict[str, Any]:
    """SQuAD F1 per condition, IER per gray level and over all gray levels under Decoy Salient, with
    intervals over questions, and their plot."""
    f1 = [i for i in _items(records, "f1") if i is not None]
    ier = [i for i in _items(records, "ier") if i is not None]
    report: dict[str, Any] = {
        "f1_by_condition": grouped_mean(
            [i["sample_id"] for i in f1], [i["f1"] for i in f1], [i["condition"] for i in f1], QUESTION
        ),
        "ier_by_gray_level": grouped_mean(
            [i["sample_id"] for i in ier], [float(i["hit"]) for i in ier], [i["gray_level"] for i in ier], QUESTION
        ),
        "ier": induced_error_rate(ier),
    }
    if out_dir is not None and f1:
        from harness.protocols.stealth.plots import gray_curves

        series: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        for cond, fig in report["f1_by_condition"].items():
            family, gray = cond.rsplit("-", 1)
            series[f"F1, {family}"][int(gray)] = fig
        for gray, fig in report["ier_by_gray_level"].items():
            series["IER, decoy salient"][int(gray)] = fig
        report["plot"] = gray_curves(
            dict(series), "F1 / IER", "stealth_vqa: contrast and saliency", out_dir / "stealth_vqa_f1_ier.png"
        ).name
    elif out_dir is not None:
        report.update(plot_not_drawn("stealth_vqa_f1_ier.png", _NO_PARSE.format(what="an F1 score")))
    return report


def ocr_report(records: list[SampleRecord], out_dir: Path | None) -> dict[str, Any]:
    """Readability (mean read score) per font size and gray level, with CIs over words."""
    items = [i for i in _items(records, "readability") if i is not None]
    table = grouped_mean(
        [i["word"] for i in items],
        [i["score"] for i in items],
        [f"{i['font_size']}px-{i['gray_level']}" for i in items],
        "word",
    )
    report: dict[str, Any] = {"readability": table}
    if out_dir is not None and items:
        from harness.protocols.stealth.plots import gray_curves

        series: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        for key, fig in table.items():
            size, gray = key.split("-")
            series[size][int(gray)] = fig
        report["plot"] = gray_curves(
            dict(series), "read score", "OCR proxy probe: readability", out_dir / "stealth_ocr_readability.png"
        ).name
    elif out_dir is not None:
        report.update(plot_not_drawn("stealth_ocr_readability.png", _NO_PARSE.format(what="a read score")))
    return report
