"""VISTA scoring: semantic entropy, confidence, divergence and the suspicion score, on plain data.

For one query, ``assignments`` maps each model M_i to the global cluster ids of its k responses (the
clusters come from pooling all m x k responses, see :mod:`harness.metrics.entailment_clusters`).

- P(C_j | M_i) = |R_Mi intersect C_j| / k.
- Semantic entropy SE_i = -sum_j P(C_j|M_i) ln P(C_j|M_i) (natural log; :mod:`harness.metrics.entropy`).
- Confidence_i = alpha (1 - SE_i / ln k) + (1 - alpha) |R_Mi intersect C_max| / k, C_max the model's own
  largest cluster. With k = 1 the entropy term is taken as 1 (a single answer is maximally uniform).
- Divergence_i = sqrt(JS(P_Mi || P_avg)) / sqrt(ln 2), JS with natural logs (scipy's Jensen-Shannon
  distance), P_avg the mean of all m models' distributions (``reference="all"``) or of the other models'
  (``reference="peers"``). Divergence lies in [0, 1].
- Suspicion S_i = Confidence_i x Divergence_i; a (model, query) is flagged when S >= theta.
- Model-level detection: the mean S over a model's top 5% queries (at least one), positive above theta.
- RAVEN baseline (appendix A.6): S^RAVEN_{M,q} = w1 JS^2(P_M || P_avg) + w2 (1 - SE_M), w1 = w2 = 0.5 by
  default (the paper gives no weights), JS the natural-log Jensen-Shannon divergence (as in Divergence
  above) and SE_M the semantic entropy in nats. The appendix computes it "using binary entailment": each
  response is in the pooled majority cluster or not (``binarise``). Three readings, ``RAVEN_VARIANTS``:
  - ``binary`` (default), as printed: the formula on the binarised clusters, so JS^2 lies in
    [0, (ln 2)^2] and 1 - SE_M in [1 - ln 2, 1].
  - ``literal``: the same formula on VISTA's multi-cluster distributions (Table 7's "multi-cluster x
    weighted sum"); the second term turns negative once SE_M exceeds 1 nat, e.g. ten answers in ten
    clusters.
  - ``normalised``: binarised clusters, JS in bits (the square of the base-2 Jensen-Shannon distance,
    not squared again) and SE_bin / ln 2, so both terms lie in [0, 1].
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar, get_args

import numpy as np
from scipy.special import rel_entr

from harness.errors import HarnessError
from harness.metrics.entropy import semantic_entropy

M = TypeVar("M", bound=Hashable)  # a model's key

#: The divergence reference: the mean distribution of all models, or of each model's peers (itself left out).
Reference = Literal["all", "peers"]
REFERENCES: tuple[Reference, ...] = get_args(Reference)


def _distributions(assignments: Mapping[M, Sequence[Hashable]]) -> tuple[list[M], dict[Hashable, int], np.ndarray]:
    clusters = sorted({c for ids in assignments.values() for c in ids}, key=str)
    index = {c: j for j, c in enumerate(clusters)}
    models = list(assignments)
    dist = np.zeros((len(models), len(clusters)))
    for i, model in enumerate(models):
        ids = assignments[model]
        if not ids:
            raise HarnessError(f"suspicion_scores: model {model!r} has no responses for this query")
        for c in ids:
            dist[i, index[c]] += 1 / len(ids)
    return models, index, dist


def _js(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """JS(p || q) row-wise in nats, clamped at 0 so that rounding on identical distributions gives 0
    rather than -1e-17 (whose square root would be NaN)."""
    m = (p + q) / 2
    js: np.ndarray = np.clip(0.5 * rel_entr(p, m).sum(axis=-1) + 0.5 * rel_entr(q, m).sum(axis=-1), 0.0, None)
    return js


def _divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """sqrt(JS(p || q) / ln 2) row-wise: VISTA's Divergence, in [0, 1]."""
    return np.sqrt(_js(p, q) / math.log(2))


def suspicion_scores(
    assignments: Mapping[M, Sequence[Hashable]], alpha: float = 0.5, reference: Reference = "all"
) -> dict[M, dict[str, float]]:
    """{model: {"se", "confidence", "divergence", "suspicion"}} for one query (module docstring)."""
    if reference not in REFERENCES:
        raise HarnessError(f"suspicion_scores: reference must be 'all' or 'peers', got {reference!r}")
    if not 0 <= alpha <= 1:
        raise HarnessError(f"suspicion_scores: alpha must lie in [0, 1], got {alpha}")
    models, _, dist = _distributions(assignments)
    k = np.array([len(assignments[m]) for m in models], dtype=float)
    se = -rel_entr(dist, 1.0).sum(axis=1) + 0.0  # -sum p ln p; + 0.0 turns -0.0 into 0.0
    uniformity = np.where(k == 1, 1.0, 1 - se / np.log(np.maximum(k, 2)))
    confidence = alpha * uniformity + (1 - alpha) * dist.max(axis=1)
    if reference == "all":
        ref = np.broadcast_to(dist.mean(axis=0), dist.shape)
    else:
        if len(models) < 2:
            raise HarnessError("suspicion_scores: reference='peers' needs at least two models")
        ref = (dist.sum(axis=0) - dist) / (len(models) - 1)
    divergence = _divergence(dist, ref)
    return {
        model: {
            "se": float(se[i]),
            "confidence": float(confidence[i]),
            "divergence": float(divergence[i]),
            "suspicion": float(confidence[i] * divergence[i]),
        }
        for i, model in enumerate(models)
    }


def model_detection(
    suspicion_by_query: Sequence[float], theta: float = 0.6, top_fraction: float = 0.05
) -> dict[str, float | bool]:
    """Mean S over the model's top ``top_fraction`` queries (at least one); positive when above theta."""
    if not suspicion_by_query:
        raise HarnessError("model_detection: no queries")
    top = sorted(suspicion_by_query, reverse=True)[: max(1, math.ceil(top_fraction * len(suspicion_by_query)))]
    score = float(np.mean(top))
    return {"score": score, "positive": score > theta, "queries": len(top)}


RavenVariant = Literal["binary", "literal", "normalised"]
RAVEN_VARIANTS: tuple[RavenVariant, ...] = get_args(RavenVariant)


def binarise(assignments: Mapping[M, Sequence[Hashable]]) -> dict[M, list[str]]:
    """Each response as in the pooled majority cluster or not: RAVEN's binary entailment (ties go to the
    cluster met first)."""
    majority = Counter(c for ids in assignments.values() for c in ids).most_common(1)[0][0]
    return {m: ["majority" if c == majority else "other" for c in ids] for m, ids in assignments.items()}


def raven_scores(
    assignments: Mapping[M, Sequence[Hashable]], w1: float = 0.5, w2: float = 0.5, variant: RavenVariant = "binary"
) -> dict[M, float]:
    """S^RAVEN per model for one query, w1 JS^2(P_M || P_avg) + w2 (1 - SE_M), in the reading ``variant``
    (module docstring: ``binary`` as printed in appendix A.6, ``literal`` on the multi-cluster
    distributions, or ``normalised`` to [0, 1])."""
    if variant not in RAVEN_VARIANTS:
        raise HarnessError(f"raven_scores: variant must be one of {', '.join(RAVEN_VARIANTS)}, got {variant!r}")
    clusters = assignments if variant == "literal" else binarise(assignments)
    models, _, dist = _distributions(clusters)
    js = _js(dist, dist.mean(axis=0))
    if variant == "normalised":
        return {
            m: float(w1 * js[i] / math.log(2) + w2 * (1 - semantic_entropy(clusters[m]) / math.log(2)))
            for i, m in enumerate(models)
        }
    return {m: float(w1 * js[i] ** 2 + w2 * (1 - semantic_entropy(clusters[m]))) for i, m in enumerate(models)}
