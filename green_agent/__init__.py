"""Assessment engine: runs tau2 trials (retail, airline) against a remote A2A white agent and scores them.

Drive it from Python in a few lines (here against the built-in oracle agent, with the scripted customer):

    import asyncio

    from green_agent import AssessmentConfig, Engine, EngineSettings, TaskSelection
    from green_agent.reference_agents import serve_reference_agent


    async def main() -> None:
        config_tasks = TaskSelection(split="test", num_tasks=5)  # leave out for the whole split
        async with (
            serve_reference_agent("oracle") as agent_url,
            Engine(EngineSettings()) as engine,
        ):
            config = AssessmentConfig(agent_url=agent_url, domain="retail", tasks=config_tasks, trials=2)
            report = await engine.run(config)
        print(report.pass_hat_k, report.avg_reward, report.termination_counts)


    asyncio.run(main())

The domain is "retail" or "airline" (`green_agent.domains.domain_names()`); the engine loads it through its
registry on first use, once per process.

For a real run, point `agent_url` at your agent and configure an LLM user and judge in `EngineSettings`
(`user_models={"gpt-4.1": LLMEndpoint(model="gpt-4.1-2025-04-14")}`, `default_user_model="gpt-4.1"`,
`judge=LLMEndpoint(model="gpt-4.1-2025-04-14")`). Pass `on_event=` to receive `ProgressEvent`s.
"""

import os

# a2a-sdk turns OpenTelemetry tracing on by default when it is installed, at import time, for about a quarter
# of the A2A throughput; keep it opt-in (set the variable to "true" before importing to trace).
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

from green_agent.config import (
    AssessmentConfig,
    ConfigError,
    EngineSettings,
    LLMEndpoint,
    TaskSelection,
)
from green_agent.core.models import (
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
from green_agent.engine import Engine
from green_agent.scoring.metrics import compute_report

__all__ = [
    "AssessmentConfig",
    "AssessmentReport",
    "ConfigError",
    "Engine",
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
    "compute_report",
]
