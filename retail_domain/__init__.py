"""Pure tau2-bench (v1.0.1) retail domain: verified data, the 16 tools over a copy-on-write DB, upstream's DB
hash, the 114 tasks and gold replay. Shared types and checks come from domain_kit (re-exported here);
imports nothing from green_agent, api or another domain."""

from domain_kit import (
    ActionCheck,
    CommunicateCheck,
    DbCheck,
    GoldAction,
    GoldOutcome,
    Reward,
    StructuredInstructions,
    Task,
    TerminationReason,
    ToolCall,
    ToolResult,
    UserScenario,
    check_actions,
    check_communicate,
    check_db,
    is_clean_exit,
    score_trial,
)
from domain_kit.diff import Difference, db_differences

from .data import ENV_VAR, EXPECTED_SHA256, DataError
from .environment import RetailEnvironment
from .loader import DOMAIN_NAME, RetailData, load_retail_data
from .schemas import GENERIC_TOOLS, READ_TOOLS, TOOL_NAMES, TOOL_SCHEMAS, WRITE_TOOLS

load_data = load_retail_data
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
    "ActionCheck",
    "CommunicateCheck",
    "DataError",
    "DbCheck",
    "Difference",
    "GoldAction",
    "GoldOutcome",
    "RetailData",
    "RetailEnvironment",
    "Reward",
    "StructuredInstructions",
    "Task",
    "TerminationReason",
    "ToolCall",
    "ToolResult",
    "UserScenario",
    "check_actions",
    "check_communicate",
    "check_db",
    "db_differences",
    "is_clean_exit",
    "load_data",
    "load_retail_data",
    "score_trial",
]
