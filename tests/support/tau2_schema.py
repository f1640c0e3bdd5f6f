"""A field-by-field description of tau2-bench v1.0.1's results file (`tau2.data_model.simulation.Results` and
what it contains) and of its leaderboard `submission.json`, written for the tests from reading upstream's
models (src/tau2/data_model/{simulation,message,tasks}.py, src/tau2/scripts/leaderboard/submission.py).

Stricter than upstream on purpose: unknown fields are rejected (`extra="forbid"`), so an export cannot carry
a field tau2 does not have; required fields, types and enumerations are upstream's. Only the text (half
duplex) subset is described: voice/tick fields must be absent.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# -- messages (message.py) ---------------------------------------------------------------------------------


class ToolCall(Strict):
    id: str = ""
    name: str
    arguments: dict[str, Any]
    requestor: Literal["user", "assistant"] = "assistant"


class ParticipantMessage(Strict):
    """AssistantMessage / UserMessage: ParticipantMessageBase's text fields."""

    role: Literal["assistant", "user"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    is_audio: bool = False
    turn_idx: int | None = None
    timestamp: str | None = None
    cost: float | None = None
    usage: dict[str, Any] | None = None
    raw_data: dict[str, Any] | None = None
    generation_time_seconds: float | None = None


class ToolMessage(Strict):
    id: str
    role: Literal["tool"]
    content: str | None = None
    requestor: Literal["user", "assistant"] = "assistant"
    error: bool = False
    turn_idx: int | None = None
    timestamp: str | None = None


# -- tasks (tasks.py) ----------------------------------------------------------------------------------------


class StructuredUserInstructions(Strict):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str


class UserScenario(Strict):
    persona: str | None = None
    instructions: StructuredUserInstructions | str


class Description(Strict):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class Action(Strict):
    action_id: str
    requestor: Literal["user", "assistant"] = "assistant"
    name: str
    arguments: dict[str, Any]
    info: str | None = None
    compare_args: list[str] | None = None


RewardType = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]


def _default_basis() -> list[RewardType]:
    return ["DB", "COMMUNICATE"]


class EvaluationCriteria(Strict):
    actions: list[Action] | None = None
    env_assertions: list[dict[str, Any]] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=_default_basis)


class Task(Strict):
    id: str
    description: Description | None = None
    user_scenario: UserScenario
    ticket: str | None = None
    initial_state: dict[str, Any] | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    issues: list[dict[str, Any]] | None = None
    required_documents: list[str] | None = None
    user_tools: list[str] | None = None


# -- reward (simulation.py) ---------------------------------------------------------------------------


class DBCheck(Strict):
    db_match: bool
    db_reward: float


class ActionCheck(Strict):
    action: Action
    action_match: bool
    action_reward: float
    tool_type: Literal["read", "write", "think", "generic"] | None = None


class NLAssertionCheck(Strict):
    nl_assertion: str
    met: bool
    justification: str


class CommunicateCheck(Strict):
    info: str
    met: bool
    justification: str


class RewardInfo(Strict):
    reward: float
    db_check: DBCheck | None = None
    env_assertions: list[dict[str, Any]] | None = None
    action_checks: list[ActionCheck] | None = None
    nl_assertions: list[NLAssertionCheck] | None = None
    communicate_checks: list[CommunicateCheck] | None = None
    reward_basis: list[RewardType] | None = None
    reward_breakdown: dict[RewardType, float] | None = None
    info: dict[str, Any] | None = None


TerminationReason = Literal[
    "user_stop",
    "agent_stop",
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
]


class SimulationRun(Strict):
    id: str
    task_id: str
    timestamp: str | None = None
    start_time: str
    end_time: str
    duration: float
    termination_reason: TerminationReason
    agent_cost: float | None = None
    user_cost: float | None = None
    reward_info: RewardInfo | None = None
    messages: list[ToolMessage | ParticipantMessage] | None = None
    trial: int | None = None
    seed: int | None = None
    mode: Literal["half_duplex"] = "half_duplex"
    info: dict[str, Any] | None = None


class AgentInfo(Strict):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None


class UserInfo(Strict):
    implementation: str
    llm: str | None = None
    llm_args: dict[str, Any] | None = None
    global_simulation_guidelines: str | None = None


class EnvironmentInfo(Strict):
    domain_name: str
    policy: str
    tool_defs: dict[str, Any] | None = None


class Info(Strict):
    git_commit: str
    num_trials: int
    max_steps: int
    max_errors: int
    user_info: UserInfo
    agent_info: AgentInfo
    environment_info: EnvironmentInfo
    seed: int | None = None
    text_streaming_config: dict[str, Any] | None = None


class Results(Strict):
    timestamp: str | None = None
    info: Info
    tasks: list[Task]
    simulations: list[SimulationRun]


# -- leaderboard submission (scripts/leaderboard/submission.py) ----------------------------------------


class ContactInfo(Strict):
    email: str | None = None
    name: str | None = None
    github: str | None = None


class DomainResults(Strict):
    pass_1: float | None = Field(default=None, ge=0, le=100)
    pass_2: float | None = Field(default=None, ge=0, le=100)
    pass_3: float | None = Field(default=None, ge=0, le=100)
    pass_4: float | None = Field(default=None, ge=0, le=100)
    cost: float | None = Field(default=None, ge=0)
    retrieval_config: str | None = None


class SubmissionResults(Strict):
    retail: DomainResults | None = None
    airline: DomainResults | None = None
    telecom: DomainResults | None = None
    banking_knowledge: DomainResults | None = None


class Verification(Strict):
    modified_prompts: bool | None = None
    omitted_questions: bool | None = None
    details: str | None = None


class Methodology(BaseModel):
    model_config = ConfigDict(extra="forbid")  # dates arrive as strings

    evaluation_date: date | None = None
    tau2_bench_version: str | None = None
    user_simulator: str | None = None
    notes: str | None = None
    verification: Verification | None = None


class Submission(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_name: str
    model_organization: str
    submitting_organization: str
    submission_date: date
    submission_type: Literal["standard", "custom"] = "standard"
    modality: Literal["text", "voice"] = "text"
    contact_info: ContactInfo
    results: SubmissionResults
    is_new: bool = False
    trajectories_available: bool = False
    trajectory_files: dict[str, str] | None = None
    references: list[dict[str, Any]] | None = None
    methodology: Methodology | None = None
    reasoning_effort: str | None = None
