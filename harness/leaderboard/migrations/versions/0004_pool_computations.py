"""The pool table gets a protocol-neutral name and says whose pool each row is: ``vista_pools`` becomes
``pool_computations`` (the ``PoolComputation`` model), with a ``protocol`` column (every earlier row was
written by VISTA's peer-pool job, the only one the old schema had) and an index on (protocol, task) in
place of ``ix_vista_pools_task``. Rows and their ids are kept.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

OLD, NEW = "vista_pools", "pool_computations"
OLD_INDEX, NEW_INDEX = "ix_vista_pools_task", "ix_pool_computations_protocol_task"
EARLIER_ROWS = "vista"  # the protocol of every row the old schema holds


def _rename(old: str, new: str) -> None:
    """Renames the table, and on PostgreSQL its id sequence and primary key, which carry its name."""
    op.rename_table(old, new)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"ALTER SEQUENCE {old}_id_seq RENAME TO {new}_id_seq")
        op.execute(f"ALTER TABLE {new} RENAME CONSTRAINT {old}_pkey TO {new}_pkey")


def upgrade() -> None:
    """``vista_pools`` -> ``pool_computations`` with ``protocol`` ('vista' for the rows kept)."""
    op.drop_index(OLD_INDEX, table_name=OLD)
    _rename(OLD, NEW)
    with op.batch_alter_table(NEW) as batch:  # SQLite: the table is copied, rows and ids with it
        batch.add_column(sa.Column("protocol", sa.String(100), nullable=False, server_default=EARLIER_ROWS))
    with op.batch_alter_table(NEW) as batch:  # the default was only for the rows kept
        batch.alter_column("protocol", existing_type=sa.String(100), existing_nullable=False, server_default=None)
    op.create_index(NEW_INDEX, NEW, ["protocol", "task"])


def downgrade() -> None:
    """Back to ``vista_pools``: VISTA's rows are kept; other protocols' pools, which the old schema cannot
    tell apart from VISTA's, are deleted."""
    op.drop_index(NEW_INDEX, table_name=NEW)
    table = sa.table(NEW, sa.column("protocol", sa.String(100)))
    op.execute(table.delete().where(table.c.protocol != EARLIER_ROWS))
    with op.batch_alter_table(NEW) as batch:
        batch.drop_column("protocol")
    _rename(NEW, OLD)
    op.create_index(OLD_INDEX, OLD, ["task"])
