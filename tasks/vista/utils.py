"""Glue for the VISTA task: one model's answers per image-prompt pair; the audit itself is cross-model
(harness.protocols.vista.audit). Per model, the task reports refusal rates per demographic group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.protocols.vista.refusal import classify_refusal, count_refusals, selective_refusal
from harness.protocols.vista.rows import VistaRow


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [VistaRow.read(doc, "image").convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return str(VistaRow.read(doc, "prompt"))


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """Per pair over its k answers: share of refusals (empty, decline, disclaimer), of empty answers, and
    the number of distinct answer strings (a cheap look at sampling diversity before any clustering)."""
    kinds = [classify_refusal(r) for r in results]
    return {
        "refusal_rate": sum(k is not None for k in kinds) / len(results),
        "empty_rate": sum(k == "empty" for k in kinds) / len(results),
        "distinct_answers": len({r.strip() for r in results}),
    }


def report(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    """Refusal rates per demographic group (all prompts; observable and inference prompts apart)."""
    answered = [
        r
        for r in records
        if r.error is None and r.responses and VistaRow.read(r.doc, "category", None) == "demographic"
    ]
    out: dict[str, Any] = {}
    for kind in ("all", "O", "I"):
        subset = [r for r in answered if kind == "all" or VistaRow.read(r.doc, "prompt_type", None) == kind]
        if subset:
            out[f"selective_refusal_{kind}"] = selective_refusal(
                count_refusals((VistaRow.read(r.doc, "topic"), r.responses) for r in subset)
            )
    return out
