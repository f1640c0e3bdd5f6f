"""Models a request names, as the AgentBeats runner hands the green agent nothing but provider keys: which
models are offered (provider keys, the operator's restriction), what is refused and how, the default judge,
and the bounds on user_llm_args. No network: settings and the engine's validation only."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from api.settings import Settings
from green_agent.config import AssessmentConfig, ConfigError, EngineSettings, UserLLMArgs
from green_agent.engine import Engine
from retail_domain import RetailData

KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "DEEPSEEK_API_KEY")


@pytest.fixture(autouse=True)
def no_keys_from_the_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def engine_settings(**overrides: Any) -> EngineSettings:
    return Settings(_env_file=None, **overrides).engine_settings()


def test_only_openai_api_key_offers_openai_models_and_the_default_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-runner")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.local/v1")
    settings = engine_settings()
    customer = settings.user_endpoint("openai/gpt-4.1")
    assert customer is not None
    assert (customer.model, customer.base_url, customer.api_key) == (
        "gpt-4.1",
        "http://llm.local/v1",
        "sk-runner",
    )
    assert settings.user_endpoint("scripted") is None  # only by its name
    # No judge configured and a key present: tau2's judge model on that key, and it says so.
    assert settings.judge is not None and settings.judge_from_key
    assert (settings.judge.model, settings.judge.api_key) == ("gpt-4.1-2025-04-14", "sk-runner")
    own = settings.judge_endpoint("openai/gpt-4o")
    assert own is not None and own.model == "gpt-4o" and own.base_url == "http://llm.local/v1"
    # A provider whose key is not set: refused in one line naming the key and what is offered.
    with pytest.raises(
        ConfigError, match=r"needs GEMINI_API_KEY, which is not set here; use one of: scripted"
    ):
        settings.user_endpoint("gemini/gemini-2.5-flash")
    with pytest.raises(
        ConfigError, match=r"'gpt-4\.1' is not offered here; use one of: scripted, openai/<model>"
    ):
        settings.user_endpoint("gpt-4.1")


def test_gemini_and_deepseek_keys_map_to_their_openai_compatible_endpoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-key")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "d-key")
    monkeypatch.setenv("OPENAI_API_KEY", "")  # the manifest's default for a key the runner has not: unset
    settings = engine_settings()
    gemini = settings.user_endpoint("gemini/gemini-2.5-flash")
    deepseek = settings.user_endpoint("deepseek/deepseek-chat")
    assert gemini is not None and deepseek is not None
    assert (gemini.model, gemini.api_key) == ("gemini-2.5-flash", "g-key")
    assert gemini.base_url == "https://generativelanguage.googleapis.com/v1beta/openai/"
    assert (deepseek.model, deepseek.api_key, deepseek.base_url) == (
        "deepseek-chat",
        "d-key",
        "https://api.deepseek.com/v1",
    )
    assert settings.judge is None  # no OpenAI key: no default judge (a request may name one)
    judge = settings.judge_endpoint("gemini/gemini-2.5-pro")
    assert judge is not None and judge.api_key == "g-key"
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        settings.user_endpoint("openai/gpt-4.1")


def test_the_operators_models_restrict_what_a_request_may_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    settings = engine_settings(
        user_models={"gpt-4.1": {"model": "gpt-4.1-2025-04-14", "max_in_flight": 4}},
        judge_model={"model": "judge-1"},
    )
    # A configured model by its name, or LiteLLM-style by its name or model id; with its limits.
    for name in ("gpt-4.1", "openai/gpt-4.1", "openai/gpt-4.1-2025-04-14"):
        endpoint = settings.user_endpoint(name)
        assert endpoint is not None and endpoint.max_in_flight == 4
    with pytest.raises(ConfigError) as refused:
        settings.user_endpoint("openai/gpt-4o-mini")
    assert (
        str(refused.value)
        == "user model 'openai/gpt-4o-mini' is not offered here; use one of: scripted, gpt-4.1"
    )
    # The operator's judge is the judge: naming it is fine, naming another is refused.
    assert settings.judge_endpoint("openai/judge-1") is settings.judge
    with pytest.raises(ConfigError, match="this service judges with 'judge-1'"):
        settings.judge_endpoint("openai/gpt-4o")


def test_provider_models_can_be_turned_off_and_the_default_judge_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    settings = engine_settings(provider_models=False, default_judge_model="")
    assert settings.judge is None
    with pytest.raises(ConfigError, match=r"not offered here; use one of: scripted$"):
        settings.user_endpoint("openai/gpt-4.1")
    with pytest.raises(ConfigError, match="this service has no judge"):
        settings.judge_endpoint("openai/gpt-4.1")


async def test_user_llm_args_are_bounded_and_reach_the_customers_endpoint(
    monkeypatch: pytest.MonkeyPatch, retail_data: RetailData
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-runner")
    config = AssessmentConfig(
        agent_url="http://127.0.0.1:9/",
        user_model="openai/gpt-4.1",
        user_llm_args=UserLLMArgs(temperature=1.0, reasoning_effort="low", max_tokens=1000),
    )
    async with Engine(engine_settings(user_llm_max_tokens=1000), retail_data) as engine:
        engine.validate(config)
        sent = engine.run_info(config).user_llm_args
        assert sent == {"temperature": 1.0, "reasoning_effort": "low", "max_tokens": 1000}
        # Just past the operator's bound: refused in one line naming it.
        over = config.model_copy(update={"user_llm_args": UserLLMArgs(max_tokens=1001)})
        with pytest.raises(
            ConfigError, match=r"up to 1001 tokens; this service allows at most 1000 \(the op"
        ):
            engine.validate(over)
    # The operator's own arguments for a configured model win over the request's.
    capped = engine_settings(user_models={"gpt-4.1": {"model": "m", "extra_args": {"max_tokens": 50}}})
    async with Engine(capped, retail_data) as engine:
        assert engine.run_info(config).user_llm_args["max_tokens"] == 50


def test_user_llm_args_take_only_bounded_sampling_arguments() -> None:
    assert UserLLMArgs(temperature=None).request_arguments() == {"temperature": None}  # null: not sent
    for bad in (
        {"temperature": 2.5},
        {"top_p": 0},
        {"max_tokens": 0},
        {"reasoning_effort": "max"},
        {"api_base": "x"},
    ):
        with pytest.raises(ValidationError):
            UserLLMArgs.model_validate(bad)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"a2a_heartbeat_s": 240.5}, "less than or equal to 240"),
        ({"a2a_heartbeat_s": 0}, "greater than 0"),
        ({"a2a_retries": 11}, "less than or equal to 10"),
        ({"user_llm_max_tokens": 0}, "greater than or equal to 1"),
    ],
)
def test_the_new_bounds_refuse_values_just_past_them(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(_env_file=None, **overrides)
