"""The submission pipeline shared by the web service and ``harness leaderboard import``:
validate, re-score, apply the mismatch policy, store."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal, get_args

from harness.errors import HarnessError
from harness.leaderboard.bundle import Bundle, Limits, Source, SubmissionError, bundle_paths, parse_bundle
from harness.leaderboard.db import Database
from harness.leaderboard.hooks import board_protocols, resolve_options
from harness.leaderboard.pool_store import DatabasePoolStore
from harness.leaderboard.quota import Quota
from harness.leaderboard.records import find_submission, store_submission
from harness.leaderboard.rescoring import (
    FLAGGED,
    MAX_ERROR_SHARE,
    MISMATCH,
    MODIFIED,
    Verification,
    timed_out,
    verify,
)
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


LOOKUP, SUBMIT, TIMED_OUT = "lookup", "submit", "timed out"  # what a re-scoring worker is asked to do
READ_BUDGET_S = 60.0  # for a worker that only reads a submission (bounded by the limits), not re-scores it


def _cap_memory(megabytes: int) -> None:
    """Caps this process's address space, so a hostile submission ends its worker, not the server."""
    import resource

    limit = megabytes * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _in_child(
    sender: Connection,
    job: str,
    files: dict[str, Path],
    submitter: str,
    reservation: int | None,
    settings: Settings,
    db_url: str,
) -> None:
    """A worker process's job: read the received files, then (``submit``) re-score and store them,
    (``timed out``) store them as unverifiable, or (``lookup``) only find an identical stored submission;
    sends back the outcome (None: no such submission) or the refusal."""
    reserve = bytearray(16 * 2**20)  # freed before answering, so a worker at its cap can still say so
    try:
        _cap_memory(settings.rescore_memory_mb)
        db = Database(db_url, migrate=False)
        try:
            sender.send(("ok", _child_job(db, job, files, submitter, reservation, settings)))
        finally:
            db.close()
    except BaseException as exc:  # reported to the parent as a refusal of this submission
        del reserve
        if isinstance(exc, SubmissionError) and "MemoryError" not in str(exc):
            sender.send(("refused", (str(exc), exc.status)))
        elif isinstance(exc, MemoryError | SubmissionError) or _near_cap(settings.rescore_memory_mb):
            sender.send(
                (
                    "refused",
                    (
                        f"the submission needs more memory to read and re-score than this server "
                        f"gives one worker (--rescore-memory-mb {settings.rescore_memory_mb})",
                        413,
                    ),
                )
            )
        else:
            sender.send(("refused", (f"the samples cannot be scored ({type(exc).__name__}: {exc})", 422)))


def _near_cap(megabytes: int) -> bool:
    """Whether this process's address space came within 64 MB of its cap: a failure then is the cap's
    (an allocation refused inside a library surfaces as that library's error, not as MemoryError)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    peak = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmPeak:")), 0)
    return peak * 1024 >= (megabytes - 64) * 2**20


def _child_job(
    db: Database, job: str, files: dict[str, Path], submitter: str, reservation: int | None, settings: Settings
) -> Outcome | None:
    if job == SUBMIT:
        return submit_files(db, files, submitter, settings, reservation=reservation)
    bundle = parse_bundle(files, settings.limits)
    existing = find_submission(db, bundle.content_hash)
    if existing is not None:
        return Outcome(existing.id, existing.status, True, existing.checks, tuple(bundle.samples))
    if job == LOOKUP:
        return None
    registry = TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    return _store(db, bundle, timed_out(bundle, registry, settings.rescore_timeout_s), submitter, settings, reservation)


class RescoringPool:
    """Reads, re-scores and stores submissions in worker processes, at most ``workers`` at once, each
    under a memory cap and killed once it runs past ``timeout_s``: task code runs on submitted text, so
    one submission must not stall or exhaust the others, and the server process never holds a bundle's
    samples (it passes the received files' paths and gets the small outcome back)."""

    def __init__(self, workers: int, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._slots = threading.BoundedSemaphore(workers)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["harness.leaderboard.rescoring", "matplotlib.pyplot"])

    def _run(
        self,
        job: str,
        files: dict[str, Path],
        submitter: str,
        reservation: int | None,
        settings: Settings,
        db_url: str,
        budget_s: float,
    ) -> tuple[bool, Any]:
        """(answered, answer): the child's answer, or (False, None) once it ran past the budget."""
        with self._slots:
            receiver, sender = self._context.Pipe(duplex=False)
            child = self._context.Process(
                target=_in_child, daemon=True, args=(sender, job, files, submitter, reservation, settings, db_url)
            )
            child.start()
            sender.close()
            try:
                if not receiver.poll(budget_s):
                    return False, None
                kind, payload = receiver.recv()
            except EOFError:  # the child died without answering: at its memory cap it may not even manage that
                raise SubmissionError(
                    f"re-scoring stopped without an answer: the submission needs more memory to "
                    f"read and re-score than this server gives one worker (--rescore-memory-mb "
                    f"{settings.rescore_memory_mb}), or its worker was killed",
                    413,
                ) from None
            finally:
                child.kill()
                child.join()
                receiver.close()
        if kind == "refused":
            raise SubmissionError(*payload)
        return True, payload

    def submit(
        self, files: dict[str, Path], submitter: str, reservation: int | None, settings: Settings, db_url: str
    ) -> Outcome:
        """Re-score and store a received submission; past the budget it is stored as ``unverifiable
        (timeout)`` by a second worker (which only reads it), never as verified."""
        answered, outcome = self._run(SUBMIT, files, submitter, reservation, settings, db_url, self.timeout_s)
        if not answered:
            answered, outcome = self._run(TIMED_OUT, files, submitter, reservation, settings, db_url, READ_BUDGET_S)
        if not answered:
            raise SubmissionError(f"the submission could not even be read within {READ_BUDGET_S:g} s", 503)
        assert isinstance(outcome, Outcome)
        return outcome

    def lookup(self, files: dict[str, Path], settings: Settings, db_url: str) -> Outcome | None:
        """The stored submission identical to the received one (a resend), or None."""
        answered, outcome = self._run(LOOKUP, files, "", None, settings, db_url, READ_BUDGET_S)
        return outcome if answered else None


def _store(
    db: Database,
    bundle: Bundle,
    verification: Verification,
    submitter: str,
    settings: Settings,
    reservation: int | None,
) -> Outcome:
    """Apply the mismatch policy and store the record (releasing the upload's quota reservation)."""
    checks = {t: {**c.__dict__, "mismatches": list(c.mismatches)} for t, c in verification.checks.items()}
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
    return Outcome(record_id, verification.status, duplicate, checks, tuple(bundle.samples))


def submit_files(
    db: Database,
    files: Mapping[str, Source],
    submitter: str,
    settings: Settings,
    registry: TaskRegistry | None = None,
    reservation: int | None = None,
) -> Outcome:
    """Validate, re-score and store one submission, here (the server calls this in a ``RescoringPool``
    worker); idempotent on its content hash."""
    bundle = parse_bundle(files, settings.limits)
    existing = find_submission(db, bundle.content_hash)
    if existing is not None:
        return Outcome(existing.id, existing.status, True, existing.checks, tuple(bundle.samples))
    registry = registry or TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    verification = verify(bundle, registry, settings.data_dir, max_error_share=settings.max_error_share)
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
