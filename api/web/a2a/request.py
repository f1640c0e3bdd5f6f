"""The AgentBeats assessment request, parsed into an `AssessmentConfig`.

An AgentBeats runner sends one message whose text is JSON:
`{"participants": {"agent": url}, "config": {...}}`.
Unknown config keys are ignored (runners add their own), never rejected. What this green agent cannot honour
(another domain, a missing `agent` participant, text that is not JSON) is refused with a message that says
what is expected; the executor turns that message into a rejected task.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from api.settings import default_of
from api.web import strict_json
from api.web.strict_json import preview
from green_agent.config import MAX_TASK_IDS, AssessmentConfig, OneLine, TaskSelection
from green_agent.core.one_line import escape_line

EXPECTED = (
    'Send one text part holding JSON: {"participants": {"agent": "<white agent URL>"}, '
    '"config": {"domain": "retail", "task_ids": [...] or "num_tasks": N, "num_trials": 1, "max_steps": 200}}.'
)


class RequestError(ValueError):
    """The request cannot be turned into an assessment; the message says what to send instead."""


class AgentBeatsConfig(BaseModel):
    """The `config` object; keys not listed here are ignored on purpose."""

    model_config = ConfigDict(extra="ignore")

    # Every string is the requester's and may be quoted back, stored or logged: one line of plain text each.
    domain: OneLine
    task_ids: list[OneLine] | None = Field(default=None, max_length=MAX_TASK_IDS)
    num_tasks: int | None = Field(default=None, ge=1)
    num_trials: int = Field(default=1, ge=1, le=32)
    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    """None: 200, or the customer model's own max_steps (the operator's setting)."""
    max_errors: int | None = Field(default=None, ge=1, le=10_000)
    user_llm: OneLine | None = None
    shard_index: int | None = Field(default=None, ge=0)
    num_shards: int | None = Field(default=None, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1, le=512)
    split: OneLine | None = None
    dialect: OneLine | None = None
    agent_headers: dict[str, str] | None = Field(
        default=None,
        description="Headers for the white agent (its credentials); never shown or stored in the task.",
    )

    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, value: Any) -> Any:
        # Runners write task ids as numbers as often as strings.
        if isinstance(value, list):
            return [str(v) for v in value]
        return value

    @field_validator("domain")
    @classmethod
    def _retail_only(cls, value: str) -> str:
        if value.strip().lower() != "retail":
            raise ValueError(
                f'domain must be "retail" (this green agent runs tau2 retail only), got {preview(value, 60)}'
            )
        return "retail"

    @model_validator(mode="after")
    def _shards(self) -> AgentBeatsConfig:
        if (self.shard_index is None) != (self.num_shards is None):
            raise ValueError("give shard_index and num_shards together")
        if (
            self.shard_index is not None
            and self.num_shards is not None
            and self.shard_index >= self.num_shards
        ):
            raise ValueError(
                f"shard_index must be below num_shards ({self.num_shards}), got {self.shard_index}"
            )
        return self


class AgentBeatsRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    participants: dict[OneLine, OneLine]
    config: AgentBeatsConfig

    @field_validator("participants")
    @classmethod
    def _agent_role(cls, value: dict[str, str]) -> dict[str, str]:
        if "agent" not in value:
            roles = ", ".join(sorted(value)) or "none"
            raise ValueError(f'participants must name the role "agent" (the agent under test); got {roles}')
        return value


REDACTED = "[redacted]"


AGENT_HEADERS_KEY = "agent_headers"
UNREADABLE_REDACTED = "[request not kept: it mentions agent_headers but could not be read to redact them]"


def redact_text(text: str) -> str | None:
    """`text` as an A2A task's history may keep it (tasks/get returns it): the value of every `agent_headers`
    key at any depth replaced (names kept, values not), duplicate keys resolved (the JSON is written anew, so
    a value an earlier duplicate held is not kept either). Text that cannot be parsed (not JSON, too deep)
    but may name the field is replaced whole. None when there is nothing to redact."""
    found = False

    def redacting(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        fields: dict[str, Any] = {}
        for key, value in pairs:
            if key.strip().lower() == AGENT_HEADERS_KEY:
                found = True
                value = {str(name): REDACTED for name in value} if isinstance(value, dict) else REDACTED
            fields[key] = value
        return fields

    try:
        payload = json.loads(text, object_pairs_hook=redacting)
    except (ValueError, RecursionError):
        # "\u" too: an escaped key (\u0061gent_headers) names the field as well once parsed.
        return UNREADABLE_REDACTED if AGENT_HEADERS_KEY in text.lower() or "\\u" in text else None
    return json.dumps(payload) if found else None


def shard(task_ids: list[str], index: int, count: int) -> list[str]:
    """Contiguous, balanced slice `index` of `count` (sizes differ by at most one)."""
    n = len(task_ids)
    return task_ids[index * n // count : (index + 1) * n // count]


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        # A location may name one of the requester's keys: escaped, as the message is shown as text.
        where = escape_line(".".join(str(p) for p in item["loc"])) or "request"
        parts.append(f"{where}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def parse_request(
    text: str,
    *,
    split_ids: dict[str, tuple[str, ...]],
    user_models: list[str],
    max_json_depth: int = default_of("max_request_json_depth"),
) -> tuple[AssessmentConfig, list[str]]:
    """Turn the request text into an AssessmentConfig plus notes for the requester (what was ignored/mapped).

    `split_ids` are the task ids of each split (to apply sharding); `user_models` the configured names. The
    JSON is parsed strictly (api.web.strict_json), like a REST body."""
    if not text.strip():
        raise RequestError(f"The request is empty. {EXPECTED}")
    try:
        payload = strict_json.loads(text, max_depth=max_json_depth)
    except strict_json.UnsafeJSON as exc:
        raise RequestError(f"The request is not JSON this service accepts: {exc}. {EXPECTED}") from None
    if not isinstance(payload, dict):
        raise RequestError(f"The request must be a JSON object. {EXPECTED}")
    try:
        request = AgentBeatsRequest.model_validate(payload)
    except ValidationError as exc:
        raise RequestError(f"Invalid request: {_describe(exc)}. {EXPECTED}") from None

    cfg = request.config
    notes: list[str] = []
    split = cfg.split or "base"
    if split not in split_ids:
        raise RequestError(f"config.split must be one of {', '.join(split_ids)}, got {preview(split, 60)}")
    if cfg.task_ids is not None:
        ids = list(cfg.task_ids)
        if cfg.num_tasks is not None:
            ids = ids[: cfg.num_tasks]
    else:
        ids = list(split_ids[split])[: cfg.num_tasks]
    if cfg.shard_index is not None and cfg.num_shards is not None:
        ids = shard(ids, cfg.shard_index, cfg.num_shards)
        notes.append(f"shard {cfg.shard_index + 1} of {cfg.num_shards}: {len(ids)} tasks")
        if not ids:
            raise RequestError(
                f"shard {cfg.shard_index} of {cfg.num_shards} holds no tasks; use fewer shards"
            )
    user_model = None
    if cfg.user_llm is not None:
        if cfg.user_llm in user_models:
            user_model = cfg.user_llm
        else:
            notes.append(
                f"user_llm {preview(cfg.user_llm, 60)} is not configured here; using the operator's default "
                f"user model (configured: {', '.join(user_models)})"
            )
    dialect = cfg.dialect if cfg.dialect in ("auto", "text", "structured") else "auto"
    try:
        config = AssessmentConfig(
            agent_url=request.participants["agent"],
            tasks=TaskSelection(task_ids=ids),
            trials=cfg.num_trials,
            **({"max_steps": cfg.max_steps} if cfg.max_steps is not None else {}),
            max_errors=cfg.max_errors or 10,
            concurrency=cfg.max_concurrent or 8,
            dialect=dialect,
            user_model=user_model,
            agent_headers=cfg.agent_headers or {},
        )
    except ValidationError as exc:
        raise RequestError(f"Invalid request: {_describe(exc)}. {EXPECTED}") from None
    return config, notes
