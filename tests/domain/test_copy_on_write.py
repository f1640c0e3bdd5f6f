"""Copy-on-write isolation and the incremental hash."""

from __future__ import annotations

import hashlib
import json
import tracemalloc

from domain_kit.store import DbFingerprint
from retail_domain import RetailData

from .conftest import INITIAL_HASH

CANCEL = {"order_id": "#W6779827", "reason": "no longer needed"}  # pending, paid by a gift card


def full_hash(dump: dict[str, object]) -> str:
    """Upstream's definition, computed the slow way over a complete dump."""
    return hashlib.sha256(json.dumps(dump, sort_keys=True, default=str).encode()).hexdigest()


def test_two_environments_never_see_each_others_writes(data: RetailData) -> None:
    first = data.new_environment()
    second = data.new_environment()
    assert not first.call("cancel_pending_order", CANCEL).error
    assert (
        json.loads(first.call("get_order_details", {"order_id": "#W6779827"}).content)["status"]
        == "cancelled"
    )
    assert (
        json.loads(second.call("get_order_details", {"order_id": "#W6779827"}).content)["status"] == "pending"
    )
    balance = json.loads(second.call("get_user_details", {"user_id": "ethan_lopez_6291"}).content)
    assert balance["payment_methods"]["gift_card_7219486"]["balance"] == 49.0
    assert second.db_hash() == INITIAL_HASH
    assert first.db_hash() != INITIAL_HASH
    # the second can make the same write independently
    assert not second.call("cancel_pending_order", CANCEL).error
    assert second.db_hash() == first.db_hash()


def test_the_shared_base_is_never_written(data: RetailData) -> None:
    before = (
        json.dumps(data.base.tables["orders"]["#W6779827"]),
        json.dumps(data.base.tables["users"]["ethan_lopez_6291"]),
    )
    env = data.new_environment()
    env.call("cancel_pending_order", CANCEL)
    env.call(
        "modify_user_address",
        {
            "user_id": "ethan_lopez_6291",
            "address1": "x",
            "address2": "",
            "city": "c",
            "state": "s",
            "country": "USA",
            "zip": "1",
        },
    )
    after = (
        json.dumps(data.base.tables["orders"]["#W6779827"]),
        json.dumps(data.base.tables["users"]["ethan_lopez_6291"]),
    )
    assert before == after
    assert data.new_environment().db_hash() == INITIAL_HASH
    assert full_hash(data.new_environment().dump()) == INITIAL_HASH


def test_incremental_hash_equals_the_full_serialization(data: RetailData) -> None:
    env = data.new_environment()
    assert full_hash(env.dump()) == env.db_hash() == INITIAL_HASH
    # changes at both ends of the sorted key space and in the middle
    env.call("cancel_pending_order", CANCEL)
    env.call(
        "modify_pending_order_address",
        {
            "order_id": "#W9911714",
            "address1": "a",
            "address2": "b",
            "city": "c",
            "state": "d",
            "country": "e",
            "zip": "f",
        },
    )
    first_order = min(data.base.tables["orders"])
    last_user = max(data.base.tables["users"])
    env.call("get_order_details", {"order_id": first_order})
    env.call(
        "modify_user_address",
        {
            "user_id": last_user,
            "address1": "x",
            "address2": "",
            "city": "c",
            "state": "s",
            "country": "USA",
            "zip": "1",
        },
    )
    assert env.changed_entities() == 4
    assert env.db_hash() == full_hash(env.dump())


def test_a_failed_write_that_changed_nothing_leaves_the_hash(data: RetailData) -> None:
    env = data.new_environment()
    assert env.call("cancel_pending_order", {"order_id": "#W6779827", "reason": "bored"}).error
    assert env.db_hash() == INITIAL_HASH


def test_environments_share_the_base_instead_of_copying_it(data: RetailData) -> None:
    # Not a benchmark (see bench/domain_bench.py): a structural bound. One copy of the parsed DB takes several
    # MB, so 1,000 environments holding copies would allocate gigabytes; sharing the base allocates little.
    tracemalloc.start()
    try:
        envs = [data.new_environment() for _ in range(1000)]
        allocated, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(envs) == 1000 and allocated < 2_000_000, allocated
    assert all(env.changed_entities() == 0 for env in envs)


def test_a_write_that_restores_the_base_value_hashes_as_initial(data: RetailData) -> None:
    env = data.new_environment()
    address = dict(data.base.tables["users"]["yusuf_rossi_9620"]["address"])
    assert not env.call("modify_user_address", {"user_id": "yusuf_rossi_9620", **address}).error
    assert env.changed_entities() == 1
    assert env.db_hash() == INITIAL_HASH == full_hash(env.dump())


def test_a_db_equal_to_a_known_one_takes_its_hash_and_any_other_is_hashed(data: RetailData) -> None:
    """`db_hash(known=...)`: the end state is compared with a fingerprint (each entity that differs from the
    base, by sha256) and, when equal, takes the fingerprint's hash without hashing the DB. A stand-in hash
    shows which way each answer came; every DB that differs by even one entity is hashed in full."""
    first = data.new_environment()
    assert not first.call("cancel_pending_order", CANCEL).error
    known = first.db_fingerprint()
    assert known.db_hash == full_hash(first.dump()) and len(known.changes) == 2  # the order and the user
    stand_in = DbFingerprint(known.changes, "stand-in")

    same = data.new_environment()  # the same end state, reached again
    assert not same.call("cancel_pending_order", CANCEL).error
    assert same.db_hash(known=stand_in) == "stand-in"

    other_reason = data.new_environment()  # one field of one entity differs
    assert not other_reason.call("cancel_pending_order", {**CANCEL, "reason": "ordered by mistake"}).error
    assert other_reason.db_hash(known=stand_in) == full_hash(other_reason.dump()) != known.db_hash

    untouched = data.new_environment()  # nothing differs: the base's hash, not the known one
    assert untouched.db_hash(known=stand_in) == INITIAL_HASH

    one_more = data.new_environment()  # the known changes and one more entity
    assert not one_more.call("cancel_pending_order", CANCEL).error
    address = {**data.base.tables["users"]["yusuf_rossi_9620"]["address"], "city": "elsewhere"}
    assert not one_more.call("modify_user_address", {"user_id": "yusuf_rossi_9620", **address}).error
    assert one_more.db_hash(known=stand_in) == full_hash(one_more.dump())


def test_the_gold_outcome_carries_the_fingerprint_of_its_end_state(data: RetailData) -> None:
    for task_id in ("0", "5", "57"):
        gold = data.gold(task_id)
        replayed = data.new_environment()
        for call in gold.actions:
            replayed.call(call.name, call.arguments)
        assert gold.db_hash == full_hash(replayed.dump())
        assert replayed.db_fingerprint() == gold.fingerprint
