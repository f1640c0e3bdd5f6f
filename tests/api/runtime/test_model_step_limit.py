"""A customer model's own step limit (`max_steps` on the operator's model setting, what `local-llm serve`
prints for the bundled 135M model): it applies to an assessment that sets no step limit, over REST, A2A and
`run`, and is said once, as a warning of the assessment; an assessment that sets one keeps its own.

The customer is a deterministic OpenAI-compatible fake that never ends the conversation (as the small model
does not), the agent the `no_tools` reference agent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from api.cli.exit_codes import ExitCode
from api.web.a2a.request import parse_request
from green_agent.config import (
    AssessmentConfig,
    EngineSettings,
    LLMEndpoint,
    with_model_step_limit,
)
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.api.cli.test_cli import green_agent
from tests.api.servers import poll, serve_green
from tests.support.fake_llm import FakeLLM, FakeReply, serve_fake_llm

STEP_LIMIT = 4
CUSTOMER_CAP = 32
JUDGE_CAP = 64


@pytest.fixture(scope="module")
async def no_tools_url(retail_data: RetailData) -> AsyncIterator[str]:
    async with serve_reference_agent("no_tools", data=retail_data) as url:
        yield url


@pytest.fixture
async def chatty_customer() -> AsyncIterator[FakeLLM]:
    """A customer that never says ###STOP###; as the judge it answers one met verdict."""

    def reply(body: dict[str, Any]) -> FakeReply:
        if body.get("response_format"):
            verdict = {"index": 0, "reasoning": "fine", "metExpectation": True}
            return FakeReply(content=json.dumps({"results": [verdict]}))
        return FakeReply(content="I still need help with my order, please.")

    async with serve_fake_llm(reply) as fake:
        yield fake


def small_model(fake: FakeLLM, **more: Any) -> dict[str, Any]:
    return {"model": "small", "base_url": fake.base_url, "api_key": "local", **more}


def model_settings(fake: FakeLLM) -> dict[str, Any]:
    return {
        "user_models": {
            "small": small_model(fake, max_steps=STEP_LIMIT, extra_args={"max_tokens": CUSTOMER_CAP})
        },
        "default_user_model": "small",
        "judge_model": small_model(fake, extra_args={"max_tokens": JUDGE_CAP}),
    }


def step_limit_warnings(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "sets the step limit" in w]


def test_the_limit_applies_only_when_the_config_sets_none() -> None:
    small = LLMEndpoint(model="small", max_steps=STEP_LIMIT, extra_args={"max_tokens": CUSTOMER_CAP})
    settings = EngineSettings(
        user_models={"small": small, "big": LLMEndpoint(model="big")},
        default_user_model="small",
        judge=LLMEndpoint(model="judge", extra_args={"max_completion_tokens": JUDGE_CAP}),
    )
    unset = AssessmentConfig(agent_url="http://127.0.0.1:9/")
    limited, warnings = with_model_step_limit(unset, settings)
    assert limited.max_steps == STEP_LIMIT and len(warnings) == 1
    assert (
        f"conversations end after {STEP_LIMIT} steps" in warnings[0]
        and f"customer replies at most {CUSTOMER_CAP} tokens" in warnings[0]
        and f"judge replies at most {JUDGE_CAP} tokens" in warnings[0]
        and "tau2 allows 200" in warnings[0]
    )
    assert with_model_step_limit(limited, settings) == (limited, [])  # applied once, never twice
    own = AssessmentConfig(agent_url="http://127.0.0.1:9/", max_steps=200)  # the default, but asked for
    assert with_model_step_limit(own, settings) == (own, [])
    big = AssessmentConfig(agent_url="http://127.0.0.1:9/", user_model="big")  # no max_steps of its own
    assert with_model_step_limit(big, settings) == (big, [])
    scripted = AssessmentConfig(agent_url="http://127.0.0.1:9/", user_model="scripted")
    assert with_model_step_limit(scripted, settings) == (scripted, [])


async def test_rest_an_assessment_without_a_step_limit_gets_the_models_and_says_so(
    database_url: str, no_tools_url: str, chatty_customer: FakeLLM
) -> None:
    async with (
        serve_green(database_url, **model_settings(chatty_customer)) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        unset = {"agent_url": no_tools_url, "tasks": {"task_ids": ["2"]}}
        own = {**unset, "max_steps": STEP_LIMIT + 2}
        ids = []
        for body in (unset, own):
            created = await client.post("/assessments", json=body)
            assert created.status_code == 202, created.text
            ids.append(created.json()["id"])
        records = [await poll(client, f"/assessments/{i}", lambda b: b["status"] == "completed") for i in ids]
        trials = [(await client.get(f"/assessments/{i}/trials")).json()["data"] for i in ids]

    limited, chosen = records
    assert limited["config"]["max_steps"] == STEP_LIMIT  # stored as it ran
    assert len(step_limit_warnings(limited["warnings"])) == 1
    assert [(t["termination_reason"], t["steps"]) for t in trials[0]] == [("max_steps", STEP_LIMIT)]
    assert chosen["config"]["max_steps"] == STEP_LIMIT + 2 and step_limit_warnings(chosen["warnings"]) == []
    assert [(t["termination_reason"], t["steps"]) for t in trials[1]] == [("max_steps", STEP_LIMIT + 2)]
    # The customer's reply cap went with every request (the judge's: tests/engine/test_structured_output.py).
    customer = [r for r in chatty_customer.requests if not r.get("response_format")]
    assert customer and {r["max_tokens"] for r in customer} == {CUSTOMER_CAP}


def test_a2a_an_agentbeats_config_without_max_steps_leaves_it_to_the_model() -> None:
    splits: dict[str, tuple[str, ...]] = {"base": ("0", "1")}

    def parsed(config: dict[str, Any]) -> AssessmentConfig:
        request = {"participants": {"agent": "http://127.0.0.1:9/"}, "config": config}
        catalog = SimpleNamespace(tasks=dict.fromkeys(splits["base"]), splits=splits)
        return parse_request(json.dumps(request), catalog=lambda domain: catalog).config

    assert "max_steps" not in parsed({"domain": "retail", "num_tasks": 1}).model_fields_set
    chosen = parsed({"domain": "retail", "num_tasks": 1, "max_steps": 7})
    assert chosen.max_steps == 7 and "max_steps" in chosen.model_fields_set


async def test_run_says_it_once_and_the_trials_end_at_the_limit(
    tmp_path: Path, no_tools_url: str, chatty_customer: FakeLLM
) -> None:
    settings = model_settings(chatty_customer)
    env = {
        "GREEN_AGENT_USER_MODELS": json.dumps(settings["user_models"]),
        "GREEN_AGENT_DEFAULT_USER_MODEL": "small",
        "GREEN_AGENT_JUDGE_MODEL": json.dumps(settings["judge_model"]),
    }
    report = tmp_path / "r.json"
    code, output = await green_agent(
        *("run", "--agent-url", no_tools_url, "--task-ids", "0,1", "--quiet", "--output", str(report)),
        *("--database-url", f"sqlite+aiosqlite:///{tmp_path / 'run.db'}"),
        env=env,
    )
    assert code == ExitCode.OK, output
    assert output.count("sets the step limit") == 1, output
    assert "warning: the customer model 'small' sets the step limit" in output
    saved = json.loads(report.read_text())
    assert saved["config"]["max_steps"] == STEP_LIMIT
    assert saved["report"]["termination_counts"] == {"max_steps": 2}
