"""REST request and response models (the request body is the engine's `AssessmentConfig` itself)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from api.db.repository import AssessmentRecord, Attempt, TrialSummary
from green_agent.config import MAX_URL_CHARS, OneLine, agent_url_problem
from green_agent.core.models import AssessmentReport, TrialResult
from green_agent.scoring.diagnosis import CustomerState
from green_agent.scoring.failures import kinds

MAX_OFFSET = 2**31 - 1
"""Largest offset (and trial number) a request may give: what a 32-bit integer column holds on every
backend; larger values were a 500 on PostgreSQL."""

NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such assessment, or it belongs to another tenant (the two look the same)."}
}


class Progress(BaseModel):
    trials_done: int
    trials_total: int


class AssessmentLinks(BaseModel):
    self: str
    trials: str
    events: str
    cancel: str
    retry: str


class AttemptPublic(BaseModel):
    """One attempt of an assessment: its first run (1) or a retry."""

    number: int
    source: str = Field(description="rest, a2a, ui, cli or import: who started it")
    reason: str = Field(description="'created', or what the retry set out to do")
    trials_to_run: int
    trials_to_judge: int = Field(description="Stored trials judged again, without running them again.")
    started_at: datetime
    finished_at: datetime | None
    status: str | None = Field(description="How it ended (completed, failed, cancelled); null while it runs.")

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptPublic:
        return cls(**dataclasses.asdict(attempt))


class AssessmentPublic(BaseModel):
    """One assessment: status, progress, and the report once it is done."""

    id: str
    status: str = Field(description="queued, running, completed, failed or cancelled")
    domain: str = Field(description="The tau2 domain assessed: retail, airline, ...")
    agent_url: str
    agent_name: str | None = Field(
        default=None,
        description="The name on the agent's card, once it was read: control and bidi characters removed, at "
        "most GREEN_AGENT_MAX_CARD_NAME_CHARS characters. The agent's own text: escape it where you show it.",
    )
    source: str = Field(description="rest, a2a, ui (the web UI), cli or import (a re-scored tau2 file)")
    tenant: str = Field(description="The tenant of the API key that started it (open mode: default).")
    config: dict[str, Any]
    progress: Progress
    waiting_for: list[str] = Field(
        default_factory=list,
        description='What the run waits for among our LLM endpoints: "waiting for MODEL at HOST: rate '
        'limited" or "...: down since HH:MM:SS" (in the single-assessment view; empty when they all answer).',
    )
    warnings: list[str]
    report: AssessmentReport | None = Field(
        description="The report once completed (cancelled: over the trials that finished)."
    )
    error: str | None
    a2a_task_id: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempt: int = Field(description="The current attempt: 1, one more with each retry.")
    rerun_of: str | None = Field(
        default=None,
        description="The assessment whose failed tasks this one reruns (rerun-failed); null otherwise.",
    )
    attempts: list[AttemptPublic] | None = Field(
        default=None,
        description="Every attempt, first to last (in the single-assessment view; null in lists).",
    )
    links: AssessmentLinks

    @classmethod
    def from_record(
        cls,
        record: AssessmentRecord,
        *,
        waiting_for: list[str] | None = None,
        attempts: list[Attempt] | None = None,
    ) -> AssessmentPublic:
        base = f"/assessments/{record.id}"
        return cls(
            id=record.id,
            status=record.status,
            domain=record.domain,
            agent_url=record.agent_url,
            agent_name=record.agent_name,
            source=record.source,
            tenant=record.tenant,
            config=record.config,
            progress=Progress(trials_done=record.trials_done, trials_total=record.trials_total),
            waiting_for=waiting_for or [],
            warnings=record.warnings,
            report=record.report,
            error=record.error,
            a2a_task_id=record.a2a_task_id,
            created_at=record.created_at,
            started_at=record.started_at,
            finished_at=record.finished_at,
            attempt=record.attempt,
            rerun_of=record.rerun_of,
            attempts=[AttemptPublic.of(a) for a in attempts] if attempts is not None else None,
            links=AssessmentLinks(
                self=base,
                trials=f"{base}/trials",
                events=f"{base}/events",
                cancel=f"{base}/cancel",
                retry=f"{base}/retry",
            ),
        )


class AssessmentsPage(BaseModel):
    data: list[AssessmentPublic]
    count: int = Field(description="Assessments matching the filters, over all pages.")
    limit: int
    offset: int


class TrialSummaryPublic(BaseModel):
    task_id: str
    trial: int
    termination_reason: str
    reward: float | None = Field(description="None when the trial is excluded from the metrics.")
    is_successful: bool | None
    nl_status: str
    steps: int
    error: str | None
    failure_kinds: list[str] | None = Field(
        default=None,
        description='What went wrong in a failed trial, by kind (docs/api.md, "Failures"); empty for a '
        "passed or excluded one; None when stored before failures were classified.",
    )
    finished_at: datetime
    link: str

    @classmethod
    def from_summary(cls, assessment_id: str, summary: TrialSummary) -> TrialSummaryPublic:
        return cls(
            task_id=summary.task_id,
            trial=summary.trial,
            termination_reason=summary.termination_reason,
            reward=summary.reward,
            is_successful=summary.is_successful,
            nl_status=summary.nl_status,
            steps=summary.steps,
            error=summary.error,
            failure_kinds=None if summary.failures is None else list(kinds(summary.failures)),
            finished_at=summary.finished_at,
            link=f"/assessments/{assessment_id}/trials/{summary.task_id}/{summary.trial}",
        )


class StateChangePublic(BaseModel):
    path: str = Field(description="The field, e.g. device.airplane_mode or surroundings.line_active.")
    before: Any = Field(description="Its value at the task's start.")
    after: Any = Field(description="Its value at the trial's end.")


class CustomerStatePublic(BaseModel):
    """Dual control: the customer's own DB (telecom: the phone and its surroundings; mock: the notification
    inbox) at the task's start and at the trial's end, replayed from the stored calls of both parties."""

    before: Any | None = Field(description="The customer's DB at the task's initial state (null: left out).")
    after: Any | None = Field(description="The customer's DB at the trial's end (null: left out).")
    changes: list[StateChangePublic] = Field(description="The fields that differ, start against end.")
    omitted: str | None = Field(
        default=None,
        description="What was left out past GREEN_AGENT_MAX_CUSTOMER_STATE_BYTES (null: nothing).",
    )

    @classmethod
    def of(cls, state: CustomerState | None) -> CustomerStatePublic | None:
        return None if state is None else cls.model_validate(dataclasses.asdict(state))


class TrialPublic(TrialResult):
    """One trial in full, with the domain of its assessment (task ids repeat across domains)."""

    domain: str = Field(description="The tau2 domain of the trial's task: retail, airline, ...")
    customer_state: CustomerStatePublic | None = Field(
        default=None,
        description="Dual control (telecom, mock): the customer's side before and after the trial; null "
        "where the customer has no DB of its own (retail, airline).",
    )

    @classmethod
    def of(cls, result: TrialResult, domain: str, customer: CustomerState | None = None) -> TrialPublic:
        return cls.model_validate(
            {**dict(result), "domain": domain, "customer_state": CustomerStatePublic.of(customer)}
        )


class TrialsPage(BaseModel):
    data: list[TrialSummaryPublic]
    count: int
    limit: int
    offset: int


class LeaderboardResult(BaseModel):
    """An AgentBeats results file: the participants and one Result DataPart per assessment."""

    participants: dict[str, str]
    results: list[dict[str, Any]]


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str = Field(description="ready or not_ready")
    database: str
    data: str
    tasks: int | None = Field(default=None, description="The tasks of the default domain (retail).")
    domains: dict[str, int | None] = Field(
        default_factory=dict,
        description="Every domain this service runs, with its task count once this process has loaded it "
        "(the default one at start-up, the others on first use); null before.",
    )
    detail: str | None = None


class RerunOverrides(BaseModel):
    """What a rerun of what failed changes from the source assessment's config; every field left out keeps
    the source's value (the tasks are always the failed ones). Validated like `AssessmentConfig`."""

    model_config = ConfigDict(extra="forbid")

    agent_url: str | None = Field(
        default=None,
        max_length=MAX_URL_CHARS,
        description="Another agent (its headers are then not carried over).",
    )
    trials: int | None = None
    max_steps: int | None = None
    max_errors: int | None = None
    concurrency: int | None = None
    dialect: Literal["auto", "text", "structured"] | None = None
    user_model: OneLine | None = None
    seed: int | None = None
    turn_timeout_s: float | None = None
    agent_headers: dict[str, SecretStr] | None = Field(
        default=None, description="Replaces the source's agent headers (never shown)."
    )

    @field_validator("agent_url")
    @classmethod
    def _agent_url(cls, value: str | None) -> str | None:
        # Checked here as well as in the merged config: a URL no door accepts is a 422 before anything is
        # looked up.
        problem = agent_url_problem(value.strip()) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value

    def overrides(self) -> dict[str, Any]:
        """The fields the request gave, as `AssessmentService.rerun_failed` takes them."""
        return self.model_dump(exclude_unset=True)
