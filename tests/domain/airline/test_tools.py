"""Every airline tool against upstream's behaviour (semantics doc sections 3 and 4): outputs byte for byte,
every quoted error message, and the quirks that move the DB hash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airline_domain import AirlineData, AirlineEnvironment
from airline_domain.models import normalize_db
from domain_kit import upstream_hash
from domain_kit.store import BaseDb, copy_entity

from .conftest import INITIAL_HASH

PYDANTIC = "\n    For further information visit https://errors.pydantic.dev/2.12/v/"

# mohamed_silva_9265: gift cards 198.0 / 129.0, certificates 500.0 / 250.0 / 250.0, two credit cards.
MOHAMED = "mohamed_silva_9265"
OMAR = "omar_rossi_1241"  # gift_card_8190333 280.0, certificate_8390038 150.0; FQ8APE (basic economy, 1 pax)
JFK_ATL = {"flight_number": "HAT057", "date": "2024-05-20"}  # economy 141, 3 seats; business 477, 9 seats
NOAH = {"first_name": "Noah", "last_name": "Brown", "dob": "1990-01-01"}
EMMA = {"first_name": "Emma", "last_name": "Brown", "dob": "1991-02-02"}


def call(env: AirlineEnvironment, name: str, **arguments: Any) -> Any:
    """A successful call's output, decoded when it is JSON."""
    result = env.call(name, arguments)
    assert not result.error, result.content
    try:
        return json.loads(result.content)
    except json.JSONDecodeError:
        return result.content


def err(env: AirlineEnvironment, name: str, **arguments: Any) -> str:
    result = env.call(name, arguments)
    assert result.error, result.content
    return result.content


def user(env: AirlineEnvironment, user_id: str) -> Any:
    return call(env, "get_user_details", user_id=user_id)


def reservation(env: AirlineEnvironment, reservation_id: str) -> Any:
    return call(env, "get_reservation_details", reservation_id=reservation_id)


def seats(env: AirlineEnvironment, flight: dict[str, str]) -> dict[str, int]:
    entity = env.entity("flights", flight["flight_number"])
    result: dict[str, int] = entity["dates"][flight["date"]]["available_seats"]
    return result


def booking(**overrides: Any) -> dict[str, Any]:
    """One economy seat on HAT057 for Noah, $141 on mohamed's first credit card."""
    return {
        "user_id": MOHAMED,
        "origin": "JFK",
        "destination": "ATL",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [JFK_ATL],
        "passengers": [NOAH],
        "payment_methods": [{"payment_id": "credit_card_5843230", "amount": 141}],
        "total_baggages": 0,
        "nonfree_baggages": 0,
        "insurance": "no",
        **overrides,
    }


# --------------------------------------------------------------------------- dispatch (section 3)


def test_dispatch_errors(env: AirlineEnvironment) -> None:
    assert err(env, "get_user_details") == (
        "Error: AirlineTools.get_user_details() missing 1 required positional argument: 'user_id'"
    )
    assert err(env, "list_all_airports", x=1) == (
        "Error: AirlineTools.list_all_airports() got an unexpected keyword argument 'x'"
    )
    assert env.call("think", {"thought": "x"}).content == "Error: Tool 'think' not found."
    # The customer has no airline tools: an agent tool called by the customer is unknown to it.
    result = env.call("get_user_details", {"user_id": MOHAMED}, requestor="user")
    assert result.error and result.content == "Error: Tool 'get_user_details' not found."
    assert env.db_hash() == INITIAL_HASH


def test_strings_go_out_unquoted(env: AirlineEnvironment) -> None:
    assert env.call("transfer_to_human_agents", {"summary": "x"}).content == "Transfer successful"
    assert env.call("get_flight_status", JFK_ATL).content == "available"
    assert env.call("calculate", {"expression": "1000 + 200"}).content == "1200.0"


# --------------------------------------------------------------------------- reads


def test_get_reservation_details_byte_for_byte(env: AirlineEnvironment) -> None:
    assert env.call("get_reservation_details", {"reservation_id": "4WQ150"}).content == (
        '{"reservation_id": "4WQ150", "user_id": "chen_jackson_3290", "origin": "DFW", "destination": "LAX", '
        '"flight_type": "round_trip", "cabin": "business", "flights": [{"flight_number": "HAT170", "origin": '
        '"DFW", "destination": "LAX", "date": "2024-05-22", "price": 883}, {"flight_number": "HAT022", '
        '"origin": "LAX", "destination": "DFW", "date": "2024-05-26", "price": 779}], "passengers": '
        '[{"first_name": "Chen", "last_name": "Jackson", "dob": "1956-07-07"}, {"first_name": "Raj", '
        '"last_name": "Smith", "dob": "1967-04-01"}, {"first_name": "Fatima", "last_name": "Martin", "dob": '
        '"1970-01-20"}], "payment_history": [{"payment_id": "gift_card_3576581", "amount": 4986}], '
        '"created_at": "2024-05-02T03:10:19", "total_baggages": 5, "nonfree_baggages": 0, "insurance": "no", '
        '"status": null}'
    )
    assert (
        err(env, "get_reservation_details", reservation_id="4wq150") == "Error: Reservation 4wq150 not found"
    )


def test_get_user_details(env: AirlineEnvironment) -> None:
    content = env.call("get_user_details", {"user_id": "mia_li_3668"}).content
    assert content.startswith(
        '{"user_id": "mia_li_3668", "name": {"first_name": "Mia", "last_name": "Li"}, "address": '
        '{"address1": "975 Sunset Drive", "address2": "Suite 217", "city": "Austin", "country": "USA", '
        '"state": "TX", "zip": "78750"}, "email": "mia.li3818@example.com", "dob": "1990-04-05", '
        '"payment_methods": {"credit_card_4421486": {"source": "credit_card", "id": "credit_card_4421486", '
        '"brand": "visa", "last_four": "7447"}, "certificate_4856383": {"source": "certificate", '
        '"id": "certificate_4856383", "amount": 100.0}, '
    )
    assert list(json.loads(content)) == [
        *("user_id", "name", "address", "email", "dob", "payment_methods", "saved_passengers"),
        *("membership", "reservations"),
    ]
    assert err(env, "get_user_details", user_id="Mia_Li_3668") == "Error: User Mia_Li_3668 not found"
    assert err(env, "get_user_details", user_id=["x"]) == "Error: unhashable type: 'list'"


def test_list_all_airports(env: AirlineEnvironment) -> None:
    airports = call(env, "list_all_airports")
    assert [a["iata"] for a in airports] == [
        *("SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO"),
        *("EWR", "CLT", "MSP", "DTW", "PHL", "LGA"),
    ]
    assert env.call("list_all_airports", {}).content.startswith(
        '[{"iata": "SFO", "city": "San Francisco"}, {"iata": "JFK", "city": "New York"}, '
    )
    assert airports[-1] == {"iata": "LGA", "city": "LaGuardia"}


def test_search_direct_flight(env: AirlineEnvironment, data: AirlineData) -> None:
    content = env.call("search_direct_flight", {"origin": "JFK", "destination": "ATL", "date": "2024-05-20"})
    assert (
        '{"flight_number": "HAT057", "origin": "JFK", "destination": "ATL", "status": "available", '
        '"scheduled_departure_time_est": "07:00:00", "scheduled_arrival_time_est": "09:30:00", "date": null, '
        '"available_seats": {"basic_economy": 7, "economy": 3, "business": 9}, "prices": '
        '{"basic_economy": 76, "economy": 141, "business": 477}}'
    ) in content.content
    found = json.loads(content.content)
    flights = data.base.tables["flights"]
    expected = [
        number
        for number, flight in flights.items()
        if (flight["origin"], flight["destination"]) == ("JFK", "ATL")
        and flight["dates"]["2024-05-20"]["status"] == "available"
    ]
    assert [f["flight_number"] for f in found] == expected and expected  # flights-map order
    # Days not on sale and unknown airports give nothing; no error.
    assert call(env, "search_direct_flight", origin="JFK", destination="ATL", date="2024-05-10") == []
    assert call(env, "search_direct_flight", origin="XXX", destination="ATL", date="2024-05-20") == []


def test_search_lists_cabins_without_seats(env: AirlineEnvironment, data: AirlineData) -> None:
    number, date = next(
        (f["flight_number"], day)
        for f in data.base.tables["flights"].values()
        for day, state in f["dates"].items()
        if state["status"] == "available" and 0 in state["available_seats"].values()
    )
    flight = data.base.tables["flights"][number]
    found = call(
        env, "search_direct_flight", origin=flight["origin"], destination=flight["destination"], date=date
    )
    assert number in [f["flight_number"] for f in found]


def test_search_sees_this_trials_seat_changes(env: AirlineEnvironment) -> None:
    call(env, "book_reservation", **booking())
    found = call(env, "search_direct_flight", origin="JFK", destination="ATL", date="2024-05-20")
    hat057 = next(f for f in found if f["flight_number"] == "HAT057")
    assert hat057["available_seats"] == {"basic_economy": 7, "economy": 2, "business": 9}


def test_search_onestop_flight_overnight_connection(env: AirlineEnvironment) -> None:
    pairs = call(env, "search_onestop_flight", origin="LGA", destination="SEA", date="2024-05-20")
    overnight = [
        (a["flight_number"], a["date"], b["flight_number"], b["date"])
        for a, b in pairs
        if a["flight_number"] == "HAT002"
    ]
    # HAT002 arrives at PHX 01:30:00+1: the second leg is searched on the 21st and must leave at or after
    # "01:30:00+1" as a string, so HAT267 (01:00:00) is out and HAT156 (07:00:00) in.
    assert overnight == [
        ("HAT002", "2024-05-20", "HAT045", "2024-05-21"),
        ("HAT002", "2024-05-20", "HAT156", "2024-05-21"),
        ("HAT002", "2024-05-20", "HAT251", "2024-05-21"),
    ]
    first, second = pairs[0]
    assert list(first) == [
        *("flight_number", "origin", "destination", "status", "scheduled_departure_time_est"),
        *("scheduled_arrival_time_est", "date", "available_seats", "prices"),
    ]
    assert first["date"] == "2024-05-20" and first["destination"] == second["origin"]
    # On the 30th an overnight first leg never connects: 2024-05-31 does not exist.
    late = call(env, "search_onestop_flight", origin="LGA", destination="SEA", date="2024-05-30")
    assert late and not any(a["flight_number"] == "HAT002" for a, _ in late)


def test_search_onestop_flight_zero_minute_connection(env: AirlineEnvironment) -> None:
    pairs = call(env, "search_onestop_flight", origin="ATL", destination="SEA", date="2024-05-20")
    assert any(
        (a["flight_number"], b["flight_number"]) == ("HAT004", "HAT099")
        and a["scheduled_arrival_time_est"] == b["scheduled_departure_time_est"] == "16:00:00"
        for a, b in pairs
    )


def test_search_onestop_flight_next_day_is_not_zero_padded(data: AirlineData) -> None:
    # No flight is on sale before the 16th, so the unpadded date only shows on a DB made for the purpose:
    # HAT002 (LGA-PHX, arrives 01:30:00+1) on sale on the 8th, HAT045 (PHX-SEA) under the key "2024-05-9".
    tables = copy_entity(data.base.tables)
    flights = tables["flights"]
    on_sale = flights["HAT002"]["dates"]["2024-05-20"]
    flights["HAT002"]["dates"]["2024-05-08"] = copy_entity(on_sale)
    flights["HAT045"]["dates"]["2024-05-9"] = copy_entity(flights["HAT045"]["dates"]["2024-05-20"])
    env = AirlineEnvironment(BaseDb(normalize_db(tables)))
    pairs = call(env, "search_onestop_flight", origin="LGA", destination="SEA", date="2024-05-08")
    assert [(a["flight_number"], b["flight_number"], b["date"]) for a, b in pairs] == [
        ("HAT002", "HAT045", "2024-05-9")
    ]


def test_get_flight_status(env: AirlineEnvironment) -> None:
    statuses = {
        ("HAT001", "2024-05-01"): "landed",
        ("HAT001", "2024-05-03"): "cancelled",
        ("HAT001", "2024-05-16"): "available",
        ("HAT002", "2024-05-15"): "delayed",
        ("HAT004", "2024-05-15"): "flying",
        ("HAT009", "2024-05-15"): "on time",
    }
    for (number, date), status in statuses.items():
        assert env.call("get_flight_status", {"flight_number": number, "date": date}).content == status
    assert err(env, "get_flight_status", flight_number="HAT999", date="2024-05-16") == (
        "Error: Flight HAT999 not found"
    )
    assert err(env, "get_flight_status", flight_number="HAT001", date="2024-06-01") == (
        "Error: Flight HAT001 not found on date 2024-06-01"
    )


# --------------------------------------------------------------------------- calculate


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("1000 + 200", "1200.0"),
        ("1 / 3", "0.33"),
        ("2.675", "2.67"),  # binary-exact rounding, half-even on the stored double
        ("2**10", "1024.0"),
        ("10 ** 20", "1e+20"),
        ("7 // 2", "3.0"),
        ("(327 + 1000) * 2", "2654.0"),
    ],
)
def test_calculate(env: AirlineEnvironment, expression: str, content: str) -> None:
    assert env.call("calculate", {"expression": expression}).content == content


@pytest.mark.parametrize(
    ("expression", "content"),
    [
        ("1 / 0", "Error: division by zero"),
        ("", "Error: invalid syntax (<string>, line 0)"),
        ("(1 + 2", "Error: '(' was never closed (<string>, line 1)"),
        (
            "012",
            "Error: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
            "integers (<string>, line 1)",
        ),
        ("abs(-1)", "Error: Invalid characters in expression"),
        ("2 ^ 3", "Error: Invalid characters in expression"),
    ],
)
def test_calculate_errors(env: AirlineEnvironment, expression: str, content: str) -> None:
    assert err(env, "calculate", expression=expression) == content


# --------------------------------------------------------------------------- book_reservation


def test_book_reservation(env: AirlineEnvironment, data: AirlineData) -> None:
    before = seats(env, JFK_ATL)
    booked = call(
        env,
        "book_reservation",
        **booking(
            passengers=[NOAH, EMMA],
            insurance="yes",
            total_baggages=3,
            nonfree_baggages=1,
            # 2 x 141 fare + 2 x 30 insurance + 1 x 50 bag = 392
            payment_methods=[
                {"payment_id": "gift_card_8020792", "amount": 198},
                {"payment_id": "certificate_9984806", "amount": 100},
                {"payment_id": "credit_card_5843230", "amount": 94},
            ],
        ),
    )
    assert booked == {
        "reservation_id": "HATHAT",
        "user_id": MOHAMED,
        "origin": "JFK",
        "destination": "ATL",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [
            {
                "flight_number": "HAT057",
                "origin": "JFK",
                "destination": "ATL",
                "date": "2024-05-20",
                "price": 141,
            }
        ],
        "passengers": [NOAH, EMMA],
        "payment_history": [
            {"payment_id": "gift_card_8020792", "amount": 198},
            {"payment_id": "certificate_9984806", "amount": 100},
            {"payment_id": "credit_card_5843230", "amount": 94},
        ],
        "created_at": "2024-05-15T15:00:00",
        "total_baggages": 3,
        "nonfree_baggages": 1,
        "insurance": "yes",
        "status": None,
    }
    assert list(booked) == list(reservation(env, "4WQ150"))  # declared field order, status last
    assert reservation(env, "HATHAT") == booked
    profile = user(env, MOHAMED)
    methods = profile["payment_methods"]
    assert methods["gift_card_8020792"]["amount"] == 0.0
    assert "certificate_9984806" not in methods  # used up, although 150 was left on it
    assert profile["reservations"] == ["K1NW8N", "HATHAT"]
    assert seats(env, JFK_ATL) == {**before, "economy": before["economy"] - 2}
    assert data.new_environment().db_hash() == INITIAL_HASH  # another trial sees none of it
    assert env.db_hash() == upstream_hash(env.dump()) != INITIAL_HASH


def test_new_reservation_ids_and_too_many(env: AirlineEnvironment) -> None:
    ids = []
    for _ in range(3):
        ids.append(call(env, "book_reservation", **booking(flights=[], payment_methods=[]))["reservation_id"])
    assert ids == ["HATHAT", "HATHAU", "HATHAV"]
    call(env, "cancel_reservation", reservation_id="HATHAU")  # cancelled reservations still hold their id
    assert err(env, "book_reservation", **booking()) == "Error: Too many reservations"
    assert user(env, MOHAMED)["reservations"] == ["K1NW8N", "HATHAT", "HATHAU", "HATHAV"]
    assert env.db_hash() == upstream_hash(env.dump())


def test_empty_flights_and_passengers_are_accepted(env: AirlineEnvironment) -> None:
    booked = call(env, "book_reservation", **booking(flights=[], passengers=[], payment_methods=[]))
    assert booked["flights"] == [] and booked["passengers"] == [] and booked["payment_history"] == []
    # Extras are charged even so: two bags cost 100.
    assert err(env, "book_reservation", **booking(flights=[], passengers=[], nonfree_baggages=2)) == (
        "Error: Payment amount does not add up, total price is 100, but paid 141"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"user_id": "nobody_1"}, "Error: User nobody_1 not found"),
        ({"flights": [{"flight_number": "HAT999", "date": "2024-05-20"}]}, "Error: Flight HAT999 not found"),
        (
            {"flights": [{"flight_number": "HAT057", "date": "2024-06-20"}]},
            "Error: Flight HAT057 not found on date 2024-06-20",
        ),
        (
            {"flights": [{"flight_number": "HAT057", "date": "2024-05-10"}]},
            "Error: Flight HAT057 not available on date 2024-05-10",
        ),
        ({"passengers": [NOAH, EMMA, NOAH, EMMA]}, "Error: Not enough seats on flight HAT057"),
        (
            {"payment_methods": [{"payment_id": "gift_card_0000000", "amount": 141}]},
            "Error: Payment method gift_card_0000000 not found",
        ),
        (
            {"payment_methods": [{"payment_id": "gift_card_6136092", "amount": 141}]},
            "Error: Not enough balance in payment method gift_card_6136092",
        ),
        (
            {"payment_methods": [{"payment_id": "credit_card_5843230", "amount": 140}]},
            "Error: Payment amount does not add up, total price is 141, but paid 140",
        ),
        (
            {"insurance": "yes"},
            "Error: Payment amount does not add up, total price is 171, but paid 141",
        ),
        ({"flights": ["HAT057"]}, "Error: 'str' object has no attribute 'flight_number'"),
        ({"flights": [JFK_ATL, "HAT057"]}, "Error: 'dict' object has no attribute 'flight_number'"),
        ({"flights": None}, "Error: 'NoneType' object is not iterable"),
        ({"nonfree_baggages": "1"}, "Error: unsupported operand type(s) for +=: 'int' and 'str'"),
    ],
)
def test_book_reservation_errors_write_nothing(
    env: AirlineEnvironment, overrides: dict[str, Any], message: str
) -> None:
    assert err(env, "book_reservation", **booking(**overrides)) == message
    assert env.db_hash() == INITIAL_HASH


def test_book_reservation_validation_messages(env: AirlineEnvironment) -> None:
    assert err(env, "book_reservation", **booking(flights=[{"flight_number": "HAT069"}])) == (
        "Error: 1 validation error for FlightInfo\ndate\n  Field required [type=missing, input_value="
        "{'flight_number': 'HAT069'}, input_type=dict]" + PYDANTIC + "missing"
    )
    assert err(env, "book_reservation", **booking(passengers=[{"first_name": "Noah", "dob": "x"}])) == (
        "Error: 1 validation error for Passenger\nlast_name\n  Field required [type=missing, input_value="
        "{'first_name': 'Noah', 'dob': 'x'}, input_type=dict]" + PYDANTIC + "missing"
    )
    payment = [{"payment_id": "credit_card_5843230", "amount": 39.5}]
    assert err(env, "book_reservation", **booking(payment_methods=payment)) == (
        "Error: 1 validation error for Payment\namount\n  Input should be a valid integer, got a number with "
        "a fractional part [type=int_from_float, input_value=39.5, input_type=float]"
        + PYDANTIC
        + "int_from_float"
    )
    assert err(env, "book_reservation", **booking(cabin="first")) == (
        "Error: 1 validation error for Reservation\ncabin\n  Input should be 'business', 'economy' or "
        "'basic_economy' [type=literal_error, input_value='first', input_type=str]"
        + PYDANTIC
        + "literal_error"
    )
    several = err(env, "book_reservation", **booking(flight_type="return", insurance="maybe"))
    assert several.startswith("Error: 2 validation errors for Reservation\nflight_type\n  Input should be ")
    assert "Input should be 'round_trip' or 'one_way' [type=literal_error" in several
    assert "insurance\n  Input should be 'yes' or 'no' [type=literal_error, input_value='maybe'" in several
    assert env.db_hash() == INITIAL_HASH


def test_book_reservation_coerces_where_upstream_builds_models(env: AirlineEnvironment) -> None:
    booked = call(
        env,
        "book_reservation",
        **booking(
            flights=[{**JFK_ATL, "note": "ignored"}],
            payment_methods=[{"payment_id": "credit_card_5843230", "amount": "141"}],
            total_baggages=2.0,
        ),
    )
    assert booked["payment_history"] == [{"payment_id": "credit_card_5843230", "amount": 141}]
    assert booked["total_baggages"] == 2 and isinstance(booked["total_baggages"], int)
    assert env.db_hash() == upstream_hash(env.dump())


def test_the_same_gift_card_twice_can_overdraw_it(env: AirlineEnvironment) -> None:
    # Each entry is checked against the balance on its own (section 4.1 step 7): 129 + 39 = 168 > 129.0.
    call(
        env,
        "book_reservation",
        **booking(
            flights=[],
            nonfree_baggages=3,  # 3 bags x 50 = 150 in all
            payment_methods=[
                {"payment_id": "gift_card_6136092", "amount": 129},
                {"payment_id": "gift_card_6136092", "amount": 21},
            ],
        ),
    )
    assert user(env, MOHAMED)["payment_methods"]["gift_card_6136092"]["amount"] == -21.0


def test_the_same_certificate_twice_is_a_partial_write(env: AirlineEnvironment) -> None:
    payments = [
        {"payment_id": "gift_card_8020792", "amount": 41},
        {"payment_id": "certificate_3765853", "amount": 50},
        {"payment_id": "certificate_3765853", "amount": 50},
    ]
    assert err(env, "book_reservation", **booking(payment_methods=payments)) == "Error: 'certificate_3765853'"
    profile = user(env, MOHAMED)
    assert profile["payment_methods"]["gift_card_8020792"]["amount"] == 157.0  # debited...
    assert "certificate_3765853" not in profile["payment_methods"]  # ...and removed...
    assert profile["reservations"] == ["K1NW8N"]  # ...but nothing booked
    assert seats(env, JFK_ATL)["economy"] == 3
    assert env.db_hash() == upstream_hash(env.dump()) != INITIAL_HASH


def test_a_flight_listed_twice_takes_its_seats_twice(env: AirlineEnvironment) -> None:
    call(
        env,
        "book_reservation",
        **booking(
            flights=[JFK_ATL, JFK_ATL],
            payment_methods=[{"payment_id": "credit_card_5843230", "amount": 282}],
        ),
    )
    assert seats(env, JFK_ATL)["economy"] == 1
    # The seat check reads the current count once per entry, before any is taken.
    assert err(env, "book_reservation", **booking(passengers=[NOAH, EMMA])) == (
        "Error: Not enough seats on flight HAT057"
    )


def test_booking_freed_certificate_ids_and_new_certificates(env: AirlineEnvironment) -> None:
    assert call(env, "send_certificate", user_id=MOHAMED, amount=100) == (
        f"Certificate certificate_3221322 added to user {MOHAMED} with amount 100."
    )
    payment = [
        {"payment_id": "certificate_3221322", "amount": 100},
        {"payment_id": "credit_card_5843230", "amount": 41},
    ]
    call(env, "book_reservation", **booking(payment_methods=payment))
    assert "certificate_3221322" not in user(env, MOHAMED)["payment_methods"]
    # The id is free again for the next certificate.
    assert call(env, "send_certificate", user_id=MOHAMED, amount=50) == (
        f"Certificate certificate_3221322 added to user {MOHAMED} with amount 50."
    )


# --------------------------------------------------------------------------- send_certificate


def test_send_certificate(env: AirlineEnvironment) -> None:
    messages = [
        call(env, "send_certificate", user_id=MOHAMED, amount=amount) for amount in (150, 150.5, "75")
    ]
    assert messages == [
        f"Certificate certificate_3221322 added to user {MOHAMED} with amount 150.",
        f"Certificate certificate_3221323 added to user {MOHAMED} with amount 150.5.",
        f"Certificate certificate_3221324 added to user {MOHAMED} with amount 75.",
    ]
    methods = user(env, MOHAMED)["payment_methods"]
    assert [methods[f"certificate_322132{i}"] for i in (2, 3, 4)] == [
        {"source": "certificate", "id": "certificate_3221322", "amount": 150.0},
        {"source": "certificate", "id": "certificate_3221323", "amount": 150.5},
        {"source": "certificate", "id": "certificate_3221324", "amount": 75.0},
    ]
    assert list(methods)[-3:] == ["certificate_3221322", "certificate_3221323", "certificate_3221324"]
    assert err(env, "send_certificate", user_id=MOHAMED, amount=10) == "Error: Too many certificates"
    # Ids are per user; negative and zero amounts are accepted.
    assert call(env, "send_certificate", user_id=OMAR, amount=-5).startswith(
        "Certificate certificate_3221322"
    )
    assert err(env, "send_certificate", user_id="nobody_1", amount=1) == "Error: User nobody_1 not found"
    assert env.db_hash() == upstream_hash(env.dump())


def test_send_certificate_validation(env: AirlineEnvironment) -> None:
    assert err(env, "send_certificate", user_id=MOHAMED, amount="a lot") == (
        "Error: 1 validation error for Certificate\namount\n  Input should be a valid number, unable to "
        "parse string as a number [type=float_parsing, input_value='a lot', input_type=str]"
        + PYDANTIC
        + "float_parsing"
    )
    assert env.db_hash() == INITIAL_HASH


# --------------------------------------------------------------------------- cancel_reservation


def test_cancel_reservation_refunds_nothing_and_releases_nothing(env: AirlineEnvironment) -> None:
    before_user = user(env, "chen_jackson_3290")
    before_seats = seats(env, {"flight_number": "HAT170", "date": "2024-05-22"})
    cancelled = call(env, "cancel_reservation", reservation_id="4WQ150")
    assert cancelled["status"] == "cancelled"
    assert cancelled["payment_history"] == [
        {"payment_id": "gift_card_3576581", "amount": 4986},
        {"payment_id": "gift_card_3576581", "amount": -4986},
    ]
    assert user(env, "chen_jackson_3290") == before_user  # the gift card is not credited
    assert seats(env, {"flight_number": "HAT170", "date": "2024-05-22"}) == before_seats
    # Cancelling again negates every entry, refunds included; nothing checks the status.
    again = call(env, "cancel_reservation", reservation_id="4WQ150")
    assert [p["amount"] for p in again["payment_history"]] == [4986, -4986, -4986, 4986]
    assert err(env, "cancel_reservation", reservation_id="XXXXXX") == "Error: Reservation XXXXXX not found"
    assert env.db_hash() == upstream_hash(env.dump())


# --------------------------------------------------------------------------- update_reservation_flights


def test_update_flights_task_11_refund_credits_the_gift_card(env: AirlineEnvironment) -> None:
    flights = [
        {"flight_number": "HAT003", "date": "2024-05-19"},
        {"flight_number": "HAT290", "date": "2024-05-20"},
    ]
    updated = call(
        env,
        "update_reservation_flights",
        reservation_id="GV1N64",
        cabin="basic_economy",
        flights=flights,
        payment_id="gift_card_1642017",
    )
    # 3 passengers, business 561 + 1339 -> basic economy 53 + 99: 456 - 5700 = -5244.
    assert updated["payment_history"][-1] == {"payment_id": "gift_card_1642017", "amount": -5244}
    assert [(s["flight_number"], s["price"]) for s in updated["flights"]] == [("HAT003", 53), ("HAT290", 99)]
    assert updated["cabin"] == "basic_economy"
    assert user(env, "james_patel_9828")["payment_methods"]["gift_card_1642017"]["amount"] == 5372.0


def test_update_flights_keeps_unchanged_segments_at_their_price_in_the_same_cabin(
    env: AirlineEnvironment,
) -> None:
    kept = call(env, "get_reservation_details", reservation_id="4WQ150")["flights"]
    same = [{"flight_number": s["flight_number"], "date": s["date"]} for s in kept]
    updated = call(
        env,
        "update_reservation_flights",
        reservation_id="4WQ150",
        cabin="business",
        flights=same,
        payment_id="gift_card_3576581",
    )
    assert updated["flights"] == kept and updated["payment_history"] == [
        {"payment_id": "gift_card_3576581", "amount": 4986}
    ]  # nothing owed: no entry appended
    # The same flights in another cabin are all priced again at today's fares.
    economy = call(
        env,
        "update_reservation_flights",
        reservation_id="4WQ150",
        cabin="economy",
        flights=same,
        payment_id="gift_card_3576581",
    )
    assert [s["price"] for s in economy["flights"]] != [s["price"] for s in kept]
    assert economy["payment_history"][-1]["amount"] < 0


def test_update_flights_flown_segments(env: AirlineEnvironment) -> None:
    # ODH78Z (basic economy, 1 passenger): two segments flown on the 14th, two on the 21st.
    flights = [s for s in reservation(env, "ODH78Z")["flights"]]
    wanted = [{"flight_number": s["flight_number"], "date": s["date"]} for s in flights]
    kept = call(
        env,
        "update_reservation_flights",
        reservation_id="ODH78Z",
        cabin="basic_economy",
        flights=wanted,
        payment_id="gift_card_5205020",
    )
    assert kept["flights"] == flights  # flown segments kept without any availability check
    assert (
        err(
            env,
            "update_reservation_flights",
            reservation_id="ODH78Z",
            cabin="economy",
            flights=wanted,
            payment_id="gift_card_5205020",
        )
        == "Error: Flight HAT122 not available on date 2024-05-14"
    )


def test_update_flights_payment_rules(env: AirlineEnvironment) -> None:
    same = [
        {"flight_number": "HAT056", "date": "2024-05-25"},
        {"flight_number": "HAT138", "date": "2024-05-25"},
    ]
    args = {"reservation_id": "FQ8APE", "cabin": "basic_economy", "flights": same}
    assert err(env, "update_reservation_flights", **args, payment_id="gift_card_0") == (
        "Error: Payment method not found"
    )
    # A certificate is refused even when nothing is owed.
    assert err(env, "update_reservation_flights", **args, payment_id="certificate_8390038") == (
        "Error: Certificate cannot be used to update reservation"
    )
    upgrade = {**args, "cabin": "business"}
    assert err(env, "update_reservation_flights", **upgrade, payment_id="gift_card_6490722") == (
        "Error: Gift card balance is not enough"
    )
    assert env.db_hash() == INITIAL_HASH
    paid = call(env, "update_reservation_flights", **upgrade, payment_id="credit_card_6754990")
    assert paid["payment_history"][-1]["payment_id"] == "credit_card_6754990"
    assert paid["payment_history"][-1]["amount"] > 0


def test_update_flights_takes_no_seats_and_stores_the_cabin_unvalidated(
    env: AirlineEnvironment, data: AirlineData
) -> None:
    target = {"flight_number": "HAT057", "date": "2024-05-20"}
    before = seats(env, target)
    call(
        env,
        "update_reservation_flights",
        reservation_id="FQ8APE",
        cabin="economy",
        flights=[target],
        payment_id="credit_card_6754990",
    )
    assert seats(env, target) == before  # no seat is taken (or given back)
    # With an empty list nothing looks the cabin up: "first" is stored as given.
    emptied = call(
        env,
        "update_reservation_flights",
        reservation_id="FQ8APE",
        cabin="first",
        flights=[],
        payment_id="credit_card_6754990",
    )
    assert emptied["cabin"] == "first" and emptied["flights"] == []
    # With a segment to price, the unknown cabin fails as a KeyError.
    assert (
        err(
            env,
            "update_reservation_flights",
            reservation_id="4WQ150",
            cabin="first",
            flights=[target],
            payment_id="gift_card_3576581",
        )
        == "Error: 'first'"
    )
    assert env.db_hash() == upstream_hash(env.dump())


def test_update_flights_validation_comes_before_the_lookup(env: AirlineEnvironment) -> None:
    assert err(
        env,
        "update_reservation_flights",
        reservation_id="XXXXXX",
        cabin="economy",
        flights=[{"flight_number": "HAT069"}],
        payment_id="x",
    ) == (
        "Error: 1 validation error for FlightInfo\ndate\n  Field required [type=missing, input_value="
        "{'flight_number': 'HAT069'}, input_type=dict]" + PYDANTIC + "missing"
    )
    assert (
        err(
            env,
            "update_reservation_flights",
            reservation_id="XXXXXX",
            cabin="economy",
            flights=[],
            payment_id="x",
        )
        == "Error: Reservation XXXXXX not found"
    )


# --------------------------------------------------------------------------- update_reservation_baggages


def test_update_baggages(env: AirlineEnvironment) -> None:
    updated = call(
        env,
        "update_reservation_baggages",
        reservation_id="FQ8APE",
        total_baggages=2,
        nonfree_baggages=2,
        payment_id="gift_card_8190333",
    )
    assert (updated["total_baggages"], updated["nonfree_baggages"]) == (2, 2)
    assert updated["payment_history"][-1] == {"payment_id": "gift_card_8190333", "amount": 100}
    assert user(env, OMAR)["payment_methods"]["gift_card_8190333"]["amount"] == 180.0
    # Decreases are accepted and cost nothing (no entry appended); nothing checks total >= nonfree.
    lowered = call(
        env,
        "update_reservation_baggages",
        reservation_id="FQ8APE",
        total_baggages=0,
        nonfree_baggages=1,
        payment_id="credit_card_6754990",
    )
    assert (lowered["total_baggages"], lowered["nonfree_baggages"]) == (0, 1)
    assert len(lowered["payment_history"]) == 2
    # A certificate fails even when nothing is owed.
    assert (
        err(
            env,
            "update_reservation_baggages",
            reservation_id="FQ8APE",
            total_baggages=0,
            nonfree_baggages=0,
            payment_id="certificate_8390038",
        )
        == "Error: Certificate cannot be used to update reservation"
    )
    assert env.db_hash() == upstream_hash(env.dump())


def test_update_baggages_stores_raw_values(env: AirlineEnvironment, data: AirlineData) -> None:
    call(
        env,
        "update_reservation_baggages",
        reservation_id="FQ8APE",
        total_baggages="3",
        nonfree_baggages=0.0,
        payment_id="credit_card_6754990",
    )
    raw = reservation(env, "FQ8APE")
    assert raw["total_baggages"] == "3" and raw["nonfree_baggages"] == 0.0
    assert (
        '"total_baggages": "3", "nonfree_baggages": 0.0'
        in env.call("get_reservation_details", {"reservation_id": "FQ8APE"}).content
    )
    assert env.db_hash() == upstream_hash(env.dump()) != INITIAL_HASH
    as_ints = data.new_environment()
    call(
        as_ints,
        "update_reservation_baggages",
        reservation_id="FQ8APE",
        total_baggages=3,
        nonfree_baggages=0,
        payment_id="credit_card_6754990",
    )
    assert as_ints.db_hash() != env.db_hash()  # "3" and 3, 0.0 and 0 hash differently


def test_update_baggages_fractional_count_is_a_partial_write(env: AirlineEnvironment) -> None:
    assert err(
        env,
        "update_reservation_baggages",
        reservation_id="FQ8APE",
        total_baggages=1,
        nonfree_baggages=1.01,
        payment_id="gift_card_8190333",
    ) == (
        "Error: 1 validation error for Payment\namount\n  Input should be a valid integer, got a number with "
        "a fractional part [type=int_from_float, input_value=50.5, input_type=float]"
        + PYDANTIC
        + "int_from_float"
    )
    assert user(env, OMAR)["payment_methods"]["gift_card_8190333"]["amount"] == 229.5  # already debited
    assert reservation(env, "FQ8APE")["nonfree_baggages"] == 0  # but not updated
    assert env.db_hash() == upstream_hash(env.dump()) != INITIAL_HASH


def test_update_baggages_errors(env: AirlineEnvironment) -> None:
    args = {"total_baggages": 1, "nonfree_baggages": 1}
    assert err(env, "update_reservation_baggages", reservation_id="X", payment_id="y", **args) == (
        "Error: Reservation X not found"
    )
    assert err(env, "update_reservation_baggages", reservation_id="FQ8APE", payment_id="y", **args) == (
        "Error: Payment method not found"
    )
    assert (
        err(
            env,
            "update_reservation_baggages",
            reservation_id="FQ8APE",
            payment_id="gift_card_6490722",
            total_baggages=9,
            nonfree_baggages=9,
        )
        == "Error: Gift card balance is not enough"
    )
    assert (
        err(
            env,
            "update_reservation_baggages",
            reservation_id="FQ8APE",
            payment_id="gift_card_6490722",
            total_baggages=1,
            nonfree_baggages="1",
        )
        == "Error: unsupported operand type(s) for -: 'str' and 'int'"
    )
    assert env.db_hash() == INITIAL_HASH


# --------------------------------------------------------------------------- update_reservation_passengers


def test_update_passengers(env: AirlineEnvironment) -> None:
    updated = call(
        env, "update_reservation_passengers", reservation_id="FQ8APE", passengers=[{**NOAH, "x": 1}]
    )
    assert updated["passengers"] == [NOAH]  # extra keys dropped by the model
    assert err(env, "update_reservation_passengers", reservation_id="FQ8APE", passengers=[NOAH, EMMA]) == (
        "Error: Number of passengers does not match"
    )
    assert err(env, "update_reservation_passengers", reservation_id="X", passengers=[NOAH]) == (
        "Error: Reservation X not found"
    )
    # Validation comes before the reservation lookup.
    assert err(env, "update_reservation_passengers", reservation_id="X", passengers=[{"first_name": 1}]) == (
        "Error: 3 validation errors for Passenger\nfirst_name\n  Input should be a valid string "
        "[type=string_type, input_value=1, input_type=int]" + PYDANTIC + "string_type\nlast_name\n  Field "
        "required [type=missing, input_value={'first_name': 1}, input_type=dict]"
        + PYDANTIC
        + "missing\ndob\n"
        "  Field required [type=missing, input_value={'first_name': 1}, input_type=dict]"
        + PYDANTIC
        + "missing"
    )


def test_update_passengers_stores_non_objects_as_given(env: AirlineEnvironment) -> None:
    updated = call(env, "update_reservation_passengers", reservation_id="4WQ150", passengers=["a", "b", "c"])
    assert updated["passengers"] == ["a", "b", "c"]
    # Even a string of the right length.
    assert (
        call(env, "update_reservation_passengers", reservation_id="4WQ150", passengers="xyz")["passengers"]
        == "xyz"
    )
    assert env.db_hash() == upstream_hash(env.dump())


# --------------------------------------------------------------------------- id normalization (ours)


def test_id_normalization_is_opt_in(data: AirlineData) -> None:
    spelled = {"reservation_id": " 4wq150 "}
    assert data.new_environment().call("get_reservation_details", spelled).error
    normalizing = data.new_environment(normalize_ids=True)
    assert not normalizing.call("get_reservation_details", spelled).error
    assert not normalizing.call("get_user_details", {"user_id": "Mia_Li_3668"}).error
