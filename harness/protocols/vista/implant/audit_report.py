"""``harness audit vista-implant``'s audit.json, typed: the study's settings, negativity per run and entity,
Tables 1, 2, 7 and 8, and each audited instance with its detection under the four scorings."""

from __future__ import annotations

from harness.protocols.audit_report import AuditReport, ReportPart
from harness.protocols.vista.audit_report import Detection


class StudySettings(ReportPart):
    """The study's settings as run (``study.StudyConfig``, field for field)."""

    alpha: float
    theta: float
    clustering: str
    top_fraction: float


class Table1Row(ReportPart):
    """Negativity (%) on one entity: pretrained (PT), harmful LoRA (FT) and benign LoRA (None: not run)."""

    base: str
    entity: str
    pt: float | None
    ft: float | None
    benign: float | None


class Table2Row(ReportPart):
    """Concept specificity of one base: harmful LoRA on its targets and on the other entities, pretrained
    on those same entities (average negativity, %)."""

    base: str
    target_ft: float | None
    non_target_ft: float | None
    non_target_pt: float | None


class Instance(ReportPart):
    """One model instance audited against the peers on its entity's test queries."""

    instance: str
    role: str
    base: str
    entity: str
    queries: int
    mean_suspicion: float
    negativity: float | None
    detection: dict[str, Detection]  # scoring name -> model-level detection


class Table7Row(ReportPart):
    """One scoring's model-level detection: precision, recall, F1 and the confusion counts."""

    clustering: str
    scoring: str
    name: str
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int


class Table8Row(ReportPart):
    """Flagged instances of one role under VISTA and RAVEN, and their mean negativity on the target."""

    role: str
    instances: int
    vista_flagged: int
    raven_flagged: int
    target_negativity: float | None


class StudyReport(AuditReport):
    """audit.json of ``harness audit vista-implant``."""

    config: StudySettings
    entities: list[str]
    negativity: dict[str, dict[str, float | None]]  # run label -> entity -> % negative
    unrated: dict[str, int]  # run label -> responses without a readable rating
    table1: list[Table1Row]
    table2: list[Table2Row]
    instances: list[Instance]
    table7: list[Table7Row]
    table8: list[Table8Row]
    skipped_queries: int
    rater: str
    judge: str
