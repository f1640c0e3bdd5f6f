"""Assessments keep the tau2 domain they assess, in a column of its own (lists and the leaderboard filter on
it).

Every assessment stored before the service ran more than one domain assessed retail: the column's default
fills them in. New rows get their config's `domain` (AssessmentConfig validates it against the registry).

Revision ID: i33_domain
Revises: i36_rerun_of
Create Date: 2026-12-12
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i33_domain"
down_revision = "i36_rerun_of"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("domain", sa.String(length=32), nullable=False, server_default="retail"))
        batch.create_index("ix_assessments_domain", ["domain"])


def downgrade() -> None:
    with op.batch_alter_table("assessments") as batch:
        batch.drop_index("ix_assessments_domain")
        batch.drop_column("domain")
