"""What ``harness report`` writes as ``audit.json``, typed: the same content as its HTML page. A reader
gets what was run and what was not, each protocol's headline figures with their intervals beside the
papers' values, the evidence, and the commands that re-create every figure."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.protocols.evidence import ProtocolEvidence, ReferenceValue
from harness.results.interval import Interval


class ReportPart(BaseModel):
    """A typed part of the report: unknown keys refused, frozen once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetUsed(ReportPart):
    """Which data one task read (a run's provenance): a local folder by content hash or a Hub revision."""

    task: str
    kind: str | None
    where: str | None
    revision: str | None
    rows: int | None


class RunSummary(ReportPart):
    """One run folder: its model and revision, tasks with their n, the data, the software and settings."""

    path: str
    model: str
    model_revision: str | None
    model_fingerprint: str | None
    smoke_test_model: bool
    tasks: dict[str, int] = Field(description="task -> docs scored")
    errors: dict[str, int] = Field(description="task -> samples with an error")
    datasets: list[DatasetUsed]
    harness_version: str | None
    git_revision: str | None
    started_at: str | None
    settings: dict[str, Any] = Field(description="limit, seed, repeats, generation overrides, model arguments")


class NotRun(ReportPart):
    """A protocol the report holds nothing of for this model, or a part of one that is missing, and why."""

    protocol: str
    reason: str


class HeadlineFigure(ReportPart):
    """One headline figure: its value, its interval (None: none recorded), n, where it comes from, and the
    paper's value for the same model or setting, labelled as the paper's."""

    key: str
    label: str
    kind: Literal["headline", "task metric"]
    value: float | str | None
    interval: Interval | None = None
    n: int | None = None
    source: str
    references: list[ReferenceValue] = Field(default_factory=list)


class Command(ReportPart):
    """A command that re-creates figures of the report, and what it re-creates."""

    purpose: str
    command: str


class ProtocolPart(ReportPart):
    """One protocol's part: its runs, headline figures, evidence and reproduction commands."""

    protocol: str
    title: str
    summary: str
    tasks: list[str]
    runs: list[str]
    audits: list[str]
    headline: list[HeadlineFigure]
    evidence: ProtocolEvidence | None
    reproduce: list[Command]
    notes: list[str] = Field(default_factory=list)


class ModelAudit(ReportPart):
    """``harness report``'s audit.json: one model's audit across the protocols its runs cover."""

    SCHEMA_VERSION: ClassVar[int] = 1

    schema_version: int = 1
    model: str
    generated_at: str
    harness_version: str
    runs: list[RunSummary]
    peers: list[str] = Field(description="other models whose runs were read (a cross-model audit compares them)")
    protocols: list[ProtocolPart]
    not_run: list[NotRun]
    other_tasks: list[str] = Field(description="tasks of the model's runs that belong to no protocol")
