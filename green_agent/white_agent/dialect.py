"""What a dialect is: how the green agent frames messages to the white agent and reads its answers.

Two implementations: `text_dialect.TextDialect` (compatible with the AgentBeats tau2 green) and
`structured_dialect.StructuredDialect` (DataParts, no prompt parsing). See docs/dialects.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from a2a.types import AgentCard, Part

from green_agent.core.history import HistoryMessage
from green_agent.white_agent.client import AgentReply
from green_agent.white_agent.reply_parsing import ParsedReply

STRUCTURED_DIALECT_URI = "urn:tau2-retail-green:dialect:structured:v1"
"""Declared in `AgentCard.capabilities.extensions` by white agents that speak the structured dialect."""


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one executed tool call, as sent back to the white agent."""

    call_id: str
    name: str
    content: str
    error: bool


class Dialect(Protocol):
    name: str

    def opening(
        self,
        *,
        policy: str,
        tools: list[dict[str, Any]],
        user_text: str,
        history: Sequence[HistoryMessage] = (),
    ) -> list[Part]:
        """The first message of a conversation: the framing plus the customer's first words; where the task
        has a message history, the conversation so far before them (the agent's own earlier calls and their
        results included)."""
        ...

    def user_turn(self, text: str) -> list[Part]:
        """A later message carrying the customer's words."""
        ...

    def tool_results(self, outcomes: list[ToolOutcome]) -> list[Part]:
        """A message carrying the results of the calls of the agent's last reply."""
        ...

    def parse(self, reply: AgentReply) -> ParsedReply:
        """Read the agent's answer; never raises (what cannot be read goes to the user, with a warning)."""
        ...


def declares_structured(card: AgentCard) -> bool:
    return any(ext.uri == STRUCTURED_DIALECT_URI for ext in card.capabilities.extensions)
