"""The FusionAudit judge ``J(source, prediction, answers) -> correct?``: one function for every task,
attack and audit, with each source's own published rule.

- ChartQA: relaxed accuracy (Methani et al. 2020, as in ChartQA and pix2struct): a prediction and a
  target that both parse as numbers (a trailing ``%`` divides by 100) match when the relative change
  is at most 5% of a non-zero target; otherwise a case-insensitive exact match. Any of the item's
  answers may match.
- DocVQA: ANLS (Biten et al. 2019) with its threshold tau = 0.5: per answer the normalised Levenshtein
  distance ``NL`` of the lower-cased, whitespace-collapsed strings; the item's ANLS is
  ``max(1 - NL if NL < tau else 0)``; J counts it correct when ANLS > 0 (some answer within the
  threshold).
- MME: yes/no parsing as in the MME evaluation: the answer itself when it is ``yes`` or ``no``, else
  the first of ``yes`` / ``no`` found in its first four characters; anything else is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessError

ANLS_THRESHOLD = 0.5
RELAXED_TOLERANCE = 0.05
SOURCES = ("chartqa", "docvqa", "mme")


def _clean(prediction: str) -> str:
    text = prediction.strip()
    return text[:-1].strip() if text.endswith(".") else text


def _to_float(text: str) -> float | None:
    try:
        if text.endswith("%"):
            return float(text.rstrip("%")) / 100.0
        return float(text)
    except ValueError:
        return None


def relaxed_correctness(target: str, prediction: str, max_relative_change: float = RELAXED_TOLERANCE) -> bool:
    """ChartQA's relaxed accuracy for one target."""
    pred, tgt = _to_float(_clean(prediction)), _to_float(target.strip())
    if pred is not None and tgt:
        return abs(pred - tgt) / abs(tgt) <= max_relative_change
    return _clean(prediction).lower() == target.strip().lower()


def anls(prediction: str, answers: Sequence[str], threshold: float = ANLS_THRESHOLD) -> float:
    """DocVQA's ANLS of one prediction against the item's answers."""
    import Levenshtein

    pred = " ".join(prediction.strip().lower().split())
    best = 0.0
    for answer in answers:
        gt = " ".join(str(answer).strip().lower().split())
        longest = max(len(gt), len(pred))
        nl = Levenshtein.distance(gt, pred) / longest if longest else 0.0
        best = max(best, 1.0 - nl if nl < threshold else 0.0)
    return best


def parse_yes_no(prediction: str) -> str | None:
    """``yes`` / ``no`` as MME's evaluation reads an answer, None for anything else."""
    text = prediction.strip().lower()
    if text in {"yes", "no"}:
        return text
    head = text[:4]
    if "yes" in head:
        return "yes"
    if "no" in head:
        return "no"
    return None


def judge(source: str, prediction: str, answers: Sequence[str]) -> bool:
    """J: whether ``prediction`` answers the item correctly under its source's rule."""
    if not answers:
        raise HarnessError("judge: the item has no reference answer")
    if source == "chartqa":
        return any(relaxed_correctness(str(a), prediction) for a in answers)
    if source == "docvqa":
        return anls(prediction, answers) > 0
    if source == "mme":
        parsed = parse_yes_no(prediction)
        return parsed is not None and parsed == str(answers[0]).strip().lower()
    raise HarnessError(f"judge: unknown source {source!r} (known: {', '.join(SOURCES)})")
