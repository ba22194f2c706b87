"""Sessions: a sign-in cookie counts only while its row is there (signing out deletes it).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_sessions_name", "sessions", ["name"])


def downgrade():
    op.drop_index("ix_sessions_name", table_name="sessions")
    op.drop_table("sessions")
