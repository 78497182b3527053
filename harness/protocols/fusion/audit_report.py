"""``harness audit fusion``'s audit.json, typed: the settings, each model's figures with their 95% intervals
(the paper's fixed-model paired bootstrap over clean-correct items), the per-level macro averages, the rank
agreement between End-PGD ASR and R+, and the plots written beside it. The figures are keyed by name
(``metrics.model_figures``; ``audit.CI_FIGURES`` have intervals)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from harness.protocols.audit_report import AuditReport, ReportPart
from harness.protocols.fusion.rows import UNIT
from harness.results.interval import Interval


class FusionSettings(ReportPart):
    """The audit's settings as run (``audit.FusionAuditConfig``, field for field)."""

    delta_mode: str
    oar_mode: str
    natevid_preserved_only: bool
    level_overrides: dict[str, str]
    n_resamples: int
    seed: int


class ModelFigures(ReportPart):
    """One model: its type and fusion level, the run folders merged, its figures with CIs, the items an
    attack could not be run on, the attacks not run at all, and layer restoration by decoder depth."""

    model_type: str | None
    fusion_level: str
    runs: list[str]
    figures: dict[str, float | None]
    missing: dict[str, int]  # attack -> items of C it has no outcome for
    attacks_not_run: list[str]
    n_items: int
    restoration_by_depth: dict[int, float]
    n_restoration: int
    intervals: dict[str, Interval]


class LevelFigures(ReportPart):
    """One fusion level: its models, the unweighted macro average of each figure over them, and its interval."""

    models: list[str]
    macro: dict[str, float | None]
    intervals: dict[str, Interval]


class RankAgreement(ReportPart):
    """Spearman and Kendall agreement between two per-model figures (None with fewer than 3 models or a
    constant ranking), each model's two ranks, and the models whose rank moves by ``threshold`` or more."""

    n_models: int
    spearman_rho: float | None
    spearman_p: float | None
    kendall_tau_b: float | None
    kendall_p: float | None
    ranks: dict[str, tuple[float, float]]
    moved: list[str]
    n_moved: int
    threshold: int


class FusionAuditReport(AuditReport):
    """audit.json of ``harness audit fusion``. Version 3 holds each interval as an ``Interval`` (method, unit,
    n, or why there is none); versions 1 and 2 held bare ``ci95`` pairs, read as the paired-bootstrap
    intervals they were. Version 2 names the protocol ``fusion``, its one name; version 1 (and a file
    without a version) named it ``fusionaudit``."""

    SCHEMA_VERSION: ClassVar[int] = 3
    READABLE_VERSIONS: ClassVar[tuple[int, ...]] = (1, 2, 3)

    schema_version: int = 3
    protocol: Literal["fusion"] = "fusion"
    config: FusionSettings
    models: dict[str, ModelFigures]
    levels: dict[str, LevelFigures]
    rank_agreement_end_pgd_vs_r_plus: RankAgreement
    restoration_subset: str  # how the layer-restoration subset was chosen
    plots: list[str]  # file names beside audit.json

    @classmethod
    def parse(cls, raw: Any) -> Self:
        """A report of any readable version; version 1's ``fusionaudit`` is version 2's ``fusion``, versions
        1-2's ``ci95`` pairs are version 3's ``intervals``."""
        if isinstance(raw, dict) and raw.get("schema_version", 1) == 1 and raw.get("protocol") == "fusionaudit":
            raw = {**raw, "protocol": "fusion"}
        if isinstance(raw, dict) and raw.get("schema_version", 1) in (1, 2):
            models = raw.get("models")
            levels = raw.get("levels")
            if isinstance(models, dict):
                raw = {**raw, "models": {m: _typed_cis(row, _clean_correct(row)) for m, row in models.items()}}
            if isinstance(levels, dict):
                raw = {**raw, "levels": {k: _typed_cis(row, 0) for k, row in levels.items()}}
        return super().parse(raw)


def _clean_correct(row: Any) -> int:
    """|C| of a model's row (its figure ``n_clean_correct``), 0 where it is not there."""
    figures = row.get("figures") if isinstance(row, dict) else None
    n = figures.get("n_clean_correct") if isinstance(figures, dict) else None
    return int(n) if isinstance(n, int | float) else 0


def _typed_cis(row: Any, n: int) -> Any:
    """A version 1-2 row's ``ci95`` pairs as the version 3 ``intervals`` (each a percentile paired
    bootstrap over clean-correct items, ``n`` of them: |C| for a model, 0 for a level, which did not say)."""
    if not isinstance(row, dict) or not isinstance(row.get("ci95"), dict):
        return row
    count = n

    def interval(ci: Any) -> Interval:
        if isinstance(ci, list | tuple) and len(ci) == 2:
            return Interval.of(float(ci[0]), float(ci[1]), "paired_bootstrap", count, UNIT.name)
        return Interval.missing("the figure is undefined", count, UNIT.name)

    rest = {k: v for k, v in row.items() if k != "ci95"}
    return {**rest, "intervals": {k: interval(ci) for k, ci in row["ci95"].items()}}
