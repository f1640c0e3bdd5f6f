"""Pure tau2-bench (v1.0.1, upstream a2c0247) telecom domain, in dual control: the provider's records with the
agent's 13 tools, the customer's phone with the customer's 30 tools, the sync between them, the tasks'
initial states (hidden setup functions included), env assertions as upstream's evaluator runs them, verified
data and upstream's hashes. Shared types come from domain_kit; imports nothing from green_agent, api or
another domain."""

from .data import ENV_VAR, EXPECTED_SHA256, DataError
from .environment import TelecomEnvironment
from .loader import DEFAULT_SPLIT, DOMAIN_NAME, TelecomData, load_telecom_data
from .schemas import (
    AGENT_TOOL_NAMES,
    GENERIC_TOOLS,
    MUTATING_TOOLS,
    READ_TOOLS,
    TOOL_SCHEMAS,
    USER_READ_TOOLS,
    USER_TOOL_NAMES,
    USER_TOOL_SCHEMAS,
    USER_WRITE_TOOLS,
    WRITE_TOOLS,
)

load_data = load_telecom_data
"""The registry's entry point (every domain package exports its loader under this name)."""

__all__ = [
    "AGENT_TOOL_NAMES",
    "DEFAULT_SPLIT",
    "DOMAIN_NAME",
    "ENV_VAR",
    "EXPECTED_SHA256",
    "GENERIC_TOOLS",
    "MUTATING_TOOLS",
    "READ_TOOLS",
    "TOOL_SCHEMAS",
    "USER_READ_TOOLS",
    "USER_TOOL_NAMES",
    "USER_TOOL_SCHEMAS",
    "USER_WRITE_TOOLS",
    "WRITE_TOOLS",
    "DataError",
    "TelecomData",
    "TelecomEnvironment",
    "load_data",
    "load_telecom_data",
]
