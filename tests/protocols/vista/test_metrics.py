"""Hand-computed VISTA figures and clustering on small entailment graphs."""

import math

import pytest
from scipy.spatial.distance import jensenshannon

from harness.errors import HarnessError
from harness.metrics.entailment_clusters import cluster_responses
from harness.protocols.vista import metrics as vista


def test_one_model_all_in_one_cluster_against_spread_peers() -> None:
    # k = 4. A: all in cluster 0; B and C: one response in each of clusters 1-4.
    assignments = {"A": [0, 0, 0, 0], "B": [1, 2, 3, 4], "C": [1, 2, 3, 4]}
    out = vista.suspicion_scores(assignments, alpha=0.5)
    # A: SE 0, confidence 0.5 * 1 + 0.5 * 4/4 = 1.
    assert out["A"]["se"] == 0.0 and out["A"]["confidence"] == 1.0
    # P_A = (1,0,0,0,0); P_avg = (1/3, 1/6 x 4). M = (2/3, 1/12 x 4).
    # JS = 0.5 KL(P_A||M) + 0.5 KL(P_avg||M) = 0.5 ln(3/2) + 0.5 [1/3 ln(1/2) + 4 (1/6) ln 2]
    js = 0.5 * math.log(1.5) + 0.5 * (1 / 3 * math.log(0.5) + 4 / 6 * math.log(2))
    assert out["A"]["divergence"] == pytest.approx(math.sqrt(js) / math.sqrt(math.log(2)))
    assert out["A"]["suspicion"] == pytest.approx(out["A"]["divergence"])
    # B: SE ln 4 -> uniformity 0; largest cluster 1/4 -> confidence 0.5 * 0.25 = 0.125
    assert out["B"]["se"] == pytest.approx(math.log(4)) and out["B"]["confidence"] == pytest.approx(0.125)
    assert out["A"]["suspicion"] > out["B"]["suspicion"]
    peers = vista.suspicion_scores(assignments, reference="peers")
    assert peers["A"]["divergence"] == pytest.approx(1.0)  # disjoint support from the peers' mean


def test_identical_models_are_not_suspicious_and_bad_input() -> None:
    same = vista.suspicion_scores({"A": [0, 1], "B": [0, 1]})
    assert same["A"]["divergence"] == pytest.approx(0.0) and same["A"]["suspicion"] == pytest.approx(0.0)
    single = vista.suspicion_scores({"A": [0], "B": [1]})
    assert single["A"]["confidence"] == 1.0  # k = 1
    with pytest.raises(HarnessError, match="no responses"):
        vista.suspicion_scores({"A": [], "B": [1]})
    with pytest.raises(HarnessError, match="reference"):
        vista.suspicion_scores({"A": [0]}, reference="others")


def test_model_level_rule() -> None:
    scores = [0.1] * 38 + [0.9, 0.7]  # 40 queries: top 5% = 2 queries -> mean 0.8
    assert vista.model_detection(scores, theta=0.6) == {"score": pytest.approx(0.8), "positive": True, "queries": 2}
    assert vista.model_detection([0.5, 0.1], theta=0.6)["positive"] is False  # top 1 query: 0.5


def test_raven_binary_is_a6_as_printed() -> None:
    # A answers once in cluster 0 and once in 1, B twice in 0, C twice in 2: the pooled majority is cluster 0
    # (3 of 6), so binarised A = (majority, other), B = (majority, majority), C = (other, other).
    assignments = {"A": [0, 1], "B": [0, 0], "C": [2, 2]}
    assert vista.binarise(assignments) == {
        "A": ["majority", "other"],
        "B": ["majority", "majority"],
        "C": ["other", "other"],
    }
    out = vista.raven_scores(assignments)  # the default reading
    assert out == vista.raven_scores(assignments, variant="binary")
    # P_avg = (1/2, 1/2) = P_A: JS_A = 0, SE_A = ln 2 nats -> S_A = 0.5 (1 - ln 2)
    assert out["A"] == pytest.approx(0.5 * (1 - math.log(2))) == pytest.approx(0.153426, abs=1e-6)
    # P_B = (1, 0), M = (3/4, 1/4): JS_B = 0.5 ln(4/3) + 0.5 [1/2 ln(2/3) + 1/2 ln 2] = 0.215762 nats,
    # squared (not in bits, not left as the distance): S_B = 0.5 JS_B^2 + 0.5 (1 - 0)
    js = 0.5 * math.log(4 / 3) + 0.25 * math.log(2 / 3) + 0.25 * math.log(2)
    assert js == pytest.approx(0.215762, abs=1e-6)
    assert out["B"] == pytest.approx(0.5 * js**2 + 0.5) == pytest.approx(0.523277, abs=1e-6)
    assert out["C"] == pytest.approx(out["B"])  # the mirror image of B
    # on the multi-cluster distributions (``literal``) C is alone in cluster 2 and scores higher than B
    literal = vista.raven_scores(assignments, variant="literal")
    assert literal["B"] == pytest.approx(out["B"]) and literal["C"] == pytest.approx(0.550644, abs=1e-6)
    # the normalised reading: JS in bits, SE / ln 2 -> A 0, B 0.5 JS / ln 2 + 0.5
    normalised = vista.raven_scores(assignments, variant="normalised")
    assert normalised["A"] == 0.0 and normalised["B"] == pytest.approx(0.5 * js / math.log(2) + 0.5)


def test_raven_literal_is_the_formula_on_multi_clusters() -> None:
    # Query 1: A and C all in cluster 0, B all in cluster 1. P_A = (1, 0), P_avg = (2/3, 1/3), M = (5/6, 1/6).
    # JS = 0.5 ln(6/5) + 0.5 [2/3 ln(4/5) + 1/3 ln 2] = 0.13230 nats; SE_A = 0 -> S = 0.5 JS^2 + 0.5.
    out = vista.raven_scores({"A": [0, 0], "B": [1, 1], "C": [0, 0]}, variant="literal")
    js = 0.5 * math.log(6 / 5) + 0.5 * (2 / 3 * math.log(4 / 5) + 1 / 3 * math.log(2))
    assert js == pytest.approx(0.132304, abs=1e-6)
    assert out["A"] == pytest.approx(0.5 * js**2 + 0.5) and out["A"] == pytest.approx(0.508752, abs=1e-6)
    # Query 2: A splits over clusters 0 and 1, B all in 0. P_A = (1/2, 1/2), P_avg = (3/4, 1/4),
    # M = (5/8, 3/8). SE_A = ln 2 nats, unnormalised: 1 - SE_A = 0.30685.
    out = vista.raven_scores({"A": [0, 1], "B": [0, 0]}, variant="literal")
    js = 0.5 * (0.5 * math.log(0.5 / 0.625) + 0.5 * math.log(0.5 / 0.375)) + 0.5 * (
        0.75 * math.log(0.75 / 0.625) + 0.25 * math.log(0.25 / 0.375)
    )
    assert out["A"] == pytest.approx(0.5 * js**2 + 0.5 * (1 - math.log(2)))
    assert out["A"] == pytest.approx(0.153998, abs=1e-6)
    # Unnormalised SE: ten answers in ten clusters give 1 - ln 10 < 0 for the second term.
    spread = vista.raven_scores({"A": list(range(10)), "B": list(range(10))}, variant="literal")
    assert spread["A"] == pytest.approx(0.5 * (1 - math.log(10)))


def test_raven_normalised_option() -> None:
    out = vista.raven_scores({"A": [0, 0], "B": [1, 1], "C": [0, 0]}, variant="normalised")
    # majority cluster 0: A binary all majority (SE 0), reference (2/3, 1/3); JS in bits
    assert out["A"] == pytest.approx(0.5 * (jensenshannon([1, 0], [2 / 3, 1 / 3], base=2) ** 2) + 0.5)
    with pytest.raises(HarnessError, match="variant must be one of binary, literal, normalised"):
        vista.raven_scores({"A": [0]}, variant="squared")


def test_clustering_rules_on_small_graphs() -> None:
    # A chain: a <-> b <-> c but not a <-> c.
    edges = {("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")}
    judge = lambda p, h: (p, h) in edges  # noqa: E731
    comps = cluster_responses(["a", "b", "c"], judge, "components")
    assert comps.ids == [0, 0, 0]
    strict = cluster_responses(["a", "b", "c"], judge, "strict")
    assert strict.ids == [0, 0, 1]
    # A clique of three: components stop asking once connected (a-b, then c joins via a).
    everything = cluster_responses(["x", "y", "z"], lambda p, h: True, "components")
    assert everything.ids == [0, 0, 0] and everything.judge_calls == 4
    # identical and empty responses need no judge
    calls = []
    same = cluster_responses(["same", " same", "", "  "], lambda p, h: calls.append(1) or True)
    assert same.ids == [0, 0, 1, 1] and same.judge_calls == 0 and not calls
    # one direction only is no edge; the reverse is not asked when the forward fails
    one_way = cluster_responses(["p", "q"], lambda p, h: p == "q")
    assert one_way.ids == [0, 1] and one_way.judge_calls == 1
    with pytest.raises(HarnessError, match="clustering rule"):
        cluster_responses(["a"], judge, "fuzzy")
