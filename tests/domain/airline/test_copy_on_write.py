"""Airline trials share one parsed base: isolation, the base never written, new reservations added per
trial, and the cost of a live trial."""

from __future__ import annotations

import json
import tracemalloc

from airline_domain import AirlineData
from domain_kit import upstream_hash

from .conftest import INITIAL_HASH

BOOK = {
    "user_id": "mohamed_silva_9265",
    "origin": "JFK",
    "destination": "ATL",
    "flight_type": "one_way",
    "cabin": "economy",
    "flights": [{"flight_number": "HAT057", "date": "2024-05-20"}],
    "passengers": [{"first_name": "Noah", "last_name": "Brown", "dob": "1990-01-01"}],
    "payment_methods": [{"payment_id": "gift_card_8020792", "amount": 141}],
    "total_baggages": 0,
    "nonfree_baggages": 0,
    "insurance": "no",
}


def test_two_environments_never_see_each_others_writes(data: AirlineData) -> None:
    first, second = data.new_environment(), data.new_environment()
    assert json.loads(first.call("book_reservation", BOOK).content)["reservation_id"] == "HATHAT"
    assert not first.call("get_reservation_details", {"reservation_id": "HATHAT"}).error
    assert second.call("get_reservation_details", {"reservation_id": "HATHAT"}).content == (
        "Error: Reservation HATHAT not found"
    )
    assert second.entity("reservations", "HATHAT") is None
    assert second.db_hash() == INITIAL_HASH
    # The second trial books independently, gets the same id, and ends in the same state.
    assert json.loads(second.call("book_reservation", BOOK).content)["reservation_id"] == "HATHAT"
    assert second.db_hash() == first.db_hash() == upstream_hash(first.dump())
    assert first.changed_keys() == {
        ("users", "mohamed_silva_9265"),
        ("flights", "HAT057"),
        ("reservations", "HATHAT"),
    }


def test_the_shared_base_is_never_written(data: AirlineData) -> None:
    tables = data.base.tables
    watched = [
        ("users", "mohamed_silva_9265"),
        ("flights", "HAT057"),
        ("reservations", "4WQ150"),
        ("users", "james_patel_9828"),
    ]
    before = [json.dumps(tables[t][k]) for t, k in watched]
    env = data.new_environment()
    env.call("book_reservation", BOOK)
    env.call("cancel_reservation", {"reservation_id": "4WQ150"})
    env.call("send_certificate", {"user_id": "mohamed_silva_9265", "amount": 10})
    env.call(
        "update_reservation_flights",
        {
            "reservation_id": "GV1N64",
            "cabin": "basic_economy",
            "flights": [
                {"flight_number": "HAT003", "date": "2024-05-19"},
                {"flight_number": "HAT290", "date": "2024-05-20"},
            ],
            "payment_id": "gift_card_1642017",
        },
    )
    env.call("update_reservation_passengers", {"reservation_id": "GV1N64", "passengers": ["a", "b", "c"]})
    assert [json.dumps(tables[t][k]) for t, k in watched] == before
    assert "HATHAT" not in tables["reservations"]
    assert data.new_environment().db_hash() == INITIAL_HASH
    assert env.db_hash() == upstream_hash(env.dump())


def test_a_live_trial_costs_kilobytes_not_the_db(data: AirlineData) -> None:
    # Not a benchmark (bench.domain_bench has the numbers): a structural bound. A copy of the parsed airline
    # DB takes tens of MB, so 200 trials holding copies would allocate gigabytes; sharing the base allocates
    # what the trials changed.
    tracemalloc.start()
    try:
        envs = [data.new_environment() for _ in range(200)]
        for env in envs:
            env.call("cancel_reservation", {"reservation_id": "4WQ150"})
        allocated, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(envs) == 200 and allocated < 4_000_000, allocated
