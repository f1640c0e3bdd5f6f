"""Operator settings of the service, read from the environment (and an optional `.env` file).

Everything that costs money or reaches another machine on the operator's behalf (LLM endpoints, keys,
model arguments, concurrency bounds) lives here and only here: API requests can pick among the configured
user models by name, never bring their own. `Settings.engine_settings()` turns these into the engine's
`EngineSettings`; the rooms of api/ take their defaults from here (`default_of`) and build their own
settings objects from a `Settings` (`QueueSettings.from_settings`, `QuotaPolicy.from_settings`). This module
imports nothing of api/ but `api.db`, so every room may import it.

Names: `DATABASE_URL`, `TAU2_RETAIL_DATA_DIR`, `OPENAI_BASE_URL` and `OPENAI_API_KEY` are read as is (the
names other tools use); every setting can also be given as `GREEN_AGENT_<FIELD NAME>`
(e.g. `GREEN_AGENT_USER_MODELS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from api.db.engine import DB_MAX_OVERFLOW, DB_POOL_SIZE, PING_AFTER_IDLE_S, SQLITE_CACHE_KIB
from green_agent.config import (
    DEFAULT_JUDGE_MODEL,
    PROVIDER_KEYS,
    SCRIPTED_USER,
    EngineSettings,
    LLMEndpoint,
    ProviderEndpoint,
    ProviderLimits,
)
from green_agent.core.limits import AgentLimits
from green_agent.core.usage import ModelPrice
from green_agent.white_agent.egress import EgressPolicy, parse_destinations

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./green_agent.db"

LogFormat = Literal["text", "json"]


def _engine_default(name: str) -> Any:
    # The engine owns the defaults of its settings; the operator's Settings only expose them.
    return EngineSettings.model_fields[name].default


def _limit(name: str) -> Any:
    """One bound on the white agent, with the engine's default and description (core/limits.py)."""
    field = AgentLimits.model_fields[name]
    bounds = {key: getattr(m, key) for m in field.metadata for key in ("ge", "le") if hasattr(m, key)}
    return Field(default=field.default, description=field.description, **bounds)


# Driver-less URLs people copy from elsewhere, mapped to the async drivers this service ships with.
_URL_SCHEMES = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


class ModelSpec(ProviderLimits):
    """One operator-configured LLM: model name, optionally its own endpoint, fixed request arguments, and
    the provider's limits (max_in_flight, requests_per_minute, tokens_per_minute)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: SecretStr | None = None
    extra_args: dict[str, Any] = Field(default_factory=dict)
    max_steps: int | None = Field(
        default=None, ge=1, le=10_000, description=LLMEndpoint.model_fields["max_steps"].description
    )


class TenantQuotaOverride(BaseModel):
    """Per-tenant quota overrides; a field left out keeps the operator's default."""

    model_config = ConfigDict(extra="forbid")

    active_assessments: int | None = Field(default=None, ge=1)
    queued_trials: int | None = Field(default=None, ge=1)
    trials_per_assessment: int | None = Field(default=None, ge=1)
    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    turn_timeout_s: float | None = Field(default=None, gt=0, le=3600)


def normalize_database_url(url: str) -> str:
    """Return `url` with an async driver; raise ValueError naming the accepted forms otherwise."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme not in _URL_SCHEMES:
        raise ValueError(
            f"DATABASE_URL {url!r} is not supported; use sqlite+aiosqlite:///path/to/file.db "
            "or postgresql+asyncpg://user:password@host:5432/dbname"
        )
    return f"{_URL_SCHEMES[scheme]}://{rest}"


class Settings(BaseSettings):
    """Every operator setting of the service, with defaults that run with zero configuration."""

    model_config = SettingsConfigDict(
        env_prefix="GREEN_AGENT_", env_file=".env", extra="ignore", populate_by_name=True
    )

    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        validation_alias=AliasChoices("DATABASE_URL", "GREEN_AGENT_DATABASE_URL", "database_url"),
        description="sqlite+aiosqlite (default, a file created on first start) or postgresql+asyncpg URL.",
    )
    data_dir: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("TAU2_RETAIL_DATA_DIR", "GREEN_AGENT_DATA_DIR", "data_dir"),
        description="Directory with the verified tau2 retail data; None = the installed data package.",
    )
    openai_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_BASE_URL", "GREEN_AGENT_OPENAI_BASE_URL", "openai_base_url"),
        description="Default OpenAI-compatible endpoint for the user and judge models.",
    )
    openai_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("OPENAI_API_KEY", "GREEN_AGENT_OPENAI_API_KEY", "openai_api_key"),
        description="Default key for that endpoint; with it, requests may name 'openai/<model>' (unless "
        "user_models restricts them) and the judge defaults to default_judge_model.",
    )
    gemini_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GEMINI_API_KEY", "GREEN_AGENT_GEMINI_API_KEY", "gemini_api_key"),
        description="Google's key: requests may name 'gemini/<model>' on gemini_base_url.",
    )
    gemini_base_url: str = Field(
        default="https://generativelanguage.googleapis.com/v1beta/openai/",
        description="Gemini's OpenAI-compatible endpoint.",
    )
    deepseek_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("DEEPSEEK_API_KEY", "GREEN_AGENT_DEEPSEEK_API_KEY", "deepseek_api_key"),
        description="DeepSeek's key: requests may name 'deepseek/<model>' on deepseek_base_url.",
    )
    deepseek_base_url: str = Field(
        default="https://api.deepseek.com/v1", description="DeepSeek's OpenAI-compatible endpoint."
    )
    provider_models: bool = Field(
        default=_engine_default("provider_models"),
        description="Requests may name '<provider>/<model>' (openai, gemini, deepseek) on a provider key set "
        "here, as the customer (unless user_models is configured: then only those) and as the judge (unless "
        "judge_model is configured). False: only configured models.",
    )
    user_llm_max_tokens: int = Field(
        default=_engine_default("user_llm_max_tokens"),
        ge=1,
        le=10_000_000,
        description="Largest reply cap a request may give its customer model (user_llm_args max_tokens).",
    )
    default_judge_model: str = Field(
        default=DEFAULT_JUDGE_MODEL,
        description="With no judge_model configured and OPENAI_API_KEY set: the judge, on that key (tau2's "
        'judge model). "" = no judge then.',
    )
    user_models: dict[str, ModelSpec] = Field(
        default_factory=dict,
        description='User-simulator models requests may name, as JSON: {"gpt-4.1": {"model": "gpt-4.1"}}. '
        "The built-in scripted user is always available.",
    )
    default_user_model: str = Field(
        default=SCRIPTED_USER, description="User model when a request names none."
    )
    judge_model: ModelSpec | None = Field(
        default=None, description='NL-assertion judge as JSON ({"model": "gpt-4.1"}); unset = not judged.'
    )
    judge_skip_when_failed: bool = Field(
        default=_engine_default("judge_skip_when_failed"),
        description="Ask the judge only where its verdicts can change the reward (saves the calls on trials "
        "already at 0); a task the judge then fails on is left out whole (docs/scoring.md).",
    )
    judge_json_schema: bool = Field(
        default=_engine_default("judge_json_schema"),
        description="Send the judge a json_schema response_format (false for endpoints that reject it).",
    )
    max_concurrent_trials: int = Field(
        default=_engine_default("max_concurrent_trials"),
        ge=1,
        le=4096,
        description="Trials running at once, all assessments together.",
    )
    max_concurrent_per_agent: int = Field(
        default=_engine_default("max_concurrent_per_agent"),
        ge=1,
        le=4096,
        description="Trials running at once per white agent; an assessment asking for more is told so.",
    )
    turn_timeout_s: float = Field(default=_engine_default("turn_timeout_s"), gt=0, le=3600)
    llm_timeout_s: float = Field(default=_engine_default("llm_timeout_s"), gt=0, le=3600)
    llm_max_retries: int = Field(default=_engine_default("llm_max_retries"), ge=0, le=20)
    llm_retry_backoff_s: float = Field(default=_engine_default("llm_retry_backoff_s"), ge=0, le=600)
    llm_check_timeout_s: float = Field(default=_engine_default("llm_check_timeout_s"), gt=0, le=600)
    llm_outage_tolerance_s: float = Field(default=_engine_default("llm_outage_tolerance_s"), ge=0, le=604_800)
    llm_breaker_failures: int = Field(default=_engine_default("llm_breaker_failures"), ge=1, le=1000)
    conversations_per_client: int = Field(
        default=_engine_default("conversations_per_client"),
        ge=1,
        le=256,
        description="White-agent conversations sharing one HTTP client.",
    )
    scripted_user_delay_s: float = Field(
        default=_engine_default("scripted_user_delay_s"),
        ge=0,
        le=60,
        description="Pause of the scripted user before each message (simulates an LLM user; benchmarks).",
    )
    user_guidelines_file: Path | None = _engine_default("user_guidelines_file")
    user_guidelines_tools_file: Path | None = _engine_default("user_guidelines_tools_file")
    judge_rubric_file: Path | None = _engine_default("judge_rubric_file")
    normalize_ids: bool = _engine_default("normalize_ids")
    # -- scoring integrity (issue 8): bounds on the white agent, retries of trials our side failed -----------
    max_reply_bytes: int = _limit("max_reply_bytes")
    max_reply_values: int = _limit("max_reply_values")
    max_echo_bytes: int = _limit("max_echo_bytes")
    max_json_depth: int = _limit("max_json_depth")
    max_tool_calls: int = _limit("max_tool_calls")
    max_argument_bytes: int = _limit("max_argument_bytes")
    max_argument_keys: int = _limit("max_argument_keys")
    max_id_chars: int = _limit("max_id_chars")
    max_name_chars: int = _limit("max_name_chars")
    max_text_bytes: int = _limit("max_text_bytes")
    max_transcript_bytes: int = _limit("max_transcript_bytes")
    max_agent_text_bytes_per_trial: int = _limit("max_agent_text_bytes_per_trial")
    max_card_name_chars: int = _limit("max_card_name_chars")
    max_failures_per_kind: int = _limit("max_failures_per_kind")
    max_failure_value_bytes: int = _limit("max_failure_value_bytes")
    max_customer_state_bytes: int = _limit("max_customer_state_bytes")
    trial_retries: int = Field(default=_engine_default("trial_retries"), ge=0, le=10)
    trial_retry_backoff_s: float = Field(default=_engine_default("trial_retry_backoff_s"), ge=0, le=600)
    # -- cost accounting (tau2 interop, issue 12) --
    llm_prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description='Prices by model id, JSON: {"gpt-4.1-2025-04-14": {"input_per_mtok": 2.0, '
        '"output_per_mtok": 8.0}}; a model without a price has cost null.',
    )
    agent_usage_max_tokens_per_reply: int = Field(
        default=_engine_default("agent_usage_max_tokens_per_reply"), ge=0, le=10**12
    )
    agent_usage_max_cost_per_reply: float = Field(
        default=_engine_default("agent_usage_max_cost_per_reply"), ge=0, le=1e9
    )
    card_url: str | None = Field(
        default=None, description="Public URL the agent card advertises; None = http://<host>:<port>/."
    )
    host: str = "127.0.0.1"
    port: int = Field(default=9009, ge=0, le=65535)
    resume_on_start: bool = Field(default=True, description="Continue unfinished assessments at start-up.")

    # -- scale-out: queue workers, heartbeats, database outages (issue 10) --------------------------------
    worker_enabled: bool = Field(
        default=True,
        description="`serve` runs a queue worker besides the API (`serve --no-worker`: API only).",
    )
    worker_concurrency: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="Trial jobs a worker runs at once; None = max_concurrent_trials.",
    )
    worker_heartbeat_s: float = Field(
        default=5.0, gt=0, le=300, description="How often a worker records that it is alive."
    )
    worker_stalled_after_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="A worker silent this long is taken for dead: its running trials are queued again.",
    )
    # Short: procrastinate clears its wake-up flag after a fetch that found nothing, so a job queued during
    # that fetch waits for the next poll (measured: 4 workers took 53 s at 2 s polling, 31 s at 0.2 s).
    worker_poll_interval_s: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="Workers look for jobs (and for cancelled ones) at least this often.",
    )
    worker_shutdown_grace_s: float = Field(
        default=5.0,
        ge=0,
        le=3600,
        description="On shutdown, running trials get this long before going back to the queue.",
    )
    longest_first: bool = Field(
        default=_engine_default("longest_first"),
        description="Trials start longest first (by gold action count); false = tasks.json order.",
    )
    db_connect_timeout_s: float = Field(
        default=5.0, gt=0, le=120, description="Connecting to the database gives up after this long."
    )
    log_format: LogFormat = Field(
        default="text", description="`json`: one JSON object per log line, with assessment/task/trial ids."
    )
    db_pool_size: int = Field(
        default=DB_POOL_SIZE,
        ge=1,
        le=1000,
        description="PostgreSQL connections each process keeps for the service's tables.",
    )
    db_max_overflow: int = Field(
        default=DB_MAX_OVERFLOW,
        ge=0,
        le=1000,
        description="Extra connections a process may open at busy moments (each closed again once back).",
    )
    db_ping_after_idle_s: float = Field(
        default=PING_AFTER_IDLE_S,
        ge=0,
        le=3600,
        description="A pooled PostgreSQL connection (the service's or the job queue's) idle this long is "
        "checked before use (0 = always).",
    )
    sqlite_cache_kib: int = Field(
        default=SQLITE_CACHE_KIB,
        ge=64,
        le=1_048_576,
        description="Page cache of each SQLite connection, in KiB (SQLite's own default is 2000).",
    )
    malloc_arenas: int = Field(
        default=2,
        ge=0,
        le=1024,
        description="glibc malloc arenas per process (MALLOC_ARENA_MAX); 0 = the C library's default.",
    )
    gc_gen0_threshold: int = Field(
        default=10_000,
        ge=0,
        le=10_000_000,
        description="Allocations of container objects between two collections of Python's youngest "
        "generation (gc.set_threshold); 0 = Python's default (700).",
    )
    queue_pool_size: int = Field(
        default=5, ge=2, le=1000, description="PostgreSQL connections each process keeps for the job queue."
    )
    readyz_timeout_s: float = Field(
        default=1.5,
        gt=0,
        le=30,
        description="/readyz answers 503 when the database does not answer within this.",
    )
    # -- egress, fairness and agent headers (issue 9b) ---------------------------------------------------
    egress_allow: list[str] = Field(
        default_factory=list,
        description='Networks and host names agents may be reached at, as JSON: ["10.1.0.0/16", ".corp"]. '
        "Listed private destinations are reachable for every requester.",
    )
    egress_deny: list[str] = Field(
        default_factory=list,
        description="Networks and host names agents may never be reached at (wins over the allow-list).",
    )
    egress_allow_listed_only: bool = Field(
        default=False, description="Reach agents only at destinations on the allow-list."
    )
    allow_private_agents: bool = Field(
        default=True,
        description="Whether agents on loopback and private networks may be assessed (issue 9a's API keys "
        "decide per key once they exist; this is the value without keys).",
    )
    tenant_slot_share: float = Field(default=_engine_default("tenant_slot_share"), gt=0, le=1)
    assessment_slot_share: float = Field(default=_engine_default("assessment_slot_share"), gt=0, le=1)
    max_agent_headers: int = Field(default=_engine_default("max_agent_headers"), ge=0, le=64)
    max_agent_header_bytes: int = Field(default=_engine_default("max_agent_header_bytes"), ge=0, le=65_536)
    agent_card_cache_entries: int = Field(
        default=_engine_default("agent_card_cache_entries"), ge=0, le=100_000
    )
    agent_card_cache_bytes: int = Field(default=_engine_default("agent_card_cache_bytes"), ge=0, le=1 << 34)
    agent_card_cache_ttl_s: float = Field(default=_engine_default("agent_card_cache_ttl_s"), ge=0, le=86_400)
    agent_keepalive_s: float = Field(default=_engine_default("agent_keepalive_s"), ge=0, le=3_600)

    # -- Security: admission quotas and request limits (issue 9a; README "Security") ----------------------
    quota_active_assessments: int = Field(
        default=16, ge=1, le=100_000, description="Queued or running assessments per tenant (429 beyond)."
    )
    quota_queued_trials: int = Field(
        default=2_000, ge=1, le=10_000_000, description="Trials not yet finished per tenant (429 beyond)."
    )
    quota_queued_trials_total: int = Field(
        default=10_000,
        ge=1,
        le=10_000_000,
        description="Trials not yet finished in the whole service, all tenants (429 beyond).",
    )
    quota_trials_per_assessment: int = Field(
        default=1_000, ge=1, le=10_000_000, description="Tasks x trials of one assessment (422 beyond)."
    )
    quota_max_steps: int = Field(
        default=1_000,
        ge=1,
        le=10_000,
        description="Highest max_steps an assessment may ask for (422 beyond).",
    )
    quota_turn_timeout_s: float = Field(
        default=600.0, gt=0, le=3600, description="Highest turn_timeout_s an assessment may ask for (422)."
    )
    quota_retry_after_s: int = Field(
        default=30, ge=1, le=3600, description="Retry-After of a 429 when a load quota is full."
    )
    tenant_quotas: dict[str, TenantQuotaOverride] = Field(
        default_factory=dict,
        description='Per-tenant overrides, JSON: {"acme": {"active_assessments": 50, "queued_trials": 900}}',
    )
    max_request_bytes: int = Field(
        default=1_048_576, ge=1024, le=1_073_741_824, description="Largest request body (413 beyond)."
    )
    max_request_json_depth: int = Field(
        default=32, ge=4, le=512, description="Deepest nesting of JSON in a request (422 beyond)."
    )

    # -- streams and per-agent state (issue 17): what one tenant's connections and agent URLs may hold --
    max_streams_per_tenant: int = Field(
        default=16,
        ge=1,
        le=100_000,
        description="Event streams (REST events, /ui/live, A2A streaming) one tenant may hold open per "
        "process (429 beyond).",
    )
    max_streams_total: int = Field(
        default=512,
        ge=1,
        le=1_000_000,
        description="Event streams open per process, all tenants (429 beyond).",
    )
    stream_send_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="A stream whose reader takes no event for this long (it stopped reading) is dropped.",
    )
    stream_key_recheck_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="An open stream checks its API key again this often and ends once it is revoked.",
    )
    stream_queue_events: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Events one subscriber (a REST stream, an A2A task) may have waiting; past it: `lagged`.",
    )
    ui_live_queue_events: int = Field(
        default=256,
        ge=1,
        le=1_000_000,
        description="Finished trials and status changes a /ui/live stream may have waiting per assessment.",
    )
    metrics_agent_hosts: int = Field(
        default=64,
        ge=1,
        le=100_000,
        description="Agent hosts with a turn-latency series in /metrics; the least recently seen goes first.",
    )
    open_assessments: int = Field(
        default=256,
        ge=1,
        le=100_000,
        description="Assessments kept open (agent card, user simulator, bounds) per process; past it the "
        "least recently used is closed, and opened again when one of its trials runs here.",
    )

    # -- progress relay between processes (PostgreSQL NOTIFY; api/runtime/events.py) ------------------------
    relay_queue_events: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Events waiting to go to the other processes; past it new ones are dropped (counted, "
        "logged): the stored trials and statuses stay right, a stream elsewhere misses them.",
    )
    relay_batch: int = Field(
        default=200, ge=1, le=10_000, description="Most events one NOTIFY round trip carries."
    )
    relay_max_payload_bytes: int = Field(
        default=7_480,
        ge=1_024,
        le=7_480,
        description="Relayed events stay below this many bytes: a turn that would reach it is relayed with "
        "its text cut (the whole transcript is under /trials once stored). PostgreSQL refuses NOTIFY "
        "payloads of 8000 bytes or more.",
    )
    relay_keepalive_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="The relay's listener checks its connection with a query after this long without a "
        "notification.",
    )
    relay_stop_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="At shutdown the relay waits at most this long for its listener and sender to stop.",
    )
    relay_interest_refresh_s: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Each process re-announces the assessments it has subscribers for this often; an "
        "announcement not renewed within three times this is forgotten (a process that died silently).",
    )
    relay_remote_interests: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Assessments followed from other processes that a relay remembers; past it, "
        "announcements for new ones are ignored (their turns stay in the process that runs them).",
    )

    # -- the AgentBeats door (A2A; docs/agentbeats.md) --
    a2a_heartbeat_s: float = Field(
        default=30.0,
        gt=0,
        le=240,
        description="While trials run, an A2A task gets a working status update at least this often (the "
        "AgentBeats gateway and its proxy give up after 300 s without data).",
    )
    a2a_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Times an A2A assessment that finished with trials missing (excluded, never run) is "
        "retried in place before its task ends failed: a leaderboard only ever gets a complete Result.",
    )

    # -- web UI (/ui) --
    ui_page_size: int = Field(
        default=50,
        ge=1,
        le=200,
        description="Rows per page of the web UI's assessment list, and the most assessments one "
        "live-progress stream follows.",
    )

    @field_validator(
        "openai_base_url", "openai_api_key", "gemini_api_key", "deepseek_api_key", "card_url", mode="before"
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        # A runner passes every key it may hand over, "" for those it has none of (the Amber manifest's
        # defaults): "" means not set.
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        return normalize_database_url(value)

    @field_validator("user_models", mode="before")
    @classmethod
    def _model_shorthand(cls, value: Any) -> Any:
        # {"name": "model-id"} is accepted as shorthand for {"name": {"model": "model-id"}}.
        if isinstance(value, dict):
            return {k: {"model": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("judge_model", mode="before")
    @classmethod
    def _judge_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"model": value} if value.strip() else None
        return value

    @field_validator("card_url")
    @classmethod
    def _card_url_http(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"card_url must be an http:// or https:// URL with a host, got {value!r}")
        return value

    @field_validator("egress_allow", "egress_deny")
    @classmethod
    def _destinations(cls, value: list[str]) -> list[str]:
        parse_destinations(value)  # raises ValueError naming the bad entry
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        for name in self.user_models:
            if not name.strip() or name == SCRIPTED_USER:
                raise ValueError(
                    f"user_models has an invalid name {name!r}: "
                    f"names must be non-empty and not {SCRIPTED_USER!r}"
                )
        if self.default_user_model != SCRIPTED_USER and self.default_user_model not in self.user_models:
            known = ", ".join([SCRIPTED_USER, *self.user_models])
            raise ValueError(
                f"default_user_model {self.default_user_model!r} is not configured; use one of: {known}"
            )
        if self.worker_stalled_after_s < 2 * self.worker_heartbeat_s:
            raise ValueError(
                "worker_stalled_after_s must be at least twice worker_heartbeat_s, or live workers would be "
                "taken for dead between two heartbeats"
            )
        if self.max_concurrent_per_agent > self.max_concurrent_trials:
            raise ValueError(
                "max_concurrent_per_agent cannot exceed max_concurrent_trials; "
                "lower it or raise the global bound"
            )
        return self

    def database_url_for_display(self) -> str:
        """The database URL with any password masked, for logs and terminal output."""
        return make_url(self.database_url).render_as_string(hide_password=True)

    def public_card_url(self, host: str | None = None, port: int | None = None) -> str:
        """The URL the agent card advertises: the configured one, else this server's own address."""
        if self.card_url:
            return self.card_url.rstrip("/") + "/"
        host = host or self.host
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        return f"http://{shown}:{port if port is not None else self.port}/"

    def user_model_names(self) -> list[str]:
        return [SCRIPTED_USER, *self.user_models]

    def _endpoint(self, spec: ModelSpec) -> LLMEndpoint:
        key = spec.api_key or self.openai_api_key
        return LLMEndpoint(
            model=spec.model,
            base_url=spec.base_url or self.openai_base_url,
            api_key=key.get_secret_value() if key else None,
            extra_args=dict(spec.extra_args),
            max_steps=spec.max_steps,
            **spec.model_dump(include=set(ProviderLimits.model_fields)),
        )

    def egress_policy(self, *, allow_private: bool | None = None) -> EgressPolicy:
        """The operator's egress rules; `allow_private` None = the operator's `allow_private_agents`."""
        return EgressPolicy.from_lists(
            allow=self.egress_allow,
            deny=self.egress_deny,
            allow_private=self.allow_private_agents if allow_private is None else allow_private,
            allow_listed_only=self.egress_allow_listed_only,
        )

    def providers(self) -> dict[str, ProviderEndpoint]:
        """The providers whose key is set, with their OpenAI-compatible endpoints."""
        found = {
            "openai": (self.openai_api_key, self.openai_base_url),
            "gemini": (self.gemini_api_key, self.gemini_base_url),
            "deepseek": (self.deepseek_api_key, self.deepseek_base_url),
        }
        return {
            name: ProviderEndpoint(base_url=url, api_key=key.get_secret_value(), env_var=PROVIDER_KEYS[name])
            for name, (key, url) in found.items()
            if key is not None
        }

    def effective_judge(self) -> tuple[ModelSpec | None, bool]:
        """The judge (None: none) and whether it is the default one on OPENAI_API_KEY (none configured)."""
        if self.judge_model is not None:
            return self.judge_model, False
        if self.openai_api_key is not None and self.default_judge_model.strip():
            return ModelSpec(model=self.default_judge_model.strip()), True
        return None, False

    def engine_settings(self) -> EngineSettings:
        judge, judge_from_key = self.effective_judge()
        return EngineSettings(
            user_models={name: self._endpoint(spec) for name, spec in self.user_models.items()},
            default_user_model=self.default_user_model,
            judge=self._endpoint(judge) if judge else None,
            judge_from_key=judge_from_key,
            data_dirs={"retail": self.data_dir} if self.data_dir is not None else {},
            providers=self.providers(),
            provider_models=self.provider_models,
            user_llm_max_tokens=self.user_llm_max_tokens,
            judge_json_schema=self.judge_json_schema,
            judge_skip_when_failed=self.judge_skip_when_failed,
            max_concurrent_trials=self.max_concurrent_trials,
            max_concurrent_per_agent=self.max_concurrent_per_agent,
            turn_timeout_s=self.turn_timeout_s,
            llm_timeout_s=self.llm_timeout_s,
            llm_max_retries=self.llm_max_retries,
            llm_retry_backoff_s=self.llm_retry_backoff_s,
            llm_check_timeout_s=self.llm_check_timeout_s,
            llm_outage_tolerance_s=self.llm_outage_tolerance_s,
            llm_breaker_failures=self.llm_breaker_failures,
            conversations_per_client=self.conversations_per_client,
            scripted_user_delay_s=self.scripted_user_delay_s,
            user_guidelines_file=self.user_guidelines_file,
            user_guidelines_tools_file=self.user_guidelines_tools_file,
            judge_rubric_file=self.judge_rubric_file,
            normalize_ids=self.normalize_ids,
            longest_first=self.longest_first,
            limits=AgentLimits(**{name: getattr(self, name) for name in AgentLimits.model_fields}),
            trial_retries=self.trial_retries,
            trial_retry_backoff_s=self.trial_retry_backoff_s,
            tenant_slot_share=self.tenant_slot_share,
            assessment_slot_share=self.assessment_slot_share,
            max_agent_headers=self.max_agent_headers,
            max_agent_header_bytes=self.max_agent_header_bytes,
            agent_card_cache_entries=self.agent_card_cache_entries,
            agent_card_cache_bytes=self.agent_card_cache_bytes,
            agent_card_cache_ttl_s=self.agent_card_cache_ttl_s,
            agent_keepalive_s=self.agent_keepalive_s,
            llm_prices=dict(self.llm_prices),
            agent_usage_max_tokens_per_reply=self.agent_usage_max_tokens_per_reply,
            agent_usage_max_cost_per_reply=self.agent_usage_max_cost_per_reply,
        )


def default_of(name: str) -> Any:
    """The default of one operator setting, for the rooms that need it without reading the environment (a
    bound's default is written here once; the rooms reference it)."""
    return Settings.model_fields[name].default
