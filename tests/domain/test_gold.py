"""Gold replay against the conformance vectors computed with upstream tau2-bench v1.0.1."""

from __future__ import annotations

import pytest

from retail_domain import RetailData, ToolCall

from .conftest import INITIAL_HASH, load_vectors

GOLD_HASHES: dict[str, str] = load_vectors("gold_db_hashes_v1.json")
TASK_IDS: list[str] = [str(i) for i in range(114)]


def test_vectors_cover_every_task(data: RetailData) -> None:
    assert sorted(GOLD_HASHES) == sorted(TASK_IDS) and list(data.tasks) == TASK_IDS


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gold_hash_matches_upstream(data: RetailData, task_id: str) -> None:
    assert data.gold(task_id).db_hash == GOLD_HASHES[task_id]


def test_failing_gold_calls_are_recorded_and_ignored(data: RetailData) -> None:
    failing = sorted(int(t) for t in data.tasks if data.gold(t).failed_calls)
    assert failing == [2, 3, 4, 35, 37, 38, 39, 46, 47, 54, 55, 64, 67, 68, 105]
    assert data.gold("64").failed_calls == (
        (6, "exchange_delivered_order_items", "Error: Non-delivered order cannot be exchanged"),
    )
    # Task 105's only write fails, so its gold DB is the initial one.
    assert data.gold("105").db_hash == INITIAL_HASH


def test_gold_equals_initial_db_exactly_where_upstream_says(data: RetailData) -> None:
    unchanged = sorted(int(t) for t in data.tasks if data.gold(t).db_hash == INITIAL_HASH)
    assert unchanged == [10, 12, 24, 25, 50, 57, 62, 65, 67, 68, 105]


def test_gold_is_computed_once(data: RetailData) -> None:
    assert data.gold("20") is data.gold("20")


def test_gold_actions_are_tool_calls_an_oracle_can_make(data: RetailData) -> None:
    gold = data.gold("0")
    assert all(isinstance(action, ToolCall) for action in gold.actions)
    env = data.new_environment()
    for action in gold.actions:
        assert not env.call(action.name, action.arguments).error
    assert env.db_hash() == GOLD_HASHES["0"]
    # Mutating what an oracle received must alter neither the task nor the cached gold outcome.
    gold.actions[-1].arguments["item_ids"].append("x")
    assert data.tasks["0"].gold_actions[-1].arguments["item_ids"] == ["1151293680", "4983901480"]
    assert data.gold("0").actions[-1].arguments["item_ids"] == ["1151293680", "4983901480"]


def test_task_20_pair_order_changes_the_hash(data: RetailData) -> None:
    """The multi-item modify quirk: the same request with the pairs reversed ends in another DB."""
    forward = data.new_environment()
    for action in data.gold("20").actions:
        forward.call(action.name, action.arguments)
    assert forward.db_hash().startswith("d43fdfd8")
    reverse = data.new_environment()
    result = reverse.call(
        "modify_pending_order_items",
        {
            "order_id": "#W9911714",
            "item_ids": ["1763705424", "9791469541", "1340995114", "2366567022"],
            "new_item_ids": ["2882812427", "4107812777", "1151293680", "4579334072"],
            "payment_method_id": "gift_card_4332117",
        },
    )
    assert not result.error
    assert reverse.db_hash().startswith("f4977f1a")


def test_gold_writes_only_give_the_gold_hash(data: RetailData) -> None:
    """Reads cannot change the DB: replaying only the writes of every task reaches the same hash."""
    from retail_domain import WRITE_TOOLS

    for task_id, expected in GOLD_HASHES.items():
        env = data.new_environment()
        for action in data.gold(task_id).actions:
            if action.name in WRITE_TOOLS:
                env.call(action.name, action.arguments)
        assert env.db_hash() == expected, task_id
