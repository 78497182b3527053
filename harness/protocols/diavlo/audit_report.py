"""``harness audit diavlo``'s audit.json, typed: the settings, the occlusion statement and per model its
behaviour classes, RK losses and MI per source and overall, its counts, the structural refutation of each
pair and the concept effects per outcome. Pair and counterfactual rows are in pairs.csv and
counterfactuals.csv. Version 2 adds 95% intervals (``Interval``): each class share's (bootstrap over
questions), the MI's and each DML estimate's (doubleml's, method ``dml``); a version 1 file reads with none."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from harness.protocols.audit_report import AuditReport, ReportPart
from harness.results.interval import Interval


class ClassThresholds(ReportPart):
    """tau_a, tau_e and tau_d of the class rules (``metrics.Thresholds``, field for field)."""

    tau_a: float
    tau_e: float
    tau_d: float


class DMLSettingsPart(ReportPart):
    """DML's settings as run (``concept_effects.DMLSettings``, field for field)."""

    n_folds: int
    n_rep: int
    n_jobs: int
    n_estimators: int
    max_depth: int
    learning_rate: float
    seed: int
    min_obs: int
    min_arm: int


class DiavloSettings(ReportPart):
    """The audit's settings as run (``audit.DiavloAuditConfig``, field for field) and its outcomes."""

    thresholds: ClassThresholds
    concepts: str
    max_subsets: int
    match_threshold: float
    mi_estimator: str
    mi_resamples: int
    seed: int
    batch_size: int
    dml: DMLSettingsPart
    outcomes: list[str]


class PerformanceScale(ReportPart):
    """The performance scale of the sources (binary bounds the MI by ln 2, continuous does not)."""

    scale: str | None
    by_source: dict[str, str]
    mi_upper_bound_nats: float | None


class ClassCounts(ReportPart):
    """Pairs per behaviour class."""

    aligned: int = Field(alias="Aligned")
    expanded: int = Field(alias="Expanded")
    divergent: int = Field(alias="Divergent")
    unnamed: int = Field(alias="Unnamed")


class ClassShares(ReportPart):
    """The classified pairs, the unclassified ones, each class's share (None without any) and count."""

    n: int
    unclassified: int
    aligned: float | None = Field(alias="Aligned")
    expanded: float | None = Field(alias="Expanded")
    divergent: float | None = Field(alias="Divergent")
    unnamed: float | None = Field(alias="Unnamed")
    counts: ClassCounts
    intervals: dict[str, Interval] | None = None  # by class name (``Aligned``, ...); None in version 1

    @property
    def shares(self) -> dict[str, float | None]:
        """Each class's share, by the class's name (``Aligned``, ...), as pair rows label them."""
        return {
            "Aligned": self.aligned,
            "Expanded": self.expanded,
            "Divergent": self.divergent,
            "Unnamed": self.unnamed,
        }


class RKLosses(ReportPart):
    """Pairs whose REALLY-KNOW triplets were lost, by why, their total and their share of the pairs."""

    empty: int
    unusable: int
    turn_error: int
    no_turns: int
    total: int
    rate: float | None


class MutualInformation(ReportPart):
    """MI(similarity; performance) with its bootstrap CI (``metrics.MIResult``; ``interval`` from version 2)."""

    mi_nats: float
    ci95: tuple[float, float] | None
    interval: Interval | None = None
    n: int
    estimator: str
    binary_performance: bool
    upper_bound_nats: float | None
    note: str


class TooFewPairs(ReportPart):
    """No MI: fewer than four pairs have both a similarity and a performance."""

    mi_nats: None
    n: int
    note: str


class BehaviourSummary(ReportPart):
    """Classes, RK losses and MI over a set of pairs (``report.behaviour_summary``)."""

    pairs: int
    performance_scale: PerformanceScale
    classes: ClassShares
    rk_losses: RKLosses
    mutual_information: MutualInformation | TooFewPairs


class Counts(ReportPart):
    """How many pairs, concepts (boxed or not) and counterfactuals one model's audit had."""

    pairs: int
    pairs_with_concepts: int
    concepts: int
    concepts_without_box: int
    pairs_sampled: int
    counterfactuals: int
    counterfactual_errors: int


class PairCheck(ReportPart):
    """One pair's structural refutation (``structure.StructureCheck``) and which pair it is."""

    task: str
    doc_id: int
    n: int
    violations: int
    tests: int
    p_permutation: float | None
    passes_permutation_baseline: bool
    verdict: str
    reason: str


class Structure(ReportPart):
    """The structural refutation of every pair, and how many got each verdict."""

    verdicts: dict[str, int]
    pairs: list[PairCheck]


class EstimatePart(ReportPart):
    """One DML estimate (``concept_effects.Estimate``)."""

    effect: float
    se: float
    ci95: tuple[float, float]
    interval: Interval | None = None  # the same interval typed (method ``dml``); None in version 1
    p_value: float
    per_split: list[float]


class Effect(ReportPart):
    """One concept's effect on one outcome with its refutations (``concept_effects.ConceptEffect``)."""

    concept: str
    n: int
    n_treated: int
    estimate: EstimatePart | None
    placebo: EstimatePart | None
    random_common_cause: EstimatePart | None
    inconclusive: bool
    reasons: list[str]


class ModelReport(ReportPart):
    """One model's audit."""

    run_dir: str
    per_source: dict[str, BehaviourSummary]  # task -> its pairs' summary
    overall: BehaviourSummary
    counts: Counts
    structure: Structure
    effects: dict[str, list[Effect]]  # outcome -> one effect per concept


class DiavloAuditReport(AuditReport):
    """audit.json of ``harness audit diavlo``."""

    SCHEMA_VERSION: ClassVar[int] = 2
    READABLE_VERSIONS: ClassVar[tuple[int, ...]] = (1, 2)

    schema_version: int = 2

    config: DiavloSettings
    occlusion: str  # which occlusion designs were asked (full power set or sampled)
    models: dict[str, ModelReport]
