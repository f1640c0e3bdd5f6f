"""Initial schema: assessments, trials, transcript messages, NL verdicts.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from api.db.tables import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assessments",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("agent_url", sa.String(2048), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=True),
        sa.Column("a2a_task_id", sa.String(36), nullable=True),
        sa.Column("a2a_context_id", sa.String(36), nullable=True),
        sa.Column("warnings", sa.JSON(), nullable=False),
        sa.Column("trials_total", sa.Integer(), nullable=False),
        sa.Column("trials_done", sa.Integer(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_assessments"),
        sa.UniqueConstraint("idempotency_key", name="uq_assessments_idempotency_key"),
    )
    op.create_index("ix_assessments_status", "assessments", ["status"])
    op.create_index("ix_assessments_agent_url", "assessments", ["agent_url"])
    op.create_index("ix_assessments_a2a_task_id", "assessments", ["a2a_task_id"])
    op.create_index("ix_assessments_created_at_id", "assessments", ["created_at", "id"])

    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("assessment_id", sa.String(36), nullable=False),
        sa.Column("task_id", sa.String(64), nullable=False),
        sa.Column("trial", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("termination_reason", sa.String(32), nullable=False),
        sa.Column("reward", sa.Float(), nullable=True),
        sa.Column("is_successful", sa.Boolean(), nullable=True),
        sa.Column("nl_status", sa.String(16), nullable=False),
        sa.Column("signals", sa.JSON(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assessment_id"],
            ["assessments.id"],
            name="fk_trials_assessment_id_assessments",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_trials"),
        sa.UniqueConstraint("assessment_id", "task_id", "trial", name="uq_trials_assessment_task_trial"),
    )

    op.create_table(
        "transcript_messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("tool_calls", sa.JSON(), nullable=True),
        sa.Column("tool_call_id", sa.String(255), nullable=True),
        sa.Column("error", sa.Boolean(), nullable=False),
        sa.Column("timestamp", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_transcript_messages_trial_id_trials", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_transcript_messages"),
    )
    op.create_index("ix_transcript_messages_trial_id", "transcript_messages", ["trial_id"])

    op.create_table(
        "nl_verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("assertion", sa.Text(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_nl_verdicts_trial_id_trials", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_nl_verdicts"),
    )
    op.create_index("ix_nl_verdicts_trial_id", "nl_verdicts", ["trial_id"])


def downgrade() -> None:
    op.drop_table("nl_verdicts")
    op.drop_table("transcript_messages")
    op.drop_table("trials")
    op.drop_table("assessments")
