"""Assessments keep the running time accumulated over every process that worked on them.

A resumed assessment's report then says how long it really ran (the time before the crash, up to its last
committed trial, plus the time after), instead of only the part after the restart.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("run_seconds", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_column("run_seconds")
