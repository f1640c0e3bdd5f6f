"""Serialized results of the engine: trial results, progress events and the assessment report.

These are pydantic models because they cross boundaries: the service stores them, streams them and rebuilds
reports from them. `AssessmentReport.schema_version` is bumped whenever a stored field changes meaning.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, model_validator

from green_agent.core.usage import TrialUsage, Usage

SIGNAL_DB = "DB_STATE_MATCH"
SIGNAL_NL = "NL_ASSERTION"
SIGNAL_CLEAN_EXIT = "CLEAN_EXIT"
SIGNAL_ACTION = "ACTION_MATCH"
SIGNAL_COMMUNICATE = "COMMUNICATE"
SIGNAL_ENV = "ENV_ASSERTION"
SIGNAL_NAMES = (SIGNAL_DB, SIGNAL_NL, SIGNAL_CLEAN_EXIT, SIGNAL_ACTION, SIGNAL_COMMUNICATE, SIGNAL_ENV)
"""Every per-trial signal, in report order. CLEAN_EXIT always gates success; each of the others gates it where
the task's reward basis names it (DB, NL_ASSERTION, ACTION, COMMUNICATE, ENV_ASSERTION) and is a diagnostic
elsewhere, or not applicable where the task has nothing for it to check."""


def utcnow() -> datetime:
    return datetime.now(UTC)


class TrialKey(BaseModel):
    """Identifies one trial within an assessment."""

    task_id: str
    trial: int = Field(ge=0)


class ToolCallRecord(BaseModel):
    """A tool call the white agent made; `id` is assigned by the engine when the agent gives none."""

    id: str
    name: str
    arguments: dict[str, Any]


class TranscriptMessage(BaseModel):
    """One message of a trial, as tau2 records it (assistant = white agent, user = simulated customer)."""

    index: int = Field(ge=0)
    role: Literal["assistant", "user", "tool"]
    content: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    tool_call_id: str | None = None
    error: bool = False
    timestamp: datetime = Field(default_factory=utcnow)
    requestor: Literal["assistant", "user"] | None = Field(
        default=None,
        description='On a tool result: who made the call; "user" for the customer\'s own tools (dual '
        "control), none for the agent's.",
    )


NLStatus = Literal["not_required", "judged", "not_judged", "skipped", "judge_failed"]
"""Whether a trial's NL assertions were judged: `not_required` (the task has none), `judged` (one verdict per
assertion), `not_judged` (no verdict: no judge configured, or the conversation never finished), `skipped`
(the judge was not asked because the reward was 0 whatever it said: the operator's `judge_skip_when_failed`),
`judge_failed` (asked, and it failed: excluded as an infrastructure error, or charged to the agent when its
text provoked the failure)."""


class NLVerdict(BaseModel):
    """The judge's verdict on one natural-language assertion (exactly one per assertion, in order)."""

    index: int = Field(ge=0)
    assertion: str
    passed: bool
    reason: str


class Signal(BaseModel):
    """A named success signal; `counts` says whether it gates success; `passed` None = not evaluated."""

    name: str
    passed: bool | None
    counts: bool
    detail: str


class ConversationEnd(BaseModel):
    """How a trial's conversation itself ended, before the judge (whose failure changes the trial's
    termination reason and error): what judging the trial again, without running it again, starts from."""

    reason: str
    error: str | None = None
    agent_bytes: int = Field(
        default=0, ge=0, description="What the agent had put before our LLMs (for who pays a judge failure)."
    )


FailureKind = Literal[
    "termination",
    "missing_action",
    "wrong_arguments",
    "extra_write",
    "db_difference",
    "env_assertion",
    "nl_assertion",
    "tool_errors",
]
"""What went wrong in a failed trial (scoring/failures.py), in the order a trial's first one names it."""
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)


class Failure(BaseModel):
    """One thing that went wrong in a failed trial, in the agent's terms (scoring/failures.py): which gold
    action, which argument, what gold expected and what the agent sent or got. A trial can carry several."""

    kind: FailureKind
    action: str | None = Field(default=None, description="The tool: the gold action, or the agent's call.")
    argument: str | None = Field(
        default=None,
        description="wrong_arguments: the argument; db_difference: the DB field; env_assertion: the side "
        '("assistant" or "user"); missing_action: "customer" where the gold action is the customer\'s own.',
    )
    expected: Any = Field(default=None, description="What gold has (value, arguments, exit, assertion).")
    got: Any = Field(default=None, description="What the trial has (value sent, error text, reason).")
    detail: str = Field(description="The failure in one sentence.")


class TrialResult(BaseModel):
    """Everything about one finished trial: verdict, its breakdown and the transcript that produced it."""

    task_id: str
    trial: int = Field(ge=0)
    seed: int
    termination_reason: str
    reward: float | None = Field(
        description="tau2 reward; None when excluded (infrastructure error, not judged)."
    )
    is_successful: bool | None
    signals: list[Signal] = Field(default_factory=list)
    nl_status: NLStatus = "not_required"
    nl_verdicts: list[NLVerdict] = Field(default_factory=list)
    nl_assertion_pass_rate: float | None = Field(default=None, description="Passed / judged assertions.")
    judge_input: str | None = None
    db_expected_hash: str | None = None
    db_actual_hash: str | None = None
    action_checks: list[dict[str, Any]] = Field(default_factory=list)
    communicate_checks: list[dict[str, Any]] = Field(default_factory=list)
    env_assertion_checks: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each env assertion of the task on the trial's end state: func_name, env_type, "
        "arguments, expected, actual (None: it raised), message, error.",
    )
    transcript: list[TranscriptMessage] = Field(default_factory=list)
    protocol_warnings: list[str] = Field(default_factory=list)
    error: str | None = None
    steps: int = 0
    num_errors: int = 0
    usage: TrialUsage | None = Field(
        default=None,
        description="Tokens and cost: user simulator, judge, (self-reported) agent.",
    )
    conversation_end: ConversationEnd | None = Field(
        default=None,
        description="How the conversation ended before the judge (None in trials stored before it was kept).",
    )
    failures: list[Failure] | None = Field(
        default=None,
        description="What went wrong, when the trial was scored and failed (empty otherwise); None in "
        "trials stored before failures were classified.",
    )
    started_at: datetime
    finished_at: datetime

    @property
    def key(self) -> TrialKey:
        return TrialKey(task_id=self.task_id, trial=self.trial)

    @property
    def excluded(self) -> bool:
        """True when the trial is left out of avg reward and pass^k (it has no reward)."""
        return self.reward is None


class TrialStarted(BaseModel):
    kind: Literal["trial_started"] = "trial_started"
    task_id: str
    trial: int


class TurnTaken(BaseModel):
    kind: Literal["turn_taken"] = "turn_taken"
    task_id: str
    trial: int
    message: TranscriptMessage


class TrialFinished(BaseModel):
    kind: Literal["trial_finished"] = "trial_finished"
    result: TrialResult


ProgressEvent = Annotated[TrialStarted | TurnTaken | TrialFinished, Field(discriminator="kind")]


class UsageReport(BaseModel):
    """Tokens and cost per party over every trial (excluded ones cost money too); cost None = unknown."""

    user: Usage | None = None
    judge: Usage | None = None
    agent: Usage | None = Field(default=None, description="As reported by the white agent itself.")
    green_cost_usd: float | None = Field(
        default=None, description="User simulator + judge: what this assessment cost the operator."
    )
    agent_cost_per_trial_usd: float | None = Field(
        default=None,
        description="Mean agent cost per trial (tau2's 'cost'); only when the agent reported a cost "
        "for every trial.",
    )


class RunInfo(BaseModel):
    """What ran, for exports and submissions: the user and judge models and the prompts' fingerprints."""

    user_model_name: str
    user_model: str | None = Field(description="Model id sent to the endpoint; None for the scripted user.")
    user_llm_args: dict[str, Any] = Field(default_factory=dict)
    user_guidelines_sha256: str | None = Field(
        default=None, description="sha256 of the simulator guidelines in use; None for the scripted user."
    )
    judge_model: str | None = None
    judge_rubric_sha256: str | None = None
    trial_retries: int | None = Field(
        default=None,
        description="Times a trial that ended in infrastructure_error was run again at most (the operator's "
        "trial_retries); None in reports stored before it was recorded.",
    )


PARTIAL_REASONS = {
    "infrastructure_error": "excluded after infrastructure errors (user-simulator or judge LLM failed)",
    "not_judged": "not judged (no NL-assertion judge configured)",
    "task_not_judged": "left out with the rest of their task (the judge failed on one of its trials while "
    "others were scored without it: judge_skip_when_failed)",
    "not_run": "not run (the assessment was stopped first)",
}
"""Why a trial can be missing from a report's metrics, as `partial_reasons` keys, with what each means."""


class Estimate(BaseModel):
    """A number with its task-clustered error bar (green_agent/scoring/uncertainty.py)."""

    value: float
    stderr: float | None = Field(
        description="Standard error over tasks (the unit of sampling); None with fewer than 2 tasks."
    )
    ci95: tuple[float, float] | None = Field(
        description="value +- 1.96 stderr, clipped to [0, 1]; None when stderr is."
    )


class ReportStats(BaseModel):
    """The report's numbers with their uncertainty (schema version 3; docs/scoring.md, "Error bars")."""

    n_tasks: int = Field(description="Tasks with at least one scored trial: the sample the errors are over.")
    avg_reward: Estimate | None = Field(description="Average reward over scored trials; None without one.")
    pass_hat_k: dict[int, Estimate] = Field(default_factory=dict)
    min_detectable_difference: float | None = Field(
        description="Smallest true difference in average reward that another assessment of the same design "
        "would tell apart from this one (80% power, two-sided 5%): 2.8 x sqrt(2) x stderr; None when the "
        "stderr is."
    )
    task_successes: dict[str, tuple[int, int]] | None = Field(
        default=None,
        description="With trials > 1: task -> (successes, scored trials).",
    )
    mixed_tasks: list[str] | None = Field(
        default=None,
        description="With trials > 1: tasks with both successes and failures among their scored trials.",
    )


class AssessmentReport(BaseModel):
    """Aggregate metrics of one assessment (tau2 rules: infrastructure errors excluded, pass^k per task).

    Schema versions: 1 = signal rates over every scored trial that evaluated the signal (ACTION_MATCH and
    COMMUNICATE passed vacuously on tasks with nothing to check), no completeness flag. 2 = each rate over the
    trials where its signal applies (`signal_applicable` says how many), plus `complete`/`partial_reasons`.
    3 = `stats`: the average reward and pass^k with task-clustered standard errors and 95% intervals, the
    smallest detectable difference, per-task successes; NL tasks' trials are judged or excluded whatever their
    outcome (docs/scoring.md). Version-1 reports still load: their flag is derived from `excluded`, their
    `signal_applicable` is empty; version-1 and 2 reports have no `stats` (None).
    """

    schema_version: int = 3
    domain: str = Field(
        default="retail", description="The tau2 domain assessed ('retail' in reports stored before domains)."
    )
    num_tasks: int
    num_trials: int
    trials_total: int
    trials_scored: int
    tasks_planned: int | None = Field(
        default=None,
        description="Tasks the assessment set out to run (num_tasks counts those with a stored trial); "
        "None in reports stored before it was kept.",
    )
    trials_planned: int | None = Field(
        default=None,
        description="Trials the assessment set out to run (trials_total counts the stored ones: fewer when "
        "it was cancelled or failed midway; partial_reasons.not_run says how many were not); None in "
        "reports stored before it was kept.",
    )
    complete: bool = Field(
        description="True when every planned trial ran and was scored; false when any was excluded, not "
        "judged or not run (then `partial_reasons` says how many and why). Refuse partial results for a "
        "leaderboard."
    )
    partial_reasons: dict[str, int] = Field(
        default_factory=dict,
        description="Why trials are missing from the metrics -> how many: infrastructure_error, not_judged, "
        "task_not_judged, not_run. Empty when complete.",
    )
    excluded: dict[str, int] = Field(default_factory=lambda: {"infrastructure_error": 0, "not_judged": 0})
    avg_reward: float | None
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    signal_rates: dict[str, float | None] = Field(default_factory=dict)
    signal_applicable: dict[str, int] = Field(
        default_factory=dict,
        description="How many scored trials each rate covers (the trials where the signal applies); for "
        "NL_ASSERTION, how many judged assertions.",
    )
    nl_assertions_total: int = 0
    termination_counts: dict[str, int] = Field(default_factory=dict)
    task_rewards: dict[str, float] = Field(default_factory=dict)
    action_task_rewards: dict[str, float] = Field(
        default_factory=dict,
        description="Task -> mean action score over the same trials (metrics.action_reward: the official "
        "AgentBeats tau2 green's score); empty in reports stored before it.",
    )
    time_used_s: float = 0.0
    usage: UsageReport | None = None
    run_info: RunInfo | None = None
    stats: ReportStats | None = Field(
        default=None, description="Error bars (schema version 3); None in reports stored before it."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_version_1(cls, data: Any) -> Any:
        """A stored version-1 report has no completeness flag: derive it from what it excluded."""
        if isinstance(data, dict) and "complete" not in data:
            reasons = {reason: n for reason, n in (data.get("excluded") or {}).items() if n}
            data = {**data, "complete": not reasons, "partial_reasons": reasons}
        return data

    def partial_summary(self) -> str:
        """Why the report is partial, in words ("40 trials not judged (...)"); empty when complete."""
        return "; ".join(
            f"{count} trial{'s' if count != 1 else ''} {PARTIAL_REASONS.get(reason, reason)}"
            for reason, count in self.partial_reasons.items()
        )
