"""One trial's spec and its state while it runs: what the conversation loop fills in and scoring reads."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    transcript_bytes: int = 0
    agent_bytes: int = 0
    """What counts against `max_agent_text_bytes_per_trial`: the agent's messages and its tool results."""
    user_tokens: TokenUsage | None = None
    agent_usage: AgentUsageMeter | None = None
