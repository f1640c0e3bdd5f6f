"""AssessmentService: the one place where assessments are created, run, cancelled and resumed.

REST routes, the A2A executor and the CLI all go through it, so the two network doors lead to the same
assessments. Each running assessment is an asyncio task that drives `Engine.run`; every finished trial is
committed inside the engine's awaited `on_event` callback before the engine moves on, which is what makes
resume exact: after a crash, the stored trials are handed back to the engine as `completed` and only the
others run.

Cancellation has two meanings that must not be confused: `cancel()` (a user asked) marks the assessment
cancelled; `aclose()` (the process is shutting down) stops the tasks but leaves them unfinished, so the next
start resumes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from sqlalchemy.exc import InterfaceError, OperationalError, StatementError

from api.db.repository import (
    CANCELLED,
    COMPLETED,
    FAILED,
    RUNNING,
    AssessmentRecord,
    AssessmentRepository,
    NewAssessment,
)
from api.db.tables import DEFAULT_TENANT
from api.events import ProgressHub, StatusChanged, Subscription, TrialDone
from api.quotas import QuotaPolicy
from green_agent.config import AssessmentConfig, ConfigError, EngineSettings
from green_agent.errors import AgentNotReachedError
from green_agent.metrics import compute_report
from green_agent.models import (
    AssessmentReport,
    ProgressEvent,
    RunInfo,
    TranscriptMessage,
    TrialFinished,
    TrialResult,
)
from green_agent.slots import slot_caps
from green_agent.white_agent.egress import EgressPolicy
from retail_domain import TerminationReason

logger = logging.getLogger(__name__)
T = TypeVar("T")

OnEvent = Callable[[ProgressEvent], Awaitable[None]]

# Waits before retrying a write that failed for a reason that may pass (a lock timeout, a dropped
# connection, a database restarting). A trial whose storage still fails after these stops its assessment,
# which then ends `failed` with the error stored: a trial is never silently lost.
STORE_RETRY_DELAYS_S = (0.5, 2.0, 8.0)
_TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError, OSError)


async def _with_retries(what: str, write: Callable[[], Awaitable[T]]) -> T:
    for delay in STORE_RETRY_DELAYS_S:
        try:
            return await write()
        except _TRANSIENT_DB_ERRORS as exc:
            logger.warning("%s failed (%s: %s); retrying in %.1f s", what, type(exc).__name__, exc, delay)
            await asyncio.sleep(delay)
    return await write()


def unstorable_stand_in(result: TrialResult, exc: Exception) -> TrialResult:
    """What is stored for a trial the database refused for its content (a bug of ours: the engine makes
    agent content storable): `internal_error`, reward 0, the transcript replaced by a note. It never helps
    the agent, and the assessment goes on."""
    note = f"[transcript not stored: the database refused it ({type(exc).__name__}); see the service log]"
    return result.model_copy(
        update={
            "termination_reason": str(TerminationReason.INTERNAL_ERROR),
            "reward": 0.0,
            "is_successful": False,
            "transcript": [TranscriptMessage(index=0, role="assistant", content=note)],
            "nl_verdicts": [],
            "judge_input": None,
            "protocol_warnings": [],
            "error": f"internal error: the trial could not be stored ({type(exc).__name__})",
        }
    )


def concurrency_warnings(config: AssessmentConfig, settings: EngineSettings) -> list[str]:
    """Say so when the operator's bounds run fewer trials at once than the assessment asks for."""

    def operator_bound(limit: int, name: str, scope: str) -> tuple[int, str]:
        return limit, f"the operator's {name} is {limit} ({scope}; env GREEN_AGENT_{name.upper()})"

    _, share_cap = slot_caps(
        settings.max_concurrent_trials, settings.tenant_slot_share, settings.assessment_slot_share
    )
    bounds = [
        operator_bound(
            settings.max_concurrent_per_agent,
            "max_concurrent_per_agent",
            "per white agent, shared by its assessments",
        ),
        operator_bound(settings.max_concurrent_trials, "max_concurrent_trials", "for the whole service"),
        (
            share_cap,
            f"one assessment holds at most {share_cap} of the service's slots, so that other requesters "
            "always run (env GREEN_AGENT_TENANT_SLOT_SHARE, GREEN_AGENT_ASSESSMENT_SLOT_SHARE)",
        ),
    ]
    capping = [(limit, text) for limit, text in bounds if limit < config.concurrency]
    if not capping:
        return []
    effective = min(limit for limit, _ in capping)
    caps = "; ".join(text for _, text in capping)
    return [f"concurrency {config.concurrency} was asked but at most {effective} trials run at once: {caps}"]


def _config_of(record: AssessmentRecord) -> AssessmentConfig:
    """The stored config plus the agent headers, stored apart (the config is shown, they never are)."""
    return AssessmentConfig.model_validate({**record.config, "agent_headers": record.agent_headers})


class AssessmentEngine(Protocol):
    """What the service needs from `green_agent.engine.Engine`."""

    settings: EngineSettings

    def validate(self, config: AssessmentConfig) -> list[str]:
        """The selected task ids; raises ConfigError saying what to change."""
        ...

    async def run(
        self,
        config: AssessmentConfig,
        *,
        on_event: OnEvent | None = None,
        completed: Sequence[TrialResult] = (),
        egress: EgressPolicy | None = None,
        tenant: str = "default",
        assessment_id: str | None = None,
    ) -> AssessmentReport: ...

    def run_info(self, config: AssessmentConfig) -> RunInfo:
        """Which user simulator and judge an assessment of `config` uses."""
        ...


class AssessmentNotFound(LookupError):
    def __init__(self, assessment_id: str) -> None:
        super().__init__(f"no assessment with id {assessment_id}")


class AssessmentService:
    def __init__(
        self,
        repository: AssessmentRepository,
        engine: AssessmentEngine,
        hub: ProgressHub | None = None,
        *,
        quotas: QuotaPolicy | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        self.repository = repository
        self.hub = hub or ProgressHub()
        self._engine = engine
        self._quotas = quotas
        # Admission (quota check, then insert) happens one request at a time, so two requests cannot both
        # fit under a limit that only one of them fits under. One process owns a database (README).
        self._admission = asyncio.Lock()
        self._egress = egress or EgressPolicy()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._cancel_requested: set[str] = set()
        self._stood_in: set[str] = set()
        """Assessments with a trial stored as `unstorable_stand_in`: their report is rebuilt from storage."""
        # Called with the final record whenever an assessment reaches a terminal status (A2A bookkeeping).
        self.finish_listeners: list[Callable[[AssessmentRecord], Awaitable[None]]] = []

    # -- creating and starting ----------------------------------------------------------------------------

    async def create(
        self,
        config: AssessmentConfig,
        *,
        source: str,
        tenant: str = DEFAULT_TENANT,
        allow_private_agents: bool = True,
        idempotency_key: str | None = None,
        a2a_task_id: str | None = None,
        a2a_context_id: str | None = None,
        notes: Sequence[str] = (),
        start: bool = True,
    ) -> tuple[AssessmentRecord, bool]:
        """Validate and store a new assessment of `tenant` (or return the one this tenant's idempotency key
        made); start it.

        Raises ConfigError when the engine or the tenant's quota refuses the config, QuotaExceeded when the
        tenant or the service has too much unfinished work right now, IdempotencyConflict when the key was
        used for another request. `notes` are kept with the assessment (e.g. what an A2A request asked for
        that was mapped or ignored)."""
        task_ids = self._engine.validate(config)
        refusal = self._egress_policy(allow_private_agents).url_refusal(config.agent_url)
        if refusal is not None:
            raise ConfigError(f"agent_url is refused: {refusal}")
        trials_total = len(task_ids) * config.trials
        new = NewAssessment(
            config=config.model_dump(mode="json"),
            agent_url=config.agent_url,
            trials_total=trials_total,
            source=source,
            warnings=[*notes, *concurrency_warnings(config, self._engine.settings)],
            tenant=tenant,
            allow_private_agents=allow_private_agents,
            idempotency_key=idempotency_key,
            a2a_task_id=a2a_task_id,
            a2a_context_id=a2a_context_id,
            agent_headers=config.agent_header_values(),
        )
        async with self._admission:
            if idempotency_key is not None:
                # A replayed request returns what the first one made, whatever the load is now.
                existing = await self.repository.find_idempotent(tenant, idempotency_key, new.config)
                if existing is not None:
                    return existing, False
            if self._quotas is not None:
                self._quotas.check_config(config, trials_total, tenant)
                self._quotas.check_load(await self.repository.load(tenant), trials_total, tenant)
            record, created = await self.repository.create(new)
        if created and start:
            self.start(record)
        return record, created

    def start(self, record: AssessmentRecord, completed: Sequence[TrialResult] = ()) -> None:
        """Run a stored, unfinished assessment in the background (no-op if it already runs here)."""
        if record.id in self._running or record.finished:
            return
        config = _config_of(record)
        task = asyncio.create_task(self._run(record, config, list(completed)), name=f"assessment-{record.id}")
        self._running[record.id] = task
        task.add_done_callback(lambda _: self._running.pop(record.id, None))

    async def resume_unfinished(self) -> list[str]:
        """Start every assessment a previous process left queued or running; return their ids."""
        resumed = []
        for record in await self.repository.list_unfinished():
            if record.id in self._running:
                continue
            try:
                config = _config_of(record)
                self._engine.validate(config)
            except (ValueError, ConfigError) as exc:
                # The operator's settings changed since (e.g. a user model was removed): say so, do not loop.
                await self._finish(record.id, FAILED, error=f"cannot resume with the current settings: {exc}")
                continue
            completed = await self.repository.trial_results(record.id)
            logger.info("resuming assessment %s (%d trials already stored)", record.id, len(completed))
            self.start(record, completed)
            resumed.append(record.id)
        return resumed

    # -- running -----------------------------------------------------------------------------------------

    async def _run(
        self, record: AssessmentRecord, config: AssessmentConfig, completed: list[TrialResult]
    ) -> None:
        assessment_id = record.id
        started = time.monotonic()

        def clock() -> float:
            # Time spent by earlier processes (up to their last committed trial) counts too.
            return record.run_seconds + time.monotonic() - started

        try:
            await _with_retries(
                f"marking assessment {assessment_id} running",
                lambda: self.repository.mark_running(assessment_id),
            )
            self._publish_status(assessment_id, RUNNING, len(completed), record.trials_total)
            report = await self._engine.run(
                config,
                on_event=self._event_handler(assessment_id, record.trials_total, clock),
                completed=completed,
                egress=self._egress_for(record),
                tenant=record.tenant,
                assessment_id=assessment_id,
            )
        except asyncio.CancelledError:
            if assessment_id in self._cancel_requested:
                await asyncio.shield(
                    self._finish_cancelled(assessment_id, config, record.trials_total, clock())
                )
            raise
        except AgentNotReachedError as exc:
            # Not our failure (the agent is absent or the URL wrong): no traceback; the message says the fix.
            logger.info("assessment %s failed: %s", assessment_id, exc)
            await self._finish(assessment_id, FAILED, error=str(exc))
        except Exception as exc:
            logger.exception("assessment %s failed", assessment_id)
            await self._finish(assessment_id, FAILED, error=f"{type(exc).__name__}: {exc}")
        else:
            if assessment_id in self._stood_in:  # the engine's report counts what the database refused
                self._stood_in.discard(assessment_id)
                stored = await self.repository.trial_results(assessment_id)
                report = compute_report(config, stored, report.time_used_s, run_info=report.run_info)
            report = report.model_copy(update={"time_used_s": record.run_seconds + report.time_used_s})
            await self._finish(assessment_id, COMPLETED, report=report)

    def _egress_for(self, record: AssessmentRecord) -> EgressPolicy:
        """The policy an assessment runs under: the operator's rules, with private networks reachable as the
        requester's key allowed (`allow_private_agents`, stored with the assessment)."""
        return self._egress_policy(record.allow_private_agents)

    def _egress_policy(self, allow_private_agents: bool) -> EgressPolicy:
        return replace(self._egress, allow_private=allow_private_agents)

    def _event_handler(self, assessment_id: str, trials_total: int, clock: Callable[[], float]) -> OnEvent:
        async def on_event(event: ProgressEvent) -> None:
            if isinstance(event, TrialFinished):
                result, done = await self._store_trial(assessment_id, event.result, clock)
                if done is None:  # already stored (cannot happen with `completed` honoured): not news
                    return
                self.hub.publish(
                    assessment_id,
                    TrialDone(
                        task_id=result.task_id,
                        trial=result.trial,
                        termination_reason=str(result.termination_reason),
                        reward=result.reward,
                        is_successful=result.is_successful,
                        trials_done=done,
                        trials_total=trials_total,
                    ),
                )
            else:
                self.hub.publish(assessment_id, event)

        return on_event

    async def _store_trial(
        self, assessment_id: str, result: TrialResult, clock: Callable[[], float]
    ) -> tuple[TrialResult, int | None]:
        """Store a trial; if the database refuses its content (not a passing failure), store a stand-in."""
        what = f"storing trial {result.task_id}/{result.trial} of assessment {assessment_id}"
        try:
            done = await _with_retries(
                what, lambda: self.repository.save_trial(assessment_id, result, run_seconds=clock())
            )
            return result, done
        except (StatementError, ValueError) as exc:
            if isinstance(exc, _TRANSIENT_DB_ERRORS):
                raise
            logger.exception("%s: the database refused it; storing an internal_error stand-in", what)
            stand_in = unstorable_stand_in(result, exc)
            done = await _with_retries(
                what, lambda: self.repository.save_trial(assessment_id, stand_in, run_seconds=clock())
            )
            self._stood_in.add(assessment_id)
            return stand_in, done

    async def _finish_cancelled(
        self, assessment_id: str, config: AssessmentConfig, trials_total: int, elapsed: float
    ) -> None:
        # A cancelled assessment keeps a report over the trials that did finish, so the work is not lost; it
        # is partial, with the trials that never ran counted as `not_run`.
        trials = await self.repository.trial_results(assessment_id)
        run_info = self._engine.run_info(config)
        report = (
            compute_report(config, trials, elapsed, trials_planned=trials_total, run_info=run_info)
            if trials
            else None
        )
        await self._finish(assessment_id, CANCELLED, report=report, error="cancelled on request")

    async def _finish(
        self,
        assessment_id: str,
        status: str,
        *,
        report: AssessmentReport | None = None,
        error: str | None = None,
    ) -> None:
        try:
            record = await _with_retries(
                f"marking assessment {assessment_id} {status}",
                lambda: self.repository.finish(assessment_id, status, report=report, error=error),
            )
        except Exception:
            # The database is gone for good: the assessment stays unfinished in storage, with every trial
            # stored so far, and the next start resumes it. Say so loudly rather than dropping it.
            logger.exception(
                "could not mark assessment %s %s (error: %s); "
                "it stays unfinished and is resumed at the next start",
                assessment_id,
                status,
                error,
            )
            return
        if record is None:
            return
        for listener in self.finish_listeners:
            try:
                await listener(record)
            except Exception:
                logger.exception("finish listener failed for assessment %s", assessment_id)
        self._publish_status(
            assessment_id, record.status, record.trials_done, record.trials_total, record.error
        )

    def _publish_status(
        self, assessment_id: str, status: str, done: int, total: int, error: str | None = None
    ) -> None:
        self.hub.publish(
            assessment_id,
            StatusChanged(
                assessment_id=assessment_id, status=status, trials_done=done, trials_total=total, error=error
            ),
        )

    # -- reading, waiting, cancelling ---------------------------------------------------------------------

    async def get(self, assessment_id: str, *, tenant: str | None = None) -> AssessmentRecord:
        """The assessment; AssessmentNotFound when it does not exist or (with `tenant`) is another
        tenant's: the two are indistinguishable to the caller."""
        record = await self.repository.get(assessment_id, tenant=tenant)
        if record is None:
            raise AssessmentNotFound(assessment_id)
        return record

    def is_running(self, assessment_id: str) -> bool:
        return assessment_id in self._running

    async def wait(self, assessment_id: str) -> AssessmentRecord:
        """Wait until the assessment's background run ends here, then return its stored state."""
        task = self._running.get(assessment_id)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        return await self.get(assessment_id)

    async def cancel(self, assessment_id: str) -> AssessmentRecord:
        """Stop an unfinished assessment and mark it cancelled; a finished one is returned unchanged."""
        record = await self.get(assessment_id)
        if record.finished:
            return record
        task = self._running.get(assessment_id)
        self._cancel_requested.add(assessment_id)
        try:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            else:
                await self._finish(assessment_id, CANCELLED, error="cancelled on request")
        finally:
            self._cancel_requested.discard(assessment_id)
        return await self.get(assessment_id)

    def subscribe(self, assessment_id: str) -> contextlib.AbstractAsyncContextManager[Subscription]:
        return self.hub.subscribe(assessment_id)

    async def aclose(self) -> None:
        """Stop every running assessment without marking it: the next start resumes them."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
