"""The protocols' ``PoolStore`` (:mod:`harness.protocols.pool_store`) on the leaderboard's database: the
submissions' stored files, and the ``pool_computations`` rows of one protocol. The server, the importer and
the page drawing hand each protocol's hooks one of these, scoped to that protocol."""

from __future__ import annotations

from sqlalchemy import select

from harness.leaderboard.db import Database, PoolComputation, StoredFile, Submission
from harness.protocols.pool_store import PoolMember, PoolResult, StoredPool


class DatabasePoolStore:
    """A ``PoolStore`` on ``db`` for the protocol called ``protocol``: it records that protocol's pool
    computations and reads only those back."""

    def __init__(self, db: Database, protocol: str) -> None:
        self.db, self.protocol = db, protocol

    def submissions_with_file(self, name: str) -> list[PoolMember]:
        """Every submission that stored a file called ``name``, oldest first."""
        with self.db.session() as session:
            rows = session.execute(
                select(Submission.id, Submission.model)
                .join(StoredFile, StoredFile.submission_id == Submission.id)
                .where(StoredFile.name == name)
                .order_by(Submission.id)
            )
            return [PoolMember(submission_id, model) for submission_id, model in rows]

    def read_file(self, submission_id: int, name: str) -> bytes | None:
        """The stored file ``name`` of the submission, or None if it has none."""
        with self.db.session() as session:
            return session.scalar(
                select(StoredFile.content).where(StoredFile.submission_id == submission_id, StoredFile.name == name)
            )

    def record_pool(self, result: PoolResult) -> int:
        """Stores the computation as this protocol's, timestamped now; returns its id."""
        row = PoolComputation(
            protocol=self.protocol,
            task=result.task,
            judge=result.judge,
            config=dict(result.config),
            members=[{"submission_id": m.submission_id, "model": m.model} for m in result.members],
            per_model={model: dict(figures) for model, figures in result.per_model.items()},
            status=result.status,
            message=result.message,
            plot=result.plot,
        )
        with self.db.session() as session:
            session.add(row)
            session.commit()
            return row.id

    def latest_pool(self, task: str) -> StoredPool | None:
        """This protocol's most recent computation over ``task``, or None before the first."""
        with self.db.session() as session:
            row = session.scalar(
                select(PoolComputation)
                .where(PoolComputation.protocol == self.protocol, PoolComputation.task == task)
                .order_by(PoolComputation.id.desc())
                .limit(1)
            )
        if row is None:
            return None
        return StoredPool(
            id=row.id,
            computed_at=row.computed_at,
            task=row.task,
            judge=row.judge,
            config=row.config,
            members=tuple(PoolMember(int(m["submission_id"]), str(m["model"])) for m in row.members),
            per_model=row.per_model,
            status=row.status,
            message=row.message,
            plot=row.plot,
        )
