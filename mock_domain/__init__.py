"""Pure tau2-bench (v1.0.1) mock domain: tau2's ten-task test bed for dual control. The agent keeps a task
list (4 tools), the customer a notification inbox (2 tools of its own); tasks set up an initial state
(initialization data, setup calls, a message history) and are scored on DB hashes of both sides, env
assertions, actions and communicated facts. Imports domain_kit only."""

from domain_kit import DataError, GoldOutcome, Task, ToolCall, ToolResult

from .data import ENV_VAR, EXPECTED_SHA256, SPEC
from .environment import MockEnvironment
from .loader import DOMAIN_NAME, MockData, load_mock_data
from .schemas import (
    GENERIC_TOOLS,
    READ_TOOLS,
    TOOL_NAMES,
    TOOL_SCHEMAS,
    USER_TOOL_NAMES,
    USER_TOOL_SCHEMAS,
    WRITE_TOOLS,
)

load_data = load_mock_data
"""The loader under the name every domain package gives it (the engine's registry calls it)."""

__all__ = [
    "DOMAIN_NAME",
    "ENV_VAR",
    "EXPECTED_SHA256",
    "GENERIC_TOOLS",
    "READ_TOOLS",
    "SPEC",
    "TOOL_NAMES",
    "TOOL_SCHEMAS",
    "USER_TOOL_NAMES",
    "USER_TOOL_SCHEMAS",
    "WRITE_TOOLS",
    "DataError",
    "GoldOutcome",
    "MockData",
    "MockEnvironment",
    "Task",
    "ToolCall",
    "ToolResult",
    "load_data",
    "load_mock_data",
]
