"""Hand-computed cases for the Stealth sentiment metrics."""

import numpy as np
import pytest

from harness.protocols.stealth.sentiment_bias import (
    ScoreMatrix,
    adherence,
    condition_bias,
    max_negative_bias,
    max_positive_bias,
    parse_sentiment,
    strategy,
    strategy_rates,
    total_range,
)


def item(s, c, label, first=None):
    score = None if label is None else {"P": 1, "U": 0, "N": -1}[label]
    return {"sample_id": s, "condition": c, "score": score, "first_half": first}


def test_parse_takes_the_final_label_and_never_guesses() -> None:
    assert parse_sentiment("Negative") == "NEGATIVE"
    assert parse_sentiment("It looks positive at first... Final answer: NEUTRAL.") == "NEUTRAL"
    assert parse_sentiment("positively unclear") is None
    assert parse_sentiment("") is None


# Three sentences, baseline + two conditions.
#   s1: base N(-1), red P(+1), blue N(-1)   -> diffs red +2, blue 0
#   s2: base U(0),  red U(0),  blue N(-1)   -> diffs red 0,  blue -1
#   s3: base P(+1), red ?(unparsed), blue U -> diffs red excluded, blue -1
# B_red = (2 + 0) / 2 = 1.0 ; B_blue = (0 - 1 - 1) / 3 = -2/3
ITEMS = [
    item("s1", "baseline", "N"),
    item("s1", "red", "P"),
    item("s1", "blue", "N"),
    item("s2", "baseline", "U"),
    item("s2", "red", "U"),
    item("s2", "blue", "N"),
    item("s3", "baseline", "P"),
    item("s3", "red", None),
    item("s3", "blue", "U"),
    None,
]


def test_condition_bias_and_range_hand_computed() -> None:
    m = ScoreMatrix.from_items(ITEMS)
    assert m.conditions[0] == "baseline"
    bias = condition_bias(m)
    assert bias == pytest.approx({"red": 1.0, "blue": -2 / 3})
    assert max_positive_bias(m) == pytest.approx(1.0)
    assert max_negative_bias(m) == pytest.approx(-2 / 3)
    assert total_range(m) == pytest.approx(5 / 3)


def test_baseline_inclusion_option() -> None:
    m = ScoreMatrix.from_items([item("s", "baseline", "N"), item("s", "red", "U"), item("s", "blue", "P")])
    assert max_negative_bias(m) == 1.0 and total_range(m) == 1.0  # both shifts are upwards
    assert max_negative_bias(m, include_baseline=True) == 0.0 and total_range(m, include_baseline=True) == 2.0


def test_long_set_strategy_and_adherence_hand_computed() -> None:
    # f_s = +1 for a, -1 for b, +1 for c. Baseline: a P (primacy), b P (recency), c P (primacy)
    # -> primacy 2/3, recency 1/3 -> strategy primacy (target: a +1, b -1, c +1).
    # red: a P (follows), b N (follows), c N (breaks) ; all parsed answers: 6, following: a,a,b,c=4... count:
    # baseline a yes, b no, c yes; red a yes, b yes, c no -> 4/6.
    items = [
        item("a", "baseline", "P", 1),
        item("b", "baseline", "P", -1),
        item("c", "baseline", "P", 1),
        item("a", "red", "P", 1),
        item("b", "red", "N", -1),
        item("c", "red", "N", 1),
    ]
    m = ScoreMatrix.from_items(items)
    assert strategy_rates(m) == pytest.approx((2 / 3, 1 / 3))
    assert strategy(m) == "primacy"
    assert adherence(m) == pytest.approx(4 / 6)
    # Color Bias Range on one colored condition is 0 (max = min): B_red = (0 - 2 - 2) / 3
    assert condition_bias(m) == pytest.approx({"red": -4 / 3}) and total_range(m) == 0.0


def test_rows_subset_for_bootstrap() -> None:
    m = ScoreMatrix.from_items(ITEMS)
    only_s1_twice = m.rows(np.array([0, 0]))
    assert condition_bias(only_s1_twice) == {"red": 2.0, "blue": 0.0}
