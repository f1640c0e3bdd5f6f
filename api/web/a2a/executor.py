"""The A2A door: an AgentExecutor that runs AgentBeats requests as assessments of the shared service.

One A2A task = one assessment (stored with the task id, so REST shows it too). Progress goes out as a working
status update per finished trial; the end is one `Result` artifact and the completed state. Requests that
cannot be run are rejected (a task state, with a message saying what to send), never an exception.
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

from api.db.repository import CANCELLED, COMPLETED, TERMINAL, AssessmentRecord, IdempotencyConflict
from api.runtime.events import PROGRESS_ONLY, Lagged, StatusChanged, Subscription, TrialDone
from api.security.quotas import QuotaExceeded
from api.security.tenancy import owner_context, principal_of
from api.web.a2a.request import RequestError, parse_request, redact_text
from api.web.a2a.result import RESULT_ARTIFACT, result_parts
from api.web.request_limits import short
from green_agent.config import ConfigError

if TYPE_CHECKING:
    from api.runtime.runtime import Runtime

logger = logging.getLogger(__name__)

# After the assessment is over, how long the progress relay may take to pass on the last trial updates.
RELAY_GRACE_S = 1.0

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
    return f"Assessment failed: {record.error or f'assessment ended as {record.status}'}"


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
            config, notes = parse_request(
                text,
                split_ids=runtime.data.splits,
                user_models=runtime.settings.user_model_names(),
                max_json_depth=runtime.settings.max_request_json_depth,
            )
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
            await self._follow(runtime, record, updater)
        finally:
            self._attached.discard(task.id)

    async def _follow(self, runtime: Runtime, record: AssessmentRecord, updater: TaskUpdater) -> None:
        service = runtime.service
        intro = f"Assessment {record.id} started: {record.trials_total} trials."
        if record.warnings:
            intro += " " + " ".join(record.warnings)
        async with service.subscribe(record.id, accept=PROGRESS_ONLY) as subscription:
            await service.start(record)
            await updater.start_work(message=updater.new_agent_message([Part(text=intro)]))
            # Subscribed before starting, so no event is missed; an assessment that already ended (a replayed
            # request) has nothing more to stream.
            if not (await service.get(record.id)).finished:
                # Progress events may come from other processes, and a lost one must not leave the task
                # waiting: the stored status decides when it is over (`wait` re-reads it), and the relay
                # gets a moment to pass on the last events.
                relay = asyncio.create_task(self._relay_progress(subscription, updater))
                try:
                    await service.wait(record.id)
                    await asyncio.wait({relay}, timeout=RELAY_GRACE_S)
                finally:
                    relay.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await relay
        final = await service.wait(record.id)
        if final.status == COMPLETED and final.report is not None:
            await updater.add_artifact(result_parts(final, final.report), name=RESULT_ARTIFACT)
            await updater.complete()
        elif final.status == CANCELLED:
            if updater.task_id not in self._cancelling:  # cancelled through REST: mirror it here
                await updater.cancel(message=updater.new_agent_message([Part(text="Assessment cancelled.")]))
        else:
            await updater.failed(message=updater.new_agent_message([Part(text=failure_text(final))]))

    @staticmethod
    async def _relay_progress(subscription: Subscription, updater: TaskUpdater) -> None:
        """One working status update per finished trial, until the assessment ends."""
        async for event in subscription:
            if isinstance(event, TrialDone):
                reward = "excluded" if event.reward is None else f"reward {event.reward:g}"
                text = (
                    f"{event.trials_done}/{event.trials_total} trials done: task {event.task_id} "
                    f"trial {event.trial} ended by {event.termination_reason}, {reward}."
                )
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([Part(text=text)])
                )
            elif isinstance(event, Lagged) or (isinstance(event, StatusChanged) and event.status in TERMINAL):
                return

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
        if record.status == COMPLETED and record.report is not None:
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
