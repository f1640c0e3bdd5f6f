"""The customer's side of a dual-control trial as a trial page shows it (green_agent.scoring.diagnosis): its
DB at the task's start and at the trial's end (the stored calls of both parties replayed), the fields that
changed, and the bound `max_customer_state_bytes`: at it everything is shown, one byte past it the two states
are left out and only the changes that fit are listed, saying so."""

from __future__ import annotations

import pytest

from domain_kit import DomainData
from green_agent import AssessmentConfig, TaskSelection, TrialResult
from green_agent.core.limits import AgentLimits, compact_json, utf8_size
from green_agent.domains import load_domain
from green_agent.reference_agents import serve_reference_agent
from green_agent.scoring.diagnosis import StateChange, customer_state, diagnose
from tests.engine.conftest import run

PAYMENT_TASK = "[service_issue]airplane_mode_on|overdue_bill_suspension[PERSONA:None]"
MANY_ISSUES = (
    "[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|break_apn_mms_setting|"
    "break_app_both_permissions|data_mode_off|data_usage_exceeded|unseat_sim_card|"
    "user_abroad_roaming_disabled_off[PERSONA:Hard]"
)
FIXED = [
    StateChange("device.airplane_mode", True, False),
    StateChange("device.network_signal_strength", "none", "excellent"),
    StateChange("device.network_technology_connected", "none", "5G"),
    StateChange("device.network_connection_status", "no_service", "connected"),
    StateChange("surroundings.line_active", False, True),
]


@pytest.fixture(scope="module")
def telecom() -> DomainData:
    return load_domain("telecom")


async def solve(telecom: DomainData, task_id: str) -> TrialResult:
    async with serve_reference_agent("oracle", data=telecom) as url:
        config = AssessmentConfig(agent_url=url, domain="telecom", tasks=TaskSelection(task_ids=[task_id]))
        _, events = await run(telecom, config)
    (result,) = events.results
    assert result.reward == 1.0
    return result


@pytest.fixture(scope="module")
async def solved(telecom: DomainData) -> TrialResult:
    return await solve(telecom, PAYMENT_TASK)


def test_the_phone_at_the_start_and_at_the_end(telecom: DomainData, solved: TrialResult) -> None:
    state = customer_state(telecom, solved)
    assert state is not None and state.omitted is None
    assert state.changes == FIXED
    before, after = state.before, state.after
    assert isinstance(before, dict) and isinstance(after, dict)
    assert before["device"]["airplane_mode"] is True and before["surroundings"]["line_active"] is False
    assert after["device"]["network_connection_status"] == "connected"  # plain JSON: enumerations as values
    assert set(before) == set(after) == {"device", "surroundings"}
    # The page's diagnosis carries it too; retail and airline customers have no DB of their own.
    assert diagnose(telecom, solved).customer == state
    retail = load_domain("retail")
    retail_trial = solved.model_copy(update={"task_id": "0", "transcript": []})
    assert customer_state(retail, retail_trial) is None


def test_past_max_customer_state_bytes_only_the_changes_that_fit_are_listed(
    telecom: DomainData, solved: TrialResult
) -> None:
    full = customer_state(telecom, solved)
    assert full is not None
    whole = utf8_size(compact_json(full.before)) + utf8_size(compact_json(full.after))
    at = customer_state(telecom, solved, limits=AgentLimits(max_customer_state_bytes=whole))
    assert at == full

    past = customer_state(telecom, solved, limits=AgentLimits(max_customer_state_bytes=whole - 1))
    assert past is not None and past.before is None and past.after is None and past.changes == FIXED
    assert past.omitted == (
        f"the customer's DB at the start and at the end hold {whole} bytes of JSON, over "
        f"max_customer_state_bytes={whole - 1}: only the fields that changed are shown"
    )


async def test_past_the_bound_the_changes_are_cut_where_they_stop_fitting(telecom: DomainData) -> None:
    """A task with nine issues: the oracle and the customer change many fields of the phone."""
    result = await solve(telecom, MANY_ISSUES)
    full = customer_state(telecom, result)
    assert full is not None and len(full.changes) > 10
    sizes = [utf8_size(compact_json([c.path, c.before, c.after])) for c in full.changes]
    kept = next(k for k in range(1, len(sizes)) if sum(sizes[:k]) >= 256)
    bound = sum(sizes[:kept])
    at = customer_state(telecom, result, limits=AgentLimits(max_customer_state_bytes=bound))
    assert at is not None and at.before is None and at.changes == full.changes[:kept]
    more = len(full.changes) - kept
    said = f"; {more} more changed fields are not listed (max_customer_state_bytes)"
    assert (at.omitted or "").endswith(said)
    past = customer_state(telecom, result, limits=AgentLimits(max_customer_state_bytes=bound - 1))
    assert past is not None and past.changes == full.changes[: kept - 1]
