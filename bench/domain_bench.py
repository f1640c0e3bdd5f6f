"""Micro-benchmark of the retail domain: environment set-up, tool calls, db_hash() and memory per environment.

Run: ``.venv/bin/python -m bench.domain_bench`` (or ``make bench``). Prints a table; asserts nothing
about time.
Upstream tau2-bench, measured on the same kind of machine: 40-290 ms and about 12 MB per environment (a fresh
pydantic DB), about 40 ms per hash.
"""

from __future__ import annotations

import gc
import hashlib
import json
import statistics
import time
import tracemalloc
from collections.abc import Callable

from retail_domain import RetailEnvironment, load_retail_data

CANCEL = {"order_id": "#W6779827", "reason": "no longer needed"}
READ = {"order_id": "#W2378156"}


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


def main() -> None:
    start = time.perf_counter()
    data = load_retail_data()
    load_s = time.perf_counter() - start

    rows: list[tuple[str, str, str]] = [
        ("first load (verify sha256, parse, hash layout)", _fmt_time(load_s), "-")
    ]

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

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'this package':>14}  {'upstream':>10}")
    print(f"{'-' * width}  {'-' * 14}  {'-' * 10}")
    for name, value, upstream in rows:
        print(f"{name:<{width}}  {value:>14}  {upstream:>10}")


_ADDRESS = {"address1": "1 Main St", "address2": "", "city": "c", "state": "s", "country": "USA", "zip": "1"}

if __name__ == "__main__":
    main()
