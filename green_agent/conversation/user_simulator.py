"""Simulated customers: a protocol, the LLM-backed simulator and a scripted one for tests and the demo.

A simulator makes one session per trial; the session sees only the agent's text messages (never tool calls or
results), in order, starting with the fixed greeting, and answers each with the customer's next message.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain_kit import Task
from green_agent.core.usage import TokenUsage
from green_agent.llm.client import ChatLLM

GREETING = "Hi! How can I help you today?"
"""The fixed first message of every conversation (upstream's), spoken for the agent before the user starts."""

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")


def is_user_stop(text: str) -> bool:
    """Upstream matches the end markers anywhere in the user's text, not only as the whole message."""
    return any(token in text for token in STOP_TOKENS)


class UserSession(Protocol):
    usage: TokenUsage | None
    """Tokens used so far (None: no LLM behind this customer)."""

    async def reply(self, agent_text: str) -> str:
        """The customer's answer to the agent's latest text message; raises `LLMError` if the LLM fails."""
        ...


class UserSimulator(Protocol):
    name: str

    def session(self, task: Task, seed: int) -> UserSession: ...


def user_system_prompt(guidelines: str, task: Task) -> str:
    return guidelines + "\n\n<scenario>\n" + task.scenario_text() + "\n</scenario>"


@dataclass
class LLMUserSimulator:
    """The customer played by an LLM: guidelines + scenario as system prompt, roles flipped, temperature 0."""

    name: str
    llm: ChatLLM
    guidelines: str

    def session(self, task: Task, seed: int) -> LLMUserSession:
        system = {"role": "system", "content": user_system_prompt(self.guidelines, task)}
        return LLMUserSession(llm=self.llm, seed=seed, messages=[system])


@dataclass
class LLMUserSession:
    llm: ChatLLM
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: TokenUsage | None = field(default_factory=TokenUsage)

    async def reply(self, agent_text: str) -> str:
        # Roles are flipped: to the customer-LLM, the agent is the "user" and its own lines are "assistant".
        self.messages.append({"role": "user", "content": agent_text})
        answer = await self.llm.complete(self.messages, seed=self.seed, temperature=0.0)
        self.usage = (self.usage or TokenUsage()) + answer.usage
        text = answer.content or ""
        self.messages.append({"role": "assistant", "content": text})
        return text


SCRIPTED_OPENING = (
    "Hi, I'm the scripted customer for task {task_id} of the {domain} domain. Please take care of my request."
)


@dataclass
class ScriptedUserSimulator:
    """A deterministic stand-in for the customer, for tests and the demo; it needs no LLM.

    It opens with `SCRIPTED_OPENING` (naming the domain and the task, which is how the oracle agent knows
    what to do) and answers `###STOP###` to the agent's first text message. `delay_s` simulates LLM latency
    in benchmarks.
    """

    name: str = "scripted"
    domain: str = "retail"
    delay_s: float = 0.0

    def session(self, task: Task, seed: int) -> ScriptedUserSession:
        return ScriptedUserSession(domain=self.domain, task_id=task.id, delay_s=self.delay_s)


@dataclass
class ScriptedUserSession:
    domain: str
    task_id: str
    delay_s: float = 0.0
    turns: int = 0
    usage: TokenUsage | None = None

    async def reply(self, agent_text: str) -> str:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.turns += 1
        if self.turns == 1:  # answering the fixed greeting
            return SCRIPTED_OPENING.format(domain=self.domain, task_id=self.task_id)
        return "###STOP###"
