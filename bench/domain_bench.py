"""Micro-benchmarks of the domains: environment set-up, tool calls, db_hash() and memory per environment.

Run: ``.venv/bin/python -m bench.domain_bench`` (both domains), ``--domain retail`` or ``--domain airline``
(or ``make bench``). Prints a table per domain; asserts nothing about time.
Upstream tau2-bench, measured on the same kind of machine: 40-290 ms and about 12 MB per retail environment
(a fresh pydantic DB), about 40 ms per hash. Upstream's airline environment parses its 7 MB db.json into
pydantic models for every environment.
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from airline_domain import AirlineEnvironment, load_airline_data
from retail_domain import RetailEnvironment, load_retail_data

CANCEL = {"order_id": "#W6779827", "reason": "no longer needed"}
READ = {"order_id": "#W2378156"}

Row = tuple[str, str, str]


def _per_call(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds per call over 5 rounds of ``repeat`` calls."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        rounds.append((time.perf_counter() - start) / repeat)
    return statistics.median(rounds)


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


def retail_rows() -> list[Row]:
    start = time.perf_counter()
    data = load_retail_data()
    load_s = time.perf_counter() - start

    rows: list[Row] = [("first load (verify sha256, parse, hash layout)", _fmt_time(load_s), "-")]

    rows.append(("environment set-up", _fmt_time(_per_call(data.new_environment, 20000)), "40-290 ms"))

    env = data.new_environment()
    rows.append(
        (
            "tool call: get_order_details",
            _fmt_time(_per_call(lambda: env.call("get_order_details", READ), 5000)),
            "-",
        )
    )

    def fresh_cancel() -> None:
        data.new_environment().call("cancel_pending_order", CANCEL)

    rows.append(("set-up + one write (cancel_pending_order)", _fmt_time(_per_call(fresh_cancel, 2000)), "-"))

    rows.append(
        ("db_hash(), untouched DB", _fmt_time(_per_call(data.new_environment().db_hash, 20000)), "~40 ms")
    )

    def hash_after_write() -> None:
        fresh = data.new_environment()
        fresh.call("cancel_pending_order", CANCEL)
        fresh.db_hash()

    write_only = _per_call(fresh_cancel, 500)
    rows.append(
        (
            "db_hash() after one write",
            _fmt_time(max(_per_call(hash_after_write, 500) - write_only, 0.0)),
            "~40 ms",
        )
    )

    def worst_case_hash() -> None:
        # A change to the first entity in sorted order: the whole DB tail streams through sha256.
        fresh = data.new_environment()
        fresh.call("modify_pending_order_address", {"order_id": min(data.base.tables["orders"]), **_ADDRESS})
        fresh.db_hash()

    rows.append(
        ("db_hash() worst case (first order changed)", _fmt_time(_per_call(worst_case_hash, 100)), "~40 ms")
    )

    full = data.new_environment()
    dump = full.dump()
    rows.append(
        (
            "reference: full json.dumps + sha256 of the DB",
            _fmt_time(
                _per_call(lambda: hashlib.sha256(json.dumps(dump, sort_keys=True).encode()).hexdigest(), 5)
            ),
            "-",
        )
    )

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    live: list[RetailEnvironment] = []
    for _ in range(1000):
        one = data.new_environment()
        one.call("cancel_pending_order", CANCEL)
        live.append(one)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    total = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    rows.append(("memory, 1,000 live environments (1 write each)", f"{total / 1e6:.2f} MB", "~12 GB"))
    rows.append(("memory per environment", f"{total / 1000 / 1e3:.1f} kB", "~12 MB"))
    live.clear()  # kept alive until measured
    return rows


_ADDRESS = {"address1": "1 Main St", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}

AIRLINE_CANCEL = {"reservation_id": "4WQ150"}
AIRLINE_BOOK: dict[str, Any] = {
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


def _memory_per_environment(make: Callable[[], object], count: int) -> float:
    """Bytes of Python heap that each of `count` live environments made by `make` holds (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    live = [make() for _ in range(count)]
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    total = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    del live
    return total / count


def _hash_cost(make: Callable[[], AirlineEnvironment], count: int) -> float:
    """Median seconds of the first db_hash() of `count` environments made by `make` (timed alone: under
    load, subtracting two timings of whole trials is noisier than the hash itself)."""
    envs = [make() for _ in range(count)]
    times = []
    for env in envs:
        start = time.perf_counter()
        env.db_hash()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def airline_rows() -> list[Row]:
    start = time.perf_counter()
    data = load_airline_data()
    load_s = time.perf_counter() - start
    rows: list[Row] = [("first load (verify sha256, parse, hash layout)", _fmt_time(load_s), "-")]
    rows.append(("environment set-up", _fmt_time(_per_call(data.new_environment, 20000)), "-"))

    env = data.new_environment()
    reads: list[tuple[str, str, dict[str, Any], int]] = [
        ("get_reservation_details", "get_reservation_details", AIRLINE_CANCEL, 5000),
        ("search_direct_flight (300 flights)", "search_direct_flight", _ROUTE, 500),
        ("search_onestop_flight", "search_onestop_flight", _ROUTE, 100),
    ]
    for label, name, arguments, repeat in reads:
        seconds = _per_call(functools.partial(env.call, name, arguments), repeat)
        rows.append((f"tool call: {label}", _fmt_time(seconds), "-"))

    def fresh(*calls: tuple[str, dict[str, Any]]) -> AirlineEnvironment:
        one = data.new_environment()
        for name, arguments in calls:
            one.call(name, arguments)
        return one

    cancel = ("cancel_reservation", AIRLINE_CANCEL)
    book = ("book_reservation", AIRLINE_BOOK)
    cancel_s = _per_call(lambda: fresh(cancel), 2000)
    book_s = _per_call(lambda: fresh(book), 2000)
    rows.append(("set-up + one write (cancel_reservation)", _fmt_time(cancel_s), "-"))
    rows.append(("set-up + book_reservation", _fmt_time(book_s), "-"))
    rows.append(("db_hash(), untouched DB", _fmt_time(_per_call(data.new_environment().db_hash, 20000)), "-"))
    rows.append(
        ("db_hash() after a cancel (a reservation)", _fmt_time(_hash_cost(lambda: fresh(cancel), 200)), "-")
    )
    rows.append(
        (
            "db_hash() after a booking (flight, reservation, user)",
            _fmt_time(_hash_cost(lambda: fresh(book), 200)),
            "-",
        )
    )
    # The first flight in sorted order: booking it streams the whole DB tail after it through sha256.
    first = min(data.base.tables["flights"])
    date = "2024-05-20"
    price = data.base.tables["flights"][first]["dates"][date]["prices"]["economy"]
    book_first = (
        "book_reservation",
        {
            **AIRLINE_BOOK,
            "flights": [{"flight_number": first, "date": date}],
            "payment_methods": [{"payment_id": "credit_card_5843230", "amount": price}],
        },
    )
    rows.append(
        (
            "db_hash() worst case (first flight booked)",
            _fmt_time(_hash_cost(lambda: fresh(book_first), 200)),
            "-",
        )
    )

    gold = data.gold("23")  # cancel + three bookings, the heaviest gold trajectory

    def replayed() -> AirlineEnvironment:
        one = data.new_environment()
        for call in gold.actions:
            one.call_tool(call)
        return one

    known = [replayed() for _ in range(200)]
    times = []
    for env in known:
        start = time.perf_counter()
        env.db_hash(known=gold.fingerprint)
        times.append(time.perf_counter() - start)
    rows.append(
        ("db_hash() equal to gold (task 23, fingerprint known)", _fmt_time(statistics.median(times)), "-")
    )

    start = time.perf_counter()
    for task_id in data.tasks:
        data.gold(task_id)
    rows.append(("gold replay of the 50 tasks (cached after)", _fmt_time(time.perf_counter() - start), "-"))

    dump = data.new_environment().dump()
    rows.append(
        (
            "reference: full json.dumps + sha256 of the DB",
            _fmt_time(
                _per_call(lambda: hashlib.sha256(json.dumps(dump, sort_keys=True).encode()).hexdigest(), 5)
            ),
            "-",
        )
    )
    memory = [
        ("no write", lambda: data.new_environment()),
        ("one cancel", lambda: fresh(cancel)),
        ("one booking", lambda: fresh(book)),
        ("task 23's gold: cancel + 3 bookings", replayed),
    ]
    for label, make in memory:
        size = _memory_per_environment(make, 1000)
        rows.append((f"memory per live environment, {label}", f"{size / 1024:.1f} KiB", "-"))
    return rows


_ROUTE = {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}


def _print(title: str, rows: list[Row]) -> None:
    width = max(len(r[0]) for r in rows)
    print(title)
    print(f"{'measure':<{width}}  {'this package':>14}  {'upstream':>10}")
    print(f"{'-' * width}  {'-' * 14}  {'-' * 10}")
    for name, value, upstream in rows:
        print(f"{name:<{width}}  {value:>14}  {upstream:>10}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--domain", choices=("retail", "airline", "all"), default="all")
    args = parser.parse_args()
    if args.domain in ("retail", "all"):
        _print("retail", retail_rows())
    if args.domain in ("airline", "all"):
        if args.domain == "all":
            print()
        _print("airline", airline_rows())


if __name__ == "__main__":
    main()
