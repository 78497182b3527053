"""Glue for the shapes tasks: prompt building and answer parsing (aggregation math lives in harness)."""

from __future__ import annotations

import re
from typing import Any

from harness.metrics.aggregation import mean

COLORS = ("red", "green", "blue", "yellow")
KINDS = ("circle", "square", "triangle")


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [doc["image"].convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('question', '')}{kwargs.get('post_prompt', '')}"


def parse_answer(response: str, vocabulary: tuple[str, ...]) -> str | None:
    """The first vocabulary word in the response, or None when there is none (unparsed)."""
    words = re.findall(r"[a-z]+", response.lower())
    return next((w for w in words if w in vocabulary), None)


def score(response: str, target: str, vocabulary: tuple[str, ...]) -> dict[str, float | None]:
    """exact_match: the trimmed response is the answer; answer_accuracy: the parsed answer word is
    (None when the response names no answer word: counted as unparsed, not scored as wrong)."""
    parsed = parse_answer(response, vocabulary)
    return {
        "exact_match": float(response.strip().lower().rstrip(".") == target),
        "answer_accuracy": None if parsed is None else float(parsed == target),
    }


def process_color(doc: dict[str, Any], results: list[str]) -> dict[str, float | None]:
    return score(results[0], doc["color"], COLORS)


def process_kind(doc: dict[str, Any], results: list[str]) -> dict[str, float | None]:
    return score(results[0], doc["kind"], KINDS)


def parsed_mean(values: list[float | None]) -> float | None:
    """Mean over parsed answers only (lmms-eval passes every per-sample value, None included)."""
    return mean(values)
