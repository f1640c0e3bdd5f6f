"""An assessment as a tau2-bench v1.0.x results file (`Results`: info, tasks, simulations), so `tau2 view`
reads it and `tau2 submit prepare/validate` accept it, for every domain: the environment info, the tool types
and the tasks are the assessment's domain's (reached through the registry by the caller).

Written from reading upstream's data model (src/tau2/data_model/simulation.py and message.py at v1.0.1);
the field names and shapes are theirs, the code is ours. Where this service has no counterpart for an
optional tau2 field (per-message cost and raw LLM data, reviews, ticks), the field is left out, never
invented. Required fields without a counterpart are filled with what is closest and true (see
`git_commit`, `agent_info`).

Excluded trials (no reward: our LLM unavailable, or assertions not judged; every trial of a task the metrics
leave out whole, `metrics.counted_trials`) are left out of the file, so
that tau2's `compute_metrics` gives the same avg reward and pass^k as our report whatever pandas it runs on
(tau2 writes its own excluded work as `infrastructure_error` simulations, but v1.0.1's filter for them fails
under pandas 3, which its requirements allow; docs/tau2-interop.md). A scored trial with an error keeps it
in the simulation's `info.error` (for a failure of our LLM that the agent provoked:
`provoked_llm_failure:<cause>: ...`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from typing import Any

from domain_kit import DomainData, Task, is_clean_exit
from green_agent.config import AssessmentConfig
from green_agent.core.models import SIGNAL_DB, AssessmentReport, TranscriptMessage, TrialResult
from green_agent.scoring.metrics import counted_trials

TAU2_VERSION = "1.0.1"
"""The tau2-bench release whose results format and scoring this service follows."""

AGENT_IMPLEMENTATION = "remote_a2a_agent"
"""`info.agent_info.implementation`: the agent is whatever answers at the assessed A2A URL."""

# Our termination reasons that tau2 does not have, mapped to its closest one (both score 0).
_TERMINATION = {"internal_error": "unexpected_error"}

_SIMULATION_NAMESPACE = uuid.UUID("5f1f5a4e-58c8-4a43-9c43-0c9e2f7b3b20")

UPSTREAM_TASK_FIELDS = (
    "id",
    "description",
    "user_scenario",
    "ticket",
    "initial_state",
    "evaluation_criteria",
    "issues",
    "required_documents",
    "user_tools",
)
"""The fields of upstream's `Task` model (v1.0.1). A task file may hold more (airline's carry `annotations`),
which upstream drops when it loads the file, so its results files never hold them: neither do ours."""


@dataclass(frozen=True)
class ExportSource:
    """What an export needs from one stored assessment."""

    assessment_id: str
    created_at: datetime
    agent_url: str
    config: AssessmentConfig
    report: AssessmentReport | None
    trials: Sequence[TrialResult]
    user_guidelines: str | None = None
    """The simulator guidelines text, only when it is known to be the one the assessment used."""
    agent_model: str | None = None
    """The agent's model as its owner declares it (submissions); None = unknown."""


def simulation_id(assessment_id: str, task_id: str, trial: int) -> str:
    """A stable id per trial, so a re-export names the same simulations the same way."""
    return str(uuid.uuid5(_SIMULATION_NAMESPACE, f"{assessment_id}/{task_id}/{trial}"))


class DomainMismatch(ValueError):
    """The domain data given is not the assessment's domain."""


def tau2_results(source: ExportSource, data: DomainData) -> dict[str, Any]:
    """The whole results document (JSON-ready), simulations in trial-major, tasks.json order; excluded
    trials (no reward) left out (see the module's docstring). `data` is the assessment's domain."""
    config = source.config
    if config.domain != data.name:
        raise DomainMismatch(
            f"the assessment ran {config.domain!r}; its export needs that domain, not {data.name!r}"
        )
    task_ids = sorted({t.task_id for t in source.trials}, key=_task_order(data))
    order = _task_order(data)
    trials = sorted(counted_trials(source.trials), key=lambda t: (t.trial, order(t.task_id)))
    run = source.report.run_info if source.report is not None else None
    user_info: dict[str, Any] = {
        "implementation": "user_simulator" if run is None or run.user_model else "scripted_user",
        "llm": run.user_model if run else None,
        "llm_args": dict(run.user_llm_args) if run and run.user_model else None,
    }
    if source.user_guidelines is not None:
        user_info["global_simulation_guidelines"] = source.user_guidelines
    types = tool_types(data)
    return {
        "timestamp": source.created_at.isoformat(),
        "info": {
            "git_commit": f"tau2-retail-green-agent {_our_version()} (tau2 {TAU2_VERSION} semantics)",
            "num_trials": config.trials,
            "max_steps": config.max_steps,
            "max_errors": config.max_errors,
            "user_info": user_info,
            "agent_info": {
                "implementation": AGENT_IMPLEMENTATION,
                "llm": source.agent_model,
                "llm_args": None,
            },
            "environment_info": {"domain_name": data.name, "policy": data.policy, "tool_defs": None},
            "seed": config.seed,
        },
        "tasks": [upstream_task(data.task_document(task_id)) for task_id in task_ids],
        "simulations": [
            simulation(trial, data.task(trial.task_id), source.assessment_id, types) for trial in trials
        ],
    }


def upstream_task(document: dict[str, Any]) -> dict[str, Any]:
    """A task as upstream's results files hold it: the task file's fields that upstream's model has."""
    return {key: value for key, value in document.items() if key in UPSTREAM_TASK_FIELDS}


def tool_types(data: DomainData) -> dict[str, str | None]:
    """tau2's `tool_type` per tool name: the agent's write and read tools; the customer's tools are typed
    by upstream too, but the domain does not say how here, so they are left unknown (None) rather than
    guessed; any other agent tool is generic (calculate, transfer_to_human_agents)."""
    types: dict[str, str | None] = {name: "write" for name in data.write_tools}
    types.update({name: "read" for name in data.read_tools})
    for schema in data.user_tool_schemas:
        name = str(schema.get("function", schema).get("name"))
        types.setdefault(name, None)
    return types


def simulation(
    trial: TrialResult, task: Task, assessment_id: str, types: dict[str, str | None]
) -> dict[str, Any]:
    usage = trial.usage
    document = {
        "id": simulation_id(assessment_id, trial.task_id, trial.trial),
        "task_id": trial.task_id,
        "timestamp": trial.finished_at.isoformat(),
        "start_time": trial.started_at.isoformat(),
        "end_time": trial.finished_at.isoformat(),
        "duration": (trial.finished_at - trial.started_at).total_seconds(),
        "termination_reason": _TERMINATION.get(trial.termination_reason, trial.termination_reason),
        "agent_cost": usage.agent.cost_usd if usage and usage.agent else None,
        "user_cost": usage.user.cost_usd if usage and usage.user else None,
        "reward_info": reward_info(trial, task, types),
        "messages": messages(trial),
        "trial": trial.trial,
        "seed": trial.seed,
        "mode": "half_duplex",
    }
    if trial.error:  # where tau2 keeps a simulation's error
        document["info"] = {"error": trial.error}
    return document


def messages(trial: TrialResult) -> list[dict[str, Any]]:
    """The transcript in tau2's message form: assistant/user messages with tool calls, tool messages. A
    call's requestor is the party that made it (the customer's own tools, in dual control: "user"), and a
    tool message's is its call's."""
    out: list[dict[str, Any]] = []
    requestors: dict[str, str] = {}
    for turn, message in enumerate(trial.transcript):
        timestamp = message.timestamp.isoformat()
        if message.role == "tool":
            out.append(
                {
                    "id": message.tool_call_id or "",
                    "role": "tool",
                    "content": message.content,
                    "requestor": requestors.get(message.tool_call_id or "", "assistant"),
                    "error": message.error,
                    "turn_idx": turn,
                    "timestamp": timestamp,
                }
            )
            continue
        requestor = _requestor(message)
        calls = None
        if message.tool_calls:
            calls = []
            for c in message.tool_calls:
                requestors[c.id] = requestor
                calls.append({"id": c.id, "name": c.name, "arguments": c.arguments, "requestor": requestor})
        out.append(
            {
                "role": message.role,
                "content": message.content,
                "tool_calls": calls,
                "turn_idx": turn,
                "timestamp": timestamp,
            }
        )
    return out


def _requestor(message: TranscriptMessage) -> str:
    return "user" if message.role == "user" else "assistant"


def reward_info(trial: TrialResult, task: Task, types: dict[str, str | None]) -> dict[str, Any] | None:
    """tau2's RewardInfo; None for a trial without a reward (excluded; never exported)."""
    if trial.reward is None:
        return None
    if not is_clean_exit(trial.termination_reason):
        # tau2 runs no check after a premature end: reward 0, no basis, a note saying why.
        return {
            "reward": 0.0,
            "reward_basis": None,
            "info": {"note": f"no checks: the simulation ended with {trial.termination_reason}"},
        }
    db_match = _db_matched(trial)
    nl = [
        {"nl_assertion": v.assertion, "met": v.passed, "justification": v.reason} for v in trial.nl_verdicts
    ]
    assertions = [_assertion_check(check) for check in trial.env_assertion_checks]
    breakdown: dict[str, float] = {}
    for kind in task.reward_basis:
        if kind == "DB":
            breakdown[kind] = 1.0 if db_match else 0.0
        elif kind == "ENV_ASSERTION":
            breakdown[kind] = 1.0 if all(check["met"] for check in assertions) else 0.0
        elif kind == "ACTION":
            breakdown[kind] = 1.0 if all(c.get("matched") for c in trial.action_checks) else 0.0
        elif kind == "NL_ASSERTION" and trial.nl_status == "judged":
            breakdown[kind] = 1.0 if all(v.passed for v in trial.nl_verdicts) else 0.0
        elif kind == "NL_ASSERTION" and not task.judged:
            breakdown[kind] = 1.0  # no assertions to judge: tau2 scores the component 1 as well
        # Otherwise the judge gave no verdict (skipped: the reward was 0 whatever it said), and none is
        # invented: NL_ASSERTION is left out of the breakdown.
        elif kind == "COMMUNICATE":
            breakdown[kind] = 1.0 if all(c.get("met") for c in trial.communicate_checks) else 0.0
    return {
        "reward": trial.reward,
        "db_check": {"db_match": db_match, "db_reward": 1.0 if db_match else 0.0},
        "env_assertions": assertions if task.env_assertions else None,
        "action_checks": _action_checks(trial, task, types),
        "nl_assertions": nl if trial.nl_status == "judged" else None,
        "communicate_checks": [
            {
                "info": c["info"],
                "met": c["met"],
                "justification": "said in an assistant message"
                if c["met"]
                else "not said in any assistant message",
            }
            for c in trial.communicate_checks
        ],
        "reward_basis": list(task.reward_basis),
        "reward_breakdown": breakdown,
        "info": None,
    }


def _db_matched(trial: TrialResult) -> bool:
    """Upstream's DB check: the trial's DB signal (in dual control both sides' DBs must equal gold's: the
    agent's hash alone can match where the customer's differs); the agent's hashes for a trial without one."""
    for signal in trial.signals:
        if signal.name == SIGNAL_DB and signal.passed is not None:
            return signal.passed
    return trial.db_actual_hash is not None and trial.db_actual_hash == trial.db_expected_hash


def _assertion_check(check: dict[str, Any]) -> dict[str, Any]:
    """One stored env assertion check (domain_kit's `AssertionCheck`, as a dict) as upstream's
    `EnvAssertionCheck`: the assertion, whether it held, its reward."""
    met = check.get("actual") is not None and check.get("actual") == check.get("expected")
    return {
        "env_assertion": {
            "env_type": check.get("env_type"),
            "func_name": check.get("func_name"),
            "arguments": check.get("arguments") or {},
            "assert_value": check.get("expected", True),
            "message": check.get("message"),
        },
        "met": met,
        "reward": 1.0 if met else 0.0,
    }


def _action_checks(trial: TrialResult, task: Task, types: dict[str, str | None]) -> list[dict[str, Any]]:
    matched = {c["action_id"]: bool(c["matched"]) for c in trial.action_checks}
    return [
        {
            "action": {
                "action_id": action.action_id,
                "requestor": action.requestor,
                "name": action.name,
                "arguments": action.arguments,
                "info": None,
                "compare_args": list(action.compare_args) if action.compare_args is not None else None,
            },
            "action_match": matched.get(action.action_id, False),
            "action_reward": 1.0 if matched.get(action.action_id, False) else 0.0,
            "tool_type": types.get(action.name, "generic"),
        }
        for action in task.gold_actions
    ]


def _task_order(data: DomainData) -> Any:
    position = {task_id: i for i, task_id in enumerate(data.tasks)}
    return lambda task_id: position.get(task_id, len(position))


def _our_version() -> str:
    try:
        return metadata.version("tau2-retail-green-agent")
    except metadata.PackageNotFoundError:  # running from a source tree without an install
        return "unknown"
