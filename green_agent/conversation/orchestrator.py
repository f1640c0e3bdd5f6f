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
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from a2a.types import Part

from domain_kit import DomainEnvironment, TerminationReason
from green_agent.conversation.user_simulator import GREETING, UserSimulator, is_user_stop
from green_agent.core.errors import (
    AgentError,
    AgentProtocolError,
    AgentUnreachableError,
    InfrastructureError,
)
from green_agent.core.limits import (
    TRUNCATION_MARKER,
    cut_text,
    llm_failure_outcome,
    message_bytes,
    storable,
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
        # takes the gold hash without hashing again when it equals the gold end state).
        check = deps.data.check_environment(spec.task.id, env, trajectory_calls(state.transcript))
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
        self.user = deps.user.session(spec.task, spec.seed)
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
        try:
            text = await self.user.reply(agent_text)
        finally:
            self.state.user_tokens = self.user.usage
        await self.record("user", text, by_agent=False)
        return text, self.after_step(TerminationReason.USER_STOP if is_user_stop(text) else None)

    async def run(self) -> TerminationReason:
        await self.record("assistant", GREETING, by_agent=False)  # fixed, not a step
        user_text, done = await self.user_says(GREETING)
        if done:
            return done
        # The next message is composed only as it is sent, so that while its answer is awaited (most of a
        # trial's life) nothing here holds it: the opening alone is ~24 KB (policy + tool schemas).
        compose: Callable[[], list[Part]] = partial(
            self.dialect.opening, policy=self.deps.data.policy, tools=self.deps.tools, user_text=user_text
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
