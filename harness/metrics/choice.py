"""lmms-eval's ``multiple_choice`` scoring: ``acc``, ``acc_norm`` and ``exact_match`` from per-choice scores.

lmms-eval's models return, per choice, the mean token loss of the continuation (``llava_hf``: the loss
``model(..., labels=...)`` reports), and its ``ConfigurableTask.process_results`` takes the argmin of those
values (``acc``) and of those values divided by each choice's length in characters (``acc_norm``). These
functions compute exactly that, so a task scores the same here and there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def gold_indices(gold: Any, choices: Sequence[str]) -> list[int]:
    """The gold choice(s) as indices, lmms-eval's way: an int index, a choice string, or a list of indices;
    one out of range (or a string not among the choices) is -100 and never matches."""
    if isinstance(gold, list):
        return [g if isinstance(g, int) and 0 <= g < len(choices) else -100 for g in gold]
    if isinstance(gold, bool):
        gold = int(gold)
    if isinstance(gold, int):
        return [gold if 0 <= gold < len(choices) else -100]
    if isinstance(gold, str):
        return [list(choices).index(gold) if gold in choices else -100]
    return [-100]


def _argmin(values: Sequence[float]) -> int:
    return min(range(len(values)), key=lambda i: (values[i], i))


def choice_metrics(
    losses: Sequence[float], greedy: Sequence[bool], choices: Sequence[str], gold: Any
) -> dict[str, float]:
    """``acc`` (lowest loss is gold), ``acc_norm`` (lowest loss per character is gold) and ``exact_match``
    (the gold continuation is the greedy one), as lmms-eval's ``process_results`` computes them."""
    if len(losses) != len(choices):
        raise ValueError(f"{len(losses)} scores for {len(choices)} choices")
    golds = gold_indices(gold, choices)
    pred = _argmin(losses)
    pred_norm = _argmin([loss / float(len(c)) if c else float("inf") for loss, c in zip(losses, choices, strict=True)])
    return {
        "acc": float(pred in golds),
        "acc_norm": float(pred_norm in golds),
        "exact_match": float(any(greedy[g] for g in golds if g != -100)),
    }
