"""Dual control: each party reaches only its own tools; upstream's evaluation of a trajectory (the replay of
both parties' writes, the env assertions, the action check that ignores who called); the domain as the
engine sees it (domain_kit's protocols)."""

from __future__ import annotations

import random
import re

import pytest

from domain_kit import DomainData, DomainEnvironment, ToolCall, check_actions, score_trial
from domain_kit.tasks import InitialState, SetupCall
from telecom_domain import (
    AGENT_TOOL_NAMES,
    DOMAIN_NAME,
    USER_TOOL_NAMES,
    TelecomData,
    TelecomEnvironment,
    load_data,
    load_telecom_data,
)
from telecom_domain.initial_state import apply_initial_state

MMS_TASK = "[mms_issue]break_app_storage_permission[PERSONA:Easy]"
TRANSFER_TASK = "[service_issue]lock_sim_card_pin[PERSONA:Hard]"


def test_telecom_is_a_domain(telecom: TelecomData) -> None:
    domain: DomainData = telecom
    env: DomainEnvironment = domain.new_environment(MMS_TASK)
    assert domain.name == DOMAIN_NAME == "telecom" and load_data is load_telecom_data
    assert [s["function"]["name"] for s in domain.tool_schemas] == list(AGENT_TOOL_NAMES)
    assert [s["function"]["name"] for s in domain.user_tool_schemas] == list(USER_TOOL_NAMES)
    assert len(AGENT_TOOL_NAMES) == 13 and len(USER_TOOL_NAMES) == 30
    assert "transfer_to_human_agents" not in domain.write_tools | domain.read_tools
    assert env.user_db_hash() is not None
    assert env.assertion("assert_can_send_mms", {"expected_status": True}, "user") is False


@pytest.mark.parametrize(
    ("name", "requestor"),
    [
        ("toggle_data", "assistant"),
        ("grant_app_permission", "assistant"),
        ("refuel_data", "user"),
        ("set_user_info", "user"),
    ],
)
def test_a_tool_of_the_other_side_is_unknown(telecom: TelecomData, name: str, requestor: str) -> None:
    env = telecom.new_environment(MMS_TASK)
    before = (env.db_hash(), env.user_db_hash())
    arguments = {"app_name": "messaging", "permission": "storage"} if name == "grant_app_permission" else {}
    result = env.call(name, arguments, requestor)  # type: ignore[arg-type]
    assert (result.error, result.content) == (True, f"Error: Tool '{name}' not found.")
    assert (env.db_hash(), env.user_db_hash()) == before


def test_python_errors_surface_as_upstream_words_them(telecom: TelecomData) -> None:
    env = telecom.new_environment()
    cases = [
        (
            "transfer_to_human_agents",
            {},
            "assistant",
            "TelecomTools.transfer_to_human_agents() missing 1 required positional argument: 'summary'",
        ),
        (
            "toggle_data",
            {"x": 1},
            "user",
            "TelecomUserTools.toggle_data() got an unexpected keyword argument 'x'",
        ),
        (
            "refuel_data",
            {"customer_id": "C1001", "line_id": "L1002", "gb_amount": "2"},
            "assistant",
            "'<=' not supported between instances of 'str' and 'int'",
        ),
        ("get_details_by_id", {"id": "X1"}, "assistant", "Unknown ID format or type: X1"),
        ("get_customer_by_id", {"customer_id": "C9"}, "assistant", "Customer with ID C9 not found"),
        (
            "resume_line",
            {"customer_id": "C1001", "line_id": "L1004"},
            "assistant",
            "Line L1004 not found for customer C1001",
        ),
        ("toggle_data", {}, "nobody", "Invalid requestor: nobody"),
    ]
    for name, arguments, requestor, message in cases:
        result = env.call(name, arguments, requestor)  # type: ignore[arg-type]
        assert (result.error, result.content) == (True, f"Error: {message}"), name
    assert env.call("toggle_data", ["x"], "user").error  # type: ignore[arg-type]


def test_a_hostile_agent_naming_customer_tools_gains_nothing(telecom: TelecomData) -> None:
    task = telecom.task(MMS_TASK)
    env = telecom.new_environment(MMS_TASK)
    calls = [
        ToolCall("grant_app_permission", {"app_name": "messaging", "permission": "storage"}, "assistant")
    ]
    for call in calls:
        assert env.call(call.name, call.arguments, call.requestor).error
    check = telecom.check_environment(MMS_TASK, env, calls)
    assert [(a.func_name, a.actual) for a in check.assertions] == [("assert_can_send_mms", False)]
    assert score_trial(task, "agent_stop", env_assertions_met=check.assertions_met).reward == 0.0
    # The customer doing it is what the task needs.
    calls = [ToolCall("grant_app_permission", {"app_name": "messaging", "permission": "storage"}, "user")]
    assert telecom.check_environment(MMS_TASK, env, calls).assertions_met


def test_the_action_check_ignores_who_called_and_whether_it_worked(telecom: TelecomData) -> None:
    """Upstream: a transfer only the customer 'makes' (and that fails for it) matches the gold transfer."""
    task = telecom.task(TRANSFER_TASK)
    assert task.reward_basis == ("ENV_ASSERTION", "ACTION")
    env = telecom.new_environment(TRANSFER_TASK)
    call = ToolCall("transfer_to_human_agents", {"summary": "locked SIM"}, "user")
    assert env.call(call.name, call.arguments, call.requestor).error
    check = telecom.check_environment(TRANSFER_TASK, env, [call])
    assert check.assertions_met  # the phone stays without service: that is the assertion
    actions = check_actions(task.gold_actions, [call], telecom.write_tools)
    reward = score_trial(
        task, "user_stop", env_assertions_met=check.assertions_met, actions_met=actions[0].matched
    )
    assert reward.reward == 1.0
    assert score_trial(task, "user_stop", env_assertions_met=True, actions_met=False).reward == 0.0


def test_an_assertion_that_raises_is_not_met(telecom: TelecomData) -> None:
    """A customer can corrupt its phone's APN so that upstream's MMS assertion raises (its evaluator then
    aborts and the run is retried); here the assertion is not met, with the error."""
    env = telecom.new_environment(MMS_TASK)
    calls = [ToolCall("set_apn_settings", {"apn_settings": "internet"}, "user")]
    check = telecom.check_environment(MMS_TASK, env, calls)
    (assertion,) = check.assertions
    assert assertion.actual is None and not assertion.met
    assert assertion.error == "AttributeError: 'str' object has no attribute 'mmsc_url'"


def _random_trajectory(rng: random.Random) -> list[ToolCall]:
    user_calls: list[tuple[str, dict[str, object]]] = [
        ("toggle_airplane_mode", {}),
        ("toggle_data", {}),
        ("toggle_roaming", {}),
        ("reboot_device", {}),
        ("make_payment", {}),
        ("connect_vpn", {}),
        ("reset_apn_settings", {}),
        ("set_network_mode_preference", {"mode": "4g_only"}),
        ("grant_app_permission", {"app_name": "messaging", "permission": "sms"}),
        ("check_status_bar", {}),
    ]
    agent_calls: list[tuple[str, dict[str, object]]] = [
        ("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 1.0}),
        ("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.0}),  # a new draft bill
        ("enable_roaming", {"customer_id": "C1001", "line_id": "L1002"}),
        ("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"}),
        ("send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"}),
        ("suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "x"}),
        ("resume_line", {"customer_id": "C1001", "line_id": "L1002"}),
        ("transfer_to_human_agents", {"summary": "s"}),
    ]
    calls = []
    for _ in range(rng.randint(3, 20)):
        if rng.random() < 0.6:
            name, arguments = rng.choice(user_calls)
            calls.append(ToolCall(name, dict(arguments), "user"))
        else:
            name, arguments = rng.choice(agent_calls)
            calls.append(ToolCall(name, dict(arguments), "assistant"))
    return calls


def test_the_replay_ends_where_the_live_trial_ended(telecom: TelecomData) -> None:
    """check_environment replays the calls as upstream does; with nothing random left (new draft bills are
    named from the task), the replay and the live environment agree, hash for hash."""
    rng = random.Random(7)
    task_ids = telecom.split("base")
    for _ in range(60):
        task_id = rng.choice(task_ids)
        calls = _random_trajectory(rng)
        env = telecom.new_environment(task_id)
        for call in calls:
            env.call(call.name, call.arguments, call.requestor)
        check = telecom.check_environment(task_id, env, calls)
        assert (check.db_actual_hash, check.user_db_hash) == (env.db_hash(), env.user_db_hash())


def test_a_new_draft_bill_is_named_like_upstreams_and_reproducibly(telecom: TelecomData) -> None:
    names = []
    for _ in range(2):
        env = telecom.new_environment(MMS_TASK)
        env.call("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.5})
        bill = env.db.bills[-1]
        assert re.fullmatch(r"B[0-9a-f]{8}", bill.bill_id) and bill.customer_id == "C1002"
        assert (str(bill.period_start), str(bill.period_end), str(bill.due_date)) == (
            "2025-03-01",
            "2025-03-31",
            "2025-03-15",
        )
        assert bill.line_items[0].amount == 0.15000000000000002
        names.append(bill.bill_id)
    assert names[0] == names[1]


def test_gold_outcome(telecom: TelecomData) -> None:
    gold = telecom.gold("[service_issue]overdue_bill_suspension[PERSONA:Easy]")
    assert [(c.requestor, c.name) for c in gold.actions] == [
        ("assistant", "send_payment_request"),
        ("user", "make_payment"),
        ("assistant", "resume_line"),
        ("user", "reboot_device"),
    ]
    assert gold.failed_calls == () and gold.user_db_hash is not None
    assert telecom.gold("[service_issue]overdue_bill_suspension[PERSONA:Easy]") is gold


# --------------------------------------------------------------------------- initial states in general


def test_initialization_data_is_merged_before_the_setup_calls(telecom: TelecomData) -> None:
    env = telecom.new_environment()
    state = InitialState(
        initialization_data={
            "agent_data": {
                "plans": [
                    {
                        "plan_id": "P1",
                        "name": "One",
                        "data_limit_gb": 1,
                        "price_per_month": 1,
                        "data_refueling_price_per_gb": 1,
                    }
                ]
            },
            "user_data": {"device": {"battery_level": 42}},
        },
        initialization_actions=(SetupCall("user", "turn_data_saver_mode_on", {}),),
        message_history=(),
    )
    apply_initial_state(env, state)
    assert [p.plan_id for p in env.db.plans] == ["P1"] and env.db.plans[0].data_limit_gb == 1.0
    assert env.user_db.device.battery_level == 42 and env.user_db.device.data_saver_mode
    assert env.user_db.device.app_statuses["messaging"].permissions.sms  # the rest of the phone kept


def test_a_message_history_replays_its_writes_strictly(telecom: TelecomData) -> None:
    history = (
        {"role": "assistant", "content": "hi", "tool_calls": None},
        {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "1", "name": "toggle_data", "arguments": {}, "requestor": "user"}],
        },
        {
            "role": "tool",
            "id": "1",
            "content": "Mobile Data is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G | 📵 Data Disabled | 🔋 80%",
            "requestor": "user",
        },
    )
    env = telecom.new_environment()
    apply_initial_state(env, InitialState(None, (), history))
    assert env.user_db.device.data_enabled is False
    wrong = (history[0], history[1], {**history[2], "content": "something else"})
    with pytest.raises(ValueError, match="Tool call:"):
        apply_initial_state(telecom.new_environment(), InitialState(None, (), wrong))
    with pytest.raises(ValueError, match="Tool call id mismatch"):
        apply_initial_state(
            telecom.new_environment(), InitialState(None, (), (history[1], {**history[2], "id": "2"}))
        )


def test_environments_do_not_share_state(telecom: TelecomData) -> None:
    first = telecom.new_environment(MMS_TASK)
    second = telecom.new_environment(MMS_TASK)
    first.call("toggle_airplane_mode", {}, "user")
    first.call("suspend_line", {"customer_id": "C1001", "line_id": "L1001", "reason": "x"})
    assert second.user_db.device.airplane_mode is False and second.db.lines[0].status == "Active"
    assert isinstance(first, TelecomEnvironment)


def test_a_failed_assertion_says_what_the_end_state_held(telecom: TelecomData) -> None:
    """For a reader of a failure: where an env assertion does not hold, the check says in words what it
    found there (every assertion function the base tasks use, on each task's untouched initial state); a
    held one says nothing more."""
    found: dict[str, set[str]] = {}
    for task_id in telecom.split("base"):
        check = telecom.check_environment(task_id, telecom.new_environment(task_id), [])
        for assertion in check.assertions:
            if assertion.met:
                assert assertion.found is None
            else:
                assert assertion.found, (task_id, assertion.func_name)
                found.setdefault(assertion.func_name, set()).add(assertion.found)
    assert found == {
        "assert_service_status": {"service status is no_service"},
        "assert_no_overdue_bill": {"bill B1234321 is Overdue"},
        "assert_mobile_data_status": {"mobile data does not work"},
        "assert_internet_speed": {"speed test: no connection"},
        "assert_can_send_mms": {"MMS cannot be sent"},
        "assert_data_refueling_amount": {"line L1002 refuelled 0.0 GB"},
    }
