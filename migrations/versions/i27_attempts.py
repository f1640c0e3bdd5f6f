"""Assessments keep the history of their attempts; a trial can wait to be judged again.

An assessment runs once when it is created and again each time it is retried (`green-agent retry`,
`POST /assessments/{id}/retry`): the retry runs the trials excluded as infrastructure errors or never run
and judges again the stored trials whose judge failed or was missing, in the same assessment.
`assessment_attempts` holds one row per attempt (when, how many trials it runs and judges, why, and how it
ended); `assessments.attempt` is the number of the current one; `trials.judge_pending` marks a stored trial
the current attempt judges again. Every existing assessment gets its first attempt, from its own row.

Revision ID: i27_attempts
Revises: i19_runner_lease
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "i27_attempts"
down_revision = "i19_runner_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assessment_attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "assessment_id",
            sa.String(length=36),
            sa.ForeignKey(
                "assessments.id",
                ondelete="CASCADE",
                name="fk_assessment_attempts_assessment_id_assessments",
            ),
            nullable=False,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("trials_to_run", sa.Integer(), nullable=False),
        sa.Column("trials_to_judge", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_assessment_attempts"),
        sa.UniqueConstraint("assessment_id", "number", name="uq_assessment_attempts_assessment_id"),
    )
    with op.batch_alter_table("assessments") as batch:
        batch.add_column(sa.Column("attempt", sa.Integer(), nullable=False, server_default="1"))
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("judge_pending", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(
        "INSERT INTO assessment_attempts "
        "(assessment_id, number, source, reason, trials_to_run, trials_to_judge, started_at, finished_at, "
        "status) "
        "SELECT id, 1, source, 'created', trials_total, 0, created_at, finished_at, "
        "CASE WHEN status IN ('completed', 'failed', 'cancelled') THEN status ELSE NULL END "
        "FROM assessments"
    )


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_column("judge_pending")
    with op.batch_alter_table("assessments") as batch:
        batch.drop_column("attempt")
    op.drop_table("assessment_attempts")
