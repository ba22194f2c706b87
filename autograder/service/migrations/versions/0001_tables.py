"""The first schema: people, keys, submissions (the queue), results.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade():
    op.create_table(
        "people",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("token_hash", sa.String(64), unique=True),
        sa.Column("generation", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "keys", sa.Column("name", sa.String(50), primary_key=True), sa.Column("value", sa.String(200), nullable=False)
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("student", sa.String(200), nullable=False),
        sa.Column("assignment", sa.String(200), nullable=False),
        sa.Column("filename", sa.String(300), nullable=False),
        sa.Column("stored", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("charged", sa.Boolean, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("started_at", TZ),
        sa.Column("finished_at", TZ),
        sa.Column("lease_owner", sa.String(200)),
        sa.Column("lease_until", TZ),
        sa.Column("claims", sa.Integer, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("max_score", sa.Float),
        sa.Column("reason", sa.Text),
    )
    op.create_index("ix_submissions_student", "submissions", ["student"])
    op.create_index("ix_submissions_status", "submissions", ["status"])
    op.create_index("ix_submissions_created_at", "submissions", ["created_at"])
    op.create_table(
        "results",
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("max_score", sa.Float),
        sa.Column("graded_by", sa.String(200), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )


def downgrade():
    op.drop_table("results")
    op.drop_table("submissions")
    op.drop_table("keys")
    op.drop_table("people")
