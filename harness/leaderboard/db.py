"""The leaderboard's database: SQLAlchemy models, engine setup and schema migrations (alembic).

An embedded SQLite file by default; PostgreSQL (or any SQLAlchemy URL) through ``--db``. The schema is
created and upgraded only by the migration scripts shipped in ``migrations/``, so a database made by an
older release is upgraded in place when the server opens it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship, sessionmaker

from harness.errors import HarnessError
from harness.paths import cache_root

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (the database's timestamps)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every database (SQLite stores it without the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        """The stored timestamp with its UTC zone put back where the database dropped it."""
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class Base(DeclarativeBase):
    """The declarative base of the leaderboard's tables; JSON columns for dict and list fields."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Token(Base):
    """A submitter's token; only its sha256 is stored."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class Submission(Base):
    """One submitted run: immutable, keyed by the content hash of its results and samples."""

    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    model: Mapped[str] = mapped_column(String(500), index=True)
    model_id: Mapped[str | None] = mapped_column(String(500), nullable=True)
    revision: Mapped[str | None] = mapped_column(String(200), nullable=True)
    backend: Mapped[str | None] = mapped_column(String(50), nullable=True)
    family: Mapped[str | None] = mapped_column(String(100), nullable=True)
    parameters: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    access: Mapped[str] = mapped_column(String(10))
    smoke_test_model: Mapped[bool] = mapped_column(Boolean, default=False)
    harness_version: Mapped[str | None] = mapped_column(String(50), nullable=True)
    git_revision: Mapped[str | None] = mapped_column(String(100), nullable=True)
    submitter: Mapped[str] = mapped_column(String(200))
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    status: Mapped[str] = mapped_column(String(20))
    claimed: Mapped[dict[str, Any]] = mapped_column(JSON)
    recomputed: Mapped[dict[str, Any]] = mapped_column(JSON)
    checks: Mapped[dict[str, Any]] = mapped_column(JSON)
    scores: Mapped[list[Score]] = relationship(back_populates="submission", order_by="Score.id")
    files: Mapped[list[StoredFile]] = relationship(back_populates="submission", order_by="StoredFile.id")


class Score(Base):
    """One metric of one task of a submission: the server's value, its stderr and the claimed value."""

    __tablename__ = "scores"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    task: Mapped[str] = mapped_column(String(200), index=True)
    protocol: Mapped[str] = mapped_column(String(100), index=True)
    version: Mapped[str | None] = mapped_column(String(50), nullable=True)
    metric: Mapped[str] = mapped_column(String(200))
    value: Mapped[float | None] = mapped_column(Float, nullable=True)
    stderr: Mapped[float | None] = mapped_column(Float, nullable=True)
    claimed: Mapped[float | None] = mapped_column(Float, nullable=True)
    higher_is_better: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    n: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(20))
    submission: Mapped[Submission] = relationship(back_populates="scores")


class StoredFile(Base):
    """A file of a submission (results.json, samples, plots, the server's chart), kept byte for byte."""

    __tablename__ = "files"
    __table_args__ = (UniqueConstraint("submission_id", "name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    name: Mapped[str] = mapped_column(String(300))
    kind: Mapped[str] = mapped_column(String(20))
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    submission: Mapped[Submission] = relationship(back_populates="files")


class Reservation(Base):
    """An upload in flight, counted against its submitter's quota until it is stored or refused."""

    __tablename__ = "quota_reservations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submitter: Mapped[str] = mapped_column(String(200), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class UploadArrival(Base):
    """An authenticated upload's arrival, refused or not, kept for a minute: the rate limit counts these."""

    __tablename__ = "upload_arrivals"
    __table_args__ = (Index("ix_upload_arrivals_submitter_arrived_at", "submitter", "arrived_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submitter: Mapped[str] = mapped_column(String(200))
    arrived_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PoolComputation(Base):
    """One computation of a protocol's cross-model pool (a job of its leaderboard hooks): whose pool, who
    was in it, when, with which judge and settings, and the figures (``harness.protocols.pool_store``)."""

    __tablename__ = "pool_computations"
    __table_args__ = (Index("ix_pool_computations_protocol_task", "protocol", "task"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    protocol: Mapped[str] = mapped_column(String(100))
    task: Mapped[str] = mapped_column(String(200))
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    status: Mapped[str] = mapped_column(String(20))
    message: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    judge: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    members: Mapped[list[Any]] = mapped_column(JSON)
    per_model: Mapped[dict[str, Any]] = mapped_column(JSON)
    plot: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


def default_db_url() -> str:
    """``sqlite:///$HARNESS_CACHE/leaderboard.sqlite`` (the harness cache, as for tiny models)."""
    return f"sqlite:///{cache_root() / 'leaderboard.sqlite'}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get WAL mode and a busy timeout so concurrent writers queue."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise HarnessError(f"--db {url!r}: not a database URL (sqlite:///FILE or postgresql+psycopg://...)") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(parsed, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(parsed, pool_pre_ping=True, pool_size=10, max_overflow=20)


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (creates it in an empty database)."""
    from alembic import command  # the [leaderboard] extra
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


class Database:
    """An opened, migrated leaderboard database and its session factory."""

    def __init__(self, url: str | None = None, migrate: bool = True) -> None:
        self.url = url or default_db_url()
        self.engine = make_engine(self.url)
        try:
            if migrate:  # a re-scoring worker opens a database its server has already migrated
                upgrade(self.engine)
        except Exception as exc:
            if isinstance(exc, HarnessError):
                raise
            raise HarnessError(
                f"cannot open the leaderboard database {self.engine.url!r}: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            ) from exc
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        """A new ORM session on this database (use as a context manager)."""
        return self.sessions()

    def close(self) -> None:
        """Disposes of the engine and its pooled connections."""
        self.engine.dispose()
