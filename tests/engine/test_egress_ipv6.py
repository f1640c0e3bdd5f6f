"""Every IPv6 spelling of an IPv4 address, and the deprecated local ranges, through the egress policy: as a
literal in the agent URL (refused before any connection) and as the answer of a name (refused at connect time,
with no connection attempt). The resolver is a table; nothing leaves the machine."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from green_agent.core.errors import AgentEgressError
from green_agent.white_agent.egress import (
    EgressConnector,
    EgressPolicy,
    embedded_ipv4,
    is_global,
    resolve_agent,
)
from tests.engine.test_egress import RecordingDial, TableResolver

NO_PRIVATE = EgressPolicy(allow_private=False)
OPEN = EgressPolicy(allow_private=True)

# (form, address, the IPv4 address it stands for or None, what the policy says without private networks,
#  what it says with them: None = allowed)
FORMS: list[tuple[str, str, str | None, str, str | None]] = [
    ("IPv4-compatible loopback", "::7f00:1", "127.0.0.1", "loopback", None),
    ("IPv4-compatible metadata", "::a9fe:a9fe", "169.254.169.254", "metadata", "metadata"),
    ("IPv4-compatible private", "::a00:1", "10.0.0.1", "private", None),
    ("IPv4-mapped loopback", "::ffff:127.0.0.1", "127.0.0.1", "loopback", None),
    ("IPv4-mapped metadata", "::ffff:169.254.169.254", "169.254.169.254", "metadata", "metadata"),
    ("IPv4-translated loopback", "::ffff:0:7f00:1", "127.0.0.1", "loopback", None),
    ("IPv4-translated metadata", "::ffff:0:a9fe:a9fe", "169.254.169.254", "metadata", "metadata"),
    ("IPv4-translated private", "::ffff:0:c0a8:101", "192.168.1.1", "private", None),
    ("NAT64 well-known loopback", "64:ff9b::7f00:1", "127.0.0.1", "loopback", None),
    ("NAT64 well-known metadata", "64:ff9b::a9fe:a9fe", "169.254.169.254", "metadata", "metadata"),
    ("NAT64 local-use /96 metadata", "64:ff9b:1::a9fe:a9fe", "169.254.169.254", "metadata", "metadata"),
    ("NAT64 local-use /96 private", "64:ff9b:1::a00:1", "10.0.0.1", "private", None),
    ("NAT64 local-use /64 metadata", "64:ff9b:1:0:a9:fea9:fe00:0", "169.254.169.254", "metadata", "metadata"),
    ("NAT64 local-use /48 loopback", "64:ff9b:1:7f00:0:100::", "127.0.0.1", "loopback", None),
    ("NAT64 local-use, public IPv4", "64:ff9b:1::808:808", "8.8.8.8", "private", None),
    ("6to4 loopback", "2002:7f00:1::1", "127.0.0.1", "loopback", None),
    ("6to4 metadata", "2002:a9fe:a9fe::1", "169.254.169.254", "metadata", "metadata"),
    ("Teredo, client metadata", "2001:0:808:808:0:0:5601:5601", "169.254.169.254", "metadata", "metadata"),
    ("Teredo, server loopback", "2001:0:7f00:1::f7f7:f7f7", "127.0.0.1", "loopback", None),
    ("ISATAP loopback", "2600::5efe:7f00:1", "127.0.0.1", "loopback", None),
    ("ISATAP metadata", "2600::200:5efe:a9fe:a9fe", "169.254.169.254", "metadata", "metadata"),
    ("site-local", "fec0::1", None, "private", None),
    ("unique-local", "fd12::1", None, "private", None),
    ("IPv6 loopback", "::1", None, "loopback", None),
    ("link-local", "fe80::1", None, "link-local", "link-local"),
    ("unspecified", "::", None, "unspecified", "unspecified"),
]
IDS = [form[0] for form in FORMS]


@pytest.mark.parametrize(("form", "address", "v4", "closed", "opened"), FORMS, ids=IDS)
def test_literal_forms(form: str, address: str, v4: str | None, closed: str, opened: str | None) -> None:
    parsed = ipaddress.ip_address(address)
    if v4 is not None:
        assert ipaddress.ip_address(v4) in embedded_ipv4(parsed)
    assert not is_global(parsed)
    url = f"http://[{address}]:9019/"
    refused = NO_PRIVATE.url_refusal(url)
    assert refused is not None and closed in refused, refused
    allowed = OPEN.url_refusal(url)
    if opened is None:
        assert allowed is None
    else:
        assert allowed is not None and opened in allowed


@pytest.mark.parametrize(("form", "address", "v4", "closed", "opened"), FORMS, ids=IDS)
async def test_names_resolving_to_the_forms(
    form: str, address: str, v4: str | None, closed: str, opened: str | None
) -> None:
    resolver = TableResolver({"agent.test": [[address]]})
    for policy, expected in ((NO_PRIVATE, closed), (OPEN, opened)):
        connector = EgressConnector(policy, resolver)
        network = RecordingDial()
        if expected is None:
            with pytest.raises(httpx.ConnectError):  # allowed: the network is dialled
                await connector.connect("agent.test", 80, network)
            assert network.attempts == [str(ipaddress.ip_address(address))]
        else:
            with pytest.raises(AgentEgressError, match=expected):
                await connector.connect("agent.test", 80, network)
            assert network.attempts == []
    agent = await resolve_agent("http://agent.test/", resolver)
    assert agent.public is False  # a public agent's card may not lead to it either


@pytest.mark.parametrize(
    "address", ["2001:4860:4860::8888", "64:ff9b::808:808", "2002:808:808::1", "2600::5efe:808:808"]
)
def test_public_forms_stay_reachable(address: str) -> None:
    """The decoding refuses what embeds a refused address, not IPv6 as such."""
    assert is_global(ipaddress.ip_address(address))
    assert NO_PRIVATE.url_refusal(f"http://[{address}]/") is None


def test_an_allow_listed_network_covers_the_ipv4_it_embeds() -> None:
    policy = EgressPolicy.from_lists(allow=["10.1.0.0/16"], allow_private=False)
    assert policy.refusal("x.test", [ipaddress.ip_address("::ffff:0:a01:101")]) is None
    assert policy.refusal("x.test", [ipaddress.ip_address("::a01:101")]) is None
    refused = policy.refusal("x.test", [ipaddress.ip_address("::ffff:0:a02:101")])
    assert refused is not None and "private" in refused
    denied = EgressPolicy.from_lists(deny=["10.1.0.0/16"])
    assert "deny-list" in (denied.refusal("x.test", [ipaddress.ip_address("64:ff9b:1::a01:101")]) or "")


async def test_spellings_of_one_ipv4_agent_share_its_key() -> None:
    keys = {
        (await resolve_agent(f"http://[{spelling}]:9019/")).key
        for spelling in ("::ffff:127.0.0.1", "::7f00:1", "::ffff:0:7f00:1", "64:ff9b::7f00:1")
    }
    assert keys == {"127.0.0.1:9019"}
