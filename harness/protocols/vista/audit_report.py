"""``harness audit vista``'s audit.json, typed: the settings, the per-model table (Table 14), topic and
prompt-type averages, selective refusal and its kinds (Table 15), the leave-one-peer-out check and the
appendix C.5 sweeps, with what the clustering cost in judge decisions. Per-query rows are in audit.csv,
flagged cases in flagged.jsonl. Version 2 adds each model's 95% intervals (``ModelFigures.intervals``);
a version 1 file reads with none."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from harness.protocols.audit_report import AuditReport, ReportPart
from harness.results.interval import Interval


class AuditSettings(ReportPart):
    """The audit's settings as run (``audit.AuditConfig``, field for field)."""

    task: str
    alpha: float
    theta: float
    clustering: str
    reference: str
    stability: bool
    alpha_grid: list[float]
    theta_grid: list[float]
    k_grid: list[int]
    raven: str


class Detection(ReportPart):
    """Model-level detection: the mean S of the top queries, whether it exceeds theta, and how many."""

    score: float
    positive: bool
    queries: int


class Patterns(ReportPart):
    """How many of a model's flagged cases look like each pattern (``audit.case_pattern``)."""

    refusal: int
    compliance: int
    divergent_content: int = Field(alias="divergent-content")


class ModelIntervals(ReportPart):
    """95% intervals of a model's headline figures: percentile bootstrap over its queries (image x prompt),
    every model resampled on the same queries (``audit.model_intervals``)."""

    mean_suspicion: Interval
    flag_share: Interval
    detection_score: Interval


class ModelFigures(ReportPart):
    """One model's row of Table 14, with its semantic entropy, refusal rate and detection, and the intervals
    of its mean S, flagged share and detection score (None in a version 1 report)."""

    queries: int
    mean_suspicion: float
    max_suspicion: float
    flags: int
    mean_semantic_entropy: float
    refusal_rate: float
    dominant_pattern: str | None
    primary_pattern: str
    patterns: Patterns
    detection: Detection
    intervals: ModelIntervals | None = None

    def interval(self, figure: str) -> Interval | None:
        """The 95% interval of ``figure`` (a field of :class:`ModelIntervals`); None in a version 1 report."""
        return None if self.intervals is None else getattr(self.intervals, figure)


class MeanSd(ReportPart):
    """A mean, its sample standard deviation and the number of values."""

    mean: float
    sd: float
    n: int


class TopicRow(ReportPart):
    """One topic: suspicion over all its (model, query) rows and per model, and its flags."""

    category: str | None
    suspicion: MeanSd
    flags: int
    per_model: dict[str, MeanSd]


class PromptTypeRow(ReportPart):
    """Observable (O) or inference-eliciting (I) prompts of one model."""

    suspicion: MeanSd
    flags: int
    refusal_rate: float


class SelectiveRefusal(ReportPart):
    """Refusal rates across demographic groups and how unequal they are (``refusal.selective_refusal``)."""

    rates: dict[str, float]
    spread: float
    excess: dict[str, float]
    p_value: float | None
    responses: dict[str, int]


class RefusalKinds(ReportPart):
    """Table 15 for one model and group: shares of its responses by refusal kind, and their count."""

    empty: float
    disclaimer: float
    decline: float
    refusal: float
    responses: int


class PeerLeftOut(ReportPart):
    """The audit without one peer, against the full audit on the same models."""

    top10_overlap: float
    top20_overlap: float
    flagged_jaccard: float
    flags: int


class GridPoint(ReportPart):
    """One alpha or theta of the sweep: mean S over all pairs, flags in all and per model."""

    mean_suspicion: float
    flags: int
    per_model: dict[str, int]


class KPoint(ReportPart):
    """One k of the sweep, scored on each model's first k stored samples."""

    mean_se: float
    sd_suspicion: float
    flags: int
    top10_overlap: float
    query_cost: float


class KSweep(ReportPart):
    """The k sweep: the stored k, each k of the grid up to it, and the grid values above it."""

    stored_k: int
    grid: dict[str, KPoint]
    unavailable: list[int]


class Sweeps(ReportPart):
    """Appendix C.5's alpha (Table 19), theta (Table 21) and k (Table 23) grids, keyed by value."""

    alpha: dict[str, GridPoint]
    theta: dict[str, GridPoint]
    k: KSweep


class VistaAuditReport(AuditReport):
    """audit.json of ``harness audit vista`` (and of the audit that follows a multi-model eval)."""

    SCHEMA_VERSION: ClassVar[int] = 2
    READABLE_VERSIONS: ClassVar[tuple[int, ...]] = (1, 2)

    schema_version: int = 2

    config: AuditSettings
    models: list[str]
    per_model: dict[str, ModelFigures]
    topics: dict[str, TopicRow]
    prompt_types: dict[str, dict[str, PromptTypeRow]]
    selective_refusal: dict[str, dict[str, SelectiveRefusal]]
    refusal_kinds: dict[str, dict[str, RefusalKinds]]
    stability: dict[str, PeerLeftOut]
    sweeps: Sweeps
    judge_decisions: int  # distinct (premise, hypothesis) decisions the clustering needed
    judge_model_calls: int  # of those, the ones the judge computed (not cached)
    all_pairs_calls: int  # what asking every ordered pair of distinct responses would cost
    skipped_queries: int
    skipped_runs: int  # run folders given that do not hold the task
    flagged: int  # flagged cases (each is a line of flagged.jsonl)
    judge: str
