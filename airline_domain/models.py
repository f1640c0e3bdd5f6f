"""The airline DB in upstream's dumped shape, and the few pydantic models the tools build from arguments.

Entities are plain dicts (see store.py): ``normalize_db`` brings parsed db.json into the exact shape of
upstream's ``FlightDB.model_dump()``: keys in declared field order, ``status: None`` on every reservation
(db.json omits it), ints and floats as upstream's fields declare them. The hash and every tool output
depend on that shape.

Where upstream's tools construct a pydantic model from an argument (flight and passenger items, payments,
the new reservation, a certificate), this module has a model of the same name, fields and types, so that
validation, coercion and the error text are upstream's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from domain_kit.store import Entity

TABLES: tuple[str, ...] = ("flights", "reservations", "users")

FlightType = Literal["round_trip", "one_way"]
CabinClass = Literal["business", "economy", "basic_economy"]
Insurance = Literal["yes", "no"]

# Declared field order of upstream's models.
FLIGHT_FIELDS = (
    "flight_number",
    "origin",
    "destination",
    "scheduled_departure_time_est",
    "scheduled_arrival_time_est",
    "dates",
)
DATE_STATUS_FIELDS: dict[str, tuple[str, ...]] = {
    "available": ("status", "available_seats", "prices"),
    "landed": ("status", "actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": ("status",),
    "delayed": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("status", "actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("status", "estimated_departure_time_est", "estimated_arrival_time_est"),
}
USER_FIELDS = (
    "user_id",
    "name",
    "address",
    "email",
    "dob",
    "payment_methods",
    "saved_passengers",
    "membership",
    "reservations",
)
NAME_FIELDS = ("first_name", "last_name")
ADDRESS_FIELDS = ("address1", "address2", "city", "country", "state", "zip")
PAYMENT_METHOD_FIELDS: dict[str, tuple[str, ...]] = {
    "credit_card": ("source", "id", "brand", "last_four"),
    "gift_card": ("source", "id", "amount"),
    "certificate": ("source", "id", "amount"),
}
PASSENGER_FIELDS = ("first_name", "last_name", "dob")
RESERVATION_FIELDS = (
    "reservation_id",
    "user_id",
    "origin",
    "destination",
    "flight_type",
    "cabin",
    "flights",
    "passengers",
    "payment_history",
    "created_at",
    "total_baggages",
    "nonfree_baggages",
    "insurance",
    "status",
)
SEGMENT_FIELDS = ("flight_number", "origin", "destination", "date", "price")
PAYMENT_FIELDS = ("payment_id", "amount")


def _ordered(
    raw: Mapping[str, Any], fields: tuple[str, ...], optional: frozenset[str] = frozenset()
) -> Entity:
    # Declared order; defaulted fields present; unknown keys dropped, as pydantic's model_dump() does.
    return {key: raw.get(key) if key in optional else raw[key] for key in fields}


def _int(value: Any) -> Any:
    # pydantic int fields accept integral floats on load (4986.0 -> 4986); db.json has none.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _float(value: Any) -> Any:
    # float fields coerce ints on load (100 -> 100.0), which the hash tells apart.
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _user(raw: Mapping[str, Any]) -> Entity:
    user = _ordered(raw, USER_FIELDS)
    user["name"] = _ordered(raw["name"], NAME_FIELDS)
    user["address"] = _ordered(raw["address"], ADDRESS_FIELDS, frozenset({"address2"}))
    methods: dict[str, Entity] = {}
    for key, method in raw["payment_methods"].items():
        entity = _ordered(method, PAYMENT_METHOD_FIELDS[method["source"]])
        if "amount" in entity:
            entity["amount"] = _float(entity["amount"])
        methods[key] = entity
    user["payment_methods"] = methods
    user["saved_passengers"] = [_ordered(p, PASSENGER_FIELDS) for p in raw["saved_passengers"]]
    user["reservations"] = list(raw["reservations"])
    return user


def _reservation(raw: Mapping[str, Any]) -> Entity:
    reservation = _ordered(raw, RESERVATION_FIELDS, frozenset({"status"}))
    reservation["flights"] = [
        {**_ordered(segment, SEGMENT_FIELDS), "price": _int(segment["price"])} for segment in raw["flights"]
    ]
    reservation["passengers"] = [_ordered(p, PASSENGER_FIELDS) for p in raw["passengers"]]
    reservation["payment_history"] = [
        {"payment_id": payment["payment_id"], "amount": _int(payment["amount"])}
        for payment in raw["payment_history"]
    ]
    return reservation


def _date_state(raw: dict[str, Any]) -> Entity:
    fields = DATE_STATUS_FIELDS[raw["status"]]
    if tuple(raw) == fields:  # db.json's 9,000 instances already are in declared order: keep them
        return raw
    return _ordered(raw, fields)


def _flight(raw: Mapping[str, Any]) -> Entity:
    flight = _ordered(raw, FLIGHT_FIELDS)
    flight["dates"] = {date: _date_state(state) for date, state in raw["dates"].items()}
    return flight


def normalize_db(raw: Mapping[str, Any]) -> dict[str, dict[str, Entity]]:
    """Parsed db.json in upstream's ``model_dump()`` shape. Raises ValueError on an unexpected layout."""
    extra = set(raw) - set(TABLES)
    if extra:
        raise ValueError(f"unexpected top-level keys in the airline db.json: {sorted(extra)}")
    try:
        return {
            "flights": {key: _flight(value) for key, value in raw["flights"].items()},
            "reservations": {key: _reservation(value) for key, value in raw["reservations"].items()},
            "users": {key: _user(value) for key, value in raw["users"].items()},
        }
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"the airline db.json does not have upstream's layout: {exc!r}") from exc


# ----------------------------------------------------------------- models built from tool arguments
# Same class names, field names, order and types as upstream's data_model.py: validation errors name them.


class FlightInfo(BaseModel):
    flight_number: str
    date: str


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class Payment(BaseModel):
    payment_id: str
    amount: int


class ReservationFlight(BaseModel):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: int


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: CabinClass
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["cancelled"] | None = None


class PaymentMethodBase(BaseModel):
    source: str
    id: str


class Certificate(PaymentMethodBase):
    source: Literal["certificate"]
    amount: float


# Upstream ran pydantic 2.12 (its uv.lock); a validation message ends with a link that names the version.
# Messages quote upstream's link so that the agent sees the same bytes whatever pydantic is installed here.
UPSTREAM_PYDANTIC_DOCS = "https://errors.pydantic.dev/2.12/"
_DOCS_LINK = re.compile(r"https://errors\.pydantic\.dev/[0-9]+\.[0-9]+/")


def upstream_message(exc: BaseException) -> str:
    """``str(exc)``, with a pydantic validation error's documentation links as upstream's pydantic prints
    them."""
    text = str(exc)
    if isinstance(exc, ValidationError):
        text = _DOCS_LINK.sub(UPSTREAM_PYDANTIC_DOCS, text)
    return text
