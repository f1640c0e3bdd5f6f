"""Every tool's success and error paths, with the strings of the semantics doc (section 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain_kit.store import BaseDb, copy_entity
from retail_domain import TOOL_NAMES, RetailData, RetailEnvironment
from retail_domain.models import normalize_db

from .conftest import INITIAL_HASH

YUSUF = "yusuf_rossi_9620"
YUSUF_CARD = "credit_card_9513926"
DELIVERED = "#W2378156"  # Yusuf's; items below
KEYBOARD, THERMOSTAT = "1151293680", "4983901480"
KEYBOARD_CLICKY, THERMOSTAT_GOOGLE = "7706410293", "7747408585"  # task 0's gold exchange targets
ETHAN = "ethan_lopez_6291"
GIFT_PAID_PENDING = "#W6779827"  # pending, paid 4079.45 by gift_card_7219486 (balance 49.0)
ETHAN_GIFT, ETHAN_CARD = "gift_card_7219486", "credit_card_9789590"
ADDRESS = {
    "address1": "1 Main St",
    "address2": "",
    "city": "Springfield",
    "state": "IL",
    "country": "USA",
    "zip": "62701",
}


def ok(env: RetailEnvironment, name: str, **arguments: Any) -> Any:
    result = env.call(name, arguments)
    assert not result.error, result.content
    try:
        return json.loads(result.content)
    except json.JSONDecodeError:
        return result.content


def err(env: RetailEnvironment, name: str, **arguments: Any) -> str:
    result = env.call(name, arguments)
    assert result.error, result.content
    assert result.content.startswith("Error: ")
    return result.content


def find_order(data: RetailData, status: str, **having: Any) -> str:
    for order_id, order in data.base.tables["orders"].items():
        if order["status"] == status and all(order.get(k) == v for k, v in having.items()):
            return order_id
    raise AssertionError(status)


# --------------------------------------------------------------------------- dispatch and serialization


def test_tool_list_is_upstreams() -> None:
    assert TOOL_NAMES == (
        "calculate",
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "find_user_id_by_name_zip",
        "find_user_id_by_email",
        "get_order_details",
        "get_product_details",
        "get_item_details",
        "get_user_details",
        "list_all_product_types",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "transfer_to_human_agents",
    )


def test_unknown_tool_and_python_binding_errors(env: RetailEnvironment) -> None:
    assert err(env, "think", thought="x") == "Error: Tool 'think' not found."
    assert err(env, "_get_order", order_id=DELIVERED) == "Error: Tool '_get_order' not found."
    assert err(env, "get_order_details") == (
        "Error: RetailTools.get_order_details() missing 1 required positional argument: 'order_id'"
    )
    assert err(env, "get_order_details", order_id=DELIVERED, foo=1) == (
        "Error: RetailTools.get_order_details() got an unexpected keyword argument 'foo'"
    )
    assert err(env, "find_user_id_by_name_zip", first_name="Yusuf") == (
        "Error: RetailTools.find_user_id_by_name_zip() missing 2 required positional arguments: "
        "'last_name' and 'zip'"
    )
    # Badly typed values are not coerced; whatever Python raises is the message.
    assert err(env, "get_order_details", order_id=["#W2378156"]) == "Error: unhashable type: 'list'"


def test_non_mapping_arguments_are_an_error_not_an_exception(env: RetailEnvironment) -> None:
    result = env.call("get_order_details", ["#W2378156"])  # type: ignore[arg-type]
    assert result.error and result.content.startswith("Error: ")


def test_model_dumps_use_python_json_defaults_and_keep_nulls(
    env: RetailEnvironment, data: RetailData
) -> None:
    content = env.call("get_order_details", {"order_id": DELIVERED}).content
    assert content == json.dumps(data.base.tables["orders"][DELIVERED])
    assert content.startswith(
        '{"order_id": "#W2378156", "user_id": "yusuf_rossi_9620", "address": {"address1"'
    )
    assert content.endswith(
        '"cancel_reason": null, "exchange_items": null, "exchange_new_items": null, '
        '"exchange_payment_method_id": null, "exchange_price_difference": null, "return_items": null, '
        '"return_payment_method_id": null}'
    )
    assert '"price": 272.33' in content  # Python float repr


# --------------------------------------------------------------------------- read tools


def test_find_user_by_name_zip(env: RetailEnvironment) -> None:
    assert (
        env.call(
            "find_user_id_by_name_zip", {"first_name": "yUSUF", "last_name": "ROSSI", "zip": "19122"}
        ).content
        == YUSUF
    )
    assert err(env, "find_user_id_by_name_zip", first_name="Yusuf", last_name="Rossi", zip="19123") == (
        "Error: User not found"
    )
    # no trimming
    assert err(env, "find_user_id_by_name_zip", first_name="Yusuf ", last_name="Rossi", zip="19122") == (
        "Error: User not found"
    )


def test_find_user_by_email(env: RetailEnvironment) -> None:
    assert env.call("find_user_id_by_email", {"email": "YUSUF.ROSSI7301@example.com"}).content == YUSUF
    assert err(env, "find_user_id_by_email", email="nobody@example.com") == "Error: User not found"


def test_get_details_tools(env: RetailEnvironment) -> None:
    assert ok(env, "get_order_details", order_id=DELIVERED)["status"] == "delivered"
    assert err(env, "get_order_details", order_id="W2378156") == "Error: Order not found"
    product = ok(env, "get_product_details", product_id="1656367028")
    assert list(product) == ["name", "product_id", "variants"] and product["name"] == "Mechanical Keyboard"
    assert err(env, "get_product_details", product_id=KEYBOARD) == "Error: Product not found"
    item = ok(env, "get_item_details", item_id=KEYBOARD)
    assert list(item) == ["item_id", "options", "available", "price"]
    assert err(env, "get_item_details", item_id="1656367028") == "Error: Item not found"
    user = ok(env, "get_user_details", user_id=YUSUF)
    assert list(user) == ["user_id", "name", "address", "email", "payment_methods", "orders"]
    assert list(user["payment_methods"][YUSUF_CARD]) == ["source", "id", "brand", "last_four"]
    assert err(env, "get_user_details", user_id="Yusuf_Rossi_9620") == "Error: User not found"


def test_gift_card_dump_order(env: RetailEnvironment) -> None:
    user = ok(env, "get_user_details", user_id=ETHAN)
    assert list(user["payment_methods"][ETHAN_GIFT]) == ["source", "id", "balance"]


def test_list_all_product_types(env: RetailEnvironment) -> None:
    content = env.call("list_all_product_types", {}).content
    names = json.loads(content)
    assert len(names) == 50 and list(names) == sorted(names)
    assert content == json.dumps(names, sort_keys=True)


def test_calculate(env: RetailEnvironment) -> None:
    assert env.call("calculate", {"expression": "2 + 2"}).content == "4.0"
    assert env.call("calculate", {"expression": "2.675"}).content == "2.67"  # binary value, half-even
    assert env.call("calculate", {"expression": "(162.94 * 2) / 2"}).content == "162.94"
    assert env.call("calculate", {"expression": "7 // 2 + 2 ** 3"}).content == "11.0"
    assert err(env, "calculate", expression="2 % 3") == "Error: Invalid characters in expression"
    assert err(env, "calculate", expression="abs(1)") == "Error: Invalid characters in expression"
    assert err(env, "calculate", expression="1 / 0") == "Error: division by zero"
    assert err(env, "calculate", expression="") == "Error: invalid syntax (<string>, line 0)"
    assert err(env, "calculate", expression="1 +") == "Error: invalid syntax (<string>, line 1)"
    assert err(env, "calculate", expression="(1)(2)") == "Error: 'int' object is not callable"


def test_calculate_refuses_huge_integers_quickly(env: RetailEnvironment) -> None:
    # Upstream would hang on this; the guard raises the error its float() conversion would give.
    assert err(env, "calculate", expression="9**9**9**9") == "Error: int too large to convert to float"
    assert err(env, "calculate", expression="10**400") == "Error: int too large to convert to float"
    assert env.call("calculate", {"expression": "2**10 * 3"}).content == "3072.0"
    assert env.call("calculate", {"expression": "10**300 / 10**299"}).content == "10.0"


def test_transfer(env: RetailEnvironment) -> None:
    assert env.call("transfer_to_human_agents", {"summary": "help"}).content == "Transfer successful"
    assert env.db_hash() == INITIAL_HASH


# --------------------------------------------------------------------------- cancel


def test_cancel_gift_card_order_refunds_at_once(env: RetailEnvironment) -> None:
    order = ok(env, "cancel_pending_order", order_id=GIFT_PAID_PENDING, reason="no longer needed")
    assert order["status"] == "cancelled" and order["cancel_reason"] == "no longer needed"
    assert order["payment_history"][1] == {
        "transaction_type": "refund",
        "amount": 4079.45,
        "payment_method_id": ETHAN_GIFT,
    }
    assert ok(env, "get_user_details", user_id=ETHAN)["payment_methods"][ETHAN_GIFT]["balance"] == 4128.45


def test_cancel_errors_in_check_order(env: RetailEnvironment, data: RetailData) -> None:
    assert err(env, "cancel_pending_order", order_id="#W0000000", reason="x") == "Error: Order not found"
    assert err(env, "cancel_pending_order", order_id=DELIVERED, reason="x") == (
        "Error: Non-pending order cannot be cancelled"
    )
    assert err(env, "cancel_pending_order", order_id=GIFT_PAID_PENDING, reason="changed my mind") == (
        "Error: Invalid reason"
    )
    assert env.db_hash() == INITIAL_HASH


def test_cancel_after_a_payment_change_refunds_the_old_method_twice(env: RetailEnvironment) -> None:
    ok(env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id=ETHAN_CARD)
    assert ok(env, "get_user_details", user_id=ETHAN)["payment_methods"][ETHAN_GIFT]["balance"] == 4128.45
    order = ok(env, "cancel_pending_order", order_id=GIFT_PAID_PENDING, reason="ordered by mistake")
    assert [(p["transaction_type"], p["payment_method_id"]) for p in order["payment_history"]] == [
        ("payment", ETHAN_GIFT),
        ("payment", ETHAN_CARD),
        ("refund", ETHAN_GIFT),
        ("refund", ETHAN_GIFT),
        ("refund", ETHAN_CARD),
        ("refund", ETHAN_GIFT),
    ]
    assert ok(env, "get_user_details", user_id=ETHAN)["payment_methods"][ETHAN_GIFT]["balance"] == 12287.35


def test_modified_items_order_can_no_longer_be_cancelled(env: RetailEnvironment, data: RetailData) -> None:
    order_id = "#W9911714"  # task 20's order
    ok(
        env,
        "modify_pending_order_items",
        order_id=order_id,
        item_ids=["2366567022"],
        new_item_ids=["4579334072"],
        payment_method_id="gift_card_4332117",
    )
    assert err(env, "cancel_pending_order", order_id=order_id, reason="no longer needed") == (
        "Error: Non-pending order cannot be cancelled"
    )
    assert err(
        env, "modify_pending_order_payment", order_id=order_id, payment_method_id="paypal_3798357"
    ) == ("Error: There should be exactly one payment for a pending order")
    # address changes are still allowed ('pending' is contained in 'pending (item modified)')
    assert ok(env, "modify_pending_order_address", order_id=order_id, **ADDRESS)["address"]["zip"] == "62701"


# --------------------------------------------------------------------------- exchange


def test_exchange_success(env: RetailEnvironment) -> None:
    order = ok(
        env,
        "exchange_delivered_order_items",
        order_id=DELIVERED,
        item_ids=[THERMOSTAT, KEYBOARD],
        new_item_ids=[THERMOSTAT_GOOGLE, KEYBOARD_CLICKY],
        payment_method_id=YUSUF_CARD,
    )
    assert order["status"] == "exchange requested"
    assert order["exchange_items"] == sorted([THERMOSTAT, KEYBOARD])
    assert order["exchange_new_items"] == sorted([THERMOSTAT_GOOGLE, KEYBOARD_CLICKY])
    assert order["exchange_payment_method_id"] == YUSUF_CARD
    assert isinstance(order["exchange_price_difference"], float)
    # no money moves on an exchange request
    assert len(order["payment_history"]) == 1
    assert (
        err(
            env,
            "exchange_delivered_order_items",
            order_id=DELIVERED,
            item_ids=[KEYBOARD],
            new_item_ids=[KEYBOARD_CLICKY],
            payment_method_id=YUSUF_CARD,
        )
        == "Error: Non-delivered order cannot be exchanged"
    )


def test_exchange_with_empty_lists_stores_the_int_zero(env: RetailEnvironment) -> None:
    content = env.call(
        "exchange_delivered_order_items",
        {"order_id": DELIVERED, "item_ids": [], "new_item_ids": [], "payment_method_id": YUSUF_CARD},
    ).content
    assert '"exchange_price_difference": 0,' in content  # upstream: round(0, 2) is the int 0


def test_exchange_for_the_same_item_is_allowed(env: RetailEnvironment) -> None:
    order = ok(
        env,
        "exchange_delivered_order_items",
        order_id=DELIVERED,
        item_ids=[KEYBOARD],
        new_item_ids=[KEYBOARD],
        payment_method_id=YUSUF_CARD,
    )
    assert order["exchange_price_difference"] == 0.0


@pytest.mark.parametrize(
    ("item_ids", "new_item_ids", "payment", "message"),
    [
        (
            [KEYBOARD, KEYBOARD],
            [KEYBOARD_CLICKY, KEYBOARD_CLICKY],
            YUSUF_CARD,
            f"Number of {KEYBOARD} not found.",
        ),
        ([KEYBOARD], [], YUSUF_CARD, "The number of items to be exchanged should match."),
        ([KEYBOARD], [THERMOSTAT_GOOGLE], YUSUF_CARD, "Variant not found"),
        ([KEYBOARD], ["4579334072"], YUSUF_CARD, "Variant not found"),  # an item of another product
        ([KEYBOARD], [KEYBOARD_CLICKY], "credit_card_0000000", "Payment method not found"),
        ([KEYBOARD], [KEYBOARD_CLICKY], ETHAN_GIFT, "Payment method not found"),  # another user's method
    ],
)
def test_exchange_errors(
    env: RetailEnvironment, item_ids: list[str], new_item_ids: list[str], payment: str, message: str
) -> None:
    content = err(
        env,
        "exchange_delivered_order_items",
        order_id=DELIVERED,
        item_ids=item_ids,
        new_item_ids=new_item_ids,
        payment_method_id=payment,
    )
    assert content == "Error: " + message
    assert env.db_hash() == INITIAL_HASH


def test_exchange_unavailable_new_item(env: RetailEnvironment, data: RetailData) -> None:
    product = data.base.tables["products"]["1656367028"]
    unavailable = next(i for i, v in product["variants"].items() if not v["available"])
    assert (
        err(
            env,
            "exchange_delivered_order_items",
            order_id=DELIVERED,
            item_ids=[KEYBOARD],
            new_item_ids=[unavailable],
            payment_method_id=YUSUF_CARD,
        )
        == f"Error: New item {unavailable} not found or available"
    )


def test_exchange_insufficient_gift_card(env: RetailEnvironment, data: RetailData) -> None:
    # Task 105's gold exchange fails exactly this way.
    assert data.gold("105").failed_calls[-1][2] == (
        "Error: Insufficient gift card balance to pay for the price difference"
    )


# --------------------------------------------------------------------------- modify items


def test_modify_items_last_variant_quirk_and_unrounded_difference(
    env: RetailEnvironment, data: RetailData
) -> None:
    order = ok(
        env,
        "modify_pending_order_items",
        order_id="#W9911714",
        item_ids=["2366567022", "1340995114", "9791469541", "1763705424"],
        new_item_ids=["4579334072", "1151293680", "4107812777", "2882812427"],
        payment_method_id="gift_card_4332117",
    )
    assert order["status"] == "pending (item modified)"
    assert [item["price"] for item in order["items"]] == [261.11] * 4  # the last pair's variant, every item
    assert {json.dumps(item["options"]) for item in order["items"]} == {
        json.dumps(data.base.tables["products"]["5149340237"]["variants"]["2882812427"]["options"])
    }
    assert order["payment_history"][-1] == {
        "transaction_type": "payment",
        "amount": 71.96000000000001,
        "payment_method_id": "gift_card_4332117",
    }
    assert (
        err(
            env,
            "modify_pending_order_items",
            order_id="#W9911714",
            item_ids=["4579334072"],
            new_item_ids=["2366567022"],
            payment_method_id="gift_card_4332117",
        )
        == "Error: Non-pending order cannot be modified"
    )


def test_modify_items_empty_lists_record_a_zero_refund(env: RetailEnvironment) -> None:
    order = ok(
        env,
        "modify_pending_order_items",
        order_id="#W9911714",
        item_ids=[],
        new_item_ids=[],
        payment_method_id="paypal_3798357",
    )
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 0.0,
        "payment_method_id": "paypal_3798357",
    }
    assert '"amount": 0.0' in env.call("get_order_details", {"order_id": "#W9911714"}).content


@pytest.mark.parametrize(
    ("item_ids", "new_item_ids", "payment", "message"),
    [
        (
            ["2366567022", "2366567022"],
            ["4579334072", "4579334072"],
            "paypal_3798357",
            "2366567022 not found",
        ),
        (["2366567022"], [], "paypal_3798357", "The number of items to be exchanged should match"),
        (
            ["2366567022"],
            ["2366567022"],
            "paypal_3798357",
            "The new item id should be different from the old item id",
        ),
        (["2366567022"], ["1151293680"], "paypal_3798357", "Variant not found"),
        (["2366567022"], ["4579334072"], "paypal_0000000", "Payment method not found"),
    ],
)
def test_modify_items_errors(
    env: RetailEnvironment, item_ids: list[str], new_item_ids: list[str], payment: str, message: str
) -> None:
    content = err(
        env,
        "modify_pending_order_items",
        order_id="#W9911714",
        item_ids=item_ids,
        new_item_ids=new_item_ids,
        payment_method_id=payment,
    )
    assert content == "Error: " + message
    assert env.db_hash() == INITIAL_HASH


def test_modify_items_insufficient_gift_card(env: RetailEnvironment) -> None:
    # Ethan's gift card holds 49.0: find an item of his pending order with an upgrade costing more than that.
    order = env.entity("orders", GIFT_PAID_PENDING)
    for item in order["items"]:
        variants = env.entity("products", item["product_id"])["variants"].values()
        pricier = [v for v in variants if v["available"] and v["price"] - item["price"] > 49.0]
        if pricier:
            break
    assert pricier
    assert (
        err(
            env,
            "modify_pending_order_items",
            order_id=GIFT_PAID_PENDING,
            item_ids=[item["item_id"]],
            new_item_ids=[pricier[0]["item_id"]],
            payment_method_id=ETHAN_GIFT,
        )
        == "Error: Insufficient gift card balance to pay for the new item"
    )


# --------------------------------------------------------------------------- modify payment / address


def test_modify_payment(env: RetailEnvironment) -> None:
    assert err(
        env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id=ETHAN_GIFT
    ) == ("Error: The new payment method should be different from the current one")
    assert err(env, "modify_pending_order_payment", order_id=DELIVERED, payment_method_id=YUSUF_CARD) == (
        "Error: Non-pending order cannot be modified"
    )
    assert err(
        env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id="paypal_1"
    ) == ("Error: Payment method not found")
    order = ok(env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id=ETHAN_CARD)
    assert order["status"] == "pending"
    assert order["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": ETHAN_CARD},
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": ETHAN_GIFT},
    ]
    # a second change fails: the history no longer holds exactly one payment
    assert err(
        env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id=ETHAN_GIFT
    ) == ("Error: There should be exactly one payment for a pending order")


def test_modify_payment_to_a_poor_gift_card(env: RetailEnvironment, data: RetailData) -> None:
    for order_id, order in data.base.tables["orders"].items():
        if order["status"] != "pending" or order["payment_history"][0]["payment_method_id"].startswith(
            "gift"
        ):
            continue
        methods = data.base.tables["users"][order["user_id"]]["payment_methods"]
        poor = [
            m
            for m in methods.values()
            if m["source"] == "gift_card" and m["balance"] < order["payment_history"][0]["amount"]
        ]
        if poor:
            assert err(
                env, "modify_pending_order_payment", order_id=order_id, payment_method_id=poor[0]["id"]
            ) == ("Error: Insufficient gift card balance to pay for the order")
            return
    raise AssertionError("no such order in the data")


def test_modify_order_address(env: RetailEnvironment) -> None:
    order = ok(env, "modify_pending_order_address", order_id=GIFT_PAID_PENDING, **ADDRESS)
    # declared field order (country before state), exactly the strings given
    assert list(order["address"].items()) == [
        ("address1", "1 Main St"),
        ("address2", ""),
        ("city", "Springfield"),
        ("country", "USA"),
        ("state", "IL"),
        ("zip", "62701"),
    ]
    assert err(env, "modify_pending_order_address", order_id=DELIVERED, **ADDRESS) == (
        "Error: Non-pending order cannot be modified"
    )
    content = err(
        env, "modify_pending_order_address", order_id=GIFT_PAID_PENDING, **{**ADDRESS, "zip": 62701}
    )
    assert content.startswith(
        "Error: 1 validation error for UserAddress\nzip\n  Input should be a valid string "
        "[type=string_type, input_value=62701, input_type=int]"
    )


def test_modify_user_address(env: RetailEnvironment) -> None:
    user = ok(env, "modify_user_address", user_id=YUSUF, **ADDRESS)
    assert user["address"]["city"] == "Springfield"
    # orders keep their address
    assert ok(env, "get_order_details", order_id=DELIVERED)["address"]["city"] == "Philadelphia"
    # the zip lookup now sees the new address
    assert (
        env.call(
            "find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "62701"}
        ).content
        == YUSUF
    )
    assert err(env, "modify_user_address", user_id="nobody", **ADDRESS) == "Error: User not found"


# --------------------------------------------------------------------------- return


def test_return(env: RetailEnvironment) -> None:
    assert err(
        env,
        "return_delivered_order_items",
        order_id=GIFT_PAID_PENDING,
        item_ids=[],
        payment_method_id=ETHAN_GIFT,
    ) == ("Error: Non-delivered order cannot be returned")
    assert err(
        env,
        "return_delivered_order_items",
        order_id=DELIVERED,
        item_ids=[KEYBOARD],
        payment_method_id="gift_card_1",
    ) == ("Error: Payment method not found")
    assert (
        err(
            env,
            "return_delivered_order_items",
            order_id=DELIVERED,
            item_ids=[KEYBOARD, KEYBOARD],
            payment_method_id=YUSUF_CARD,
        )
        == "Error: Some item not found"
    )
    order = ok(
        env,
        "return_delivered_order_items",
        order_id=DELIVERED,
        item_ids=[THERMOSTAT, KEYBOARD],
        payment_method_id=YUSUF_CARD,
    )
    assert order["status"] == "return requested"
    assert order["return_items"] == [KEYBOARD, THERMOSTAT]
    assert order["return_payment_method_id"] == YUSUF_CARD
    assert len(order["payment_history"]) == 1  # no money moves


def test_return_to_a_non_original_method(env: RetailEnvironment, data: RetailData) -> None:
    for order_id, order in data.base.tables["orders"].items():
        if order["status"] != "delivered":
            continue
        original = order["payment_history"][0]["payment_method_id"]
        methods = data.base.tables["users"][order["user_id"]]["payment_methods"]
        others = [m for m in methods.values() if m["id"] != original and m["source"] != "gift_card"]
        gifts = [m for m in methods.values() if m["id"] != original and m["source"] == "gift_card"]
        if others and gifts:
            assert err(
                env,
                "return_delivered_order_items",
                order_id=order_id,
                item_ids=[],
                payment_method_id=others[0]["id"],
            ) == ("Error: Payment method should be the original payment method")
            # any gift card of the user is allowed
            assert ok(
                env,
                "return_delivered_order_items",
                order_id=order_id,
                item_ids=[],
                payment_method_id=gifts[0]["id"],
            )
            return
    raise AssertionError("no such order in the data")


# --------------------------------------------------------------------------- no rollback


def test_a_failing_tool_keeps_its_earlier_mutation(data: RetailData) -> None:
    """Upstream never rolls back: a write that raises midway keeps what it changed. Consistent data never
    triggers this, so the test builds a base whose order refers to a payment method the user lacks: the
    payment change appends to the history, then fails on the old-method lookup."""
    tables = copy_entity(
        {
            "orders": data.base.tables["orders"],
            "products": data.base.tables["products"],
            "users": data.base.tables["users"],
        }
    )
    tables["orders"][GIFT_PAID_PENDING]["payment_history"][0]["payment_method_id"] = "gift_card_gone"
    env = RetailEnvironment(BaseDb(normalize_db(tables)))
    content = err(
        env, "modify_pending_order_payment", order_id=GIFT_PAID_PENDING, payment_method_id=ETHAN_CARD
    )
    assert content == "Error: Payment method not found"
    assert len(env.entity("orders", GIFT_PAID_PENDING)["payment_history"]) == 3
