"""The telecom tools as OpenAI function schemas, in the order upstream hands them to the models: the agent's
13 over the provider's records, and the customer's 30 over the phone.

Names, parameter names and order, JSON types, defaults, enums and required lists equal upstream's (see
conformance/telecom/tool_signatures.json); the parameter objects follow upstream's generated shape (a
``title`` in Title Case per property, ``title: "parameters"``, ``$defs`` for the two typed parameters, no
``required`` key for a tool without parameters). The descriptions are this project's own words.
"""

from __future__ import annotations

import copy
from typing import Any

_STR = {"type": "string"}
_CUSTOMER_ID = "The customer's id, e.g. 'C1001'."
_LINE_ID = "The id of one of the customer's lines, e.g. 'L1001'."

# (name, description, [(parameter, JSON schema of its type, description or None), ...])
Parameter = tuple[str, dict[str, Any], str | None]
_AGENT_TOOLS: list[tuple[str, str, list[Parameter]]] = [
    (
        "get_customer_by_phone",
        "Find the customer who has this phone number, either as their contact number or as one of their "
        "lines. Returns the customer's record.",
        [("phone_number", _STR, "The phone number, e.g. '555-123-2002'.")],
    ),
    (
        "get_customer_by_id",
        "Get a customer's record by their customer id.",
        [("customer_id", _STR, _CUSTOMER_ID)],
    ),
    (
        "get_customer_by_name",
        "Find customers by full name (any letter case) and date of birth; both must match. Returns a list, "
        "empty when nobody matches.",
        [
            ("full_name", _STR, "The customer's full name, e.g. 'Jane Doe'."),
            ("dob", _STR, "The customer's date of birth as YYYY-MM-DD."),
        ],
    ),
    (
        "get_details_by_id",
        "Get the record behind an id: a line ('L...'), device ('D...'), bill ('B...'), customer ('C...') or "
        "plan ('P...').",
        [("id", _STR, "The id, e.g. 'L1001', 'D1001', 'B1001', 'C1001' or 'P1001'.")],
    ),
    (
        "suspend_line",
        "Suspend one of the customer's lines; only an active line can be suspended. A holding fee of "
        "$5/month applies. Returns a message and the line after the change.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, "The id of the line to suspend."),
            ("reason", _STR, "Why the line is suspended."),
        ],
    ),
    (
        "resume_line",
        "Reactivate one of the customer's lines that is suspended or pending activation. Returns a message "
        "and the line after the change.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, "The id of the line to resume."),
        ],
    ),
    (
        "get_bills_for_customer",
        "List the customer's bills, the most recently issued first.",
        [
            ("customer_id", _STR, _CUSTOMER_ID),
            ("limit", {"default": 12, "type": "integer"}, "How many bills to return at most."),
        ],
    ),
    (
        "send_payment_request",
        "Ask the customer to pay one of their bills: the bill becomes 'Awaiting Payment' and the request "
        "appears on the customer's phone. Fails while another of the customer's bills awaits payment. It "
        "does not look at the bill's status, so check the bill first.",
        [
            ("customer_id", _STR, "The id of the customer who owns the bill."),
            ("bill_id", _STR, "The id of the bill to be paid."),
        ],
    ),
    (
        "get_data_usage",
        "Show a line's data use in the current billing cycle: data used, the plan's data limit, data added "
        "by refuelling, and the cycle's end date.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, _LINE_ID),
        ],
    ),
    (
        "enable_roaming",
        "Turn on international roaming for one of the customer's lines.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, _LINE_ID),
        ],
    ),
    (
        "disable_roaming",
        "Turn off international roaming for one of the customer's lines.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, _LINE_ID),
        ],
    ),
    (
        "transfer_to_human_agents",
        "Hand the conversation over to a human agent, with a summary of the customer's issue. Transfer only "
        "when the customer explicitly asks for a human, or when the policy and your tools cannot resolve the "
        "issue.",
        [("summary", _STR, "A short summary of the customer's issue.")],
    ),
    (
        "refuel_data",
        "Add data to one of the customer's lines for the current cycle. The charge (the amount times the "
        "plan's refuelling price per GB) goes on the customer's next bill.",
        [
            ("customer_id", _STR, "The id of the customer who owns the line."),
            ("line_id", _STR, _LINE_ID),
            ("gb_amount", {"type": "number"}, "How many gigabytes to add."),
        ],
    ),
]

_NETWORK_MODES = {
    "enum": ["4g_5g_preferred", "4g_only", "3g_only", "2g_only"],
    "title": "NetworkModePreference",
    "type": "string",
}


def _nullable(kind: str, default: Any, description: str, title: str) -> dict[str, Any]:
    return {
        "anyOf": [{"type": kind}, {"type": "null"}],
        "default": default,
        "description": description,
        "title": title,
    }


_APN_DEFS = {
    "APNNames": {"enum": ["internet", "broken"], "title": "APNNames", "type": "string"},
    "APNSettings": {
        "additionalProperties": False,
        "description": "The phone's access point (APN) configuration for mobile data and picture messages.",
        "properties": {
            "apn_name": {
                "$ref": "#/$defs/APNNames",
                "default": "internet",
                "description": "Which access point the phone uses for data.",
            },
            "reset_at_reboot": {
                "default": False,
                "description": "Whether the settings go back to the defaults at the next restart.",
                "title": "Reset At Reboot",
                "type": "boolean",
            },
            "mms_apn": _nullable("string", "mms", "The access point used for picture messages.", "Mms Apn"),
            "mmsc_url": _nullable(
                "string",
                "http://mms.carrier.com/mms/wapenc",
                "Address of the picture-message (MMS) centre; picture messages need it.",
                "Mmsc Url",
            ),
            "mms_proxy": _nullable(
                "string", None, "Proxy for picture messages, if the network needs one.", "Mms Proxy"
            ),
            "mms_port": _nullable("integer", None, "Port of that proxy, if any.", "Mms Port"),
        },
        "title": "APNSettings",
        "type": "object",
    },
}

_USER_TOOLS: list[tuple[str, str, list[Parameter]]] = [
    (
        "check_status_bar",
        "Look at the icons at the top of your phone's screen: signal bars, network type, mobile data, data "
        "saver, Wi-Fi, VPN and battery.",
        [],
    ),
    (
        "check_network_status",
        "Open the phone's network status: airplane mode, SIM, cellular connection, signal and network type, "
        "whether mobile data and data roaming are on, and Wi-Fi.",
        [],
    ),
    ("check_network_mode_preference", "See which network type your phone prefers (e.g. 4G/5G, 3G only).", []),
    (
        "set_network_mode_preference",
        "Choose which network type your phone prefers. Faster networks (4G/5G) give faster data.",
        [
            (
                "mode",
                {"anyOf": [{"$ref": "#/$defs/NetworkModePreference"}, {"type": "string"}]},
                "The preferred network type: '4g_5g_preferred', '4g_only', '3g_only' or '2g_only'.",
            )
        ],
    ),
    ("run_speed_test", "Measure your mobile internet download speed and what it is good enough for.", []),
    (
        "toggle_airplane_mode",
        "Switch airplane mode on or off. While it is on, the phone has no cellular service and no Wi-Fi.",
        [],
    ),
    (
        "check_sim_status",
        "See whether your SIM card works, is missing, or is locked by a PIN or PUK code.",
        [],
    ),
    (
        "reseat_sim_card",
        "Take the SIM card out and put it back in, which can fix a SIM that is not detected.",
        [],
    ),
    ("toggle_data", "Switch mobile data on or off.", []),
    (
        "toggle_roaming",
        "Switch data roaming on or off. With it off, the phone uses no mobile data outside your home "
        "network.",
        [],
    ),
    ("check_data_restriction_status", "See whether Data Saver mode is limiting your data.", []),
    (
        "toggle_data_saver_mode",
        "Switch Data Saver mode on or off; while on, it slows data down to save it.",
        [],
    ),
    (
        "check_apn_settings",
        "Look at your phone's APN settings (the access point for mobile data and the picture-message "
        "address).",
        [],
    ),
    (
        "set_apn_settings",
        "Replace your phone's APN settings.",
        [
            (
                "apn_settings",
                {
                    "anyOf": [
                        {"$ref": "#/$defs/APNSettings"},
                        {"additionalProperties": True, "type": "object"},
                    ]
                },
                "The new settings; fields left out take their default values.",
            )
        ],
    ),
    (
        "reset_apn_settings",
        "Reset your APN settings to the defaults; this takes effect when the phone restarts.",
        [],
    ),
    (
        "check_wifi_status",
        "See whether Wi-Fi is on, which network it is connected to and how strong it is.",
        [],
    ),
    ("toggle_wifi", "Switch Wi-Fi on or off.", []),
    ("check_wifi_calling_status", "See whether Wi-Fi Calling is on.", []),
    (
        "toggle_wifi_calling",
        "Switch Wi-Fi Calling on or off (calls over Wi-Fi instead of the cellular network).",
        [],
    ),
    ("check_vpn_status", "See whether a VPN is on and connected, and its connection details.", []),
    ("connect_vpn", "Connect your VPN.", []),
    ("disconnect_vpn", "Disconnect your VPN, if one is connected.", []),
    ("check_installed_apps", "List the apps installed on your phone.", []),
    (
        "check_app_status",
        "Look at one app's details, including the permissions it has.",
        [("app_name", _STR, "The app's name, e.g. 'messaging'.")],
    ),
    (
        "check_app_permissions",
        "See which permissions one app has (e.g. sms, storage, phone, network).",
        [("app_name", _STR, "The app's name, e.g. 'messaging'.")],
    ),
    (
        "grant_app_permission",
        "Give an app one permission (sms, storage, phone or network).",
        [
            ("app_name", _STR, "The app's name, e.g. 'messaging'."),
            ("permission", _STR, "The permission, in lowercase, e.g. 'storage'."),
        ],
    ),
    ("can_send_mms", "Check whether your messaging app can send picture messages (MMS).", []),
    ("reboot_device", "Restart your phone, which refreshes its network connection and settings.", []),
    ("check_payment_request", "See whether the provider has sent you a request to pay a bill.", []),
    ("make_payment", "Pay the bill the provider asked you to pay.", []),
]

_DEFS: dict[str, dict[str, Any]] = {
    "set_network_mode_preference": {"NetworkModePreference": _NETWORK_MODES},
    "set_apn_settings": _APN_DEFS,
}


def _title(name: str) -> str:
    # Upstream's pydantic titles: 'customer_id' -> 'Customer Id'.
    return " ".join(part.capitalize() for part in name.split("_"))


def _property(name: str, kind: dict[str, Any], description: str | None) -> dict[str, Any]:
    # Key order as pydantic's model_json_schema() emits it upstream.
    prop: dict[str, Any] = {}
    if "anyOf" in kind:
        prop["anyOf"] = copy.deepcopy(kind["anyOf"])
    if "default" in kind:
        prop["default"] = kind["default"]
    if description is not None:
        prop["description"] = description
    prop["title"] = _title(name)
    if "type" in kind:
        prop["type"] = kind["type"]
    return prop


def _schema(name: str, description: str, params: list[Parameter]) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    if name in _DEFS:
        parameters["$defs"] = copy.deepcopy(_DEFS[name])
    parameters["properties"] = {pname: _property(pname, kind, text) for pname, kind, text in params}
    required = [pname for pname, kind, _ in params if "default" not in kind]
    if required:
        parameters["required"] = required
    parameters["title"] = "parameters"
    parameters["type"] = "object"
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _AGENT_TOOLS)
USER_TOOL_SCHEMAS: tuple[dict[str, Any], ...] = tuple(_schema(*tool) for tool in _USER_TOOLS)
AGENT_TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _AGENT_TOOLS)
USER_TOOL_NAMES: tuple[str, ...] = tuple(name for name, _, _ in _USER_TOOLS)

READ_TOOLS = frozenset(
    {
        "get_customer_by_phone",
        "get_customer_by_id",
        "get_customer_by_name",
        "get_details_by_id",
        "get_bills_for_customer",
        "get_data_usage",
    }
)
WRITE_TOOLS = frozenset(
    {
        "suspend_line",
        "resume_line",
        "send_payment_request",
        "enable_roaming",
        "disable_roaming",
        "refuel_data",
    }
)
GENERIC_TOOLS = frozenset({"transfer_to_human_agents"})

USER_READ_TOOLS = frozenset(
    {
        "check_status_bar",
        "check_network_status",
        "check_network_mode_preference",
        "run_speed_test",
        "check_sim_status",
        "check_data_restriction_status",
        "check_apn_settings",
        "check_wifi_status",
        "check_wifi_calling_status",
        "check_vpn_status",
        "check_installed_apps",
        "check_app_status",
        "check_app_permissions",
        "can_send_mms",
        "check_payment_request",
    }
)
USER_WRITE_TOOLS = frozenset(USER_TOOL_NAMES) - USER_READ_TOOLS

MUTATING_TOOLS = WRITE_TOOLS | USER_WRITE_TOOLS
"""The calls upstream's evaluator re-executes when it replays a trajectory (the others change nothing)."""
