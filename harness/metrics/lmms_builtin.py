"""lmms-eval 0.7.3's built-in per-sample metrics (``lmms_eval.api.metrics``' registry), for the tasks that
name one in ``metric_list`` and have no ``process_results``: each is called as lmms-eval calls it,
``metric(references=golds, predictions=answers, **options)``, with the metric_list entry's other keys as
options.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from typing import Any


def exact_match(
    references: Sequence[Any],
    predictions: Sequence[Any],
    regexes_to_ignore: Sequence[str] | None = None,
    ignore_case: bool = False,
    ignore_punctuation: bool = False,
    ignore_numbers: bool = False,
) -> float:
    """The share of positions where prediction and reference are equal once the options are applied:
    ``regexes_to_ignore`` removed (in order), lower-cased, ASCII punctuation (``string.punctuation``) removed,
    digits removed, in that order. One reference against several predictions compares it with each."""

    def normal(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        for pattern in regexes_to_ignore or ():
            text = re.sub(pattern, "", text)
        if ignore_case:
            text = text.lower()
        if ignore_punctuation:
            text = text.translate(str.maketrans("", "", string.punctuation))
        if ignore_numbers:
            text = text.translate(str.maketrans("", "", string.digits))
        return text

    preds, refs = [normal(p) for p in predictions], [normal(r) for r in references]
    if len(refs) == 1:
        refs = refs * len(preds)
    elif len(preds) == 1:
        preds = preds * len(refs)
    if len(preds) != len(refs) or not preds:
        raise ValueError(f"exact_match compares {len(preds)} prediction(s) with {len(refs)} reference(s)")
    return sum(bool(p == r) for p, r in zip(preds, refs, strict=True)) / len(preds)


def _levenshtein(a: str, b: str) -> int:
    if len(a) > len(b):
        a, b = b, a
    row = list(range(len(a) + 1))
    for i, cb in enumerate(b):
        nxt = [i + 1]
        for j, ca in enumerate(a):
            nxt.append(row[j] if ca == cb else 1 + min(row[j], row[j + 1], nxt[-1]))
        row = nxt
    return row[-1]


def anls(references: Sequence[str], predictions: Sequence[Any], thresh_hold: float = 0.5) -> float:
    """Average Normalized Levenshtein Similarity of one answer (the first prediction) against its best
    reference: 1 - distance / length, where both are compared lower-cased with whitespace runs collapsed, and
    the length is the longer of the two texts as given (lmms-eval's formula); below ``thresh_hold`` it is 0."""
    pred = predictions[0] if isinstance(predictions[0], str) else predictions[0][0]
    distances = []
    for answer in references:
        gold, det = " ".join(answer.strip().lower().split()), " ".join(pred.strip().lower().split())
        length = max(len(answer.upper()), len(pred.upper()))
        distances.append(0.0 if length == 0 else _levenshtein(gold, det) / length)
    score = 1 - min(distances)
    return 0.0 if score < thresh_hold else score


def bypass(references: Sequence[Any], predictions: Sequence[Any]) -> Any:
    """lmms-eval's placeholder metric: the pair as it is (the ``bypass`` aggregation gives 999 for any)."""
    return [list(references), list(predictions)]


#: name -> (function, the aggregation lmms-eval registers for it)
BUILTIN_METRICS: dict[str, tuple[Callable[..., Any], str]] = {
    "exact_match": (exact_match, "mean"),
    "anls": (anls, "mean"),
    "bypass": (bypass, "bypass"),
}
#: metrics computed without process_results for these output types (lmms-eval's per-type scoring)
CHOICE_METRICS = {"multiple_choice": ("acc", "acc_norm", "exact_match"), "loglikelihood": ("perplexity", "acc")}


def builtin_metric_names(output_type: str) -> tuple[str, ...]:
    """The metrics lmms-eval computes by itself, without ``process_results``, for ``output_type``."""
    return CHOICE_METRICS.get(output_type, tuple(BUILTIN_METRICS))
