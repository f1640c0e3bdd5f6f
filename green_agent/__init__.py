"""Assessment engine for the tau2 retail domain (work in progress; the public API grows here)."""

from green_agent.config import (
    AssessmentConfig,
    ConfigError,
    EngineSettings,
    LLMEndpoint,
    TaskSelection,
)
from green_agent.models import (
    AssessmentReport,
    NLVerdict,
    ProgressEvent,
    Signal,
    ToolCallRecord,
    TranscriptMessage,
    TrialFinished,
    TrialKey,
    TrialResult,
    TrialStarted,
    TurnTaken,
)

__all__ = [
    "AssessmentConfig",
    "AssessmentReport",
    "ConfigError",
    "EngineSettings",
    "LLMEndpoint",
    "NLVerdict",
    "ProgressEvent",
    "Signal",
    "TaskSelection",
    "ToolCallRecord",
    "TranscriptMessage",
    "TrialFinished",
    "TrialKey",
    "TrialResult",
    "TrialStarted",
    "TurnTaken",
]
