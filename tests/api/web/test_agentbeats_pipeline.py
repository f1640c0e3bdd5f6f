"""The AgentBeats v2 pipeline played for real: the gateway's a2a-sdk 0.3 streaming client (in a throwaway
environment, tests/support/gateway_v03.py) against `green-agent serve` started with the image's entrypoint
arguments and nothing but OPENAI_API_KEY/OPENAI_BASE_URL (the fake provider plays customer and judge); the
results file in the leaderboard's layout, read by the leaderboard's DuckDB query. Also: the reference agents'
cards parse for that client, the working updates keep coming while a slow trial runs, and the official
green's action score.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_data_parts, get_message_text
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.types import TaskState

from green_agent.reference_agents import serve_app, serve_reference_agent
from green_agent.reference_agents.oracle import OracleExecutor
from green_agent.reference_agents.replies import Incoming
from green_agent.reference_agents.server import agent_card, build_agent_app
from retail_domain import WRITE_TOOLS, RetailData, load_retail_data
from tests.api.servers import GREEN_AGENT_BIN, free_port, serve_green
from tests.api.web.test_a2a import agentbeats, collect, request
from tests.support.fake_llm import FakeReply, customer_or_judge, serve_fake_llm
from tests.support.gateway_venv import run_gateway

LEADERBOARD_QUERY = (
    "SELECT results.participants.agent::VARCHAR AS id, r.pass_rate AS pass_rate, "
    "r.score || '/' || r.max_score AS Score FROM results CROSS JOIN UNNEST(results.results) AS t(r) "
    "ORDER BY r.score DESC;"
)
"""The tau2 leaderboard's query, as the issue quotes it."""


@pytest.fixture
async def green_process(tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    """`green-agent serve --host --port --card-url` (the manifest's command line) in an empty directory (the
    embedded SQLite default), its environment holding only OPENAI_API_KEY and OPENAI_BASE_URL besides PATH:
    as the AgentBeats runner starts the container. Yields its URL and the fake provider."""
    async with serve_fake_llm(customer_or_judge(load_retail_data())) as provider:
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "OPENAI_API_KEY": "sk-runner",
            "OPENAI_BASE_URL": provider.base_url,
        }
        log = (tmp_path / "green.log").open("wb")
        process = subprocess.Popen(  # noqa: ASYNC220 (started once; the test then waits on HTTP)
            [str(GREEN_AGENT_BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--card-url", url],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            async with httpx.AsyncClient(timeout=5) as http:
                for _ in range(600):
                    assert process.poll() is None, (tmp_path / "green.log").read_text()
                    try:
                        if (await http.get(url + ".well-known/agent-card.json")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.1)
            yield url, provider
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


async def test_the_gateways_03_client_runs_an_assessment_to_a_leaderboard_row(
    green_process: tuple[str, Any], oracle_url: str, gateway_python: Path, tmp_path: Path
) -> None:
    green_url, provider = green_process
    config = {"domain": "retail", "num_tasks": 3, "user_llm": "openai/gpt-4.1"}
    outcome = await run_gateway(
        gateway_python,
        {"green": green_url, "agents": [oracle_url], "participants": {"agent": oracle_url}, "config": config},
    )
    assert outcome["status"] == "completed", outcome
    assert outcome["cards"] == {green_url: None, oracle_url: None}

    # The lifecycle: a Task, working updates, one Result artifact, then completed; nothing after it.
    events = outcome["events"]
    kinds = [(e["kind"], e.get("state") or e.get("name")) for e in events]
    assert kinds[0] == ("task", "submitted"), kinds
    assert kinds[-1] == ("status", "completed") and events[-1]["final"] is True
    assert kinds[-2] == ("artifact", "Result")
    assert set(kinds[1:-2]) == {("status", "working")}
    working = [" ".join(e["text"]) for e in events if e.get("state") == "working"]
    assert working[0].startswith("Assessment ") and "3 tasks x 1 trial = 3 trials." in working[0]
    # The judge nobody configured is said, as a sentence of its own.
    assert "Note: NL assertions are judged by gpt-4.1-2025-04-14 on OPENAI_API_KEY" in working[0]
    assert sum("trials done" in text for text in working) == 3
    times = [e["t"] for e in events]
    longest_gap = max(b - a for a, b in itertools.pairwise(times))
    assert longest_gap < 60, times

    # What the gateway publishes: one JSON object, counts as integers, both scores.
    (result,) = outcome["results"]
    assert isinstance(result, dict)
    assert result["max_score"] == 3 and type(result["max_score"]) is int
    assert result["score"] == 3.0 and result["pass_rate"] == 100.0 and result["complete"] is True
    assert result["tau2_pass_rate"] == 100.0 and result["action_pass_rate"] == 100.0
    assert set(result["task_rewards"]) == {"0", "1", "2"}  # the task file's first three
    assert type(result["num_tasks"]) is int and type(result["trials_total"]) is int
    assert result["user_model"] == "gpt-4.1" and result["judge_model"] == "gpt-4.1-2025-04-14"
    # The customer and the judge both ran on the runner's key and endpoint.
    models = {r["model"] for r in provider.requests}
    assert models == {"gpt-4.1", "gpt-4.1-2025-04-14"}

    # The workflow's file, and the leaderboard's query over it.
    results_dir = tmp_path / "results"
    results_dir.mkdir()
    agentbeats_id = str(uuid.uuid4())
    document = {"status": outcome["status"], "participants": {"agent": agentbeats_id}, "results": [result]}
    (results_dir / f"{uuid.uuid4()}.json").write_text(json.dumps(document))
    assert leaderboard_rows(results_dir) == [[agentbeats_id, 100.0, "3.0/3"]]


def leaderboard_rows(results_dir: Path) -> list[list[Any]]:
    """The leaderboard's query over `results_dir/*.json`, run by DuckDB in a process of its own (its Python
    binding reports leaked objects on stderr at interpreter exit: not in the test run's own)."""
    pattern = str(results_dir / "*.json").replace("'", "''")
    script = (
        "import duckdb, json, sys\n"
        "db = duckdb.connect()\n"
        f"db.execute(\"CREATE VIEW results AS SELECT * FROM read_json_auto('{pattern}')\")\n"
        "print(json.dumps(db.execute(sys.argv[1]).fetchall()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, LEADERBOARD_QUERY], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows: list[list[Any]] = json.loads(done.stdout.splitlines()[0])
    return rows


async def test_the_reference_agents_cards_parse_for_the_gateways_client(
    retail_data: RetailData, gateway_python: Path
) -> None:
    async with (
        serve_reference_agent("oracle", data=retail_data) as oracle,
        serve_reference_agent("no_tools", data=retail_data) as no_tools,
        serve_reference_agent("oracle", data=retail_data, protocol_version="0.3") as old,
    ):
        outcome = await run_gateway(gateway_python, {"agents": [oracle, no_tools, old]})
    assert outcome["cards"] == {oracle: None, no_tools: None, old: None}


async def test_working_updates_keep_coming_while_a_slow_trial_runs(
    database_url: str, retail_data: RetailData
) -> None:
    # Each agent turn takes 0.6 s, a trial several turns; updates come at least every 0.3 s regardless.
    heartbeat = 0.3
    async with (
        serve_reference_agent("oracle", data=retail_data, delay_s=0.6) as slow,
        serve_green(database_url, a2a_heartbeat_s=heartbeat) as green_url,
        httpx.AsyncClient(timeout=120) as http,
    ):
        client = await create_client(green_url, ClientConfig(httpx_client=http, streaming=True))
        loop = asyncio.get_running_loop()
        started = loop.time()
        stamps: list[float] = []
        texts: list[str] = []
        async for response in client.send_message(request(agentbeats(slow, task_ids=[0]))):
            stamps.append(loop.time() - started)
            if response.HasField("status_update") and response.status_update.status.HasField("message"):
                texts.append(get_message_text(response.status_update.status.message))
    assert any(t.startswith("Still running: 0/1 trials done.") for t in texts), texts
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert stamps[-1] > 2.0 and max(gaps) < heartbeat + 0.5, stamps


class PerturbedOracle(OracleExecutor):
    """The oracle, off by one thing per task: task 0 without one gold read (the DB still ends right), task 5
    with a wrong payment method in its write (every tool name right)."""

    def __init__(self, data: RetailData) -> None:
        super().__init__(data)
        self._perturbed: set[str] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        context_id = context.context_id or ""
        session = self._session(context_id, Incoming.of(context.message))
        if session is not None and context_id not in self._perturbed:
            self._perturbed.add(context_id)
            actions = list(session.actions)
            if actions and actions[0].action_id.startswith("0_"):
                del actions[2]  # the first get_product_details
            elif actions and actions[0].action_id.startswith("5_"):
                (index,) = [i for i, a in enumerate(actions) if a.name in WRITE_TOOLS]
                arguments = {**actions[index].arguments, "payment_method_id": "credit_card_0000000"}
                actions[index] = dataclasses.replace(actions[index], arguments=arguments)
            session.actions = tuple(actions)
        await super().execute(context, event_queue)


@pytest.mark.parametrize("evaluation", ["action", "tau2"])
async def test_evaluation_action_scores_as_the_official_green(
    database_url: str, retail_data: RetailData, evaluation: str
) -> None:
    def app_for(url: str) -> Any:
        card = agent_card(name="perturbed-oracle", description="off by one", url=url)
        return build_agent_app(PerturbedOracle(retail_data), card=card)

    assert [a.action_id[:2] for a in retail_data.tasks["0"].gold_actions][2] == "0_"
    async with (
        serve_app(app_for) as agent_url,
        serve_green(database_url) as green_url,
        httpx.AsyncClient(timeout=120) as http,
    ):
        client = await create_client(green_url, ClientConfig(httpx_client=http, streaming=False))
        _, task = await collect(client, agentbeats(agent_url, task_ids=[0, 5, 1], evaluation=evaluation))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, get_message_text(task.status.message)
    (data,) = get_data_parts(list(task.artifacts[0].parts))
    # Task 0: the DB is right (tau2 1) but a gold read is missing (action 0). Task 5: a wrong argument value
    # in the write: 0 both ways. Task 1: the oracle's own replay, 1 both ways.
    assert data["tau2_task_rewards"] == {"0": 1.0, "1": 1.0, "5": 0.0}
    assert data["action_task_rewards"] == {"0": 0.0, "1": 1.0, "5": 0.0}
    assert data["tau2_pass_rate"] == pytest.approx(200 / 3) and data["action_pass_rate"] == pytest.approx(
        100 / 3
    )
    chosen = data["action_task_rewards"] if evaluation == "action" else data["tau2_task_rewards"]
    assert data["evaluation"] == evaluation and data["task_rewards"] == chosen
    assert data["score"] == sum(chosen.values()) and data["max_score"] == 3
    assert data["pass_rate"] == pytest.approx(100 * data["score"] / 3)


def customer_failing_first(count: int, data: RetailData) -> Any:
    """The fake customer (and judge), whose first `count` customer requests fail: our LLM's failure, which
    excludes the trial (an infrastructure error) until it is run again."""
    served = customer_or_judge(data)
    failures = 0

    def reply(body: dict[str, Any]) -> FakeReply:
        nonlocal failures
        if "response_format" not in body and failures < count:
            failures += 1
            return FakeReply(status=400, error={"message": "refused for the test", "type": "invalid_request"})
        return served(body)

    return reply


@pytest.mark.parametrize(("failing", "outcome"), [(2, "completed"), (10_000, "failed")])
async def test_missing_trials_are_retried_in_place_and_a_partial_result_is_never_final(
    database_url: str, retail_data: RetailData, oracle_url: str, failing: int, outcome: str
) -> None:
    async with serve_fake_llm(customer_failing_first(failing, retail_data)) as provider:
        settings = {
            "openai_api_key": "sk-runner",
            "openai_base_url": provider.base_url,
            "default_judge_model": "",
            "trial_retries": 0,
            "llm_max_retries": 0,
            "a2a_retries": 1,
        }
        async with (
            serve_green(database_url, **settings) as green_url,
            httpx.AsyncClient(timeout=120) as http,
        ):
            client = await create_client(green_url, ClientConfig(httpx_client=http, streaming=True))
            text = agentbeats(
                oracle_url,
                task_ids=[0, 1],
                max_concurrent=1,
                user_llm="openai/fake-customer",
                user_llm_args={"temperature": 0.7, "max_tokens": 222},
            )
            responses, task = await collect(client, text)
            listed = (await http.get(f"{green_url}assessments")).json()["data"][0]
            rest = (await http.get(f"{green_url}assessments/{listed['id']}")).json()
    texts = [
        get_message_text(r.status_update.status.message)
        for r in responses
        if r.HasField("status_update") and r.status_update.status.HasField("message")
    ]
    # Attempt 1 lost both trials to our LLM; they are run again in place, once (the operator's a2a_retries).
    assert any("Trials missing (2 trials excluded" in t and "(attempt 2)" in t for t in texts), texts
    assert [a["number"] for a in rest["attempts"]] == [1, 2]
    # user_llm_args reached the customer's requests.
    customer = [r for r in provider.requests if "response_format" not in r]
    assert customer and all((r["temperature"], r["max_tokens"]) == (0.7, 222) for r in customer)
    if outcome == "completed":
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        (data,) = get_data_parts(list(task.artifacts[0].parts))
        assert data["complete"] is True and data["score"] == 2 and data["max_score"] == 2
        return
    # Still missing after the retries: failed, no Result, one line saying what and how to continue.
    assert task.status.state == TaskState.TASK_STATE_FAILED and not task.artifacts
    message = get_message_text(task.status.message)
    assessment = rest["id"]
    assert message == (
        f"Assessment {assessment} is incomplete, so no Result was published: 2 trials excluded after "
        "infrastructure errors (user-simulator or judge LLM failed). Continue it in place with POST "
        f"/assessments/{assessment}/retry (green-agent retry {assessment}), then read GET "
        f"/assessments/{assessment}/leaderboard."
    )
    assert rest["status"] == "completed" and rest["report"]["complete"] is False  # kept over REST
