"""The retail DB as plain dicts: one shared read-only base per process, one copy-on-write overlay per trial.

Why plain dicts: upstream holds the DB as pydantic models and deep-copies 2.8 MB per trial. Here every entity
is kept exactly in the shape of upstream's ``model_dump()`` (keys in declared field order, the seven
optional order fields present as None), so a tool result is ``json.dumps(entity)`` and the DB hash is
``sha256(json.dumps(whole_db, sort_keys=True))``, both byte-identical to upstream.

Hashing cost: the base is serialized once per process into one byte string, with a sha256 checkpoint at the
start of every entity. An overlay's hash resumes from the checkpoint of its first changed entity and streams
the unchanged spans from the base bytes, so nothing is re-serialized except the entities a trial changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Declared field order of upstream's Order model; the last seven default to None and db.json omits them.
ORDER_REQUIRED_FIELDS: tuple[str, ...] = (
    "order_id",
    "user_id",
    "address",
    "items",
    "status",
    "fulfillments",
    "payment_history",
)
ORDER_OPTIONAL_FIELDS: tuple[str, ...] = (
    "cancel_reason",
    "exchange_items",
    "exchange_new_items",
    "exchange_payment_method_id",
    "exchange_price_difference",
    "return_items",
    "return_payment_method_id",
)
TABLES: tuple[str, ...] = ("orders", "products", "users")  # sorted, as json.dumps(sort_keys=True) emits them

Entity = dict[str, Any]


def _as_float(value: Any) -> Any:
    # Upstream's float fields coerce ints on load (0 -> 0.0); db.json has none, but keep the rule explicit.
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def normalize_db(raw: Mapping[str, Any]) -> dict[str, dict[str, Entity]]:
    """Bring parsed db.json into upstream's ``model_dump()`` shape (in place where possible)."""
    extra = set(raw) - set(TABLES)
    if extra:
        raise ValueError(f"unexpected top-level keys in db.json: {sorted(extra)}")
    products: dict[str, Entity] = raw["products"]
    users: dict[str, Entity] = raw["users"]
    orders: dict[str, Entity] = {}
    for product in products.values():
        for variant in product["variants"].values():
            variant["price"] = _as_float(variant["price"])
    for user in users.values():
        for method in user["payment_methods"].values():
            if "balance" in method:
                method["balance"] = _as_float(method["balance"])
    for order_id, order in raw["orders"].items():
        for item in order["items"]:
            item["price"] = _as_float(item["price"])
        for payment in order["payment_history"]:
            payment["amount"] = _as_float(payment["amount"])
        # Declared order, optional fields present as None, unknown keys dropped (as pydantic does).
        orders[order_id] = {key: order[key] for key in ORDER_REQUIRED_FIELDS} | {
            key: order.get(key) for key in ORDER_OPTIONAL_FIELDS
        }
    return {"orders": orders, "products": products, "users": users}


# Upstream hashes json.dumps(model_dump(), sort_keys=True, default=str);
# a shared encoder with the same options avoids building one per call.
_SORTED_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def entity_fragment(entity: Entity) -> bytes:
    """One entity as it appears inside upstream's hashed serialization."""
    return _SORTED_ENCODER.encode(entity).encode()


def copy_entity(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts, lists, scalars); much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {key: copy_entity(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_entity(item) for item in value]
    return value


Span = tuple[int, int, int]  # (position among the entities, start, end) in the serialized base
Replacement = tuple[Span, bytes]  # an entity's span and its new serialization


@dataclass(frozen=True)
class DbFingerprint:
    """A DB over the shared base, told apart without hashing it whole: the position of every entity that
    differs from the base with the sha256 of its serialization, in order, and the DB's hash. Two DBs over one
    base are the same bytes exactly when their `changes` are equal (sha256 of each differing entity: the trust
    placed in the DB hash itself), so a DB with the `changes` of a fingerprint has its hash."""

    changes: tuple[tuple[int, bytes], ...]
    db_hash: str


@dataclass(frozen=True)
class HashLayout:
    """The base DB serialized once, with the byte span of every entity and a sha256 checkpoint before it."""

    blob: bytes
    spans: dict[tuple[str, str], tuple[int, int, int]]  # (table, key) -> (position, start, end)
    checkpoints: tuple[Any, ...]  # hashlib objects; position -> state after blob[:start]
    initial_hash: str

    @classmethod
    def build(cls, tables: Mapping[str, Mapping[str, Entity]]) -> HashLayout:
        parts: list[bytes] = [b"{"]
        offset = 1
        spans: dict[tuple[str, str], tuple[int, int, int]] = {}
        starts: list[int] = []
        for t_index, table in enumerate(TABLES):
            head = (", " if t_index else "") + json.dumps(table) + ": {"
            parts.append(head.encode())
            offset += len(head)
            for e_index, key in enumerate(sorted(tables[table])):
                prefix = (b", " if e_index else b"") + json.dumps(key).encode() + b": "
                fragment = entity_fragment(tables[table][key])
                parts.append(prefix)
                offset += len(prefix)
                spans[(table, key)] = (len(starts), offset, offset + len(fragment))
                starts.append(offset)
                parts.append(fragment)
                offset += len(fragment)
            parts.append(b"}")
            offset += 1
        parts.append(b"}")
        blob = b"".join(parts)
        checkpoints: list[Any] = []
        running = hashlib.sha256()
        previous = 0
        view = memoryview(blob)
        for start in starts:
            running.update(view[previous:start])
            checkpoints.append(running.copy())
            previous = start
        running.update(view[previous:])
        return cls(blob, spans, tuple(checkpoints), running.hexdigest())

    def replacements(self, changed: Mapping[tuple[str, str], Entity]) -> list[Replacement]:
        """The given entities that differ from the base, serialized, in the base's order."""
        view = memoryview(self.blob)
        replaced = []
        for key, entity in changed.items():
            span = self.spans[key]
            fragment = entity_fragment(entity)
            if fragment != view[span[1] : span[2]]:  # a copy that ended up equal to the base costs nothing
                replaced.append((span, fragment))
        replaced.sort()
        return replaced

    @staticmethod
    def changes(replaced: list[Replacement]) -> tuple[tuple[int, bytes], ...]:
        return tuple((span[0], hashlib.sha256(fragment).digest()) for span, fragment in replaced)

    def hash_of(self, replaced: list[Replacement]) -> str:
        """sha256 of the base with `replaced` (from `replacements`) in place; the cost grows with the changes,
        not the DB, but the bytes after the first replaced entity are hashed again (~1 ms for the 1.4 MiB
        retail DB)."""
        if not replaced:
            return self.initial_hash
        view = memoryview(self.blob)
        (position, _, _), _ = replaced[0]
        running = self.checkpoints[position].copy()
        cursor = replaced[0][0][1]
        for (_, start, end), fragment in replaced:
            running.update(view[cursor:start])
            running.update(fragment)
            cursor = end
        running.update(view[cursor:])
        result: str = running.hexdigest()
        return result


class BaseDb:
    """The parsed DB shared read-only by every environment of a process. Never mutate its entities."""

    def __init__(self, tables: dict[str, dict[str, Entity]]) -> None:
        self.orders: dict[str, Entity] = tables["orders"]
        self.products: dict[str, Entity] = tables["products"]
        self.users: dict[str, Entity] = tables["users"]
        self.layout = HashLayout.build(tables)

    @property
    def initial_hash(self) -> str:
        return self.layout.initial_hash


class OverlayDb:
    """One trial's view of the DB: reads fall through to the base, the first write to an entity copies it.

    Tools look entities up with ``order``/``user``/``product`` (read-only result) and call
    ``order_for_write``/``user_for_write`` immediately before mutating, which is when the copy happens.
    Products are never written.
    """

    __slots__ = ("_base", "_orders", "_users")

    def __init__(self, base: BaseDb) -> None:
        self._base = base
        self._orders: dict[str, Entity] = {}
        self._users: dict[str, Entity] = {}

    @property
    def base(self) -> BaseDb:
        return self._base

    # Membership tests go to the base: the key sets never change (no tool adds or deletes an entity).
    def has_order(self, order_id: Any) -> bool:
        return order_id in self._base.orders

    def has_user(self, user_id: Any) -> bool:
        return user_id in self._base.users

    def has_product(self, product_id: Any) -> bool:
        return product_id in self._base.products

    def order(self, order_id: str) -> Entity:
        found = self._orders.get(order_id)
        return found if found is not None else self._base.orders[order_id]

    def user(self, user_id: str) -> Entity:
        found = self._users.get(user_id)
        return found if found is not None else self._base.users[user_id]

    def product(self, product_id: str) -> Entity:
        return self._base.products[product_id]

    def user_items(self) -> list[tuple[str, Entity]]:
        """All users in insertion order, overlay copies in place of base entities."""
        overlay = self._users
        return [(key, overlay.get(key, user)) for key, user in self._base.users.items()]

    def products_items(self) -> list[tuple[str, Entity]]:
        return list(self._base.products.items())

    def order_for_write(self, order_id: str) -> Entity:
        found = self._orders.get(order_id)
        if found is None:
            found = copy_entity(self._base.orders[order_id])
            self._orders[order_id] = found
        return found

    def user_for_write(self, user_id: str) -> Entity:
        found = self._users.get(user_id)
        if found is None:
            found = copy_entity(self._base.users[user_id])
            self._users[user_id] = found
        return found

    def changed(self) -> dict[tuple[str, str], Entity]:
        changes: dict[tuple[str, str], Entity] = {("orders", k): v for k, v in self._orders.items()}
        changes.update({("users", k): v for k, v in self._users.items()})
        return changes

    def changed_count(self) -> int:
        return len(self._orders) + len(self._users)

    def db_hash(self, known: DbFingerprint | None = None) -> str:
        """The DB's hash; when it is the DB `known` was taken of (the gold end state, most often), that one's
        hash without hashing again."""
        layout = self._base.layout
        replaced = layout.replacements(self.changed())
        if known is not None and known.changes == layout.changes(replaced):
            return known.db_hash
        return layout.hash_of(replaced)

    def fingerprint(self) -> DbFingerprint:
        layout = self._base.layout
        replaced = layout.replacements(self.changed())
        return DbFingerprint(layout.changes(replaced), layout.hash_of(replaced))

    def dump(self) -> dict[str, dict[str, Entity]]:
        """The whole DB as upstream's model_dump() (a fresh deep copy; for debugging and tests)."""
        return {
            "orders": {k: copy_entity(self.order(k)) for k in self._base.orders},
            "products": copy_entity(self._base.products),
            "users": {k: copy_entity(self.user(k)) for k in self._base.users},
        }
