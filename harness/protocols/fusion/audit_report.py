"""``harness audit fusion``'s audit.json, typed: the settings, each model's figures with paired-bootstrap
CIs, the per-level macro averages, the rank agreement between End-PGD ASR and R+, and the plots written
beside it. The figures are keyed by name (``metrics.model_figures``; ``audit.CI_FIGURES`` have CIs)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from harness.protocols.audit_report import AuditReport, ReportPart

CI = tuple[float, float] | None  # a 95% CI, None where the figure is undefined


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
    ci95: dict[str, CI]


class LevelFigures(ReportPart):
    """One fusion level: its models, the unweighted macro average of each figure over them, and its CI."""

    models: list[str]
    macro: dict[str, float | None]
    ci95: dict[str, CI]


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
    """audit.json of ``harness audit fusion``. Version 2 names the protocol ``fusion``, its one name;
    version 1 (and a file without a version) named it ``fusionaudit`` and is read as version 2."""

    SCHEMA_VERSION: ClassVar[int] = 2
    READABLE_VERSIONS: ClassVar[tuple[int, ...]] = (1, 2)

    schema_version: int = 2
    protocol: Literal["fusion"] = "fusion"
    config: FusionSettings
    models: dict[str, ModelFigures]
    levels: dict[str, LevelFigures]
    rank_agreement_end_pgd_vs_r_plus: RankAgreement
    restoration_subset: str  # how the layer-restoration subset was chosen
    plots: list[str]  # file names beside audit.json

    @classmethod
    def parse(cls, raw: Any) -> Self:
        """A report of any readable version; version 1's ``fusionaudit`` is version 2's ``fusion``."""
        if isinstance(raw, dict) and raw.get("schema_version", 1) == 1 and raw.get("protocol") == "fusionaudit":
            raw = {**raw, "protocol": "fusion"}
        return super().parse(raw)
