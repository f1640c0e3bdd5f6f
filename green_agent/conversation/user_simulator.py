"""Simulated customers: a protocol, the LLM-backed simulator and a scripted one for tests and the demo.

A simulator makes one session per trial; the session sees only the agent's text messages (never the agent's
tool calls or results), in order, starting with the fixed greeting (or, where the task has a message
history, with its side of it). It answers each with a `UserTurn`: the
customer's next message, or, in a domain where the customer has tools of its own (dual control: telecom,
mock), calls of those tools. The results of its calls come back to it alone (`tool_results`), and it answers
those with a turn of its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain_kit import GoldAction, Task
from green_agent.core.history import customer_view, opening_turn, task_history
from green_agent.core.usage import TokenUsage
from green_agent.llm.client import ChatLLM, LLMReply

GREETING = "Hi! How can I help you today?"
"""The fixed first message of every conversation (upstream's), spoken for the agent before the user starts."""

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


def is_user_stop(text: str) -> bool:
    """Upstream matches the end markers anywhere in the user's text, not only as the whole message."""
    return any(token in text for token in STOP_TOKENS)


@dataclass(frozen=True)
class CustomerCall:
    """A call the customer makes of one of its own tools (`id`: the model's, or one we gave it)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class CustomerToolResult:
    """What one of the customer's calls returned; seen by the customer only."""

    call_id: str
    name: str
    content: str
    error: bool


@dataclass(frozen=True)
class UserTurn:
    """One customer message: its text and, in dual control, calls of its own tools. A turn with calls goes
    to the customer's device, never to the agent (its text stays in the transcript only, as upstream)."""

    text: str | None
    calls: tuple[CustomerCall, ...] = ()


class UserSession(Protocol):
    usage: TokenUsage | None
    """Tokens used so far (None: no LLM behind this customer)."""

    async def reply(self, agent_text: str) -> UserTurn:
        """The customer's answer to the agent's latest text message; raises `LLMError` if the LLM fails."""
        ...

    async def tool_results(self, results: Sequence[CustomerToolResult]) -> UserTurn:
        """The customer's next turn after the results of its own calls."""
        ...


class UserSimulator(Protocol):
    name: str

    def session(self, task: Task, seed: int, tools: Sequence[Mapping[str, Any]] = ()) -> UserSession:
        """A session for one trial; `tools`: the customer's tool schemas for this task (none in retail)."""
        ...


def user_system_prompt(guidelines: str, task: Task) -> str:
    return guidelines + "\n\n<scenario>\n" + task.scenario_text() + "\n</scenario>"


@dataclass
class LLMUserSimulator:
    """The customer played by an LLM: guidelines + scenario as system prompt, roles flipped, temperature 0.
    A customer with tools gets `tools_guidelines` instead and calls its tools through the chat API's
    function calling (`tool_choice: auto`), as upstream's user simulator does."""

    name: str
    llm: ChatLLM
    guidelines: str
    tools_guidelines: str = ""

    def session(self, task: Task, seed: int, tools: Sequence[Mapping[str, Any]] = ()) -> LLMUserSession:
        guidelines = self.tools_guidelines if tools and self.tools_guidelines else self.guidelines
        system = {"role": "system", "content": user_system_prompt(guidelines, task)}
        return LLMUserSession(
            llm=self.llm,
            seed=seed,
            messages=[system, *history_before_first_turn(task)],
            tools=[dict(t) for t in tools],
        )


def history_before_first_turn(task: Task) -> list[dict[str, Any]]:
    """The customer's side of the task's message history, before its first turn (the history's last message
    when it is the agent's text comes as that turn's `reply`, as the greeting does otherwise)."""
    history = task_history(task)
    if not history:
        return []
    prior = history[:-1] if opening_turn(task.id, history) == "user" else history
    return customer_view(prior)


@dataclass
class LLMUserSession:
    llm: ChatLLM
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: TokenUsage | None = field(default_factory=TokenUsage)
    tools: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0

    async def reply(self, agent_text: str) -> UserTurn:
        # Roles are flipped: to the customer-LLM, the agent is the "user" and its own lines are "assistant".
        self.messages.append({"role": "user", "content": agent_text})
        return await self._next_turn()

    async def tool_results(self, results: Sequence[CustomerToolResult]) -> UserTurn:
        for result in results:
            self.messages.append({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
        return await self._next_turn()

    async def _next_turn(self) -> UserTurn:
        answer = await self.llm.complete(
            self.messages, seed=self.seed, temperature=0.0, tools=self.tools or None
        )
        self.usage = (self.usage or TokenUsage()) + answer.usage
        calls = self._calls_of(answer) if self.tools else ()
        message: dict[str, Any] = {
            "role": "assistant",
            "content": answer.content or ("" if not calls else None),
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in calls
            ]
        self.messages.append(message)
        return UserTurn(answer.content if calls else answer.content or "", calls)

    def _calls_of(self, answer: LLMReply) -> tuple[CustomerCall, ...]:
        """The reply's tool calls, each with an id unique in the session (a model may send none, or repeat
        one), so that every result answers exactly one call."""
        calls = []
        seen: set[str] = set()
        for call in answer.tool_calls:
            self._calls += 1
            call_id = call.id if call.id and call.id not in seen else f"customer_call_{self._calls}"
            seen.add(call_id)
            calls.append(CustomerCall(call_id, call.name, dict(call.arguments)))
        return tuple(calls)


SCRIPTED_OPENING = (
    "Hi, I'm the scripted customer for task {task_id} of the {domain} domain. Please take care of my request."
)


SCRIPTED_DONE = "Done on my side."
"""What the scripted customer says after performing its part of the gold actions."""


@dataclass
class ScriptedUserSimulator:
    """A deterministic stand-in for the customer, for tests and the demo; it needs no LLM.

    It opens with `SCRIPTED_OPENING` (naming the domain and the task, which is how the oracle agent knows
    what to do). Where the task's gold actions include the customer's own (dual control), it performs them:
    the gold list is split into runs of customer actions separated by agent actions, and each agent text
    after the opening gets the next run, one call per turn, then `SCRIPTED_DONE`. With no run left it
    answers `###STOP###`. The oracle agent follows the same list (it hands over with a text where a run is
    due), so the two replay the gold trajectory in its order. `delay_s` simulates LLM latency in benchmarks.
    """

    name: str = "scripted"
    domain: str = "retail"
    delay_s: float = 0.0

    def session(self, task: Task, seed: int, tools: Sequence[Mapping[str, Any]] = ()) -> ScriptedUserSession:
        return ScriptedUserSession(
            domain=self.domain,
            task_id=task.id,
            delay_s=self.delay_s,
            runs=customer_runs(task.gold_actions) if tools else [],
        )


def customer_runs(actions: Sequence[GoldAction]) -> list[list[GoldAction]]:
    """The customer's gold actions in runs: consecutive customer actions, split where an agent action
    comes between them."""
    runs: list[list[GoldAction]] = []
    previous_was_customer = False
    for action in actions:
        is_customer = action.requestor == "user"
        if is_customer:
            if not previous_was_customer:
                runs.append([])
            runs[-1].append(action)
        previous_was_customer = is_customer
    return runs


@dataclass
class ScriptedUserSession:
    domain: str
    task_id: str
    delay_s: float = 0.0
    turns: int = 0
    usage: TokenUsage | None = None
    runs: list[list[GoldAction]] = field(default_factory=list)
    _pending: list[GoldAction] = field(default_factory=list)

    async def reply(self, agent_text: str) -> UserTurn:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.turns += 1
        if self.turns == 1:  # answering the fixed greeting
            return UserTurn(SCRIPTED_OPENING.format(domain=self.domain, task_id=self.task_id))
        if not self.runs:
            return UserTurn("###STOP###")
        self._pending = self.runs.pop(0)
        return self._next_call()

    async def tool_results(self, results: Sequence[CustomerToolResult]) -> UserTurn:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._next_call() if self._pending else UserTurn(SCRIPTED_DONE)

    def _next_call(self) -> UserTurn:
        action = self._pending.pop(0)
        self.turns += 1
        call = CustomerCall(f"scripted_{self.turns}", action.name, dict(action.to_tool_call().arguments))
        return UserTurn(None, (call,))
