"""The customer's side (upstream's user DB, user_db.toml): the phone's settings and state, and the
surroundings the phone lives in (abroad or not, what the provider allows, a pending payment request).

Fields, their order and their defaults are upstream's: they decide the user-DB hash.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .model import build


class SimStatus(enum.StrEnum):
    ACTIVE = "active"
    MISSING = "missing"
    LOCKED_PIN = "locked_pin"
    LOCKED_PUK = "locked_puk"


class NetworkTechnology(enum.StrEnum):
    NONE = "none"
    TWO_G = "2G"
    THREE_G = "3G"
    FOUR_G = "4G"
    FIVE_G = "5G"


class NetworkModePreference(enum.StrEnum):
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


class SignalStrength(enum.StrEnum):
    NONE = "none"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class PerformanceLevel(enum.StrEnum):
    """Named as upstream's: the VPN status text shows this enum's repr."""

    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class NetworkStatus(enum.StrEnum):
    CONNECTED = "connected"
    SEARCHING = "searching"
    NO_SERVICE = "no_service"
    EMERGENCY_ONLY = "emergency_only"


class APNNames(enum.StrEnum):
    INTERNET = "internet"
    BROKEN = "broken"


@dataclass
class APNSettings:
    apn_name: APNNames = APNNames.INTERNET
    reset_at_reboot: bool = False
    mms_apn: str | None = "mms"
    mmsc_url: str | None = "http://mms.carrier.com/mms/wapenc"
    mms_proxy: str | None = None
    mms_port: int | None = None


@dataclass
class VpnDetails:
    server_address: str | None = None
    protocol: str | None = None
    server_performance: PerformanceLevel = PerformanceLevel.UNKNOWN


def default_vpn_details() -> VpnDetails:
    """What connecting the VPN connects to. Upstream keeps one such object per process, and a setup step
    (break_vpn) degrades it in place for every environment of the process; here each environment has its
    own (see TelecomUserTools)."""
    return VpnDetails(
        server_address="192.168.1.1", protocol="OpenVPN", server_performance=PerformanceLevel.EXCELLENT
    )


@dataclass
class AppPermissions:
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


@dataclass
class AppStatus:
    app_name: str
    permissions: AppPermissions = field(default_factory=AppPermissions)


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus("messaging", AppPermissions(sms=True, storage=True, phone=True)),
        "browser": AppStatus("browser", AppPermissions(network=True, storage=True)),
    }


@dataclass
class MockPhoneAttributes:
    """The phone. (Upstream's class name; it appears in no output.)"""

    sim_card_status: SimStatus = SimStatus.ACTIVE
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: SignalStrength = SignalStrength.GOOD
    network_technology_connected: NetworkTechnology = NetworkTechnology.FIVE_G
    network_connection_status: NetworkStatus = NetworkStatus.CONNECTED
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = NetworkModePreference.FOUR_G_5G_PREFERRED
    active_apn_settings: APNSettings = field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: SignalStrength = SignalStrength.NONE
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = field(default_factory=_default_apps)


@dataclass
class PaymentRequest:
    bill_id: str
    amount_due: float
    paid: bool = False


def _default_signal() -> dict[NetworkTechnology, SignalStrength]:
    return {
        NetworkTechnology.TWO_G: SignalStrength.POOR,
        NetworkTechnology.THREE_G: SignalStrength.FAIR,
        NetworkTechnology.FOUR_G: SignalStrength.GOOD,
        NetworkTechnology.FIVE_G: SignalStrength.EXCELLENT,
    }


@dataclass
class UserSurroundings:
    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False  # the provider's roaming flag for the customer's line, copied by the sync
    signal_strength: dict[NetworkTechnology, SignalStrength] = field(default_factory=_default_signal)
    mobile_data_usage_exceeded: bool = False
    line_active: bool = True
    payment_request: PaymentRequest | None = None


@dataclass
class TelecomUserDB:
    device: MockPhoneAttributes = field(default_factory=MockPhoneAttributes)
    surroundings: UserSurroundings = field(default_factory=UserSurroundings)


def parse_user_db(raw: dict[str, Any]) -> TelecomUserDB:
    """The user DB from parsed user_db.toml, checked against upstream's model."""
    return build(TelecomUserDB, raw, "user_db")
