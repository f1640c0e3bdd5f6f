"""The 14 airline tools, reproducing upstream tau2-bench v1.0.1 behaviour over the copy-on-write DB.

Each public method is one tool, with upstream's name and parameter names and order, so that calling it with
``**arguments`` yields Python's own binding errors (``AirlineTools.get_user_details() missing 1 required
positional argument: 'user_id'``) exactly as upstream. The bodies follow upstream's check order, error texts,
arithmetic and mutation order, because the DB hash (and so the reward) depends on them, quirks included:

* new reservations get the first free id of HATHAT/HATHAU/HATHAV and ``created_at`` 2024-05-15T15:00:00;
  new certificates the first id of certificate_3221322..4 the user does not hold;
* a booking's payments must add up to the price the tool computes (fares, $30 insurance per passenger,
  $50 per non-free bag); a certificate used in a booking is removed whatever is left on it;
* seats are taken by bookings and never given back; cancelling appends the negated payment history and
  credits nothing;
* a flight change keeps an unchanged segment (with its old price) only when the cabin stays the same;
* arguments are not validated beyond the pydantic models upstream builds (models.py): raw values are stored
  as given, and no tool rolls back a mutation made before it raised.

Entities are read with ``self.db.get`` and copied with ``self.db.for_write`` only right before a mutation.
"""

from __future__ import annotations

from typing import Any

from domain_kit.calculate import calculate
from domain_kit.store import Entity, OverlayDb, copy_entity

from .models import Certificate, FlightInfo, Passenger, Payment, Reservation

NEW_RESERVATION_IDS: tuple[str, ...] = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS: tuple[str, ...] = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
NOW = "2024-05-15T15:00:00"  # upstream's fixed "current time"; the policy states the same

AIRPORTS: tuple[tuple[str, str], ...] = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)


def _as_models(items: Any, model: type[Any]) -> Any:
    """Upstream's conversion: when every item is an object, each becomes `model` (extra keys ignored, a
    missing or ill-typed field is a validation error); otherwise the value is left as it is."""
    if all(isinstance(item, dict) for item in items):
        return [model(**item) for item in items]
    return items


class AirlineTools:
    """The agent-facing airline tools bound to one trial's DB."""

    def __init__(self, db: OverlayDb) -> None:
        self.db = db

    # ----------------------------------------------------------------- lookups (read-only results)

    def _get_user(self, user_id: str) -> Entity:
        if not self.db.has("users", user_id):
            raise ValueError(f"User {user_id} not found")
        return self.db.get("users", user_id)

    def _get_reservation(self, reservation_id: str) -> Entity:
        if not self.db.has("reservations", reservation_id):
            raise ValueError(f"Reservation {reservation_id} not found")
        return self.db.get("reservations", reservation_id)

    def _get_flight(self, flight_number: str) -> Entity:
        if not self.db.has("flights", flight_number):
            raise ValueError(f"Flight {flight_number} not found")
        return self.db.get("flights", flight_number)

    def _get_flight_instance(self, flight_number: str, date: str) -> Entity:
        flight = self._get_flight(flight_number)
        if date not in flight["dates"]:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        instance: Entity = flight["dates"][date]
        return instance

    def _new_reservation_id(self) -> str:
        for reservation_id in NEW_RESERVATION_IDS:
            if not self.db.has("reservations", reservation_id):
                return reservation_id
        raise ValueError("Too many reservations")

    def _search_direct_flight(
        self, date: Any, origin: Any = None, destination: Any = None, leave_after: Any = None
    ) -> list[Entity]:
        results = []
        for flight in self.db.values("flights"):
            dates = flight["dates"]
            if (
                (origin is None or flight["origin"] == origin)
                and (destination is None or flight["destination"] == destination)
                and (date in dates)
                and (dates[date]["status"] == "available")
                and (leave_after is None or flight["scheduled_departure_time_est"] >= leave_after)
            ):
                results.append(
                    {
                        "flight_number": flight["flight_number"],
                        "origin": flight["origin"],
                        "destination": flight["destination"],
                        "status": "available",
                        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                        "date": None,
                        "available_seats": dates[date]["available_seats"],
                        "prices": dates[date]["prices"],
                    }
                )
        return results

    def _payment_for_update(self, user_id: str, payment_id: str, total_price: Any) -> Entity | None:
        """Charge (or, for a negative total, credit) one payment method of the user for a change; the
        history entry to append, or None when nothing is owed."""
        methods = self.db.get("users", user_id)["payment_methods"]
        if payment_id not in methods:
            raise ValueError("Payment method not found")
        method = methods[payment_id]
        if method["source"] == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        elif method["source"] == "gift_card" and method["amount"] < total_price:
            raise ValueError("Gift card balance is not enough")
        if method["source"] == "gift_card":
            self.db.for_write("users", user_id)["payment_methods"][payment_id]["amount"] -= total_price
        if total_price != 0:
            return Payment(payment_id=payment_id, amount=total_price).model_dump()
        return None

    # ----------------------------------------------------------------- the 14 tools, in upstream order

    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: str,
        cabin: str,
        flights: list[Any],
        passengers: list[Any],
        payment_methods: list[Any],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: str,
    ) -> Entity:
        flights = _as_models(flights, FlightInfo)
        passengers = _as_models(passengers, Passenger)
        payment_methods = _as_models(payment_methods, Payment)
        user = self._get_user(user_id)
        reservation_id = self._new_reservation_id()
        # Built (and validated) before anything is written, as upstream does: enums, counts, items.
        reservation = Reservation(
            reservation_id=reservation_id,
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,
            cabin=cabin,
            flights=[],
            passengers=passengers,
            payment_history=payment_methods,
            created_at=NOW,
            total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages,
            insurance=insurance,
        ).model_dump()

        total_price: Any = 0
        segments: list[Entity] = []
        for flight_info in flights:
            flight_number = flight_info.flight_number
            flight = self._get_flight(flight_number)
            instance = self._get_flight_instance(flight_number, flight_info.date)
            if instance["status"] != "available":
                raise ValueError(f"Flight {flight_number} not available on date {flight_info.date}")
            if instance["available_seats"][cabin] < len(passengers):
                raise ValueError(f"Not enough seats on flight {flight_number}")
            price = instance["prices"][cabin]
            segments.append(
                {
                    "flight_number": flight_number,
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "date": flight_info.date,
                    "price": price,
                }
            )
            total_price += price * len(passengers)
        if insurance == "yes":
            total_price += 30 * len(passengers)
        total_price += 50 * nonfree_baggages

        methods = user["payment_methods"]
        for payment in payment_methods:
            if payment.payment_id not in methods:
                raise ValueError(f"Payment method {payment.payment_id} not found")
            method = methods[payment.payment_id]
            if method["source"] in {"gift_card", "certificate"} and method["amount"] < payment.amount:
                raise ValueError(f"Not enough balance in payment method {payment.payment_id}")
        total_payment = sum(payment.amount for payment in payment_methods)
        if total_payment != total_price:
            raise ValueError(
                f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}"
            )

        # Every check passed: pay, take the seats, store. (A certificate listed twice fails in the middle
        # with a KeyError, keeping what was already deducted, as upstream does.)
        owner = self.db.for_write("users", user_id)
        for payment in payment_methods:
            method = owner["payment_methods"][payment.payment_id]
            if method["source"] == "gift_card":
                method["amount"] -= payment.amount
            elif method["source"] == "certificate":
                owner["payment_methods"].pop(payment.payment_id)
        for segment in segments:
            # Only the path to the seat counts is copied: a flight holds 30 dates.
            seats = self.db.for_write(
                "flights", segment["flight_number"], "dates", segment["date"], "available_seats"
            )
            seats[cabin] -= len(passengers)
        reservation["flights"] = segments
        self.db.add("reservations", reservation_id, reservation)
        owner["reservations"].append(reservation_id)
        return reservation

    def calculate(self, expression: str) -> str:
        return calculate(expression)

    def cancel_reservation(self, reservation_id: str) -> Entity:
        self._get_reservation(reservation_id)
        reservation = self.db.for_write("reservations", reservation_id)
        refunds = [
            Payment(payment_id=payment["payment_id"], amount=-payment["amount"]).model_dump()
            for payment in reservation["payment_history"]
        ]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        # Upstream leaves the seats taken and credits no payment method.
        return reservation

    def get_reservation_details(self, reservation_id: str) -> Entity:
        return self._get_reservation(reservation_id)

    def get_user_details(self, user_id: str) -> Entity:
        return self._get_user(user_id)

    def list_all_airports(self) -> list[Entity]:
        return [{"iata": iata, "city": city} for iata, city in AIRPORTS]

    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[Entity]:
        return self._search_direct_flight(date=date, origin=origin, destination=destination)

    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list[list[Entity]]:
        results = []
        for first in self._search_direct_flight(date=date, origin=origin, destination=None):
            first["date"] = date
            # Upstream's next-day date is not zero-padded ("2024-05-9"); no day before the 16th has flights
            # on sale, so it only matters for what the agent sees when it asks.
            date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
            for second in self._search_direct_flight(
                date=date2,
                origin=first["destination"],
                destination=destination,
                leave_after=first["scheduled_arrival_time_est"],
            ):
                second["date"] = date2
                results.append([first, second])
        return results

    def send_certificate(self, user_id: str, amount: int) -> str:
        user = self._get_user(user_id)
        for payment_id in NEW_CERTIFICATE_IDS:
            if payment_id not in user["payment_methods"]:
                certificate = Certificate(id=payment_id, amount=amount, source="certificate").model_dump()
                self.db.for_write("users", user_id)["payment_methods"][payment_id] = certificate
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Entity:
        reservation = self._get_reservation(reservation_id)
        user_id = reservation["user_id"]
        self._get_user(user_id)
        total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        payment = self._payment_for_update(user_id, payment_id, total_price)
        reservation = self.db.for_write("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        # Stored as given, unvalidated (a float or a string changes the hash), as upstream does.
        reservation["total_baggages"] = copy_entity(total_baggages)
        reservation["nonfree_baggages"] = copy_entity(nonfree_baggages)
        return reservation

    def update_reservation_flights(
        self, reservation_id: str, cabin: str, flights: list[Any], payment_id: str
    ) -> Entity:
        flights = _as_models(flights, FlightInfo)
        reservation = self._get_reservation(reservation_id)
        user_id = reservation["user_id"]
        self._get_user(user_id)
        passenger_count = len(reservation["passengers"])
        total_price: Any = 0
        segments: list[Entity] = []
        for flight_info in flights:
            kept = next(
                (
                    segment
                    for segment in reservation["flights"]
                    if segment["flight_number"] == flight_info.flight_number
                    and segment["date"] == flight_info.date
                    and cabin == reservation["cabin"]
                ),
                None,
            )
            if kept:  # same flight, date and cabin: kept with the price paid, flown or not
                total_price += kept["price"] * passenger_count
                segments.append(copy_entity(kept))
                continue
            flight = self._get_flight(flight_info.flight_number)
            instance = self._get_flight_instance(flight_info.flight_number, flight_info.date)
            if instance["status"] != "available":
                raise ValueError(
                    f"Flight {flight_info.flight_number} not available on date {flight_info.date}"
                )
            if instance["available_seats"][cabin] < passenger_count:
                raise ValueError(f"Not enough seats on flight {flight_info.flight_number}")
            segment = {
                "flight_number": flight_info.flight_number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": flight_info.date,
                "price": instance["prices"][cabin],
            }
            total_price += segment["price"] * passenger_count
            segments.append(segment)
        total_price -= sum(segment["price"] for segment in reservation["flights"]) * passenger_count
        payment = self._payment_for_update(user_id, payment_id, total_price)
        reservation = self.db.for_write("reservations", reservation_id)
        if payment is not None:
            reservation["payment_history"].append(payment)
        reservation["flights"] = segments
        # The cabin is stored unvalidated, as upstream; seats are neither taken nor released.
        reservation["cabin"] = copy_entity(cabin)
        return reservation

    def update_reservation_passengers(self, reservation_id: str, passengers: list[Any]) -> Entity:
        passengers = _as_models(passengers, Passenger)
        reservation = self._get_reservation(reservation_id)
        if len(passengers) != len(reservation["passengers"]):
            raise ValueError("Number of passengers does not match")
        reservation = self.db.for_write("reservations", reservation_id)
        if isinstance(passengers, list) and all(isinstance(p, Passenger) for p in passengers):
            reservation["passengers"] = [passenger.model_dump() for passenger in passengers]
        else:  # not all objects: stored as given (a list of strings, even a string), as upstream does
            reservation["passengers"] = copy_entity(passengers)
        return reservation

    def get_flight_status(self, flight_number: str, date: str) -> str:
        status: str = self._get_flight_instance(flight_number, date)["status"]
        return status
