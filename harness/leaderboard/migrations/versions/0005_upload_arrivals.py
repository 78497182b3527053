"""Upload arrivals: a row per authenticated upload in the last minute, so the per-submitter rate limit is
the database's (shared by every server process on it, kept across restarts), not one process's memory.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The ``upload_arrivals`` table, indexed by submitter and time (the rate check's query)."""
    op.create_table(
        "upload_arrivals",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submitter", sa.String(200), nullable=False),
        sa.Column("arrived_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_upload_arrivals_submitter_arrived_at", "upload_arrivals", ["submitter", "arrived_at"])


def downgrade() -> None:
    """Drops the ``upload_arrivals`` table."""
    op.drop_index("ix_upload_arrivals_submitter_arrived_at", table_name="upload_arrivals")
    op.drop_table("upload_arrivals")
