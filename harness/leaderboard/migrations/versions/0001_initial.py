"""The first leaderboard schema: tokens, submissions, scores, files and VISTA pools.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    """The first schema: tokens, submissions, scores, files and VISTA pools."""
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("revoked_at", _WHEN, nullable=True),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("model", sa.String(500), nullable=False),
        sa.Column("model_id", sa.String(500), nullable=True),
        sa.Column("revision", sa.String(200), nullable=True),
        sa.Column("backend", sa.String(50), nullable=True),
        sa.Column("family", sa.String(100), nullable=True),
        sa.Column("parameters", sa.BigInteger(), nullable=True),
        sa.Column("access", sa.String(10), nullable=False),
        sa.Column("smoke_test_model", sa.Boolean(), nullable=False),
        sa.Column("harness_version", sa.String(50), nullable=True),
        sa.Column("git_revision", sa.String(100), nullable=True),
        sa.Column("submitter", sa.String(200), nullable=False),
        sa.Column("submitted_at", _WHEN, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("claimed", sa.JSON(), nullable=False),
        sa.Column("recomputed", sa.JSON(), nullable=False),
        sa.Column("checks", sa.JSON(), nullable=False),
    )
    op.create_index("ix_submissions_model", "submissions", ["model"])
    op.create_table(
        "scores",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("protocol", sa.String(100), nullable=False),
        sa.Column("version", sa.String(50), nullable=True),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("stderr", sa.Float(), nullable=True),
        sa.Column("claimed", sa.Float(), nullable=True),
        sa.Column("higher_is_better", sa.Boolean(), nullable=True),
        sa.Column("n", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
    )
    op.create_index("ix_scores_submission_id", "scores", ["submission_id"])
    op.create_index("ix_scores_task", "scores", ["task"])
    op.create_index("ix_scores_protocol", "scores", ["protocol"])
    op.create_table(
        "files",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.UniqueConstraint("submission_id", "name"),
    )
    op.create_index("ix_files_submission_id", "files", ["submission_id"])
    op.create_table(
        "vista_pools",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("computed_at", _WHEN, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("message", sa.String(2000), nullable=True),
        sa.Column("judge", sa.String(200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("members", sa.JSON(), nullable=False),
        sa.Column("per_model", sa.JSON(), nullable=False),
        sa.Column("plot", sa.LargeBinary(), nullable=True),
    )
    op.create_index("ix_vista_pools_task", "vista_pools", ["task"])


def downgrade() -> None:
    """Drops every table of the first schema."""
    for table in ("vista_pools", "files", "scores", "submissions", "tokens"):
        op.drop_table(table)
