"""Operator settings: environment names, shorthands, and refusal of nonsense."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from api.settings import Settings
from green_agent.config import EngineSettings
from green_agent.core.limits import AgentLimits
from green_agent.engine import Engine
from green_agent.white_agent.egress import EgressPolicy
from retail_domain import RetailData


def test_defaults_run_with_zero_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "TAU2_RETAIL_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)
    assert settings.database_url == "sqlite+aiosqlite:///./green_agent.db"
    engine = settings.engine_settings()
    assert engine.default_user_model == "scripted" and engine.judge is None and engine.user_models == {}


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@db:5432/x")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.local/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("GREEN_AGENT_USER_MODELS", '{"small": "gpt-4.1-mini", "big": {"model": "gpt-4.1"}}')
    monkeypatch.setenv("GREEN_AGENT_DEFAULT_USER_MODEL", "small")
    monkeypatch.setenv("GREEN_AGENT_JUDGE_MODEL", '{"model": "judge-1", "extra_args": {"temperature": 0}}')
    settings = Settings(_env_file=None)
    assert settings.database_url == "postgresql+asyncpg://u@db:5432/x"
    engine = settings.engine_settings()
    assert engine.user_models["small"].model == "gpt-4.1-mini"
    assert engine.user_models["big"].base_url == "http://llm.local/v1"
    assert engine.user_models["big"].api_key == "sk-test"
    assert engine.judge is not None and engine.judge.extra_args == {"temperature": 0}
    assert settings.user_model_names() == ["scripted", "small", "big"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"database_url": "mysql://x"}, "is not supported"),
        ({"default_user_model": "nope"}, "is not configured"),
        ({"user_models": {"scripted": "x"}}, "invalid name"),
        ({"max_concurrent_trials": 4, "max_concurrent_per_agent": 8}, "cannot exceed"),
        ({"card_url": "ftp://x"}, "card_url must be"),
        ({"max_concurrent_trials": 0}, "greater than or equal to 1"),
        ({"max_id_chars": 256}, "less than or equal to 255"),
        ({"max_json_depth": 1}, "greater than or equal to 2"),
        ({"egress_deny": ["10.0.0.0/8", "not a host!"]}, "neither a network"),
        ({"tenant_slot_share": 0}, "greater than 0"),
        ({"worker_heartbeat_s": 10, "worker_stalled_after_s": 15}, "at least twice"),
        ({"readyz_timeout_s": 0}, "greater than 0"),
    ],
)
def test_nonsense_is_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, **overrides)


def test_egress_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREEN_AGENT_EGRESS_ALLOW", '["10.1.0.0/16", ".agents.corp"]')
    monkeypatch.setenv("GREEN_AGENT_EGRESS_DENY", '["10.1.9.0/24"]')
    monkeypatch.setenv("GREEN_AGENT_ALLOW_PRIVATE_AGENTS", "false")
    policy = Settings(_env_file=None).egress_policy()
    assert policy.allow_private is False and policy.allow_hosts == (".agents.corp",)
    assert [str(n) for n in policy.allow_networks] == ["10.1.0.0/16"]
    assert [str(n) for n in policy.deny_networks] == ["10.1.9.0/24"]
    assert Settings(_env_file=None).egress_policy(allow_private=True).allow_private is True
    assert Settings(_env_file=None, _env_prefix="NONE_").egress_policy() == EgressPolicy()


def test_card_url() -> None:
    assert Settings(_env_file=None, host="0.0.0.0", port=9009).public_card_url() == "http://127.0.0.1:9009/"
    assert (
        Settings(_env_file=None, card_url="https://green.example/x").public_card_url()
        == "https://green.example/x/"
    )


def test_database_password_is_masked_for_display() -> None:
    settings = Settings(_env_file=None, database_url="postgresql://user:secret@db:5432/x")
    assert settings.database_url_for_display() == "postgresql+asyncpg://user:***@db:5432/x"


def test_every_engine_setting_is_exposed(monkeypatch: pytest.MonkeyPatch, retail_data: RetailData) -> None:
    # Operator-facing names that differ from the engine's; every other EngineSettings field keeps its name.
    renamed = {"judge": "judge_model"}
    exposed = set(Settings.model_fields)
    # Naming the task to the agent is for the local-model demo's built-in oracle only: never an operator's.
    # Derived, not set: the providers from the *_API_KEY settings, judge_from_key from judge_model and them,
    # data_dirs from data_dir (retail's; every other domain reads its own TAU2_<DOMAIN>_DATA_DIR).
    hidden = {"limits", "disclose_task_id", "providers", "judge_from_key", "data_dirs"}
    missing = [f for f in EngineSettings.model_fields if f not in hidden and renamed.get(f, f) not in exposed]
    assert missing == []
    monkeypatch.setenv("GREEN_AGENT_DISCLOSE_TASK_ID", "true")
    assert Settings(_env_file=None).engine_settings().disclose_task_id is False
    # The bounds on the white agent are flat operator settings, one per AgentLimits field.
    assert [f for f in AgentLimits.model_fields if f not in exposed] == []
    # The defaults are the engine's own.
    settings = Settings(_env_file=None)
    assert settings.engine_settings() == EngineSettings()
    # ... and reach the white-agent clients (the keep-alive is a ClientLimits field).
    monkeypatch.setenv("GREEN_AGENT_AGENT_KEEPALIVE_S", "0.5")
    clients = Engine(Settings(_env_file=None).engine_settings(), retail_data)
    assert clients._pool_for(EgressPolicy()).limits.keepalive_s == 0.5
    monkeypatch.delenv("GREEN_AGENT_AGENT_KEEPALIVE_S")

    monkeypatch.setenv("GREEN_AGENT_SCRIPTED_USER_DELAY_S", "0.2")
    monkeypatch.setenv("GREEN_AGENT_CONVERSATIONS_PER_CLIENT", "4")
    monkeypatch.setenv("GREEN_AGENT_MAX_CONCURRENT_TRIALS", "256")
    monkeypatch.setenv("GREEN_AGENT_MAX_CONCURRENT_PER_AGENT", "128")
    monkeypatch.setenv("GREEN_AGENT_NORMALIZE_IDS", "true")
    monkeypatch.setenv("GREEN_AGENT_MAX_TOOL_CALLS", "4")
    monkeypatch.setenv("GREEN_AGENT_TRIAL_RETRIES", "0")
    monkeypatch.setenv("GREEN_AGENT_MAX_AGENT_TEXT_BYTES_PER_TRIAL", "65536")
    monkeypatch.setenv("GREEN_AGENT_JUDGE_SKIP_WHEN_FAILED", "true")
    engine = Settings(_env_file=None).engine_settings()
    assert engine.limits.max_tool_calls == 4 and engine.trial_retries == 0
    assert engine.limits.max_agent_text_bytes_per_trial == 65536
    assert engine.scripted_user_delay_s == 0.2 and engine.conversations_per_client == 4
    assert (engine.max_concurrent_trials, engine.max_concurrent_per_agent) == (256, 128)
    assert engine.normalize_ids is True and engine.judge_skip_when_failed is True
