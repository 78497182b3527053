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

from harness.errors import HarnessError

Judge = Callable[[str, str], bool]  # entails(premise, hypothesis)


@dataclass
class ClusterResult:
    ids: list[int]  # a cluster id per input response, numbered by first appearance
    judge_calls: int


class DecisionCache:
    """The judge's decisions by (premise, hypothesis); ``calls`` counts the ones actually asked."""

    def __init__(self, judge: Judge) -> None:
        self.judge, self.cache, self.calls = judge, {}, 0

    def entails(self, a: str, b: str) -> bool:
        if (a, b) not in self.cache:
            self.calls += 1
            self.cache[(a, b)] = bool(self.judge(a, b))
        return self.cache[(a, b)]

    def mutual(self, a: str, b: str) -> bool:
        return self.entails(a, b) and self.entails(b, a)


def cluster_responses(responses: list[str], judge: Judge, rule: str = "components",
                      cache: DecisionCache | None = None) -> ClusterResult:
    """Cluster ids per response (module docstring); ``cache`` reuses decisions from earlier calls."""
    if rule not in {"components", "strict"}:
        raise HarnessError(f"clustering rule must be 'components' or 'strict', got {rule!r}")
    texts = [r.strip() for r in responses]
    unique = list(dict.fromkeys(t for t in texts if t))
    memo = cache or DecisionCache(judge)
    calls_before = memo.calls
    group: dict[str, int] = {}
    if rule == "components":
        parent = list(range(len(unique)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for i in range(len(unique)):
            for j in range(i):
                if find(i) != find(j) and memo.mutual(unique[j], unique[i]):
                    parent[find(i)] = find(j)
        group = {t: find(i) for i, t in enumerate(unique)}
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
