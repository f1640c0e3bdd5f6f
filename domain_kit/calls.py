"""A tool call and its result, as every domain's environment takes and gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Requestor = Literal["assistant", "user"]
"""Who made a call: the agent under test ("assistant") or the simulated customer ("user", dual control)."""


@dataclass(frozen=True)
class ToolResult:
    """What the caller sees: upstream's ToolMessage ``content`` and ``error`` flag."""

    content: str
    error: bool


@dataclass(frozen=True)
class ToolCall:
    """A tool invocation by name with JSON-decoded arguments, and who made it."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    requestor: Requestor = "assistant"
