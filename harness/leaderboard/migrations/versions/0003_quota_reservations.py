"""Quota reservations: a row per upload in flight, taken before its files are received, so concurrent
uploads of one submitter cannot all pass a quota check made before any of them is stored.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The ``quota_reservations`` table."""
    op.create_table(
        "quota_reservations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submitter", sa.String(200), nullable=False, index=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drops the ``quota_reservations`` table."""
    op.drop_table("quota_reservations")
