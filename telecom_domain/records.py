"""The provider's records (upstream's agent DB, db.toml): plans, customers, lines, bills and devices.

Fields, their order and their defaults are upstream's (they decide the DB hash and the order of keys in every
tool result). Every collection is a list, searched front to back, as upstream does.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass, field
from typing import Any

from .model import build

# Upstream's default for Customer.created_at is this *date* (never validated into a date-time); no customer in
# db.toml lacks the field, but a dump must print it as upstream would if one did.
DEFAULT_CREATED_AT = datetime.date(2025, 1, 1)


class DeviceType(enum.StrEnum):
    PHONE = "phone"
    ROUTER = "router"
    TABLET = "tablet"
    WATCH = "watch"
    OTHER = "other"


class LineStatus(enum.StrEnum):
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_ACTIVATION = "Pending Activation"
    CLOSED = "Closed"


class BillStatus(enum.StrEnum):
    DRAFT = "Draft"
    ISSUED = "Issued"
    AWAITING_PAYMENT = "Awaiting Payment"
    PAID = "Paid"
    OVERDUE = "Overdue"
    DISPUTED = "Disputed"


class AccountStatus(enum.StrEnum):
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_VERIFICATION = "Pending Verification"
    CLOSED = "Closed"


class PaymentMethodType(enum.StrEnum):
    CREDIT_CARD = "Credit Card"
    DEBIT_CARD = "Debit Card"
    PAYPAL = "PayPal"


@dataclass
class Address:
    street: str
    city: str
    state: str
    zip_code: str


@dataclass
class Plan:
    plan_id: str
    name: str
    data_limit_gb: float
    price_per_month: float
    data_refueling_price_per_gb: float


@dataclass
class Device:
    device_id: str
    device_type: DeviceType
    model: str
    imei: str | None = None
    is_esim_capable: bool = field(kw_only=True)  # required (keyword-only: it follows a defaulted field)
    activated: bool = False
    activation_date: datetime.datetime | None = None
    last_esim_transfer_date: datetime.datetime | None = None


@dataclass
class Line:
    line_id: str
    phone_number: str
    status: LineStatus = LineStatus.PENDING_ACTIVATION
    plan_id: str = field(kw_only=True)  # required (keyword-only: it follows a defaulted field)
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: datetime.date | None = None
    last_plan_change_date: datetime.date | None = None
    last_sim_replacement_date: datetime.date | None = None
    suspension_start_date: datetime.date | None = None


@dataclass
class LineItem:
    description: str
    amount: float
    date: datetime.date
    item_type: str


@dataclass
class Bill:
    bill_id: str
    customer_id: str
    period_start: datetime.date
    period_end: datetime.date
    issue_date: datetime.date
    total_due: float
    due_date: datetime.date
    line_items: list[LineItem] = field(default_factory=list)
    status: BillStatus = BillStatus.DRAFT


@dataclass
class PaymentMethod:
    method_type: PaymentMethodType
    account_number_last_4: str
    expiration_date: str


@dataclass
class Customer:
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    account_status: AccountStatus = AccountStatus.PENDING_VERIFICATION
    payment_methods: list[PaymentMethod] = field(default_factory=list)
    line_ids: list[str] = field(default_factory=list)
    bill_ids: list[str] = field(default_factory=list)
    created_at: datetime.datetime | datetime.date = DEFAULT_CREATED_AT
    last_extension_date: datetime.date | None = None
    goodwill_credit_used_this_year: float = 0.0


@dataclass
class TelecomDB:
    """The whole agent DB, in upstream's field order."""

    plans: list[Plan] = field(default_factory=list)
    customers: list[Customer] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    bills: list[Bill] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)


def parse_db(raw: dict[str, Any]) -> TelecomDB:
    """The agent DB from parsed db.toml, checked against upstream's model."""
    return build(TelecomDB, raw, "db")
