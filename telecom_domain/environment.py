"""One trial's world in dual control: the provider's records with the agent's 13 tools, the customer's phone
with the customer's 30 tools, and the sync that carries the provider's decisions to the phone.

``call`` is the way in for both parties and never raises: whatever goes wrong becomes upstream's
``Error: ...`` result, and a write made before the failure stays (upstream does not roll back). Each side
sees only its own tools: the other side's are unknown to it.
"""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Mapping
from dataclasses import is_dataclass
from typing import Any

from domain_kit import Requestor, ToolResult

from .model import db_hash, dump, validated_float
from .phone import PaymentRequest, TelecomUserDB
from .phone_tools import TelecomUserTools
from .provider_tools import TelecomTools
from .records import LineStatus, TelecomDB
from .schemas import AGENT_TOOL_NAMES, USER_TOOL_NAMES

ENV_TYPES = ("assistant", "user")


def render(value: Any) -> str:
    """Upstream's ``to_json_str``: a string as is; a record as the JSON of its dump; a dict or list walked,
    with plain numbers and booleans turned into strings and dates into ISO text (records inside keep their
    numbers), then JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(_plain(value), default=str)


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return dump(value)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, int | float):  # bool included: "True"
        return str(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, datetime.date):  # datetime included
        return value.isoformat()
    raise ValueError(f"Unsupported type: {type(value)}")


class TelecomEnvironment:
    """The two databases of one trial and both parties' tools. ``seed`` names new draft bills (upstream
    draws them at random): a trial, its replay and the gold replay of one task name them alike."""

    def __init__(
        self, db: TelecomDB, user_db: TelecomUserDB, seed: str = "", *, bill_ids: random.Random | None = None
    ) -> None:
        """``bill_ids``: the generator itself, as a snapshot of an environment kept it (else seeded)."""
        self.tools = TelecomTools(db, bill_ids=bill_ids if bill_ids is not None else random.Random(seed))
        self.user_tools = TelecomUserTools(user_db)
        self.sync()  # as upstream's constructor (a no-op until the customer's phone number is known)

    # ------------------------------------------------------------------ the two databases

    @property
    def db(self) -> TelecomDB:
        return self.tools.db

    @property
    def user_db(self) -> TelecomUserDB:
        return self.user_tools.db

    def db_hash(self, known: object | None = None) -> str:
        """Upstream's hash of the provider's records (9 KB: hashed whole, ``known`` is not needed)."""
        return db_hash(self.tools.db)

    def user_db_hash(self) -> str:
        """Upstream's hash of the customer's phone and surroundings."""
        return db_hash(self.user_tools.db)

    def dump(self) -> dict[str, Any]:
        """Both databases as upstream's model dumps (deep copies), e.g. for a trial page's before/after."""
        return {"agent": dump(self.tools.db), "user": dump(self.user_tools.db)}

    # ------------------------------------------------------------------ calls

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult:
        """Run one tool call of ``requestor`` and then the sync, as upstream's ``get_response``; never
        raises."""
        try:
            result = self.make_tool_call(name, arguments, requestor)
            self.sync()
            return ToolResult(render(result), False)
        except Exception as exc:
            return ToolResult(render(f"Error: {exc}"), True)

    def replay(self, name: str, arguments: Mapping[str, Any] | None, requestor: Requestor) -> None:
        """`call` without the text of its result (a replay keeps only what a call changed); never raises."""
        try:
            self.make_tool_call(name, arguments, requestor)
            self.sync()
        except Exception:  # as `call`: a write made before the failure stays
            return

    def make_tool_call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: str = "assistant"
    ) -> Any:
        """Run one tool of ``requestor``'s side without the sync (upstream's ``make_tool_call``: what its
        gold replay uses); raises what the tool raises."""
        if requestor == "user":
            toolkit: Any = self.user_tools
            names = USER_TOOL_NAMES
        elif requestor == "assistant":
            toolkit = self.tools
            names = AGENT_TOOL_NAMES
        else:
            raise ValueError(f"Invalid requestor: {requestor}")
        if name not in names:
            raise ValueError(f"Tool '{name}' not found.")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise TypeError(f"tool arguments must be a JSON object, not {type(arguments).__name__}")
        return getattr(toolkit, name)(**arguments)

    def run_function(self, env_type: str, func_name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Run any public function of one side (a tool, a hidden setup function or an assertion), then the
        sync: upstream's ``run_env_function_call``, used for initialization actions and env assertions.
        Raises what the function raises."""
        if env_type == "user":
            toolkit: Any = self.user_tools
        elif env_type == "assistant":
            toolkit = self.tools
        else:
            raise ValueError(f"Invalid environment type: {env_type}")
        function = getattr(toolkit, func_name, None) if not func_name.startswith("_") else None
        if function is None or not callable(function):
            raise ValueError(f"Function {func_name} not found in {env_type} tools")
        result = function(**(arguments or {}))
        self.sync()
        return result

    def assertion(self, func_name: str, arguments: Mapping[str, Any], env_type: str) -> bool:
        """Run one of upstream's env assertion functions on one side and return its own result (the task's
        assertion holds when it equals ``assert_value``). Raises what it raises, or ValueError when it does
        not return a boolean (upstream's evaluator aborts on either)."""
        result = self.run_function(env_type, func_name, arguments)
        if not isinstance(result, bool):
            raise ValueError(f"Function {func_name} returned {type(result)} instead of bool")
        return result

    # ------------------------------------------------------------------ the sync

    def sync(self) -> None:
        """Carry the provider's records to the phone, as upstream does after every call, step, setup action
        and assertion: the line's status and roaming flag, whether its data is used up, a paid bill, a new
        payment request. Never searches the network: a resumed line stays without service until the phone
        searches (a reboot, a toggle)."""
        surroundings = self.user_tools.db.surroundings
        phone_number = surroundings.phone_number
        if phone_number is None:
            return
        tools = self.tools
        line = tools._get_line_by_phone(phone_number)
        surroundings.line_active = line.status == LineStatus.ACTIVE
        surroundings.roaming_allowed = bool(line.roaming_enabled)
        plan = tools._get_plan_by_id(line.plan_id)
        surroundings.mobile_data_usage_exceeded = bool(
            line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb
        )
        request = surroundings.payment_request
        if request is not None and request.paid:
            tools._set_bill_to_paid(request.bill_id)
            surroundings.payment_request = None
        if surroundings.payment_request is None:
            awaiting = tools._get_bills_awaiting_payment(tools.get_customer_by_phone(phone_number))
            if awaiting:
                surroundings.payment_request = PaymentRequest(
                    awaiting[0].bill_id, validated_float(awaiting[0].total_due)
                )
