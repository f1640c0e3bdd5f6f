"""A task's initial state is set up once per process for the tasks kept parsed (the default split) and
restored from a snapshot after that; the restored environment is the one set-up would make (both databases,
the generator naming new bills), and a replay that keeps only state changes leaves what `call` leaves."""

from __future__ import annotations

import random
from typing import Any

from telecom_domain import TelecomData
from telecom_domain.environment import TelecomEnvironment
from telecom_domain.initial_state import apply_initial_state
from telecom_domain.model import dump


def _set_up(telecom: TelecomData, task_id: str) -> TelecomEnvironment:
    """The task's environment as set-up makes it, without any snapshot."""
    task = telecom.task(task_id)
    env = TelecomEnvironment(*telecom._pristine(), seed=task.id)
    apply_initial_state(env, task.initial_state)
    return env


def _state(env: TelecomEnvironment) -> Any:
    return dump(env.db), dump(env.user_db), env.tools.bill_ids.getstate()


def test_every_base_task_restores_what_set_up_makes(telecom: TelecomData) -> None:
    for task_id in telecom.split("base"):
        telecom.new_environment(task_id)  # the first one takes the snapshot
        assert task_id in telecom._task_snapshots
        restored, made = telecom.new_environment(task_id), _set_up(telecom, task_id)
        assert _state(restored) == _state(made), task_id
        assert restored.db_hash() == made.db_hash() and restored.user_db_hash() == made.user_db_hash()
        restored.db.customers[0].full_name = "changed"  # each restore is a copy of its own
        assert _state(telecom.new_environment(task_id)) == _state(made)


def test_tasks_outside_the_kept_split_take_no_snapshot(telecom: TelecomData) -> None:
    outside = next(t for t in telecom.split("full") if t not in set(telecom.split("base")))
    telecom.new_environment(outside)
    assert outside not in telecom._task_snapshots
    assert len(telecom._task_snapshots) <= len(telecom.split("base"))


def test_a_replay_leaves_what_call_leaves(telecom: TelecomData) -> None:
    task_id = telecom.split("base")[0]
    calls: list[tuple[str, Any, Any]] = [
        ("toggle_airplane_mode", {}, "user"),
        ("toggle_data", {}, "user"),
        ("no_such_tool", {}, "user"),  # an error: nothing changes, no sync
        ("toggle_roaming", {"unexpected": 1}, "user"),  # refused arguments
        ("reboot_device", {}, "user"),
        ("resume_line", {"customer_id": "C1001", "line_id": "L1002"}, "assistant"),
        ("send_payment_request", {"customer_id": "nobody", "bill_id": "B1"}, "assistant"),
    ]
    by_call, by_replay = telecom.new_environment(task_id), telecom.new_environment(task_id)
    for name, arguments, requestor in calls:
        by_call.call(name, arguments, requestor)
        by_replay.replay(name, arguments, requestor)
        assert _state(by_call) == _state(by_replay), name
    assert isinstance(by_replay.tools.bill_ids, random.Random)
