"""The 16 retail tools as OpenAI function schemas, in the order upstream presents them.

Names, parameter names and order, JSON types and required lists equal upstream's (see
conformance/tool_signatures.json); the parameter objects follow upstream's generated shape (a ``title``
in Title Case per property, ``title: "parameters"``, no ``required`` key for a tool without parameters).
The descriptions are this project's own wording of the same facts.
"""

from __future__ import annotations

import copy
from typing import Any

_STR = "string"
_LIST = "array"

_ORDER_ID = "Order id, including its leading '#', e.g. '#W0000000'."
_USER_ID = "User id, e.g. 'sara_doe_496'."
_PAYMENT_ID = (
    "Id of one of the order owner's payment methods, e.g. 'gift_card_0000000' or 'credit_card_0000000'; "
    "the ids are listed in the user's or the order's details."
)
_ADDRESS = {
    "address1": "First address line, e.g. '123 Main St'.",
    "address2": "Second address line, e.g. 'Apt 1', or '' when there is none.",
    "city": "City, e.g. 'San Francisco'.",
    "state": "State, e.g. 'CA'.",
    "country": "Country, e.g. 'USA'.",
    "zip": "Zip code, e.g. '12345'.",
}

# (name, description, [(parameter, type, description), ...])
_TOOLS: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    (
        "calculate",
        "Evaluate an arithmetic expression and return the result rounded to 2 decimal places.",
        [
            (
                "expression",
                _STR,
                "The expression, e.g. '2 + 2'. Only digits, the operators + - * /, parentheses, the decimal "
                "point and spaces are allowed.",
            )
        ],
    ),
    (
        "cancel_pending_order",
        "Cancel an order whose status is 'pending'; processed or delivered orders cannot be cancelled. "
        "Before calling, explain what the cancellation does and get an explicit yes from the user. The order "
        "becomes 'cancelled' and its payments are refunded: a gift card is credited at once, any other "
        "method within 5-7 business days. Returns the order after cancellation.",
        [
            ("order_id", _STR, _ORDER_ID),
            (
                "reason",
                _STR,
                "Why the order is cancelled: exactly 'no longer needed' or 'ordered by mistake'.",
            ),
        ],
    ),
    (
        "exchange_delivered_order_items",
        "Exchange items of a delivered order for other items of the same product. A delivered order can be "
        "returned or exchanged only once, so collect every item to exchange first. Before calling, explain "
        "the exchange and get an explicit yes from the user. Returns the order after the exchange request.",
        [
            ("order_id", _STR, _ORDER_ID),
            (
                "item_ids",
                _LIST,
                "Item ids to exchange, e.g. ['1008292230']; an id may appear more than once when the order "
                "holds several of it.",
            ),
            (
                "new_item_ids",
                _LIST,
                "Replacement item ids, one per entry of item_ids and in the same order; each must be an "
                "available item of the same product as the item it replaces. Duplicates are allowed.",
            ),
            (
                "payment_method_id",
                _STR,
                "Payment method that pays or receives the price difference. " + _PAYMENT_ID,
            ),
        ],
    ),
    (
        "find_user_id_by_name_zip",
        "Look up a user id from first name, last name and zip code. Prefer looking the user up by email; use "
        "this only when the email lookup fails or the user does not remember their email.",
        [
            ("first_name", _STR, "The customer's first name, e.g. 'John'."),
            ("last_name", _STR, "The customer's last name, e.g. 'Doe'."),
            ("zip", _STR, "The customer's zip code, e.g. '12345'."),
        ],
    ),
    (
        "find_user_id_by_email",
        "Look up a user id from an email address.",
        [("email", _STR, "The user's email address, e.g. 'something@example.com'.")],
    ),
    (
        "get_order_details",
        "Return the status and full details of an order.",
        [("order_id", _STR, _ORDER_ID)],
    ),
    (
        "get_product_details",
        "Return a product and the inventory of all its items (variants).",
        [("product_id", _STR, "Product id, e.g. '6086499569'. A product id is not an item id.")],
    ),
    (
        "get_item_details",
        "Return the details of one item (a product variant): options, availability and price.",
        [("item_id", _STR, "Item id, e.g. '6086499569'. An item id is not a product id.")],
    ),
    (
        "get_user_details",
        "Return a user's profile, including payment methods and the ids of their orders.",
        [("user_id", _STR, _USER_ID)],
    ),
    (
        "list_all_product_types",
        "List all product types (the store has 50) with their product ids, as a JSON object mapping each "
        "product name to its id, sorted by name. Each product type has several items with their own ids and "
        "options.",
        [],
    ),
    (
        "modify_pending_order_address",
        "Change the shipping address of a pending order. Before calling, explain the change and get an "
        "explicit yes from the user. Returns the order after the change.",
        [("order_id", _STR, _ORDER_ID), *((name, _STR, text) for name, text in _ADDRESS.items())],
    ),
    (
        "modify_pending_order_items",
        "Replace items of a pending order with other items of the same product. This can be done only once "
        "per order, so collect every item to change first. Before calling, explain the change and get an "
        "explicit yes from the user. Returns the order after the modification.",
        [
            ("order_id", _STR, _ORDER_ID),
            (
                "item_ids",
                _LIST,
                "Item ids to replace, e.g. ['1008292230']; an id may appear more than once when the order "
                "holds several of it.",
            ),
            (
                "new_item_ids",
                _LIST,
                "Replacement item ids, one per entry of item_ids and in the same order; each must be an "
                "available item of the same product, different from the item it replaces. Duplicates are "
                "allowed.",
            ),
            (
                "payment_method_id",
                _STR,
                "Payment method that pays or receives the price difference. " + _PAYMENT_ID,
            ),
        ],
    ),
    (
        "modify_pending_order_payment",
        "Switch a pending order to another payment method of the same user. Before calling, explain the "
        "change and get an explicit yes from the user. Returns the order after the change.",
        [
            ("order_id", _STR, _ORDER_ID),
            ("payment_method_id", _STR, "The new payment method. " + _PAYMENT_ID),
        ],
    ),
    (
        "modify_user_address",
        "Change a user's default address (existing orders keep theirs). Before calling, explain the change "
        "and get an explicit yes from the user. Returns the user after the change.",
        [("user_id", _STR, _USER_ID), *((name, _STR, text) for name, text in _ADDRESS.items())],
    ),
    (
        "return_delivered_order_items",
        "Request the return of items of a delivered order; its status becomes 'return requested' and the "
        "user will get an email explaining how to send the items back. Before calling, explain the return "
        "and get an explicit yes from the user. Returns the order after the request.",
        [
            ("order_id", _STR, _ORDER_ID),
            (
                "item_ids",
                _LIST,
                "Item ids to return, e.g. ['1008292230']; an id may appear more than once when the order "
                "holds several of it.",
            ),
            (
                "payment_method_id",
                _STR,
                "Where the refund goes: the order's original payment method or one of the user's gift cards. "
                + _PAYMENT_ID,
            ),
        ],
    ),
    (
        "transfer_to_human_agents",
        "Hand the conversation over to a human agent, with a summary of the user's issue. Transfer only when "
        "the user explicitly asks for a human, or when the policy and the available tools cannot resolve the "
        "issue.",
        [("summary", _STR, "A short summary of the user's issue.")],
    ),
]


def _title(name: str) -> str:
    # Upstream's pydantic titles: 'order_id' -> 'Order Id', 'address1' -> 'Address1'.
    return " ".join(part.capitalize() for part in name.split("_"))


def _property(kind: str, description: str, name: str) -> dict[str, Any]:
    # Key order as pydantic's model_json_schema() emits it upstream.
    prop: dict[str, Any] = {"description": description}
    if kind == _LIST:
        prop["items"] = {"type": "string"}
    prop["title"] = _title(name)
    prop["type"] = kind
    return prop


def _schema(name: str, description: str, params: list[tuple[str, str, str]]) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "properties": {pname: _property(kind, text, pname) for pname, kind, text in params}
    }
    if params:
        parameters["required"] = [pname for pname, _, _ in params]
    parameters["title"] = "parameters"
    parameters["type"] = "object"
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _TOOLS)
TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _TOOLS)

READ_TOOLS = frozenset(
    {
        "find_user_id_by_name_zip",
        "find_user_id_by_email",
        "get_order_details",
        "get_product_details",
        "get_item_details",
        "get_user_details",
        "list_all_product_types",
    }
)
WRITE_TOOLS = frozenset(
    {
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    }
)
GENERIC_TOOLS = frozenset({"calculate", "transfer_to_human_agents"})


def tool_schemas() -> list[dict[str, Any]]:
    """A fresh deep copy of TOOL_SCHEMAS, safe for callers that mutate what they send."""
    return copy.deepcopy(list(TOOL_SCHEMAS))
