"""The mock tools of both sides as upstream's behave (tau2-mock-semantics.md §4, §7): outputs, errors, what
is stored, routing by requestor, hidden functions, and the initialization-data quirk."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, create_model

from mock_domain import TOOL_SCHEMAS, USER_TOOL_SCHEMAS, MockData

from .conftest import load_facts


def _content(data: MockData, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> str:
    result = data.new_environment(**kwargs).call(name, arguments)
    assert not result.error, result.content
    return result.content


def test_schemas_match_upstream_signatures() -> None:
    signatures = load_facts("tool_signatures.json")
    for schemas, expected in ((TOOL_SCHEMAS, signatures["agent"]), (USER_TOOL_SCHEMAS, signatures["user"])):
        assert [s["function"]["name"] for s in schemas] == [e["name"] for e in expected]
        for schema, facts in zip(schemas, expected, strict=True):
            params = schema["function"]["parameters"]
            # The conformance file dropped every key named title/description, parameters so named included.
            for name, shape in facts["parameters"].items():
                assert {k: v for k, v in params["properties"][name].items() if k in shape} == shape
            assert params.get("required", []) == facts["required"]
            assert schema["function"]["description"]


def test_parameter_objects_have_upstreams_generated_shape() -> None:
    """Rebuild each parameters object as upstream does (a pydantic model titled 'parameters', from the
    methods' annotations) with our descriptions, and compare the serialized form, key order included."""
    annotations: dict[str, Any] = {
        "user_id": str,
        "title": str,
        "description": (str, None),
        "task_id": str,
        "status": Any,
        "summary": str,
        "notification_id": str,
    }
    from typing import Literal

    annotations["status"] = Literal["pending", "completed"]
    for schema in (*TOOL_SCHEMAS, *USER_TOOL_SCHEMAS):
        props = schema["function"]["parameters"]["properties"]
        fields: dict[str, Any] = {}
        for name, prop in props.items():
            annotation = annotations[name]
            if isinstance(annotation, tuple):
                fields[name] = (annotation[0], Field(default=annotation[1], description=prop["description"]))
            else:
                fields[name] = (annotation, Field(description=prop["description"]))
        model = create_model("parameters", **fields)
        assert json.dumps(schema["function"]["parameters"]) == json.dumps(model.model_json_schema())


def test_policy_is_the_upstream_file(data: MockData) -> None:
    assert len(data.policy) == 278 and not data.policy.endswith("\n")
    assert data.policy.startswith("# Mock Domain Policy")


def test_outputs(data: MockData) -> None:
    assert _content(data, "get_users") == '[{"user_id": "user_1", "name": "Test User", "tasks": ["task_1"]}]'
    assert _content(data, "transfer_to_human_agents", {"summary": "x"}) == "Transfer successful"
    env = data.new_environment()
    assert env.call("check_notifications", None, "user").content == (
        '[{"notification_id": "notif_1", "message": "Task \'Test task\' has been assigned to you.", '
        '"status": "unread", "task_id": "task_1"}]'
    )
    dismissed = env.call("dismiss_notification", {"notification_id": "notif_1"}, "user")
    assert (dismissed.content, dismissed.error) == ("Notification notif_1 dismissed", False)
    again = env.call("dismiss_notification", {"notification_id": "notif_1"}, "user")
    assert again.content == "Notification notif_1 dismissed"  # idempotent
    assert '"status": "read"' in env.call("check_notifications", {}, "user").content


def test_errors_are_upstreams(data: MockData) -> None:
    env = data.new_environment()
    cases = [
        ("create_task", {"user_id": "user_9", "title": "t"}, "assistant", "Error: User user_9 not found"),
        (
            "update_task_status",
            {"task_id": "task_9", "status": "completed"},
            "assistant",
            "Error: Task task_9 not found",
        ),
        ("dismiss_notification", {"notification_id": "n"}, "user", "Error: Notification n not found"),
        (
            "create_task",
            {"user_id": "user_1"},
            "assistant",
            "Error: MockTools.create_task() missing 1 required positional argument: 'title'",
        ),
        (
            "get_users",
            {"x": 1},
            "assistant",
            "Error: MockTools.get_users() got an unexpected keyword argument 'x'",
        ),
        (
            "transfer_to_human_agents",
            {},
            "assistant",
            "Error: MockTools.transfer_to_human_agents() missing 1 required positional argument: 'summary'",
        ),
    ]
    before = (env.db_hash(), env.user_db_hash())
    for name, arguments, requestor, message in cases:
        result = env.call(name, arguments, requestor)  # type: ignore[arg-type]
        assert (result.content, result.error) == (message, True)
    assert (env.db_hash(), env.user_db_hash()) == before  # nothing changed


def test_a_title_that_is_not_a_string_is_refused_before_anything_is_written(data: MockData) -> None:
    env = data.new_environment()
    result = env.call("create_task", {"user_id": "user_1", "title": 5})
    assert result.error and "title" in result.content
    assert env.db_hash() == data.initial_db_hash()


def test_each_side_sees_only_its_own_tools(data: MockData) -> None:
    """A white agent naming a customer tool, or the customer an agent tool, gets the unknown-tool error."""
    env = data.new_environment()
    for name in ("check_notifications", "dismiss_notification"):
        result = env.call(name, {"notification_id": "notif_1"} if name.startswith("dismiss") else {})
        assert (result.content, result.error) == (f"Error: Tool '{name}' not found.", True)
    for name in ("create_task", "get_users", "update_task_status", "transfer_to_human_agents"):
        result = env.call(name, {}, "user")
        assert (result.content, result.error) == (f"Error: Tool '{name}' not found.", True)
    assert env.user_db_hash() == data.new_environment().user_db_hash()


def test_hidden_functions_are_not_tools(data: MockData) -> None:
    env = data.new_environment()
    for name, side in (
        ("assert_task_status", "assistant"),
        ("assert_number_of_tasks", "assistant"),
        ("add_notification", "user"),
        ("assert_notification_status", "user"),
    ):
        result = env.call(name, {}, side)  # type: ignore[arg-type]
        assert result.content == f"Error: Tool '{name}' not found."


def test_create_task_counts_and_overwrites_as_upstream(data: MockData) -> None:
    env = data.new_environment()
    first = json.loads(env.call("create_task", {"user_id": "user_1", "title": "A"}).content)
    assert first == {"task_id": "task_2", "title": "A", "description": None, "status": "pending"}
    second = env.call("create_task", {"user_id": "user_1", "title": "B", "description": "d"})
    assert json.loads(second.content)["task_id"] == "task_3"
    users = json.loads(env.call("get_users").content)
    assert users[0]["tasks"] == ["task_1", "task_2", "task_3"]


def test_update_stores_any_status(data: MockData) -> None:
    env = data.new_environment()
    result = env.call("update_task_status", {"task_id": "task_1", "status": "done"})
    assert json.loads(result.content)["status"] == "done" and not result.error
    assert env.assertion("assert_task_status", {"task_id": "task_1", "expected_status": "done"}, "assistant")


def test_assertion_functions(data: MockData) -> None:
    env = data.new_environment()
    assert env.assertion("assert_number_of_tasks", {"user_id": "user_1", "expected_number": 1}, "assistant")
    assert not env.assertion(
        "assert_task_status", {"task_id": "task_1", "expected_status": "completed"}, "assistant"
    )
    assert not env.assertion(
        "assert_notification_status", {"notification_id": "notif_1", "expected_status": "read"}, "user"
    )


def test_initialization_data_points_the_customers_toolkit_at_the_agents_db(data: MockData) -> None:
    """Upstream's quirk, kept for hash parity: after agent_data is merged the customer's tools act on the
    agent's DB (its hash is the agent's; its tools fail with Python's own message)."""
    env = data.new_environment("update_task_with_initialization_data")
    assert env.user_db_hash() == env.db_hash()
    result = env.call("check_notifications", {}, "user")
    assert (result.content, result.error) == ("Error: 'MockDB' object has no attribute 'notifications'", True)
    updated = env.call("update_task_status", {"task_id": "task_2", "status": "completed"})
    assert not updated.error and env.user_db_hash() == env.db_hash()


def test_message_history_writes_are_replayed_and_checked(data: MockData) -> None:
    env = data.new_environment("update_task_with_message_history")
    task = json.loads(env.call("update_task_status", {"task_id": "task_2", "status": "pending"}).content)
    assert task == {
        "task_id": "task_2",
        "title": "Project Review",
        "description": "Review Q4 project status",
        "status": "pending",
    }


def test_environments_do_not_share_state(data: MockData) -> None:
    one = data.new_environment("update_task_with_user_tools")
    one.call("dismiss_notification", {"notification_id": "notif_1"}, "user")
    one.call("create_task", {"user_id": "user_1", "title": "x"})
    two = data.new_environment("update_task_with_user_tools")
    assert (two.db_hash(), two.user_db_hash()) == (
        data.initial_db_hash(),
        data.new_environment().user_db_hash(),
    )
