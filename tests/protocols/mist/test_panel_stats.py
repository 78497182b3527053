"""MIST human-panel statistics, hand-computed: Fleiss' kappa of each trio, their difference with a
bootstrap CI, and Welch t-tests on per-item agreement."""

import math

import pytest
from scipy.stats import t as student_t

from harness.errors import HarnessError
from harness.protocols.mist import panel_stats as ps

ITEMS = ("i1", "i2", "i3", "i4")
# informed: all three agree everywhere -> P_i = 1, P_e < 1 -> kappa = 1
INFORMED = {a: dict(zip(ITEMS, (0, 3, 0, 3), strict=True)) for a in ("A", "B", "C")}
# blind: i1 (0,0,1), i2 (3,3,3), i3 (0,0,0), i4 (3,3,2)
BLIND = {
    "D": dict(zip(ITEMS, (0, 3, 0, 3), strict=True)),
    "E": dict(zip(ITEMS, (0, 3, 0, 3), strict=True)),
    "F": dict(zip(ITEMS, (1, 3, 0, 2), strict=True)),
}


def test_fleiss_and_per_item_agreement_by_hand() -> None:
    counts = ps.category_counts(BLIND, ITEMS)
    # P_i = (1/3, 1, 1, 1/3), mean 2/3; p_j = (5, 1, 1, 5)/12 -> P_e = 52/144 = 13/36
    # kappa = (2/3 - 13/36) / (1 - 13/36) = 11/23
    assert ps.per_item_agreement(counts).tolist() == pytest.approx([1 / 3, 1, 1, 1 / 3])
    assert ps.fleiss(counts) == pytest.approx(11 / 23)
    assert ps.fleiss(ps.category_counts(INFORMED, ITEMS)) == pytest.approx(1.0)
    assert ps.fleiss(ps.category_counts(INFORMED, ("i1", "i3"))) is None  # one category: P_e = 1


def test_kappa_difference_with_bootstrap_ci_and_welch_p() -> None:
    out = ps.kappa_difference(INFORMED, BLIND, n_resamples=400, seed=1)
    assert out.items == 4
    assert out.kappa_a == pytest.approx(1.0) and out.kappa_b == pytest.approx(11 / 23)
    assert out.difference == pytest.approx(12 / 23)
    low, high = out.interval.low, out.interval.high
    assert out.interval.method == "paired_bootstrap" and (out.interval.unit, out.interval.n) == ("item", 4)
    assert (
        low is not None and high is not None and low < high and low <= 12 / 23 <= high
    )  # a kappa may be negative: the CI can pass 1
    # Welch on P_i: informed (1, 1, 1, 1), var 0; blind mean 2/3, var (4 x 1/9) / 3 = 4/27
    # t = (1 - 2/3) / sqrt(4/27 / 4) = sqrt(3); df = n_b - 1 = 3 (the other variance is 0)
    assert out.welch.t == pytest.approx(math.sqrt(3))
    assert out.welch.df == pytest.approx(3)
    assert out.welch.p_value == pytest.approx(2 * student_t.sf(math.sqrt(3), 3))
    assert (out.welch.mean_a, out.welch.mean_b) == (pytest.approx(1.0), pytest.approx(2 / 3))


def test_condition_contrast_welch_by_hand() -> None:
    # aligned items a1..a3 with P_i (1, 1/3, 1); misleading m1..m4 with P_i (1/3, 1/3, 0, 1); x1 mixed
    rows = {
        "a1": (0, 0, 0),
        "a2": (0, 0, 1),
        "a3": (2, 2, 2),
        "m1": (1, 1, 3),
        "m2": (3, 3, 2),
        "m3": (0, 1, 2),
        "m4": (3, 3, 3),
        "x1": (0, 0, 0),
    }
    panel = {a: {i: labels[k] for i, labels in rows.items()} for k, a in enumerate("ABC")}
    seen = {a: {i: "aligned" if i[0] == "a" else "misleading" for i in rows} for a in "ABC"}
    seen["C"]["x1"] = "none"
    out = ps.condition_contrast(panel, seen)
    a, m = [1, 1 / 3, 1], [1 / 3, 1 / 3, 0, 1]
    mean_a, mean_m = sum(a) / 3, sum(m) / 4  # 7/9, 5/12
    var_a = sum((x - mean_a) ** 2 for x in a) / 2
    var_m = sum((x - mean_m) ** 2 for x in m) / 3
    se2 = var_a / 3 + var_m / 4
    t = (mean_a - mean_m) / math.sqrt(se2)
    df = se2**2 / ((var_a / 3) ** 2 / 2 + (var_m / 4) ** 2 / 3)
    assert out.mixed == 1 and (out.welch.n_a, out.welch.n_b) == (3, 4)
    assert out.welch.mean_a == pytest.approx(7 / 9) and out.welch.mean_b == pytest.approx(5 / 12)
    assert out.welch.t == pytest.approx(t) and out.welch.df == pytest.approx(df)
    assert out.welch.p_value == pytest.approx(2 * student_t.sf(abs(t), df))


def test_small_or_incomplete_panels() -> None:
    few = ps.welch([1.0], [0.5, 0.7])
    assert few.t is None and few.p_value is None and few.mean_a == 1.0
    with pytest.raises(HarnessError, match="annotator 'D' has no label for item 'i9'"):
        ps.category_counts(BLIND, ("i9",))
    assert ps.kappa_difference(INFORMED, {}).items == 0
