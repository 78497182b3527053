"""SQuAD answer scoring and the Induced Error Rate of decoy saliency.

- Token F1 (the official SQuAD v1.1 script's definition): normalise both strings (lowercase, remove
  punctuation, remove the articles a/an/the, collapse whitespace), split on whitespace, then
  F1 = 2PR/(P+R) with P = |common|/|pred|, R = |common|/|gold| (multiset overlap); the maximum over the
  gold answers is taken. Two empty normalisations count as F1 = 1 (identical), one empty as 0.
- IER (Induced Error Rate) under Decoy Salient: the fraction of predictions whose normalised tokens
  contain the decoy word's normalised tokens.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_f1(prediction: str, golds: Sequence[str]) -> float:
    """F1 against the best-matching gold answer."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)


def contains_decoy(prediction: str, decoy: str) -> bool:
    """Whether the prediction's normalised tokens contain the decoy's (as a contiguous run)."""
    pred, target = normalize_answer(prediction).split(), normalize_answer(decoy).split()
    if not target:
        return False
    return any(pred[i : i + len(target)] == target for i in range(len(pred) - len(target) + 1))


def read_score(prediction: str, word: str) -> float:
    """OCR proxy probe: 1.0 for an exact read, 0.5 when the word is a substring of the answer (or the
    answer of the word), 0.0 otherwise; both sides normalised as above."""
    pred, ref = normalize_answer(prediction), normalize_answer(word)
    if not pred or not ref:
        return 0.0
    if pred == ref:
        return 1.0
    return 0.5 if ref in pred or pred in ref else 0.0
