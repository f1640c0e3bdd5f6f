"""Airline trials scored as upstream's evaluator scores them (semantics doc sections 6 and 10): the domain's
environment check and domain_kit's COMMUNICATE check and reward over the basis [DB, COMMUNICATE]."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from airline_domain import AirlineData
from domain_kit import ToolCall, check_communicate, score_trial


def reward(
    data: AirlineData,
    task_id: str,
    calls: Sequence[ToolCall],
    texts: Sequence[str | None],
    reason: str = "user_stop",
) -> float | None:
    """Run `calls` on a fresh environment, then score the trial like upstream (the engine's order)."""
    env = data.new_environment()
    for call in calls:
        env.call_tool(call)
    task = data.task(task_id)
    db = data.check_environment(task_id, env, calls).db_matched
    said = all(check.met for check in check_communicate(task.communicate_info, texts))
    return score_trial(task, reason, db_matched=db, communicate_met=said).reward


def test_the_evaluator_table(data: AirlineData) -> None:
    gold7 = data.gold("7").actions
    writes7 = [c for c in gold7 if c.name in data.write_tools]
    told = ["Your refund total is 1,628 dollars."]
    cancel = ToolCall("cancel_reservation", {"reservation_id": "EHGLP3"})
    assert reward(data, "0", [], []) == 1.0
    assert reward(data, "0", [cancel], []) == 0.0
    assert reward(data, "7", gold7, [None, "Done."]) == 0.0  # 1628 never said
    assert reward(data, "7", gold7, told) == 1.0
    assert reward(data, "7", writes7, told) == 1.0
    assert reward(data, "7", [writes7[1], writes7[0], writes7[2]], told) == 0.0
    extra = ToolCall("cancel_reservation", {"reservation_id": "NOPE00"})
    assert reward(data, "7", [*gold7, extra], told) == 1.0
    assert reward(data, "7", gold7, told, reason="max_steps") == 0.0
    assert reward(data, "7", gold7, told, reason="agent_stop") == 1.0
    assert reward(data, "13", [], []) == 1.0  # the transfer is not required, only no write
    assert reward(data, "13", data.gold("13").actions, []) == 1.0
    gold14 = data.gold("14").actions
    assert reward(data, "14", gold14, ["327 and 1000"]) == 0.0
    assert reward(data, "14", gold14, ["It is 327.", "Then $1,000.", "So 1786 in all."]) == 1.0
    hallucinated = ToolCall("rebook_everything", {"x": 1})
    assert reward(data, "8", [hallucinated, *data.gold("8").actions], []) == 1.0


@pytest.mark.parametrize(
    ("text", "met"),
    [("1,628", True), ("$1628.00", True), ("You get 1 628 back", False), ("16280", True), ("", False)],
)
def test_communicate_strips_commas_from_the_text_only(text: str, met: bool) -> None:
    assert check_communicate(["1628"], [text])[0].met is met


def test_nl_assertions_are_never_part_of_an_airline_reward(data: AirlineData) -> None:
    task = data.task("2")
    assert task.nl_assertions and not task.judged
    scored = score_trial(task, "user_stop", db_matched=True, nl_verdicts=None, communicate_met=True)
    assert scored.reward == 1.0 and set(scored.components) == {"DB", "COMMUNICATE"}
