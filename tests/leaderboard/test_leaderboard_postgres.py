"""The leaderboard on a real PostgreSQL server: a throwaway cluster started for this module."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from harness.leaderboard.bundle import read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.quota import RateLimit
from harness.leaderboard.records import list_submissions
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Settings, submit_files
from harness.leaderboard.tokens import create_token, submitter_of
from tests.leaderboard.test_leaderboard_migrations import check_pool_table_rename
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    free_port,
    running_server,
)


def _pg_bin() -> Path | None:
    """PostgreSQL's server binaries (Debian's postgresql package), newest version first."""
    configured = os.environ.get("HARNESS_PG_BIN")
    candidates = [Path(configured)] if configured else sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((c for c in candidates if (c / "initdb").is_file() and (c / "pg_ctl").is_file()), None)


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql; or set HARNESS_PG_BIN)")
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []  # initdb refuses to run as root
    root = Path(tempfile.mkdtemp(prefix="leaderboard-pg-"))
    if as_root:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    subprocess.run(
        [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(root / "server.log"),
            "-w",
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


def test_schema_tokens_and_submissions_on_postgres(postgres_url: str, runs: list[Path], data_dir: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from harness.leaderboard.db import Base

    db = Database(postgres_url)
    with db.engine.connect() as conn:
        assert conn.execute(text("select version()")).scalar().startswith("PostgreSQL")
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    token = create_token(db, "alice")
    assert submitter_of(db, token) == "alice"
    first = submit_files(db, read_run_files(runs[0]), "alice", Settings(data_dir=data_dir))
    assert first.status == "verified" and not first.duplicate
    assert submit_files(db, read_run_files(runs[0]), "alice", Settings()).duplicate
    (record,) = list_submissions(db)
    assert record.claimed["config"]["model"] == "tiny:llava" and record.submitted_at.tzinfo is not None
    with pytest.raises(DBAPIError, match="leaderboard records are immutable"), db.engine.begin() as conn:
        conn.execute(text("update submissions set status = 'verified'"))
    db.close()


def test_concurrent_uploads_to_a_postgres_backed_server(postgres_url: str, runs: list[Path]) -> None:
    db = Database(postgres_url)
    token = create_token(db, "load")
    files = read_run_files(runs[1])
    with running_server(create_app(Settings(db_url=postgres_url), db)) as url, ThreadPoolExecutor(12) as pool:
        answers = list(
            pool.map(
                lambda _: httpx.post(
                    f"{url}/api/submissions",
                    files=[("files", (n, d)) for n, d in files.items()],
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=120,
                ),
                range(12),
            )
        )
        assert {a.status_code for a in answers} <= {200, 201}, [a.text for a in answers if a.status_code > 201]
        assert sum(a.status_code == 201 for a in answers) == 1
        assert len({a.json()["id"] for a in answers}) == 1
        assert [s["model"] for s in httpx.get(f"{url}/api/submissions").json()].count("tiny:qwen2_vl") == 1
    db.close()


def test_the_pool_table_rename_keeps_its_rows_on_postgres(postgres_url: str) -> None:
    """Migration 0004 on PostgreSQL (in a database of its own, made at the previous head), where the
    table's id sequence and primary key carry its name too."""
    server = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.execute(text("create database pool_rename"))
    server.dispose()
    check_pool_table_rename(postgres_url.rsplit("/", 1)[0] + "/pool_rename")


def test_the_rate_limit_is_shared_by_servers_on_one_postgres_database(postgres_url: str) -> None:
    """Two servers' limits (each its own engine, as two processes have) and a concurrent burst: exactly
    ``per_minute`` uploads pass in all, and a limit opened afterwards (a restart) finds the minute spent."""
    first, second = Database(postgres_url), Database(postgres_url)
    create_token(first, "burst")
    limits = [RateLimit(first, 5), RateLimit(second, 5)]
    with ThreadPoolExecutor(8) as pool:
        waits = list(pool.map(lambda i: limits[i % 2].admit("burst"), range(12)))
    assert sum(w is None for w in waits) == 5 and all(0 < w <= 60 for w in waits if w is not None)
    restarted = Database(postgres_url)
    assert RateLimit(restarted, 5).admit("burst") is not None
    assert RateLimit(restarted, 5).admit("someone else") is None
    for db in (first, second, restarted):
        db.close()
