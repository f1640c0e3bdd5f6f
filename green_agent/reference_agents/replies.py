"""How reference agents read the green agent's messages and phrase their answers, in either dialect."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_message, new_text_part
from a2a.types import Message, Part, Role

from green_agent.white_agent.dialect import STRUCTURED_DIALECT_URI


@dataclass(frozen=True)
class Incoming:
    """One message from the green agent, split into its text and its structured payloads."""

    text: str
    data: tuple[Any, ...]
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, message: Message | None) -> Incoming:
        if message is None:
            return cls(text="", data=())
        return cls(
            text="\n".join(get_text_parts(message.parts)),
            data=tuple(get_data_parts(message.parts)),
            metadata={key: message.metadata[key] for key in message.metadata},
        )

    def frame(self, kind: str) -> dict[str, Any] | None:
        """The structured-dialect payload of this type (`session_start`, `tool_results`), if present."""
        for item in self.data:
            if (
                isinstance(item, dict)
                and item.get("dialect") == STRUCTURED_DIALECT_URI
                and item.get("type") == kind
            ):
                return item
        return None

    @property
    def structured(self) -> bool:
        return self.frame("session_start") is not None or self.frame("tool_results") is not None


def call_parts(structured: bool, name: str, arguments: dict[str, Any]) -> list[Part]:
    if structured:
        call = {"id": f"call_{uuid.uuid4().hex[:12]}", "name": name, "arguments": arguments}
        return [new_data_part({"tool_calls": [call]})]
    return [new_text_part(json.dumps({"name": name, "arguments": arguments}))]


def text_parts(structured: bool, text: str) -> list[Part]:
    if structured:
        return [new_text_part(text)]
    return [new_text_part(json.dumps({"name": "respond", "arguments": {"content": text}}))]


def agent_message(parts: list[Part], context_id: str | None) -> Message:
    return new_message(parts=parts, context_id=context_id, role=Role.ROLE_AGENT)
