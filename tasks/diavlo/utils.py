"""Glue for the DiaVLo tasks: the turn-1 prompt per answer type; scoring lives in harness.metrics."""

from __future__ import annotations

from typing import Any

from harness.metrics.answer_scoring import LETTERS
from harness.protocols.diavlo.report import report, score_pair
from harness.protocols.diavlo.rows import DiavloRow

__all__ = ["doc_to_text", "doc_to_visual", "process_results", "report"]


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [DiavloRow.read(doc, "image").convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    kind, question = DiavloRow.read(doc, "answer_type"), DiavloRow.read(doc, "question")
    if kind == "multiple_choice":
        options = "\n".join(f"{LETTERS[k]}. {opt}" for k, opt in enumerate(DiavloRow.read(doc, "options")))
        return f"{question}\n{options}\n{kwargs.get('multiple_choice_prompt', '')}".strip()
    prompt = kwargs.get("vqa_prompt" if kind == "vqa" else "open_prompt", "")
    return f"{question}\n{prompt}".strip()


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Performance of the answer; RK from the third turn against the doc's SK (harness.protocols.diavlo.metrics)."""
    return score_pair(doc, results[0], doc.get("harness_turns"))
