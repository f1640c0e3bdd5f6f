"""Trials keep task ids up to 255 characters: telecom's ids name every issue of the task
(`[mms_issue]airplane_mode_on|bad_network_preference|...[PERSONA:Hard]`, up to 215 characters in the full
split), past the 64 the column held. SQLite never enforced it; PostgreSQL refused to store such a trial.

Revision ID: i34_task_id_length
Revises: i34_transcript_requestor
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i34_task_id_length"
down_revision = "i34_transcript_requestor"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.alter_column("task_id", type_=sa.String(length=255), existing_type=sa.String(length=64))


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.alter_column("task_id", type_=sa.String(length=64), existing_type=sa.String(length=255))
