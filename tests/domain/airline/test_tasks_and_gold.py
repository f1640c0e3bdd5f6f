"""The 50 airline tasks: the gold replay of each reaches upstream's hash, the task table's facts, the tool
schemas against upstream's signatures, and the domain's public shape (DomainData)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from airline_domain import TOOL_SCHEMAS, AirlineData, AirlineEnvironment
from domain_kit import DomainData, DomainEnvironment, StructuredInstructions, ToolCall, upstream_hash

from .conftest import INITIAL_HASH, load_vectors

GOLD_HASHES: dict[str, str] = load_vectors("gold_db_hashes.json")
SHORT_WRITES = {
    "book_reservation": "book",
    "cancel_reservation": "cancel",
    "update_reservation_flights": "upd_flights",
    "update_reservation_baggages": "upd_bags",
    "update_reservation_passengers": "upd_pax",
    "send_certificate": "certificate",
}

# conformance/airline/task_table.md: id -> (split besides base, #gold actions, gold writes in order,
# #communicate_info, #nl_assertions, gold DB equals the initial DB).
TASK_TABLE: dict[str, tuple[str, int, tuple[str, ...], int, int, bool]] = {
    "0": ("train", 0, (), 0, 1, True),
    "1": ("train", 2, (), 0, 1, True),
    "2": ("test", 3, (), 0, 4, True),
    "3": ("train", 2, (), 1, 2, True),
    "4": ("train", 6, (), 0, 2, True),
    "5": ("train", 1, (), 0, 2, True),
    "6": ("test", 1, (), 0, 1, True),
    "7": ("train", 5, ("upd_flights", "cancel", "cancel"), 1, 4, False),
    "8": ("test", 4, ("book",), 0, 4, False),
    "9": ("train", 1, (), 0, 4, True),
    "10": ("train", 0, (), 0, 1, True),
    "11": ("train", 1, ("upd_flights",), 1, 3, False),
    "12": ("train", 5, ("upd_bags",), 0, 2, False),
    "13": ("test", 1, (), 0, 1, True),
    "14": ("train", 2, ("cancel", "book"), 3, 5, False),
    "15": ("train", 1, ("upd_flights",), 0, 2, False),
    "16": ("test", 1, ("upd_flights",), 0, 2, False),
    "17": ("train", 3, ("upd_flights", "upd_pax", "upd_bags"), 0, 3, False),
    "18": (
        "test",
        5,
        ("upd_flights", "upd_flights", "upd_flights", "upd_flights", "upd_flights"),
        1,
        6,
        False,
    ),
    "19": ("test", 1, ("cancel",), 0, 1, False),
    "20": ("train", 1, ("book",), 0, 2, False),
    "21": ("train", 2, ("upd_flights", "upd_bags"), 0, 3, False),
    "22": ("test", 3, ("upd_flights", "upd_pax", "upd_bags"), 0, 3, False),
    "23": ("train", 4, ("cancel", "book", "book", "book"), 3, 8, False),
    "24": ("test", 1, ("book",), 0, 3, False),
    "25": ("test", 1, ("book",), 0, 2, False),
    "26": ("test", 0, (), 0, 1, True),
    "27": ("train", 1, (), 0, 3, True),
    "28": ("train", 0, (), 0, 2, True),
    "29": ("test", 3, ("cancel", "book"), 0, 3, False),
    "30": ("test", 3, ("upd_flights",), 0, 2, False),
    "31": ("test", 0, (), 0, 1, True),
    "32": ("test", 5, ("upd_flights", "upd_flights"), 0, 2, False),
    "33": ("train", 5, ("upd_flights", "upd_bags"), 0, 3, False),
    "34": ("train", 0, (), 0, 1, True),
    "35": ("test", 1, ("book",), 0, 3, False),
    "36": ("train", 1, (), 0, 1, True),
    "37": ("test", 4, ("upd_flights",), 0, 3, False),
    "38": ("train", 2, (), 0, 4, True),
    "39": ("train", 11, ("cancel", "cancel", "cancel"), 0, 4, False),
    "40": ("train", 2, ("upd_pax",), 0, 1, False),
    "41": ("train", 8, (), 0, 2, True),
    "42": ("train", 10, ("cancel", "cancel"), 0, 2, False),
    "43": ("train", 6, (), 0, 2, True),
    "44": ("test", 19, ("upd_flights", "upd_flights", "upd_flights"), 0, 5, False),
    "45": ("test", 1, (), 0, 2, True),
    "46": ("train", 0, (), 0, 1, True),
    "47": ("train", 1, (), 0, 1, True),
    "48": ("test", 1, (), 0, 1, True),
    "49": ("train", 1, (), 0, 1, True),
}


@pytest.mark.parametrize("task_id", [str(i) for i in range(50)])
def test_gold_replay_reaches_upstreams_hash(data: AirlineData, task_id: str) -> None:
    gold = data.gold(task_id)
    assert gold.db_hash == GOLD_HASHES[task_id]
    assert gold.failed_calls == ()  # no airline gold call fails in v1.0.1
    # Replayed by hand on a fresh environment, hashed the slow way (the whole dump) and incrementally.
    env = data.new_environment()
    for call in gold.actions:
        assert not env.call_tool(call).error
    assert env.db_hash() == GOLD_HASHES[task_id] == upstream_hash(env.dump())
    check = data.check_environment(task_id, env, gold.actions)
    assert check.db_matched and check.db_actual_hash == check.db_expected_hash == gold.db_hash


def test_the_gold_hashes_cover_every_task_and_the_initial_db(data: AirlineData) -> None:
    assert set(GOLD_HASHES) == {"initial", *data.tasks}
    assert GOLD_HASHES["initial"] == INITIAL_HASH == data.initial_db_hash()
    same = sorted((t for t in data.tasks if GOLD_HASHES[t] == INITIAL_HASH), key=int)
    assert same == [t for t, row in TASK_TABLE.items() if row[5]]
    assert len(same) == 24


def test_the_task_table(data: AirlineData) -> None:
    assert list(data.tasks) == [str(i) for i in range(50)]
    for task_id, (split, actions, writes, communicate, nl, _) in TASK_TABLE.items():
        task = data.task(task_id)
        assert task_id in data.split(split) and task_id in data.split("base")
        assert len(task.gold_actions) == actions, task_id
        assert tuple(SHORT_WRITES[a.name] for a in task.gold_actions if a.name in data.write_tools) == writes
        assert len(task.communicate_info) == communicate and len(task.nl_assertions) == nl, task_id
        assert task.reward_basis == ("DB", "COMMUNICATE"), task_id
        assert not task.judged  # NL assertions are never part of an airline reward
        assert task.env_assertions == () and task.initial_state is None and task.user_tools is None
        assert all(a.requestor == "assistant" for a in task.gold_actions)
    names = Counter(a.name for t in data.tasks.values() for a in t.gold_actions)
    assert names == {
        "get_reservation_details": 57,
        "update_reservation_flights": 20,
        "search_direct_flight": 20,
        "get_user_details": 14,
        "cancel_reservation": 11,
        "book_reservation": 10,
        "update_reservation_baggages": 5,
        "update_reservation_passengers": 3,
        "calculate": 1,
        "transfer_to_human_agents": 1,
    }
    assert [a.compare_args for a in data.task("13").gold_actions] == [()]
    assert all(a.compare_args is None for t in data.tasks.values() if t.id != "13" for a in t.gold_actions)


def test_splits(data: AirlineData) -> None:
    assert {name: len(ids) for name, ids in data.splits.items()} == {"train": 30, "test": 20, "base": 50}
    assert data.default_split == "base" and set(data.split("base")) == set(data.tasks)
    assert not set(data.split("train")) & set(data.split("test"))
    with pytest.raises(KeyError, match="unknown split 'dev'"):
        data.split("dev")


def test_communicate_info(data: AirlineData) -> None:
    required = {t.id: t.communicate_info for t in data.tasks.values() if t.communicate_info}
    assert required == {
        "3": ("4",),
        "7": ("1628",),
        "11": ("5244",),
        "14": ("327", "1000", "1786"),
        "18": ("23553",),
        "23": ("327", "1000", "1286"),
    }


def test_scenarios(data: AirlineData) -> None:
    without_unknown = 0
    for task in data.tasks.values():
        instructions = task.user_scenario.instructions
        assert isinstance(instructions, StructuredInstructions) and instructions.domain == "airline"
        assert task.user_scenario.persona is None
        text = task.scenario_text()
        assert text.startswith("Instructions:\n\tDomain: airline\n\tReason for call:\n\t\t")
        if instructions.unknown_info is None:
            without_unknown += 1
            assert "Unknown info:" not in text
    assert without_unknown == 42


def test_task_lookup_and_documents(data: AirlineData) -> None:
    with pytest.raises(KeyError, match=r"unknown airline task id '50' \(ids are '0'..'49'\)"):
        data.task("50")
    document = data.task_document("27")
    assert document["id"] == "27" and document["description"]["notes"]
    document["id"] = "changed"
    assert data.task_document("27")["id"] == "27"  # a deep copy each time


def test_tool_schemas_match_upstream_signatures() -> None:
    signatures: list[dict[str, Any]] = load_vectors("tool_signatures.json")
    assert [s["function"]["name"] for s in TOOL_SCHEMAS] == [s["name"] for s in signatures]

    def shape(schema: Any) -> Any:
        # What the signatures file keeps: everything but descriptions and titles.
        if isinstance(schema, dict):
            return {k: shape(v) for k, v in schema.items() if k not in ("description", "title")}
        if isinstance(schema, list):
            return [shape(item) for item in schema]
        return schema

    for schema, expected in zip(TOOL_SCHEMAS, signatures, strict=True):
        assert schema["type"] == "function"
        function = schema["function"]
        params = function["parameters"]
        assert params["type"] == "object" and params["title"] == "parameters"
        assert shape(params["properties"]) == expected["parameters"], function["name"]
        assert list(params["properties"]) == list(expected["parameters"])
        assert params.get("required", []) == expected["required"]
        if not expected["required"]:
            assert "required" not in params  # upstream emits no required key for a parameterless tool
        assert function["description"]
        for prop in params["properties"].values():
            assert prop["description"] and prop["title"]


def test_tool_classes(data: AirlineData) -> None:
    names = {s["function"]["name"] for s in data.tool_schemas}
    assert len(names) == 14
    assert data.write_tools == {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    }
    assert data.read_tools == {
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "get_flight_status",
    }
    assert names - data.write_tools - data.read_tools == {"calculate", "transfer_to_human_agents"}
    assert data.user_tool_schemas == ()


def test_airline_is_a_domain(data: AirlineData) -> None:
    domain: DomainData = data  # mypy checks the Protocol
    env: DomainEnvironment = domain.new_environment("7")
    assert domain.name == "airline" and env.user_db_hash() is None
    assert domain.check_environment("7", env, []).db_matched is False  # gold writes something
    assert domain.check_environment("0", env, []).db_matched is True
    with pytest.raises(ValueError, match=r"Function 'x' not found\."):
        env.assertion("x", {}, "assistant")


def test_the_package_shape() -> None:
    import airline_domain

    assert airline_domain.DOMAIN_NAME == "airline"
    assert airline_domain.load_data is airline_domain.load_airline_data
    assert isinstance(airline_domain.load_data(), AirlineData)


def test_order_of_writes_matters(data: AirlineData) -> None:
    # Semantics doc section 10: task 7 with the cancel moved before the flight change scores 0.
    writes = [c for c in data.gold("7").actions if c.name in data.write_tools]
    assert [c.name for c in writes] == [
        "update_reservation_flights",
        "cancel_reservation",
        "cancel_reservation",
    ]
    swapped = data.new_environment()
    for call in [writes[1], writes[0], writes[2]]:
        swapped.call_tool(call)
    assert not data.check_environment("7", swapped, []).db_matched
    only_writes = data.new_environment()
    for call in writes:
        only_writes.call_tool(call)
    assert data.check_environment("7", only_writes, []).db_matched  # reads change nothing
    extra = data.new_environment()
    for call in writes:
        extra.call_tool(call)
    assert extra.call_tool(ToolCall("cancel_reservation", {"reservation_id": "NOPE00"})).error
    assert data.check_environment("7", extra, []).db_matched  # a failing write changes nothing


def test_environments_are_typed(env: AirlineEnvironment) -> None:
    assert env.db_hash() == INITIAL_HASH and env.changed_entities() == 0
