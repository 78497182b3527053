"""The public contract between the engine, ``harness score``, the audits and the leaderboard.

``results.json`` keeps lmms-eval's keys (``results`` with ``"metric,filter"`` values and
``"metric_stderr,filter"``, ``configs``, ``versions``, ``n-samples``, ``config``) and adds
``provenance`` and per-task ``counts``. Each line of ``samples_<task>.jsonl`` is a :class:`SampleRecord`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import HarnessError
from harness.results.jsonl import jsonl_lines

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1


class SampleRecord(BaseModel):
    """One doc of one task: its prompt, all n responses, filtered answers and per-sample metrics."""

    model_config = ConfigDict(extra="forbid")

    task: str
    doc_id: int
    doc_hash: str
    doc: dict[str, Any] = Field(description="The doc with images replaced by their sha256")
    target: Any = None
    prompt: list[dict[str, Any]] = Field(default_factory=list, description="Chat messages, images by sha256")
    request_key: str | None = None
    seed: int | None = None
    responses: list[str] = Field(default_factory=list, description="All n responses, in sample order")
    filtered: dict[str, Any] = Field(default_factory=dict, description="Filter pipeline name -> its output")
    metrics: dict[str, Any] = Field(default_factory=dict, description='"metric,filter" -> per-sample value')
    unparsed: list[str] = Field(default_factory=list, description="Metric keys the task could not parse")
    turns: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Follow-up turns of a multi-turn task: prompt, request_keys, responses (one per sample), error")
    error: str | None = Field(default=None, description="Why this sample has no responses or no metrics")


class TaskCounts(BaseModel):
    samples: int
    scored: int
    errors: int
    unparsed: dict[str, int] = Field(default_factory=dict)


class RunResults(BaseModel):
    """Everything a run reports; keys with dashes keep lmms-eval's spelling."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_version: int = SCHEMA_VERSION
    results: dict[str, dict[str, Any]]
    groups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    group_subtasks: dict[str, list[str]] = Field(default_factory=dict)
    configs: dict[str, dict[str, Any]]
    versions: dict[str, Any]
    n_samples: dict[str, dict[str, int]] = Field(alias="n-samples")
    higher_is_better: dict[str, dict[str, bool]] = Field(default_factory=dict)
    counts: dict[str, TaskCounts]
    reports: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Per-task extra reports")
    config: dict[str, Any]
    provenance: dict[str, Any]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_run(run_dir: Path, results: RunResults, samples: dict[str, list[SampleRecord]]) -> None:
    """Write ``samples_<task>.jsonl`` files, then ``results.json`` (each replaced atomically)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for task, records in samples.items():
        lines = "".join(r.model_dump_json() + "\n" for r in records)
        _atomic_write(run_dir / f"samples_{task}.jsonl", lines)
    _atomic_write(run_dir / "results.json", results.to_json() + "\n")


def read_run(run_dir: Path) -> RunResults:
    """A run's ``results.json``; a missing, truncated or malformed file fails in one line naming it."""
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise HarnessError(f"{run_dir}: no results.json (is this a run folder?)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise HarnessError(f"{path}: not valid JSON ({exc}); the file is truncated or corrupt: restore it (a "
                           "rescored run keeps its first version under original/) or rerun harness eval") from None
    try:
        return RunResults.model_validate(raw)
    except ValidationError as exc:
        raise HarnessError(f"{path}: not a harness results file ({_first_problem(exc)})") from None


def read_samples(run_dir: Path, task: str) -> list[SampleRecord]:
    """A task's sample records. A last line cut short (a run killed while writing, a partial copy) is left
    out with a warning, so the other samples still count; any other unreadable line fails in one line,
    since it means the file was edited or damaged rather than cut."""
    path = Path(run_dir) / f"samples_{task}.jsonl"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing; the run folder is incomplete (rerun harness eval)") from None
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: unreadable ({exc})") from None
    last = text.count("\n") + 1
    records = []
    for number, line in jsonl_lines(text):
        try:
            records.append(SampleRecord.model_validate_json(line))
        except ValidationError as exc:
            if number == last and not text.endswith("\n"):
                log.warning("%s: line %d is cut (the file ends mid-record); that sample is left out", path, number)
                continue
            raise HarnessError(f"{path}: line {number}: not a sample record ({_first_problem(exc)})") from None
    return records


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
