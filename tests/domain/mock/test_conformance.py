"""Every fact of conformance/mock against this port: pristine and per-task DB hashes after the initial state,
each gold call's live output, the evaluator's gold DB (and the live-run DB), each env assertion before and
after the gold actions, and upstream's reward for the gold trajectory (1 on 7 tasks, 0 on three)."""

from __future__ import annotations

from typing import Any

import pytest

from domain_kit import TerminationReason, ToolCall, check_actions, check_communicate, score_trial
from mock_domain import WRITE_TOOLS, MockData

from .conftest import FACTS, TASK_FACTS

TASK_IDS = list(TASK_FACTS)


def test_task_order_and_split_are_upstreams(data: MockData) -> None:
    assert list(data.tasks) == TASK_IDS  # tasks.json order
    assert data.split("base") == tuple(TASK_IDS) and data.default_split == "base"
    assert {task_id: list(task.reward_basis) for task_id, task in data.tasks.items()} == {
        task_id: facts["reward_basis"] for task_id, facts in TASK_FACTS.items()
    }


def test_pristine_hashes(data: MockData) -> None:
    env = data.new_environment()
    assert data.initial_db_hash() == env.db_hash() == FACTS["pristine"]["agent_db_hash"]
    assert env.user_db_hash() == FACTS["pristine"]["user_db_hash"]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_initial_state(data: MockData, task_id: str) -> None:
    env = data.new_environment(task_id)
    expected = TASK_FACTS[task_id]["initial"]
    assert (env.db_hash(), env.user_db_hash()) == (expected["agent_db_hash"], expected["user_db_hash"])


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gold_calls_live_outputs_and_end_state(data: MockData, task_id: str) -> None:
    facts = TASK_FACTS[task_id]
    env = data.new_environment(task_id)
    task = data.task(task_id)
    assert [(a.requestor, a.name, a.arguments) for a in task.gold_actions] == [
        (g["requestor"], g["name"], g["arguments"]) for g in facts["gold_actions"]
    ]
    for action, gold in zip(task.gold_actions, facts["gold_actions"], strict=True):
        result = env.call(action.name, action.arguments, action.requestor)
        assert (result.content, result.error) == (gold["output"], gold["error"])
    live = facts["gold_db_live"]
    assert (env.db_hash(), env.user_db_hash()) == (live["agent_db_hash"], live["user_db_hash"])


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gold_replay(data: MockData, task_id: str) -> None:
    gold = data.gold(task_id)
    expected = TASK_FACTS[task_id]["gold_db"]
    assert (gold.db_hash, gold.user_db_hash) == (expected["agent_db_hash"], expected["user_db_hash"])
    assert gold.failed_calls == ()
    assert data.gold(task_id) is gold  # once per process


def _assertion_on(data: MockData, env: Any, assertion: dict[str, Any]) -> tuple[bool | None, str | None]:
    try:
        return env.assertion(assertion["func_name"], assertion["arguments"], assertion["env_type"]), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_env_assertions_before_and_after_the_gold_actions(data: MockData, task_id: str) -> None:
    facts = TASK_FACTS[task_id]
    task = data.task(task_id)
    assert [(a.env_type, a.func_name, a.arguments, a.assert_value) for a in task.env_assertions] == [
        (f["env_type"], f["func_name"], f["arguments"], f["assert_value"]) for f in facts["env_assertions"]
    ]
    initial = data.new_environment(task_id)
    gold_env = data.new_environment(task_id)
    for action in task.gold_actions:
        gold_env.call(action.name, action.arguments, action.requestor)
    calls = [action.to_tool_call() for action in task.gold_actions]
    check = data.check_environment(task_id, data.new_environment(task_id), calls)
    for assertion, found in zip(facts["env_assertions"], check.assertions, strict=True):
        result, error = _assertion_on(data, initial, assertion)
        assert result == assertion["before_gold"]
        assert error == assertion.get("before_gold_error")
        assert found.actual == assertion["after_gold"] and found.error is None
        assert found.met == (assertion["after_gold"] == assertion["assert_value"])
        assert _assertion_on(data, gold_env, assertion) == (assertion["after_gold_evaluator_env"], None)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_upstreams_reward_for_the_gold_trajectory(data: MockData, task_id: str) -> None:
    """A trajectory of exactly the gold calls (no text), ended by the user: upstream's evaluate_simulation
    (ALL) gives 1.0 on 7 tasks and 0.0 on update_task_with_initialization_data (COMMUNICATE: sentences no
    tool call says), update_task_with_history_and_env_assertions (no gold action completes task_2) and
    update_task_with_user_tools (unwinnable)."""
    expected = TASK_FACTS[task_id]["gold_trajectory_eval"]
    task = data.task(task_id)
    calls = [action.to_tool_call() for action in task.gold_actions]
    check = data.check_environment(task_id, data.new_environment(task_id), calls)
    actions = check_actions(task.gold_actions, calls, WRITE_TOOLS)
    communicate = check_communicate(task.communicate_info, [])
    reward = score_trial(
        task,
        TerminationReason.USER_STOP,
        db_matched=check.db_matched,
        communicate_met=all(c.met for c in communicate),
        env_assertions_met=check.assertions_met,
        actions_met=all(a.matched for a in actions),
    )
    assert check.db_matched == expected["db_match"]
    assert [a.matched for a in actions] == expected["action_checks"]
    assert [c.met for c in communicate] == expected.get("communicate_checks", [True] * len(communicate))
    assert reward.reward == expected["reward"]
    breakdown = {kind: value for kind, value in reward.components.items() if kind in expected["breakdown"]}
    assert breakdown == expected["breakdown"]


def test_seven_of_ten_gold_trajectories_score_one() -> None:
    rewards = [facts["gold_trajectory_eval"]["reward"] for facts in TASK_FACTS.values()]
    assert rewards.count(1.0) == 7 and len(rewards) == 10


def test_the_unwinnable_task_stays_unwinnable(data: MockData) -> None:
    """update_task_with_user_tools: the customer dismissing notif_1 (as told) satisfies the assertion but not
    the DB check (the gold replay never dismisses it); not dismissing it fails the assertion. Upstream
    verified: agent update + user dismissal -> DB 0, ACTION 1, ENV_ASSERTION 1, reward 0."""
    task_id = "update_task_with_user_tools"
    calls = [
        ToolCall("check_notifications", {}, "user"),
        ToolCall("update_task_status", {"task_id": "task_1", "status": "completed"}),
        ToolCall("dismiss_notification", {"notification_id": "notif_1"}, "user"),
    ]
    check = data.check_environment(task_id, data.new_environment(task_id), calls)
    assert not check.db_matched and check.db_actual_hash == check.db_expected_hash  # the user DB differs
    assert check.assertions_met
    task = data.task(task_id)
    reward = score_trial(
        task,
        TerminationReason.USER_STOP,
        db_matched=check.db_matched,
        env_assertions_met=check.assertions_met,
        actions_met=all(a.matched for a in check_actions(task.gold_actions, calls, WRITE_TOOLS)),
    )
    assert reward.components == {"DB": 0.0, "ACTION": 1.0, "ENV_ASSERTION": 1.0} and reward.reward == 0.0


def test_a_run_that_completes_task_2_wins_the_task_without_gold_actions(data: MockData) -> None:
    task_id = "update_task_with_history_and_env_assertions"
    empty = data.check_environment(task_id, data.new_environment(task_id), [])
    assert [(a.met, a.found) for a in empty.assertions] == [(False, "task task_2 is pending")]
    done = data.check_environment(
        task_id,
        data.new_environment(task_id),
        [ToolCall("update_task_status", {"task_id": "task_2", "status": "completed"})],
    )
    assert [(a.met, a.found) for a in done.assertions] == [(True, None)]


def test_an_assertion_that_raises_is_not_met_and_says_why(data: MockData) -> None:
    """create_task_1_with_env_assertions without task_2: upstream's evaluator would raise (and its runner
    retry the simulation); here the assertion is not met and the error is kept."""
    check = data.check_environment("create_task_1_with_env_assertions", data.new_environment(), [])
    (assertion,) = check.assertions
    assert assertion.actual is None and not assertion.met
    assert assertion.error == "ValueError: Task task_2 not found"
    assert not check.db_matched


def test_an_explicit_empty_description_fails_the_db_check(data: MockData) -> None:
    calls = [ToolCall("create_task", {"user_id": "user_1", "title": "Important Meeting", "description": ""})]
    assert not data.check_environment("create_task_1", data.new_environment(), calls).db_matched
    calls = [
        ToolCall("create_task", {"user_id": "user_1", "title": "Important Meeting", "description": None})
    ]
    assert data.check_environment("create_task_1", data.new_environment(), calls).db_matched


def test_a_task_with_neither_actions_nor_assertions_compares_nothing(data: MockData) -> None:
    calls = [ToolCall("update_task_status", {"task_id": "task_1", "status": "completed"})]
    check = data.check_environment("create_task_1_nl_eval", data.new_environment(), calls)
    assert check.db_matched and check.assertions == ()
