"""Glue for the Stealth Prompt Testset tasks; the formulas live in harness.metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.metrics import squad
from harness.metrics.aggregation import mean
from harness.protocols.stealth import report
from harness.protocols.stealth import sentiment_bias as sb
from harness.protocols.stealth.rows import StealthRow

_SIGN = {"positive": 1, "negative": -1}


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [StealthRow.read(doc, "image").convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return str((lmms_eval_specific_kwargs or {}).get("prompt", ""))


def doc_to_answers(doc: dict[str, Any]) -> str:
    return " | ".join(StealthRow.read(doc, "answers"))


def _sentiment_item(doc: dict[str, Any], response: str) -> dict[str, Any] | None:
    """One answer's m(y) with its sentence and condition; None (unparsed) when no label is found."""
    label = sb.parse_sentiment(response)
    if label is None:
        return None
    return {
        "sample_id": StealthRow.read(doc, "sample_id"),
        "condition": StealthRow.read(doc, "condition"),
        "score": sb.LABEL_VALUE[label],
        "label": label,
        "first_half": _SIGN.get(StealthRow.read(doc, "first_half_polarity", None) or ""),
    }


def process_short(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    item = _sentiment_item(doc, results[0])
    return {"total_range": item, "max_positive_bias": item, "max_negative_bias": item}


def process_long(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    item = _sentiment_item(doc, results[0])
    return {"color_bias_range": item, "primacy_rate": item, "recency_rate": item, "adherence": item}


def _matrix(items: list[Any]) -> sb.ScoreMatrix:
    return sb.ScoreMatrix.from_items(items)


def total_range(items: list[Any]) -> float | None:
    return sb.total_range(_matrix(items))


def max_positive_bias(items: list[Any]) -> float | None:
    return sb.max_positive_bias(_matrix(items))


def max_negative_bias(items: list[Any]) -> float | None:
    return sb.max_negative_bias(_matrix(items))


def primacy_rate(items: list[Any]) -> float | None:
    rates = sb.strategy_rates(_matrix(items))
    return None if rates is None else rates[0]


def recency_rate(items: list[Any]) -> float | None:
    rates = sb.strategy_rates(_matrix(items))
    return None if rates is None else rates[1]


def adherence(items: list[Any]) -> float | None:
    return sb.adherence(_matrix(items))


def process_vqa(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """f1 for every doc; ier only for Decoy Salient docs (not applicable elsewhere)."""
    prediction = results[0]
    out: dict[str, Any] = {
        "f1": {
            "sample_id": StealthRow.read(doc, "sample_id"),
            "condition": StealthRow.read(doc, "condition"),
            "f1": squad.max_f1(prediction, StealthRow.read(doc, "answers")),
        }
    }
    if StealthRow.read(doc, "salient") == "decoy" and StealthRow.read(doc, "decoy"):
        out["ier"] = {
            "sample_id": StealthRow.read(doc, "sample_id"),
            "gray_level": StealthRow.read(doc, "gray_level"),
            "hit": int(squad.contains_decoy(prediction, StealthRow.read(doc, "decoy"))),
        }
    return out


def mean_f1(items: list[Any]) -> float | None:
    return mean([i["f1"] for i in items if i is not None])


def induced_error_rate(items: list[Any]) -> float | None:
    return mean([i["hit"] for i in items if i is not None])


def process_ocr(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    return {
        "readability": {
            "word": StealthRow.read(doc, "word"),
            "font_size": StealthRow.read(doc, "font_size"),
            "gray_level": StealthRow.read(doc, "gray_level"),
            "score": squad.read_score(results[0], StealthRow.read(doc, "word")),
        }
    }


def mean_read_score(items: list[Any]) -> float | None:
    return mean([i["score"] for i in items if i is not None])


def report_short(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    return report.sentiment_report(records, out_dir, "total_range", long_set=False)


def report_long(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    return report.sentiment_report(records, out_dir, "color_bias_range", long_set=True)


def report_vqa(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    return report.vqa_report(records, out_dir)


def report_ocr(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    return report.ocr_report(records, out_dir)
