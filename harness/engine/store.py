"""Persistent response store (SQLite, WAL) so interrupted runs resume and sampled outputs are cached.

Rows are keyed by (model fingerprint, request key, seed, sample index). The request key hashes the
prompt, the images, the generation settings and n, because the i-th of n jointly sampled completions
depends on n. All n samples of a request are written in one transaction, so a run killed at any
point leaves either all of a request's samples or none of them.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

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


class ResponseStore:
    """Read and write cached completions; ``read=False`` refreshes, ``write=False`` disables the cache."""

    def __init__(self, path: Path | None, read: bool = True, write: bool = True) -> None:
        self.path = path
        self.read = read and path is not None
        self.write = write and path is not None
        self._db: sqlite3.Connection | None = None
        if path is not None and (self.read or self.write):
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)

    def get(self, model: str, request: str, seed: int, n: int) -> list[str] | None:
        """All n cached samples, or None when any is missing."""
        if not self.read or self._db is None:
            return None
        rows = self._db.execute(
            "SELECT sample, text FROM responses WHERE model=? AND request=? AND seed=? AND sample<? "
            "ORDER BY sample", (model, request, seed, n),
        ).fetchall()
        if len(rows) < n:
            return None
        return [text for _, text in rows]

    def put(self, model: str, request: str, seed: int, texts: list[str]) -> None:
        """All n samples of one request, in one transaction."""
        self.put_many(model, [(request, seed, texts)])

    def put_many(self, model: str, rows: list[tuple[str, int, list[str]]]) -> None:
        """Many (request, seed, texts) in one transaction (also bulk imports of judge decisions)."""
        if not self.write or self._db is None:
            return
        now = time.time()
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                                 [(model, request, seed, i, t, now) for request, seed, texts in rows
                                  for i, t in enumerate(texts)])

    def first_samples(self, model: str, seed: int = 0) -> dict[str, str]:
        """Every cached request's first sample for ``model`` under ``seed``, by request: one query, so a
        caller that asks many small greedy questions (an entailment judge) can answer them from memory."""
        if not self.read or self._db is None:
            return {}
        return dict(self._db.execute("SELECT request, text FROM responses WHERE model=? AND seed=? AND sample=0",
                                     (model, seed)))

    def count(self, model: str | None = None) -> int:
        if self._db is None:
            return 0
        if model is None:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
