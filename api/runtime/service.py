"""AssessmentService: the one place where assessments are created, run, cancelled and finished.

REST routes, the A2A executor and the CLI all go through it, so the two network doors lead to the same
assessments. An assessment is split into one queue job per trial (`api.runtime.queue`); whichever worker
process takes a job runs the trial, commits it (outside its concurrency slot, before the job is acknowledged),
and, when it was the last one, computes the report and finishes the assessment. Trials are unique on
(assessment, task, trial), so a job run twice (its worker died after the commit) never counts twice, and
finishing is a conditional update, so exactly one process finishes an assessment.

Cancellation: `cancel()` (a user asked) marks the assessment cancelled and stops its jobs on every worker;
a worker that shuts down puts its running jobs back in the queue, for another worker or the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from procrastinate import JobContext
from procrastinate.exceptions import AlreadyEnqueued, JobAborted
from procrastinate.job_context import AbortReason
from pydantic import ValidationError
from sqlalchemy.exc import StatementError

from api.db.repository import (
    CANCELLED,
    COMPLETED,
    FAILED,
    QUEUED,
    RUNNING,
    TERMINAL,
    AssessmentRecord,
    AssessmentRepository,
    NewAssessment,
    RetryPlan,
    RunnerLease,
)
from api.db.tables import DEFAULT_TENANT
from api.runtime.events import (
    STATUS_ONLY,
    EventKinds,
    EventSink,
    Lagged,
    ProgressHub,
    ProviderWaiting,
    StatusChanged,
    Subscription,
    TrialDone,
)
from api.runtime.logs import trial_context
from api.runtime.metrics import TurnClock, agent_host
from api.runtime.queue import TrialQueue, is_transient
from api.security.auth import Principal
from api.security.quotas import QuotaPolicy
from api.settings import default_of
from domain_kit import DataError, DomainData, TerminationReason
from green_agent.config import (
    SCRIPTED_USER,
    AssessmentConfig,
    ConfigError,
    EngineSettings,
    with_model_step_limit,
)
from green_agent.conversation.orchestrator import FirstContactFailed
from green_agent.core.errors import AgentNotReachedError, LLMUnavailableError
from green_agent.core.models import (
    AssessmentReport,
    ProgressEvent,
    RunInfo,
    TranscriptMessage,
    TrialResult,
    TurnTaken,
)
from green_agent.engine import AssessmentRun
from green_agent.llm import gate as llm_gate
from green_agent.scheduling.slots import slot_caps
from green_agent.scoring.metrics import (
    INFRASTRUCTURE_ERROR,
    NOT_JUDGED,
    NOT_RUN,
    compute_report,
    task_scores,
    tasks_not_fully_solved,
)
from green_agent.scoring.uncertainty import Comparison, NoSharedTasks, compare
from green_agent.white_agent.egress import EgressPolicy

logger = logging.getLogger(__name__)
T = TypeVar("T")

OnEvent = Callable[[ProgressEvent], Awaitable[None]]

# Waits before retrying a write that failed for a reason that may pass (a lock timeout, a dropped
# connection, a database restarting). A trial whose storage still fails after these goes back to the queue
# (procrastinate retries it, with growing pauses, until the database answers again); a write the database
# refuses for good fails the assessment, with the error stored: a trial is never silently lost.
STORE_RETRY_DELAYS_S = (0.5, 2.0, 8.0)
# `wait` re-reads the stored status this often, in case a progress event was lost.
WAIT_POLL_S = 1.0


async def _with_retries(what: str, write: Callable[[], Awaitable[T]]) -> T:
    for delay in STORE_RETRY_DELAYS_S:
        try:
            return await write()
        except Exception as exc:
            if not is_transient(exc):
                raise
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


OPERATOR_SOURCES = frozenset({"cli"})
"""Assessments the operator started on this machine (`green-agent run`, `demo`): told exactly why an agent
could not be reached (connection refused, timed out, no card, TLS, DNS)."""

SCRIPTED_CUSTOMER_WARNING = (
    "the customer is the scripted one, which only names the task id and then says ###STOP###: any real "
    "agent will score 0. Name an LLM user model (user_model; the bundled local model or a configured "
    "endpoint, see docs/local-llm.md) to assess an agent"
)


def scripted_customer_warnings(
    config: AssessmentConfig, settings: EngineSettings, *, builtin_oracle: bool
) -> list[str]:
    """Warn when the scripted customer meets anything but the built-in oracle (the only agent it suits)."""
    user_model = config.user_model or settings.default_user_model
    if user_model != SCRIPTED_USER or builtin_oracle:
        return []
    return [SCRIPTED_CUSTOMER_WARNING]


def judge_warnings(config: AssessmentConfig, settings: EngineSettings) -> list[str]:
    """Say so when NL assertions are judged by the default judge on OPENAI_API_KEY (none configured)."""
    judge = settings.judge
    if config.judge_model is not None or judge is None or not settings.judge_from_key:
        return []
    return [
        f"NL assertions are judged by {judge.model} on OPENAI_API_KEY (no judge is configured here; tau2's "
        "judge model)"
    ]


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

    async def load_domain(self, name: str) -> DomainData:
        """The named domain's data, loaded on first use (in a thread: it parses and hashes files); the
        synchronous methods below need the config's domain loaded first."""
        ...

    def validate(self, config: AssessmentConfig) -> list[str]:
        """The selected task ids; raises ConfigError saying what to change."""
        ...

    def trial_keys(self, config: AssessmentConfig) -> list[tuple[str, int]]: ...

    def longest_first(
        self, config: AssessmentConfig, keys: Sequence[tuple[str, int]]
    ) -> list[tuple[str, int]]: ...

    async def open_assessment(
        self,
        config: AssessmentConfig,
        on_event: OnEvent | None = None,
        *,
        egress: EgressPolicy | None = None,
        tenant: str = "default",
        assessment_id: str | None = None,
    ) -> AssessmentRun: ...

    def run_info(self, config: AssessmentConfig) -> RunInfo:
        """Which user simulator and judge an assessment of `config` uses."""
        ...

    async def check_llms(self, config: AssessmentConfig) -> None:
        """Raises LLMUnavailableError when an LLM endpoint `config` needs does not answer."""
        ...

    def rejudgeable(self, trial: TrialResult, config: AssessmentConfig) -> bool:
        """Whether a retry judges this stored trial again (rather than running it again or keeping it)."""
        ...


class AssessmentNotFound(LookupError):
    def __init__(self, assessment_id: str) -> None:
        super().__init__(f"no assessment with id {assessment_id}")


class NotComparable(ValueError):
    """Two assessments of different domains, or without a scored task in common; the message says which
    (REST 409)."""


def domain_mismatch(a: AssessmentRecord, b: AssessmentRecord) -> str | None:
    """Why two assessments cannot be compared task by task when they assess different domains (task ids
    repeat across domains: retail's task 5 is not airline's), in one line; None when they share one."""
    if a.domain == b.domain:
        return None
    return (
        f"assessments {a.id} ({a.domain}) and {b.id} ({b.domain}) assess different domains; compare two "
        "assessments of the same domain"
    )


class NothingToRerun(ValueError):
    """A rerun of what failed was asked of an assessment that is still running, or that solved every task
    in every trial; the message says which (REST 409)."""


class NothingToRetry(ValueError):
    """A retry was asked of an assessment that is still running, or that has nothing left to do (every
    planned trial stored and scored); the message says which, in one line (REST 409)."""


def retry_would_help(record: AssessmentRecord, *, judge_configured: bool) -> bool:
    """Whether `green-agent retry` has something to do: trials never run (cancelled, failed midway) or
    excluded as infrastructure errors, or left without a verdict while a judge is configured now."""
    report = record.report
    if report is None:
        return record.status != COMPLETED and record.trials_done < record.trials_total
    reasons = report.partial_reasons
    return bool(reasons.get(INFRASTRUCTURE_ERROR) or reasons.get(NOT_RUN)) or bool(
        judge_configured and reasons.get(NOT_JUDGED)
    )


def retry_reason(excluded: int, never_run: int, judge: int) -> str:
    """What a retry sets out to do, for the attempt history: "run again: 3 excluded as infrastructure
    errors, 5 never run; judge again: 2 without a verdict"."""
    run = [
        f"{n} {what}"
        for n, what in ((excluded, "excluded as infrastructure errors"), (never_run, "never run"))
        if n
    ]
    parts = [f"run again: {', '.join(run)}"] if run else []
    if judge:
        parts.append(f"judge again: {judge} without a verdict")
    return "; ".join(parts)


RERUN_FIXED = frozenset({"tasks"})
"""What a rerun of what failed never takes from the request: the tasks are the failed ones."""


@dataclass
class _Opened:
    """An assessment opened in this process: its engine run and the clock of its running time."""

    run: AssessmentRun
    turns: TurnClock
    trials_total: int
    order: list[tuple[str, int]]
    """The trials in start order (longest first), computed once per process: trial job n+1's successor is
    `order[concurrency + n]`, where n counts the stored trials."""
    concurrency: int
    base_seconds: float
    opened_at: float
    attempt: int = 1
    """The attempt it was opened for: a job of a later one (a retry started since) opens it again."""
    retrying: bool = False
    """A retry (attempt 2 or later): what is left is scattered over `order`, so each job tops the queue up
    with the full check (`_top_up`) rather than handing out `order[concurrency + n]`."""
    waiting: tuple[str, ...] = ()
    """What this process last told about the LLM endpoints the assessment waits for (`ProviderWaiting`)."""

    def clock(self) -> float:
        # Running time summed over processes: what earlier ones stored, plus this one's since it opened.
        return self.base_seconds + time.monotonic() - self.opened_at


class AssessmentService:
    def __init__(
        self,
        repository: AssessmentRepository,
        engine: AssessmentEngine,
        queue: TrialQueue,
        *,
        hub: ProgressHub | None = None,
        events: EventSink | None = None,
        quotas: QuotaPolicy | None = None,
        egress: EgressPolicy | None = None,
        lease: RunnerLease | None = None,
        take_over: bool = True,
        open_assessments: int = default_of("open_assessments"),
    ) -> None:
        self.repository = repository
        # SQLite (a queue in this process's memory): the claim this process holds on what it runs, and whether
        # it takes over assessments nobody runs (`resume_unfinished`). None on PostgreSQL (one shared queue)
        # and in a process without a worker (it runs nothing).
        self.lease = lease
        self._take_over = take_over
        self.queue = queue
        self.hub = hub or ProgressHub()
        # Where progress goes: the local hub, or (PostgreSQL) the relay that reaches every process's hub.
        self.events: EventSink = events or self.hub
        self._engine = engine
        self._quotas = quotas
        # Admission (quota check, then insert) happens one request at a time in this process, so two requests
        # cannot both fit under a limit that only one of them fits under. Several API processes on one
        # database each check on their own: together they may admit a little more (README, Scale-out).
        self._admission = asyncio.Lock()
        self._egress = egress or EgressPolicy()
        # Assessments opened in this process (agent card, user simulator, bounds), at most `open_assessments`:
        # the least recently used goes first, and is opened again when one of its trials runs here.
        self._opened: OrderedDict[str, asyncio.Task[_Opened]] = OrderedDict()
        self.open_assessments = open_assessments
        # Called with the final record whenever an assessment reaches a terminal status (A2A bookkeeping).
        self.finish_listeners: list[Callable[[AssessmentRecord], Awaitable[None]]] = []
        queue.register(self._run_trial_job)

    async def _config(self, record: AssessmentRecord) -> AssessmentConfig:
        """The stored config (`_config_of`), its domain loaded on this process's engine (once per process,
        in a thread): what the engine's synchronous methods (validate, trial_keys, ...) need."""
        config = _config_of(record)
        await self._engine.load_domain(config.domain)
        return config

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
        builtin_oracle: bool = False,
        rerun_of: str | None = None,
    ) -> tuple[AssessmentRecord, bool]:
        """Validate and store a new assessment of `tenant` (or return the one this tenant's idempotency key
        made); queue it.

        Raises ConfigError when the engine or the tenant's quota refuses the config, QuotaExceeded when the
        tenant or the service has too much unfinished work right now, IdempotencyConflict when the key was
        used for another request. `notes` are kept with the assessment (e.g. what an A2A request asked for
        that was mapped or ignored). `builtin_oracle`: the agent is the demo's own oracle, the one agent the
        scripted customer suits (no warning about it). A config that sets no step limit gets its customer
        model's `max_steps`, if the operator gave it one, and a warning saying so. `rerun_of`: the assessment
        whose failed tasks this one reruns (`rerun_failed`), kept so each links to the other."""
        config, step_limit = with_model_step_limit(config, self._engine.settings)
        await self._engine.load_domain(config.domain)
        task_ids = self._engine.validate(config)
        refusal = self._egress_policy(allow_private_agents).url_refusal(config.agent_url)
        if refusal is not None:
            raise ConfigError(f"agent_url is refused: {refusal}", field="agent_url")
        trials_total = len(task_ids) * config.trials
        new = NewAssessment(
            config=config.model_dump(mode="json"),
            agent_url=config.agent_url,
            trials_total=trials_total,
            source=source,
            domain=config.domain,
            warnings=[
                *notes,
                *step_limit,
                *scripted_customer_warnings(config, self._engine.settings, builtin_oracle=builtin_oracle),
                *judge_warnings(config, self._engine.settings),
                *concurrency_warnings(config, self._engine.settings),
                *await self._worker_warnings(),
            ],
            tenant=tenant,
            allow_private_agents=allow_private_agents,
            idempotency_key=idempotency_key,
            a2a_task_id=a2a_task_id,
            a2a_context_id=a2a_context_id,
            agent_headers=config.agent_header_values(),
            lease=self.lease,
            rerun_of=rerun_of,
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
        if created and start and not await self.start(record):
            record = await self.repository.get(record.id) or record  # e.g. failed at once: say so now
        return record, created

    async def _worker_warnings(self) -> list[str]:
        """Say so when no worker is alive: the assessment is queued and waits until one starts."""
        try:
            live = await self.queue.live_workers()
        except Exception:  # the queue cannot say; the assessment is stored and queued all the same
            return []
        if live:
            return []
        return [
            "no queue worker is running: the assessment waits until one starts "
            "(`green-agent worker`, or `green-agent serve` without --no-worker)"
        ]

    async def start(self, record: AssessmentRecord) -> int:
        """Queue the first trials of a stored, unfinished assessment (its jobs then queue the rest); return
        how many were queued. Idempotent: what is stored or queued already is not queued again."""
        if record.finished:
            return 0
        if record.status == QUEUED and not record.trials_done:
            # Nothing ran yet: an unreachable user or judge model fails it now, in one line, rather than
            # each trial after its retries (minutes of "0 scored" on a large assessment).
            try:
                await self._engine.check_llms(await self._config(record))
            except LLMUnavailableError as exc:
                logger.info("assessment %s failed: %s", record.id, exc)
                await self._finish(record.id, FAILED, error=str(exc))
                return 0
        return await self._top_up(record, ending=None)

    async def _top_up(self, record: AssessmentRecord, *, ending: tuple[str, int] | None) -> int:
        """Queue the assessment's next trials, longest first, until `concurrency` of them are waiting or
        running (not counting `ending`, the trial of the job that calls this and is about to end); finish
        the assessment when nothing is left to run. One process at a time per assessment (`exclusive`)."""
        config = await self._config(record)
        order = self._engine.longest_first(config, self._engine.trial_keys(config))
        async with self.queue.exclusive(record.id) as connection:
            # Queued first, stored second: a trial that ends in between is then seen in one or the other.
            queued = await self.queue.queued_trials(record.id, connection)
            if ending is not None:
                queued.discard(ending)
            stored = set(await self.repository.trial_keys(record.id))
            if record.attempt > 1:  # a retry: stored trials it judges again are work too
                stored -= set(await self.repository.judge_pending_keys(record.id))
            waiting = [key for key in order if key not in stored and key not in queued]
            room = config.concurrency - len(queued)
            if waiting and room > 0:
                return await self.queue.enqueue(record.id, waiting[:room], connection)
        if not waiting:
            # Maybe the last trial was just stored (by this job or by one ending at the same moment).
            await self._finish_if_done(record.id)
        return 0

    async def resume_unfinished(self) -> list[str]:
        """Top up the queue of every unfinished assessment this process may run (`start`). On PostgreSQL (at
        start-up and every `worker_stalled_after_s` in each worker) that is every one: it catches an
        assessment whose jobs stopped queueing their successors (a process died between storing and queueing,
        a job failed for good); running jobs of dead workers are the stalled-job sweep's business. On SQLite
        each process's queue lives in its memory, so a process resumes only the assessments it runs and, when
        it takes over work (`take_over`), those whose runner is gone (`RunnerLease`): a `run` and a `serve`
        on one file never run each other's. Returns the ids of the assessments that got jobs."""
        if self.queue.persistent:
            records = await self.repository.list_unfinished()
        elif self.lease is not None:
            if self._take_over:
                for runner in await self.repository.unfinished_runners() - {self.lease.runner}:
                    if RunnerLease.gone(runner):
                        await self.repository.release_leases(runner)
            records = await self.repository.claim_unfinished(self.lease, take_over=self._take_over)
        else:
            return []  # no worker in this process: whatever it queued here would never run
        resumed = []
        for record in records:
            try:
                config = await self._config(record)
                self._engine.validate(config)
            except (ValueError, ConfigError, DataError) as exc:
                # The operator's settings changed since (e.g. a user model was removed, or a domain's data):
                # say so, do not loop.
                await self._finish(record.id, FAILED, error=f"cannot resume with the current settings: {exc}")
                continue
            if await self.start(record):
                logger.info("queued the missing trials of unfinished assessment %s", record.id)
                resumed.append(record.id)
        return resumed

    async def keep_leases(self, every_s: float) -> None:
        """Renew this process's claim on the assessments it runs every `every_s` until cancelled (SQLite);
        on the way out, release them so that another process takes them over at once."""
        lease = self.lease
        if lease is None:
            return
        try:
            while True:
                await asyncio.sleep(every_s)
                try:
                    await self.repository.renew_leases(lease)
                except Exception as exc:  # the next round tries again; the lease outlasts a few misses
                    logger.warning("could not renew the runner lease of %s: %s", lease.runner, exc)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.repository.release_leases(lease.runner))

    # -- running one trial (a queue job, on any worker process) ------------------------------------------

    def _opening(self, assessment_id: str) -> asyncio.Task[_Opened] | None:
        """The assessment's opening in this process (done or under way), unless there is none or it failed.
        What it holds (config, order, bounds) never changes once the assessment is stored."""
        opening = self._opened.get(assessment_id)
        if opening is None or (opening.done() and (opening.cancelled() or opening.exception() is not None)):
            return None
        self._opened.move_to_end(assessment_id)
        return opening

    def _open(self, record: AssessmentRecord) -> asyncio.Task[_Opened]:
        """The assessment opening on this process's engine (once; concurrent jobs share the opening)."""
        opening = self._opening(record.id)
        if opening is None:
            opening = asyncio.create_task(self._open_now(record), name=f"open assessment {record.id}")
            self._opened[record.id] = opening
            self._opened.move_to_end(record.id)
            while len(self._opened) > self.open_assessments:
                self._opened.popitem(last=False)
        return opening

    async def _open_now(self, record: AssessmentRecord) -> _Opened:
        config = await self._config(record)
        assessment_id = record.id
        turns = TurnClock(agent_host(config.agent_url))

        async def on_event(event: ProgressEvent) -> None:
            if isinstance(event, TurnTaken):
                turns.message(event.task_id, event.trial, event.message)
            self.events.publish(assessment_id, event)  # type: ignore[arg-type]

        await _with_retries(
            f"marking assessment {assessment_id} running", lambda: self.repository.mark_running(assessment_id)
        )
        self._publish_status(assessment_id, RUNNING, record.trials_done, record.trials_total)
        run = await self._engine.open_assessment(
            config,
            on_event,
            egress=self._egress_for(record),
            tenant=record.tenant,
            assessment_id=assessment_id,
        )
        if record.trials_done:  # stored trials: the agent was reached, by this process or another
            run.mark_reached()
        if run.agent_name != record.agent_name:  # its card's name, shown beside its URL
            await _with_retries(
                f"storing the agent name of assessment {assessment_id}",
                lambda: self.repository.set_agent_name(assessment_id, run.agent_name),
            )
        order = self._engine.longest_first(config, self._engine.trial_keys(config))
        opened = _Opened(
            run,
            turns,
            record.trials_total,
            order,
            config.concurrency,
            record.run_seconds,
            time.monotonic(),
            attempt=record.attempt,
            retrying=record.attempt > 1,
        )
        self._tell_waiting(assessment_id, opened)  # an endpoint may be down already
        return opened

    def _egress_for(self, record: AssessmentRecord) -> EgressPolicy:
        """The policy an assessment runs under: the operator's rules, with private networks reachable as the
        requester's key allowed (`allow_private_agents`, stored with the assessment)."""
        return self._egress_policy(record.allow_private_agents)

    def _egress_policy(self, allow_private_agents: bool) -> EgressPolicy:
        return replace(self._egress, allow_private=allow_private_agents)

    async def _run_trial_job(self, context: JobContext, assessment_id: str, task_id: str, trial: int) -> None:
        with trial_context(assessment_id, task_id, trial):
            try:
                await self._run_trial(context, assessment_id, task_id, trial)
            except asyncio.CancelledError:
                # Wherever the job was when it was stopped (its first reads included): on request (the
                # assessment is marked cancelled already) it ends aborted, not retried; otherwise the worker
                # is shutting down and the job goes back to the queue.
                if context.abort_reason() == AbortReason.USER_REQUEST:
                    raise JobAborted(f"assessment {assessment_id} was cancelled") from None
                raise

    async def _run_trial(self, context: JobContext, assessment_id: str, task_id: str, trial: int) -> None:
        # One light read per job (status, and whether this trial is stored); the whole record only when the
        # assessment is not opened in this process yet, or for the rare top-up below.
        state = await self.repository.trial_job_state(assessment_id, task_id, trial)
        if state is None or state.finished:
            return
        if state.stored and not state.judge_pending:
            # Stored by an earlier run of this job whose worker died before acknowledging it (and maybe before
            # queueing the next trials).
            record = await self.repository.get(assessment_id)
            if record is not None and not record.finished:
                await self._top_up(record, ending=(task_id, trial))
            return
        opening = self._opening(assessment_id)
        if opening is not None and opening.done() and opening.result().attempt != state.attempt:
            # Opened here for an earlier attempt (a retry started since, in another process): its order,
            # clock and top-up rule are that attempt's.
            self._opened.pop(assessment_id, None)
            opening = None
        if opening is None:
            record = await self.repository.get(assessment_id)
            if record is None or record.finished:
                return
            opening = self._open(record)
            # Not kept for the minutes the trial lasts: a decoded copy per live trial (~2 KiB each).
            del record
        try:
            opened = await asyncio.shield(opening)
            try:
                result = (
                    await self._judged_again(opened, assessment_id, task_id, trial)
                    if (state.judge_pending)
                    else await opened.run.run_trial(task_id, trial)
                )
            except FirstContactFailed as failure:
                raise await opened.run.not_reached(failure) from failure.__cause__
        except AgentNotReachedError as exc:
            # Not our failure (the agent is absent or the URL wrong): no traceback; the message says the fix.
            logger.info("assessment %s failed: %s", assessment_id, exc.detailed)
            await self._fail(assessment_id, await self._unreached_message(assessment_id, exc))
            return
        except Exception as exc:  # a bug of ours: the assessment ends visibly rather than hanging
            logger.exception("trial %s/%s of assessment %s crashed", task_id, trial, assessment_id)
            await self._fail(assessment_id, f"{type(exc).__name__}: {exc}")
            return
        stored, done = await self._store(assessment_id, result, opened, replace=state.judge_pending)
        if not stored:
            return
        if done is None or opened.retrying:  # stored by another run of this trial, or a retry: the full check
            current = await self.repository.get(assessment_id)
            if current is not None and not current.finished:
                await self._top_up(current, ending=(task_id, trial))
            return
        await self._queue_successor(assessment_id, opened, done)

    async def _judged_again(
        self, opened: _Opened, assessment_id: str, task_id: str, trial: int
    ) -> TrialResult:
        """A stored trial a retry judges again, judged from its stored transcript; if it cannot be (it was
        stored without what judging it again needs), its conversation is run again instead."""
        stored = await self.repository.get_trial(assessment_id, task_id, trial)
        judged = await opened.run.rejudge(stored) if stored is not None else None
        if judged is not None:
            return judged
        logger.warning(
            "trial %s/%s of %s cannot be judged from what is stored; running it again",
            task_id,
            trial,
            assessment_id,
        )
        return await opened.run.run_trial(task_id, trial)

    async def _queue_successor(self, assessment_id: str, opened: _Opened, done: int) -> None:
        """The cheap top-up of a job that stored its trial as the `done`-th: O(1), no read, no lock.

        The first `concurrency` trials of `opened.order` were queued at the start and each stored trial hands
        out exactly one more (the count comes from the store's own transaction, so each value is seen by one
        job only): after `done` stores, `order[:concurrency + done]` were handed out and the next is
        `order[concurrency + done - 1]`, the same trial the full check (`_top_up`) would choose. Anything
        lost in between (a process dying after its commit) is queued again by the periodic repair."""
        if done >= opened.trials_total:
            await self._finish_if_done(assessment_id)
            return
        position = opened.concurrency + done - 1
        if position < len(opened.order):
            with contextlib.suppress(AlreadyEnqueued):  # queued already (a repair got there first)
                await self.queue.enqueue(assessment_id, [opened.order[position]])

    async def _store(
        self, assessment_id: str, result: TrialResult, opened: _Opened, *, replace: bool = False
    ) -> tuple[bool, int | None]:
        """Commit a finished trial (the job is acknowledged only after this returns) and report it. A trial
        whose content the database refuses (a bug of ours) is stored as an `internal_error` stand-in; False
        when even that was refused (the assessment then failed). Passing failures propagate: the job is
        retried later, from the start. Also returns the stored-trial count this store made (None when the
        trial was stored already)."""
        what = f"storing trial {result.task_id}/{result.trial} of assessment {assessment_id}"
        # A trial judged again replaces the stored one that waited for it (`replace`).
        save = self.repository.replace_judged_trial if replace else self.repository.save_trial
        try:
            try:
                # Shielded: a job stopped meanwhile (a cancel) must not cut the write short.
                done = await asyncio.shield(
                    _with_retries(what, lambda: save(assessment_id, result, run_seconds=opened.clock()))
                )
            except (StatementError, ValueError) as exc:
                if is_transient(exc):
                    raise
                logger.exception("%s: the database refused it; storing an internal_error stand-in", what)
                result = unstorable_stand_in(result, exc)
                stand_in = result
                done = await _with_retries(
                    what, lambda: save(assessment_id, stand_in, run_seconds=opened.clock())
                )
        except Exception as exc:
            if is_transient(exc):
                raise
            logger.exception("%s: the database refused it for good", what)
            await self._fail(assessment_id, f"{type(exc).__name__}: {exc}")
            return False, None
        if done is not None:
            opened.turns.trial_done(result)
            self.events.publish(
                assessment_id,
                TrialDone(
                    task_id=result.task_id,
                    trial=result.trial,
                    termination_reason=str(result.termination_reason),
                    reward=result.reward,
                    is_successful=result.is_successful,
                    trials_done=done,
                    trials_total=opened.trials_total,
                ),
            )
        return True, done

    async def _finish_if_done(self, assessment_id: str) -> None:
        """Compute the report and finish the assessment if every trial is stored (whoever gets here first;
        the conditional update lets exactly one process finish it)."""
        record = await self.repository.get(assessment_id)
        if record is None or record.finished or record.trials_done < record.trials_total:
            return
        await self._finish(assessment_id, COMPLETED, report=await self._report(record))

    async def _report(self, record: AssessmentRecord) -> AssessmentReport:
        """The report over the stored trials, in report order; trials never run (a cancelled assessment)
        count as `not_run`."""
        config = await self._config(record)
        trials = await self.repository.trial_results(record.id, transcripts=False)  # a report reads none
        keys = self._engine.trial_keys(config)
        order = {key: i for i, key in enumerate(keys)}
        trials.sort(key=lambda t: order.get((t.task_id, t.trial), len(order)))
        return compute_report(
            config,
            trials,
            record.run_seconds,
            trials_planned=record.trials_total,
            tasks_planned=len({task_id for task_id, _ in keys}),
            run_info=self._engine.run_info(config),
        )

    async def _unreached_message(self, assessment_id: str, exc: AgentNotReachedError) -> str:
        """What the requester is told about an agent that could not be reached: exactly what happened for the
        operator's own runs (`green-agent run` on this machine), the same words whatever happened for anyone
        else, so that the service cannot be used to map which ports are open (docs/security.md)."""
        record = await self.repository.get(assessment_id)
        return exc.detailed if record is not None and record.source in OPERATOR_SOURCES else str(exc)

    async def _fail(self, assessment_id: str, error: str) -> None:
        await self._finish(assessment_id, FAILED, error=error)
        try:
            # Waiting jobs only: running ones may be failing it too, mid-write; they end on their own.
            await self.queue.cancel(assessment_id, running=False)
        except Exception as exc:  # its jobs then find it failed when they start, and stop
            logger.warning("could not cancel the jobs of failed assessment %s: %s", assessment_id, exc)

    async def _finish(
        self,
        assessment_id: str,
        status: str,
        *,
        report: AssessmentReport | None = None,
        error: str | None = None,
    ) -> AssessmentRecord | None:
        """Move the assessment to a terminal status; returns the record when this call did it."""
        try:
            record = await _with_retries(
                f"marking assessment {assessment_id} {status}",
                lambda: self.repository.finish(assessment_id, status, report=report, error=error),
            )
        except Exception:
            # The database is gone for now: the assessment stays unfinished in storage with every trial stored
            # so far; the next job of it (or the next start) finishes it. Say so loudly.
            logger.exception("could not mark assessment %s %s (error: %s)", assessment_id, status, error)
            raise
        if record is None:
            return None
        self._opened.pop(assessment_id, None)
        # Shielded: this job may be stopped meanwhile (failing an assessment stops its other jobs, some of
        # which may be here too), and the listeners' bookkeeping (the A2A task's final state) must complete.
        await asyncio.shield(self._announce(record))
        return record

    async def _announce(self, record: AssessmentRecord) -> None:
        for listener in self.finish_listeners:
            try:
                await listener(record)
            except Exception:
                logger.exception("finish listener failed for assessment %s", record.id)
        self._publish_status(record.id, record.status, record.trials_done, record.trials_total, record.error)

    def _publish_status(
        self, assessment_id: str, status: str, done: int, total: int, error: str | None = None
    ) -> None:
        self.events.publish(
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

    async def compare(self, a_id: str, b_id: str, *, tenant: str | None = None) -> Comparison:
        """A against B, paired by task over the tasks both scored (green_agent.scoring.uncertainty). Raises
        AssessmentNotFound (unknown, or another tenant's), NotComparable (different domains, or no scored
        task in common)."""
        a = await self.get(a_id, tenant=tenant)
        b = await self.get(b_id, tenant=tenant)
        refusal = domain_mismatch(a, b)
        if refusal is not None:
            raise NotComparable(refusal)
        scores_a = task_scores(await self.repository.trial_summaries(a.id))
        scores_b = task_scores(await self.repository.trial_summaries(b.id))
        try:
            return compare(scores_a, scores_b, a_id=a.id, b_id=b.id)
        except NoSharedTasks:
            raise NotComparable(
                f"assessments {a.id} and {b.id} have no scored task in common "
                f"({len(scores_a)} and {len(scores_b)} tasks scored): there is nothing to compare"
            ) from None

    async def rerun_failed(
        self,
        source_id: str,
        overrides: dict[str, Any] | None = None,
        *,
        source: str,
        caller: Principal,
        start: bool = True,
    ) -> tuple[AssessmentRecord, list[str]]:
        """A new assessment of the caller's tenant over the tasks `source_id` did not solve in every planned
        trial (failed, flaky, excluded or never run), with its config where `overrides` says nothing; returns
        it and those tasks. It is admitted as the caller's own (their egress rule and quotas, now). The agent
        headers carry over only to the same agent URL (they are its secrets).

        Raises AssessmentNotFound (unknown, or not visible to the caller), NothingToRerun (still running, or
        every task solved), ConfigError (overrides that cannot run), and what `create` raises."""
        record = await self.get(source_id, tenant=caller.tenant_filter)
        if not record.finished:
            raise NothingToRerun(
                f"assessment {source_id} is {record.status}; rerun what failed once it has finished"
            )
        overrides = dict(overrides or {})
        fixed = sorted(RERUN_FIXED & set(overrides))
        if fixed:
            raise ConfigError(f"a rerun of what failed runs the failed tasks; leave out {', '.join(fixed)}")
        config = await self._config(record)
        planned = self._engine.validate(config)
        trials = await self.repository.trial_summaries(record.id)
        tasks = tasks_not_fully_solved(planned, trials, config.trials)
        if not tasks:
            raise NothingToRerun(
                f"assessment {source_id} solved all its {len(planned)} tasks in every trial; nothing to rerun"
            )
        same_agent = overrides.get("agent_url", config.agent_url) == config.agent_url
        headers = config.agent_header_values() if same_agent else {}
        merged = {
            **config.model_dump(mode="json"),
            "agent_headers": headers,
            **overrides,
            "tasks": {"task_ids": tasks},
        }
        try:
            rerun = AssessmentConfig.model_validate(merged)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'config'}: {error['msg']}"
                for error in exc.errors(include_url=False)[:5]
            )
            raise ConfigError(f"the rerun's config is invalid: {problems}") from None
        note = f"rerun of the {len(tasks)} task(s) of assessment {source_id} not solved in every trial"
        created, _ = await self.create(
            rerun,
            source=source,
            tenant=caller.tenant,
            allow_private_agents=caller.allow_private_agents,
            notes=[note],
            start=start,
            rerun_of=record.id,
        )
        return created, tasks

    async def plan_retry(self, record: AssessmentRecord, *, source: str) -> RetryPlan:
        """What a retry of this finished assessment would run again and judge again (`retry` does it; the web
        UI says it before the button is pressed). Raises NothingToRetry when there is nothing left to do or
        the assessment cannot run with the current settings."""
        config = await self._config(record)
        try:
            keys = self._engine.trial_keys(config)
        except ConfigError as exc:
            raise NothingToRetry(
                f"assessment {record.id} cannot run with the current settings: {exc}"
            ) from None
        stored = {
            (t.task_id, t.trial): t for t in await self.repository.trial_results(record.id, transcripts=False)
        }
        judge = tuple(key for key in keys if key in stored and self._engine.rejudgeable(stored[key], config))
        to_judge = set(judge)
        excluded = [
            key
            for key in keys
            if key in stored
            and key not in to_judge
            and stored[key].termination_reason == INFRASTRUCTURE_ERROR
        ]
        never_run = [key for key in keys if key not in stored]
        rerun = set(excluded) | set(never_run)
        run = tuple(key for key in keys if key in rerun)
        if not run and not judge:
            raise NothingToRetry(
                f"assessment {record.id} has nothing left to retry: its {len(keys)} planned trials are "
                "stored and scored, or excluded for want of a judge while none is configured"
            )
        reason = retry_reason(len(excluded), len(never_run), len(judge))
        return RetryPlan(run=run, judge=judge, reason=reason, source=source)

    async def retry(
        self, assessment_id: str, *, source: str, caller: Principal, start: bool = True
    ) -> AssessmentRecord:
        """Retry a finished assessment in place: run again every trial excluded as an infrastructure error or
        never run (cancelled, failed midway, its process killed), and judge again, without running the
        conversation again, every stored trial excluded for want of a verdict (its judge failed, or none was
        configured) while a judge is configured now. Scored trials are kept; the report is computed again at
        the end; the attempt is recorded in the assessment's history. Queues the work (unless `start` is
        False) and returns the assessment, `queued`.

        The retry runs under the caller's rights at the time of the retry, not those of whoever created the
        assessment: the caller's egress rule (whether agents on private networks may be reached; stored with
        the assessment for its trials, in any process) and the caller's tenant's limits on one assessment;
        the work it adds counts in the load of the tenant that owns the assessment, against that tenant's
        limits.

        Raises AssessmentNotFound (unknown, or not visible to the caller), NothingToRetry (running, nothing
        left to do, or it cannot run with the current settings), each with a one-line reason, ConfigError (the
        caller may not run it: its agent URL or size) and QuotaExceeded (the tenant's quota of unfinished
        work has no room for it now)."""
        record = await self.get(assessment_id, tenant=caller.tenant_filter)
        if not record.finished:
            raise NothingToRetry(
                f"assessment {assessment_id} is {record.status}; retry it once it has finished (or cancel it)"
            )
        plan = await self.plan_retry(record, source=source)
        config = _config_of(record)
        refusal = self._egress_policy(caller.allow_private_agents).url_refusal(config.agent_url)
        if refusal is not None:
            raise ConfigError(f"agent_url is refused: {refusal}")
        async with self._admission:  # as `create`: the quota check and the write, one request at a time
            if self._quotas is not None:
                self._quotas.check_config(config, record.trials_total, caller.tenant)
                load = await self.repository.load(record.tenant)
                self._quotas.check_load(load, len(plan.run) + len(plan.judge), record.tenant)
            retried = await self.repository.begin_retry(
                record.id, plan, allow_private_agents=caller.allow_private_agents, lease=self.lease
            )
        if retried is None:
            raise NothingToRetry(f"assessment {assessment_id} is running already (another retry started it)")
        logger.info("assessment %s: attempt %d: %s", record.id, retried.attempt, plan.reason)
        self._opened.pop(record.id, None)  # opened again, as a retry
        self._publish_status(record.id, retried.status, retried.trials_done, retried.trials_total)
        if start and not await self.start(retried):
            retried = await self.repository.get(retried.id) or retried  # e.g. failed at once: say so now
        return retried

    # -- what an assessment waits for among our LLM endpoints ---------------------------------------------

    def watch_providers(self) -> Callable[[], None]:
        """Tell each assessment opened here when an LLM endpoint it uses changes state (`ProviderWaiting`);
        returns what stops it (the runtime calls both)."""

        def changed(event: llm_gate.GateEvent) -> None:
            if event.kind != "state":
                return
            for assessment_id, opening in list(self._opened.items()):
                if opening.done() and not opening.cancelled() and opening.exception() is None:
                    opened = opening.result()
                    if event.endpoint in opened.run.endpoints:
                        self._tell_waiting(assessment_id, opened)

        llm_gate.observers.append(changed)
        return lambda: llm_gate.observers.remove(changed)

    def _tell_waiting(self, assessment_id: str, opened: _Opened) -> None:
        waiting = tuple(status.describe() for status in opened.run.waiting_for())
        if waiting != opened.waiting:
            opened.waiting = waiting
            self.events.publish(assessment_id, ProviderWaiting(waiting_for=list(waiting)))

    def waiting_for(self, assessment_id: str) -> list[str]:
        """What the assessment waits for among our LLM endpoints, as far as this process knows ("waiting for
        gpt-4.1 at api.openai.com: down since 14:02:11"); empty when nothing."""
        return self.hub.waiting_for(assessment_id)

    async def wait(self, assessment_id: str) -> AssessmentRecord:
        """Wait until the assessment is finished (by any process) and return its stored state."""
        async with self.subscribe(assessment_id, accept=STATUS_ONLY) as subscription:
            while True:
                record = await self.get(assessment_id)
                if record.finished:
                    return record
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WAIT_POLL_S):
                        await _until_terminal(subscription)

    async def cancel(self, assessment_id: str) -> AssessmentRecord:
        """Stop an unfinished assessment and mark it cancelled; a finished one is returned unchanged.
        The report covers the trials that did finish, so that work is not lost."""
        record = await self.get(assessment_id)
        if record.finished:
            return record
        report = await self._report(record) if record.trials_done else None
        await self._finish(assessment_id, CANCELLED, report=report, error="cancelled on request")
        await self.queue.cancel(assessment_id)
        return await self.get(assessment_id)

    def subscribe(
        self,
        assessment_id: str,
        *,
        queue_size: int | None = None,
        accept: EventKinds | None = None,
    ) -> contextlib.AbstractAsyncContextManager[Subscription]:
        return self.hub.subscribe(assessment_id, queue_size=queue_size, accept=accept)


async def _until_terminal(subscription: Subscription) -> None:
    async for event in subscription:
        if isinstance(event, Lagged) or (isinstance(event, StatusChanged) and event.status in TERMINAL):
            return
