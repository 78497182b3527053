"""DiaVLo metric math pinned by hand: pairing, classes, MI bootstrap, DML on a planted effect, parser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.protocols.diavlo.concept_effects import DMLSettings, concept_effect
from harness.protocols.diavlo.metrics import (
    ALIGNED,
    DIVERGENT,
    EXPANDED,
    LN2,
    UNNAMED,
    Thresholds,
    Triplet,
    behaviour_class,
    best_match,
    binned_mi,
    class_shares,
    mutual_information,
    similarity_matrix,
)
from harness.protocols.diavlo.triplet_parser import EMPTY, OK, UNUSABLE, parse_triplets


def test_best_match_is_greedy_on_the_largest_remaining_cosine() -> None:
    # RK x SK. Largest 0.9 at (1, 0); then row 1 / col 0 are gone: largest 0.7 at (0, 2); then (2, 1) 0.2.
    sim = np.array([[0.8, 0.1, 0.7], [0.9, 0.3, 0.2], [0.5, 0.2, 0.6]])
    pairing = best_match(sim)
    assert pairing.pairs == ((1, 0, 0.9), (0, 2, 0.7), (2, 1, 0.2))
    assert pairing.similarity == pytest.approx((0.9 + 0.7 + 0.2) / 3)
    # The rule is greedy, not an optimal assignment: on [[.9, .8], [.8, 0]] it takes .9 then 0 (mean .45)
    # where the optimum .8 + .8 would give .8.
    assert best_match(np.array([[0.9, 0.8], [0.8, 0.0]])).similarity == pytest.approx(0.45)


def test_best_match_rectangular_and_ties() -> None:
    wide = best_match(np.array([[0.2, 0.6, 0.6]]))  # one RK, three SK: tie goes to the lowest column
    assert wide.pairs == ((0, 1, 0.6),) and wide.similarity == pytest.approx(0.6)
    tall = best_match(np.array([[0.1], [0.4], [0.3]]))
    assert tall.pairs == ((1, 0, 0.4),)
    assert best_match(np.zeros((0, 3))).similarity is None
    with pytest.raises(HarnessError):
        best_match(np.zeros(3))


@pytest.mark.parametrize(
    ("n_rk", "n_sk", "sim", "label"),
    [
        (2, 3, 0.80, ALIGNED),
        (3, 3, 0.75, ALIGNED),  # |RK| <= |SK|, sim >= tau_a (inclusive)
        (4, 3, 0.35, EXPANDED),
        (4, 3, 0.90, EXPANDED),  # |RK| > |SK|, sim >= tau_e
        (4, 3, 0.3499, DIVERGENT),
        (1, 3, 0.10, DIVERGENT),  # sim < tau_d whatever the sizes
        (2, 3, 0.35, UNNAMED),
        (3, 3, 0.7499, UNNAMED),  # |RK| <= |SK| and sim in [0.35, 0.75)
        (0, 3, None, None),
        (2, 0, None, None),
    ],
)
def test_class_rules(n_rk: int, n_sk: int, sim: float | None, label: str | None) -> None:
    assert behaviour_class(n_rk, n_sk, sim) == label


def test_class_rules_follow_configured_thresholds() -> None:
    t = Thresholds(tau_a=0.6, tau_e=0.5, tau_d=0.2)
    assert behaviour_class(2, 3, 0.65, t) == ALIGNED
    assert behaviour_class(4, 3, 0.3, t) == UNNAMED  # above tau_d but below tau_e: no named class
    assert behaviour_class(4, 3, 0.1, t) == DIVERGENT
    with pytest.raises(HarnessError):
        Thresholds(tau_a=2.0)


class _TableEncoder:
    """Unit vectors chosen by hand, so every cosine below is known exactly."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = {k: np.asarray(v) / np.linalg.norm(v) for k, v in table.items()}

    def matrix(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def test_hand_made_triplet_sets_pair_and_classify() -> None:
    enc = _TableEncoder(
        {
            "dog on couch": [1, 0, 0],
            "dog lying on sofa": [0.8, 0.6, 0],
            "cat under table": [0, 0, 1],
            "lamp near couch": [0, 1, 0],
            "sky is blue": [0.6, 0, 0.8],
        }
    )
    sk = [Triplet("dog", "on", "couch"), Triplet("cat", "under", "table")]
    rk = [Triplet("dog", "lying on", "sofa"), Triplet("cat", "under", "table")]
    pairing = best_match(similarity_matrix(rk, sk, enc))
    assert pairing.pairs == ((1, 1, pytest.approx(1.0)), (0, 0, pytest.approx(0.8)))
    assert behaviour_class(len(rk), len(sk), pairing.similarity) == ALIGNED  # mean 0.9
    rk_more = [*rk, Triplet("lamp", "near", "couch")]
    p2 = best_match(similarity_matrix(rk_more, sk, enc))
    assert p2.similarity == pytest.approx(0.9)  # the extra triplet stays unmatched
    assert behaviour_class(3, 2, p2.similarity) == EXPANDED
    off = [Triplet("lamp", "near", "couch"), Triplet("sky", "is", "blue")]
    p3 = best_match(similarity_matrix(off, sk, enc))
    # sky.cat = 0.8 first, then lamp.dog = 0 -> mean 0.4: |RK| = |SK| and 0.35 <= 0.4 < 0.75
    assert p3.similarity == pytest.approx(0.4)
    assert behaviour_class(2, 2, p3.similarity) == UNNAMED
    assert behaviour_class(1, 2, best_match(similarity_matrix(off[:1], sk, enc)).similarity) == DIVERGENT


def test_class_shares_count_unclassified_apart() -> None:
    shares = class_shares([ALIGNED, ALIGNED, UNNAMED, DIVERGENT, None])
    assert shares["n"] == 4 and shares["unclassified"] == 1
    assert shares[ALIGNED] == 0.5 and shares[UNNAMED] == 0.25 and shares[EXPANDED] == 0.0


def test_class_share_intervals_by_hand() -> None:
    """Four questions, one Aligned and three Divergent: a resample's Aligned share is k/4 with k ~
    Binomial(4, 1/4); P(k = 0) = 81/256 and P(k >= 3) = 13/256 (P(k = 4) = 1/256) give [0, 3/4]. A class
    no pair has is 0 on every resample. Fewer than 2 questions: no interval, and why."""
    from harness.protocols.diavlo.report import class_share_intervals

    rows = [{"class": c} for c in ("Aligned", "Divergent", "Divergent", "Divergent")]
    intervals = class_share_intervals(rows)
    aligned = intervals["Aligned"]
    assert (aligned["low"], aligned["high"]) == (0.0, 0.75)
    assert (aligned["method"], aligned["unit"], aligned["n"]) == ("bootstrap", "question", 4)
    assert (
        intervals["Expanded"]["low"] is None
        and intervals["Expanded"]["reason"] == "every resample of the 4 questions gives 0"
    )
    assert class_share_intervals([{"class": "Aligned"}])["Aligned"]["reason"] == "fewer than 2 questions"


def test_binned_mi_by_hand() -> None:
    # x bins (10 bins): 0.05 -> 0, 0.15 -> 1, 0.95 -> 9; y binary.
    x = np.array([0.05, 0.05, 0.15, 0.95])
    y = np.array([0, 0, 1, 1])
    # X determines Y: I = H(Y) = ln 2.
    assert binned_mi(x, y) == pytest.approx(LN2)
    # x = (a, a, b, b), y = (0, 1, 0, 1): independent -> 0.
    assert binned_mi(np.array([0.05, 0.05, 0.95, 0.95]), np.array([0, 1, 0, 1])) == pytest.approx(0.0)
    # x = (a, a, a, b), y = (0, 0, 1, 1): H(X) = H(1/4), H(Y) = ln 2, H(X,Y) = H(1/2, 1/4, 1/4).
    hx = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    hxy = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    value = binned_mi(np.array([0.05, 0.05, 0.05, 0.95]), np.array([0, 0, 1, 1]))
    assert value == pytest.approx(hx + LN2 - hxy)  # = 0.2158 nats


def test_mi_bootstrap_on_a_constructed_case() -> None:
    # 20 pairs: similarity >= 0.6 exactly when the answer is right (balanced): I = ln 2 in every estimator.
    sim = np.r_[np.linspace(0.1, 0.3, 10), np.linspace(0.6, 0.9, 10)]
    perf = np.r_[np.zeros(10), np.ones(10)]
    binned = mutual_information(sim, perf, estimator="binned", n_resamples=200)
    assert binned.mi == pytest.approx(LN2)
    assert binned.binary_performance and binned.upper_bound == pytest.approx(LN2) and "ln 2" in binned.note
    low, high = binned.ci
    # each resample's MI is its own H(perf) <= ln 2, so the CI sits just under the ceiling
    assert 0.5 < low <= high <= LN2 + 1e-12
    knn = mutual_information(sim, perf, estimator="knn", n_resamples=100)
    # Ross' estimator on perfectly separated classes: psi(20) - psi(10) (+ a small neighbour term)
    assert knn.mi == pytest.approx(LN2, abs=0.12)
    # independence: the same similarities, performance alternating within both halves
    perf_indep = np.tile([0.0, 1.0], 10)
    assert mutual_information(sim, perf_indep, estimator="binned", n_resamples=100).mi < 0.25
    assert mutual_information(sim[:3], perf[:3]) is None
    with pytest.raises(HarnessError):
        mutual_information(sim, perf[:5])
    cont = mutual_information(sim, sim, estimator="binned", n_resamples=50)
    assert not cont.binary_performance and cont.upper_bound is None


def test_dml_recovers_a_planted_effect_and_placebo_vanishes() -> None:
    rng = np.random.default_rng(3)
    n = 240
    x = rng.normal(size=(n, 2))
    t = (rng.uniform(size=n) < 1 / (1 + np.exp(-x[:, 0]))).astype(float)  # confounded by x0
    y = 0.5 * t + np.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.3 * rng.normal(size=n)
    settings = DMLSettings(n_folds=3, n_rep=3, n_estimators=40, max_depth=2, seed=0)
    result = concept_effect("dog", y, t, x, settings)
    est = result.estimate
    assert est.ci[0] <= 0.5 <= est.ci[1]
    assert abs(est.effect - 0.5) < 0.15 and est.se > 0 and len(est.per_split) == 3
    assert est.effect == pytest.approx(float(np.median(est.per_split)))
    assert abs(result.placebo.effect) < 0.1 and result.placebo.ci[0] <= 0 <= result.placebo.ci[1]
    assert abs(result.random_common_cause.effect - est.effect) < est.se
    assert not result.inconclusive and result.reasons == ()


def test_dml_marks_low_power_inconclusive() -> None:
    y = np.array([0.0, 1, 0, 1, 0, 1, 0, 0, 1, 0])
    t = np.array([1.0, 1, 0, 0, 0, 0, 0, 0, 0, 0])
    result = concept_effect("cat", y, t, np.zeros((10, 1)), DMLSettings(n_folds=2, n_rep=2, n_estimators=5))
    assert result.inconclusive
    assert any("n=10" in r for r in result.reasons) and any("arm" in r for r in result.reasons)
    none = concept_effect("cup", y, np.zeros(10), np.zeros((10, 1)))
    assert none.estimate is None and none.inconclusive


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(dog, sitting on, couch)\n(cat; under; table)", [("dog", "sitting on", "couch"), ("cat", "under", "table")]),
        (
            "1. dog -> sitting on -> couch\n2. cat \u2192 under \u2192 table",
            [("dog", "sitting on", "couch"), ("cat", "under", "table")],
        ),
        ("- dog | on | couch", [("dog", "on", "couch")]),
        (
            'Here: [["dog", "on", "couch"], {"subject": "cat", "predicate": "under", "object": "table"}]',
            [("dog", "on", "couch"), ("cat", "under", "table")],
        ),
        ("Subject: man, Relation: holds, Object: umbrella.", [("man", "holds", "umbrella")]),
        ("<dog, on, couch> and <dog, on, couch>", [("dog", "on", "couch")]),
    ],
)
def test_parser_accepts_common_shapes(text: str, expected: list[tuple[str, str, str]]) -> None:
    parsed = parse_triplets(text)
    assert parsed.status == OK
    assert [(t.subject, t.relation, t.object) for t in parsed.triplets] == expected


def test_parser_loss_accounting() -> None:
    assert parse_triplets("   ").status == EMPTY
    assert parse_triplets(None).status == EMPTY
    assert parse_triplets("The dog is on the couch.").status == UNUSABLE
    assert parse_triplets("(dog, on)").status == UNUSABLE


def test_parser_rejects_mismatched_brackets_and_overlong_parts() -> None:
    assert parse_triplets("catic[icture and, red use> white").status == UNUSABLE
    long = "a b c d e f g h i"
    assert parse_triplets(f"({long}, on, table)").status == UNUSABLE
    assert parse_triplets("[dog, on, couch]").triplets == (Triplet("dog", "on", "couch"),)
