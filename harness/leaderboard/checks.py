"""What re-scoring decided about a submission, typed: each task's state and check, the claimed figures that
differ, the server's figures, and the one JSON form of the checks that the record and the API answer carry.

Per task the state is one of:

- ``verified``: the recomputed task values, task report, counts and per-sample metrics equal the claimed
  ones, every sample's doc equals the server's copy of the dataset, and the samples cover the whole task;
- ``rescored``: as verified, but the server holds no copy of the dataset, so neither the docs nor the
  task's full size could be checked (coverage is then checked against the claimed ``n-samples``);
- ``partial``: the samples cover only part of the task (deleted samples, or a run cut by ``--limit``),
  or more than ``max_error_share`` of them are errors: a cherry-picked run is never verified;
- ``mismatch``: some claimed number differs (listed), or a sample's doc differs from the dataset's;
- ``modified``: some sample's request is not the one the server's copy of the task builds (another
  prompt text or image, other generation settings, another ``n`` or seed; the first differing field is
  shown): the run answered another task, so its figures are never verified (``engine/request_check``);
- ``unverifiable``: the task's scoring reads images (``process_results_use_image``) and the server has
  no copy of its dataset, or re-scoring ran past the server's budget; the claimed values are kept and
  shown as not re-scored, never as verified.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from harness.results.metric_key import MetricKey
from harness.results.schema import TaskCounts

VERIFIED, RESCORED, PARTIAL, MISMATCH, UNVERIFIABLE = "verified", "rescored", "partial", "mismatch", "unverifiable"
MODIFIED, FLAGGED = "modified", "flagged"
SEVERITY = (MODIFIED, MISMATCH, UNVERIFIABLE, PARTIAL, RESCORED, VERIFIED)  # a submission's status: its worst task's


def worst(states: set[str]) -> str:
    """The most severe of some task states (``verified`` for none)."""
    return next((s for s in SEVERITY if s in states), VERIFIED)


@dataclass(frozen=True)
class Mismatch:
    """One claim that differs from the server's recomputation: a task or group figure (its ``MetricKey``),
    or another claim by name (``counts``, ``report <path>``, a results key that names no figure)."""

    metric: MetricKey | str
    claimed: Any
    recomputed: Any

    def as_json(self) -> dict[str, Any]:
        """The mismatch as the record stores it (a figure by its ``"metric,filter"`` key)."""
        return {"metric": str(self.metric), "claimed": self.claimed, "recomputed": self.recomputed}


@dataclass(frozen=True)
class TaskCheck:
    """How one task (or group) of a submission fared against the server's re-scoring."""

    task: str
    protocol: str
    version: str
    status: str
    message: str = ""
    mismatches: tuple[Mismatch, ...] = ()
    samples_differing: int = 0
    docs_checked: bool = False
    docs_expected: int | None = None  # the task's docs: the dataset's count, else the claimed n-samples
    docs_covered: int = 0  # distinct doc ids of the samples among them
    errors: int = 0

    def as_json(self) -> dict[str, Any]:
        """The check as the record and the API answer carry it."""
        return {**vars(self), "mismatches": [m.as_json() for m in self.mismatches]}


@dataclass(frozen=True)
class Heading:
    """What every check of one task states first: the task, the table its figures go to, its version."""

    task: str
    protocol: str
    version: str

    def check(self, status: str, message: str = "", **found: Any) -> TaskCheck:
        """This task's check in ``status`` (``found``: the rest of :class:`TaskCheck`'s fields)."""
        return TaskCheck(self.task, self.protocol, self.version, status, message, **found)


def checks_json(checks: Mapping[str, TaskCheck]) -> dict[str, dict[str, Any]]:
    """The checks of a submission, by task, as the record stores them and the API answers them."""
    return {task: check.as_json() for task, check in checks.items()}


@dataclass(frozen=True)
class Verification:
    """The server's figures for a submission (recomputed where possible) and the per-task checks."""

    results: dict[str, dict[str, Any]]
    counts: dict[str, TaskCounts]
    groups: dict[str, dict[str, Any]]
    reports: dict[str, dict[str, Any]]
    checks: dict[str, TaskCheck]
    higher_is_better: dict[str, dict[str, bool]]
    plots: dict[str, bytes] = field(repr=False, default_factory=dict)
    headlines: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # protocol -> figure -> estimate

    @cached_property
    def status(self) -> str:
        """``modified`` when any task's requests are not the server's, ``flagged`` when any task mismatches,
        else the worst task state (unverifiable, partial, rescored, verified); decided once."""
        state = worst({c.status for c in self.checks.values()})
        return FLAGGED if state == MISMATCH else state
