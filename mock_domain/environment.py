"""One trial's mock world: the agent's task list, the customer's notification inbox, and the tools of each.

``call`` is the only way in for both parties and never raises: a failure is upstream's ``Error: ...`` result,
a name not offered to the caller is ``Tool '<name>' not found.`` (so a white agent naming a customer tool
gains nothing). The two DBs never interact (upstream's mock has no sync step).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from domain_kit.calls import Requestor, ToolCall, ToolResult
from domain_kit.tasks import InitialState, SetupCall

from .records import Database, MockDB, MockUserDB, merged
from .tools import MockTools, MockUserTools

_ENCODER = json.JSONEncoder(default=str)


def render(value: Any) -> str:
    """Upstream's ToolMessage content: a string as is, anything else (a record or a list of records)
    as ``json.dumps(..., default=str)``."""
    return value if isinstance(value, str) else _ENCODER.encode(value)


class MockEnvironment:
    """The DBs and toolkits of one trial. `data.new_environment(task_id)` makes one with the task's
    initial state applied."""

    __slots__ = ("_tools", "_user_tools")

    def __init__(self, db: MockDB, user_db: MockUserDB) -> None:
        self._tools = MockTools(db)
        self._user_tools = MockUserTools(user_db)

    def _toolkit(self, side: str) -> MockTools | MockUserTools:
        if side == "assistant":
            return self._tools
        if side == "user":
            return self._user_tools
        raise ValueError(f"Invalid environment type: {side}")

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult:
        """Run one tool call for `requestor` on its own side; never raises."""
        try:
            toolkit = self._toolkit(requestor)
            if name not in toolkit.TOOLS:
                raise ValueError(f"Tool '{name}' not found.")
            if arguments is None:
                arguments = {}
            if not isinstance(arguments, Mapping):
                raise TypeError(f"tool arguments must be a JSON object, not {type(arguments).__name__}")
            return ToolResult(render(getattr(toolkit, name)(**arguments)), False)
        except Exception as exc:
            return ToolResult(f"Error: {exc}", True)

    def call_tool(self, call: ToolCall) -> ToolResult:
        return self.call(call.name, call.arguments, call.requestor)

    def db_hash(self, known: object | None = None) -> str:
        """Upstream's hash of the agent's DB (tiny: `known` is not needed)."""
        db: Database = self._tools.db
        return db.hash()

    def user_db_hash(self) -> str | None:
        db: Database = self._user_tools.db
        return db.hash()

    def _function(self, side: str, func_name: str) -> Any:
        toolkit = self._toolkit(side)
        if func_name not in (*toolkit.TOOLS, *toolkit.HIDDEN):
            raise ValueError(f"Function {func_name} not found in {side} tools")
        return getattr(toolkit, func_name)

    def assertion(self, func_name: str, arguments: Mapping[str, Any], env_type: str) -> bool:
        """Run one of upstream's assertion functions on one side and return what it returns (raises what it
        raises, e.g. `Task task_2 not found`)."""
        result = self._function(env_type, func_name)(**arguments)
        if not isinstance(result, bool):
            raise ValueError(f"Function {func_name} returned {type(result)} instead of bool")
        return result

    def setup(self, call: SetupCall) -> Any:
        """One initialization action: a tool or a hidden function of one side; raises on failure."""
        return self._function(call.env_type, call.func_name)(**call.arguments)

    def apply_initial_state(self, state: InitialState) -> None:
        """Upstream's set_state, in its order: initialization data, initialization actions, the message
        history's writes. Raises when the task's data does not apply (a broken task, not a trial's fault)."""
        data = state.initialization_data or {}
        if data.get("agent_data") is not None:
            self._tools.db = _updated(self._tools.db, data["agent_data"])
            # Upstream's quirk, kept for hash parity: the customer's toolkit now acts on the agent's DB
            # (its tools then fail, and its DB hash is the agent's).
            self._user_tools.db = self._tools.db
        if data.get("user_data") is not None:
            self._user_tools.db = _updated(self._user_tools.db, data["user_data"])
            self._tools.db = self._user_tools.db
        for action in state.initialization_actions:
            self.setup(action)
        for call, recorded in history_calls(state.message_history):
            if not is_mutating(call.name):
                continue
            result = self.call_tool(call)
            if _parsed(result.content) != _parsed(recorded):
                raise ValueError(
                    f"replaying the task's message history: {call.name} returned {result.content!r}, the "
                    f"history holds {recorded!r}"
                )

    def replay(self, calls: Iterable[ToolCall]) -> None:
        """Upstream's trajectory replay: every call of either party to a state-changing tool, in order, for
        its requestor (a call to a tool of the other side fails as it did live); reads, transfers and names
        no toolkit has change nothing and are skipped."""
        for call in calls:
            if is_mutating(call.name):
                self.call_tool(call)

    def dump(self) -> dict[str, Any]:
        """Both DBs in upstream's dump shape (deep copies), for reports and debugging."""
        return {"agent": self._tools.db.dump(), "user": self._user_tools.db.dump()}


def is_mutating(name: str) -> bool:
    """Upstream's classification: a name is looked up in the agent's toolkit first, then the customer's."""
    if name in MockTools.TOOLS:
        return name in MockTools.MUTATING
    return name in MockUserTools.MUTATING


def _updated(db: Database, update: Any) -> Database:
    return type(db).validate(merged(db.dump(), update))


def _parsed(content: Any) -> Any:
    if not isinstance(content, str):
        return content
    try:
        return json.loads(content)
    except json.JSONDecodeError:
        return content


def history_calls(messages: Sequence[Mapping[str, Any]]) -> list[tuple[ToolCall, Any]]:
    """Each tool call of a message history with the content of the tool message that answers it (upstream
    pairs them in order and requires matching ids)."""
    pending = list(messages)
    pairs: list[tuple[ToolCall, Any]] = []
    index = 0
    while index < len(pending):
        message = pending[index]
        index += 1
        if message.get("role") == "tool":
            raise ValueError("message history: a tool message that follows no tool call")
        for raw in message.get("tool_calls") or ():
            if index >= len(pending) or pending[index].get("role") != "tool":
                raise ValueError(f"message history: no tool message answers call {raw.get('id')!r}")
            answer = pending[index]
            index += 1
            if answer.get("id") != raw.get("id"):
                raise ValueError(
                    f"message history: tool call id {raw.get('id')!r} answered by {answer.get('id')!r}"
                )
            requestor: Requestor = "user" if raw.get("requestor") == "user" else "assistant"
            pairs.append(
                (ToolCall(raw["name"], dict(raw.get("arguments") or {}), requestor), answer.get("content"))
            )
    return pairs
