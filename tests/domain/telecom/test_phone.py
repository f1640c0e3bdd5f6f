"""The customer's phone, tool by tool and setup function by setup function, with the texts and numbers of the
semantics doc (sections 5 to 7); the sync between the provider's records and the phone; the VPN default that
must not leak between trials. (test_upstream_trace.py checks the same against upstream's code at random.)"""

from __future__ import annotations

import pytest

from telecom_domain import TelecomData, TelecomEnvironment

BAR = "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔋 80%"
RESTING_BAR = "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 80%"
JOHN = {"name": "John Smith", "phone_number": "555-123-2002"}


def user(env: TelecomEnvironment, name: str, **arguments: object) -> str:
    result = env.call(name, arguments, requestor="user")
    assert not result.error, result.content
    return result.content


@pytest.fixture
def phone(telecom: TelecomData) -> TelecomEnvironment:
    """John's phone, synced with the provider (what every task's first setup step does)."""
    env = telecom.new_environment()
    env.run_function("user", "set_user_info", JOHN)
    return env


def test_resting_phone(phone: TelecomEnvironment) -> None:
    assert user(phone, "check_status_bar") == RESTING_BAR
    assert user(phone, "check_network_status") == (
        "Airplane Mode: OFF\nSIM Card Status: active\nCellular Connection: connected\nCellular Signal: good\n"
        "Cellular Network Type: 5G\nMobile Data Enabled: Yes\nData Roaming Enabled: No\nWi-Fi Radio: OFF\n"
        "Wi-Fi Connected: No"
    )
    # The resting state is 5G/good; any network search finds 5G/excellent.
    assert user(phone, "run_speed_test") == (
        "Speed Test Result: 220.00 Mbps (Excellent). Connection is very fast."
    )
    user(phone, "reboot_device")
    assert user(phone, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps (Excellent).")
    assert user(phone, "check_network_mode_preference") == "Network Mode Preference: 4g_5g_preferred"
    assert user(phone, "check_sim_status") == "Your SIM card is active and working."
    assert user(phone, "check_data_restriction_status") == "Data Saver mode is OFF."
    assert user(phone, "check_wifi_status") == "Wi-Fi is turned OFF."
    assert user(phone, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned OFF."
    assert user(phone, "check_vpn_status") == "VPN is turned OFF."
    assert (
        user(phone, "check_installed_apps")
        == "The following apps are installed on the phone: messaging, browser"
    )
    assert user(phone, "can_send_mms") == "Your messaging app can send MMS messages."
    assert user(phone, "check_payment_request") == "No payment request has been made."
    assert user(phone, "check_apn_settings") == (
        "Current APN Name: internet\nMMSC URL (for picture messages): http://mms.carrier.com/mms/wapenc\n"
        "(These are technical settings, usually best left unchanged.)"
    )


@pytest.mark.parametrize(
    ("mode", "speed"),
    [("4g_only", "44.00 Mbps (Good)"), ("3g_only", "1.50 Mbps (Poor)"), ("2g_only", "0.05 Mbps (Very Poor)")],
)
def test_network_preference_and_speed(phone: TelecomEnvironment, mode: str, speed: str) -> None:
    technology = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}[mode]
    assert user(phone, "set_network_mode_preference", mode=mode).startswith(
        f"Preferred Network Mode set to: {mode}\n"
    )
    assert technology in user(phone, "check_status_bar")
    assert user(phone, "run_speed_test").startswith(f"Speed Test Result: {speed}.")
    mms = user(phone, "can_send_mms")
    assert mms == ("Your messaging app cannot send MMS messages." if mode == "2g_only" else mms)


def test_an_unknown_network_mode_is_a_message_not_an_error(phone: TelecomEnvironment) -> None:
    assert user(phone, "set_network_mode_preference", mode="5g") == (
        "Failed to set network mode: '5g' is not a valid option. Please use one of: 4g_5g_preferred, "
        f"4g_only, 3g_only, 2g_only\n{RESTING_BAR}"
    )


def test_data_saver_and_a_poor_vpn_cut_the_speed(phone: TelecomEnvironment) -> None:
    user(phone, "set_network_mode_preference", mode="4g_only")
    assert user(phone, "toggle_data_saver_mode") == (
        "Data Saver Mode is now ON.\nStatus Bar: 📶³ Good | 4G | 📱 Data Enabled | 🔽 Data Saver | 🔋 80%"
    )
    assert user(phone, "run_speed_test").startswith("Speed Test Result: 8.80 Mbps (Fair).")
    user(phone, "toggle_data_saver_mode")
    user(phone, "set_network_mode_preference", mode="4g_5g_preferred")
    phone.run_function("user", "break_vpn")
    assert user(phone, "run_speed_test").startswith("Speed Test Result: 27.50 Mbps (Good).")
    assert user(phone, "check_vpn_status") == (
        "VPN is ON and connected. Details: {'server_address': '192.168.1.1', 'protocol': 'OpenVPN', "
        "'server_performance': <PerformanceLevel.POOR: 'poor'>}"
    )
    assert user(phone, "disconnect_vpn") == f"VPN disconnected successfully.\n{BAR}"
    assert user(phone, "disconnect_vpn") == f"No active VPN connection to disconnect.\n{BAR}"


def test_the_vpn_default_a_setup_step_degrades_stays_in_its_trial(telecom: TelecomData) -> None:
    """Upstream degrades one process-wide object: after any trial's break_vpn, every later connection in the
    process is slow. Here the degradation lasts for the rest of that trial only."""
    broken = telecom.new_environment("[mobile_data_issue]bad_vpn[PERSONA:None]")
    assert broken.user_tools.device.vpn_connected
    user(broken, "disconnect_vpn")
    user(broken, "connect_vpn")
    assert "'server_performance': <PerformanceLevel.POOR: 'poor'>" in user(broken, "check_vpn_status")

    fresh = telecom.new_environment("[service_issue]airplane_mode_on[PERSONA:None]")
    user(fresh, "toggle_airplane_mode")
    connected = "Status Bar: 📶⁴ Excellent | 5G | 📱 Data Enabled | 🔒 VPN Connected | 🔋 80%"
    assert user(fresh, "connect_vpn") == f"VPN connected successfully.\n{connected}"
    assert user(fresh, "connect_vpn") == "VPN already connected."
    assert "<PerformanceLevel.EXCELLENT: 'excellent'>" in user(fresh, "check_vpn_status")
    assert user(fresh, "run_speed_test").startswith("Speed Test Result: 275.00 Mbps (Excellent).")


def test_airplane_mode(phone: TelecomEnvironment) -> None:
    user(phone, "connect_vpn")
    assert (
        user(phone, "toggle_airplane_mode")
        == "Airplane Mode is now ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    )
    device = phone.user_tools.device
    assert not device.vpn_connected and device.network_connection_status == "no_service"
    assert user(phone, "toggle_wifi") == (
        "Cannot change Wi-Fi settings while Airplane Mode is ON.\nStatus Bar: ✈️ Airplane Mode | 🔋 80%"
    )
    assert user(phone, "run_speed_test") == "Speed test failed: No Connection."
    assert user(phone, "toggle_airplane_mode") == f"Airplane Mode is now OFF.\n{BAR}"


def test_sim_card(phone: TelecomEnvironment) -> None:
    assert phone.run_function("user", "unseat_sim_card") == "SIM card un-seated successfully."
    assert user(phone, "check_sim_status") == "No SIM card detected in the phone."
    assert user(phone, "check_status_bar") == "Status Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"
    assert user(phone, "reseat_sim_card") == f"SIM card re-seated successfully.\n{BAR}"
    assert (
        phone.run_function("user", "lock_sim_card", {"mode": "pin"})
        == "SIM card locked successfully in pin mode."
    )
    assert user(phone, "check_sim_status") == "The SIM card is locked with a PIN code."
    user(phone, "reseat_sim_card")  # does not unlock
    assert phone.assertion("assert_service_status", {"expected_status": "no_service"}, "user")
    phone.run_function("user", "lock_sim_card", {"mode": "puk"})
    assert user(phone, "check_sim_status") == "The SIM card is locked with a PUK code."


def test_mobile_data_and_roaming_abroad(phone: TelecomEnvironment) -> None:
    assert phone.run_function("user", "turn_data_off") == "Data connection broken."
    assert user(phone, "check_status_bar") == "Status Bar: 📶⁴ Excellent | 5G | 📵 Data Disabled | 🔋 80%"
    assert not phone.assertion("assert_mobile_data_status", {"expected_status": True}, "user")
    assert user(phone, "toggle_data") == f"Mobile Data is now ON.\n{BAR}"
    phone.run_function("user", "set_user_location", {"abroad": True})
    # Line L1002 allows roaming (provider side); the phone's own roaming setting is off.
    assert phone.user_tools.surroundings.roaming_allowed
    assert user(phone, "run_speed_test") == "Speed test failed: No Connection."
    assert user(phone, "toggle_roaming") == f"Data Roaming is now ON.\n{BAR}"
    assert phone.assertion(
        "assert_internet_speed", {"expected_speed": 200, "expected_desc": "excellent"}, "user"
    )
    phone.call("disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
    assert not phone.user_tools.surroundings.roaming_allowed
    assert not phone.assertion("assert_mobile_data_status", {"expected_status": True}, "user")


def test_apn_settings(phone: TelecomEnvironment) -> None:
    assert phone.run_function("user", "break_apn_settings") == (
        "APN settings broken. Please call reset_apn_settings() to fix."
    )
    assert phone.assertion("assert_service_status", {"expected_status": "no_service"}, "user")
    assert user(phone, "reset_apn_settings") == (
        "APN settings will reset at reboot.\nStatus Bar: 📵 No Signal | 📵 Data Disabled | 🔋 80%"
    )  # still broken until the reboot
    assert user(phone, "reboot_device") == (
        f"Resetting APN settings...\nRestarting network services...\n{BAR}"
    )
    phone.run_function("user", "break_apn_mms_setting")
    assert "MMSC URL (for picture messages): Not Set" in user(phone, "check_apn_settings")
    assert user(phone, "can_send_mms") == "Your messaging app cannot send MMS messages."
    assert user(phone, "set_apn_settings", apn_settings={}) == f"APN settings set to: internet\n{BAR}"
    assert user(phone, "can_send_mms") == "Your messaging app can send MMS messages."


def test_bad_apn_objects(phone: TelecomEnvironment) -> None:
    result = phone.call("set_apn_settings", {"apn_settings": {"apn_name": "foo", "x": 1}}, "user")
    assert result.error and result.content == (
        "Error: 2 validation errors for APNSettings\napn_name\n  Input should be 'internet' or 'broken' "
        "[type=enum, input_value='foo', input_type=str]\n    For further information visit "
        "https://errors.pydantic.dev/2.12/v/enum\nx\n  Extra inputs are not permitted [type=extra_forbidden, "
        "input_value=1, input_type=int]\n    For further information visit "
        "https://errors.pydantic.dev/2.12/v/extra_forbidden"
    )
    # Upstream stores a value that is not an object before failing on it: the phone stays corrupted.
    result = phone.call("set_apn_settings", {"apn_settings": "internet"}, "user")
    assert (result.error, result.content) == (True, "Error: 'str' object has no attribute 'apn_name'")
    result = phone.call("reboot_device", {}, "user")
    assert (result.error, result.content) == (True, "Error: 'str' object has no attribute 'reset_at_reboot'")
    assert phone.call("set_apn_settings", {"apn_settings": {}}, "user").error is False


def test_wifi_calling_and_mms(phone: TelecomEnvironment) -> None:
    assert phone.run_function("user", "set_wifi_calling", {"enabled": True, "mms_over_wifi": True}) == (
        "Wi-Fi Calling is now ON.\nMMS over Wi-Fi is now ON."
    )
    assert user(phone, "can_send_mms") == "Your messaging app cannot send MMS messages."
    assert user(phone, "toggle_wifi_calling") == f"Wi-Fi Calling is now OFF.\n{RESTING_BAR}"
    assert user(phone, "can_send_mms") == "Your messaging app can send MMS messages."


def test_app_permissions(phone: TelecomEnvironment) -> None:
    assert phone.run_function(
        "user", "remove_app_permission", {"app_name": "messaging", "permission": "sms"}
    ) == (
        True,
        "Permission 'sms' removed from app 'messaging'.",
    )
    assert user(phone, "check_app_permissions", app_name="messaging") == (
        "App 'messaging' has permission for: storage, phone."
    )
    assert user(phone, "check_app_status", app_name="messaging") == (
        "Status for App: messaging\n - Permissions Granted:\n   - storage\n   - phone"
    )
    assert not phone.assertion("assert_can_send_mms", {"expected_status": True}, "user")
    assert user(phone, "grant_app_permission", app_name="messaging", permission="SMS") == (
        f"Success. Permission 'sms' granted to app 'messaging'.\n{RESTING_BAR}"
    )
    assert user(phone, "grant_app_permission", app_name="messaging", permission="camera") == (
        "Error. Permission 'camera' not tracked for app 'messaging', available permissions: "
        f"['sms', 'storage', 'phone', 'network']\n{RESTING_BAR}"
    )
    assert user(phone, "grant_app_permission", app_name="camera", permission="sms") == (
        f"Error. App 'camera' not found. Cannot grant permission.\n{RESTING_BAR}"
    )
    assert user(phone, "check_app_permissions", app_name="camera") == "App 'camera' not found on this phone."


def test_wifi(phone: TelecomEnvironment) -> None:
    assert user(phone, "toggle_wifi") == f"Wi-Fi is now ON.\n{RESTING_BAR}"
    assert user(phone, "check_wifi_status") == "Wi-Fi is ON but not connected to any network."
    assert user(phone, "toggle_wifi") == f"Wi-Fi is now OFF.\n{RESTING_BAR}"


# --------------------------------------------------------------------------- the sync


def test_a_fresh_environment_is_never_synced(telecom: TelecomData) -> None:
    env = telecom.new_environment()
    env.call("suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "x"})
    assert env.user_tools.surroundings.line_active  # nobody's phone yet


def test_sync_carries_line_status_but_never_searches(phone: TelecomEnvironment) -> None:
    phone.call("suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "travel"})
    surroundings, device = phone.user_tools.surroundings, phone.user_tools.device
    assert not surroundings.line_active and device.network_connection_status == "connected"
    user(phone, "reboot_device")
    assert device.network_connection_status == "no_service"
    phone.call("resume_line", {"customer_id": "C1001", "line_id": "L1002"})
    assert surroundings.line_active and device.network_connection_status == "no_service"
    user(phone, "reboot_device")
    assert device.network_connection_status == "connected"


def test_sync_carries_data_usage_and_refuels(phone: TelecomEnvironment) -> None:
    surroundings = phone.user_tools.surroundings
    phone.run_function(
        "assistant", "set_data_usage", {"customer_id": "C1001", "line_id": "L1002", "data_used_gb": 15.1}
    )
    assert surroundings.mobile_data_usage_exceeded
    assert user(phone, "run_speed_test") == "Speed test failed: No Connection."
    result = phone.call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 1})
    assert result.content == (
        '{"message": "Successfully added 1 GB of data for line L1002 for $2.00", "new_data_refueling_gb": '
        '"1.0", "charge": "2.0"}'
    )
    assert not surroundings.mobile_data_usage_exceeded
    assert phone.tools.db.bills[2].line_items[-1].description == "Data refueling: 1 GB at $2.0/GB"
    assert phone.assertion(
        "assert_data_refueling_amount",
        {"customer_id": "C1001", "line_id": "L1002", "expected_amount": 1.0},
        "assistant",
    )


def test_sync_carries_payment_requests_and_payments(phone: TelecomEnvironment) -> None:
    """The overdue-bill path: request, pay, the bill becomes Paid at the next sync, resume, reboot."""
    phone.run_function(
        "assistant",
        "suspend_line_for_overdue_bill",
        {"customer_id": "C1001", "line_id": "L1002", "new_bill_id": "B1234321", "contract_ended": False},
    )
    phone.run_function("user", "simulate_network_search")  # as the task's setup does
    surroundings = phone.user_tools.surroundings
    assert not surroundings.line_active and surroundings.payment_request is None
    assert not phone.assertion("assert_no_overdue_bill", {"overdue_bill_id": "B1234321"}, "assistant")
    assert user(phone, "make_payment") == "You do not have a payment request."
    assert phone.call("send_payment_request", {"customer_id": "C1001", "bill_id": "B1234321"}).content == (
        "Payment request sent to the customer for bill B1234321"
    )
    assert user(phone, "check_payment_request") == "You have a payment request for bill B1234321 of 65.0 USD."
    again = phone.call("send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"})
    assert again.content == "Error: A bill is already awaiting payment for this customer"
    assert user(phone, "make_payment") == "Payment of 65.0 USD has been made for bill B1234321."
    assert surroundings.payment_request is None  # the sync after the payment marked the bill Paid
    assert phone.assertion("assert_no_overdue_bill", {"overdue_bill_id": "B1234321"}, "assistant")
    phone.call("resume_line", {"customer_id": "C1001", "line_id": "L1002"})
    assert not phone.assertion("assert_service_status", {"expected_status": "connected"}, "user")
    user(phone, "reboot_device")
    assert phone.assertion("assert_service_status", {"expected_status": "connected"}, "user")


def test_setup_functions_that_toggle_until_a_state_holds(phone: TelecomEnvironment) -> None:
    device = phone.user_tools.device
    for name, field, value in [
        ("turn_airplane_mode_on", "airplane_mode", True),
        ("turn_airplane_mode_on", "airplane_mode", True),
        ("turn_airplane_mode_off", "airplane_mode", False),
        ("turn_roaming_on", "roaming_enabled", True),
        ("turn_roaming_off", "roaming_enabled", False),
        ("turn_data_saver_mode_on", "data_saver_mode", True),
        ("turn_data_saver_mode_off", "data_saver_mode", False),
        ("turn_data_off", "data_enabled", False),
        ("turn_data_on", "data_enabled", True),
    ]:
        phone.run_function("user", name)
        assert getattr(device, field) is value, name


def test_unknown_functions_and_non_boolean_assertions(phone: TelecomEnvironment) -> None:
    with pytest.raises(ValueError, match="Function nope not found in user tools"):
        phone.run_function("user", "nope")
    with pytest.raises(ValueError, match="Function _check_sim_status not found"):
        phone.run_function("user", "_check_sim_status")
    with pytest.raises(ValueError, match="returned <class 'str'> instead of bool"):
        phone.assertion("check_sim_status", {}, "user")
    with pytest.raises(ValueError, match="Invalid environment type: phone"):
        phone.assertion("assert_service_status", {"expected_status": "connected"}, "phone")
