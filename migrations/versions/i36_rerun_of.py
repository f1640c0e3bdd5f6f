"""Assessments remember which assessment's failed tasks they rerun, so each links to the other.

`rerun_of` is the id of the source assessment (set by rerun-failed, REST or web UI); None for every other
assessment, and for reruns stored before this column existed (their warning still names the source).

Revision ID: i36_rerun_of
Revises: i29_agent_name
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i36_rerun_of"
down_revision = "i29_agent_name"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("rerun_of", sa.String(length=36), nullable=True))
        batch.create_index("ix_assessments_rerun_of", ["rerun_of"])


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_index("ix_assessments_rerun_of")
        batch.drop_column("rerun_of")
