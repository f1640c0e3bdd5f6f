"""The two databases of the mock domain, in upstream's dump shape.

* The agent's (``MockDB``): ``tasks`` (id -> {task_id, title, description, status}) and ``users`` (id ->
  {user_id, name, tasks}). The root takes no other key; an entity drops keys it does not know.
* The customer's (``MockUserDB``): ``notifications`` (id -> {notification_id, message, status, task_id}),
  no other key anywhere.

Entities are plain dicts in upstream's field order (so a tool result is `json.dumps` of one). Upstream's hash
is taken over ``dump()``. The class names matter: a toolkit pointed at the other side's DB (upstream's
initialization-data quirk) fails with Python's own "'MockDB' object has no attribute 'notifications'".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from domain_kit.hashing import upstream_hash


class RecordError(ValueError):
    """Data that does not fit the model (upstream: a pydantic validation error)."""


def _string(model: str, field: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise RecordError(f"1 validation error for {model}: {field}: Input should be a valid string")
    return value


def _fields(model: str, raw: Any, required: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise RecordError(f"1 validation error for {model}: Input should be a valid dictionary")
    missing = [name for name in required if name not in raw]
    if missing:
        raise RecordError(f"1 validation error for {model}: {missing[0]}: Field required")
    return raw


def task_record(raw: Any) -> dict[str, Any]:
    """A Task: title and ids are strings, description a string or null (default null); ``status`` is
    one of pending/completed when validated (an update may later store anything, as upstream's does)."""
    fields = _fields("Task", raw, ("task_id", "title", "status"))
    if fields["status"] not in ("pending", "completed"):
        raise RecordError("1 validation error for Task: status: Input should be 'pending' or 'completed'")
    return {
        "task_id": _string("Task", "task_id", fields["task_id"]),
        "title": _string("Task", "title", fields["title"]),
        "description": _string("Task", "description", fields.get("description"), optional=True),
        "status": fields["status"],
    }


def user_record(raw: Any) -> dict[str, Any]:
    fields = _fields("User", raw, ("user_id", "name", "tasks"))
    tasks = fields["tasks"]
    if not isinstance(tasks, list):
        raise RecordError("1 validation error for User: tasks: Input should be a valid list")
    return {
        "user_id": _string("User", "user_id", fields["user_id"]),
        "name": _string("User", "name", fields["name"]),
        "tasks": [_string("User", "tasks", item) for item in tasks],
    }


def notification_record(raw: Any) -> dict[str, Any]:
    fields = _fields("Notification", raw, ("notification_id", "message"))
    extra = set(fields) - {"notification_id", "message", "status", "task_id"}
    if extra:
        raise RecordError(
            f"1 validation error for Notification: {sorted(extra)[0]}: Extra inputs are not permitted"
        )
    status = fields.get("status", "unread")
    if status not in ("unread", "read"):
        raise RecordError("1 validation error for Notification: status: Input should be 'unread' or 'read'")
    return {
        "notification_id": _string("Notification", "notification_id", fields["notification_id"]),
        "message": _string("Notification", "message", fields["message"]),
        "status": status,
        "task_id": _string("Notification", "task_id", fields.get("task_id"), optional=True),
    }


def _table(raw: Mapping[str, Any], key: str, record: Any, model: str) -> dict[str, dict[str, Any]]:
    table = raw[key]
    if not isinstance(table, Mapping):
        raise RecordError(f"1 validation error for {model}: {key}: Input should be a valid dictionary")
    return {str(entity_id): record(entity) for entity_id, entity in table.items()}


def _root(model: str, raw: Any, allowed: tuple[str, ...], required: tuple[str, ...]) -> Mapping[str, Any]:
    fields = _fields(model, raw, required)
    extra = set(fields) - set(allowed)
    if extra:
        raise RecordError(
            f"1 validation error for {model}: {sorted(extra)[0]}: Extra inputs are not permitted"
        )
    return fields


class MockDB:
    """The agent's DB."""

    __slots__ = ("tasks", "users")

    def __init__(self, tasks: dict[str, dict[str, Any]], users: dict[str, dict[str, Any]]) -> None:
        self.tasks = tasks
        self.users = users

    @classmethod
    def validate(cls, raw: Any) -> MockDB:
        fields = _root("MockDB", raw, ("tasks", "users"), ("tasks", "users"))
        return cls(
            _table(fields, "tasks", task_record, "MockDB"), _table(fields, "users", user_record, "MockDB")
        )

    def dump(self) -> dict[str, Any]:
        return {"tasks": copy.deepcopy(self.tasks), "users": copy.deepcopy(self.users)}

    def copy(self) -> MockDB:
        return MockDB(copy.deepcopy(self.tasks), copy.deepcopy(self.users))

    def hash(self) -> str:
        return upstream_hash({"tasks": self.tasks, "users": self.users})


class MockUserDB:
    """The customer's DB: a notification inbox."""

    __slots__ = ("notifications",)

    def __init__(self, notifications: dict[str, dict[str, Any]]) -> None:
        self.notifications = notifications

    @classmethod
    def validate(cls, raw: Any) -> MockUserDB:
        fields = _root("MockUserDB", raw, ("notifications",), ())
        if "notifications" not in fields:
            return cls({})
        return cls(_table(fields, "notifications", notification_record, "MockUserDB"))

    def dump(self) -> dict[str, Any]:
        return {"notifications": copy.deepcopy(self.notifications)}

    def copy(self) -> MockUserDB:
        return MockUserDB(copy.deepcopy(self.notifications))

    def hash(self) -> str:
        return upstream_hash({"notifications": self.notifications})


Database = MockDB | MockUserDB


def merged(base: Any, update: Any) -> Any:
    """Upstream's deep update (addict): mappings are merged key by key, everything else (lists included)
    is replaced."""
    if isinstance(base, Mapping) and isinstance(update, Mapping):
        result = dict(base)
        for key, value in update.items():
            result[key] = merged(result[key], value) if key in result else copy.deepcopy(value)
        return result
    return copy.deepcopy(update)
