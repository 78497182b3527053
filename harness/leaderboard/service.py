"""The submission pipeline shared by the web service and ``harness leaderboard import``:
validate, re-score, apply the mismatch policy, store."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.leaderboard.bundle import Bundle, Limits, SubmissionError, parse_bundle, read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.hooks import Job, LeaderboardHooks, board_protocols, resolve_options
from harness.leaderboard.records import find_submission, store_submission
from harness.leaderboard.rescoring import MAX_ERROR_SHARE, Verification, timed_out, verify
from harness.taskspec.registry import TaskRegistry

ON_MISMATCH = ("flag", "refuse")


@dataclass(frozen=True)
class Quota:
    """What one submitter (token) may store in any 24 hours: submissions and bytes of files."""

    submissions_per_day: int = 50
    bytes_per_day: int = 1024 * 2**20


@dataclass(frozen=True)
class Settings:
    """How a leaderboard re-scores and stores submissions.

    ``on_mismatch``: ``flag`` stores a submission whose claimed figures differ from the re-scored ones
    and marks it (the page shows the server's figures); ``refuse`` rejects it with the differences.
    ``protocol_options``: per protocol, values of the options its leaderboard hooks declare."""

    db_url: str | None = None
    data_dir: Path | None = None
    include_paths: tuple[str, ...] = ()
    on_mismatch: str = "flag"
    limits: Limits = field(default_factory=Limits)
    protocol_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_error_share: float = MAX_ERROR_SHARE
    rescore_timeout_s: float = 120.0
    rescore_workers: int = 2
    quota: Quota = field(default_factory=Quota)
    page_size: int = 25  # rows of a table per page

    def __post_init__(self) -> None:
        if self.on_mismatch not in ON_MISMATCH:
            raise HarnessError(f"on_mismatch {self.on_mismatch!r}: choose {' or '.join(ON_MISMATCH)}")
        if self.page_size < 1:
            raise HarnessError("--page-size must be at least 1")
        if not 0 <= self.max_error_share <= 1:
            raise HarnessError("--max-error-share must be between 0 and 1")
        if not self.rescore_timeout_s > 0 or self.rescore_workers < 1:
            raise HarnessError("--rescore-timeout must be over 0 seconds and --rescore-workers at least 1")
        known = {p.name: h for p, h in board_protocols()}
        for name, given in self.protocol_options.items():
            if name not in known:
                raise HarnessError(f"leaderboard options for {name!r}: no such protocol with leaderboard hooks")
            resolve_options(known[name], given)

    def options(self, protocol: str, hooks: LeaderboardHooks) -> dict[str, Any]:
        """The option values of ``protocol``'s leaderboard hooks (defaults filled in)."""
        return resolve_options(hooks, self.protocol_options.get(protocol))


def _verify_in_child(sender: Connection, bundle: Bundle, include_paths: tuple[str, ...],
                     data_dir: Path | None, max_error_share: float) -> None:
    """A worker process's job: re-score and send back the verification or the refusal."""
    try:
        registry = TaskRegistry.discover(list(include_paths))
        sender.send(("ok", verify(bundle, registry, data_dir, max_error_share=max_error_share)))
    except SubmissionError as exc:
        sender.send(("refused", (str(exc), exc.status)))
    except BaseException as exc:  # reported to the parent as a refusal of this submission
        sender.send(("refused", (f"the samples cannot be scored ({type(exc).__name__}: {exc})", 422)))


class RescoringPool:
    """Re-scores submissions in worker processes, at most ``workers`` at once, each killed once it runs
    past ``timeout_s``: task code runs on submitted text, so one submission must not stall the others
    (the parent holds no lock while a child works, and a runaway child is ended, not waited for)."""

    def __init__(self, workers: int, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._slots = threading.BoundedSemaphore(workers)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["harness.leaderboard.rescoring", "matplotlib.pyplot"])

    def verify(self, bundle: Bundle, registry: TaskRegistry, settings: Settings) -> Verification:
        """The server's verification of ``bundle``; ``unverifiable (timeout)`` past the budget."""
        with self._slots:
            receiver, sender = self._context.Pipe(duplex=False)
            child = self._context.Process(target=_verify_in_child, daemon=True,
                                          args=(sender, bundle, settings.include_paths, settings.data_dir,
                                                settings.max_error_share))
            child.start()
            sender.close()
            try:
                answer = receiver.recv() if receiver.poll(self.timeout_s) else None
            except EOFError:  # the child died without answering (killed for memory, crashed)
                raise SubmissionError("re-scoring stopped without an answer; the samples cannot be scored") from None
            finally:
                child.kill()
                child.join()
                receiver.close()
        if answer is None:
            return timed_out(bundle, registry, self.timeout_s)
        kind, payload = answer
        if kind == "refused":
            raise SubmissionError(*payload)
        return payload


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
        return {"id": self.id, "status": self.status, "duplicate": self.duplicate, "checks": self.checks,
                "tasks": list(self.tasks), "page": f"model/{self.id}.html"}


def submit_files(db: Database, files: dict[str, bytes], submitter: str, settings: Settings,
                 registry: TaskRegistry | None = None, pool: RescoringPool | None = None) -> Outcome:
    """Validate, re-score (in ``pool``'s worker processes, else here) and store one submission
    (idempotent on its content hash)."""
    bundle = parse_bundle(files, settings.limits)
    tasks = tuple(bundle.samples)
    existing = find_submission(db, bundle.content_hash)
    if existing is not None:
        return Outcome(existing.id, existing.status, True, existing.checks, tasks)
    registry = registry or TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    if pool is not None:
        verification = pool.verify(bundle, registry, settings)
    else:
        verification = verify(bundle, registry, settings.data_dir, max_error_share=settings.max_error_share)
    checks = {t: {**c.__dict__, "mismatches": list(c.mismatches)} for t, c in verification.checks.items()}
    if verification.status == "flagged" and settings.on_mismatch == "refuse":
        detail = "; ".join(f"{t}: {c.message}" for t, c in verification.checks.items() if c.status == "mismatch")
        raise SubmissionError(f"claimed figures differ from the re-scored samples ({detail})", 409)
    record_id, duplicate = store_submission(db, bundle, verification, submitter)
    return Outcome(record_id, verification.status, duplicate, checks, tasks)


def import_runs(db: Database, run_dirs: list[Path], submitter: str,
                settings: Settings) -> list[tuple[Path, Outcome | SubmissionError]]:
    """Ingest run folders (a Hub-layout clone), each through the same checks as an upload; a refused run
    is reported and the others go on. Then runs each protocol's after-submission job once if new
    submissions carry its tasks."""
    registry = TaskRegistry.discover(list(settings.include_paths), shadowing="error")
    outcomes: list[tuple[Path, Outcome | SubmissionError]] = []
    for run_dir in run_dirs:
        try:
            outcomes.append((run_dir, submit_files(db, read_run_files(run_dir), submitter, settings, registry)))
        except SubmissionError as exc:
            outcomes.append((run_dir, exc))
    new = [o for _, o in outcomes if isinstance(o, Outcome) and not o.duplicate]
    for _, job, options in due_jobs(settings, [t for o in new for t in o.tasks]):
        job.run(db, options)
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
