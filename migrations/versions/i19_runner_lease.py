"""Assessments on SQLite remember which process runs them, and until when that claim holds.

On SQLite each process keeps its trial queue in memory, so a `serve` and a `run` sharing one file must not
both resume the same assessment. The process that queues an assessment's trials writes its name in `runner`
and keeps `lease_expires_at` in the future while it lives; another process takes an unfinished assessment
over only when it has no runner or the lease expired (its runner died). PostgreSQL shares one queue between
processes and leaves both columns empty.

Revision ID: i19_runner_lease
Revises: i10_job_queue
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i19_runner_lease"
down_revision = "i10_job_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("runner", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_column("lease_expires_at")
        batch.drop_column("runner")
