"""The structural refutation of a REALLY-KNOW specification read as a causal graph.

The paper tests whether the RK specification, used as a causal graph, is falsified by the counterfactual
data, beside the baseline permutation test, and finds it not falsified with about 100 or more
counterfactuals and inconclusive (low power) below. The graph of one pair: a node ``T_c`` per boxed RK
concept (1 when the design occludes it) and the outcome ``Y``; each RK triplet (s, r, o) gives
``T_s -> T_o``, and each concept with no outgoing edge (the end of a rationale chain) gives ``-> Y``.

- Local Markov conditions (LMC): every node is independent of each of its non-descendants (parents
  excluded) given its parents; each is tested by the partial correlation's Fisher z test at ``alpha``.
  ``Y``'s conditions are the graph's real claim: occluding a concept upstream in the rationale changes
  the answer only through the concepts downstream of it.
- Baseline permutation test: the same count of violated LMCs on the graph with its node labels permuted
  (all permutations when there are at most ``n_permutations``, else a seeded sample);
  ``p_permutation`` is the share of permuted graphs violating no more LMCs than the given one, and the
  graph passes the baseline when ``p_permutation <= alpha``.
- Verdict: ``inconclusive`` with fewer than ``min_rows`` counterfactuals (the paper's ~100) or no testable
  LMC; ``falsified`` when the graph violates an LMC and is no better than its permutations
  (``p_permutation > alpha``); else ``not falsified``.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

OUTCOME = "Y"


def rk_graph(concepts: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """The parents of every node: ``T_s -> T_o`` per RK edge among ``concepts`` (self-loops and edges that
    would close a cycle are dropped), and the concepts without outgoing edge -> ``Y``."""
    parents: dict[str, list[str]] = {c: [] for c in concepts}
    for s, o in edges:
        if s in parents and o in parents and s != o and s not in parents[o] and not _reaches(parents, s, o):
            parents[o].append(s)
    has_child = {p for ps in parents.values() for p in ps}
    return {**{c: tuple(ps) for c, ps in parents.items()}, OUTCOME: tuple(c for c in concepts if c not in has_child)}


def _reaches(parents: Mapping[str, Sequence[str]], start: str, target: str) -> bool:
    """Whether ``target`` is an ancestor of ``start``: then an edge ``start -> target`` would close a cycle."""
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(parents.get(node, ()))
    return False


def _descendants(parents: Mapping[str, Sequence[str]], node: str) -> set[str]:
    children: dict[str, set[str]] = {n: set() for n in parents}
    for child, ps in parents.items():
        for p in ps:
            children[p].add(child)
    out: set[str] = set()
    stack = [node]
    while stack:
        for c in children[stack.pop()] - out:
            out.add(c)
            stack.append(c)
    return out


def partial_correlation_p(x: np.ndarray, z: np.ndarray, given: np.ndarray) -> float:
    """Fisher z p-value of corr(x, z | given); 1.0 when either residual is constant (nothing varies)."""
    design = np.column_stack([np.ones(len(x)), given]) if given.size else np.ones((len(x), 1))
    rx = x - design @ np.linalg.lstsq(design, x, rcond=None)[0]
    rz = z - design @ np.linalg.lstsq(design, z, rcond=None)[0]
    if rx.std() < 1e-9 or rz.std() < 1e-9:
        return 1.0
    r = float(np.clip(np.corrcoef(rx, rz)[0, 1], -1 + 1e-12, 1 - 1e-12))
    dof = len(x) - design.shape[1] - 2
    if dof < 1:
        return 1.0
    stat = abs(0.5 * math.log((1 + r) / (1 - r))) * math.sqrt(dof)
    return math.erfc(stat / math.sqrt(2))


def lmc_violations(
    parents: Mapping[str, Sequence[str]], data: Mapping[str, np.ndarray], alpha: float
) -> tuple[int, int]:
    """(violated, tested) local Markov conditions of the graph on ``data`` (module docstring)."""
    violated = tested = 0
    for node, ps in parents.items():
        others = set(parents) - _descendants(parents, node) - set(ps) - {node}
        given = np.column_stack([data[p] for p in ps]) if ps else np.zeros((len(data[node]), 0))
        for other in sorted(others):
            tested += 1
            violated += partial_correlation_p(data[node], data[other], given) < alpha
    return violated, tested


@dataclass(frozen=True)
class StructureCheck:
    """One pair's structural refutation (module docstring)."""

    n: int
    violations: int
    tests: int
    p_permutation: float | None
    passes_permutation_baseline: bool
    verdict: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        """The check as audit.json stores it."""
        return {
            "n": self.n,
            "violations": self.violations,
            "tests": self.tests,
            "p_permutation": self.p_permutation,
            "passes_permutation_baseline": self.passes_permutation_baseline,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def falsify_graph(
    parents: Mapping[str, Sequence[str]],
    data: Mapping[str, np.ndarray],
    alpha: float = 0.05,
    n_permutations: int = 100,
    min_rows: int = 100,
    seed: int = 0,
) -> StructureCheck:
    """The LMC test of the graph, its baseline permutation test and the verdict (module docstring)."""
    nodes = list(parents)
    n = len(data[nodes[0]]) if nodes else 0
    violations, tests = lmc_violations(parents, data, alpha)
    if math.factorial(len(nodes)) - 1 <= n_permutations:
        perms = [p for p in itertools.permutations(nodes) if list(p) != nodes]
    else:
        rng = random.Random(seed)
        perms = [tuple(rng.sample(nodes, len(nodes))) for _ in range(n_permutations)]
    permuted = []
    for perm in perms:
        rename = dict(zip(nodes, perm, strict=True))
        graph = {rename[node]: tuple(rename[p] for p in ps) for node, ps in parents.items()}
        permuted.append(lmc_violations(graph, data, alpha)[0])
    p_perm = sum(v <= violations for v in permuted) / len(permuted) if permuted else None
    passes = p_perm is not None and p_perm <= alpha
    if n < min_rows or tests == 0:
        why = f"n={n} < {min_rows}: low power" if n < min_rows else "the graph implies no testable independence"
        return StructureCheck(n, violations, tests, p_perm, passes, "inconclusive", why)
    if violations and (p_perm is None or p_perm > alpha):
        return StructureCheck(
            n,
            violations,
            tests,
            p_perm,
            passes,
            "falsified",
            f"violates {violations}/{tests} LMCs, no fewer than its permutations",
        )
    return StructureCheck(n, violations, tests, p_perm, passes, "not falsified", f"violates {violations}/{tests} LMCs")
