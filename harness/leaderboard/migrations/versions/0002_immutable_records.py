"""Records are immutable in the database itself: updates and deletes of submissions, their scores and
their files are refused by triggers (SQLite and PostgreSQL; other databases rely on the service, which
never updates a record).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLES = ("submissions", "scores", "files")
MESSAGE = "leaderboard records are immutable"


def upgrade() -> None:
    """Triggers that refuse updates and deletes of the records (SQLite and PostgreSQL)."""
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in TABLES:
            for event in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{event.lower()} BEFORE {event} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
                )
    elif dialect == "postgresql":
        op.execute(
            "CREATE FUNCTION leaderboard_immutable() RETURNS trigger AS $$ "
            f"BEGIN RAISE EXCEPTION '{MESSAGE}'; END; $$ LANGUAGE plpgsql"
        )
        for table in TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION leaderboard_immutable()"
            )


def downgrade() -> None:
    """Drops the immutability triggers (and PostgreSQL's trigger function)."""
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for table in TABLES:
            for event in ("update", "delete"):
                op.execute(f"DROP TRIGGER {table}_no_{event}")
    elif dialect == "postgresql":
        for table in TABLES:
            op.execute(f"DROP TRIGGER {table}_immutable ON {table}")
        op.execute("DROP FUNCTION leaderboard_immutable()")
