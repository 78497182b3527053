"""Semantic entropy of one model's responses over meaning clusters, in nats.

Protocol-neutral: it needs only each response's cluster id (see :mod:`harness.metrics.entailment_clusters`).
With P(C_j) the share of the responses in cluster C_j, SE = -sum_j P(C_j) ln P(C_j).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from harness.errors import HarnessError


def semantic_entropy(cluster_ids: Sequence[Hashable]) -> float:
    """-sum_j p_j ln p_j over the shares of a model's responses in each cluster."""
    if not cluster_ids:
        raise HarnessError("semantic_entropy: no responses")
    counts = np.array(list(Counter(cluster_ids).values()), dtype=float)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum()) + 0.0  # + 0.0 turns -0.0 into 0.0
