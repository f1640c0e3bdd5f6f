"""Transcript messages say who made a tool call: a tool result of the customer's own tools (dual control,
issue 34) has requestor 'user'; the agent's, and every stored message before, have none.

Revision ID: i34_transcript_requestor
Revises: i33_domain
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i34_transcript_requestor"
down_revision = "i33_domain"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("transcript_messages") as batch:
        batch.add_column(sa.Column("requestor", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("transcript_messages") as batch:
        batch.drop_column("requestor")
