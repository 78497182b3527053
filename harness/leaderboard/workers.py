"""The worker processes that read, re-score and store uploads for the server: at most ``--rescore-workers``
at once, each under a memory cap (``--rescore-memory-mb``) and killed at the end of one budget
(``--rescore-timeout``), so task code running on submitted text cannot stall or exhaust the server; the
server process never holds a bundle's samples (it passes the received files' paths and gets the small
outcome back)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from harness.leaderboard.bundle import SubmissionError, parse_bundle
from harness.leaderboard.db import Database
from harness.leaderboard.service import RESCORE_SHARE, Outcome, Settings, stored_outcome, submit_files

LOOKUP, SUBMIT = "lookup", "submit"  # what a re-scoring worker is asked to do


def _cap_memory(megabytes: int) -> None:
    """Caps this process's address space, so a hostile submission ends its worker, not the server."""
    import resource

    limit = megabytes * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


@dataclass(frozen=True)
class _Job:
    """What one worker is asked to do with one upload's received files."""

    kind: str  # LOOKUP or SUBMIT
    files: dict[str, Path]
    settings: Settings
    db_url: str
    submitter: str = ""
    reservation: int | None = None

    def run(self, db: Database, rescore_by: float) -> Outcome | None:
        """Read the files, then (``submit``) re-score and store them (as unverifiable once re-scoring runs
        past ``rescore_by``, a ``time.monotonic()`` instant), or (``lookup``) only find an identical stored
        submission (None: there is none)."""
        if self.kind == SUBMIT:
            return submit_files(
                db, self.files, self.submitter, self.settings, reservation=self.reservation, rescore_by=rescore_by
            )
        return stored_outcome(db, parse_bundle(self.files, self.settings.limits))


def _in_child(sender: Connection, job: _Job, rescore_by: float) -> None:
    """A worker process: runs ``job`` under the memory cap and sends back its outcome or the refusal."""
    settings = job.settings
    reserve = bytearray(16 * 2**20)  # freed before answering, so a worker at its cap can still say so
    try:
        _cap_memory(settings.rescore_memory_mb)
        db = Database(job.db_url, migrate=False)
        try:
            sender.send(("ok", job.run(db, rescore_by)))
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


class RescoringPool:
    """Reads, re-scores and stores submissions in worker processes, at most ``workers`` at once, each
    under a memory cap and killed once it runs past ``timeout_s``: task code runs on submitted text, so
    one submission must not stall or exhaust the others, and the server process never holds a bundle's
    samples (it passes the received files' paths and gets the small outcome back). ``timeout_s`` bounds
    all the work of one upload, within the quota or past it: one worker reads it, re-scores it for
    ``RESCORE_SHARE`` of the budget and stores it (as unverifiable past that share), or only looks it up."""

    def __init__(self, workers: int, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._slots = threading.BoundedSemaphore(workers)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["harness.leaderboard.rescoring", "matplotlib.pyplot"])

    def _run(self, job: _Job) -> tuple[bool, Any]:
        """(answered, answer): the child's answer, or (False, None) once it ran past the budget."""
        with self._slots:
            receiver, sender = self._context.Pipe(duplex=False)
            started = time.monotonic()
            rescore_by = started + self.timeout_s * RESCORE_SHARE
            child = self._context.Process(target=_in_child, daemon=True, args=(sender, job, rescore_by))
            child.start()
            sender.close()
            try:
                if not receiver.poll(max(0.0, started + self.timeout_s - time.monotonic())):
                    return False, None
                kind, payload = receiver.recv()
            except EOFError:  # the child died without answering: at its memory cap it may not even manage that
                raise SubmissionError(
                    f"re-scoring stopped without an answer: the submission needs more memory to "
                    f"read and re-score than this server gives one worker (--rescore-memory-mb "
                    f"{job.settings.rescore_memory_mb}), or its worker was killed",
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
        """Re-score and store a received submission; past its share of the budget it is stored as
        ``unverifiable (timeout)``, never as verified; a worker still busy at the end of the budget (its
        reading or its storing, stalled) is stopped and the upload refused (503)."""
        answered, outcome = self._run(_Job(SUBMIT, files, settings, db_url, submitter, reservation))
        if not answered:
            raise SubmissionError(
                f"the submission could not be read and stored within this server's {self.timeout_s:g} s budget "
                "(--rescore-timeout)",
                503,
            )
        assert isinstance(outcome, Outcome)
        return outcome

    def lookup(self, files: dict[str, Path], settings: Settings, db_url: str) -> Outcome | None:
        """The stored submission identical to the received one (a resend), or None; the same budget."""
        answered, outcome = self._run(_Job(LOOKUP, files, settings, db_url))
        return outcome if answered else None
