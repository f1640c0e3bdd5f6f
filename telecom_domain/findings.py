"""What a trial's end state held where a failed env assertion looked, in a few words: "service status is
no_service", "speed test: no connection", "line L1002 refuelled 0.0 GB". The assertion itself only answers
true or false; a vendor reading why a trial failed wants the value behind it. Read-only: nothing here changes
the environment (the speed test and MMS check are the phone's own predicates, without the tools' output)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain_kit.tasks import EnvAssertion

from .environment import TelecomEnvironment

Finding = Callable[[TelecomEnvironment, Mapping[str, Any]], str]


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


def _speed(env: TelecomEnvironment, _: Mapping[str, Any]) -> str:
    speed, label = env.user_tools._run_speed_test()
    return "speed test: no connection" if speed is None else f"speed test: {speed:.2f} Mbps ({label})"


def _bill(env: TelecomEnvironment, arguments: Mapping[str, Any]) -> str:
    bill_id = str(arguments.get("overdue_bill_id"))
    try:
        return f"bill {bill_id} is {env.tools._get_bill_by_id(bill_id).status}"
    except ValueError:
        return f"bill {bill_id} does not exist"


def _line(env: TelecomEnvironment, arguments: Mapping[str, Any]) -> Any:
    return env.tools._get_target_line(str(arguments.get("customer_id")), str(arguments.get("line_id")))


USER: dict[str, Finding] = {
    "assert_airplane_mode_status": lambda env, _: (
        f"airplane mode is {_on_off(env.user_tools.device.airplane_mode)}"
    ),
    "assert_service_status": lambda env, _: (
        f"service status is {env.user_tools.device.network_connection_status}"
    ),
    "assert_mobile_data_status": lambda env, _: (
        "mobile data " + ("works" if env.user_tools._get_mobile_data_working() else "does not work")
    ),
    "assert_mobile_roaming_status": lambda env, _: (
        f"roaming is {_on_off(env.user_tools.device.roaming_enabled)}"
    ),
    "assert_mobile_data_saver_mode_status": lambda env, _: (
        f"data saver is {_on_off(env.user_tools.device.data_saver_mode)}"
    ),
    "assert_internet_speed": _speed,
    "assert_internet_not_excellent": _speed,
    "assert_can_send_mms": lambda env, _: (
        "MMS " + ("can" if env.user_tools._can_send_mms() else "cannot") + " be sent"
    ),
    "assert_mobile_data_usage_exceeded": lambda env, _: (
        "data usage "
        + ("exceeded" if env.user_tools.surroundings.mobile_data_usage_exceeded else "within the plan")
    ),
}
AGENT: dict[str, Finding] = {
    "assert_data_refueling_amount": lambda env, a: (
        f"line {a.get('line_id')} refuelled {_line(env, a).data_refueling_gb} GB"
    ),
    "assert_line_status": lambda env, a: f"line {a.get('line_id')} is {_line(env, a).status}",
    "assert_overdue_bill_exists": _bill,
    "assert_no_overdue_bill": _bill,
}


def finding(env: TelecomEnvironment, assertion: EnvAssertion) -> str | None:
    """What the end state holds where `assertion` looks; None where that cannot be said (an unknown function,
    arguments it cannot read)."""
    table = USER if assertion.env_type == "user" else AGENT
    describe = table.get(assertion.func_name)
    if describe is None:
        return None
    try:
        return describe(env, assertion.arguments)
    except Exception:  # the assertion itself raised, or will: its error says more
        return None
