"""Talking to the white agent: the pooled A2A client, the two dialects and tolerant reply parsing."""

from green_agent.white_agent.client import AgentReply, Conversation, WhiteAgentPool
from green_agent.white_agent.dialect import STRUCTURED_DIALECT_URI, Dialect, ToolOutcome, declares_structured
from green_agent.white_agent.structured_dialect import StructuredDialect
from green_agent.white_agent.text_dialect import TextDialect

__all__ = [
    "STRUCTURED_DIALECT_URI",
    "AgentReply",
    "Conversation",
    "Dialect",
    "StructuredDialect",
    "TextDialect",
    "ToolOutcome",
    "WhiteAgentPool",
    "declares_structured",
]
