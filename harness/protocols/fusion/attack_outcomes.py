"""What ``harness attack`` writes beside a run and ``harness audit fusion`` reads: one outcome per attacked
item (``attack_outcomes.jsonl``), one row per diagnostic (``diagnostics.jsonl``) and the summary
(``attack.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.disk import write_atomic
from harness.errors import HarnessError
from harness.results.interval import Interval
from harness.results.jsonl import read_jsonl
from harness.results.schema import ModelInfo

AttackName = Literal["vis_pgd", "end_pgd", "mantis"]
DiagnosticName = Literal["oar", "oar_clean", "restoration"]
OUTCOMES_FILE, DIAGNOSTICS_FILE, SUMMARY_FILE = "attack_outcomes.jsonl", "diagnostics.jsonl", "attack.json"


class AttackOutcome(BaseModel):
    """One attack on one clean-correct item: the re-checked answer and whether the judge calls it a flip."""

    model_config = ConfigDict(extra="forbid")

    item: str
    attack: AttackName
    clean_response: str | None = None
    flipped: bool = False
    response: str | None = None
    loss_start: float | None = None
    loss_end: float | None = None
    linf_uint8: int | None = Field(default=None, description="L-inf distance of the saved image, in uint8 steps")
    image: str | None = Field(default=None, description="The adversarial PNG, relative to the run folder")
    error: str | None = None


class Diagnostic(BaseModel):
    """OAR of an item's Typo-Evid image (``oar``) or of the same region on its clean image (``oar_clean``),
    or whether layer restoration undid an End-PGD flip (and at which depths)."""

    model_config = ConfigDict(extra="forbid")

    item: str
    diagnostic: DiagnosticName
    value: bool | float | None = None
    depths: list[int] = Field(default_factory=list)


class AttackSummary(BaseModel):
    """``attack.json``: the settings of an attack run, its timings and each attack's ASR over C with its 95%
    interval (the audit's paired bootstrap over clean-correct items; none in an older attack.json)."""

    model_config = ConfigDict(extra="forbid")

    task: str
    attacks: list[AttackName]
    pgd: dict[str, float | int | bool]
    seed: int
    batch_size: int
    diagnostics: list[DiagnosticName]
    n_clean_correct: int
    model: ModelInfo
    time_s: dict[str, float]
    items_per_minute: dict[str, float | None]
    asr: dict[str, float | None]
    asr_intervals: dict[str, Interval] = Field(default_factory=dict)
    errors: int


def _write_lines(path: Path, rows: Sequence[BaseModel]) -> None:
    write_atomic(path, "".join(r.model_dump_json() + "\n" for r in rows))


def write_attack(
    run_dir: Path, outcomes: Sequence[AttackOutcome], diagnostics: Sequence[Diagnostic], summary: AttackSummary
) -> None:
    """The three files of an attack run, each replaced atomically."""
    _write_lines(run_dir / OUTCOMES_FILE, outcomes)
    _write_lines(run_dir / DIAGNOSTICS_FILE, diagnostics)
    write_atomic(run_dir / SUMMARY_FILE, summary.model_dump_json(indent=2) + "\n")


def _read_rows(path: Path, model: type[Any]) -> list[Any]:
    rows = []
    for number, row in enumerate(read_jsonl(path), 1):
        try:
            rows.append(model.model_validate(row))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise HarnessError(f"{path}: row {number}: not an attack record ({where}: {error['msg']})") from None
    return rows


def read_outcomes(run_dir: Path) -> list[AttackOutcome]:
    """A run folder's attack outcomes; none when ``harness attack`` did not run there."""
    path = Path(run_dir) / OUTCOMES_FILE
    return _read_rows(path, AttackOutcome) if path.is_file() else []


def read_diagnostics(run_dir: Path) -> list[Diagnostic]:
    """A run folder's diagnostics rows; none when they were not run there."""
    path = Path(run_dir) / DIAGNOSTICS_FILE
    return _read_rows(path, Diagnostic) if path.is_file() else []
