"""Hand-computed alt-test cases: ties, skipped annotators, constant differences, BY correction."""

import pytest
from scipy.stats import t as student_t

from harness.errors import HarnessError
from harness.metrics import alt_test
from harness.metrics.alttest import matched_alt_test, neg_rmse_score

HUMANS = {
    "A": {"i1": "x", "i2": "x", "i3": "y", "i4": "y"},
    "B": {"i1": "x", "i2": "y", "i3": "y", "i4": "y"},
    "C": {"i1": "x", "i2": "x", "i3": "y", "i4": "x"},
}
LLM = {"i1": "x", "i2": "x", "i3": "y", "i4": "y"}


def test_hand_computed_panel() -> None:
    result = alt_test(LLM, HUMANS, epsilon=0.2, q_fdr=0.05, min_instances_per_human=1)
    rows = {r.annotator: r for r in result.rows}
    # A held out: every instance is a tie (d = 0 throughout): constant d < epsilon -> p = 0.
    assert (rows["A"].rho_f, rows["A"].rho_h, rows["A"].p_value) == (1.0, 1.0, 0.0)
    # B held out: on i2 the others say (x, x), B says y, the LLM x -> d = [0, -1, 0, 0];
    # mean -0.25, sd 0.5, se 0.25, t = (-0.25 - 0.2) / 0.25 = -1.8 with 3 df.
    expected_p = student_t.cdf(-1.8, 3)
    assert rows["B"].rho_f == 1.0 and rows["B"].rho_h == 0.75
    assert rows["B"].p_value == pytest.approx(expected_p)
    assert rows["C"].p_value == pytest.approx(expected_p)  # symmetric case on i4
    # BY at q = 0.05, m = 3: thresholds k q / (m (1 + 1/2 + 1/3)) = 0.0091, 0.0182, 0.0273:
    # only p = 0 is rejected (0.085 exceeds every threshold).
    assert [rows[h].rejected for h in "ABC"] == [True, False, False]
    assert result.winning_rate == pytest.approx(1 / 3) and not result.passed
    assert result.advantage_prob == 1.0 and result.instances_used == 4


def test_matched_llm_labels_per_annotator_hand_computed() -> None:
    # Each held-out annotator is compared with the LLM label under the condition they saw.
    seen = {
        "A": LLM,
        "B": {"i1": "y", "i2": "x", "i3": "y", "i4": "y"},
        "C": {k: v for k, v in LLM.items() if k != "i4"},
    }  # C's i4: no LLM label for C's condition
    result = matched_alt_test(seen, HUMANS, epsilon=0.2, q_fdr=0.05, min_instances_per_human=1)
    rows = {r.annotator: r for r in result.rows}
    assert (rows["A"].rho_f, rows["A"].rho_h, rows["A"].p_value) == (1.0, 1.0, 0.0)  # all ties
    # B: i1 others (x, x): B 1, LLM y 0 -> d = 1; i2 others (x, x): B 0, LLM 1 -> d = -1; i3, i4 ties.
    # d = [1, -1, 0, 0]: mean 0, sd sqrt(2/3), se sqrt(2/3)/2, t = -0.2 / se with 3 df.
    assert (rows["B"].rho_f, rows["B"].rho_h) == (0.75, 0.75)
    assert rows["B"].p_value == pytest.approx(student_t.cdf(-0.2 / ((2 / 3) ** 0.5 / 2), 3))
    assert rows["C"].n == 3 and rows["C"].p_value == 0.0  # i1-i3 all ties
    # BY, m = 3: p = 0, 0 are rejected, B's 0.33 is not -> omega 2/3, passes; rho_f mean (1 + 3/4 + 1)/3
    assert [rows[h].rejected for h in "ABC"] == [True, False, True]
    assert result.winning_rate == pytest.approx(2 / 3) and result.passed
    assert result.advantage_prob == pytest.approx(11 / 12) and result.instances_used == 4
    same = matched_alt_test({h: LLM for h in HUMANS}, HUMANS, min_instances_per_human=1)
    assert same == alt_test(LLM, HUMANS, min_instances_per_human=1)


def test_constant_difference_at_or_above_epsilon_is_not_rejected() -> None:
    humans = {"A": {"i1": "x", "i2": "x"}, "B": {"i1": "x", "i2": "x"}}
    wrong = {"i1": "y", "i2": "y"}  # the humans always beat the LLM: d = 1 >= epsilon
    result = alt_test(wrong, humans, min_instances_per_human=1)
    assert all(r.p_value == 1.0 and not r.rejected for r in result.rows)
    assert result.winning_rate == 0.0 and result.advantage_prob == 0.0


def test_instances_and_annotators_are_filtered_before_testing() -> None:
    humans = {**HUMANS, "D": {"i1": "x", "i5": "y"}}  # i5 has one human: dropped; D keeps 1 instance
    llm = {**LLM, "i5": "y"}
    result = alt_test(llm, humans, min_instances_per_human=2)
    assert result.skipped == ["D"] and result.instances_used == 4
    assert {r.annotator for r in result.rows} == {"A", "B", "C"}  # D leaves the denominator
    no_llm = alt_test({k: v for k, v in LLM.items() if k != "i4"}, HUMANS, min_instances_per_human=1)
    assert all(r.n == 3 for r in no_llm.rows)
    nobody = alt_test(LLM, HUMANS, min_instances_per_human=10)
    assert nobody.winning_rate is None and not nobody.passed and len(nobody.skipped) == 3


def test_scorings_and_errors() -> None:
    assert neg_rmse_score(3, [1, 3]) == pytest.approx(-(2**0.5))
    numeric = alt_test(
        {"i1": 2, "i2": 3},
        {"A": {"i1": 2, "i2": 3}, "B": {"i1": 2, "i2": 4}},
        scoring="neg_rmse",
        min_instances_per_human=1,
    )
    assert len(numeric.rows) == 2
    custom = alt_test(LLM, HUMANS, scoring=lambda label, others: 1.0, min_instances_per_human=1)
    assert custom.advantage_prob == 1.0  # every comparison ties
    with pytest.raises(HarnessError, match="unknown scoring 'f1'"):
        alt_test(LLM, HUMANS, scoring="f1")
    with pytest.raises(HarnessError, match="at least 2"):
        alt_test(LLM, HUMANS, min_humans_per_instance=1)
