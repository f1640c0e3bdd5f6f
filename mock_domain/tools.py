"""The mock domain's functions, one toolkit per side, as upstream's behave.

Each toolkit holds the DB it acts on (``db``). Tools are what an LLM is offered (``TOOLS``); the hidden
functions (setup and assertion helpers) are reachable only through task data. Arguments arrive as keyword
arguments with no validation of their own, so a missing or unexpected one fails with Python's message
(``MockTools.create_task() missing 1 required positional argument: 'title'``), as upstream's does; the class
names are upstream's for that reason.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .records import Database, MockDB, MockUserDB, notification_record, task_record


class MockTools:
    """The agent's side: a task list."""

    TOOLS: ClassVar[tuple[str, ...]] = (
        "create_task",
        "get_users",
        "update_task_status",
        "transfer_to_human_agents",
    )
    MUTATING: ClassVar[frozenset[str]] = frozenset({"create_task", "update_task_status"})
    HIDDEN: ClassVar[tuple[str, ...]] = ("assert_number_of_tasks", "assert_task_status")

    def __init__(self, db: Database) -> None:
        self.db: Any = db  # a MockDB, unless upstream's initialization-data quirk points it at the other one

    def create_task(self, user_id: str, title: str, description: str | None = None) -> dict[str, Any]:
        """New id ``task_<count + 1>`` (overwrites an entry of that id, as upstream), pending, appended to
        the user's tasks."""
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        task_id = f"task_{len(self.db.tasks) + 1}"
        task = task_record(
            {"task_id": task_id, "title": title, "description": description, "status": "pending"}
        )
        self.db.tasks[task_id] = task
        self.db.users[user_id]["tasks"].append(task_id)
        return task

    def get_users(self) -> list[dict[str, Any]]:
        return list(self.db.users.values())

    def update_task_status(self, task_id: str, status: str) -> dict[str, Any]:
        """Stores whatever status it is given: upstream's schema names two, nothing enforces them."""
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        task: dict[str, Any] = self.db.tasks[task_id]
        task["status"] = status
        return task

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return bool(len(self.db.users[user_id]["tasks"]) == expected_number)

    def assert_task_status(self, task_id: str, expected_status: str) -> bool:
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        return bool(self.db.tasks[task_id]["status"] == expected_status)


class MockUserTools:
    """The customer's side: a notification inbox."""

    TOOLS: ClassVar[tuple[str, ...]] = ("check_notifications", "dismiss_notification")
    MUTATING: ClassVar[frozenset[str]] = frozenset({"dismiss_notification"})
    HIDDEN: ClassVar[tuple[str, ...]] = ("add_notification", "assert_notification_status")

    def __init__(self, db: Database) -> None:
        self.db: Any = db

    def check_notifications(self) -> list[dict[str, Any]]:
        return list(self.db.notifications.values())

    def dismiss_notification(self, notification_id: str) -> str:
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        self.db.notifications[notification_id]["status"] = "read"
        return f"Notification {notification_id} dismissed"

    def add_notification(
        self, notification_id: str, message: str, task_id: str | None = None
    ) -> dict[str, Any]:
        """Insert (or replace) an unread notification."""
        notification = notification_record(
            {"notification_id": notification_id, "message": message, "task_id": task_id}
        )
        self.db.notifications[notification_id] = notification
        return notification

    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        return bool(self.db.notifications[notification_id]["status"] == expected_status)


__all__ = ["MockDB", "MockTools", "MockUserDB", "MockUserTools"]
