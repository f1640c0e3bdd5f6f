"""Our report and tau2's own metrics over our export tell the same numbers, partial assessments included, in
retail and airline.

Each assessment runs for real (reference or hostile agent over loopback A2A; scripted customer or the fake
OpenAI-compatible customer); its trials are exported as a tau2 v1.0.1 results file, checked against
tests/support/tau2_schema.py, and tau2's avg reward and pass^k are computed from the file alone
(tests/support/tau2_metrics.py, tau2's rule in our words) and compared with our report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from domain_kit import DomainData
from green_agent import AssessmentConfig, AssessmentReport, LLMEndpoint, TaskSelection, TrialResult
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_app, serve_reference_agent
from green_agent.reference_agents.hostile import HostileAgent
from green_agent.tau2_format import ExportSource, tau2_results
from green_agent.tau2_format.rescore import rescore_document
from retail_domain import RetailData
from tests.engine.conftest import run
from tests.engine.test_dual_control import inbox_customer
from tests.engine.test_llm_context import RETRIES, customer, passing_judge
from tests.engine.test_provoked_llm_failures import FAILURES, PROVOKE, failing_on_marker
from tests.support import tau2_schema
from tests.support.fake_llm import FakeReply, serve_fake_llm
from tests.support.tau2_metrics import upstream_metrics


def export(
    data: DomainData, config: AssessmentConfig, report: AssessmentReport, trials: list[TrialResult]
) -> Any:
    source = ExportSource(
        assessment_id="a1",
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        agent_url=config.agent_url,
        config=config,
        report=report,
        trials=trials,
    )
    document = tau2_results(source, data)
    tau2_schema.Results.model_validate(document)
    return document


def assert_same_numbers(document: Any, report: AssessmentReport) -> None:
    average, pass_k = upstream_metrics(document)
    assert average == pytest.approx(report.avg_reward)
    assert pass_k.keys() == report.pass_hat_k.keys()
    for k, value in pass_k.items():
        assert value == pytest.approx(report.pass_hat_k[k]), k


async def test_a_demo_without_judge_exports_the_numbers_it_reports(data: RetailData) -> None:
    """The issue's case: the oracle, the scripted customer, no judge. Tasks 2 and 24 need the judge, so their
    trials are not judged and excluded from our metrics; before, the export wrote them as user_stop without
    a reward, which tau2 counts as failures (its pass^1 0.649 against our 1.0 over the 114 tasks). Now they
    are left out of the file."""
    tasks = ["0", "2", "5", "10", "24"]
    async with serve_reference_agent("oracle", data=data) as url:
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=tasks), trials=2)
        report, events = await run(data, config)
    assert report.partial_reasons == {"not_judged": 4} and report.pass_hat_k == {1: 1.0, 2: 1.0}
    document = export(data, config, report, events.results)
    assert_same_numbers(document, report)
    exported = sorted((s["task_id"], s["trial"]) for s in document["simulations"])
    assert exported == sorted((task, k) for task in ("0", "5", "10") for k in range(2))
    assert all(s["reward_info"] is not None for s in document["simulations"])


async def test_a_partial_assessment_with_our_failures_and_the_agents_exports_the_numbers_it_reports(
    data: RetailData,
) -> None:
    """Two trials per task: 0 solved, 1 given up, 5's customer-LLM is down on one trial (ours: excluded after
    retries), 6 provokes the customer-LLM (the agent's: 0), 24 solved and judged."""
    answer = failing_on_marker(FAILURES["content_policy"], customer(data))
    down_once: dict[str, int] = {}

    def user(body: dict[str, Any]) -> FakeReply:
        system = body["messages"][0]["content"]
        if (
            "<scenario>" in system
            and data.tasks["5"].scenario_text() in system
            and body.get("seed") == 626729
        ):
            down_once["5"] = down_once.get("5", 0) + 1
            return FakeReply(status=503)
        return answer(body)

    agent = HostileAgent(data, {"1": [], "6": [PROVOKE]})
    tasks = ["0", "1", "5", "6", "24"]
    async with (
        serve_fake_llm(user) as user_llm,
        serve_fake_llm(passing_judge) as judge_llm,
        serve_app(agent.app) as url,
    ):
        settings = {
            "user_models": {"fake-user": LLMEndpoint(model="fake-user", base_url=user_llm.base_url)},
            "default_user_model": "fake-user",
            "judge": LLMEndpoint(model="fake-judge", base_url=judge_llm.base_url),
            **RETRIES,
        }
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=tasks), trials=2)
        report, events = await run(data, config, **settings)
    assert report.partial_reasons == {"infrastructure_error": 1}
    assert report.termination_counts["agent_error"] == 2  # task 6, both trials
    assert report.task_rewards == {"0": 1.0, "1": 0.0, "5": 1.0, "6": 0.0, "24": 1.0}
    document = export(data, config, report, events.results)
    assert_same_numbers(document, report)
    assert set(report.pass_hat_k) == {1}  # task 5 kept one trial: pass^k only for k = 1, as tau2
    charged = [s for s in document["simulations"] if s["task_id"] == "6"]
    assert {s["termination_reason"] for s in charged} == {"agent_error"}
    assert all(s["reward_info"]["reward"] == 0.0 for s in charged)
    assert all(s["info"]["error"].startswith("provoked_llm_failure:content_policy") for s in charged)
    # task 5's first trial (our customer down) is left out; its second is there
    assert [s["trial"] for s in document["simulations"] if s["task_id"] == "5"] == [1]
    assert len(document["simulations"]) == 9


@pytest.mark.parametrize("skip", [False, True])
async def test_the_nl_component_is_exported_only_where_the_judge_gave_a_verdict(
    data: RetailData, skip: bool
) -> None:
    """Task 2 given up (DB failed), 24 solved, 0 has no assertions. By default the judge is asked on task 2
    too and its verdict is in `reward_breakdown`, as upstream writes it; skipping the judge there leaves
    NL_ASSERTION out of the breakdown rather than writing a 1.0 nobody gave (the `all()` of no verdicts)."""
    agent = HostileAgent(data, {"2": []})
    async with serve_fake_llm(passing_judge) as judge_llm, serve_app(agent.app) as url:
        settings = {
            "judge": LLMEndpoint(model="fake-judge", base_url=judge_llm.base_url),
            "judge_skip_when_failed": skip,
        }
        config = AssessmentConfig(agent_url=url, tasks=TaskSelection(task_ids=["0", "2", "24"]))
        report, events = await run(data, config, **settings)
    assert report.complete and report.task_rewards == {"0": 1.0, "2": 0.0, "24": 1.0}
    document = export(data, config, report, events.results)
    assert_same_numbers(document, report)
    info = {s["task_id"]: s["reward_info"] for s in document["simulations"]}
    assert info["0"]["reward_breakdown"] == {"DB": 1.0, "NL_ASSERTION": 1.0}
    assert info["24"]["reward_breakdown"] == {"DB": 1.0, "NL_ASSERTION": 1.0}
    if skip:
        assert info["2"]["reward_breakdown"] == {"DB": 0.0}
        assert info["2"]["nl_assertions"] is None
    else:  # the (fake) judge said the assertion was met: a real verdict on a trial the DB check failed
        assert info["2"]["reward_breakdown"] == {"DB": 0.0, "NL_ASSERTION": 1.0}
        assert [a["met"] for a in info["2"]["nl_assertions"]] == [True]


AIRLINE_TASKS = ["0", "1", "11", "14", "23"]
"""Reads only (0, 1), a flight change and a fact to say (11), cancel + book and facts (14), cancel + 3
bookings and facts (23)."""


async def test_an_airline_assessment_exports_in_airline_with_the_numbers_it_reports(data: RetailData) -> None:
    """The airline export: its environment, policy, tasks as upstream's results files hold them (without the
    task file's `annotations`), tool types from airline's read and write sets, DB x COMMUNICATE, and the
    numbers tau2 computes from it equal ours; re-scoring the file agrees with every stored reward. The
    oracle solves every task; the hostile agent gives up on 11 and otherwise makes the gold calls without
    ever stating the facts to communicate (14 and 23 then fail on COMMUNICATE alone)."""
    airline = load_domain("airline")
    documents = {}
    for name in ("oracle", "hostile"):
        agent = HostileAgent(airline, {"11": []})
        async with (
            serve_reference_agent("oracle", data=airline) if name == "oracle" else serve_app(agent.app)
        ) as url:
            config = AssessmentConfig(
                agent_url=url, domain="airline", tasks=TaskSelection(task_ids=AIRLINE_TASKS), trials=2
            )
            report, events = await run(data, config)
        assert report.domain == "airline" and report.complete
        documents[name] = document = export(airline, config, report, events.results)
        assert_same_numbers(document, report)
        rescored = await rescore_document(document, airline)
        totals = rescored.totals
        assert rescored.domain == "airline" and totals.replay_mismatches == 0
        assert totals.rewards_agree == totals.rewards_compared == len(document["simulations"]) == 10
        assert totals.db_agree == totals.db_compared == 10
        assert totals.communicate_agree == totals.communicate_compared == 6  # 11, 14, 23 say facts

    oracle, hostile = documents["oracle"], documents["hostile"]
    info = oracle["info"]["environment_info"]
    assert (info["domain_name"], info["policy"]) == ("airline", airline.policy)
    assert [t["id"] for t in oracle["tasks"]] == AIRLINE_TASKS
    assert all("annotations" not in t for t in oracle["tasks"])
    assert oracle["tasks"][2]["evaluation_criteria"] == airline.task_document("11")["evaluation_criteria"]
    assert {s["reward_info"]["reward"] for s in oracle["simulations"]} == {1.0}
    solved = next(s for s in oracle["simulations"] if s["task_id"] == "14")["reward_info"]
    assert solved["reward_basis"] == ["DB", "COMMUNICATE"]
    assert solved["reward_breakdown"] == {"DB": 1.0, "COMMUNICATE": 1.0}
    assert solved["nl_assertions"] is None and solved["env_assertions"] is None
    types = {c["action"]["name"]: c["tool_type"] for c in solved["action_checks"]}
    assert types == {"cancel_reservation": "write", "book_reservation": "write"}
    reads = next(s for s in oracle["simulations"] if s["task_id"] == "1")["reward_info"]["action_checks"]
    assert {c["tool_type"] for c in reads} == {"read"}

    breakdowns = {s["task_id"]: s["reward_info"]["reward_breakdown"] for s in hostile["simulations"]}
    assert breakdowns == {
        "0": {"DB": 1.0, "COMMUNICATE": 1.0},
        "1": {"DB": 1.0, "COMMUNICATE": 1.0},
        "11": {"DB": 0.0, "COMMUNICATE": 0.0},
        "14": {"DB": 1.0, "COMMUNICATE": 0.0},
        "23": {"DB": 1.0, "COMMUNICATE": 0.0},
    }


TELECOM_TASKS = [
    "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]",
    "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]",
    "[service_issue]contract_end_suspension|lock_sim_card_pin[PERSONA:Hard]",
    "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]",
]
"""Both parties' calls with a payment synced to the phone; the customer's calls alone; a transfer (ACTION);
a data refuel by the agent and a toggle by the customer."""


async def test_a_telecom_assessment_exports_in_telecom_with_the_numbers_it_reports(data: RetailData) -> None:
    """The telecom export: the customer's calls and their results with requestor "user", env assertions as
    upstream's checks, ENV_ASSERTION (x ACTION) as the basis; tau2's numbers from the file equal ours, and
    re-scoring it (both parties' calls replayed, the assertions run on the end state) agrees with every
    stored reward. The oracle solves all four; an agent that only talks leaves the scripted customer to do
    its part alone, which fixes the phone where the customer's calls are the whole fix."""
    telecom = load_domain("telecom")
    documents = {}
    for name in ("oracle", "no_tools"):
        async with serve_reference_agent(name, data=telecom) as url:
            config = AssessmentConfig(
                agent_url=url, domain="telecom", tasks=TaskSelection(task_ids=TELECOM_TASKS), trials=2
            )
            report, events = await run(data, config)
        assert report.domain == "telecom" and report.complete
        documents[name] = document = export(telecom, config, report, events.results)
        assert_same_numbers(document, report)
        rescored = await rescore_document(document, telecom)
        totals = rescored.totals
        assert rescored.domain == "telecom" and totals.replay_mismatches == 0
        assert totals.rewards_agree == totals.rewards_compared == len(document["simulations"]) == 8
        assert totals.env_assertions_agree == totals.env_assertions_compared == 8

    oracle, talker = documents["oracle"], documents["no_tools"]
    assert oracle["info"]["environment_info"]["domain_name"] == "telecom"
    assert {s["reward_info"]["reward"] for s in oracle["simulations"]} == {1.0}
    paid = next(s for s in oracle["simulations"] if s["task_id"] == TELECOM_TASKS[0])
    calls = [(c["requestor"], c["name"]) for m in paid["messages"] for c in m.get("tool_calls") or ()]
    assert calls[:2] == [("user", "toggle_airplane_mode"), ("assistant", "send_payment_request")]
    assert [m["requestor"] for m in paid["messages"] if m["role"] == "tool"] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    info = paid["reward_info"]
    assert info["reward_basis"] == ["ENV_ASSERTION"] and info["reward_breakdown"] == {"ENV_ASSERTION": 1.0}
    assert [(c["env_assertion"]["func_name"], c["met"]) for c in info["env_assertions"]] == [
        ("assert_service_status", True),
        ("assert_no_overdue_bill", True),
    ]
    transfer = next(s for s in oracle["simulations"] if s["task_id"] == TELECOM_TASKS[2])["reward_info"]
    assert transfer["reward_breakdown"] == {"ENV_ASSERTION": 1.0, "ACTION": 1.0}

    rewards = {s["task_id"]: s["reward_info"]["reward"] for s in talker["simulations"]}
    assert rewards == {
        TELECOM_TASKS[0]: 0.0,  # the customer cannot pay a bill nobody asked for
        TELECOM_TASKS[1]: 1.0,  # two toggles on the phone: the customer's part is the whole fix
        TELECOM_TASKS[2]: 0.0,  # nobody transferred
        TELECOM_TASKS[3]: 0.0,  # nobody refuelled the data
    }
    breakdowns = {s["task_id"]: s["reward_info"]["reward_breakdown"] for s in talker["simulations"]}
    assert breakdowns[TELECOM_TASKS[2]] == {"ENV_ASSERTION": 1.0, "ACTION": 0.0}


async def test_a_mock_export_says_the_customers_db_differs_where_it_does(data: RetailData) -> None:
    """update_task_with_user_tools, played as its scenario says (the customer dismisses its notification):
    the agent's DB equals gold, the customer's does not (the gold replay never dismisses it), so upstream's
    DB check fails and the reward is 0. The export's db_check and DB component say so, and re-scoring the
    file agrees with them."""
    mock = load_domain("mock")
    async with (
        serve_fake_llm(inbox_customer("update_task_with_user_tools")) as fake,
        serve_reference_agent("oracle", data=mock) as url,
    ):
        config = AssessmentConfig(
            agent_url=url,
            domain="mock",
            user_model="fake",
            tasks=TaskSelection(task_ids=["update_task_with_user_tools"]),
        )
        endpoint = LLMEndpoint(model="fake", base_url=fake.base_url, api_key="x")
        report, events = await run(data, config, user_models={"fake": endpoint})
    (result,) = events.results
    assert result.reward == 0.0 and result.db_actual_hash == result.db_expected_hash
    document = export(mock, config, report, events.results)
    assert_same_numbers(document, report)
    info = document["simulations"][0]["reward_info"]
    assert info["db_check"] == {"db_match": False, "db_reward": 0.0}
    assert info["reward_breakdown"] == {"DB": 0.0, "ACTION": 1.0, "ENV_ASSERTION": 1.0}
    totals = (await rescore_document(document, mock)).totals
    assert totals.rewards_agree == totals.db_agree == totals.db_compared == 1
