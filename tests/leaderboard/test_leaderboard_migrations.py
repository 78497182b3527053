"""The leaderboard's schema migrations on real databases, and the pool store the protocols' hooks get:
``vista_pools`` (migration 0001) renamed to ``pool_computations`` by 0004, its rows kept through the upgrade
and the downgrade; the store reading stored files and only its own protocol's pools."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import select

from harness.leaderboard.bundle import read_run_files
from harness.leaderboard.db import MIGRATIONS, Base, Database, PoolComputation, make_engine
from harness.leaderboard.pool_store import DatabasePoolStore
from harness.leaderboard.service import Settings, import_runs, submit_files
from harness.protocols.pool_store import PoolMember, PoolResult
from harness.protocols.vista.pool import pool_members
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    edited_run,
)

BEFORE = "0003"  # the head before the pool table was renamed
HEAD = "0005"
WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OLD_ROWS = [
    {
        "task": "vista",
        "computed_at": WHEN,
        "status": "waiting",
        "message": "1 model(s) with vista samples; the audit needs at least two",
        "judge": "embedding",
        "config": {"task": "vista", "theta": 0.6},
        "members": [{"submission_id": 1, "model": "tiny:llava"}],
        "per_model": {},
        "plot": None,
    },
    {
        "task": "vista",
        "computed_at": WHEN.replace(hour=13),
        "status": "ok",
        "message": "2 models, 3 shared queries",
        "judge": "embedding:0.9",
        "config": {"task": "vista", "theta": 0.3},
        "members": [{"submission_id": 1, "model": "tiny:llava"}, {"submission_id": 2, "model": "tiny:qwen2_vl"}],
        "per_model": {"tiny:llava": {"queries": 3, "mean_suspicion": 0.25, "submission_id": 1}},
        "plot": b"\x89PNG fake",
    },
]


def migrate(url: str, revision: str, down: bool = False) -> None:
    """Upgrade (or downgrade) the database at ``url`` to ``revision`` with the shipped migrations."""
    engine = make_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)
    engine.dispose()


def _old_table() -> sa.Table:
    """``vista_pools`` as migration 0001 made it."""
    return sa.Table(
        "vista_pools",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        *(sa.Column(n, sa.String) for n in ("task", "status", "message", "judge")),
        sa.Column("computed_at", sa.DateTime(timezone=True)),
        *(sa.Column(n, sa.JSON) for n in ("config", "members", "per_model")),
        sa.Column("plot", sa.LargeBinary),
    )


def _names(url: str) -> tuple[set[str], set[str]]:
    """The database's table names and the names of the pool table's indexes (whichever it is)."""
    engine = make_engine(url)
    inspector = sa.inspect(engine)
    tables = set(inspector.get_table_names())
    pool = next(t for t in ("pool_computations", "vista_pools") if t in tables)
    indexes = {i["name"] for i in inspector.get_indexes(pool)}
    engine.dispose()
    return tables, indexes


def check_pool_table_rename(url: str) -> None:
    """The rename on the (empty) database at ``url``: rows written at the previous head are read back
    through the new model and the store after the upgrade, new rows continue their ids, the downgrade
    keeps VISTA's rows and drops other protocols', and upgrading again brings them back."""
    migrate(url, BEFORE)
    engine = make_engine(url)
    with engine.begin() as connection:
        for row in OLD_ROWS:  # one by one, ids from the table's own sequence as the old job's were
            connection.execute(_old_table().insert(), row)
    engine.dispose()

    db = Database(url)  # upgrades to the head, as the server does when it opens an older database
    with db.engine.connect() as connection:
        assert connection.execute(sa.text("select version_num from alembic_version")).scalar() == HEAD
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        if connection.dialect.name == "postgresql":  # the sequence and primary key were renamed too
            leftovers = connection.execute(sa.text("select relname from pg_class where relname like '%vista%'"))
            assert leftovers.scalars().all() == []
    tables, indexes = _names(url)
    assert "vista_pools" not in tables and indexes == {"ix_pool_computations_protocol_task"}
    with db.session() as session:
        rows = session.scalars(select(PoolComputation).order_by(PoolComputation.id)).all()
        kept = [{c: getattr(r, c) for c in OLD_ROWS[0]} | {"computed_at": r.computed_at.astimezone(UTC)} for r in rows]
        assert kept == OLD_ROWS and [r.id for r in rows] == [1, 2] and {r.protocol for r in rows} == {"vista"}
    vista = DatabasePoolStore(db, "vista")
    latest = vista.latest_pool("vista")
    assert latest is not None and (latest.id, latest.judge, latest.plot) == (2, "embedding:0.9", b"\x89PNG fake")
    assert latest.members == (PoolMember(1, "tiny:llava"), PoolMember(2, "tiny:qwen2_vl"))
    assert latest.per_model == OLD_ROWS[1]["per_model"] and latest.computed_at == WHEN.replace(hour=13)
    assert DatabasePoolStore(db, "toy").latest_pool("vista") is None  # another protocol's pool, same task
    new = PoolResult(task="vista", judge="embedding", config={}, members=(), per_model={}, status="waiting")
    assert vista.record_pool(new) == 3  # the id sequence goes on after the rename
    assert DatabasePoolStore(db, "toy").record_pool(new) == 4
    db.close()

    migrate(url, BEFORE, down=True)
    tables, indexes = _names(url)
    assert "pool_computations" not in tables and indexes == {"ix_vista_pools_task"}
    engine = make_engine(url)
    with engine.connect() as connection:
        ids = connection.execute(sa.text("select id from vista_pools order by id")).scalars().all()
    engine.dispose()
    assert ids == [1, 2, 3]  # VISTA's rows; the toy's pool has no place in the old schema

    db = Database(url)
    latest = DatabasePoolStore(db, "vista").latest_pool("vista")
    assert latest is not None and latest.id == 3 and latest.status == "waiting"
    db.close()


def test_the_pool_table_rename_keeps_its_rows_on_sqlite(tmp_path: Path) -> None:
    check_pool_table_rename(f"sqlite:///{tmp_path / 'board.sqlite'}")


def test_the_pool_store_reads_stored_files_and_only_its_own_protocols_pools(
    tmp_path: Path, runs: list[Path], data_dir: Path
) -> None:
    """What a protocol's hooks see: the submissions that stored a file (VISTA's pool keeps each model's
    latest), their files byte for byte, and pools recorded and read back under their own protocol."""
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    settings = Settings(data_dir=data_dir)
    import_runs(db, runs, "alice", settings)

    def inflate(results: dict) -> None:
        results["results"]["shapes_color"]["exact_match,none"] = 0.99

    again = edited_run(runs[0], tmp_path / "again", inflate)  # a newer submission of the same model
    assert submit_files(db, read_run_files(again), "alice", settings).status == "flagged"
    store = DatabasePoolStore(db, "vista")
    samples = "samples_shapes_color.jsonl"
    assert store.submissions_with_file(samples) == [
        PoolMember(1, "tiny:llava"),
        PoolMember(2, "tiny:qwen2_vl"),
        PoolMember(3, "tiny:llava"),
    ]
    assert pool_members(store, "shapes_color") == [PoolMember(2, "tiny:qwen2_vl"), PoolMember(3, "tiny:llava")]
    assert store.read_file(2, samples) == (runs[1] / samples).read_bytes()
    assert store.read_file(2, "samples_nothing.jsonl") is None and store.submissions_with_file("nothing") == []
    result = PoolResult(
        task="shapes_color",
        judge="embedding",
        config={"theta": 0.6},
        members=(PoolMember(2, "tiny:qwen2_vl"), PoolMember(3, "tiny:llava")),
        per_model={"tiny:llava": {"queries": 3}},
        status="ok",
        message="2 models",
        plot=b"png",
    )
    first = store.record_pool(result)
    other = DatabasePoolStore(db, "toy").record_pool(PoolResult(**{**vars(result), "status": "failed"}))
    latest = store.latest_pool("shapes_color")
    assert latest is not None and latest.id == first != other
    assert PoolResult(**{k: v for k, v in vars(latest).items() if k not in ("id", "computed_at")}) == result
    assert latest.computed_at.tzinfo is not None
    toy = DatabasePoolStore(db, "toy").latest_pool("shapes_color")
    assert toy is not None and toy.status == "failed" and store.latest_pool("shapes_kind") is None
    db.close()
