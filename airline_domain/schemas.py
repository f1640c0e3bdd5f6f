"""The 14 airline tools as OpenAI function schemas, in the order upstream presents them.

Names, parameter names and order, JSON types, enums, nested item shapes and required lists equal upstream's
(conformance tool_signatures.json). The layout follows pydantic's generated schema as upstream emits it (a
``title`` per property, ``title: "parameters"``, no ``required`` key for a tool without parameters), with the
nested item objects written inline instead of through ``$defs`` references, which some providers refuse.
The descriptions are this project's own wording of the same facts.
"""

from __future__ import annotations

import copy
from typing import Any

_USER_ID = "User id, e.g. 'sara_doe_496'."
_RESERVATION_ID = "Reservation id: six upper-case letters and digits, e.g. 'ZFA04Y'."
_AIRPORT = "IATA code of the {} airport, three letters, e.g. '{}'."
_DATE = "Date as 'YYYY-MM-DD', e.g. '2024-05-16'."
_CABIN = "Cabin class: 'basic_economy', 'economy' or 'business'."
_PAYMENT_ID = (
    "Id of a payment method in the user's profile, e.g. 'credit_card_7815826' or 'gift_card_7815826'; "
    "certificates cannot pay for a change."
)
CABINS = ["business", "economy", "basic_economy"]


def _title(name: str) -> str:
    # pydantic's titles: 'user_id' -> 'User Id', 'flights' -> 'Flights'.
    return " ".join(part.capitalize() for part in name.split("_"))


def _scalar(name: str, kind: str, description: str, enum: list[str] | None = None) -> dict[str, Any]:
    # Key order as pydantic's model_json_schema() emits it.
    prop: dict[str, Any] = {"description": description}
    if enum is not None:
        prop["enum"] = list(enum)
    prop["title"] = _title(name)
    prop["type"] = kind
    return prop


def _object_list(name: str, description: str, item_title: str, fields: list[tuple[str, str, str]]) -> Any:
    # Upstream's parameter type is `list[Model | dict]`: each item is the model's object, or any object.
    item = {
        "properties": {field: _scalar(field, kind, text) for field, kind, text in fields},
        "required": [field for field, _, _ in fields],
        "title": item_title,
        "type": "object",
    }
    return {
        "description": description,
        "items": {"anyOf": [item, {"additionalProperties": True, "type": "object"}]},
        "title": _title(name),
        "type": "array",
    }


_FLIGHT_FIELDS = [
    ("flight_number", "string", "Flight number, e.g. 'HAT001'."),
    ("date", "string", "Date of this flight as 'YYYY-MM-DD', e.g. '2024-05-16'."),
]
_PASSENGER_FIELDS = [
    ("first_name", "string", "The passenger's first name, e.g. 'Noah'."),
    ("last_name", "string", "The passenger's last name, e.g. 'Brown'."),
    ("dob", "string", "The passenger's date of birth as 'YYYY-MM-DD', e.g. '1990-01-01'."),
]
_PAYMENT_FIELDS = [
    ("payment_id", "string", "Id of a payment method in the user's profile, e.g. 'gift_card_7815826'."),
    ("amount", "integer", "Whole dollars charged to this method, e.g. 250."),
]

# (name, description, [property schema by name])
_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "book_reservation",
        "Book a new reservation for a user and charge it. The price is computed by the tool: each flight's "
        "fare in the chosen cabin per passenger, plus $30 per passenger with travel insurance, plus $50 per "
        "non-free checked bag; the payment amounts must add up to exactly that total, and gift cards and "
        "certificates must hold enough. A certificate used here is used up, whatever is left on it. Before "
        "calling, confirm every detail with the user and get an explicit yes. Returns the new reservation.",
        {
            "user_id": _scalar("user_id", "string", "Id of the user who books, e.g. 'sara_doe_496'."),
            "origin": _scalar("origin", "string", _AIRPORT.format("trip's origin", "SFO")),
            "destination": _scalar("destination", "string", _AIRPORT.format("trip's destination", "JFK")),
            "flight_type": _scalar(
                "flight_type", "string", "Trip type: 'one_way' or 'round_trip'.", ["round_trip", "one_way"]
            ),
            "cabin": _scalar("cabin", "string", _CABIN + " The same cabin applies to every flight.", CABINS),
            "flights": _object_list(
                "flights",
                "Every flight of the trip, in travel order, each as {flight_number, date}.",
                "FlightInfo",
                _FLIGHT_FIELDS,
            ),
            "passengers": _object_list(
                "passengers",
                "Every passenger, each as {first_name, last_name, dob}.",
                "Passenger",
                _PASSENGER_FIELDS,
            ),
            "payment_methods": _object_list(
                "payment_methods",
                "How the total is paid: one or more {payment_id, amount} entries whose amounts add up to "
                "the total price.",
                "Payment",
                _PAYMENT_FIELDS,
            ),
            "total_baggages": _scalar("total_baggages", "integer", "Number of checked bags in all, e.g. 2."),
            "nonfree_baggages": _scalar(
                "nonfree_baggages",
                "integer",
                "How many of those bags are paid for ($50 each) beyond the free allowance, e.g. 0.",
            ),
            "insurance": _scalar(
                "insurance", "string", "Travel insurance ($30 per passenger): 'yes' or 'no'.", ["yes", "no"]
            ),
        },
    ),
    (
        "calculate",
        "Evaluate an arithmetic expression and return the result rounded to 2 decimal places.",
        {
            "expression": _scalar(
                "expression",
                "string",
                "The expression, e.g. '2 + 2'. Only digits, the operators + - * /, parentheses, the decimal "
                "point and spaces are allowed.",
            )
        },
    ),
    (
        "cancel_reservation",
        "Cancel a whole reservation: every payment of its history is refunded to where it came from. Before "
        "calling, confirm with the user and get an explicit yes. Returns the cancelled reservation.",
        {"reservation_id": _scalar("reservation_id", "string", _RESERVATION_ID)},
    ),
    (
        "get_reservation_details",
        "Look up a reservation: its flights, passengers, cabin, bags, insurance, payments and status.",
        {"reservation_id": _scalar("reservation_id", "string", _RESERVATION_ID)},
    ),
    (
        "get_user_details",
        "Look up a user: profile, membership, saved passengers, payment methods with gift-card and "
        "certificate balances, and the ids of their reservations.",
        {"user_id": _scalar("user_id", "string", _USER_ID)},
    ),
    (
        "list_all_airports",
        "List every airport served, as IATA code and city.",
        {},
    ),
    (
        "search_direct_flight",
        "Find the nonstop flights between two airports on a date that are still on sale, with seats left "
        "and fares per cabin.",
        {
            "origin": _scalar("origin", "string", _AIRPORT.format("departure", "JFK")),
            "destination": _scalar("destination", "string", _AIRPORT.format("arrival", "LAX")),
            "date": _scalar("date", "string", _DATE),
        },
    ),
    (
        "search_onestop_flight",
        "Find itineraries with one connection between two airports departing on a date: pairs of flights "
        "still on sale where the second leaves the connecting airport after the first arrives.",
        {
            "origin": _scalar("origin", "string", _AIRPORT.format("departure", "JFK")),
            "destination": _scalar("destination", "string", _AIRPORT.format("final arrival", "LAX")),
            "date": _scalar("date", "string", "Departure date of the first flight as 'YYYY-MM-DD'."),
        },
    ),
    (
        "send_certificate",
        "Add a travel certificate of the given value to a user's payment methods, e.g. as compensation. Only "
        "when the policy allows it: it cannot be taken back.",
        {
            "user_id": _scalar("user_id", "string", _USER_ID),
            "amount": _scalar("amount", "integer", "Value of the certificate in whole dollars, e.g. 100."),
        },
    ),
    (
        "transfer_to_human_agents",
        "Hand the conversation to a human agent, with a summary of the user's issue. Only when the user asks "
        "for a human or the request cannot be handled with the policy and these tools.",
        {"summary": _scalar("summary", "string", "A short summary of the user's issue.")},
    ),
    (
        "update_reservation_baggages",
        "Set a reservation's checked bags. Each added non-free bag costs $50, charged to the given payment "
        "method. Before calling, confirm with the user and get an explicit yes. Returns the updated "
        "reservation.",
        {
            "reservation_id": _scalar("reservation_id", "string", _RESERVATION_ID),
            "total_baggages": _scalar(
                "total_baggages", "integer", "The new number of checked bags in all, e.g. 3."
            ),
            "nonfree_baggages": _scalar(
                "nonfree_baggages", "integer", "The new number of paid bags among them, e.g. 1."
            ),
            "payment_id": _scalar("payment_id", "string", _PAYMENT_ID),
        },
    ),
    (
        "update_reservation_flights",
        "Change a reservation's flights and/or cabin. List every flight of the resulting reservation, the "
        "unchanged ones included: a flight kept in the same cabin keeps the price paid, any other is priced "
        "at today's fare. The difference is charged to, or refunded onto, the given payment method. Before "
        "calling, confirm with the user and get an explicit yes. Returns the updated reservation.",
        {
            "reservation_id": _scalar("reservation_id", "string", _RESERVATION_ID),
            "cabin": _scalar("cabin", "string", _CABIN + " It applies to every flight.", CABINS),
            "flights": _object_list(
                "flights",
                "Every flight of the reservation after the change, unchanged ones included, each as "
                "{flight_number, date}.",
                "FlightInfo",
                _FLIGHT_FIELDS,
            ),
            "payment_id": _scalar("payment_id", "string", _PAYMENT_ID),
        },
    ),
    (
        "update_reservation_passengers",
        "Replace the passenger details of a reservation; the number of passengers cannot change. Before "
        "calling, confirm with the user and get an explicit yes. Returns the updated reservation.",
        {
            "reservation_id": _scalar("reservation_id", "string", _RESERVATION_ID),
            "passengers": _object_list(
                "passengers",
                "Every passenger of the reservation, as many as before, each as "
                "{first_name, last_name, dob}.",
                "Passenger",
                _PASSENGER_FIELDS,
            ),
        },
    ),
    (
        "get_flight_status",
        "Get the status of a flight on a date: 'available', 'on time', 'delayed', 'flying', 'landed' or "
        "'cancelled'.",
        {
            "flight_number": _scalar("flight_number", "string", "Flight number, e.g. 'HAT001'."),
            "date": _scalar("date", "string", _DATE),
        },
    ),
]


def _schema(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters: dict[str, Any] = {"properties": properties}
    if properties:
        parameters["required"] = list(properties)
    parameters["title"] = "parameters"
    parameters["type"] = "object"
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _TOOLS)
TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _TOOLS)

WRITE_TOOLS = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    }
)
READ_TOOLS = frozenset(
    {
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "get_flight_status",
    }
)
GENERIC_TOOLS = frozenset({"calculate", "transfer_to_human_agents"})


def tool_schemas() -> list[dict[str, Any]]:
    """A fresh copy of the schemas (callers may adjust them, e.g. for strict structured output)."""
    return copy.deepcopy(list(TOOL_SCHEMAS))
