"""tau2 interop as a user meets it: an assessment exported over REST as a tau2 v1.0.x results file (checked
field by field against tests/support/tau2_schema.py), re-scored with `green-agent rescore` to the same
rewards (oracle and failing agent, NL assertions judged by a deterministic fake judge), cost figures in the
report, and `green-agent submission` writing a leaderboard submission that honestly marks what is missing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.db.engine import create_engine
from api.db.repository import AssessmentRepository
from green_agent.reference_agents import serve_reference_agent
from retail_domain import RetailData
from tests.api.cli.test_cli import green_agent
from tests.api.servers import poll, serve_green
from tests.support import tau2_schema
from tests.support.fake_llm import FakeReply, serve_fake_llm

TASKS = ["0", "2", "10", "20", "24"]  # 2 and 24 carry NL assertions; 10 and 24 have gold DB = initial DB
JUDGE_PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}


def fair_judge(body: dict[str, Any]) -> FakeReply:
    """Fails the assertions when the agent said it cannot help (the no_tools agent), passes them otherwise;
    deterministic, so a re-score with the same judge gives the same verdicts."""
    prompt = body["messages"][1]["content"]
    outcomes = re.findall(r"^(\d+)\. ", prompt.split("Expected outcomes:\n", 1)[1], flags=re.MULTILINE)
    met = "can't look anything up" not in prompt
    results = [{"index": int(i), "reasoning": "checked", "metExpectation": met} for i in outcomes]
    return FakeReply(json.dumps({"results": results}), prompt_tokens=1000, completion_tokens=100)


async def wait_completed(http: httpx.AsyncClient, assessment_id: str) -> dict[str, Any]:
    return await poll(http, f"/assessments/{assessment_id}", lambda body: body["status"] == "completed", 120)


async def test_export_rescore_round_trip_cost_and_submission(
    tmp_path: Path, oracle_url: str, retail_data: RetailData
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'interop.db'}"
    async with (
        serve_fake_llm(fair_judge) as judge,
        serve_reference_agent("no_tools", data=retail_data) as failing_url,
    ):
        judge_spec = {"model": "fake-judge", "base_url": judge.base_url}
        overrides = {"judge_model": judge_spec, "llm_prices": {"fake-judge": JUDGE_PRICE}}
        async with serve_green(database_url, **overrides) as url, httpx.AsyncClient(base_url=url) as http:
            ids = {}
            for name, agent in (("oracle", oracle_url), ("failing", failing_url)):
                body = {"agent_url": agent, "tasks": {"task_ids": TASKS}, "trials": 2, "concurrency": 4}
                ids[name] = (await http.post("/assessments", json=body)).json()["id"]
            done = {name: await wait_completed(http, ids[name]) for name in ids}
            exports = {}
            for name, assessment_id in ids.items():
                response = await http.get(f"/assessments/{assessment_id}/export", params={"format": "tau2"})
                assert response.status_code == 200, response.text
                assert "attachment" in response.headers["content-disposition"]
                exports[name] = response.json()
            assert (await http.get("/assessments/nope/export")).status_code == 404
            assert (await http.get(f"/assessments/{ids['oracle']}/export?format=csv")).status_code == 422

        env = {"GREEN_AGENT_JUDGE_MODEL": json.dumps(judge_spec), "OPENAI_API_KEY": "not-needed"}
        for name, document in exports.items():
            results = tau2_schema.Results.model_validate(document)
            assert [t.id for t in results.tasks] == TASKS and len(results.simulations) == 10
            assert results.info.environment_info.domain_name == "retail"
            assert results.info.environment_info.policy == retail_data.policy
            assert (results.info.num_trials, results.info.seed) == (2, 300)
            assert results.info.user_info.implementation == "scripted_user"
            exported = {
                (s.task_id, s.trial): s.reward_info.reward for s in results.simulations if s.reward_info
            }
            assert len(exported) == 10  # judged with the fake judge: nothing excluded

            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            code, output = await green_agent("rescore", str(path), "--json", env=env)
            assert code == 0, output
            rescored = json.loads(output[output.index("{") :])
            assert rescored["totals"]["rewards_agree"] == rescored["totals"]["rewards_compared"] == 10
            assert rescored["judge_model"] == "fake-judge"
            assert {(s["task_id"], s["trial"]): s["reward"] for s in rescored["simulations"]} == exported

        oracle = tau2_schema.Results.model_validate(exports["oracle"])
        assert {s.reward_info.reward for s in oracle.simulations if s.reward_info} == {1.0}
        call = next(m for m in oracle.simulations[0].messages or [] if getattr(m, "tool_calls", None))
        tool = next(m for m in oracle.simulations[0].messages or [] if m.role == "tool")
        assert isinstance(call, tau2_schema.ParticipantMessage) and call.tool_calls
        assert isinstance(tool, tau2_schema.ToolMessage) and tool.id == call.tool_calls[0].id
        judged = next(s for s in oracle.simulations if s.task_id == "2")
        assert judged.reward_info and judged.reward_info.nl_assertions
        assert judged.reward_info.reward_breakdown == {"DB": 1.0, "NL_ASSERTION": 1.0}
        failing = tau2_schema.Results.model_validate(exports["failing"])
        failing_rewards = {s.task_id: s.reward_info.reward for s in failing.simulations if s.reward_info}
        assert failing_rewards["0"] == 0.0 and failing_rewards["20"] == 0.0  # no writes: DB differs
        assert failing_rewards["10"] == 1.0  # gold DB = initial DB, so doing nothing passes (upstream too)
        assert failing_rewards["24"] == 0.0  # gold DB = initial DB, but the judge failed the assertion

        # cost figures: 4 judged trials (tasks 2 and 24, 2 trials) per assessment, 1000 + 100 tokens each
        usage = done["oracle"]["report"]["usage"]
        assert usage["judge"]["calls"] == 4 and usage["judge"]["prompt_tokens"] == 4000
        assert usage["judge"]["cost_usd"] == pytest.approx(4 * (1000 * 2.0 + 100 * 8.0) / 1e6)
        assert usage["green_cost_usd"] == pytest.approx(usage["judge"]["cost_usd"])
        assert usage["user"] is None and usage["agent_cost_per_trial_usd"] is None

        # --store keeps the re-scored failing run as an assessment that the API shows like any other
        code, output = await green_agent(
            "rescore", str(tmp_path / "failing.json"), "--store", "--database-url", database_url, env=env
        )
        assert code == 0, output
        imported_id = re.search(r"stored as assessment (\S+) \(source import\)", output)
        assert imported_id, output
        async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url) as http:
            imported = (await http.get(f"/assessments/{imported_id.group(1)}")).json()
            assert imported["source"] == "import" and imported["status"] == "completed"
            assert imported["agent_url"] == "tau2-file:failing.json"
            original = done["failing"]["report"]
            assert imported["report"]["task_rewards"] == original["task_rewards"]
            assert imported["report"]["pass_hat_k"] == original["pass_hat_k"]
            trial = (await http.get(f"/assessments/{imported_id.group(1)}/trials/24/0")).json()
            assert trial["reward"] == 0.0 and trial["nl_status"] == "judged" and trial["transcript"]
            again = await http.get(f"/assessments/{imported_id.group(1)}/export")
            assert again.status_code == 409 and "imported from a tau2 file" in again.text

    out = tmp_path / "submission"
    code, output = await green_agent(
        "submission",
        ids["oracle"],
        "--model-name",
        "My Agent 1",
        "--organization",
        "Example Org",
        "--email",
        "team@example.com",
        "-o",
        str(out),
        "--database-url",
        database_url,
        env=env,
    )
    assert code == 0, output
    assert "only 5 of 114 retail tasks" in output and "2 trial(s) per task" in output
    submission = tau2_schema.Submission.model_validate_json((out / "submission.json").read_text())
    retail = submission.results.retail
    assert retail is not None and (retail.pass_1, retail.pass_2, retail.pass_3) == (100.0, 100.0, None)
    assert retail.cost is None  # the agent reported no cost; never guessed
    assert submission.methodology and submission.methodology.verification
    assert submission.methodology.verification.omitted_questions is True
    assert submission.methodology.verification.modified_prompts is True  # not tau2's guidelines
    assert submission.submission_type == "custom"
    # tau2 compares methodology.user_simulator with the trajectories' user_info.llm (None: no LLM)
    assert submission.methodology.user_simulator is None
    assert submission.trajectory_files == {"retail": "my-agent-1_retail_default_scripted_2trials.json"}
    trajectories = json.loads((out / "trajectories" / submission.trajectory_files["retail"]).read_text())
    trajectory_info = tau2_schema.Results.model_validate(trajectories).info
    assert trajectory_info.agent_info.llm == "My Agent 1"
    # what tau2's submission check compares: no user-simulator mismatch warning
    assert trajectory_info.user_info.llm == submission.methodology.user_simulator

    code, output = await green_agent(
        "export", "unknown-id", "-o", str(tmp_path / "x.json"), "--database-url", database_url
    )
    assert code == 1 and "no assessment with id unknown-id" in output


async def test_rescore_refuses_a_file_tau2_refuses(tmp_path: Path) -> None:
    """Simulations without a task_id: tau2 cannot load the file, so neither do we (exit 2, the field named),
    rather than re-scoring rows of "task 'None'"."""
    simulation = {
        "id": "s0",
        "start_time": "s",
        "end_time": "e",
        "duration": 1.0,
        "termination_reason": "user_stop",
        "reward_info": {"reward": 1.0},
        "messages": [],
    }
    path = tmp_path / "no-task-ids.json"
    path.write_text(json.dumps({"info": {"num_trials": 1}, "tasks": [], "simulations": [simulation] * 3}))
    code, output = await green_agent("rescore", str(path))
    assert code == 2, output
    assert "simulation 0 is not one tau2 accepts: task_id: Field required" in output


async def test_export_before_the_report_is_409(tmp_path: Path, idle_url: str) -> None:
    async with (
        serve_green(f"sqlite+aiosqlite:///{tmp_path / 'idle.db'}") as url,
        httpx.AsyncClient(base_url=url) as http,
    ):
        body = {"agent_url": idle_url, "tasks": {"task_ids": ["0"]}}
        assessment_id = (await http.post("/assessments", json=body)).json()["id"]
        response = await http.get(f"/assessments/{assessment_id}/export")
        assert response.status_code == 409 and "no report yet" in response.text
        await http.post(f"/assessments/{assessment_id}/cancel")


def test_the_cli_report_table_shows_tokens_and_cost_per_party() -> None:
    from datetime import UTC, datetime

    from rich.console import Console

    from api.cli.run import report_table
    from api.db.repository import AssessmentRecord
    from green_agent.core.models import AssessmentReport, UsageReport
    from green_agent.core.usage import Usage

    now = datetime.now(UTC)
    record = AssessmentRecord(
        id="a", status="completed", agent_url="http://agent", config={}, source="cli", idempotency_key=None,
        a2a_task_id=None, a2a_context_id=None, warnings=[], trials_total=1, trials_done=1, run_seconds=1.0,
        report=None, error=None, created_at=now, started_at=now, finished_at=now,
    )  # fmt: skip
    usage = UsageReport(
        user=Usage(model="u", calls=2, prompt_tokens=200, completion_tokens=40, cost_usd=0.00072),
        judge=Usage(model="j", calls=1, prompt_tokens=1000, completion_tokens=100, cost_usd=None),
    )
    report = AssessmentReport(
        num_tasks=1,
        num_trials=1,
        trials_total=1,
        trials_scored=1,
        complete=True,
        avg_reward=1.0,
        usage=usage,
    )
    console = Console(width=200, record=True)
    console.print(report_table(record, report))
    text = console.export_text()
    assert "user simulator tokens" in text and "200 in / 40 out, 0.0007 USD" in text
    assert "judge tokens" in text and "1000 in / 100 out, cost unknown" in text
    assert "agent (reported)" not in text


async def test_airline_beside_retail_export_rescore_and_one_submission(
    tmp_path: Path, oracle_url: str
) -> None:
    """An airline and a retail assessment in one service: the airline export names its domain and loads in
    tau2's format, `rescore` re-scores it in airline (the domain read from the file), `--domain` refuses
    the other domain on each command, and one submission carries both domains."""
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'domains.db'}"
    runs = {"retail": ["0", "10"], "airline": ["11", "14"]}  # no NL assertion scores any of them
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url) as http:
        ids = {}
        for domain, tasks in runs.items():
            body = {"agent_url": oracle_url, "domain": domain, "tasks": {"task_ids": tasks}, "trials": 2}
            response = await http.post("/assessments", json=body)
            assert response.status_code in (200, 201, 202), response.text
            ids[domain] = response.json()["id"]
        for assessment_id in ids.values():
            await wait_completed(http, assessment_id)
        response = await http.get(f"/assessments/{ids['airline']}/export", params={"format": "tau2"})
        assert response.status_code == 200, response.text
        exported = tau2_schema.Results.model_validate(response.json())
    assert exported.info.environment_info.domain_name == "airline"
    assert [t.id for t in exported.tasks] == ["11", "14"] and len(exported.simulations) == 4
    assert {s.reward_info.reward for s in exported.simulations if s.reward_info} == {1.0}

    db = ("--database-url", database_url)
    path = tmp_path / "airline.json"
    code, output = await green_agent("export", ids["airline"], "--domain", "retail", "-o", str(path), *db)
    assert code == 1 and f"assessment {ids['airline']} ran the airline domain, not retail" in output
    code, output = await green_agent("export", ids["airline"], "--domain", "airline", "-o", str(path), *db)
    assert code == 0 and "tau2 airline results file written" in output, output
    assert json.loads(path.read_text())["info"]["environment_info"]["domain_name"] == "airline"

    code, output = await green_agent("rescore", str(path), "--json")
    assert code == 0, output
    rescored = json.loads(output[output.index("{") :])
    assert rescored["domain"] == "airline" and rescored["tasks_in_file"] == 2
    assert rescored["totals"]["rewards_agree"] == rescored["totals"]["rewards_compared"] == 4
    assert rescored["totals"]["communicate_agree"] == rescored["totals"]["communicate_compared"] == 4
    code, output = await green_agent("rescore", str(path), "--domain", "retail")
    assert code == 2 and "the file holds airline results" in output, output
    # Kept as an assessment (--store), the re-scored file is an airline one wherever it is listed.
    code, output = await green_agent("rescore", str(path), "--store", *db)
    assert code == 0, output
    stored = re.search(r"stored as assessment (\S+) \(source import\)", output)
    assert stored is not None, output
    engine = create_engine(database_url)
    try:
        imported = await AssessmentRepository(engine).get(stored.group(1))
    finally:
        await engine.dispose()
    assert imported is not None and imported.domain == "airline" and imported.source == "import"

    out = tmp_path / "submission"
    identity = ("--model-name", "My Agent", "--organization", "Org", "--email", "a@example.com")
    code, output = await green_agent(
        "submission", ids["retail"], ids["airline"], *identity, "--domain", "retail", "-o", str(out), *db
    )
    assert code == 1 and "ran the airline domain, not retail" in output, output
    code, output = await green_agent(
        "submission", ids["retail"], ids["airline"], *identity, "-o", str(out), *db
    )
    assert code == 0, output
    assert "retail: only 2 of 114 retail tasks" in output and "airline: only 2 of 50 airline tasks" in output
    submission = tau2_schema.Submission.model_validate_json((out / "submission.json").read_text())
    assert submission.trajectory_files == {
        "retail": "my-agent_retail_default_scripted_2trials.json",
        "airline": "my-agent_airline_default_scripted_2trials.json",
    }
    assert submission.results.retail and submission.results.airline
    assert (submission.results.airline.pass_1, submission.results.airline.pass_2) == (100.0, 100.0)
    for domain, name in submission.trajectory_files.items():
        trajectories = tau2_schema.Results.model_validate_json((out / "trajectories" / name).read_text())
        assert trajectories.info.environment_info.domain_name == domain
        assert trajectories.info.agent_info.llm == "My Agent"
    code, output = await green_agent(
        "submission", ids["retail"], ids["retail"], *identity, "-o", str(out), *db
    )
    assert code == 1 and "both ran retail" in output, output
