"""Pure tau2-bench (v1.0.1) retail domain: verified data, the 16 tools over a copy-on-write DB, upstream's DB
hash, the 114 tasks, gold replay and the per-trial checks. Imports nothing from green_agent or api."""

from .checks import (
    ActionCheck,
    CommunicateCheck,
    DbCheck,
    Reward,
    TerminationReason,
    check_actions,
    check_communicate,
    check_db,
    is_clean_exit,
    score_trial,
)
from .data import ENV_VAR, EXPECTED_SHA256, DataError
from .diff import Difference, db_differences
from .environment import RetailEnvironment, ToolCall, ToolResult
from .gold import GoldOutcome
from .loader import RetailData, load_retail_data
from .schemas import GENERIC_TOOLS, READ_TOOLS, TOOL_NAMES, TOOL_SCHEMAS, WRITE_TOOLS
from .tasks import GoldAction, StructuredInstructions, Task, UserScenario

__all__ = [
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
    "load_retail_data",
    "score_trial",
]
