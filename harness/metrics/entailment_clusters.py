"""Cluster pooled responses by bidirectional entailment, asking the judge as few times as the rule allows.

- Identical responses (after stripping whitespace) share a cluster without a judge call; empty
  responses form one cluster of their own and are never compared.
- ``components`` (default): clusters are the connected components of the mutual-entailment graph. A
  pair already in one component is never asked about; the reverse direction is asked only when the
  forward one holds.
- ``strict``: clusters are mutual-entailment cliques, built greedily in first-appearance order: a
  response joins the first cluster all of whose members it mutually entails (asking stops at the first
  failure), else it opens a new one.

Every decision is memoised by (premise, hypothesis) in a :class:`DecisionCache`, which an audit shares
across queries and re-clusterings (leave-one-peer-out), and the number of judge calls is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from harness.errors import HarnessError

#: An entailment decision ``entails(premise, hypothesis)``: a judge (:mod:`harness.judges`) or a plain function.
Entails = Callable[[str, str], bool]

#: How responses join clusters (module docstring): connected components of mutual entailment, or strict
#: cliques.
ClusteringRule = Literal["components", "strict"]
CLUSTERING_RULES: tuple[ClusteringRule, ...] = get_args(ClusteringRule)


@dataclass
class ClusterResult:
    """The clustering of one list of responses and the judge calls it cost."""

    ids: list[int]  # a cluster id per input response, numbered by first appearance
    judge_calls: int


class DecisionCache:
    """The judge's decisions by (premise, hypothesis); ``calls`` counts the ones actually asked."""

    def __init__(self, judge: Entails) -> None:
        self.judge, self.calls = judge, 0
        self.cache: dict[tuple[str, str], bool] = {}

    def entails(self, a: str, b: str) -> bool:
        """The judge's decision on (a, b), asked once and remembered."""
        found = self.cache.get((a, b))
        if found is None:
            self.calls += 1
            found = self.cache[(a, b)] = bool(self.judge(a, b))
        return found

    def mutual(self, a: str, b: str) -> bool:
        """Whether a and b entail each other (b -> a is asked only when a -> b holds)."""
        return self.entails(a, b) and self.entails(b, a)


def cluster_responses(
    responses: list[str], judge: Entails, rule: ClusteringRule = "components", cache: DecisionCache | None = None
) -> ClusterResult:
    """Cluster ids per response (module docstring); ``cache`` reuses decisions from earlier calls."""
    if rule not in CLUSTERING_RULES:
        raise HarnessError(f"clustering rule must be 'components' or 'strict', got {rule!r}")
    texts = [r.strip() for r in responses]
    unique = list(dict.fromkeys(t for t in texts if t))
    memo = cache or DecisionCache(judge)
    calls_before = memo.calls
    group: dict[str, int] = {}
    if rule == "components":
        # Each response is compared with the members of every component it is not yet part of, stopping
        # at a component's first mutual entailment; joining a second component merges the two.
        components: list[list[str] | None] = []
        for text in unique:
            home: list[str] | None = None
            for c, members in enumerate(components):
                if members is None or members is home or not any(memo.mutual(m, text) for m in members):
                    continue
                if home is None:
                    members.append(text)
                    home = members
                else:
                    home.extend(members)
                    components[c] = None
            if home is None:
                components.append([text])
        group = {t: c for c, members in enumerate(components) if members is not None for t in members}
    else:
        clusters: list[list[str]] = []
        for text in unique:
            for k, members in enumerate(clusters):
                if all(memo.mutual(m, text) for m in members):
                    members.append(text)
                    group[text] = k
                    break
            else:
                clusters.append([text])
                group[text] = len(clusters) - 1
    numbering: dict[object, int] = {}
    ids = []
    for t in texts:
        key = ("empty",) if not t else group[t]
        ids.append(numbering.setdefault(key, len(numbering)))
    return ClusterResult(ids, memo.calls - calls_before)
