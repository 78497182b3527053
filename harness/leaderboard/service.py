"""The submission pipeline shared by the web service (in its workers, ``leaderboard/workers``) and
``harness leaderboard import``: validate, re-score, apply the mismatch policy, store."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from harness.errors import HarnessError
from harness.leaderboard.bundle import Bundle, Limits, Source, SubmissionError, bundle_paths, parse_bundle
from harness.leaderboard.checks import FLAGGED, MISMATCH, MODIFIED, Verification, checks_json
from harness.leaderboard.comparison import MAX_ERROR_SHARE
from harness.leaderboard.db import Database
from harness.leaderboard.hooks import board_protocols, resolve_options
from harness.leaderboard.pool_store import DatabasePoolStore
from harness.leaderboard.quota import Quota
from harness.leaderboard.records import find_submission, store_submission
from harness.leaderboard.rescoring import Rescoring
from harness.protocols.leaderboard_hooks import Job, LeaderboardHooks
from harness.taskspec.registry import TaskRegistry

#: What the server does with a run whose claimed figures differ from the re-scored ones (``Settings``).
OnMismatch = Literal["flag", "refuse"]
ON_MISMATCH: tuple[OnMismatch, ...] = get_args(OnMismatch)


@dataclass(frozen=True)
class Settings:
    """How a leaderboard re-scores and stores submissions.

    ``on_mismatch``: ``flag`` stores a submission whose claimed figures differ from the re-scored ones
    and marks it (the page shows the server's figures); ``refuse`` rejects it with the differences.
    ``protocol_options``: per protocol, values of the options its leaderboard hooks declare."""

    db_url: str | None = None
    data_dir: Path | None = None
    include_paths: tuple[str, ...] = ()
    on_mismatch: OnMismatch = "flag"
    limits: Limits = field(default_factory=Limits)
    protocol_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_error_share: float = MAX_ERROR_SHARE
    rescore_timeout_s: float = 120.0
    rescore_workers: int = 2
    rescore_memory_mb: int = 4096  # address space of one re-scoring worker (resource.setrlimit)
    quota: Quota = field(default_factory=Quota)
    page_size: int = 25  # rows of a table per page

    def __post_init__(self) -> None:
        if self.on_mismatch not in ON_MISMATCH:
            raise HarnessError(f"on_mismatch {self.on_mismatch!r}: choose {' or '.join(ON_MISMATCH)}")
        if self.page_size < 1:
            raise HarnessError("--page-size must be at least 1")
        if not 0 <= self.max_error_share <= 1:
            raise HarnessError("--max-error-share must be between 0 and 1")
        if not self.rescore_timeout_s > 0 or self.rescore_workers < 1 or self.rescore_memory_mb < 256:
            raise HarnessError(
                "--rescore-timeout must be over 0 seconds, --rescore-workers at least 1 and "
                "--rescore-memory-mb at least 256"
            )
        known = {p.name: h for p, h in board_protocols()}
        for name, given in self.protocol_options.items():
            if name not in known:
                raise HarnessError(f"leaderboard options for {name!r}: no such protocol with leaderboard hooks")
            resolve_options(known[name], given)

    def options(self, protocol: str, hooks: LeaderboardHooks) -> dict[str, Any]:
        """The option values of ``protocol``'s leaderboard hooks (defaults filled in)."""
        return resolve_options(hooks, self.protocol_options.get(protocol))


@dataclass(frozen=True)
class Outcome:
    """The answer to one submission."""

    id: int
    status: str
    duplicate: bool
    checks: dict[str, Any]
    tasks: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """The API's answer to a submission: id, status, whether it was a duplicate, checks, tasks and the
        model page's path."""
        return {
            "id": self.id,
            "status": self.status,
            "duplicate": self.duplicate,
            "checks": self.checks,
            "tasks": list(self.tasks),
            "page": f"model/{self.id}.html",
        }


#: The share of an upload's budget (``--rescore-timeout``) re-scoring may use; past it, the worker stores
#: the submission it has already read as ``unverifiable (timeout)`` in the rest of the budget.
RESCORE_SHARE = 0.75


class _PastBudget(BaseException):
    """Raised in a re-scoring worker when re-scoring runs past its share of the budget (a BaseException, so
    task code that catches ``Exception`` cannot swallow it)."""


@contextmanager
def _rescoring_until(deadline: float | None) -> Iterator[None]:
    """Interrupts the block (``_PastBudget``) once ``time.monotonic()`` passes ``deadline``: a re-scoring
    worker's main thread only (a timer signal); elsewhere, or without a deadline, the block runs as it is."""
    if deadline is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _PastBudget

    def stop(signum: int, frame: Any) -> None:
        raise _PastBudget

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, remaining)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def stored_outcome(db: Database, bundle: Bundle) -> Outcome | None:
    """The answer for a submission stored already (a resend: a duplicate), or None."""
    existing = find_submission(db, bundle.content_hash)
    if existing is None:
        return None
    return Outcome(existing.id, existing.status, True, existing.checks, tuple(bundle.samples))


def _store(
    db: Database,
    bundle: Bundle,
    verification: Verification,
    submitter: str,
    settings: Settings,
    reservation: int | None,
) -> Outcome:
    """Apply the mismatch policy and store the record (releasing the upload's quota reservation)."""
    if verification.status in (FLAGGED, MODIFIED) and settings.on_mismatch == "refuse":
        detail = "; ".join(
            f"{t}: {c.message}" for t, c in verification.checks.items() if c.status in (MISMATCH, MODIFIED)
        )
        what = (
            "claimed figures differ from the re-scored samples"
            if verification.status == FLAGGED
            else "the run's requests are not the ones this server's tasks build"
        )
        raise SubmissionError(f"{what} ({detail})", 409)
    record_id, duplicate = store_submission(db, bundle, verification, submitter, reservation)
    checks = checks_json(verification.checks)
    return Outcome(record_id, verification.status, duplicate, checks, tuple(bundle.samples))


def submit_files(
    db: Database,
    files: Mapping[str, Source],
    submitter: str,
    settings: Settings,
    registry: TaskRegistry | None = None,
    reservation: int | None = None,
    rescore_by: float | None = None,
) -> Outcome:
    """Validate, re-score and store one submission, here (the server calls this in a ``RescoringPool``
    worker, with ``rescore_by``: past that ``time.monotonic()`` instant re-scoring stops and the
    submission is stored ``unverifiable (timeout)``); idempotent on its content hash.

    One line: the files are parsed and hashed once into a :class:`Bundle`, planned against the server's
    tasks, re-scored (or, past the budget, taken as claimed from the same plan) and stored from the bundle."""
    bundle = parse_bundle(files, settings.limits)
    existing = stored_outcome(db, bundle)
    if existing is not None:
        return existing
    registry = registry or TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    rescoring = Rescoring.plan(bundle, registry)
    try:
        with _rescoring_until(rescore_by):
            verification = rescoring.verify(settings.data_dir, max_error_share=settings.max_error_share)
    except _PastBudget:
        verification = rescoring.timed_out(settings.rescore_timeout_s * RESCORE_SHARE)
    return _store(db, bundle, verification, submitter, settings, reservation)


def import_runs(
    db: Database, run_dirs: list[Path], submitter: str, settings: Settings
) -> list[tuple[Path, Outcome | SubmissionError]]:
    """Ingest run folders (a Hub-layout clone), each through the same checks as an upload; a refused run
    is reported and the others go on. Then runs each protocol's after-submission job once if new
    submissions carry its tasks."""
    registry = TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    outcomes: list[tuple[Path, Outcome | SubmissionError]] = []
    for run_dir in run_dirs:
        try:
            outcomes.append((run_dir, submit_files(db, bundle_paths(run_dir), submitter, settings, registry)))
        except HarnessError as exc:  # a refused run, or a run folder holding a symbolic link
            outcomes.append((run_dir, exc if isinstance(exc, SubmissionError) else SubmissionError(str(exc), 400)))
    new = [o for _, o in outcomes if isinstance(o, Outcome) and not o.duplicate]
    for protocol, job, options in due_jobs(settings, [t for o in new for t in o.tasks]):
        job.run(DatabasePoolStore(db, protocol), options)
    return outcomes


def due_jobs(settings: Settings, tasks: Sequence[str] | None) -> list[tuple[str, Job, dict[str, Any]]]:
    """(protocol, job, its options) of the after-submission jobs that new samples of ``tasks`` call for
    (every job for None)."""
    due = []
    for protocol, hooks in board_protocols():
        options = settings.options(protocol.name, hooks)
        if hooks.job is not None and (tasks is None or set(hooks.job.tasks(options)) & set(tasks)):
            due.append((protocol.name, hooks.job, options))
    return due
