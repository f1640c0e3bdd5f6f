"""The customer's side: the 30 tools the customer uses on the phone, the phone's simulation (network search,
mobile data, speed, MMS), and the hidden functions tasks use to break the phone and to check it.

Behaviour and every message are upstream's (semantics doc, sections 5 and 6). As on the agent's side,
arguments arrive unvalidated and Python's own errors surface with upstream's text, so the class and method
names are upstream's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .apn import validate_apn_settings
from .model import dump
from .phone import (
    APNNames,
    APNSettings,
    AppPermissions,
    MockPhoneAttributes,
    NetworkModePreference,
    NetworkStatus,
    NetworkTechnology,
    PerformanceLevel,
    SignalStrength,
    SimStatus,
    TelecomUserDB,
    UserSurroundings,
    VpnDetails,
    default_vpn_details,
)

_SIGNAL_ICONS = {
    SignalStrength.NONE: "📵 No Signal",
    SignalStrength.POOR: "📶¹ Poor",
    SignalStrength.FAIR: "📶² Fair",
    SignalStrength.GOOD: "📶³ Good",
    SignalStrength.EXCELLENT: "📶⁴ Excellent",
}

# Download speed range (Mbps) by technology, and the share of it a signal strength gives.
_SPEED_RANGE = {
    NetworkTechnology.TWO_G: (0.1, 0.4),
    NetworkTechnology.THREE_G: (1.0, 5.0),
    NetworkTechnology.FOUR_G: (10.0, 100.0),
    NetworkTechnology.FIVE_G: (50.0, 500.0),
    NetworkTechnology.NONE: (0.0, 0.0),
}
_SIGNAL_FACTOR = {
    SignalStrength.POOR: 0.2,
    SignalStrength.FAIR: 0.5,
    SignalStrength.GOOD: 0.8,
    SignalStrength.EXCELLENT: 1.0,
    SignalStrength.NONE: 0.0,
}
_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}
_PREFERRED_TECHNOLOGY = {
    NetworkModePreference.FOUR_G_ONLY: NetworkTechnology.FOUR_G,
    NetworkModePreference.THREE_G_ONLY: NetworkTechnology.THREE_G,
    NetworkModePreference.TWO_G_ONLY: NetworkTechnology.TWO_G,
}
_SIM_TEXT = {
    SimStatus.ACTIVE: "Your SIM card is active and working.",
    SimStatus.MISSING: "No SIM card detected in the phone.",
    SimStatus.LOCKED_PIN: "The SIM card is locked with a PIN code.",
    SimStatus.LOCKED_PUK: "The SIM card is locked with a PUK code.",
}


def _on_off(flag: Any) -> str:
    return "ON" if flag else "OFF"


class TelecomUserTools:
    """The customer's tools over one environment's user DB. ``db`` may be replaced by the environment."""

    def __init__(self, db: TelecomUserDB, vpn_default: VpnDetails | None = None) -> None:
        self.db = db
        # What connect_vpn connects to. Upstream shares one object across the whole process, so the setup step
        # break_vpn (which degrades it in place) slows every later VPN connection of every trial; each
        # environment owns its own here: a break still lasts for the rest of its trial, never beyond.
        self.default_vpn_details = vpn_default if vpn_default is not None else default_vpn_details()

    @property
    def device(self) -> MockPhoneAttributes:
        return self.db.device

    @property
    def surroundings(self) -> UserSurroundings:
        return self.db.surroundings

    # ------------------------------------------------------------------ the simulation

    def simulate_network_search(self) -> None:
        """Where the phone connects: by SIM state and network preference, then cut off by airplane mode, a
        broken APN or an inactive line. Never looks at data, roaming, the VPN or data usage."""
        device = self.device
        if self._check_sim_status() == SimStatus.ACTIVE:
            device.network_connection_status = NetworkStatus.CONNECTED
            signal = self.surroundings.signal_strength
            preference = device.network_mode_preference
            if preference == NetworkModePreference.FOUR_G_5G_PREFERRED:
                five_g = signal.get(NetworkTechnology.FIVE_G, SignalStrength.NONE)
                if five_g == SignalStrength.NONE:
                    technology = NetworkTechnology.FOUR_G
                else:
                    technology = NetworkTechnology.FIVE_G
            else:
                technology = _PREFERRED_TECHNOLOGY.get(preference, NetworkTechnology.FOUR_G)
            device.network_technology_connected = technology
            device.network_signal_strength = signal.get(technology, SignalStrength.NONE)
        else:
            self._lose_service()
        # Three checks, each always made (a corrupted APN fails the search even in airplane mode).
        if device.airplane_mode:
            self._lose_service()
        if device.active_apn_settings.apn_name == APNNames.BROKEN:
            self._lose_service()
        if not self.surroundings.line_active:
            self._lose_service()

    def _lose_service(self) -> None:
        self.device.network_connection_status = NetworkStatus.NO_SERVICE
        self.device.network_technology_connected = NetworkTechnology.NONE
        self.device.network_signal_strength = SignalStrength.NONE

    def _check_sim_status(self) -> SimStatus:
        if self.device.sim_card_missing:
            return SimStatus.MISSING
        return self.device.sim_card_status

    def _get_mobile_data_working(self) -> bool:
        device, surroundings = self.device, self.surroundings
        if device.airplane_mode or device.network_signal_strength == SignalStrength.NONE:
            return False
        if device.network_connection_status == NetworkStatus.NO_SERVICE:
            return False
        if surroundings.is_abroad and (not device.roaming_enabled or not surroundings.roaming_allowed):
            return False
        if not device.data_enabled:
            return False
        return not surroundings.mobile_data_usage_exceeded

    def _run_speed_test(self) -> tuple[float | None, str]:
        if not self._get_mobile_data_working():
            return None, "No Connection"
        device = self.device
        factor = 1.0
        if (
            device.vpn_connected
            and device.vpn_details
            and device.vpn_details.server_performance == PerformanceLevel.POOR
        ):
            factor = 0.1
        if device.data_saver_mode:
            factor *= 0.2
        low, high = _SPEED_RANGE.get(device.network_technology_connected, (0.0, 0.0))
        signal = _SIGNAL_FACTOR.get(device.network_signal_strength, 0.0)
        speed = round((low + high) / 2.0 * signal * factor, 2)
        if speed < 1:
            label = "Very Poor"
        elif speed < 5:
            label = "Poor"
        elif speed < 25:
            label = "Fair"
        elif speed < 100:
            label = "Good"
        else:
            label = "Excellent"
        return speed, label

    def _can_send_mms(self) -> bool:
        device = self.device
        if not self._get_mobile_data_working():
            return False
        if device.network_technology_connected == NetworkTechnology.TWO_G:
            return False
        if device.wifi_calling_enabled and device.wifi_calling_mms_over_wifi:
            return False  # the phone would send MMS over Wi-Fi, which the carrier does not support
        if device.active_apn_settings.mmsc_url is None:
            return False
        messaging = device.app_statuses.get("messaging")
        if messaging is None:
            return False
        return messaging.permissions.storage and messaging.permissions.sms

    def _check_status_bar(self) -> str:
        device = self.device
        parts: list[str] = []
        if device.airplane_mode:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_ICONS.get(device.network_signal_strength, "📵 No Signal"))
            has_network = device.network_technology_connected != NetworkTechnology.NONE
            if has_network:
                parts.append(device.network_technology_connected.value)
            if device.data_enabled and has_network:
                parts.append("📱 Data Enabled")
                if device.data_saver_mode:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if device.wifi_enabled and device.wifi_connected:
            parts.append(f"📡 Connected to {device.wifi_ssid}" if device.wifi_ssid else "📡 Enabled")
        if device.vpn_connected:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {device.battery_level}%")
        return " | ".join(parts)

    def _with_status_bar(self, message: str) -> str:
        return f"{message}\nStatus Bar: {self._check_status_bar()}"

    # ------------------------------------------------------------------ tools: status and network

    def check_status_bar(self) -> str:
        return f"Status Bar: {self._check_status_bar()}"

    def check_network_status(self) -> str:
        device = self.device
        lines = [
            f"Airplane Mode: {_on_off(device.airplane_mode)}",
            f"SIM Card Status: {self._check_sim_status().value}",
            f"Cellular Connection: {device.network_connection_status.value}",
            f"Cellular Signal: {device.network_signal_strength.value}",
            f"Cellular Network Type: {device.network_technology_connected.value}",
            f"Mobile Data Enabled: {'Yes' if device.data_enabled else 'No'}",
            f"Data Roaming Enabled: {'Yes' if device.roaming_enabled else 'No'}",
            f"Wi-Fi Radio: {_on_off(device.wifi_enabled)}",
            f"Wi-Fi Connected: {'Yes' if device.wifi_connected else 'No'}",
        ]
        if device.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {device.wifi_ssid}")
        return "\n".join(lines)

    def check_network_mode_preference(self) -> str:
        return f"Network Mode Preference: {self.device.network_mode_preference.value}"

    def set_network_mode_preference(self, mode: Any) -> str:
        chosen = self._set_network_mode_preference(mode)
        if chosen is None:
            # An unknown mode is reported in the message, not as a tool error.
            options = ", ".join(m.value for m in NetworkModePreference)
            return self._with_status_bar(
                f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: {options}"
            )
        return self._with_status_bar(f"Preferred Network Mode set to: {chosen.value}")

    def _set_network_mode_preference(self, mode: Any) -> Any:
        # Upstream converts strings only: any other JSON value is stored as given (and the message then fails
        # on it, or reports a null as invalid after storing it).
        try:
            if isinstance(mode, str):
                mode = NetworkModePreference(mode)
            self.device.network_mode_preference = mode
            self.simulate_network_search()
            return mode
        except ValueError:
            return None

    def run_speed_test(self) -> str:
        speed, label = self._run_speed_test()
        if speed is None:
            return f"Speed test failed: {label or 'Could not determine speed'}."
        return f"Speed Test Result: {speed:.2f} Mbps ({label}). {_SPEED_ADVICE.get(label, '')}"

    def toggle_airplane_mode(self) -> str:
        state = self._toggle_airplane_mode()
        return self._with_status_bar(f"Airplane Mode is now {_on_off(state)}.")

    def _toggle_airplane_mode(self) -> bool:
        device = self.device
        was_on = device.airplane_mode
        device.airplane_mode = not was_on
        if was_on:
            device.network_connection_status = NetworkStatus.SEARCHING
            if device.wifi_enabled:
                self._drop_wifi()
        else:
            self._drop_wifi()
            if device.vpn_connected:
                self._disconnect_vpn()
        self.simulate_network_search()
        return device.airplane_mode

    def _drop_wifi(self) -> None:
        self.device.wifi_connected = False
        self.device.wifi_ssid = None
        self.device.wifi_signal_strength = SignalStrength.NONE

    # ------------------------------------------------------------------ tools: SIM

    def check_sim_status(self) -> str:
        status = self._check_sim_status()
        return _SIM_TEXT.get(status, f"Unknown SIM status: {status.value}")

    def reseat_sim_card(self) -> str:
        self.device.sim_card_missing = False
        self.simulate_network_search()
        return self._with_status_bar("SIM card re-seated successfully.")

    # ------------------------------------------------------------------ tools: mobile data and roaming

    def toggle_data(self) -> str:
        state = self._toggle_data()
        return self._with_status_bar(f"Mobile Data is now {_on_off(state)}.")

    def _toggle_data(self) -> bool:
        self.device.data_enabled = not self.device.data_enabled
        self.simulate_network_search()
        return self.device.data_enabled

    def toggle_roaming(self) -> str:
        state = self._toggle_roaming()
        return self._with_status_bar(f"Data Roaming is now {_on_off(state)}.")

    def _toggle_roaming(self) -> bool:
        self.device.roaming_enabled = not self.device.roaming_enabled
        self.simulate_network_search()
        return self.device.roaming_enabled

    def check_data_restriction_status(self) -> str:
        if self.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    def toggle_data_saver_mode(self) -> str:
        state = self._toggle_data_saver_mode()
        return self._with_status_bar(f"Data Saver Mode is now {_on_off(state)}.")

    def _toggle_data_saver_mode(self) -> bool:
        self.device.data_saver_mode = not self.device.data_saver_mode  # no network search
        return self.device.data_saver_mode

    # ------------------------------------------------------------------ tools: APN

    def check_apn_settings(self) -> str:
        settings = self.device.active_apn_settings
        if not isinstance(settings, APNSettings):  # corrupted by set_apn_settings: upstream copies it first
            raise AttributeError(f"'{type(settings).__name__}' object has no attribute 'model_copy'")
        name = settings.apn_name.value or "Not Set"
        url = settings.mmsc_url or "Not Set"
        return (
            f"Current APN Name: {name}\nMMSC URL (for picture messages): {url}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    def set_apn_settings(self, apn_settings: Any) -> str:
        if isinstance(apn_settings, Mapping):
            apn_settings = validate_apn_settings(apn_settings)
        # Upstream stores whatever else it was given before reading its name: a non-object value corrupts the
        # phone and fails here with Python's attribute error (and so does every later network search).
        self.device.active_apn_settings = apn_settings
        message = f"APN settings set to: {apn_settings.apn_name.value}"
        self.simulate_network_search()
        return self._with_status_bar(message)

    def reset_apn_settings(self) -> str:
        # Only takes effect at the next reboot: a broken APN stays broken until then.
        self.device.active_apn_settings.reset_at_reboot = True
        self.simulate_network_search()
        return self._with_status_bar("APN settings will reset at reboot.")

    # ------------------------------------------------------------------ tools: Wi-Fi and Wi-Fi calling

    def check_wifi_status(self) -> str:
        device = self.device
        if not device.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if device.wifi_connected:
            return (
                f"Wi-Fi is ON and connected to '{device.wifi_ssid}'. "
                f"Signal strength: {device.wifi_signal_strength.value}."
            )
        return "Wi-Fi is ON but not connected to any network."

    def toggle_wifi(self) -> str:
        device = self.device
        if device.airplane_mode:
            return self._with_status_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        device.wifi_enabled = not device.wifi_enabled
        if not device.wifi_enabled:
            self._drop_wifi()
        return self._with_status_bar(f"Wi-Fi is now {_on_off(device.wifi_enabled)}.")

    def check_wifi_calling_status(self) -> str:
        return f"Wi-Fi Calling is currently turned {_on_off(self.device.wifi_calling_enabled)}."

    def toggle_wifi_calling(self) -> str:
        self.device.wifi_calling_enabled = not self.device.wifi_calling_enabled
        return self._with_status_bar(f"Wi-Fi Calling is now {_on_off(self.device.wifi_calling_enabled)}.")

    # ------------------------------------------------------------------ tools: VPN

    def check_vpn_status(self) -> str:
        device = self.device
        if device.vpn_connected:
            if device.vpn_details:
                # The details print as Python's repr of their dump (enum member included), as upstream's do.
                return f"VPN is ON and connected. Details: {dump(device.vpn_details)}"
            return "VPN is ON and connected (no specific details available)."
        if device.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    def connect_vpn(self) -> str:
        if self.device.vpn_connected:
            return "VPN already connected."
        self.device.vpn_connected = True
        self.device.vpn_details = self.default_vpn_details
        return self._with_status_bar("VPN connected successfully.")

    def disconnect_vpn(self) -> str:
        if self._disconnect_vpn():
            return self._with_status_bar("VPN disconnected successfully.")
        return self._with_status_bar("No active VPN connection to disconnect.")

    def _disconnect_vpn(self) -> bool:
        if not self.device.vpn_connected:
            return False
        self.device.vpn_connected = False
        self.device.vpn_details = None
        return True

    # ------------------------------------------------------------------ tools: apps

    def check_installed_apps(self) -> str:
        return f"The following apps are installed on the phone: {', '.join(self.device.app_statuses)}"

    def check_app_status(self, app_name: str) -> str:
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.permissions)
        lines = [f"Status for App: {app_name}"]
        if granted:
            lines.append(" - Permissions Granted:")
            lines.extend(f"   - {name}" for name in granted)
        else:
            lines.append(" - Permissions: None granted.")
        return "\n".join(lines)

    def check_app_permissions(self, app_name: str) -> str:
        app = self.device.app_statuses.get(app_name)
        if app is None:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    def grant_app_permission(self, app_name: str, permission: str) -> str:
        # Failures are reported in the message ("Error. ..."), not as tool errors.
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            return self._with_status_bar(f"Error. App '{app_name}' not found. Cannot grant permission.")
        available = list(dump(app.permissions))
        if permission not in available:
            return self._with_status_bar(
                f"Error. Permission '{permission}' not tracked for app '{app_name}', "
                f"available permissions: {available}"
            )
        setattr(app.permissions, permission, True)
        return self._with_status_bar(f"Success. Permission '{permission}' granted to app '{app_name}'.")

    def can_send_mms(self) -> str:
        if self._can_send_mms():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    # ------------------------------------------------------------------ tools: device, payments

    def reboot_device(self) -> str:
        lines = []
        if self.device.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            self.device.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        self.device.network_connection_status = NetworkStatus.SEARCHING
        self.simulate_network_search()
        return self._with_status_bar("\n".join(lines))

    def check_payment_request(self) -> str:
        request = self.surroundings.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    def make_payment(self) -> str:
        # The bill becomes Paid at the next sync with the provider's records.
        request = self.surroundings.payment_request
        if request is None:
            return "You do not have a payment request."
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # ------------------------------------------------------------------ hidden: task setup

    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings.name = name
        self.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings.is_abroad = abroad

    def turn_airplane_mode_on(self) -> str:
        if not self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now OFF."

    def unseat_sim_card(self) -> str:
        self.device.sim_card_missing = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: str) -> str:
        if mode == "pin":
            self.device.sim_card_status = SimStatus.LOCKED_PIN
        elif mode == "puk":
            self.device.sim_card_status = SimStatus.LOCKED_PUK
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    def turn_data_on(self) -> str:
        self.device.data_enabled = True  # no network search, as upstream
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._toggle_data():
            self._toggle_data()
        return "Data connection broken."

    def turn_roaming_on(self) -> str:
        if not self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now OFF."

    def turn_data_saver_mode_on(self) -> str:
        if not self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        if self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now OFF."

    def break_apn_settings(self) -> str:
        self.device.active_apn_settings.apn_name = APNNames.BROKEN
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        if self.device.wifi_calling_enabled != enabled:
            self.device.wifi_calling_enabled = not self.device.wifi_calling_enabled
        message = f"Wi-Fi Calling is now {_on_off(enabled)}."
        if mms_over_wifi is not None:
            self.device.wifi_calling_mms_over_wifi = mms_over_wifi
            message += f"\nMMS over Wi-Fi is now {_on_off(mms_over_wifi)}."
        return message

    def break_vpn(self) -> str:
        self.connect_vpn()
        self.device.vpn_details.server_performance = PerformanceLevel.POOR  # type: ignore[union-attr]
        return "VPN connection broken."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if app is None:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if not hasattr(app.permissions, permission):
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(app.permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # ------------------------------------------------------------------ hidden: end-state assertions

    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device.airplane_mode == expected_status

    def assert_service_status(self, expected_status: str) -> bool:
        return self.device.network_connection_status == NetworkStatus(expected_status)

    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self._get_mobile_data_working() == expected_status

    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device.roaming_enabled == expected_status

    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device.data_saver_mode == expected_status

    def assert_internet_speed(self, expected_speed: float, expected_desc: str | None = None) -> bool:
        speed, label = self._run_speed_test()
        speed = speed or 0.0
        if expected_desc is None:
            return speed >= expected_speed
        return speed >= expected_speed and label.lower() == expected_desc.lower()

    def assert_internet_not_excellent(self) -> bool:
        _, label = self._run_speed_test()
        return label.lower() != "excellent"

    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self._can_send_mms() == expected_status

    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings.mobile_data_usage_exceeded == expected_status


def _granted(permissions: AppPermissions) -> list[str]:
    return [name.replace("_", " ").lower() for name, allowed in dump(permissions).items() if allowed]
