"""Mock implements domain_kit's DomainData and DomainEnvironment (mypy checks the assignments below), and the
engine's registry reaches it by name."""

from __future__ import annotations

from domain_kit import DomainData, DomainEnvironment
from green_agent.domains import domain_names, load_domain
from mock_domain import DOMAIN_NAME, MockData


def test_mock_is_a_domain(data: MockData) -> None:
    domain: DomainData = data
    env: DomainEnvironment = domain.new_environment("update_task_with_user_tools")
    assert domain.name == DOMAIN_NAME == "mock" and domain.default_split == "base"
    assert [s["function"]["name"] for s in domain.user_tool_schemas] == [
        "check_notifications",
        "dismiss_notification",
    ]
    assert domain.write_tools == {"create_task", "update_task_status"}
    assert domain.read_tools == {"get_users"}
    assert env.user_db_hash() is not None
    assert domain.source_description.startswith("installed: ")


def test_registry_loads_mock_by_name(data: MockData) -> None:
    assert "mock" in domain_names()
    assert load_domain("mock") is data
