"""The retail DB in upstream's dumped shape.

Entities are plain dicts over domain_kit's copy-on-write store: ``normalize_db`` brings parsed db.json into
the exact shape of upstream's ``model_dump()`` (keys in declared field order, the seven optional order
fields present as None, float fields as floats), on which every tool output and the DB hash depend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain_kit.store import Entity

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
