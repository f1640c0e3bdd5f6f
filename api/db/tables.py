"""SQL tables of the service (the A2A SDK's `tasks` table lives in the same database, managed by the SDK).

Ids are UUID4 strings (36 characters), the size the SDK's A2A tables use for task ids. Trials are unique on
(assessment, task, trial): that constraint is what makes "nothing is counted twice" hold across a resume.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import false as sa_false
from sqlalchemy import true as sa_true
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from green_agent.domains import DEFAULT_DOMAIN

DEFAULT_TENANT = "default"
"""The tenant of assessments made without an API key (open mode, the CLI)."""

MAX_TASK_ID_CHARS = 255
"""The longest task id a trial row holds: telecom's ids name every issue of the task (215 characters at most
in its full split; tests/api/db/test_domains.py checks every domain's)."""

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite hands back naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
    }


class AssessmentRow(Base):
    __tablename__ = "assessments"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    agent_url: Mapped[str] = mapped_column(String(2048), index=True)
    agent_name: Mapped[str | None] = mapped_column(
        String(1024), doc="The name on the agent's card, cleaned and bounded by the engine (display only)."
    )
    config: Mapped[dict[str, Any]]
    domain: Mapped[str] = mapped_column(
        String(32),
        default=DEFAULT_DOMAIN,
        server_default=DEFAULT_DOMAIN,
        index=True,
        doc="The tau2 domain assessed (the config's `domain`); rows stored before domains are retail's.",
    )
    source: Mapped[str] = mapped_column(
        String(8), doc="rest, a2a, ui, cli or import: the door the assessment came in by."
    )
    tenant: Mapped[str] = mapped_column(
        String(64),
        default=DEFAULT_TENANT,
        server_default=DEFAULT_TENANT,
        index=True,
        doc="The tenant of the API key that created it; only that tenant (and admins) see it.",
    )
    allow_private_agents: Mapped[bool] = mapped_column(
        Boolean,
        default=True,
        server_default=sa_true(),
        doc="Whether the agent may live on a loopback or private address (the key's permission).",
    )
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_hash: Mapped[str | None] = mapped_column(String(64))
    a2a_task_id: Mapped[str | None] = mapped_column(String(36), index=True)
    a2a_context_id: Mapped[str | None] = mapped_column(String(36))
    warnings: Mapped[list[Any]]
    trials_total: Mapped[int] = mapped_column(Integer)
    trials_done: Mapped[int] = mapped_column(Integer, default=0)
    run_seconds: Mapped[float] = mapped_column(
        Float, default=0.0, server_default="0", doc="Running time summed over every process that ran it."
    )
    report: Mapped[dict[str, Any] | None]
    agent_headers: Mapped[dict[str, Any] | None] = mapped_column(
        JSON,
        doc="Headers sent to the white agent (its credentials): read by the engine only, never returned.",
    )
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    runner: Mapped[str | None] = mapped_column(
        String(128),
        doc="SQLite only: the process whose in-memory queue runs it (host-pid); others leave it alone.",
    )
    lease_expires_at: Mapped[datetime | None] = mapped_column(
        doc="SQLite only: until when `runner`'s claim holds; renewed while it lives, taken over after."
    )

    attempt: Mapped[int] = mapped_column(
        Integer,
        default=1,
        server_default="1",
        doc="The number of the current attempt: 1 when created, one more with each retry.",
    )
    rerun_of: Mapped[str | None] = mapped_column(
        String(36),
        index=True,
        doc="The assessment whose failed tasks this one reruns (rerun-failed); None for any other.",
    )

    trials: Mapped[list[TrialRow]] = relationship(
        back_populates="assessment", cascade="all, delete-orphan", passive_deletes=True
    )

    __table_args__ = (
        Index("ix_assessments_created_at_id", "created_at", "id"),
        # Idempotency keys are per tenant: one tenant's key never finds another tenant's assessment.
        UniqueConstraint("tenant", "idempotency_key", name="uq_assessments_tenant_idempotency_key"),
    )


class ApiKeyRow(Base):
    """An API key: only the SHA-256 of the secret is stored; `id` is the public handle (list, revoke)."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant: Mapped[str] = mapped_column(String(64), index=True)
    admin: Mapped[bool] = mapped_column(Boolean)
    allow_private_agents: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]


class TrialRow(Base):
    __tablename__ = "trials"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assessment_id: Mapped[str] = mapped_column(ForeignKey("assessments.id", ondelete="CASCADE"))
    task_id: Mapped[str] = mapped_column(String(MAX_TASK_ID_CHARS))
    trial: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    termination_reason: Mapped[str] = mapped_column(String(32))
    reward: Mapped[float | None] = mapped_column(Float)
    is_successful: Mapped[bool | None] = mapped_column(Boolean)
    nl_status: Mapped[str] = mapped_column(String(16))
    signals: Mapped[list[Any]]
    detail: Mapped[dict[str, Any]] = mapped_column(
        JSON, doc="The rest of the TrialResult (checks, hashes, judge input, warnings, timing)."
    )
    error: Mapped[str | None] = mapped_column(Text)
    steps: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    judge_pending: Mapped[bool] = mapped_column(
        Boolean,
        default=False,
        server_default=sa_false(),
        doc="The current attempt (a retry) judges this stored trial again, without running it again.",
    )

    assessment: Mapped[AssessmentRow] = relationship(back_populates="trials")
    messages: Mapped[list[TranscriptMessageRow]] = relationship(
        order_by="TranscriptMessageRow.index", cascade="all, delete-orphan", passive_deletes=True
    )
    verdicts: Mapped[list[NLVerdictRow]] = relationship(
        order_by="NLVerdictRow.index", cascade="all, delete-orphan", passive_deletes=True
    )

    __table_args__ = (
        UniqueConstraint("assessment_id", "task_id", "trial", name="uq_trials_assessment_task_trial"),
    )


class AttemptRow(Base):
    """One attempt of an assessment: the first run (number 1) or a retry."""

    __tablename__ = "assessment_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assessment_id: Mapped[str] = mapped_column(ForeignKey("assessments.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(8), doc="rest, a2a, ui, cli or import: who started it.")
    reason: Mapped[str] = mapped_column(Text, doc="Why it ran: 'created', or what a retry set out to do.")
    trials_to_run: Mapped[int] = mapped_column(Integer)
    trials_to_judge: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    status: Mapped[str | None] = mapped_column(String(16), doc="How it ended; None while it runs.")

    __table_args__ = (
        UniqueConstraint("assessment_id", "number", name="uq_assessment_attempts_assessment_id"),
    )


class TranscriptMessageRow(Base):
    __tablename__ = "transcript_messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str | None] = mapped_column(Text)
    tool_calls: Mapped[list[Any] | None] = mapped_column(JSON)
    tool_call_id: Mapped[str | None] = mapped_column(String(255))
    error: Mapped[bool] = mapped_column(Boolean, default=False)
    timestamp: Mapped[datetime]
    requestor: Mapped[str | None] = mapped_column(
        String(16), doc="On a tool result: 'user' for the customer's own call (dual control); else None."
    )


class NLVerdictRow(Base):
    __tablename__ = "nl_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trial_id: Mapped[int] = mapped_column(ForeignKey("trials.id", ondelete="CASCADE"), index=True)
    index: Mapped[int] = mapped_column(Integer)
    assertion: Mapped[str] = mapped_column(Text)
    passed: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(Text)
