"""One trial's spec and its state while it runs: what the conversation loop fills in and scoring reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from domain_kit.calls import ToolCall
from domain_kit.outcomes import EnvironmentCheck
from domain_kit.tasks import Task
from green_agent.core.models import TranscriptMessage
from green_agent.core.usage import AgentUsageMeter, TokenUsage


@dataclass(frozen=True)
class TrialSpec:
    task: Task
    trial: int
    seed: int
    max_steps: int
    max_errors: int


@dataclass
class TrialState:
    transcript: list[TranscriptMessage] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    steps: int = 0
    num_errors: int = 0
    error: str | None = None
    db_hash: str | None = None
    environment: EnvironmentCheck | None = None
    """What the domain's environment evaluator found at the end (DB against gold, env assertions)."""
    transcript_bytes: int = 0
    agent_bytes: int = 0
    """What counts against `max_agent_text_bytes_per_trial`: the agent's messages and its tool results."""
    user_tokens: TokenUsage | None = None
    agent_usage: AgentUsageMeter | None = None


def trajectory_calls(transcript: Sequence[TranscriptMessage], start: int = 0) -> list[ToolCall]:
    """Every tool call of a trial in order, with who made it (the agent's as "assistant", the customer's as
    "user"): what upstream's evaluators replay and match. `start`: the first message to read (replays of
    a trial leave out the task's message history, whose writes its initial state already holds:
    `history.history_length`)."""
    return [
        ToolCall(call.name, call.arguments, "user" if message.role == "user" else "assistant")
        for message in transcript[start:]
        if message.role in ("assistant", "user")
        for call in message.tool_calls or ()
    ]
