"""Shared machinery below every tau2 domain package: tool calls and results, termination reasons, the task
model, the checks and the reward over a task's basis, verified data files, upstream's hash, and the
Protocols a domain implements (`DomainData`, `DomainEnvironment`). Imports nothing of the project's."""

from .calls import Requestor, ToolCall, ToolResult
from .checks import (
    ActionCheck,
    CommunicateCheck,
    DbCheck,
    Reward,
    action_matches,
    check_actions,
    check_communicate,
    check_db,
    score_trial,
)
from .data_files import DataError, DataSource, DataSpec, installed_share_dir
from .hashing import upstream_hash
from .outcomes import AssertionCheck, EnvironmentCheck, GoldOutcome
from .protocols import DomainData, DomainEnvironment
from .tasks import (
    EnvAssertion,
    GoldAction,
    InitialState,
    SetupCall,
    StructuredInstructions,
    Task,
    UserScenario,
    parse_splits,
    parse_task,
    parse_tasks,
)
from .termination import CLEAN_EXITS, TerminationReason, is_clean_exit

__all__ = [
    "CLEAN_EXITS",
    "ActionCheck",
    "AssertionCheck",
    "CommunicateCheck",
    "DataError",
    "DataSource",
    "DataSpec",
    "DbCheck",
    "DomainData",
    "DomainEnvironment",
    "EnvAssertion",
    "EnvironmentCheck",
    "GoldAction",
    "GoldOutcome",
    "InitialState",
    "Requestor",
    "Reward",
    "SetupCall",
    "StructuredInstructions",
    "Task",
    "TerminationReason",
    "ToolCall",
    "ToolResult",
    "UserScenario",
    "action_matches",
    "check_actions",
    "check_communicate",
    "check_db",
    "installed_share_dir",
    "is_clean_exit",
    "parse_splits",
    "parse_task",
    "parse_tasks",
    "score_trial",
    "upstream_hash",
]
