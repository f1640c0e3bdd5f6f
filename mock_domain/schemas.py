"""The mock tools as OpenAI function schemas, each side in upstream's order.

Names, parameters, JSON types, enums and required lists equal upstream's (conformance/mock/
tool_signatures.json); the parameter objects follow upstream's generated shape (a Title Case ``title`` per
property, ``title: "parameters"``, no ``required`` for a tool without parameters). The descriptions are this
project's own.
"""

from __future__ import annotations

from typing import Any

# (name, description, [(parameter, JSON schema without title/description, description, required)])
_Param = tuple[str, dict[str, Any], str, bool]

_AGENT_TOOLS: list[tuple[str, str, list[_Param]]] = [
    (
        "create_task",
        "Create a task for an existing user. The task starts as 'pending' and is added to the user's task "
        "list. Returns the new task.",
        [
            ("user_id", {"type": "string"}, "Id of the user the task belongs to, e.g. 'user_1'.", True),
            ("title", {"type": "string"}, "Title of the task.", True),
            (
                "description",
                {"default": None, "type": "string"},
                "Optional longer description of the task; leave it out when there is none.",
                False,
            ),
        ],
    ),
    ("get_users", "List every user with the ids of their tasks.", []),
    (
        "update_task_status",
        "Set the status of an existing task. Returns the updated task.",
        [
            ("task_id", {"type": "string"}, "Id of the task, e.g. 'task_1'.", True),
            ("status", {"enum": ["pending", "completed"], "type": "string"}, "The new status.", True),
        ],
    ),
    (
        "transfer_to_human_agents",
        "Hand the conversation over to a human agent, with a summary of the user's issue. Transfer only when "
        "the user explicitly asks for a human, or when the policy and the available tools cannot resolve the "
        "issue.",
        [("summary", {"type": "string"}, "A short summary of the user's issue.", True)],
    ),
]

_USER_TOOLS: list[tuple[str, str, list[_Param]]] = [
    ("check_notifications", "Show every notification in your inbox, read or not.", []),
    (
        "dismiss_notification",
        "Mark one notification of your inbox as read.",
        [("notification_id", {"type": "string"}, "Id of the notification, e.g. 'notif_1'.", True)],
    ),
]


def _title(name: str) -> str:
    return " ".join(part.capitalize() for part in name.split("_"))


def _schema(name: str, description: str, params: list[_Param]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for pname, shape, text, _ in params:
        prop: dict[str, Any] = {}
        if "default" in shape:
            prop["default"] = shape["default"]
        prop["description"] = text
        if "enum" in shape:
            prop["enum"] = shape["enum"]
        prop["title"] = _title(pname)
        prop["type"] = shape["type"]
        properties[pname] = prop
    parameters: dict[str, Any] = {"properties": properties}
    required = [pname for pname, _, _, needed in params if needed]
    if params:
        parameters["required"] = required
    parameters["title"] = "parameters"
    parameters["type"] = "object"
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _AGENT_TOOLS)
USER_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _USER_TOOLS)
TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _AGENT_TOOLS)
USER_TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _USER_TOOLS)

READ_TOOLS = frozenset({"get_users"})
WRITE_TOOLS = frozenset({"create_task", "update_task_status"})
GENERIC_TOOLS = frozenset({"transfer_to_human_agents"})
USER_READ_TOOLS = frozenset({"check_notifications"})
USER_WRITE_TOOLS = frozenset({"dismiss_notification"})
