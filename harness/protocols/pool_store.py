"""What a protocol's leaderboard hooks may read and write of the leaderboard's database, typed: the
submissions' stored files and the protocol's own cross-model pool computations (VISTA's peer pool is one).

The leaderboard implements ``PoolStore`` on its database and hands each protocol's job, pooled figures and
panels a store scoped to that protocol, so protocol code never sees the database, its tables or its
sessions, and two protocols pooling the same task never read each other's computations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class PoolMember:
    """One submission in a pool: its id on the leaderboard and its model's name."""

    submission_id: int
    model: str


@dataclass(frozen=True, kw_only=True)
class PoolResult:
    """One computation of a cross-model pool, as a job records it: the task pooled, its members, the judge
    and settings, how it went (``status``: e.g. ok, waiting, failed; ``message``: why), the figures by
    model and an optional plot (PNG)."""

    task: str
    judge: str
    config: Mapping[str, Any]
    members: tuple[PoolMember, ...]
    per_model: Mapping[str, Mapping[str, Any]]
    status: str
    message: str | None = None
    plot: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, kw_only=True)
class StoredPool(PoolResult):
    """A pool computation as the store keeps it: with its id and when it was stored (UTC)."""

    id: int
    computed_at: datetime


class PoolStore(Protocol):
    """The leaderboard's database as one protocol's hooks see it."""

    def submissions_with_file(self, name: str) -> Sequence[PoolMember]:
        """Every submission that stored a file called ``name`` (e.g. ``samples_vista.jsonl``), oldest first."""
        ...

    def read_file(self, submission_id: int, name: str) -> bytes | None:
        """The stored file ``name`` of the submission, byte for byte; None if it has none."""
        ...

    def record_pool(self, result: PoolResult) -> int:
        """Stores a pool computation of this protocol; returns its id."""
        ...

    def latest_pool(self, task: str) -> StoredPool | None:
        """This protocol's most recent pool computation over ``task``; None before the first."""
        ...
