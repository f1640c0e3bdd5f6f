"""Assessments keep the headers a requester asked to send to its white agent (e.g. the agent's own bearer
token), in a column of their own: the stored config is returned by the API, these never are.

Revision ID: 0003_agent_headers
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_agent_headers"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("agent_headers", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_column("agent_headers")
