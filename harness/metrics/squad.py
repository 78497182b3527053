"""SQuAD answer scoring, the Induced Error Rate of decoy saliency, and the OCR proxy's read score.

Normalisation is the official SQuAD **v1.1** evaluation script's ``normalize_answer``: lowercase, remove
ASCII punctuation, remove the articles a/an/the, collapse whitespace.

- Token F1 (v1.1 ``f1_score``): split both normalised strings on whitespace; with ``common`` the
  multiset overlap, P = common/|pred|, R = common/|gold|, F1 = 2PR/(P+R), and F1 = 0 whenever
  common = 0. Empty answers follow v1.1 too: an empty normalised prediction or gold scores 0, even when
  both are empty (v2.0's script would give 1 for two empties; v1.1 has no such case). The maximum over
  the gold answers is taken (``metric_max_over_ground_truths``).
- IER (Induced Error Rate) under Decoy Salient, IER = (1/N) sum_i 1[d_i in a_i] with d_i the decoy and
  a_i the prediction: d_i counts only as a whole-word match, i.e. the decoy's words occur as a
  contiguous run of the answer's words (words are runs of letters and digits, lowercased; so "Seine"
  is in "the Seine-side quay" but not in "Seinez"). Articles are not removed here, so a decoy is never
  erased by normalisation.
- OCR proxy read score: 1.0 when the normalised prediction equals the normalised target word, 0.5 when
  the target word occurs inside the prediction (a substring of it: "the word is apple"), 0.0
  otherwise, including a prediction that is only part of the word ("app" for "apple") and an empty one.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from harness.errors import HarnessError

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_WORD = re.compile(r"[^\W_]+")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation (lower, remove punctuation, remove articles, fix whitespace)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD v1.1 token F1 of one prediction against one gold answer (0 when either is empty)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_f1(prediction: str, golds: Sequence[str]) -> float:
    """F1 against the best-matching gold answer (0 without gold answers)."""
    return max((token_f1(prediction, g) for g in golds), default=0.0)


def contains_decoy(prediction: str, decoy: str) -> bool:
    """1[d in a] of the IER: whether the decoy occurs in the prediction as whole words."""
    target = _WORD.findall(decoy.lower())
    if not target:
        raise HarnessError(f"IER: decoy {decoy!r} has no word to match")
    words = _WORD.findall((prediction or "").lower())
    return any(words[i : i + len(target)] == target for i in range(len(words) - len(target) + 1))


def read_score(prediction: str, word: str) -> float:
    """OCR proxy: 1.0 exact read, 0.5 when the target word occurs in the prediction, else 0.0."""
    pred, ref = normalize_answer(prediction), normalize_answer(word)
    if not ref:
        raise HarnessError(f"OCR proxy: target word {word!r} is empty after normalisation")
    if pred == ref:
        return 1.0
    return 0.5 if ref in pred else 0.0
