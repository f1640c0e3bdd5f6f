"""Per-trial checks: termination gate, DB check, reward product, NL verdicts, ACTION and COMMUNICATE."""

from __future__ import annotations

import pytest

from retail_domain import (
    WRITE_TOOLS,
    GoldAction,
    RetailData,
    TerminationReason,
    ToolCall,
    check_actions,
    check_communicate,
    check_db,
    is_clean_exit,
    score_trial,
)

from .conftest import INITIAL_HASH


def test_termination_gate() -> None:
    assert [r.value for r in TerminationReason] == [
        "user_stop",
        "agent_stop",
        "max_steps",
        "too_many_errors",
        "agent_error",
        "user_error",
        "infrastructure_error",
        "internal_error",
    ]
    assert is_clean_exit(TerminationReason.USER_STOP) and is_clean_exit("agent_stop")
    unclean = ("max_steps", "too_many_errors", "agent_error", "user_error", "internal_error")
    assert not any(is_clean_exit(r) for r in unclean)


def test_check_db() -> None:
    check = check_db("a" * 64, "a" * 64)
    assert check.matched and check.expected_hash == check.actual_hash
    assert not check_db(INITIAL_HASH, "b" * 64).matched


def test_db_only_task_needs_no_judge(data: RetailData) -> None:
    task = data.tasks["0"]  # basis DB + NL, but no assertions: NL is 1.0 without a judge
    reward = score_trial(task, "user_stop", db_matched=True, nl_verdicts=None)
    assert reward.reward == 1.0 and reward.components == {"DB": 1.0, "NL_ASSERTION": 1.0} and not reward.gated
    assert score_trial(task, "user_stop", db_matched=False, nl_verdicts=None).reward == 0.0
    assert score_trial(data.tasks["33"], "user_stop", True, None).components == {"DB": 1.0}


@pytest.mark.parametrize("reason", ["max_steps", "too_many_errors", "agent_error", "user_error"])
def test_unclean_exit_scores_zero_even_when_everything_matched(data: RetailData, reason: str) -> None:
    reward = score_trial(data.tasks["0"], reason, db_matched=True, nl_verdicts=None)
    assert reward.reward == 0.0 and reward.gated


def test_infrastructure_error_has_no_reward(data: RetailData) -> None:
    reward = score_trial(data.tasks["0"], TerminationReason.INFRASTRUCTURE_ERROR, True, None)
    assert reward.reward is None and reward.gated


def test_nl_verdicts(data: RetailData) -> None:
    task = data.tasks["2"]
    assert len(task.nl_assertions) == 1 and task.judged
    # not judged: no reward, never a pass
    unjudged = score_trial(task, "user_stop", db_matched=True, nl_verdicts=None)
    assert unjudged.reward is None and unjudged.components["NL_ASSERTION"] is None
    assert score_trial(task, "user_stop", True, [True]).reward == 1.0
    assert score_trial(task, "user_stop", True, [False]).reward == 0.0
    assert score_trial(task, "user_stop", False, [True]).reward == 0.0
    # one verdict per assertion: a missing or an extra verdict fails
    assert score_trial(task, "user_stop", True, []).reward == 0.0
    assert score_trial(task, "user_stop", True, [True, True]).reward == 0.0
    # the gate wins over a missing judge
    assert score_trial(task, "max_steps", True, None).reward == 0.0


def test_action_check_semantics() -> None:
    gold = GoldAction("0_1", "get_order_details", {"order_id": "#W1"})
    transfer = GoldAction("10_4", "transfer_to_human_agents", {"summary": "x"}, compare_args=())
    exchange = GoldAction(
        "0_4", "exchange_delivered_order_items", {"order_id": "#W1", "item_ids": ["1", "2"]}
    )
    checks = check_actions(
        [gold, transfer, exchange],
        [
            ToolCall("get_order_details", {}),  # compare_args None: keys of the call, so {} matches
            ToolCall("transfer_to_human_agents", {"summary": "something else"}),  # [] compares names only
            ToolCall(
                "exchange_delivered_order_items", {"order_id": "#W1", "item_ids": ["2", "1"]}
            ),  # order matters
        ],
        WRITE_TOOLS,
    )
    assert [c.matched for c in checks] == [True, True, False]
    assert [c.write for c in checks] == [False, False, True]
    # an extra argument prevents a match; OpenAI-style dicts are accepted
    extra = check_actions(
        [gold],
        [{"function": {"name": "get_order_details", "arguments": '{"order_id": "#W1", "x": 1}'}}],
        WRITE_TOOLS,
    )
    assert not extra[0].matched
    one = [{"name": "get_order_details", "arguments": {"order_id": "#W1"}}]
    assert check_actions([gold], one, WRITE_TOOLS)[0].matched


def test_gold_calls_match_their_own_actions(data: RetailData) -> None:
    for task in data.tasks.values():
        checks = check_actions(task.gold_actions, data.gold(task.id).actions, WRITE_TOOLS)
        assert all(c.matched for c in checks), task.id
        assert sum(c.write for c in checks) == sum(a.name in WRITE_TOOLS for a in task.gold_actions)


def test_communicate_semantics() -> None:
    checks = check_communicate(
        ["10", "polyester", "8276.23"], ["There are 1,0 items", None, "  ", "POLYESTER"]
    )
    assert [c.met for c in checks] == [True, True, False]
    assert check_communicate(["10"], ["ten"])[0].met is False
    assert check_communicate([], []) == []
