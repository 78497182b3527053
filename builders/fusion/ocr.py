"""Evidence-preservation check of a Nat-Evid edit with an offline OCR (rapidocr-onnxruntime, whose
wheel bundles its ONNX detection and recognition weights).

The evidence of an item is the text the OCR reads on the clean image: its lines, lower-cased with
everything but letters and digits removed, those of at least 2 characters. An edit preserves the
evidence when at least ``threshold`` (0.8) of those lines are still found in the edited image's OCR
text (rapidfuzz ``partial_ratio`` >= 90, so one misread character does not count as destroyed).
Status per item: ``preserved``, ``destroyed``, ``no_text`` (the OCR reads nothing on the clean image,
e.g. a photo: preservation cannot be judged by OCR) or ``skipped`` (no OCR engine installed).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

THRESHOLD = 0.8
MATCH_SCORE = 90.0


@dataclass(frozen=True)
class Preservation:
    """Whether an edit kept the image's own text (``status``, OCR line recall) and left the wrong
    answer readable; None where OCR could not tell."""

    status: str
    recall: float | None
    wrong_readable: bool | None


@lru_cache(maxsize=1)
def _engine() -> Any | None:
    try:
        from rapidocr_onnxruntime import RapidOCR  # the [fusion] extra
    except ImportError:
        return None
    return RapidOCR()


def ocr_available() -> bool:
    """Whether an OCR engine (rapidocr) is installed."""
    return _engine() is not None


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def ocr_lines(image: Any) -> list[str] | None:
    """Normalised text lines read on ``image``; None when no OCR engine is installed."""
    import numpy as np

    engine = _engine()
    if engine is None:
        return None
    result, _ = engine(np.asarray(image.convert("RGB")))
    return [n for n in (_norm(r[1]) for r in result or []) if len(n) >= 2]


def check_preservation(clean: Any, edited: Any, wrong: str, threshold: float = THRESHOLD) -> Preservation:
    """How much of the clean image's text the edited image still shows, and whether ``wrong`` reads on it
    (``skipped`` without an OCR engine, ``no_text`` when the clean image has none)."""
    from rapidfuzz import fuzz

    before = ocr_lines(clean)
    if before is None:
        return Preservation("skipped", None, None)
    after = ocr_lines(edited) or []
    joined = " ".join(after)
    target = _norm(wrong)
    readable = bool(target) and fuzz.partial_ratio(target, joined) >= MATCH_SCORE
    if not before:
        return Preservation("no_text", None, readable)
    kept = sum(fuzz.partial_ratio(line, joined) >= MATCH_SCORE for line in before) if joined else 0
    recall = kept / len(before)
    return Preservation("preserved" if recall >= threshold else "destroyed", recall, readable)
