"""Retail implements domain_kit's DomainData and DomainEnvironment (mypy checks the assignments below) and
the registry reaches it by name."""

from __future__ import annotations

import pytest

from domain_kit import DomainData, DomainEnvironment, ToolCall
from green_agent.domains import UnknownDomainError, check_domain, domain_names, load_domain
from retail_domain import RetailData


def test_retail_is_a_domain(data: RetailData) -> None:
    domain: DomainData = data
    env: DomainEnvironment = domain.new_environment("0")
    assert domain.name == "retail" and domain.default_split == "base"
    assert domain.user_tool_schemas == ()
    assert env.user_db_hash() is None
    gold = domain.gold("5")
    for call in gold.actions:
        env.call(call.name, call.arguments)
    check = domain.check_environment("5", env, gold.actions)
    assert check.db_matched and check.db_actual_hash == gold.db_hash and check.assertions == ()
    assert domain.check_environment("5", domain.new_environment(), []).db_matched is False


def test_the_customer_has_no_retail_tools(data: RetailData) -> None:
    env = data.new_environment()
    result = env.call("get_user_details", {"user_id": "noah_brown_6181"}, requestor="user")
    assert result.error and result.content == "Error: Tool 'get_user_details' not found."
    assert env.call_tool(ToolCall("get_user_details", {"user_id": "noah_brown_6181"})).error is False


def test_registry_loads_by_name(data: RetailData) -> None:
    assert "retail" in domain_names()
    assert load_domain("retail") is data
    with pytest.raises(UnknownDomainError, match="unknown domain 'nope'; this service runs 'retail'"):
        check_domain("nope")
