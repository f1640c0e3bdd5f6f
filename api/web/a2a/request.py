"""The AgentBeats assessment request, parsed into an `AssessmentConfig`.

An AgentBeats runner sends one message whose text is JSON:
`{"participants": {"agent": url}, "config": {...}}`.
`config` takes the official AgentBeats tau2 green's keys (domain, task_ids, num_tasks, max_steps, user_llm,
user_llm_args) and this service's (num_trials, shard_index/num_shards, judge_llm, evaluation, ...). Unknown
keys are ignored (runners add their own), never rejected, and named in the warnings. What this green agent
cannot honour (another domain, a missing `agent` participant, text that is not JSON) is refused with a message
that says what is expected; the executor turns that message into a rejected task. Whether the named models
are offered here is the engine's to say (`EngineSettings.user_endpoint`), when the assessment is created.

Tasks are chosen in the task file's order, as tau2 and the official green choose them: `task_ids` (whatever
order they are listed in), then the first `num_tasks`, then the shard's contiguous slice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from api.settings import default_of
from api.web import strict_json
from api.web.strict_json import preview
from green_agent.config import MAX_TASK_IDS, AssessmentConfig, OneLine, TaskSelection, UserLLMArgs
from green_agent.core.one_line import escape_line
from green_agent.domains import domain_names


class TaskCatalog(Protocol):
    """What choosing tasks needs of a domain: its tasks (the task file's order) and its splits."""

    @property
    def tasks(self) -> Mapping[str, object]: ...

    @property
    def splits(self) -> Mapping[str, tuple[str, ...]]: ...


EXPECTED = (
    'Send one text part holding JSON: {"participants": {"agent": "<white agent URL>"}, '
    '"config": {"domain": "retail", "task_ids": [...] or "num_tasks": N, "num_trials": 1, "max_steps": 200, '
    '"user_llm": "openai/gpt-4.1"}}.'
)

MAX_NAMED_IGNORED = 10
"""Ignored keys named in a warning (a request may hold thousands; the rest are counted)."""


class RequestError(ValueError):
    """The request cannot be turned into an assessment; the message says what to send instead."""


class AgentBeatsConfig(BaseModel):
    """The `config` object. Keys not listed here are kept aside (`model_extra`), ignored and named."""

    model_config = ConfigDict(extra="allow")

    # Every string is the requester's and may be quoted back, stored or logged: one line of plain text each.
    domain: OneLine
    task_ids: list[OneLine] | None = Field(default=None, max_length=MAX_TASK_IDS)
    num_tasks: int | None = Field(default=None, ge=1)
    num_trials: int = Field(default=1, ge=1, le=32)
    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    """None: 200, or the customer model's own max_steps (the operator's setting)."""
    max_errors: int | None = Field(default=None, ge=1, le=10_000)
    user_llm: OneLine | None = Field(default=None, max_length=256)
    user_llm_args: dict[str, Any] | None = None
    judge_llm: OneLine | None = Field(default=None, max_length=256)
    evaluation: Literal["tau2", "action"] = "tau2"
    shard_index: int | None = Field(default=None, ge=0)
    num_shards: int | None = Field(default=None, ge=1)
    max_concurrent: int | None = Field(default=None, ge=1, le=512)
    split: OneLine | None = None
    dialect: OneLine | None = None
    agent_headers: dict[str, str] | None = Field(
        default=None,
        description="Headers for the white agent (its credentials); never shown or stored in the task.",
    )

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        # A scenario that leaves a setting empty may still pass the key, as "" or null: the default then.
        if isinstance(value, dict):
            return {
                k: v
                for k, v in value.items()
                if k == "domain" or not (v is None or (isinstance(v, str) and not v.strip()))
            }
        return value

    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, value: Any) -> Any:
        # Runners write task ids as numbers as often as strings.
        if isinstance(value, list):
            return [str(v) for v in value]
        return value

    @field_validator("evaluation", mode="before")
    @classmethod
    def _evaluation_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("domain")
    @classmethod
    def _served_domain(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in domain_names():
            served = ", ".join(f'"{d}"' for d in domain_names())
            raise ValueError(
                f"domain must be {served} (the domains this green agent runs), got {preview(value, 60)}"
            )
        return name

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


@dataclass(frozen=True)
class ParsedRequest:
    config: AssessmentConfig
    notes: list[str] = field(default_factory=list)
    """For the requester, kept with the assessment as warnings: what was ignored, clamped or sliced."""
    ignored: list[str] = field(default_factory=list)
    """The config keys this service does not take (ignored)."""


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


def _named(keys: Sequence[str]) -> str:
    shown = ", ".join(preview(k, 40) for k in keys[:MAX_NAMED_IGNORED])
    more = f" and {len(keys) - MAX_NAMED_IGNORED} more" if len(keys) > MAX_NAMED_IGNORED else ""
    return shown + more


def select_tasks(
    cfg: AgentBeatsConfig, task_ids: Sequence[str], members: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The tasks to run, in the task file's order (`task_ids`), and notes: `task_ids` if given (unknown ones
    refused), else the split's `members`; then the first `num_tasks` (all of them when it asks for more, as
    the official green does); then the shard's slice."""
    notes: list[str] = []
    if cfg.task_ids is not None:
        unknown = [t for t in dict.fromkeys(cfg.task_ids) if t not in set(task_ids)]
        if unknown:
            raise RequestError(f"config.task_ids names tasks that do not exist: {_named(unknown)}")
        wanted = set(cfg.task_ids)
    else:
        wanted = set(members)
    ids = [t for t in task_ids if t in wanted]
    if cfg.num_tasks is not None:
        if cfg.num_tasks > len(ids):
            notes.append(
                f"num_tasks {cfg.num_tasks} asks for more than the {len(ids)} tasks there are: running all"
            )
        ids = ids[: cfg.num_tasks]
    if cfg.shard_index is not None and cfg.num_shards is not None:
        ids = shard(ids, cfg.shard_index, cfg.num_shards)
        notes.append(f"shard {cfg.shard_index + 1} of {cfg.num_shards}: {len(ids)} tasks")
        if not ids:
            raise RequestError(
                f"shard {cfg.shard_index} of {cfg.num_shards} holds no tasks; use fewer shards"
            )
    return ids, notes


def parse_request(
    text: str,
    *,
    catalog: Callable[[str], TaskCatalog],
    max_json_depth: int = default_of("max_request_json_depth"),
    default_user_llm: str | None = None,
) -> ParsedRequest:
    """Turn the request text into an AssessmentConfig, with notes for the requester and the keys ignored:
    `read_request`, then `request_config` with the tasks of the domain it names (`catalog(domain)`)."""
    request = read_request(text, max_json_depth=max_json_depth)
    return request_config(request, catalog(request.config.domain), default_user_llm=default_user_llm)


def read_request(
    text: str, *, max_json_depth: int = default_of("max_request_json_depth")
) -> AgentBeatsRequest:
    """The request text, parsed strictly (api.web.strict_json, like a REST body) and checked (its domain is
    one this service runs); RequestError in one line otherwise."""
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
    return request


def request_config(
    request: AgentBeatsRequest, catalog: TaskCatalog, *, default_user_llm: str | None = None
) -> ParsedRequest:
    """The AssessmentConfig of a read request, its tasks chosen from `catalog` (the tasks of the domain it
    names), with notes; `default_user_llm` is the customer of a request that names none (None: the
    service's default)."""
    cfg = request.config
    task_ids, split_ids = list(catalog.tasks), catalog.splits
    notes: list[str] = []
    ignored = sorted(cfg.model_extra or {})
    if ignored:
        notes.append(f"config keys ignored (not used by this green agent): {_named(ignored)}")
    split = cfg.split or "base"
    if split not in split_ids:
        raise RequestError(f"config.split must be one of {', '.join(split_ids)}, got {preview(split, 60)}")
    ids, selection_notes = select_tasks(cfg, task_ids, split_ids[split])
    notes += selection_notes
    args = dict(cfg.user_llm_args or {})
    unused_args = sorted(set(args) - set(UserLLMArgs.model_fields))
    if unused_args:
        notes.append(f"user_llm_args ignored (not sent to the customer model): {_named(unused_args)}")
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
            user_model=cfg.user_llm or default_user_llm,
            user_llm_args=UserLLMArgs.model_validate({k: v for k, v in args.items() if k not in unused_args}),
            judge_model=cfg.judge_llm,
            evaluation=cfg.evaluation,
            agent_headers=cfg.agent_headers or {},
            domain=cfg.domain,
        )
    except ValidationError as exc:
        raise RequestError(f"Invalid request: {_describe(exc)}. {EXPECTED}") from None
    return ParsedRequest(config=config, notes=notes, ignored=ignored)
