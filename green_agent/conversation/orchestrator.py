"""One trial, under upstream tau2's half-duplex rules (semantics doc, section 4).

The fixed greeting opens; the simulated user speaks next; each step moves one message; every tool call of a
reply runs in order against the trial's own environment (one step for the batch); after each step, unless
tool results are still owed to the agent, `max_steps` and then cumulative `max_errors` are checked, and they
override a stop given in the same step. Scoring follows in `scoring.py`.

Who pays for what (the README's scoring rule): whatever goes wrong while receiving, reading, executing or
scoring what the agent sent is charged to the agent: `agent_error` for its own failures and for breaking a
bound (`core.limits`), `internal_error` for a bug of ours met on the way (logged with its traceback).
Both score 0 and are never excluded. Only `InfrastructureError` (our user simulator or judge unavailable) is
excluded, after the engine has retried the trial; a failure of our LLM that the agent's text can provoke
(content-policy refusal, unusable replies, a context it flooded) is the agent's
(`limits.llm_failure_outcome`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from a2a.types import Part

from domain_kit import DomainData, DomainEnvironment, Task, TerminationReason
from green_agent.conversation.user_simulator import (
    GREETING,
    CustomerCall,
    CustomerToolResult,
    UserSimulator,
    UserTurn,
    is_user_stop,
)
from green_agent.core.errors import (
    AgentError,
    AgentProtocolError,
    AgentUnreachableError,
    InfrastructureError,
    LLMRefusedConversation,
)
from green_agent.core.history import HistoryMessage, history_length, opening_turn, task_history
from green_agent.core.limits import (
    CUSTOMER_CALLS_CAUSE,
    TRUNCATION_MARKER,
    AgentLimits,
    ValueTooLarge,
    clean_json,
    compact_json,
    cut_text,
    llm_failure_outcome,
    message_bytes,
    storable,
    utf8_size,
)
from green_agent.core.models import ToolCallRecord, TranscriptMessage, TrialResult, TurnTaken, utcnow
from green_agent.core.trial import TrialSpec, TrialState, trajectory_calls
from green_agent.core.usage import AgentUsageMeter
from green_agent.scoring.score import ScoringDeps, score, unscored
from green_agent.white_agent.client import Conversation
from green_agent.white_agent.dialect import Dialect, ToolOutcome
from green_agent.white_agent.intake import admit_reply

log = logging.getLogger(__name__)

AGENT_STOP_TOKEN = "###STOP###"
"""A white agent ends the conversation itself by including this in a text message (no tool calls)."""

TRIAL_SEED_KEY = "tau2_trial_seed"
"""Message metadata key carrying the trial seed (upstream passes it to the agent's LLM as `seed`)."""
DOMAIN_KEY = "tau2_demo_domain"
"""Message metadata key naming the task's domain, sent with `TASK_ID_KEY`."""
TASK_ID_KEY = "tau2_demo_task_id"
"""Message metadata key naming the task, sent only with `EngineSettings.disclose_task_id` (the demo's oracle
with a model-played customer: it replays the task's gold actions, so it must be told which task it is)."""

EventSink = Callable[[Any], Awaitable[None]]

MAX_ERROR_CHARS = 2_000
"""A trial's stored error message is cut to this: agent-controlled text often ends up in it."""


@dataclass
class AgentContact:
    """Shared by the trials of one assessment: has the white agent answered anything yet?

    Until it has, a message that cannot be delivered means the agent is not reachable at all (not running,
    or its card advertises an address we cannot reach): the trial raises `FirstContactFailed` and the
    assessment fails, rather than every trial ending as an agent error. Once it has answered, a lost
    connection is that trial's agent error."""

    reached: bool = False


class FirstContactFailed(Exception):
    """No message could be delivered before the agent had answered any (the cause is the agent error)."""


@dataclass(kw_only=True)
class TrialDeps(ScoringDeps):
    """What a trial needs from the engine (scoring's part, and the conversation's); built once per
    assessment."""

    tools: list[dict[str, Any]]
    open_conversation: Callable[[], AbstractAsyncContextManager[Conversation]]
    choose_dialect: Callable[[Conversation], Dialect]
    user: UserSimulator
    normalize_ids: bool
    emit: EventSink
    turn_events: bool = True
    """False when nobody listens: then no `TurnTaken` is built per message."""
    agent_usage_bounds: tuple[int, float] = (10_000_000, 100.0)
    """Largest token count and cost (USD) a white agent may report for one reply."""
    contact: AgentContact = field(default_factory=AgentContact)
    disclose_task_id: bool = False
    """Tell the white agent the task id (`TASK_ID_KEY`); only the demo's built-in oracle is ever told."""


class EventHandlerFailed(Exception):
    """The caller's `on_event` raised; its exception (the cause) stops the run, it is no trial outcome."""


class TrialBoundReached(AgentProtocolError):
    """The trial's transcript reached `max_transcript_bytes`, or what the agent put before our LLMs reached
    `max_agent_text_bytes_per_trial`: the agent has said or asked for too much."""


def _describe(exc: BaseException) -> str:
    return _describe_text(f"{type(exc).__name__}: {exc}")


def _describe_text(text: str) -> str:
    return cut_text(storable(text), MAX_ERROR_CHARS, "error message")[0]


async def run_trial(spec: TrialSpec, deps: TrialDeps) -> TrialResult:
    """Run and score one trial (the engine reports it). Failures of the agent or of our dependencies become
    outcomes; only cancellation, a failing event handler and an agent never reached (`FirstContactFailed`)
    propagate."""
    started = utcnow()
    state = TrialState()
    try:
        reason = await _converse(spec, deps, state)
    except EventHandlerFailed as exc:
        assert exc.__cause__ is not None
        raise exc.__cause__ from None
    except AgentError as exc:
        if isinstance(exc, AgentUnreachableError) and not deps.contact.reached:
            raise FirstContactFailed() from exc
        deps.contact.reached = True  # it timed out or answered wrongly: it was there
        reason, state.error = TerminationReason.AGENT_ERROR, _describe(exc)
    except InfrastructureError as exc:  # excluded, unless the agent's text provoked it (limits.py)
        reason, why = llm_failure_outcome(exc, state.agent_bytes, deps.limits, "customer")
        state.error = _describe_text(why)
    except Exception as exc:  # a bug of ours, met while handling the agent's input: it scores 0, never helps
        log.exception("trial %s/%s met an internal error", spec.task.id, spec.trial)
        reason, state.error = TerminationReason.INTERNAL_ERROR, f"internal error: {_describe(exc)}"
    state.warnings = [storable(w) for w in state.warnings]
    await asyncio.sleep(0)  # scoring, in a loop callback of its own: not one more step after the last reply's
    try:
        return await score(spec, deps, state, reason, started)
    except Exception as exc:  # a scoring bug must not take the other trials down, nor help this agent
        log.exception("scoring trial %s/%s met an internal error", spec.task.id, spec.trial)
        return unscored(spec, deps, state, started, f"internal error while scoring: {_describe(exc)}")


async def _converse(spec: TrialSpec, deps: TrialDeps, state: TrialState) -> TerminationReason:
    env = deps.data.new_environment(spec.task.id, normalize_ids=deps.normalize_ids)
    try:
        # The conversation (and the agent card) comes first: a dead agent costs no user-LLM call.
        async with deps.open_conversation() as conversation:
            loop = _Loop(spec, state, deps, conversation, env)
            return await loop.run()
    finally:
        # The domain's environment evaluator on the end state (retail and airline: the live DB's hash, which
        # takes the gold hash without hashing again when it equals the gold end state). The task's message
        # history is in the transcript, its writes already in the initial state: its calls are left out.
        calls = trajectory_calls(state.transcript, history_length(spec.task, state.transcript))
        check = deps.data.check_environment(spec.task.id, env, calls)
        state.environment, state.db_hash = check, check.db_actual_hash


class _Loop:
    """The message routing of one trial; each method is one kind of step."""

    def __init__(
        self,
        spec: TrialSpec,
        state: TrialState,
        deps: TrialDeps,
        conversation: Conversation,
        env: DomainEnvironment,
    ) -> None:
        self.spec, self.state, self.deps, self.conversation, self.env = spec, state, deps, conversation, env
        self.dialect = deps.choose_dialect(conversation)
        conversation.metadata[TRIAL_SEED_KEY] = spec.seed  # upstream gives the agent's LLM the trial seed too
        if deps.disclose_task_id:
            conversation.metadata[TASK_ID_KEY] = spec.task.id
            conversation.metadata[DOMAIN_KEY] = deps.data.name
        self.user = deps.user.session(spec.task, spec.seed, customer_tools(deps.data, spec.task))
        self.agent_usage = state.agent_usage = AgentUsageMeter(*deps.agent_usage_bounds)

    async def record(self, role: Any, content: str | None, *, by_agent: bool = True, **extra: Any) -> None:
        """Append a message. Past `max_transcript_bytes`, or for a message `by_agent` (its own, or a tool
        result it asked for) past `max_agent_text_bytes_per_trial`, the message is cut to fit, marked, and
        the trial ends: before the text can reach the user simulator or the judge."""
        limits, state = self.deps.limits, self.state
        # (setting, what the marker calls it, bound, bytes used): the one with the least room left applies
        bounds = [
            ("max_transcript_bytes", "trial transcript", limits.max_transcript_bytes, state.transcript_bytes)
        ]
        if by_agent:
            agent_bound = limits.max_agent_text_bytes_per_trial
            bounds.append(
                ("max_agent_text_bytes_per_trial", "agent text per trial", agent_bound, state.agent_bytes)
            )
        name, what, bound, used = min(bounds, key=lambda b: b[2] - b[3])
        marker = TRUNCATION_MARKER.format(what=what, limit=bound)
        room = bound - len(marker.encode()) - used
        size = message_bytes(content, extra.get("tool_calls"))
        full = size > room
        if full:  # keep what fits of the text; tool calls are dropped whole (they never ran)
            kept = (content or "").encode()[: max(room, 0)].decode("utf-8", "ignore")
            content, extra["tool_calls"] = kept + marker, None
            size = message_bytes(content)
        state.transcript_bytes += size
        state.agent_bytes += size if by_agent else 0
        message = TranscriptMessage(index=len(state.transcript), role=role, content=content, **extra)
        state.transcript.append(message)
        await self._announce(message)
        if full:
            raise TrialBoundReached(f"the trial reached {name}={bound}; the rest was not kept")

    async def _announce(self, message: TranscriptMessage) -> None:
        if not self.deps.turn_events:
            return
        try:
            await self.deps.emit(TurnTaken(task_id=self.spec.task.id, trial=self.spec.trial, message=message))
        except Exception as exc:
            raise EventHandlerFailed() from exc

    def after_step(self, pending: TerminationReason | None) -> TerminationReason | None:
        """Count the step; the limits override a stop given in the same step, as upstream."""
        self.state.steps += 1
        if self.state.steps >= self.spec.max_steps:
            return TerminationReason.MAX_STEPS
        if self.state.num_errors >= self.spec.max_errors:
            return TerminationReason.TOO_MANY_ERRORS
        return pending

    async def user_says(self, agent_text: str) -> tuple[str, TerminationReason | None]:
        """The customer's answer to the agent's text. In dual control it may first act on its own device:
        each turn of tool calls runs there (one step for the calls, one for their results, as upstream's
        routing), the results go back to the customer alone, and it speaks again; only its text reaches the
        agent."""
        turn = await self._customer(self.user.reply(agent_text))
        while turn.calls:
            calls = admit_customer_calls(turn.calls, self.deps.limits)
            await self.record("user", turn.text, by_agent=False, tool_calls=calls)
            self.state.steps += 1  # customer -> environment; no limit check while results are owed
            results = await self.execute_customer(calls)
            if done := self.after_step(None):
                return "", done
            turn = await self._customer(self.user.tool_results(results))
        text = turn.text or ""
        await self.record("user", text, by_agent=False)
        return text, self.after_step(TerminationReason.USER_STOP if is_user_stop(text) else None)

    async def _customer(self, answer: Awaitable[UserTurn]) -> UserTurn:
        try:
            return await answer
        finally:
            self.state.user_tokens = self.user.usage

    async def execute_customer(self, calls: list[ToolCallRecord]) -> list[CustomerToolResult]:
        """The customer's calls, on its side of the environment; an error counts toward max_errors whoever
        made the call (upstream)."""
        results = []
        for i, call in enumerate(calls):
            if i:
                await asyncio.sleep(0)
            result = self.env.call(call.name, call.arguments, requestor="user")
            self.state.num_errors += int(result.error)
            results.append(CustomerToolResult(call.id, call.name, result.content, result.error))
            await self.record(
                "tool",
                result.content,
                by_agent=False,
                tool_call_id=call.id,
                error=result.error,
                requestor="user",
            )
        return results

    async def run(self) -> TerminationReason:
        history = task_history(self.spec.task)
        if history:
            user_text, shown, done = await self.resume(history)
        else:
            await self.record("assistant", GREETING, by_agent=False)  # fixed, not a step
            shown = []
            user_text, done = await self.user_says(GREETING)
        if done:
            return done
        # The next message is composed only as it is sent, so that while its answer is awaited (most of a
        # trial's life) nothing here holds it: the opening alone is ~24 KB (policy + tool schemas).
        compose: Callable[[], list[Part]] = partial(
            self.dialect.opening,
            policy=self.deps.data.policy,
            tools=self.deps.tools,
            user_text=user_text,
            history=shown,
        )
        while True:
            answer = await self.conversation.send(compose())
            self.deps.contact.reached = True
            position = len(self.state.transcript)
            usage_warnings = self.agent_usage.add(answer.metadata)
            self.state.warnings.extend(f"message {position}: {w}" for w in usage_warnings)
            # Admitting the reply (in steps) and what follows it each take loop callbacks of their own
            # (client.py's loop rule): reading and admitting one reply in one step cost up to 13-19 ms.
            reply = await admit_reply(answer, self.dialect, self.deps.limits)
            del answer
            await asyncio.sleep(0)
            self.state.warnings.extend(f"message {position}: {w}" for w in reply.warnings)
            text = reply.text or ""
            if not reply.calls and not text.strip():
                raise AgentProtocolError(
                    "the agent's reply held neither a tool call nor text for the customer"
                )
            calls = [
                ToolCallRecord(id=c.id or f"call_{position}_{i}", name=c.name, arguments=c.arguments)
                for i, c in enumerate(reply.calls)
            ]
            await self.record("assistant", reply.text, tool_calls=calls or None)
            if calls:
                # Text sent along with tool calls stays in the transcript but never reaches the customer.
                self.state.steps += 1  # agent -> environment; no limit check while results are owed
                outcomes = await self.execute(calls)
                if done := self.after_step(None):
                    return done
                compose = partial(self.dialect.tool_results, outcomes)
                continue
            if done := self.after_step(TerminationReason.AGENT_STOP if AGENT_STOP_TOKEN in text else None):
                return done
            user_text, done = await self.user_says(text)
            if done:
                return done
            compose = partial(self.dialect.user_turn, user_text)

    async def resume(
        self, history: list[HistoryMessage]
    ) -> tuple[str, list[HistoryMessage], TerminationReason | None]:
        """A task with a message history opens with it, as upstream's: no greeting, the history's messages
        (not steps) first in the transcript, then whoever its last message leaves to speak. Returns the
        customer's words that open the agent's first message, the history that message shows before them,
        and a stop already given."""
        for message in history:
            await self.record(message.role, message.content, by_agent=False, **message.transcript_fields())
        last = history[-1].content or ""
        if opening_turn(self.spec.task.id, history) == "assistant":  # the customer spoke last
            return last, history[:-1], TerminationReason.USER_STOP if is_user_stop(last) else None
        if AGENT_STOP_TOKEN in last:
            return "", history, TerminationReason.AGENT_STOP
        user_text, done = await self.user_says(last)
        return user_text, history, done

    async def execute(self, calls: list[ToolCallRecord]) -> list[ToolOutcome]:
        outcomes = []
        for i, call in enumerate(calls):
            if i:  # one call at a time on the event loop: a reply may hold several slow ones
                await asyncio.sleep(0)
            result = self.env.call(call.name, call.arguments)
            self.state.num_errors += int(result.error)
            outcomes.append(ToolOutcome(call.id, call.name, result.content, result.error))
            await self.record("tool", result.content, tool_call_id=call.id, error=result.error)
        return outcomes


def customer_tools(data: DomainData, task: Task) -> list[Mapping[str, Any]]:
    """The customer's tool schemas in this task: the domain's, or those the task names (upstream: a task
    naming none leaves the customer without tools)."""
    if task.user_tools is None:
        return list(data.user_tool_schemas)
    named = set(task.user_tools)
    return [schema for schema in data.user_tool_schemas if schema["function"]["name"] in named]


def admit_customer_calls(calls: Sequence[CustomerCall], limits: AgentLimits) -> list[ToolCallRecord]:
    """The customer's calls, held to the bounds of a white agent's (count, name, argument bytes, keys and
    depth) and made storable. Our customer model breaking one is an unusable reply of our LLM: charged like
    one (`LLMRefusedConversation`: the agent's once its text is in the conversation, limits.py)."""

    def refused(why: str) -> LLMRefusedConversation:
        return LLMRefusedConversation(f"the customer's reply {why}", CUSTOMER_CALLS_CAUSE)

    if len(calls) > limits.max_tool_calls:
        raise refused(f"held {len(calls)} tool calls, over max_tool_calls={limits.max_tool_calls}")
    admitted = []
    for index, call in enumerate(calls):
        if len(call.name) > limits.max_name_chars:
            raise refused(f"named a tool of {len(call.name)} characters, over max_name_chars")
        try:
            arguments = clean_json(
                call.arguments, max_depth=limits.max_json_depth, max_keys=limits.max_argument_keys
            )
        except ValueTooLarge as exc:
            raise refused(f"held tool arguments {exc}") from None
        size = utf8_size(compact_json(arguments))
        if size > limits.max_argument_bytes:
            raise refused(f"held {size} bytes of tool arguments, over max_argument_bytes")
        call_id = call.id if len(call.id) <= limits.max_id_chars else f"customer_call_{index}"
        admitted.append(ToolCallRecord(id=storable(call_id), name=storable(call.name), arguments=arguments))
    return admitted
