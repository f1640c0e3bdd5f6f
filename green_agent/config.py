"""Settings and per-assessment configuration of the engine.

Two objects, two owners:

* `EngineSettings` belongs to the operator (LLMs, endpoints, keys, concurrency, timeouts).
  It is never built from a request.
* `AssessmentConfig` belongs to whoever asks for an assessment (which agent, which tasks, how many trials). It
  names a user model but can only pick among those the operator configured.

Validation messages say what to change, because they reach API users verbatim.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from green_agent.core.limits import AgentLimits
from green_agent.core.one_line import unshowable_reason
from green_agent.core.usage import ModelPrice
from green_agent.domains import DEFAULT_DOMAIN, check_domain, domain_names
from green_agent.white_agent.egress import url_problem

SCRIPTED_USER = "scripted"
"""Name of the built-in deterministic user simulator (needs no LLM)."""


MAX_TASK_IDS = 1000
"""Longest task-id list accepted: far more than any split holds (114 tasks, no repeats), and a longer list is
refused before its items are looked at (100,000 ids took a second of validation)."""

MAX_URL_CHARS = 2048
"""Longest agent URL accepted (the common browser and proxy limit; the column holds no more)."""


def unstorable_reason(text: str) -> str | None:
    """Why `text` cannot be stored or sent as given (a NUL or a lone surrogate), or None when it can."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate (an unpaired \\ud800-\\udfff escape)"
    return None


def agent_url_problem(url: str) -> str | None:
    """Why `url` cannot be an agent URL, in one line, or None: the one check every door applies (REST, the
    A2A request, `green-agent run --agent-url`, the web UI's form), here through `AssessmentConfig`.
    Whether this requester's egress rule lets the service connect there is decided later, by the service
    (`AssessmentService.create`, and each retry)."""
    reason = unstorable_reason(url)
    if reason:
        return f"agent_url {reason}"
    problem = url_problem(url)  # characters, scheme, host, credentials
    if problem is not None:
        return f"agent_url is refused: {problem}"
    return None


def one_line(value: str) -> str:
    """`value`, a name someone outside chose (a task id, a model name, an A2A participant), if it can be
    logged and shown as it is; otherwise ValueError saying why (a 422 over REST, a rejected A2A task)."""
    reason = unstorable_reason(value) or unshowable_reason(value)
    if reason:
        raise ValueError(reason)
    return value


OneLine = Annotated[str, AfterValidator(one_line)]
"""A requester's string that is logged or shown: no NUL, lone surrogate, control, format or bidi character."""


def _quote(value: str, limit: int = 120) -> str:
    """`value` quoted for an error message, cut short: messages reach API users, who sent the value."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value)} characters)"


class ConfigError(ValueError):
    """A configuration that cannot run with these settings and data; the message says what to change.

    `field` names the AssessmentConfig field at fault when there is one ("agent_url", "tasks", "user_model"),
    so a form can show the message next to it; None when the whole request is at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ProviderLimits(BaseModel):
    """What the operator knows of a provider's limits for one endpoint (its key and model): held in each
    process for every assessment and tenant using that endpoint, fairly between assessments (llm_gate.py).
    None = unlimited; an endpoint that says 429 is slowed down all the same (AIMD), these only keep it
    from having to."""

    model_config = ConfigDict(extra="forbid")

    max_in_flight: int | None = Field(
        default=None, ge=1, le=100_000, description="Requests to the endpoint out at once, per process."
    )
    requests_per_minute: float | None = Field(
        default=None, gt=0, le=1_000_000, description="Requests started per minute, per process."
    )
    tokens_per_minute: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000_000,
        description="Tokens (prompt + reply, estimated then as reported) per minute, per process.",
    )


class LLMEndpoint(ProviderLimits):
    """One OpenAI-compatible chat-completions endpoint, with the provider's limits."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="Model name sent in the request.")
    base_url: str | None = Field(default=None, description="Endpoint base URL; None = the OpenAI default.")
    api_key: str | None = Field(default=None, description="API key; None = the client's environment default.")
    extra_args: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra request arguments (e.g. reasoning_effort, or max_tokens: the reply cap); they win "
        "over temperature/seed.",
    )
    max_steps: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="As a customer model: the step limit of an assessment that sets none (a small model that "
        "never ends the conversation would otherwise run to the 200-step default). None = that default.",
    )

    def reply_cap(self) -> int | None:
        """The reply cap these request arguments set (max_tokens or max_completion_tokens), if any."""
        for name in ("max_tokens", "max_completion_tokens"):
            value = self.extra_args.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


PROVIDER_KEYS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
}
"""The providers a request may name a model of, LiteLLM-style (`"openai/gpt-4.1"`), and the environment
variable holding each one's key. Their OpenAI-compatible endpoints are `Settings`' defaults."""

DEFAULT_JUDGE_MODEL = "gpt-4.1-2025-04-14"
"""tau2's NL-assertion judge model: the judge on OPENAI_API_KEY when the operator configured none."""

_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+/-]{0,199}")
"""A model id as providers write them (`gpt-4.1-2025-04-14`, `models/gemini-2.5-flash`): no spaces, no
control characters, at most 200 characters."""


class ProviderEndpoint(BaseModel):
    """A provider whose key is in the environment: its OpenAI-compatible endpoint and key."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(default=None, description="None = the OpenAI default URL.")
    api_key: str = Field(min_length=1)
    env_var: str = Field(description="Where the key came from (named in messages, never the key).")


class UserLLMArgs(BaseModel):
    """Request arguments an assessment may give its customer model (the AgentBeats `user_llm_args`).

    Only these, each bounded: a requester picks sampling, not endpoints or anything billed per call beyond the
    reply cap (bounded by the operator's `user_llm_max_tokens`). An argument given as null is not sent (e.g.
    `temperature` for a reasoning model that refuses it). The operator's own arguments for a configured model
    win over these."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high"] | None = None

    def request_arguments(self) -> dict[str, Any]:
        """The arguments as sent: those the request gave, null ones included (they remove the parameter)."""
        return self.model_dump(exclude_unset=True)

    def reply_cap(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


def split_provider(name: str) -> tuple[str, str] | None:
    """`("openai", "gpt-4.1")` for `"openai/gpt-4.1"`; None when `name` names no known provider."""
    provider, sep, model = name.partition("/")
    if not sep or provider.lower() not in PROVIDER_KEYS or not _MODEL_ID.fullmatch(model):
        return None
    return provider.lower(), model


class EngineSettings(BaseModel):
    """Operator settings the engine needs; built once by the service, shared by every assessment."""

    model_config = ConfigDict(extra="forbid")

    user_models: dict[str, LLMEndpoint] = Field(
        default_factory=dict, description="User-simulator models an assessment may name, by name."
    )
    default_user_model: str = Field(default=SCRIPTED_USER, description="User model when a config names none.")
    data_dirs: dict[str, Path] = Field(
        default_factory=dict,
        description="A directory of upstream data files per domain name (default: each domain's environment "
        "variable, else its installed files).",
    )
    judge: LLMEndpoint | None = Field(
        default=None, description="NL-assertion judge; None = assertions not judged."
    )
    judge_from_key: bool = Field(
        default=False,
        description="The judge is tau2's judge model on OPENAI_API_KEY because the operator configured none "
        "(said in every assessment's warnings).",
    )
    providers: dict[str, ProviderEndpoint] = Field(
        default_factory=dict,
        description="Providers whose key is in the environment (PROVIDER_KEYS), by name.",
    )
    provider_models: bool = Field(
        default=True,
        description="Whether an assessment may name '<provider>/<model>' on a provider key of `providers` as "
        "its customer or judge model. Only while the operator restricts neither: with `user_models` "
        "configured, a customer must be one of them; with a judge configured, the judge is that one.",
    )
    user_llm_max_tokens: int = Field(
        default=32_768,
        ge=1,
        le=10_000_000,
        description="Largest reply cap (max_tokens, max_completion_tokens) an assessment may give its "
        "customer model in user_llm_args.",
    )
    disclose_task_id: bool = Field(
        default=False,
        description="Name the task to the white agent in message metadata. Only for the demo's built-in "
        "oracle with a model-played customer: a real agent told the task id could replay its public gold "
        "actions. Not an operator setting of the service.",
    )
    judge_skip_when_failed: bool = Field(
        default=False,
        description="Ask the judge only where its verdicts can change the reward (a clean exit whose DB "
        "matched), saving its calls on trials already at 0. Off (the default), every trial of a task with "
        "NL assertions is judged, as upstream does, so that which trials count never depends on whether "
        "they passed; on, a task one of whose trials the judge failed on has all its trials excluded.",
    )
    judge_json_schema: bool = Field(
        default=True,
        description="Ask the judge endpoint for JSON-schema constrained verdicts (response_format).",
    )
    max_concurrent_trials: int = Field(
        default=64, ge=1, description="Trials running at once, all assessments."
    )
    max_concurrent_per_agent: int = Field(
        default=32, ge=1, description="Trials running at once per white agent."
    )
    turn_timeout_s: float = Field(default=300.0, gt=0, description="Default wait for one white-agent reply.")
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Timeout of one user/judge LLM call.")
    llm_max_retries: int = Field(default=3, ge=0, description="Retries of a failed user/judge LLM call.")
    llm_check_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Timeout of the check that an assessment's LLM endpoints answer (before trials queue).",
    )
    llm_retry_backoff_s: float = Field(
        default=1.0, ge=0, description="First wait before an LLM retry; doubled after each failure."
    )
    llm_outage_tolerance_s: float = Field(
        default=900.0,
        ge=0,
        le=7 * 86_400,
        description="How long trials wait for an LLM endpoint that is down or answers only 429s before they "
        "end as excluded infrastructure errors (retry them with `green-agent retry`).",
    )
    llm_breaker_failures: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="Connection errors, timeouts or 5xx in a row after which an LLM endpoint counts as down "
        "(no trial starts on it; requests wait for a probe to get an answer).",
    )
    user_guidelines_file: Path | None = Field(
        default=None, description="Replaces the built-in user guidelines."
    )
    judge_rubric_file: Path | None = Field(default=None, description="Replaces the built-in judge rubric.")
    scripted_user_delay_s: float = Field(
        default=0.0,
        ge=0,
        description="Per-turn delay of the scripted user (simulates LLM latency in benchmarks).",
    )
    conversations_per_client: int = Field(
        default=4,
        ge=1,
        le=256,
        description="White-agent conversations sharing one HTTP client (and its idle connections).",
    )
    normalize_ids: bool = Field(
        default=False, description="Tolerant id lookup in the tools (off = upstream parity)."
    )
    longest_first: bool = Field(
        default=True,
        description="Start trials longest first (by the task's gold action count); off = report order.",
    )
    # -- scoring integrity: bounds on the white agent, and retries of trials our side failed --------------
    limits: AgentLimits = Field(
        default_factory=AgentLimits, description="Bounds on everything a white agent sends (limits.py)."
    )
    trial_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Times a trial that ended in infrastructure_error (user simulator or judge unavailable "
        "after its own retries) is run again before it is excluded.",
    )
    trial_retry_backoff_s: float = Field(
        default=5.0, ge=0, description="Wait before the first trial retry; doubled after each one."
    )
    # -- fairness and agent headers (issue 9) --
    tenant_slot_share: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Largest share of max_concurrent_trials one tenant may hold; the rest stays for others.",
    )
    assessment_slot_share: float = Field(
        default=0.75,
        gt=0,
        le=1,
        description="Largest share of its tenant's slots one assessment may hold.",
    )
    max_agent_headers: int = Field(
        default=8, ge=0, le=64, description="Headers an assessment may ask to send to its white agent."
    )
    max_agent_header_bytes: int = Field(
        default=4096, ge=0, le=65_536, description="Total bytes of those headers' names and values."
    )
    # -- per-agent state: a requester picks the agent URLs, so what is kept per agent is bounded --
    agent_card_cache_entries: int = Field(
        default=64, ge=0, le=100_000, description="Agent cards kept per egress policy (LRU; 0: none)."
    )
    agent_card_cache_bytes: int = Field(
        default=2 * 1024 * 1024,
        ge=0,
        le=1 << 34,
        description="Total serialized size of the cached agent cards per egress policy (LRU beyond).",
    )
    agent_card_cache_ttl_s: float = Field(
        default=300.0, ge=0, le=86_400, description="A cached agent card is fetched again after this long."
    )
    agent_keepalive_s: float = Field(
        default=5.0,
        ge=0,
        le=3_600,
        description="An idle connection to a white agent is closed this long after its last response.",
    )
    # -- cost accounting (tau2 interop) --
    llm_prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="USD per million tokens, by model id; unlisted: cost None.",
    )
    agent_usage_max_tokens_per_reply: int = Field(
        default=10_000_000, ge=0, description="Largest token count a white agent may report for one reply."
    )
    agent_usage_max_cost_per_reply: float = Field(
        default=100.0, ge=0, description="Largest cost (USD) a white agent may report for one reply."
    )

    def user_model_choices(self) -> str:
        """What a request may name as its customer, for messages."""
        names = [SCRIPTED_USER, *self.user_models]
        if not self.user_models and self.provider_models and self.providers:
            names += [f"{provider}/<model>" for provider in self.providers]
        return ", ".join(names)

    def user_endpoint(self, name: str) -> LLMEndpoint | None:
        """The endpoint of the customer model `name` (None: the scripted customer); ConfigError in one line
        listing what may be named. A configured model may also be named LiteLLM-style, by a provider prefix
        and its name or model id (`openai/gpt-4.1`). Never a stand-in: a model not to be had is refused."""
        if name == SCRIPTED_USER:
            return None
        if name in self.user_models:
            return self.user_models[name]
        named = split_provider(name)
        if self.user_models:
            if named is not None:
                for configured_name, configured in self.user_models.items():
                    if named[1] in (configured_name, configured.model):
                        return configured
            raise ConfigError(
                f"user model {_quote(name, 80)} is not offered here; use one of: {self.user_model_choices()}",
                field="user_model",
            )
        endpoint = self._provider_endpoint(name, named, "user model")
        if endpoint is None:
            raise ConfigError(
                f"user model {_quote(name, 80)} is not offered here; use one of: {self.user_model_choices()}",
                field="user_model",
            )
        return endpoint

    def judge_endpoint(self, name: str | None) -> LLMEndpoint | None:
        """The judge of an assessment that names `name` (None: the service's judge, or none); ConfigError
        in one line when `name` is not allowed."""
        if name is None:
            return self.judge
        named = split_provider(name)
        if self.judge is not None and not self.judge_from_key:
            if name == self.judge.model or (named is not None and named[1] == self.judge.model):
                return self.judge
            raise ConfigError(
                f"judge model {_quote(name, 80)} is not offered here; this service judges with "
                f"{self.judge.model!r} (leave the judge model out)"
            )
        if self.judge is not None and name == self.judge.model:
            return self.judge
        endpoint = self._provider_endpoint(name, named, "judge model")
        if endpoint is None:
            offered = [f"{p}/<model>" for p in self.providers] if self.provider_models else []
            if self.judge is not None:
                offered.insert(0, self.judge.model)
            raise ConfigError(
                f"judge model {_quote(name, 80)} is not offered here; "
                + (f"use one of: {', '.join(offered)}" if offered else "this service has no judge")
            )
        return endpoint

    def _provider_endpoint(self, name: str, named: tuple[str, str] | None, what: str) -> LLMEndpoint | None:
        """`<provider>/<model>` on that provider's key, when the operator lets requests name them."""
        if named is None or not self.provider_models:
            return None
        provider, model = named
        key = self.providers.get(provider)
        if key is None:
            offered = (
                self.user_model_choices()
                if what == "user model"
                else ", ".join(f"{p}/<model>" for p in self.providers) or "none"
            )
            raise ConfigError(
                f"{what} {_quote(name, 80)} needs {PROVIDER_KEYS[provider]}, which is not set here; "
                f"use one of: {offered}"
            )
        return LLMEndpoint(model=model, base_url=key.base_url, api_key=key.api_key)

    @model_validator(mode="after")
    def _default_user_model_known(self) -> EngineSettings:
        if self.default_user_model != SCRIPTED_USER and self.default_user_model not in self.user_models:
            known = ", ".join([SCRIPTED_USER, *self.user_models]) or SCRIPTED_USER
            raise ValueError(
                f"default_user_model {self.default_user_model!r} is not configured; "
                f"set it to one of: {known}, or add it to user_models"
            )
        if SCRIPTED_USER in self.user_models:
            raise ValueError(
                f"user_models must not redefine the built-in {SCRIPTED_USER!r} simulator; rename it"
            )
        return self


# RFC 9110 field names (tokens) and values (visible ASCII, spaces and tabs; never CR, LF or NUL).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
# Headers that frame or route the request: the HTTP client sets them, a requester must not.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "proxy-authorization",
        "proxy-connection",
    }
)


class TaskSelection(BaseModel):
    """Which tasks to run: explicit ids, or a split optionally cut to its first `num_tasks`."""

    model_config = ConfigDict(extra="forbid")

    split: str = Field(
        default="base",
        max_length=40,
        pattern=r"^[a-z0-9_]+$",
        description="A split of the domain's split file (every domain has 'base'; retail and airline add "
        "'train' and 'test', telecom 'small' and 'full').",
    )
    task_ids: list[OneLine] | None = Field(
        default=None, max_length=MAX_TASK_IDS, description="Explicit task ids (tasks.json ids)."
    )
    num_tasks: int | None = Field(default=None, ge=1, description="Run only the first N tasks of the split.")

    @field_validator("task_ids")
    @classmethod
    def _task_ids_non_empty_unique(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("task_ids is empty; list at least one task id, or leave it out to use a split")
        seen: set[str] = set()
        repeated: dict[str, None] = {}  # ordered, each id once
        for task_id in value:  # one pass (a pairwise check was quadratic)
            if task_id in seen:
                repeated[task_id] = None
            seen.add(task_id)
        if repeated:
            shown = ", ".join(_quote(t, 40) for t in list(repeated)[:5])
            more = f" and {len(repeated) - 5} others" if len(repeated) > 5 else ""
            raise ValueError(f"task_ids lists {shown}{more} more than once; list each task once")
        return value

    @model_validator(mode="after")
    def _not_both(self) -> TaskSelection:
        if self.task_ids is not None and self.num_tasks is not None:
            raise ValueError("give either task_ids or num_tasks, not both")
        return self


class AssessmentConfig(BaseModel):
    """What one assessment runs: the agent under test, the tasks, trials and limits."""

    model_config = ConfigDict(extra="forbid")

    agent_url: str = Field(
        max_length=MAX_URL_CHARS,
        description="Base URL of the white agent (its agent card is fetched from there).",
    )
    domain: OneLine = Field(
        default=DEFAULT_DOMAIN,
        max_length=40,
        description=f"The tau2 domain to assess on: one of {', '.join(domain_names())}.",
    )
    tasks: TaskSelection = Field(default_factory=TaskSelection)
    trials: int = Field(
        default=1, ge=1, le=32, description="Trials per task (pass^k is reported up to k=trials)."
    )
    max_steps: int = Field(default=200, ge=1, le=10_000, description="Step limit per trial (upstream: 200).")
    max_errors: int = Field(
        default=10, ge=1, le=10_000, description="Cumulative tool errors that end a trial."
    )
    concurrency: int = Field(
        default=8, ge=1, le=512, description="Trials of this assessment running at once."
    )
    dialect: Literal["auto", "text", "structured"] = Field(
        default="auto", description="White-agent dialect; auto = structured if the agent card declares it."
    )
    user_model: OneLine | None = Field(
        default=None,
        max_length=256,
        description="The customer: 'scripted', a user model the operator configured, or (unless the operator "
        "configured some) '<provider>/<model>' on a provider key the service holds, e.g. 'openai/gpt-4.1'.",
    )
    user_llm_args: UserLLMArgs = Field(
        default_factory=UserLLMArgs,
        description="Sampling arguments for the customer model (temperature, top_p, max_tokens, "
        "max_completion_tokens, reasoning_effort); the operator's own arguments win.",
    )
    judge_model: OneLine | None = Field(
        default=None,
        max_length=256,
        description="The NL-assertion judge: None = the service's. A model name is accepted only when the "
        "operator configured no judge ('<provider>/<model>' on a provider key) or it names that judge.",
    )
    evaluation: Literal["tau2", "action"] = Field(
        default="tau2",
        description="Which score the AgentBeats Result's score and pass_rate carry: 'tau2' (the reward on "
        "the task's basis) or 'action' (the official AgentBeats tau2 green's: every gold tool call matched, "
        "clean exit). Reports carry both.",
    )
    seed: int = Field(
        default=300, ge=-(2**63), le=2**63 - 1, description="Seed of the trial seeds (upstream: 300)."
    )
    turn_timeout_s: float | None = Field(
        default=None, gt=0, le=3600, description="Per-turn wait; None = default."
    )
    agent_headers: dict[str, SecretStr] = Field(
        default_factory=dict,
        exclude=True,
        description="Headers sent with every request to the white agent (e.g. its own Authorization). "
        "Stored for the run, never returned, logged or shown; bounded by the operator's "
        "max_agent_headers and max_agent_header_bytes.",
    )

    @field_validator("agent_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip()
        problem = agent_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.rstrip("/")

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, value: str) -> str:
        return check_domain(value)

    @field_validator("user_model", "judge_model")
    @classmethod
    def _storable_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        reason = unstorable_reason(value)
        if reason:
            raise ValueError(f"the model name {reason}")
        return value.strip()

    @field_validator("agent_headers")
    @classmethod
    def _header_syntax(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        # Messages name the header, never its value.
        for name, secret in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"agent_headers: {name[:64]!r} is not a valid HTTP header name")
            if name.lower() in RESERVED_HEADERS:
                raise ValueError(f"agent_headers: {name!r} is set by the HTTP client; leave it out")
            if not _HEADER_VALUE.fullmatch(secret.get_secret_value()):
                raise ValueError(
                    f"agent_headers: the value of {name!r} holds a line break or control character"
                )
        return value

    def agent_header_values(self) -> dict[str, str]:
        """The headers as plain text, for the HTTP client only."""
        return {name: secret.get_secret_value() for name, secret in self.agent_headers.items()}


def with_model_step_limit(
    config: AssessmentConfig, settings: EngineSettings
) -> tuple[AssessmentConfig, list[str]]:
    """`config` with its customer model's `max_steps` when the config sets no step limit itself, and the
    warning that says so (with the reply caps of the customer and the judge), so that the limits a small model
    needs are never applied silently. A config that sets `max_steps` is returned as it is."""
    name = config.user_model or settings.default_user_model
    endpoint = settings.user_models.get(name)
    if endpoint is None or endpoint.max_steps is None or "max_steps" in config.model_fields_set:
        return config, []
    default = AssessmentConfig.model_fields["max_steps"].default
    caps = [f"customer replies at most {endpoint.reply_cap()} tokens"] if endpoint.reply_cap() else []
    judge_cap = settings.judge.reply_cap() if settings.judge is not None else None
    if judge_cap:
        caps.append(f"judge replies at most {judge_cap} tokens")
    warning = (
        f"the customer model {name!r} sets the step limit: conversations end after {endpoint.max_steps} "
        f"steps (its max_steps, for assessments that set none; tau2 allows {default}, so these numbers do "
        "not compare with published ones; set max_steps to choose)" + "".join(f"; {cap}" for cap in caps)
    )
    return config.model_copy(update={"max_steps": endpoint.max_steps}), [warning]
