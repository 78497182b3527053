"""Per-pair task performance for DiaVLo's sources.

- Multiple choice (MMBench, SEED-Bench-2): the chosen letter is the first standalone option letter
  (``B``, ``(B)``, ``B.``, ``Answer: B``) or, failing that, the only option whose text appears in the
  answer; accuracy = 1 when it is the gold letter. No letter and no unique option text: unparsed (None).
- VQA v2: the official accuracy, min(1, matches / 3) averaged over the ten leave-one-out subsets of
  the ten human answers, after normalisation (lowercase, punctuation and articles removed; the
  official script's number-word and contraction maps are not applied).
- Open-ended (LLaVA-Bench): token F1 against the reference answer (SQuAD's definition), an offline
  stand-in for LLaVA-Bench's GPT-4 relative score.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.metrics.squad import normalize_answer

LETTERS = "ABCDEFGH"


def choice_letter(text: str, options: Sequence[str]) -> str | None:
    """The option letter a free-text answer picks (module docstring), or None."""
    letters = LETTERS[: len(options)]
    match = re.search(rf"(?:^|[\s(:\[])([{letters}])(?:$|[\s).:,\]])", text.strip())
    if match:
        return match.group(1)
    norm = f" {normalize_answer(text)} "
    hits = [
        letters[k] for k, opt in enumerate(options) if normalize_answer(opt) and f" {normalize_answer(opt)} " in norm
    ]
    return hits[0] if len(hits) == 1 else None


def vqa_accuracy(prediction: str, answers: Sequence[str]) -> float:
    """VQA v2 accuracy against the human answers (module docstring)."""
    pred = normalize_answer(prediction)
    gold = [normalize_answer(a) for a in answers]
    if not gold:
        return 0.0
    if len(gold) == 1:
        return float(pred == gold[0])
    scores = [min(1.0, sum(g == pred for j, g in enumerate(gold) if j != i) / 3) for i in range(len(gold))]
    return sum(scores) / len(scores)
