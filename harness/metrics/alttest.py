"""The alternative annotator test (alt-test; Calderon, Reichart and Dror, 2025).

Can an LLM judge replace a human annotator? For every human h (leave-one-out), on each instance i
that h annotated, score the LLM's label and h's label against the labels of the *other* humans on i
(``scoring``: accuracy = share of the others that agree; neg_rmse = minus the root mean squared
difference). The LLM wins instance i when its score is >= h's; h wins when h's score is >= the LLM's
(a tie is a win for both). With W_f, W_h the 0/1 win indicators and d_i = W_h,i - W_f,i:

- rho_f = mean(W_f) (the LLM's win rate against h), rho_h = mean(W_h);
- H0: mean(d) >= epsilon vs H1: mean(d) < epsilon, a one-sided one-sample t-test per annotator;
- the p-values of all tested annotators are corrected with Benjamini-Yekutieli at ``q_fdr``
  (statsmodels' ``fdr_by``);
- winning rate omega = rejected / tested; the LLM passes when omega >= 0.5;
- advantage probability = mean over tested annotators of rho_f.

When annotators saw an instance under different conditions (MIST: no image, aligned or misleading
image), the LLM label compared with held-out human h on instance i must be the LLM's label under the
condition h saw: ``matched_alt_test`` takes the LLM labels per annotator, annotator -> {instance ->
LLM label under what that annotator saw}; ``alt_test`` is the case where every annotator is compared
with the same LLM label.

Instances with fewer than ``min_humans_per_instance`` human labels, or without an LLM label, are
dropped first (in the matched form, an instance is dropped for the annotators whose condition has no
LLM label); annotators left with fewer than ``min_instances_per_human`` instances are skipped and
leave the denominator. Edge case (documented choice): when every d_i is the same value the t statistic
is undefined; the p-value is then 0 if that value is below epsilon and 1 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.metrics.multiple_testing import benjamini_yekutieli

Scoring = Callable[[Any, Sequence[Any]], float]


def accuracy_score(label: Any, others: Sequence[Any]) -> float:
    """Share of the other annotators whose label equals ``label``."""
    return float(np.mean([label == o for o in others]))


def neg_rmse_score(label: Any, others: Sequence[Any]) -> float:
    """Minus the root mean squared difference to the other annotators' (numeric) labels."""
    return -math.sqrt(float(np.mean([(float(label) - float(o)) ** 2 for o in others])))


SCORINGS: dict[str, Scoring] = {"accuracy": accuracy_score, "neg_rmse": neg_rmse_score}


@dataclass(frozen=True)
class AnnotatorRow:
    """One held-out human: instances compared, win rates, the test's p-value and its decision."""

    annotator: Hashable
    n: int
    rho_f: float
    rho_h: float
    p_value: float
    rejected: bool


@dataclass(frozen=True)
class AltTestResult:
    """The alt-test's outcome: winning rate omega and advantage probability (None when no annotator
    could be tested), whether the LLM passes (omega >= 0.5), the settings, and the per-annotator rows."""

    winning_rate: float | None
    advantage_prob: float | None
    passed: bool
    epsilon: float
    q_fdr: float
    rows: list[AnnotatorRow] = field(default_factory=list)
    skipped: list[Hashable] = field(default_factory=list)
    instances_used: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready values, annotators and skipped ones as strings."""
        return {
            "winning_rate": self.winning_rate,
            "advantage_prob": self.advantage_prob,
            "passed": self.passed,
            "epsilon": self.epsilon,
            "q_fdr": self.q_fdr,
            "instances_used": self.instances_used,
            "skipped_annotators": [str(s) for s in self.skipped],
            "annotators": [
                {
                    "annotator": str(r.annotator),
                    "n": r.n,
                    "rho_f": r.rho_f,
                    "rho_h": r.rho_h,
                    "p_value": r.p_value,
                    "rejected": r.rejected,
                }
                for r in self.rows
            ],
        }


def _one_sided_p(d: np.ndarray, epsilon: float) -> float:
    """p-value of H0: mean(d) >= epsilon against mean(d) < epsilon (scipy's one-sample t-test)."""
    from scipy.stats import ttest_1samp

    if np.all(d == d[0]):
        return 0.0 if d[0] < epsilon else 1.0
    return float(ttest_1samp(d, epsilon, alternative="less").pvalue)


def alt_test(
    llm_annotations: Mapping[Any, Any],
    human_annotations: Mapping[Any, Mapping[Any, Any]],
    scoring: str | Scoring = "accuracy",
    epsilon: float = 0.2,
    q_fdr: float = 0.05,
    min_humans_per_instance: int = 2,
    min_instances_per_human: int = 30,
) -> AltTestResult:
    """Run the alt-test of one LLM judge against a panel of human annotators (see module docstring)."""
    return matched_alt_test(
        {h: llm_annotations for h in human_annotations},
        human_annotations,
        scoring,
        epsilon,
        q_fdr,
        min_humans_per_instance,
        min_instances_per_human,
    )


def matched_alt_test(
    llm_seen: Mapping[Any, Mapping[Any, Any]],
    human_annotations: Mapping[Any, Mapping[Any, Any]],
    scoring: str | Scoring = "accuracy",
    epsilon: float = 0.2,
    q_fdr: float = 0.05,
    min_humans_per_instance: int = 2,
    min_instances_per_human: int = 30,
) -> AltTestResult:
    """The alt-test where held-out annotator h is compared with ``llm_seen[h]``: the LLM's labels under
    the conditions h saw (see module docstring)."""
    score = SCORINGS.get(scoring) if isinstance(scoring, str) else scoring
    if score is None:
        raise HarnessError(f"alt_test: unknown scoring {scoring!r}; use {', '.join(SCORINGS)} or a callable")
    if min_humans_per_instance < 2:
        raise HarnessError("alt_test: min_humans_per_instance must be at least 2 (one held out, one to compare)")
    humans_of: dict[Hashable, list[Hashable]] = {}
    for human, labels in human_annotations.items():
        for instance in labels:
            humans_of.setdefault(instance, []).append(human)
    enough = {i for i, hs in humans_of.items() if len(hs) >= min_humans_per_instance}
    used: set[Hashable] = set()
    rows: list[AnnotatorRow] = []
    skipped: list[Hashable] = []
    for held_out, labels in human_annotations.items():
        llm = llm_seen.get(held_out, {})
        instances = [i for i in labels if i in enough and i in llm]
        used.update(instances)
        if len(instances) < min_instances_per_human:
            skipped.append(held_out)
            continue
        w_f, w_h = [], []
        for i in instances:
            others = [human_annotations[h][i] for h in humans_of[i] if h != held_out]
            human_score, llm_score = score(labels[i], others), score(llm[i], others)
            w_f.append(1.0 if llm_score >= human_score else 0.0)
            w_h.append(1.0 if human_score >= llm_score else 0.0)
        d = np.array(w_h) - np.array(w_f)
        rows.append(
            AnnotatorRow(
                held_out, len(instances), float(np.mean(w_f)), float(np.mean(w_h)), _one_sided_p(d, epsilon), False
            )
        )
    if not rows:
        return AltTestResult(None, None, False, epsilon, q_fdr, [], skipped, len(used))
    rejected, _ = benjamini_yekutieli([r.p_value for r in rows], q_fdr)
    rows = [
        AnnotatorRow(r.annotator, r.n, r.rho_f, r.rho_h, r.p_value, bool(rej))
        for r, rej in zip(rows, rejected, strict=True)
    ]
    winning_rate = sum(r.rejected for r in rows) / len(rows)
    advantage = float(np.mean([r.rho_f for r in rows]))
    return AltTestResult(winning_rate, advantage, winning_rate >= 0.5, epsilon, q_fdr, rows, skipped, len(used))
