"""The 16 retail tools, reproducing upstream tau2-bench v1.0.1 behaviour over the copy-on-write DB.

Each public method is one tool, with upstream's name and parameter names and order, so that calling it with
``**arguments`` yields Python's own binding errors (``RetailTools.get_order_details() missing 1 required
positional argument: 'order_id'``) exactly as upstream. The bodies follow upstream's check order, error texts
and mutation order, including its known quirks, because the DB hash (and so the reward) depends on them:

* ``modify_pending_order_items`` never rounds its price difference, and gives every modified item the price
  and options of the *last* pair's variant;
* ``cancel_pending_order`` refunds every entry of the payment history, refunds included;
* no tool rolls back a mutation made before it raised.

Values passed in are not validated or coerced (upstream does not either), except where upstream builds a
pydantic model from them (addresses), which is reproduced with a model of the same name so the message
matches.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel

from domain_kit.calculate import calculate
from domain_kit.store import Entity, OverlayDb

CANCEL_REASONS = frozenset({"no longer needed", "ordered by mistake"})


class UserAddress(BaseModel):
    """Same name and field order as upstream's model, so that validation messages and dumps match."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


def _payment(transaction_type: str, amount: Any, payment_method_id: str) -> Entity:
    # Upstream builds an OrderPayment model here: its float field turns an int amount (e.g. abs(0)) into 0.0.
    if isinstance(amount, int) and not isinstance(amount, bool):
        amount = float(amount)
    return {"transaction_type": transaction_type, "amount": amount, "payment_method_id": payment_method_id}


class RetailTools:
    """The agent-facing retail tools bound to one trial's DB."""

    def __init__(self, db: OverlayDb) -> None:
        self.db = db

    # ----------------------------------------------------------------- lookups (read-only results)

    def _get_order(self, order_id: str) -> Entity:
        if not self.db.has("orders", order_id):
            raise ValueError("Order not found")
        return self.db.get("orders", order_id)

    def _get_user(self, user_id: str) -> Entity:
        if not self.db.has("users", user_id):
            raise ValueError("User not found")
        return self.db.get("users", user_id)

    def _get_product(self, product_id: str) -> Entity:
        if not self.db.has("products", product_id):
            raise ValueError("Product not found")
        return self.db.get("products", product_id)

    def _get_item(self, item_id: str) -> Entity:
        for product in self.db.values("products"):
            if item_id in product["variants"]:
                variant: Entity = product["variants"][item_id]
                return variant
        raise ValueError("Item not found")

    def _get_variant(self, product_id: str, variant_id: str) -> Entity:
        product = self._get_product(product_id)
        if variant_id not in product["variants"]:
            raise ValueError("Variant not found")
        variant: Entity = product["variants"][variant_id]
        return variant

    def _get_payment_method(self, user_id: str, payment_method_id: str) -> Entity:
        user = self._get_user(user_id)
        if payment_method_id not in user["payment_methods"]:
            raise ValueError("Payment method not found")
        method: Entity = user["payment_methods"][payment_method_id]
        return method

    def _writable_payment_method(self, user_id: str, payment_method_id: str) -> Entity:
        method: Entity = self.db.for_write("users", user_id)["payment_methods"][payment_method_id]
        return method

    def _credit_gift_card(self, user_id: str, payment_method_id: str, amount: Any) -> None:
        """Add `amount` (negative to charge) to a gift card's balance, rounded to cents as upstream does."""
        method = self._writable_payment_method(user_id, payment_method_id)
        method["balance"] += amount
        method["balance"] = round(method["balance"], 2)

    @staticmethod
    def _check_item_counts(order: Entity, item_ids: list[str], missing: str) -> None:
        """Each id may be named at most as often as the order holds it; `missing` formats the error."""
        all_item_ids = [item["item_id"] for item in order["items"]]
        counts: tuple[Counter[Any], Counter[Any]] | None
        try:  # counted once, not per id: the agent chooses how many ids it names
            counts = Counter(item_ids), Counter(all_item_ids)
        except TypeError:  # unhashable "ids" (the agent's mistake): count by equality, as upstream
            counts = None
        for item_id in item_ids:
            if counts is not None:
                too_many = counts[0][item_id] > counts[1][item_id]
            else:
                too_many = item_ids.count(item_id) > all_item_ids.count(item_id)
            if too_many:
                raise ValueError(missing.format(item_id=item_id))

    @staticmethod
    def _is_gift_card(method: Entity) -> bool:
        return bool(method["source"] == "gift_card")

    @staticmethod
    def _is_pending_order(order: Entity) -> bool:
        return "pending" in order["status"]

    # ----------------------------------------------------------------- the 16 tools, in upstream order

    def calculate(self, expression: str) -> str:
        return calculate(expression)

    def cancel_pending_order(self, order_id: str, reason: str) -> Entity:
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise ValueError("Invalid reason")
        refunds = []
        for payment in order["payment_history"]:
            payment_id = payment["payment_method_id"]
            refunds.append(_payment("refund", payment["amount"], payment_id))
            user = self._get_user(order["user_id"])
            method = self._get_payment_method(user["user_id"], payment_id)
            if self._is_gift_card(method):  # gift-card refunds are immediate
                self._credit_gift_card(user["user_id"], payment_id, payment["amount"])
        order = self.db.for_write("orders", order_id)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    def exchange_delivered_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Entity:
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be exchanged")
        self._check_item_counts(order, item_ids, "Number of {item_id} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match.")
        diff_price: Any = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            item = next((item for item in order["items"] if item["item_id"] == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            variant = self._get_variant(item["product_id"], new_item_id)
            if not variant["available"]:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff_price += variant["price"] - item["price"]
        diff_price = round(diff_price, 2)  # stays the int 0 for empty lists, as upstream stores it
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if self._is_gift_card(method) and method["balance"] < diff_price:
            raise ValueError("Insufficient gift card balance to pay for the price difference")
        order = self.db.for_write("orders", order_id)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = diff_price
        return order

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db.items("users"):
            if (
                user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return user_id
        raise ValueError("User not found")

    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db.items("users"):
            if user["email"].lower() == email.lower():
                return user_id
        raise ValueError("User not found")

    def get_order_details(self, order_id: str) -> Entity:
        return self._get_order(order_id)

    def get_product_details(self, product_id: str) -> Entity:
        return self._get_product(product_id)

    def get_item_details(self, item_id: str) -> Entity:
        return self._get_item(item_id)

    def get_user_details(self, user_id: str) -> Entity:
        return self._get_user(user_id)

    def list_all_product_types(self) -> str:
        names = {product["name"]: product["product_id"] for product in self.db.values("products")}
        return json.dumps(names, sort_keys=True)

    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> Entity:
        order = self._get_order(order_id)
        if not self._is_pending_order(order):
            raise ValueError("Non-pending order cannot be modified")
        address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        ).model_dump()
        order = self.db.for_write("orders", order_id)
        order["address"] = address
        return order

    def modify_pending_order_items(
        self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
    ) -> Entity:
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise ValueError("Non-pending order cannot be modified")
        self._check_item_counts(order, item_ids, "{item_id} not found")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match")
        diff_price: Any = 0  # upstream never rounds this: float noise reaches the payment history
        variant: Entity | None = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            if item_id == new_item_id:
                raise ValueError("The new item id should be different from the old item id")
            item = next((item for item in order["items"] if item["item_id"] == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            variant = self._get_variant(item["product_id"], new_item_id)
            if not variant["available"]:
                raise ValueError(f"New item {new_item_id} not found or available")
            diff_price += variant["price"] - item["price"]
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if self._is_gift_card(method) and method["balance"] < diff_price:
            raise ValueError("Insufficient gift card balance to pay for the new item")
        order = self.db.for_write("orders", order_id)
        order["payment_history"].append(
            _payment("payment" if diff_price > 0 else "refund", abs(diff_price), payment_method_id)
        )
        if self._is_gift_card(method):
            self._credit_gift_card(order["user_id"], payment_method_id, -diff_price)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            item = next((item for item in order["items"] if item["item_id"] == item_id), None)
            if item is None:
                raise ValueError(f"Item {item_id} not found")
            assert variant is not None  # the loop above ran at least once
            # Upstream quirk kept on purpose: every modified item takes the LAST pair's variant price/options.
            item["item_id"] = new_item_id
            item["price"] = variant["price"]
            item["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return order

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> Entity:
        order = self._get_order(order_id)
        if not self._is_pending_order(order):
            raise ValueError("Non-pending order cannot be modified")
        method = self._get_payment_method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise ValueError("There should be exactly one payment for a pending order")
        if history[0]["payment_method_id"] == payment_method_id:
            raise ValueError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if self._is_gift_card(method) and method["balance"] < amount:
            raise ValueError("Insufficient gift card balance to pay for the order")
        order = self.db.for_write("orders", order_id)
        old_method_id = order["payment_history"][0]["payment_method_id"]
        order["payment_history"].extend(
            [_payment("payment", amount, payment_method_id), _payment("refund", amount, old_method_id)]
        )
        if self._is_gift_card(method):
            self._credit_gift_card(order["user_id"], payment_method_id, -amount)
        old_method = self._get_payment_method(order["user_id"], old_method_id)
        if self._is_gift_card(old_method):
            self._credit_gift_card(order["user_id"], old_method_id, amount)
        return order

    def modify_user_address(
        self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> Entity:
        self._get_user(user_id)
        address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        ).model_dump()
        user = self.db.for_write("users", user_id)
        user["address"] = address
        return user

    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> Entity:
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        user = self._get_user(order["user_id"])
        method = self._get_payment_method(user["user_id"], payment_method_id)
        if (
            not self._is_gift_card(method)
            and payment_method_id != order["payment_history"][0]["payment_method_id"]
        ):
            raise ValueError("Payment method should be the original payment method")
        self._check_item_counts(order, item_ids, "Some item not found")
        order = self.db.for_write("orders", order_id)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"
