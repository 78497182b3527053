"""Persistent response store (SQLite, WAL) so interrupted runs resume and sampled outputs are cached.

Rows are keyed by (model fingerprint, request key, seed, sample index). The request key hashes the
prompt, the images, the generation settings and n, because the i-th of n jointly sampled completions
depends on n. All n samples of a request are written in one transaction, so a run killed at any
point leaves either all of a request's samples or none of them.

A store that cannot be opened or read (not a database, malformed, a directory) fails in one line that
names the file and the fix. A store whose write lock another process holds, or whose disk is full or
read-only, never loses a run: see :meth:`ResponseStore.put_many`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.disk import disk_problem, is_disk_error
from harness.errors import HarnessError
from harness.results.jsonl import jsonl_lines, loads_line
from harness.secrets import redact_text
from harness.unencodable import writable_text

log = logging.getLogger(__name__)

#: How long a write waits for another writer's transaction (ordinary sharing between concurrent runs).
BUSY_TIMEOUT_S = 5.0
#: How long :meth:`ResponseStore.close` waits for a lock still held before saving kept answers to a side file.
LOCK_WAIT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    seed INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (model, request, seed, sample)
) WITHOUT ROWID;
"""


Row = tuple[str, str, int, list[str]]  # model, request, seed, texts


def _is_lock(exc: Exception) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


class ResponseStore:
    """Read and write cached completions; ``read=False`` refreshes, ``write=False`` disables the cache."""

    def __init__(self, path: Path | None, read: bool = True, write: bool = True) -> None:
        self.path = path
        self.read = read and path is not None
        self.write = write and path is not None
        self._db: sqlite3.Connection | None = None
        self._pending: list[Row] = []
        self._locked = False
        self._unwritable: str | None = None  # why the last write failed on a full or read-only disk
        if path is not None and (self.read or self.write):
            with self._errors():
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
            if self.write:
                self._merge_side_files()

    def _failure(self, exc: Exception) -> HarnessError:
        """An SQLite or file-system failure as one line naming the store and the ways around it."""
        fix = "pass --cache with another file, or --no-cache"
        if _is_lock(exc):
            return HarnessError(f"response store {self.path} is locked by another process: let it finish, or {fix}")
        if is_disk_error(exc):
            assert self.path is not None
            return HarnessError(f"response store {disk_problem(self.path, exc)}: free space, or {fix}")
        return HarnessError(
            f"response store {self.path} cannot be used ({exc}): {fix}, or delete the file if it holds nothing you need"
        )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.DatabaseError, OSError) as exc:
            raise self._failure(exc) from None

    def get(self, model: str, request: str, seed: int, n: int) -> list[str] | None:
        """All n cached samples, or None when any is missing."""
        if not self.read or self._db is None:
            return None
        model, request = redact_text(model), redact_text(request)
        for row in reversed(self._pending):
            if row[:3] == (model, request, seed) and len(row[3]) >= n:
                return row[3][:n]
        with self._errors():
            rows = self._db.execute(
                "SELECT sample, text FROM responses WHERE model=? AND request=? AND seed=? AND sample<? "
                "ORDER BY sample",
                (model, request, seed, n),
            ).fetchall()
        if len(rows) < n:
            return None
        return [text for _, text in rows]

    def put(self, model: str, request: str, seed: int, texts: list[str]) -> None:
        """All n samples of one request, in one transaction."""
        self.put_many(model, [(request, seed, texts)])

    def put_many(self, model: str, rows: list[tuple[str, int, list[str]]]) -> None:
        """Many (request, seed, texts) in one transaction (also bulk imports of judge decisions).

        When another process holds the write lock for longer than ``BUSY_TIMEOUT_S``, or the disk is full,
        over quota or read-only, the answers are kept in memory (and served by :meth:`get`), one warning
        says why, and every later write retries them without waiting, so generation goes on; :meth:`close`
        waits up to ``LOCK_WAIT_S`` for a lock and then saves what is still kept to a side file beside the
        store, merged into it the next time the store is opened for writing. Answers written before the
        failure stay in the store; nothing generated is lost, and no run fails for a busy or full store."""
        if not self.write or self._db is None:
            return
        model = redact_text(model)
        self._pending.extend(
            (model, redact_text(request), seed, [redact_text(writable_text(t)) for t in texts])
            for request, seed, texts in rows
        )
        self._flush(0.0 if self._locked or self._unwritable else BUSY_TIMEOUT_S)

    def _flush(self, wait_s: float) -> bool:
        """Write the kept answers in one transaction, waiting up to ``wait_s`` for the lock; True when written."""
        if not self._pending or self._db is None:
            return True
        self._db.execute(f"PRAGMA busy_timeout={int(wait_s * 1000)}")
        try:
            self._insert(self._pending)
        except (sqlite3.DatabaseError, OSError) as exc:
            if is_disk_error(exc) and not _is_lock(exc):
                if self._unwritable is None:
                    assert self.path is not None
                    log.warning(
                        "response store %s; generation goes on and new answers are kept in memory "
                        "(answers written before are kept in the store)",
                        disk_problem(self.path, exc),
                    )
                self._unwritable = str(exc)
                return False
            if not _is_lock(exc):
                raise self._failure(exc) from None
            if not self._locked:
                log.warning(
                    "response store %s is locked by another process; waiting for it, generation goes "
                    "on and answers are kept in memory until the lock is released",
                    self.path,
                )
            self._locked = True
            return False
        if self._locked or self._unwritable:
            log.warning("response store %s: writable again, %d kept request(s) written", self.path, len(self._pending))
        self._pending, self._locked, self._unwritable = [], False, None
        return True

    def _insert(self, rows: list[Row]) -> None:
        """One write transaction, taken up front (BEGIN IMMEDIATE) so a lock shows before any work."""
        assert self._db is not None
        now = time.time()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (model, request, seed, i, t, now)
                    for model, request, seed, texts in rows
                    for i, t in enumerate(texts)
                ],
            )
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite has already rolled back after a full disk or an I/O error
                self._db.execute("ROLLBACK")
            raise

    def _side_files(self) -> list[Path]:
        assert self.path is not None
        return sorted(self.path.parent.glob(f"{self.path.name}.pending-*.jsonl"))

    def _merge_side_files(self) -> None:
        """Import answers an earlier run kept while this store was locked; a file stays until it is merged."""
        assert self._db is not None  # called once the store is open
        for side in self._side_files():
            rows: list[Row] = []
            for lineno, line in jsonl_lines(side.read_text(encoding="utf-8")):
                try:
                    item = loads_line(line, f"{side} line {lineno}")
                    rows.append((item["model"], item["request"], int(item["seed"]), list(item["texts"])))
                except (HarnessError, ValueError, KeyError, TypeError):
                    log.warning("%s: skipping an unreadable line", side)
            try:
                self._db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
                self._insert(rows)
            except sqlite3.DatabaseError as exc:
                if not _is_lock(exc):
                    raise self._failure(exc) from None
                log.warning(
                    "response store %s is locked by another process; %s stays to be merged later", self.path, side
                )
                return
            side.unlink(missing_ok=True)
            log.info("merged %d kept request(s) from %s into %s", len(rows), side, self.path)

    def first_samples(self, model: str, seed: int = 0) -> dict[str, str]:
        """Every cached request's first sample for ``model`` under ``seed``, by request: one query, so a
        caller that asks many small greedy questions (an entailment judge) can answer them from memory."""
        if not self.read or self._db is None:
            return {}
        model = redact_text(model)
        with self._errors():
            out = dict(
                self._db.execute(
                    "SELECT request, text FROM responses WHERE model=? AND seed=? AND sample=0", (model, seed)
                )
            )
        out.update({r: texts[0] for m, r, s, texts in self._pending if (m, s) == (model, seed) and texts})
        return out

    def count(self, model: str | None = None) -> int:
        """How many responses the store holds, for one model fingerprint or in all."""
        if self._db is None:
            return 0
        model = None if model is None else redact_text(model)
        with self._errors():
            if model is None:
                return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0])

    def close(self) -> None:
        """Close the store; answers kept during a lock are written, or saved to a side file (never raises
        for a lock, so the caller can still write its results)."""
        if self._db is None:
            return
        if self._pending and self._locked:
            log.warning(
                "response store %s is still locked; waiting up to %gs to write %d kept request(s)",
                self.path,
                LOCK_WAIT_S,
                len(self._pending),
            )
            if not self._flush(LOCK_WAIT_S):
                self._spill()
        elif self._pending and not self._flush(0.0):
            self._spill()
        try:
            self._db.close()
        except sqlite3.DatabaseError as exc:  # a last checkpoint on a full disk: the WAL keeps the answers
            log.warning(
                "response store %s: closing failed (%s); its write-ahead log keeps the written answers", self.path, exc
            )
        self._db = None

    def _spill(self) -> None:
        assert self.path is not None
        side = self.path.with_name(f"{self.path.name}.pending-{os.getpid()}-{time.time_ns()}.jsonl")
        lines = "".join(
            json.dumps({"model": m, "request": r, "seed": s, "texts": t}) + "\n" for m, r, s, t in self._pending
        )
        why = f"cannot be written ({self._unwritable})" if self._unwritable else "stayed locked"
        try:
            side.write_text(lines, encoding="utf-8")
        except OSError as exc:
            side.unlink(missing_ok=True)
            log.error(
                "response store %s %s and %s: %d request(s) are only in this run's samples files",
                self.path,
                why,
                disk_problem(side, exc, len(lines.encode())),
                len(self._pending),
            )
            return
        log.warning(
            "response store %s %s: %d request(s) saved to %s, merged into the store the next time it is opened",
            self.path,
            why,
            len(self._pending),
            side,
        )
        self._pending = []
