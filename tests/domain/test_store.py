"""domain_kit's copy-on-write store on small made-up DBs: every edit (changed, added, at a table's head, in
its middle, at its end, into an empty table) hashes like upstream's full serialization."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain_kit import upstream_hash
from domain_kit.store import BaseDb, DbFingerprint, OverlayDb


def tables() -> dict[str, dict[str, Any]]:
    return {
        "users": {"b": {"name": "B", "n": 1}, "d": {"name": "D", "n": 2.0}, "f": {"name": "F", "n": None}},
        "empty": {},
        "flights": {"HAT001": {"seats": {"economy": 3}, "dates": ["x"]}},
    }


@pytest.fixture
def base() -> BaseDb:
    return BaseDb(tables())


def test_the_base_hash_is_upstreams(base: BaseDb) -> None:
    assert base.initial_hash == upstream_hash(tables())
    assert OverlayDb(base).db_hash() == base.initial_hash


@pytest.mark.parametrize("key", ["a", "c", "e", "g", "b0"])
def test_an_added_entity_lands_where_sorting_puts_it(base: BaseDb, key: str) -> None:
    db = OverlayDb(base)
    db.add("users", key, {"name": key.upper(), "n": 9})
    assert db.db_hash() == upstream_hash(db.dump())
    assert list(db.keys("users")) == ["b", "d", "f", key]  # insertion order, as upstream's dict


def test_several_additions_and_changes_at_once(base: BaseDb) -> None:
    db = OverlayDb(base)
    for key in ("z", "a", "c", "cc", "0"):
        db.add("users", key, {"k": key})
    db.for_write("users", "b")["n"] = 5
    db.for_write("users", "f")["n"] = "x"
    for key in ("q", "p"):
        db.add("empty", key, {"k": [key]})
    db.for_write("flights", "HAT001")["seats"]["economy"] -= 1
    assert db.db_hash() == upstream_hash(db.dump())
    assert db.changed_count() == 10
    fingerprint = db.fingerprint()
    assert [(table, key) for table, key, _ in fingerprint.changes] == [
        *(("empty", "p"), ("empty", "q"), ("flights", "HAT001")),
        *(("users", "0"), ("users", "a"), ("users", "b"), ("users", "c"), ("users", "cc"), ("users", "f")),
        ("users", "z"),
    ]


def test_added_entities_are_written_in_place(base: BaseDb) -> None:
    db = OverlayDb(base)
    db.add("empty", "k", {"v": 1})
    db.for_write("empty", "k")["v"] = 2
    assert db.get("empty", "k") == {"v": 2} and db.db_hash() == upstream_hash(db.dump())
    with pytest.raises(KeyError, match="empty/k already exists"):
        db.add("empty", "k", {})
    with pytest.raises(KeyError, match="users/b already exists"):
        db.add("users", "b", {})


def test_a_copy_equal_to_the_base_changes_nothing(base: BaseDb) -> None:
    db = OverlayDb(base)
    db.for_write("users", "d")
    assert db.db_hash() == base.initial_hash and db.fingerprint().changes == ()


def test_reads_fall_through_and_writes_stay_in_the_overlay(base: BaseDb) -> None:
    first, second = OverlayDb(base), OverlayDb(base)
    first.for_write("users", "b")["n"] = 100
    first.add("users", "c", {"n": 0})
    assert first.get("users", "b")["n"] == 100 and second.get("users", "b")["n"] == 1
    assert first.has("users", "c") and not second.has("users", "c")
    assert base.tables["users"]["b"]["n"] == 1
    assert [entity["n"] for entity in first.values("users")] == [100, 2.0, None, 0]
    assert second.db_hash() == base.initial_hash


def test_an_unhashable_id_raises_pythons_error(base: BaseDb) -> None:
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        OverlayDb(base).has("users", ["b"])


def test_a_known_fingerprint_spares_the_hash(base: BaseDb) -> None:
    gold = OverlayDb(base)
    gold.add("users", "c", {"n": 0})
    known = gold.fingerprint()
    same = OverlayDb(base)
    same.add("users", "c", {"n": 0})
    # A made-up hash proves the known one was taken without hashing.
    assert (
        same.db_hash(DbFingerprint(known.changes, "taken from the fingerprint"))
        == "taken from the fingerprint"
    )
    other = OverlayDb(base)
    other.add("users", "c", {"n": 1})
    assert other.db_hash(known) == upstream_hash(other.dump()) != known.db_hash


_ids = st.text(alphabet="abcdefgh0", min_size=1, max_size=3)
_values = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3))


@settings(max_examples=60, deadline=None)
@given(
    changes=st.dictionaries(st.sampled_from(["b", "d", "f"]), _values, max_size=3),
    added=st.dictionaries(
        st.tuples(st.sampled_from(["users", "empty", "flights"]), _ids), _values, max_size=6
    ),
)
def test_any_edits_hash_like_the_full_serialization(
    changes: dict[str, Any], added: dict[tuple[str, str], Any]
) -> None:
    db = OverlayDb(BaseDb(tables()))
    for key, value in changes.items():
        db.for_write("users", key)["n"] = value
    for (table, key), value in added.items():
        if not db.has(table, key):
            db.add(table, key, {"v": value})
    assert db.db_hash() == upstream_hash(db.dump())


def test_a_path_write_copies_only_the_path(base: BaseDb) -> None:
    db = OverlayDb(base)
    seats = db.for_write("flights", "HAT001", "seats")
    seats["economy"] -= 1
    copy, original = db.get("flights", "HAT001"), base.tables["flights"]["HAT001"]
    assert copy is not original and copy["seats"] is not original["seats"]
    assert copy["dates"] is original["dates"]  # shared, untouched
    assert original["seats"] == {"economy": 3} and copy["seats"] == {"economy": 2}
    assert db.db_hash() == upstream_hash(db.dump()) != base.initial_hash
    # A second path write reuses the copy; a list on the way is copied too.
    db.for_write("flights", "HAT001", "seats")["economy"] -= 1
    db.for_write("flights", "HAT001", "dates").append("y")
    assert original == {"seats": {"economy": 3}, "dates": ["x"]}
    assert db.get("flights", "HAT001") == {"seats": {"economy": 1}, "dates": ["x", "y"]}
    # A whole-entity write finishes the copy: nothing is shared with the base any more.
    whole = db.for_write("flights", "HAT001")
    assert whole["dates"] is not original["dates"] and whole == {"seats": {"economy": 1}, "dates": ["x", "y"]}
    whole["seats"]["business"] = 1
    assert original == {"seats": {"economy": 3}, "dates": ["x"]}
    assert db.db_hash() == upstream_hash(db.dump())


def test_a_path_into_an_owned_entity_copies_nothing_more(base: BaseDb) -> None:
    db = OverlayDb(base)
    whole = db.for_write("users", "b")
    assert db.for_write("users", "b", "name") == "B" and db.get("users", "b") is whole
    db.add("empty", "k", {"v": {"w": 1}})
    db.for_write("empty", "k", "v")["w"] = 2
    assert db.get("empty", "k") == {"v": {"w": 2}}
    with pytest.raises(TypeError, match="a write path goes through dicts and lists, not str"):
        db.for_write("users", "d", "name", 0)
