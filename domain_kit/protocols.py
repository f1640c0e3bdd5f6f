"""What the engine needs of a domain: the two Protocols every domain package implements.

A domain is pure: it loads its verified data once per process and answers from memory. The engine reaches
it only through its registry (green_agent/domains.py), by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .calls import Requestor, ToolCall, ToolResult
from .outcomes import EnvironmentCheck, GoldOutcome
from .tasks import Task


class DomainEnvironment(Protocol):
    """One trial's world: the agent's DB (and, in dual control, the customer's device) and the tools."""

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult:
        """Run one tool call for `requestor`; never raises (errors are results). A tool of the other side is
        unknown to the caller."""
        ...

    def db_hash(self, known: object | None = None) -> str:
        """Upstream's hash of the agent-side DB (`known`: a gold fingerprint that may spare a full hash)."""
        ...

    def user_db_hash(self) -> str | None:
        """Upstream's hash of the customer-side DB; None where the customer has none."""
        ...

    def assertion(self, func_name: str, arguments: Mapping[str, Any], env_type: str) -> bool:
        """Run one of the domain's env assertion functions on one side ("assistant" or "user")."""
        ...


class DomainData(Protocol):
    """A domain's parsed data, shared read-only by every trial of a process."""

    # Read-only members (properties, so that a domain may hold them as dicts, tuples or class attributes).
    @property
    def name(self) -> str:
        """The name requests use: "retail", "airline", "telecom", "mock"."""
        ...

    @property
    def policy(self) -> str:
        """The agent's policy, composed as upstream composes it."""
        ...

    @property
    def tasks(self) -> Mapping[str, Task]:
        """Every task, in the task file's order."""
        ...

    @property
    def splits(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def default_split(self) -> str: ...

    @property
    def tool_schemas(self) -> Sequence[Mapping[str, Any]]:
        """The agent's tools in OpenAI function format, upstream's order."""
        ...

    @property
    def user_tool_schemas(self) -> Sequence[Mapping[str, Any]]:
        """The customer's tools; empty where the customer has none."""
        ...

    @property
    def write_tools(self) -> frozenset[str]:
        """Agent tools that may change state."""
        ...

    @property
    def read_tools(self) -> frozenset[str]:
        """Agent tools that only read (generic ones, like calculate or transfer, are in neither set)."""
        ...

    @property
    def source_description(self) -> str:
        """Where the files were found, for logs and reports."""
        ...

    def task(self, task_id: str) -> Task: ...

    def task_document(self, task_id: str) -> dict[str, Any]: ...

    def split(self, name: str) -> tuple[str, ...]: ...

    def new_environment(
        self, task_id: str | None = None, *, normalize_ids: bool = False
    ) -> DomainEnvironment: ...

    def gold(self, task_id: str) -> GoldOutcome: ...

    def initial_db_hash(self) -> str: ...

    def check_environment(
        self, task_id: str, live: DomainEnvironment, calls: Sequence[ToolCall]
    ) -> EnvironmentCheck:
        """What upstream's environment evaluator finds for a trajectory whose calls (both parties, in order)
        are `calls` and whose live environment is `live`."""
        ...
