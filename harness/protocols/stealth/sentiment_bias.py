"""Stealth Prompt Testset sentiment metrics ("Seeing Red, Thinking Bad").

Symbols: m(POSITIVE)=+1, m(NEUTRAL)=0, m(NEGATIVE)=-1; y_{s,c} is the label a model gives sentence s
under visual condition c, and c0 the all-black baseline.

- Sentiment bias of condition c: B_c = mean_s [ m(y_{s,c}) - m(y_{s,c0}) ] over the sentences s where
  both labels parsed (unparsable outputs are excluded, never mapped to NEUTRAL).
- Max positive bias = max_c B_c, max negative bias = min_c B_c, Total Range = max_c B_c - min_c B_c,
  over the colored conditions (c != c0; the baseline's B is 0 by definition). Choice: the baseline is
  not included in the max/min, so a model whose every condition shifts upwards has a positive "max
  negative bias"; pass ``include_baseline=True`` to clamp at 0.
- Long set (first half of each sentence carries one polarity f_s = +-1, the second half the other):
  primacy rate = share of parsed baseline answers with m(y) = f_s, recency rate = share with m(y) = -f_s;
  the strategy is the larger of the two ("tie" when equal); Adherence = share of all parsed answers,
  over every condition, that follow the identified strategy; Color Bias Range = Total Range on the long
  set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LABEL_VALUE = {"POSITIVE": 1, "NEUTRAL": 0, "NEGATIVE": -1}
BASELINE = "baseline"
_LABEL_RE = re.compile(r"\b(POSITIVE|NEUTRAL|NEGATIVE)\b", re.IGNORECASE)


def parse_sentiment(response: str) -> str | None:
    """The final POSITIVE/NEUTRAL/NEGATIVE in a response (the answer after any reasoning), or None."""
    found = _LABEL_RE.findall(response or "")
    return found[-1].upper() if found else None


@dataclass(frozen=True)
class ScoreMatrix:
    """m(y_{s,c}) per sentence (rows) and condition (columns); NaN where unparsed or missing."""

    samples: list[str]
    conditions: list[str]
    values: np.ndarray
    first_half: np.ndarray | None = None  # f_s per row, long set only

    @classmethod
    def from_items(cls, items: Sequence[dict[str, Any] | None]) -> ScoreMatrix:
        """Build from per-answer items ``{"sample_id", "condition", "score"[, "first_half"]}``."""
        present = [i for i in items if i is not None and i.get("score") is not None]
        samples = sorted({i["sample_id"] for i in present})
        conditions = sorted({i["condition"] for i in present}, key=lambda c: (c != BASELINE, c))
        row = {s: k for k, s in enumerate(samples)}
        col = {c: k for k, c in enumerate(conditions)}
        values = np.full((len(samples), len(conditions)), np.nan)
        first = np.full(len(samples), np.nan)
        for item in present:
            values[row[item["sample_id"]], col[item["condition"]]] = item["score"]
            if item.get("first_half") is not None:
                first[row[item["sample_id"]]] = item["first_half"]
        has_first = bool(np.isfinite(first).any())
        return cls(samples, conditions, values, first if has_first else None)

    def rows(self, idx: np.ndarray) -> ScoreMatrix:
        """The matrix restricted to the rows ``idx`` (repeats allowed, as in a bootstrap resample)."""
        first = None if self.first_half is None else self.first_half[idx]
        return ScoreMatrix(self.samples, self.conditions, self.values[idx], first)


def condition_bias(matrix: ScoreMatrix) -> dict[str, float]:
    """B_c for every colored condition c (NaN-free: conditions without a parsed pair are left out)."""
    if BASELINE not in matrix.conditions:
        return {}
    base = matrix.values[:, matrix.conditions.index(BASELINE)]
    out = {}
    for k, cond in enumerate(matrix.conditions):
        if cond == BASELINE:
            continue
        diff = matrix.values[:, k] - base
        diff = diff[np.isfinite(diff)]
        if diff.size:
            out[cond] = float(diff.mean())
    return out


def _extremes(matrix: ScoreMatrix, include_baseline: bool) -> tuple[float, float] | None:
    biases = list(condition_bias(matrix).values())
    if include_baseline and biases:
        biases.append(0.0)
    return (max(biases), min(biases)) if biases else None


def max_positive_bias(matrix: ScoreMatrix, include_baseline: bool = False) -> float | None:
    """Max positive bias: max_c B_c over the colored conditions (the baseline's 0 too with
    ``include_baseline``); None when no condition has a bias."""
    ext = _extremes(matrix, include_baseline)
    return None if ext is None else ext[0]


def max_negative_bias(matrix: ScoreMatrix, include_baseline: bool = False) -> float | None:
    """Max negative bias: min_c B_c over the colored conditions (the baseline's 0 too with
    ``include_baseline``); None when no condition has a bias."""
    ext = _extremes(matrix, include_baseline)
    return None if ext is None else ext[1]


def total_range(matrix: ScoreMatrix, include_baseline: bool = False) -> float | None:
    """Total Range: max_c B_c - min_c B_c, the spread of the condition biases (Stealth paper, Table 1);
    None when no condition has a bias."""
    ext = _extremes(matrix, include_baseline)
    return None if ext is None else ext[0] - ext[1]


def strategy_rates(matrix: ScoreMatrix) -> tuple[float, float] | None:
    """(primacy rate, recency rate) on the parsed baseline answers of the long set."""
    if matrix.first_half is None or BASELINE not in matrix.conditions:
        return None
    base = matrix.values[:, matrix.conditions.index(BASELINE)]
    ok = np.isfinite(base) & np.isfinite(matrix.first_half)
    if not ok.any():
        return None
    return float((base[ok] == matrix.first_half[ok]).mean()), float((base[ok] == -matrix.first_half[ok]).mean())


def strategy(matrix: ScoreMatrix) -> str | None:
    """The long set's answering strategy on the baseline: ``primacy`` or ``recency``, whichever rate is
    larger, ``tie`` when equal; None without parsed long-set baseline answers."""
    rates = strategy_rates(matrix)
    if rates is None:
        return None
    primacy, recency = rates
    return "primacy" if primacy > recency else "recency" if recency > primacy else "tie"


def adherence(matrix: ScoreMatrix) -> float | None:
    """Share of all parsed answers (every condition) that follow the strategy found on the baseline."""
    found = strategy(matrix)
    if found is None or found == "tie" or matrix.first_half is None:
        return None
    target = matrix.first_half[:, None] * (1 if found == "primacy" else -1)
    ok = np.isfinite(matrix.values) & np.isfinite(target)
    return float((matrix.values[ok] == np.broadcast_to(target, matrix.values.shape)[ok]).mean()) if ok.any() else None
