"""Concept-level causal effects by double machine learning, with refutations.

Per concept c the partially linear model Y = theta * T + g(X) + e, T = m(X) + v is fitted with
doubleml's ``DoubleMLPLR`` (score "partialling out"), both nuisances (ml_l: E[Y|X], ml_m: E[T|X])
being sklearn gradient-boosted trees. Y is the change of the model's output on a counterfactual image
(correctness flip or embedding distance to the original answer), T = 1 when c is occluded in it, X the
rest of the occlusion design (how many other concepts are occluded, the occluded area they cover, the
pair's concept count, whether the original answer was correct). Sample splitting is drawn from a seeded
generator and repeated ``n_rep`` times, 100 by default: the paper reports medians over n = 100 random
data splits (``QUICK_REPS`` = 5 for a quick look). doubleml reports theta as the median over
repetitions and the SE by its median aggregation, and the 95% CI is theta +- 1.96 SE.

Speed: the repetitions are independent, so their nuisance fits (the cost) run in ``n_jobs`` threads
(sklearn's tree building releases the GIL; processes would have to re-import doubleml and may not
fork safely beside torch), each thread a ``DoubleMLPLR`` over a consecutive block of
the splits; one ``DoubleMLPLR`` over all splits then takes those out-of-fold predictions as
``external_predictions`` and does the scores and the aggregation itself. The learners are seeded, so
the result does not depend on ``n_jobs``.

Refutations, shown beside each estimate:
- placebo: T randomly permuted (the effect must vanish);
- random common cause: an independent N(0, 1) column added to X (the effect must not move).

Inconclusive rule (any one suffices, reasons listed): fewer than ``min_obs`` rows; fewer than
``min_arm`` occluded or non-occluded rows; the placebo's 95% CI excludes 0; the random common cause
moves theta by more than one SE.
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.extras import require
from harness.results.interval import Interval

Z95 = 1.959963984540054
PAPER_REPS = 100  # "median estimates over n = 100 random data splits"
QUICK_REPS = 5
DML_UNIT = "counterfactual"  # a DML row: one occlusion design of one pair


@dataclass(frozen=True)
class DMLSettings:
    """Cross-fitting (folds, repetitions, seed, threads; ``n_jobs`` 0 = one per CPU), the gradient-boosted
    nuisances' settings, and the row counts below which an effect is inconclusive (module docstring)."""

    n_folds: int = 3
    n_rep: int = PAPER_REPS
    n_jobs: int = 0
    n_estimators: int = 60
    max_depth: int = 2
    learning_rate: float = 0.1
    seed: int = 0
    min_obs: int = 20
    min_arm: int = 5


@dataclass(frozen=True)
class Estimate:
    """theta (median over splits), its SE, 95% CI, p-value, and each split's theta."""

    effect: float
    se: float
    ci: tuple[float, float]
    p_value: float
    per_split: tuple[float, ...]

    def as_dict(self, n: int = 0) -> dict[str, Any]:
        """The estimate as JSON-ready values: the CI as ``ci95``, and as ``interval`` (method ``dml``, over
        the ``n`` counterfactual rows the estimate rests on)."""
        return {
            "effect": self.effect,
            "se": self.se,
            "ci95": list(self.ci),
            "interval": Interval.of(*self.ci, method="dml", n=n, unit=DML_UNIT).model_dump(),
            "p_value": self.p_value,
            "per_split": list(self.per_split),
        }


@dataclass(frozen=True)
class ConceptEffect:
    """One concept's DML estimate with its placebo and random-common-cause refutations, its row and
    occluded-row counts, and whether (and why) it is inconclusive."""

    concept: str
    n: int
    n_treated: int
    estimate: Estimate | None
    placebo: Estimate | None
    random_common_cause: Estimate | None
    inconclusive: bool
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """The effect and its refutations as JSON-ready values."""
        return {
            "concept": self.concept,
            "n": self.n,
            "n_treated": self.n_treated,
            "estimate": self.estimate.as_dict(self.n) if self.estimate else None,
            "placebo": self.placebo.as_dict(self.n) if self.placebo else None,
            "random_common_cause": self.random_common_cause.as_dict(self.n) if self.random_common_cause else None,
            "inconclusive": self.inconclusive,
            "reasons": list(self.reasons),
        }


def _splits(n: int, settings: DMLSettings, rng: np.random.Generator) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    require("sklearn", "diavlo", "DiaVLo's cross-fitting")
    from sklearn.model_selection import KFold  # the [diavlo] extra

    out = []
    for _ in range(settings.n_rep):
        folds = KFold(settings.n_folds, shuffle=True, random_state=int(rng.integers(2**31 - 1)))
        out.append([(train, test) for train, test in folds.split(np.zeros(n))])
    return out


def _plr(
    y: np.ndarray,
    t: np.ndarray,
    x: np.ndarray,
    settings: DMLSettings,
    splits: list[list[tuple[np.ndarray, np.ndarray]]],
) -> Any:
    """An unfitted DoubleMLPLR on these splits, both nuisances gradient-boosted trees with fixed seeds."""
    from doubleml import DoubleMLData, DoubleMLPLR  # the [diavlo] extra
    from sklearn.ensemble import GradientBoostingRegressor

    def trees(seed: int) -> GradientBoostingRegressor:
        return GradientBoostingRegressor(
            n_estimators=settings.n_estimators,
            max_depth=settings.max_depth,
            learning_rate=settings.learning_rate,
            random_state=seed,
        )

    model = DoubleMLPLR(
        DoubleMLData.from_arrays(x, y, t),
        trees(settings.seed),
        trees(settings.seed + 1),
        n_folds=settings.n_folds,
        n_rep=len(splits),
        draw_sample_splitting=False,
    )
    model.set_sample_splitting(splits)
    return model


def _nuisance_predictions(
    y: np.ndarray,
    t: np.ndarray,
    x: np.ndarray,
    settings: DMLSettings,
    splits: list[list[tuple[np.ndarray, np.ndarray]]],
) -> dict[str, np.ndarray]:
    """Out-of-fold predictions of both nuisances (columns = repetitions) over a block of the splits.
    sklearn's per-tree input checks are skipped (a quarter of the time; the inputs are checked once in
    :func:`dml_estimate`); the config is per thread, so it is set here."""
    from sklearn import config_context  # the [diavlo] extra

    model = _plr(y, t, x, settings, splits)
    with (
        np.errstate(divide="ignore", invalid="ignore"),
        config_context(assume_finite=True, skip_parameter_validation=True),
    ):
        model.fit()
    return {name: np.asarray(model.predictions[name])[:, :, 0] for name in ("ml_l", "ml_m")}


def dml_estimate(y: np.ndarray, t: np.ndarray, x: np.ndarray, settings: DMLSettings = DMLSettings()) -> Estimate:
    """Theta of the partially linear model (module docstring) by DoubleMLPLR, repetitions in threads."""
    require("doubleml", "diavlo", "DiaVLo's concept effects")
    y, t, x = np.asarray(y, float), np.asarray(t, float), np.asarray(x, float)
    if x.ndim == 1:
        x = x.reshape(-1, 1)
    if not len(y) == len(t) == len(x):
        raise HarnessError(f"y, t and x differ in length ({len(y)}, {len(t)}, {len(x)})")
    if len(y) < 2 * settings.n_folds:
        raise HarnessError(f"DML needs at least {2 * settings.n_folds} rows, got {len(y)}")
    if not (np.isfinite(y).all() and np.isfinite(t).all() and np.isfinite(x).all()):
        raise HarnessError("DML needs finite outcomes, treatments and covariates (NaN or inf found)")
    if settings.n_rep < 1 or settings.n_jobs < 0:
        raise HarnessError(f"DML needs n_rep >= 1 and n_jobs >= 0, got {settings.n_rep} and {settings.n_jobs}")

    splits = _splits(len(y), settings, np.random.default_rng(settings.seed))
    jobs = min(settings.n_jobs or os.cpu_count() or 1, len(splits))
    bounds = [int(b) for b in np.linspace(0, len(splits), jobs + 1)]
    with ThreadPoolExecutor(jobs) as pool:
        blocks = list(
            pool.map(
                lambda lo_hi: _nuisance_predictions(y, t, x, settings, splits[lo_hi[0] : lo_hi[1]]),
                itertools.pairwise(bounds),
            )
        )
    predictions = {name: np.concatenate([b[name] for b in blocks], axis=1) for name in ("ml_l", "ml_m")}
    model = _plr(y, t, x, settings, splits)
    with np.errstate(divide="ignore", invalid="ignore"):  # a deterministic outcome has SE 0 (p-value NaN)
        model.fit(external_predictions={"d": predictions})
        effect, se, p_value = float(model.coef[0]), float(model.se[0]), float(model.pval[0])
    return Estimate(
        effect,
        se,
        (effect - Z95 * se, effect + Z95 * se),
        p_value,
        tuple(float(v) for v in np.asarray(model.all_coef).ravel()),
    )


def concept_effect(
    concept: str, y: np.ndarray, t: np.ndarray, x: np.ndarray, settings: DMLSettings = DMLSettings()
) -> ConceptEffect:
    """The DML estimate of one concept with its placebo and random-common-cause refutations."""
    y, t, x = np.asarray(y, float), np.asarray(t, float), np.asarray(x, float).reshape(len(y), -1)
    n, n_treated = len(y), int((t > 0.5).sum())
    reasons = []
    if n < settings.min_obs:
        reasons.append(f"n={n} < {settings.min_obs}")
    if min(n_treated, n - n_treated) < settings.min_arm:
        reasons.append(f"occluded {n_treated} / not occluded {n - n_treated}: an arm has < {settings.min_arm}")
    if n < 2 * settings.n_folds or n_treated in (0, n):
        return ConceptEffect(
            concept,
            n,
            n_treated,
            None,
            None,
            None,
            True,
            (*reasons, "too few rows or no treatment variation to estimate"),
        )
    rng = np.random.default_rng(settings.seed + 7)
    estimate = dml_estimate(y, t, x, settings)
    placebo = dml_estimate(y, rng.permutation(t), x, settings)
    rcc = dml_estimate(y, t, np.column_stack([x, rng.standard_normal(n)]), settings)
    if placebo.ci[0] > 0 or placebo.ci[1] < 0:
        reasons.append(f"placebo effect {placebo.effect:.3f} has a 95% CI excluding 0")
    if abs(rcc.effect - estimate.effect) > estimate.se:
        reasons.append(f"random common cause moves the effect by {abs(rcc.effect - estimate.effect):.3f} > 1 SE")
    return ConceptEffect(concept, n, n_treated, estimate, placebo, rcc, bool(reasons), tuple(reasons))
