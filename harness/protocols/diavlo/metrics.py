"""DiaVLo behaviour specifications: triplets, best-match pairing, behaviour classes and the
performance link (bootstrapped mutual information).

A behaviour specification is a set of (subject, relation, object) triplets. SK (SHOULD-KNOW) is the
curated set for an image-question pair, RK (REALLY-KNOW) the set extracted from the model's own
rationale. Definitions:

- Each triplet is embedded as the sentence "subject relation object" (any encoder with a
  ``matrix(texts)`` method returning unit rows; offline default all-MiniLM-L6-v2), and
  S[i, j] = cos(RK_i, SK_j).
- Iterative best-match pairing: take the largest remaining S[i, j], pair RK_i with SK_j, remove row i
  and column j, repeat until one side is exhausted (min(|RK|, |SK|) pairs; ties go to the lowest
  (i, j)). The pair similarity is sim = mean of S over the matched pairs.
- Classes (thresholds tau_a = 0.75, tau_e = 0.35, tau_d = 0.35 by default, all configurable):
  Divergent if sim < tau_d; Expanded if |RK| > |SK| and sim >= tau_e; Aligned if |RK| <= |SK| and
  sim >= tau_a. Whatever none of these rules covers (with the defaults: |RK| <= |SK| and
  0.35 <= sim < 0.75, the region the paper leaves unnamed) is its own class, ``Unnamed``.
  A pair with no RK (or no SK) triplet has no similarity and no class; it is counted as a loss.
- Performance link: I(sim; perf) in nats, estimated by sklearn's nearest-neighbour estimators
  (Ross 2014 for discrete perf, Kraskov et al. 2004 for continuous perf) or, as an option, the
  plug-in estimate on equal-width bins; 95% percentile CI over pairs resampled with replacement.
  For binary performance I <= H(perf) <= ln 2 (about 0.693 nats).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

import numpy as np

from harness.errors import HarnessError
from harness.extras import require
from harness.metrics.bootstrap import as_pair, cluster_interval
from harness.protocols.diavlo.rows import UNIT
from harness.results.interval import Interval

ALIGNED, EXPANDED, DIVERGENT, UNNAMED = "Aligned", "Expanded", "Divergent", "Unnamed"
CLASSES = (ALIGNED, EXPANDED, DIVERGENT, UNNAMED)
LN2 = math.log(2)
LN2_NOTE = (
    "performance is binary, so I(similarity; performance) <= H(performance) <= ln 2 = 0.693 nats; "
    "compare the estimate with that ceiling, not with 1"
)


@dataclass(frozen=True)
class Triplet:
    """One (subject, relation, object) triplet of a behaviour specification (SK or RK)."""

    subject: str
    relation: str
    object: str

    def text(self) -> str:
        """The sentence that is embedded: ``subject relation object``."""
        return " ".join(part for part in (self.subject, self.relation, self.object) if part)

    def as_dict(self) -> dict[str, str]:
        """The triplet as a JSON object."""
        return {"subject": self.subject, "relation": self.relation, "object": self.object}


class Encoder(Protocol):
    """What the similarity needs of a sentence encoder: unit-norm embedding rows for a list of texts."""

    def matrix(self, texts: list[str]) -> np.ndarray:
        """One unit-norm embedding row per text."""


@dataclass(frozen=True)
class Thresholds:
    """tau_a (Aligned), tau_e (Expanded) and tau_d (Divergent) of the class rules."""

    tau_a: float = 0.75
    tau_e: float = 0.35
    tau_d: float = 0.35

    def __post_init__(self) -> None:
        if not all(-1 <= t <= 1 for t in (self.tau_a, self.tau_e, self.tau_d)):
            raise HarnessError(f"class thresholds must lie in [-1, 1], got {self}")


@dataclass(frozen=True)
class Pairing:
    """Matched (rk_index, sk_index, cosine) triples in the order they were picked, and sim."""

    pairs: tuple[tuple[int, int, float], ...]
    similarity: float | None


def similarity_matrix(rk: Sequence[Triplet], sk: Sequence[Triplet], encoder: Encoder) -> np.ndarray:
    """S[i, j] = cosine of RK_i and SK_j (the encoder returns unit rows)."""
    if not rk or not sk:
        return np.zeros((len(rk), len(sk)))
    cosines: np.ndarray = encoder.matrix([t.text() for t in rk]) @ encoder.matrix([t.text() for t in sk]).T
    return cosines


def best_match(sim: np.ndarray) -> Pairing:
    """Iterative best-match pairing of a |RK| x |SK| cosine matrix (module docstring)."""
    sim = np.asarray(sim, dtype=float)
    if sim.ndim != 2:
        raise HarnessError(f"the similarity matrix must be 2-D, got shape {sim.shape}")
    rows, cols = list(range(sim.shape[0])), list(range(sim.shape[1]))
    pairs: list[tuple[int, int, float]] = []
    while rows and cols:
        sub = sim[np.ix_(rows, cols)]
        r, c = np.unravel_index(int(np.argmax(sub)), sub.shape)  # first maximum in row-major order
        pairs.append((rows[r], cols[c], float(sub[r, c])))
        del rows[r], cols[c]
    similarity = float(np.mean([p[2] for p in pairs])) if pairs else None
    return Pairing(tuple(pairs), similarity)


def behaviour_class(
    n_rk: int, n_sk: int, similarity: float | None, thresholds: Thresholds = Thresholds()
) -> str | None:
    """The class of one pair (module docstring); None when either set is empty."""
    if n_rk == 0 or n_sk == 0 or similarity is None:
        return None
    if similarity < thresholds.tau_d:
        return DIVERGENT
    if n_rk > n_sk and similarity >= thresholds.tau_e:
        return EXPANDED
    if n_rk <= n_sk and similarity >= thresholds.tau_a:
        return ALIGNED
    return UNNAMED


def class_shares(labels: Sequence[str | None]) -> dict[str, Any]:
    """Share of each class among classified pairs, plus the count of unclassified ones."""
    counts = Counter(label for label in labels if label is not None)
    total = sum(counts.values())
    return {
        "n": total,
        "unclassified": sum(label is None for label in labels),
        **{c: (counts[c] / total if total else None) for c in CLASSES},
        "counts": {c: counts[c] for c in CLASSES},
    }


def _entropy(labels: np.ndarray) -> float:
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def binned_mi(x: np.ndarray, y: np.ndarray, bins: int = 10, y_bins: int | None = None) -> float:
    """Plug-in I(X; Y) in nats: X on ``bins`` equal-width bins over [0, 1] (values clipped), Y as is
    when it has at most two values, else on ``y_bins`` (default ``bins``) equal-width bins over [0, 1].
    I = H(X) + H(Y) - H(X, Y)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    bx = np.minimum((np.clip(x, 0, 1) * bins).astype(int), bins - 1)
    if len(np.unique(y)) <= 2:
        by = y
    else:
        nb = y_bins or bins
        by = np.minimum((np.clip(y, 0, 1) * nb).astype(int), nb - 1).astype(float)
    joint = bx.astype(float) * 1e6 + by
    return max(0.0, _entropy(bx) + _entropy(by) - _entropy(joint))


def knn_mi(x: np.ndarray, y: np.ndarray, n_neighbors: int = 3, seed: int = 0) -> float:
    """Nearest-neighbour I(X; Y) in nats via sklearn (Ross 2014 when Y is binary, else KSG)."""
    require("sklearn", "diavlo", "DiaVLo's kNN mutual information")
    from sklearn.feature_selection import mutual_info_classif, mutual_info_regression  # the [diavlo] extra

    x = np.asarray(x, dtype=float).reshape(-1, 1)
    y = np.asarray(y, dtype=float)
    if len(np.unique(y)) <= 2:
        return float(mutual_info_classif(x, y.astype(int), n_neighbors=n_neighbors, random_state=seed)[0])
    return float(mutual_info_regression(x, y, n_neighbors=n_neighbors, random_state=seed)[0])


#: How I(sim; perf) is estimated: nearest-neighbour (:func:`knn_mi`) or plug-in on equal-width bins
#: (:func:`binned_mi`).
MiEstimator = Literal["knn", "binned"]
MI_ESTIMATORS: tuple[MiEstimator, ...] = get_args(MiEstimator)


@dataclass(frozen=True)
class MIResult:
    """I(sim; perf) in nats with its bootstrap 95% interval over pairs (the paper's bootstrapped MI), the pair
    count and estimator, and for binary performance the ln 2 ceiling the estimate should be read against."""

    mi: float
    interval: Interval
    n: int
    estimator: MiEstimator
    binary_performance: bool
    upper_bound: float | None
    note: str

    @property
    def ci(self) -> tuple[float, float] | None:
        """The interval's ends, None without one."""
        return as_pair(self.interval)

    def as_dict(self) -> dict[str, Any]:
        """The estimate as JSON-ready values (``mi_nats``, ``ci95`` and its ``interval``, ``upper_bound_nats``)."""
        return {
            "mi_nats": self.mi,
            "ci95": list(self.ci) if self.ci else None,
            "interval": self.interval.model_dump(),
            "n": self.n,
            "estimator": self.estimator,
            "binary_performance": self.binary_performance,
            "upper_bound_nats": self.upper_bound,
            "note": self.note,
        }


def mutual_information(
    similarity: Sequence[float],
    performance: Sequence[float],
    estimator: MiEstimator = "knn",
    n_resamples: int = 1000,
    seed: int = 0,
    bins: int = 10,
    n_neighbors: int = 3,
) -> MIResult | None:
    """I(sim; perf) with a pair-bootstrap 95% CI; None with fewer than 4 pairs (nothing to estimate)."""
    x, y = np.asarray(similarity, dtype=float), np.asarray(performance, dtype=float)
    if x.shape != y.shape:
        raise HarnessError(f"similarity and performance differ in length ({len(x)} vs {len(y)})")
    if estimator not in MI_ESTIMATORS:
        raise HarnessError(f"unknown MI estimator {estimator!r} (knn or binned)")
    if len(x) < 4:
        return None

    def figure(idx: np.ndarray) -> float | None:
        xs, ys = x[idx], y[idx]
        if len(np.unique(ys)) < 2 or len(np.unique(xs)) < 2:
            return 0.0
        if estimator == "binned":
            return binned_mi(xs, ys, bins)
        return knn_mi(xs, ys, n_neighbors=min(n_neighbors, len(xs) - 1), seed=seed)

    binary = len(np.unique(y)) <= 2
    point = figure(np.arange(len(x)))
    interval = cluster_interval(len(x), figure, UNIT.name, "bootstrap", n_resamples=n_resamples, seed=seed)
    note = LN2_NOTE if binary else "performance is continuous; MI has no fixed ceiling"
    return MIResult(float(point or 0.0), interval, len(x), estimator, binary, LN2 if binary else None, note)
