"""Admission control: per-submitter quotas reserved atomically, and a per-submitter rate limit.

A quota is checked and reserved in one transaction, before an upload's files are received: a
reservation row counts against the submitter until the submission is stored (the row is deleted in the
storing transaction) or refused (deleted then). PostgreSQL serialises a submitter's reservations with
a row lock on the token; SQLite, whose writers are serialised already, takes its write lock with the
insert that opens the transaction. The rate limit counts every authenticated upload, refused or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from harness.leaderboard.db import Database, Reservation, StoredFile, Submission, Token, UploadArrival, utcnow

WINDOW = timedelta(minutes=1)  # the rate limit's window
STALE_AFTER = timedelta(hours=1)  # a reservation left by a server that died mid-upload stops counting


@dataclass(frozen=True)
class Quota:
    """What one submitter (token) may store in any 24 hours: submissions and bytes of files; and how
    many uploads it may send a minute (refused ones count too)."""

    submissions_per_day: int = 50
    bytes_per_day: int = 1024 * 2**20
    uploads_per_minute: int = 30


def _usage(session: Session, submitter: str) -> tuple[int, int]:
    """(submissions, bytes) stored or reserved for ``submitter`` in the last 24 hours."""
    now = utcnow()
    since = now - timedelta(days=1)
    count = (
        session.scalar(
            select(func.count(Submission.id)).where(Submission.submitter == submitter, Submission.submitted_at >= since)
        )
        or 0
    )
    size = (
        session.scalar(
            select(func.coalesce(func.sum(StoredFile.size), 0))
            .join(Submission, StoredFile.submission_id == Submission.id)
            .where(Submission.submitter == submitter, Submission.submitted_at >= since)
        )
        or 0
    )
    held = session.execute(
        select(func.count(Reservation.id), func.coalesce(func.sum(Reservation.size), 0)).where(
            Reservation.submitter == submitter, Reservation.created_at >= now - STALE_AFTER
        )
    ).one()
    return int(count) + int(held[0]), int(size) + int(held[1])


def usage_last_day(db: Database, submitter: str) -> tuple[int, int]:
    """(submissions, bytes of their files) stored or reserved for ``submitter`` in the last 24 hours."""
    with db.session() as session:
        return _usage(session, submitter)


def reserve(db: Database, submitter: str, size: int, quota: Quota) -> tuple[int | None, str | None]:
    """(reservation id, None) when ``submitter`` may send ``size`` more bytes now, else (None, why not)."""
    with db.session() as session, session.begin():
        if db.engine.dialect.name == "sqlite":
            row = Reservation(submitter=submitter, size=size)
            session.add(row)
            session.flush()  # the insert takes SQLite's write lock before the usage is counted
        else:
            session.execute(select(Token.id).where(Token.name == submitter).with_for_update())
            row = None
        count, stored = _usage(session, submitter)
        if row is not None:
            count, stored = count - 1, stored - size
        why = None
        if count >= quota.submissions_per_day:
            why = (
                f"{submitter!r} stored {count} submissions in the last 24 hours (in flight included), this "
                f"server's quota (--quota-submissions {quota.submissions_per_day}); try again later"
            )
        elif stored + size > quota.bytes_per_day:
            why = (
                f"{submitter!r} stored {stored} bytes in the last 24 hours (in flight included); {size} more "
                f"is over this server's quota of {quota.bytes_per_day} bytes (--quota-mb); try again later"
            )
        if why is not None:
            if row is not None:
                session.delete(row)
            return None, why
        if row is None:
            row = Reservation(submitter=submitter, size=size)
            session.add(row)
            session.flush()
        return row.id, None


def release(db: Database, reservation: int) -> None:
    """Deletes a reservation (a refused or duplicate upload); a stored submission's is already gone."""
    with db.session() as session, session.begin():
        session.execute(delete(Reservation).where(Reservation.id == reservation))


class RateLimit:
    """At most ``per_minute`` uploads a submitter in any 60 seconds, counted in the database when they
    arrive (refused uploads spend the allowance too), so every server process on one database shares
    the allowance and a restart does not renew it. Serialised per submitter as :func:`reserve` is."""

    def __init__(self, db: Database, per_minute: int) -> None:
        self.db, self.per_minute = db, per_minute

    def admit(self, submitter: str) -> float | None:
        """None when the upload may proceed (and counts it), else the seconds until it may."""
        now = utcnow()
        since = now - WINDOW
        with self.db.session() as session, session.begin():
            row = UploadArrival(submitter=submitter, arrived_at=now)
            if self.db.engine.dialect.name == "sqlite":
                session.add(row)
                session.flush()  # the insert takes SQLite's write lock before the arrivals are counted
            else:
                session.execute(select(Token.id).where(Token.name == submitter).with_for_update())
            session.execute(
                delete(UploadArrival).where(UploadArrival.submitter == submitter, UploadArrival.arrived_at <= since)
            )
            earlier = session.scalars(
                select(UploadArrival.arrived_at)
                .where(
                    UploadArrival.submitter == submitter, UploadArrival.arrived_at > since, UploadArrival.id != row.id
                )
                .order_by(UploadArrival.arrived_at)
                .limit(self.per_minute)
            ).all()
            if len(earlier) >= self.per_minute:
                if row.id is not None:
                    session.delete(row)
                return max(0.0, (earlier[0] - since).total_seconds())
            if row.id is None:
                session.add(row)
            return None
