"""The A2A door: an AgentExecutor that runs AgentBeats requests as assessments of the shared service.

One A2A task = one assessment (stored with the task id, so REST shows it too). Progress goes out as a working
status update per finished trial, and at least every `a2a_heartbeat_s` while trials run (the AgentBeats
gateway and its proxy give up after 300 s without data). The end is one `Result` artifact and the completed
state, and only for a complete result, since a leaderboard reads `score` and `max_score` and never
`complete`: missing trials are retried in place (the operator's `a2a_retries`), and a result still missing
some ends the task failed, with one line saying what is missing and how to continue. Requests that cannot be
run, or not scored in full, are rejected (a task state, with one line saying what to send), never an
exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any

from a2a.helpers import get_data_parts, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import Artifact, Message, Part, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

from api.db.repository import CANCELLED, COMPLETED, AssessmentRecord, IdempotencyConflict
from api.db.repository import TERMINAL as TERMINAL_STATUSES
from api.runtime.events import PROGRESS_ONLY, Lagged, StatusChanged, Subscription, TrialDone
from api.runtime.service import NothingToRetry, retry_would_help
from api.security.auth import Principal
from api.security.quotas import QuotaExceeded
from api.security.tenancy import owner_context, principal_of
from api.web.a2a.request import RequestError, read_request, redact_text, request_config
from api.web.a2a.result import RESULT_ARTIFACT, result_parts
from api.web.request_limits import short
from green_agent.config import SCRIPTED_USER, AssessmentConfig, ConfigError

if TYPE_CHECKING:
    from api.runtime.runtime import Runtime
    from api.runtime.service import AssessmentService

logger = logging.getLogger(__name__)

# After the assessment is over, how long the progress relay may take to pass on the last trial updates.
RELAY_GRACE_S = 1.0

OFFICIAL_DEFAULT_USER_LLM = "openai/gpt-4o-mini"
"""The customer of a request that names none, when the operator set no default: the official AgentBeats tau2
green's (a drop-in runs what it would). Never the scripted customer, which a request gets only by name."""

_FINAL_STATES = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
)


def request_text(context: RequestContext) -> str:
    """The request as text: the text parts, else a DataPart holding the JSON object."""
    text = context.get_user_input().strip()
    if text or context.message is None:
        return text
    for data in get_data_parts(list(context.message.parts)):
        if isinstance(data, dict):
            return json.dumps(data)
    return ""


def _redacted_json(value: Any) -> str | None:
    return redact_text(json.dumps(value, default=str))


def redact_message(message: Message) -> None:
    """Redact, in place, every place of an incoming message that may carry agent headers: text parts, data
    parts (kept as the redacted JSON text), and the metadata of the parts and of the message (dropped when
    they name the field). Whichever message it is (a first request, a second one to the same task, one the
    request check rejects): the SDK stores what is left in the task's history."""
    for index, part in enumerate(list(message.parts)):
        kind = part.WhichOneof("content")
        if kind == "text":
            redacted = redact_text(part.text)
            if redacted is not None:
                message.parts[index].text = redacted
        elif kind == "data":
            redacted = _redacted_json(get_data_parts([part])[0])
            if redacted is not None:
                message.parts[index].CopyFrom(Part(text=redacted))
        if part.HasField("metadata") and _redacted_json(MessageToDict(part.metadata)) is not None:
            message.parts[index].ClearField("metadata")
    if message.HasField("metadata") and _redacted_json(MessageToDict(message.metadata)) is not None:
        message.ClearField("metadata")


def failure_text(record: AssessmentRecord) -> str:
    """The failed task's message: the stored reason, which says what to fix (e.g. an unreachable agent)."""
    if record.status == COMPLETED and record.report is not None and not record.report.complete:
        return incomplete_text(record)
    return f"Assessment failed: {record.error or f'assessment ended as {record.status}'}"


def incomplete_text(record: AssessmentRecord) -> str:
    """One line for an assessment that finished with trials missing: what is missing and how to continue."""
    assert record.report is not None
    missing = record.report.partial_summary()
    return (
        f"Assessment {record.id} is incomplete, so no Result was published: {missing}. "
        f"Continue it in place with POST /assessments/{record.id}/retry (green-agent retry {record.id}), "
        f"then read GET /assessments/{record.id}/leaderboard."
    )


def intro_text(record: AssessmentRecord, config: AssessmentConfig) -> str:
    """The first working status: what runs, then each warning as a sentence of its own."""
    tasks = len(config.tasks.task_ids or ())
    text = (
        f"Assessment {record.id} started: {tasks} task{'s' if tasks != 1 else ''} x {config.trials} "
        f"trial{'s' if config.trials != 1 else ''} = {record.trials_total} trials."
    )
    return text + "".join(f" Note: {warning.strip().rstrip('.')}." for warning in record.warnings)


def default_user_llm(default_user_model: str) -> str:
    """The customer of a request that names none: the operator's default, unless that is the scripted one."""
    return default_user_model if default_user_model != SCRIPTED_USER else OFFICIAL_DEFAULT_USER_LLM


def unscorable_tasks(runtime: Runtime, config: AssessmentConfig) -> str | None:
    """Why an assessment of `config` could not be scored in full here (tasks that need a judge, and none), in
    one line; None when it can."""
    if runtime.engine.judge_for(config) is not None:
        return None
    tasks = runtime.engine.domain(config.domain).tasks
    judged = [t for t in config.tasks.task_ids or () if tasks[t].judged]
    if not judged:
        return None
    shown = ", ".join(judged[:10]) + (f" and {len(judged) - 10} more" if len(judged) > 10 else "")
    return (
        f"Not run: {len(judged)} of the selected tasks ({shown}) are scored by NL assertions and this "
        "service has no judge, so the result could not be complete. Name a judge (config.judge_llm, e.g. "
        '"openai/gpt-4.1-2025-04-14", on a provider key the service holds), or leave those tasks out.'
    )


class AssessmentExecutor(AgentExecutor):
    """Bound to the runtime at start-up (`bind`), since the card and routes exist before the lifespan runs."""

    def __init__(self) -> None:
        self._runtime: Runtime | None = None
        self._attached: set[str] = set()  # A2A task ids with a live execute() reporting on them
        self._cancelling: set[str] = set()  # A2A task ids being cancelled through A2A

    def bind(self, runtime: Runtime) -> None:
        self._runtime = runtime
        runtime.service.finish_listeners.append(self._on_finished)

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the A2A executor is used before the service started")
        return self._runtime

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.message is None:
            raise ValueError("execute() without a message")
        text = request_text(context)
        redact_message(context.message)  # before the message is kept in the task's history
        # Built here rather than with the SDK's new_task_from_user_message, which raises on an empty text
        # part (a JSON-RPC internal error); an empty request is the requester's mistake: a rejected task.
        task = context.current_task or Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message],
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        runtime = self.runtime
        principal = principal_of(context.call_context)
        try:
            if principal is None:
                raise RequestError("the request is not authenticated")
            request = read_request(text, max_json_depth=runtime.settings.max_request_json_depth)
            parsed = request_config(
                request,
                await runtime.engine.load_domain(request.config.domain),
                default_user_llm=default_user_llm(runtime.settings.default_user_model),
            )
            config, notes = parsed.config, parsed.notes
            runtime.engine.validate(config)  # an unknown model is refused in one line before anything else
            unscorable = unscorable_tasks(runtime, config)
            if unscorable is not None:
                raise RequestError(unscorable)
            record, _ = await runtime.service.create(
                config,
                source="a2a",
                tenant=principal.tenant,
                allow_private_agents=principal.allow_private_agents,
                idempotency_key=f"a2a:{task.id}",
                a2a_task_id=task.id,
                a2a_context_id=task.context_id,
                notes=notes,
                start=False,
            )
        except (RequestError, ConfigError, IdempotencyConflict) as exc:
            await updater.reject(message=updater.new_agent_message([Part(text=short(str(exc)))]))
            return
        except QuotaExceeded as exc:
            reply = f"{exc} (retry in {exc.retry_after_s} s)"
            await updater.reject(message=updater.new_agent_message([Part(text=reply)]))
            return

        self._attached.add(task.id)
        try:
            await self._follow(runtime, record, config, updater, principal)
        finally:
            self._attached.discard(task.id)

    async def _follow(
        self,
        runtime: Runtime,
        record: AssessmentRecord,
        config: AssessmentConfig,
        updater: TaskUpdater,
        requester: Principal,
    ) -> None:
        service = runtime.service
        intro = intro_text(record, config)
        retries = runtime.settings.a2a_retries
        started = False
        while True:
            async with service.subscribe(record.id, accept=PROGRESS_ONLY) as subscription:
                # Subscribed before starting, so no event is missed; an assessment that already ended (a
                # replayed request) has nothing more to stream.
                if not started:
                    await service.start(record)
                    await updater.start_work(message=updater.new_agent_message([Part(text=intro)]))
                    started = True
                await self._stream_until_finished(runtime, record.id, subscription, updater)
            final = await service.wait(record.id)
            complete = final.report is not None and final.report.complete
            if final.status != COMPLETED or complete or retries <= 0:
                break
            if not retry_would_help(final, judge_configured=runtime.engine.judge_for(config) is not None):
                break
            retries -= 1
            try:
                # On the requester's behalf: under its key's rights as they are now.
                record = await service.retry(record.id, source="a2a", caller=requester)
            except (NothingToRetry, QuotaExceeded, ConfigError) as exc:
                logger.info("assessment %s: no retry in place: %s", record.id, exc)
                break
            assert final.report is not None
            text = (
                f"Trials missing ({final.report.partial_summary()}): retrying them in place "
                f"(attempt {record.attempt})."
            )
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([Part(text=text)])
            )
        if final.status == COMPLETED and final.report is not None and final.report.complete:
            await updater.add_artifact(result_parts(final, final.report), name=RESULT_ARTIFACT)
            await updater.complete()
        elif final.status == CANCELLED:
            if updater.task_id not in self._cancelling:  # cancelled through REST: mirror it here
                await updater.cancel(message=updater.new_agent_message([Part(text="Assessment cancelled.")]))
        else:
            await updater.failed(message=updater.new_agent_message([Part(text=failure_text(final))]))

    async def _stream_until_finished(
        self, runtime: Runtime, assessment_id: str, subscription: Subscription, updater: TaskUpdater
    ) -> None:
        """Relay progress until the assessment (this attempt of it) is finished. Progress events may come
        from other processes, and a lost one must not leave the task waiting: the stored status decides when
        it is over (`wait` re-reads it), and the relay gets a moment to pass on the last events."""
        service = runtime.service
        if (await service.get(assessment_id)).finished:
            return
        heartbeat_s = runtime.settings.a2a_heartbeat_s
        relay = asyncio.create_task(
            self._relay_progress(service, assessment_id, subscription, updater, heartbeat_s)
        )
        try:
            await service.wait(assessment_id)
            await asyncio.wait({relay}, timeout=RELAY_GRACE_S)
        finally:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay

    @staticmethod
    async def _relay_progress(
        service: AssessmentService,
        assessment_id: str,
        subscription: Subscription,
        updater: TaskUpdater,
        heartbeat_s: float,
    ) -> None:
        """One working status update per finished trial, and one at least every `heartbeat_s` while the
        trials run (what the stored record says is done), until the assessment ends."""
        loop = asyncio.get_running_loop()
        last = loop.time()
        following = True  # the subscription still delivers (not lagged)

        async def say(text: str) -> None:
            nonlocal last
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([Part(text=text)])
            )
            last = loop.time()

        while True:
            event = None
            wait_s = max(0.0, last + heartbeat_s - loop.time())
            if following:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait_s):
                        event = await subscription.queue.get()
            else:
                await asyncio.sleep(wait_s)
            if isinstance(event, TrialDone):
                reward = "excluded" if event.reward is None else f"reward {event.reward:g}"
                await say(
                    f"{event.trials_done}/{event.trials_total} trials done: task {event.task_id} "
                    f"trial {event.trial} ended by {event.termination_reason}, {reward}."
                )
            elif isinstance(event, Lagged):
                following = False
            elif isinstance(event, StatusChanged) and event.status in TERMINAL_STATUSES:
                return
            elif event is None:
                record = await service.get(assessment_id)
                if record.finished:
                    return
                await say(f"Still running: {record.trials_done}/{record.trials_total} trials done.")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id
        if task_id is None:
            return
        self._cancelling.add(task_id)
        try:
            record = await self.runtime.repository.get_by_a2a_task(task_id)
            if record is not None:
                await self.runtime.service.cancel(record.id)
            updater = TaskUpdater(event_queue, task_id, context.context_id or "")
            await updater.cancel(message=updater.new_agent_message([Part(text="Assessment cancelled.")]))
        finally:
            self._cancelling.discard(task_id)

    async def _on_finished(self, record: AssessmentRecord) -> None:
        """An A2A-started assessment that finished with nobody attached here (it was resumed after a
        restart, or its execute() runs on another replica): write its final state into the A2A task store so
        a client polling the task sees the result, unless it is written already."""
        if record.a2a_task_id is None or record.a2a_task_id in self._attached:
            return
        store: TaskStore = self.runtime.task_store
        call_context = owner_context(record.tenant)
        task = await store.get(record.a2a_task_id, call_context)
        if task is None or task.status.state in _FINAL_STATES:
            return  # already written, by the process whose execute() followed it
        status = TaskStatus()
        if record.status == COMPLETED and record.report is not None and record.report.complete:
            task.artifacts.append(
                Artifact(
                    artifact_id=f"result-{record.id}",
                    name=RESULT_ARTIFACT,
                    parts=result_parts(record, record.report),
                )
            )
            state = TaskState.TASK_STATE_COMPLETED
        elif record.status == CANCELLED:
            state = TaskState.TASK_STATE_CANCELED
        else:
            state = TaskState.TASK_STATE_FAILED
            status.message.CopyFrom(new_text_message(failure_text(record), context_id=task.context_id))
        status.state = state
        task.status.CopyFrom(status)
        await store.save(task, call_context)
