"""The structural refutation of an RK graph, on designs whose independences are known by hand."""

from __future__ import annotations

import numpy as np

from harness.protocols.diavlo.structure import OUTCOME, falsify_graph, lmc_violations, rk_graph


def _design(outcome: str, repeats: int = 30) -> dict[str, np.ndarray]:
    """The full power set of {a, b} repeated: T_a and T_b exactly uncorrelated; Y a copy of one of them."""
    a = np.tile([0.0, 1.0, 0.0, 1.0], repeats)
    b = np.tile([0.0, 0.0, 1.0, 1.0], repeats)
    return {"a": a, "b": b, OUTCOME: a.copy() if outcome == "a" else b.copy()}


def test_rk_graph_chains_end_at_the_outcome() -> None:
    # (a, on, b), (b, near, c), a self-loop and an edge closing a cycle are dropped; c is the only sink
    graph = rk_graph(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a"), ("b", "b"), ("x", "a")])
    assert graph == {"a": (), "b": ("a",), "c": ("b",), OUTCOME: ("c",)}


def test_a_graph_the_data_agree_with_is_not_falsified() -> None:
    """RK a -> b -> Y with Y = T_b. The chain's one LMC, Y _||_ T_a | T_b, holds (0 violations). Over the 5
    relabelled chains (X1 -> X2 -> X3, test X3 _||_ X1 | X2): (b, a, Y) and (Y, a, b) violate theirs, the
    other three hold, so 3/5 permutations do as well: p = 0.6, the baseline is not passed."""
    graph = rk_graph(["a", "b"], [("a", "b")])
    check = falsify_graph(graph, _design("b"))
    assert (check.n, check.violations, check.tests) == (120, 0, 1)
    assert check.p_permutation == 0.6 and not check.passes_permutation_baseline
    assert check.verdict == "not falsified"


def test_a_direct_effect_upstream_falsifies_the_chain() -> None:
    """Y = T_a: occluding a changes the answer directly, against a -> b -> Y. Its LMC is violated (1); the
    permutations violate 0, 0, 0, 0 and 1, all <= 1: p = 1.0 -> falsified."""
    graph = rk_graph(["a", "b"], [("a", "b")])
    assert lmc_violations(graph, _design("a"), 0.05) == (1, 1)
    check = falsify_graph(graph, _design("a"))
    assert check.p_permutation == 1.0 and check.verdict == "falsified"


def test_few_counterfactuals_are_inconclusive() -> None:
    check = falsify_graph(rk_graph(["a", "b"], [("a", "b")]), _design("a", repeats=4))
    assert check.n == 16 and check.verdict == "inconclusive" and "low power" in check.reason
    lone = falsify_graph(rk_graph(["a"], []), {"a": np.tile([0.0, 1.0], 60), OUTCOME: np.zeros(120)})
    assert lone.tests == 0 and lone.verdict == "inconclusive"
