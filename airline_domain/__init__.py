"""Pure tau2-bench (v1.0.1) airline domain: verified data, the 14 tools over a copy-on-write DB, upstream's DB
hash, the 50 tasks and gold replay. Shared types and checks come from domain_kit; imports nothing from
green_agent, api or another domain."""

from domain_kit import GoldOutcome, Task, ToolCall, ToolResult

from .data import ENV_VAR, EXPECTED_SHA256, DataError
from .environment import AirlineEnvironment
from .loader import DOMAIN_NAME, AirlineData, load_airline_data
from .schemas import GENERIC_TOOLS, READ_TOOLS, TOOL_NAMES, TOOL_SCHEMAS, WRITE_TOOLS

load_data = load_airline_data
"""The loader under the name every domain package gives it (the engine's registry calls it)."""

__all__ = [
    "DOMAIN_NAME",
    "ENV_VAR",
    "EXPECTED_SHA256",
    "GENERIC_TOOLS",
    "READ_TOOLS",
    "TOOL_NAMES",
    "TOOL_SCHEMAS",
    "WRITE_TOOLS",
    "AirlineData",
    "AirlineEnvironment",
    "DataError",
    "GoldOutcome",
    "Task",
    "ToolCall",
    "ToolResult",
    "load_airline_data",
    "load_data",
]
