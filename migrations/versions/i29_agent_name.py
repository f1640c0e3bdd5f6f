"""Assessments keep the name on their white agent's card, shown beside its URL.

The card is the agent's own (hostile) text: the engine drops control, format and bidi characters and bounds
it to `max_card_name_chars` (at most 1024) before it is stored; None until the card was read, or when it has
no usable name.

Revision ID: i29_agent_name
Revises: i27_attempts
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i29_agent_name"
down_revision = "i27_attempts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("agent_name", sa.String(length=1024), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_column("agent_name")
