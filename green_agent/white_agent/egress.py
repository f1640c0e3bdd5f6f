"""Egress policy: where the service may connect on behalf of a requester (the agent URL) or of an agent card
(the endpoints it advertises).

A URL is checked twice:

* when a request arrives (`url_problem`, `EgressPolicy.url_refusal`): one line of plain text (no control,
  format or bidi character), http or https, no user name or password, and a literal address the policy
  refuses is refused at once, before any connection;
* at connect time, on every address the host name resolves to (`EgressConnector`): the name is resolved
  here, every address is checked, and the connection goes to a checked address. A name that resolves to an
  allowed address for the card and to a refused one a moment later (DNS rebinding) is refused on that second
  connection. TLS is unaffected: the transport (http1.py) takes the server name (SNI, certificate check) and
  the Host header from the URL, not from the address connected to.

Some addresses are never reachable whatever the settings: link-local (home of the cloud metadata services;
169.254.169.254 and fd00:ec2::254 are listed too), unspecified, multicast, broadcast and reserved ones.
Loopback and private ranges are reachable only when the policy's `allow_private` says so (open mode, and API
keys created with --allow-private-agents). The operator adds a deny-list and an allow-list of networks and
host names: the deny-list always wins; an allow-listed destination may be private even when `allow_private`
is off; with `allow_listed_only`, nothing else is reachable.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from green_agent.core.errors import AgentEgressError
from green_agent.core.one_line import unshowable_reason

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
T = TypeVar("T")
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]
"""`(host, port) -> addresses`; tests inject their own to simulate DNS without a network."""

UNREACHABLE = "could not reach the agent"
"""The one text for every connection failure, so that errors do not tell which ports are open."""

_net = ipaddress.ip_network
NEVER_REACHABLE: tuple[tuple[IPNetwork, str], ...] = (
    (_net("169.254.169.254/32"), "a cloud metadata address"),
    (_net("fd00:ec2::254/128"), "a cloud metadata address"),
    (_net("100.100.100.200/32"), "a cloud metadata address"),
    (_net("169.254.0.0/16"), "link-local"),
    (_net("fe80::/10"), "link-local"),
    (_net("0.0.0.0/8"), "unspecified"),
    (_net("::/128"), "unspecified"),
    (_net("224.0.0.0/4"), "multicast"),
    (_net("ff00::/8"), "multicast"),
    (_net("255.255.255.255/32"), "broadcast"),
    (_net("240.0.0.0/4"), "reserved"),
)
# Not globally routable, although Python's `is_global` says otherwise: site-local (deprecated, RFC 3879) and
# the local-use NAT64 prefix (RFC 8215), which a network's own translator routes into its IPv4 space.
NOT_GLOBAL: tuple[IPNetwork, ...] = (_net("fec0::/10"), _net("64:ff9b:1::/48"))

# IPv6 forms that carry an IPv4 address a translator, tunnel or dual stack may deliver to. Each is judged as
# the address itself AND as every IPv4 address it may stand for: one refused reading refuses the address.
_IPV4_MAPPED = _net("::ffff:0:0/96")  # ::ffff:a.b.c.d
_IPV4_TRANSLATED = _net("::ffff:0:0:0/96")  # ::ffff:0:a.b.c.d (SIIT, RFC 2765)
_IPV4_COMPATIBLE = _net("::/96")  # ::a.b.c.d (deprecated, RFC 4291); :: and ::1 are themselves
_NAT64 = _net("64:ff9b::/96")  # well-known NAT64 prefix (RFC 6052)
_NAT64_LOCAL = _net("64:ff9b:1::/48")  # local-use NAT64 (RFC 8215): any RFC 6052 prefix length in it
_6TO4 = _net("2002::/16")
_TEREDO = _net("2001::/32")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # interface identifier ...:0000:5efe:a.b.c.d / ...:0200:5efe:a.b.c.d
_ZERO_NET = _net("0.0.0.0/8")
_V4_IN_LOW_32 = (_IPV4_MAPPED, _IPV4_TRANSLATED, _NAT64)


def url_problem(url: str) -> str | None:
    """What makes `url` unusable as an agent URL whatever the policy (characters, scheme, host, credentials),
    or None. Checked before parsing: `urlsplit` silently drops tabs and line breaks, so a URL holding them
    would pass the checks below and then be stored, shown and logged as it was sent."""
    unshowable = unshowable_reason(url)
    if unshowable is not None:
        return f"the URL {unshowable}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        return "it is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "only http:// or https:// URLs are accepted"
    if not parts.hostname:
        return "the URL has no host"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return (
            "the URL carries a user name or password, which would be stored and shown; "
            "send credentials for the agent in agent_headers instead"
        )
    return None


def _normal_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _literal_address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(_normal_host(host))
    except ValueError:
        return None


def _low32(value: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value & 0xFFFFFFFF)


def _rfc6052_candidates(value: int) -> list[ipaddress.IPv4Address]:
    """The IPv4 address behind a NAT64 address of a /48, /56, /64 or /96 prefix (RFC 6052 section 2.2: bits
    64-71 are skipped), one reading per prefix length, since the prefix length is the network's choice."""
    octets = value.to_bytes(16, "big")
    readings = (octets[6:8] + octets[9:11], octets[7:8] + octets[9:12], octets[9:13], octets[12:16])
    # A reading in 0.0.0.0/8 is the zero padding of another prefix length, not a destination.
    return [v4 for v4 in map(ipaddress.IPv4Address, readings) if v4 not in _ZERO_NET]


def embedded_ipv4(address: IPAddress) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address may stand for (mapped, translated, compatible, NAT64 well-known and
    local-use, 6to4, Teredo server and client, ISATAP); empty for IPv4 and for plain IPv6 addresses."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    value = int(address)
    if any(address in network for network in _V4_IN_LOW_32):
        return [_low32(value)]
    if address in _IPV4_COMPATIBLE:
        return [_low32(value)] if value > 1 else []
    if address in _NAT64_LOCAL:
        return _rfc6052_candidates(value)
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if (value >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        return [_low32(value)]
    return []


def is_global(address: IPAddress) -> bool:
    """Globally routable, and so is every IPv4 address it may stand for."""
    if not address.is_global or any(address in network for network in NOT_GLOBAL):
        return False
    return all(v4.is_global for v4 in embedded_ipv4(address))


def _canonical(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one is another spelling of (mapped, translated, compatible, NAT64, 6to4),
    else the address itself: one agent, one key for its concurrency cap."""
    embedded = embedded_ipv4(address)
    if len(embedded) == 1 and address not in _TEREDO:
        return embedded[0]
    return address


def _host_listed(host: str, patterns: Iterable[str]) -> bool:
    """`example.com` matches that name only; `.example.com` matches its subdomains too."""
    host = _normal_host(host)
    for pattern in patterns:
        if host == pattern.lstrip(".") or (pattern.startswith(".") and host.endswith(pattern)):
            return True
    return False


@dataclass(frozen=True)
class EgressPolicy:
    """Where white-agent connections may go. Hashable: the engine keeps one connection pool per policy, so a
    connection opened under one policy is never reused under another."""

    allow_private: bool = True
    allow_networks: tuple[IPNetwork, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_networks: tuple[IPNetwork, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    allow_listed_only: bool = False

    @classmethod
    def from_lists(
        cls,
        *,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        allow_private: bool = True,
        allow_listed_only: bool = False,
    ) -> EgressPolicy:
        """Entries are networks (`10.0.0.0/8`, `::1`) or host names (`agents.example`, `.example.com`)."""
        allow_networks, allow_hosts = parse_destinations(allow)
        deny_networks, deny_hosts = parse_destinations(deny)
        return cls(
            allow_private=allow_private,
            allow_networks=allow_networks,
            allow_hosts=allow_hosts,
            deny_networks=deny_networks,
            deny_hosts=deny_hosts,
            allow_listed_only=allow_listed_only,
        )

    def refusal(self, host: str, addresses: Sequence[IPAddress]) -> str | None:
        """Why a connection to `host` at `addresses` is refused, or None. One refused address refuses all."""
        if _host_listed(host, self.deny_hosts):
            return f"the host {_normal_host(host)} is on the operator's deny-list"
        host_allowed = _host_listed(host, self.allow_hosts)
        for address in addresses:
            reason = self._address_refusal(address, host_allowed)
            if reason is not None:
                return reason
        return None

    def _address_refusal(self, address: IPAddress, host_allowed: bool) -> str | None:
        readings = [address, *embedded_ipv4(address)]
        for network, what in NEVER_REACHABLE:
            if any(a in network for a in readings):
                return f"{address} is {what}, never reachable from this service"
        if any(a in network for network in self.deny_networks for a in readings):
            return f"{address} is on the operator's deny-list"
        # Listed: the address itself, or every IPv4 address it may stand for, is in an allowed network.
        listed = host_allowed or any(
            address in network or (len(readings) > 1 and all(a in network for a in readings[1:]))
            for network in self.allow_networks
        )
        if self.allow_listed_only and not listed:
            return f"{address} is not on the operator's allow-list"
        if not listed and not self.allow_private and not is_global(address):
            kind = "a loopback address" if any(a.is_loopback for a in readings) else "a private address"
            return f"{address} is {kind}, and this requester may not reach private networks"
        return None

    def for_agent(self, agent: ResolvedAgent) -> EgressPolicy:
        """The policy for one agent: a public agent's card may not lead into private networks (it has no
        business there, and the card is the agent's to write), whatever the requester may reach."""
        return replace(self, allow_private=False) if agent.public and self.allow_private else self

    def url_refusal(self, url: str) -> str | None:
        """What is known of `url` without resolving it: its shape, a literal address, a denied host name."""
        problem = url_problem(url)
        if problem is not None:
            return problem
        host = urlsplit(url).hostname or ""
        literal = _literal_address(host)
        return self.refusal(host, [literal] if literal is not None else [])


def parse_destinations(entries: Iterable[str]) -> tuple[tuple[IPNetwork, ...], tuple[str, ...]]:
    """Split operator list entries into networks and host-name patterns; raise ValueError on a bad one."""
    networks: list[IPNetwork] = []
    hosts: list[str] = []
    for entry in entries:
        text = entry.strip().lower()
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
            continue
        except ValueError:
            pass
        name = text.lstrip(".")
        labels = name.split(".")
        if not name or not all(label and label.replace("-", "").isalnum() for label in labels):
            raise ValueError(f"{entry!r} is neither a network (10.0.0.0/8) nor a host name (.example.com)")
        hosts.append(text)
    return tuple(networks), tuple(hosts)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The host's addresses (a literal address is returned as is, without a DNS query), in resolver order."""
    literal = _literal_address(host)
    if literal is not None:
        return [literal]
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


@dataclass(frozen=True)
class ResolvedAgent:
    """Where an agent URL leads, as far as the engine's bookkeeping is concerned."""

    key: str
    """`address:port`, the same for every spelling of the agent (`localhost`, `127.0.0.1`,
    `[::ffff:127.0.0.1]`): the key of the per-agent concurrency cap. The URL's own host when it does not
    resolve (its trials fail anyway)."""
    public: bool
    """Every address is globally routable."""


async def resolve_agent(url: str, resolver: Resolver | None = None) -> ResolvedAgent:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = list(await (resolver or resolve)(host, port))
    except OSError:
        addresses = []
    if not addresses:
        return ResolvedAgent(key=f"{_normal_host(host)}:{port}", public=False)
    canonical = min((_canonical(a) for a in addresses), key=lambda a: (a.version, int(a)))
    key = f"{canonical}:{port}" if canonical.version == 4 else f"[{canonical}]:{port}"
    return ResolvedAgent(key=key, public=all(is_global(a) for a in addresses))


async def agent_address(url: str, resolver: Resolver | None = None) -> str:
    return (await resolve_agent(url, resolver)).key


Dial = Callable[[str], Awaitable[T]]
"""Opens a connection to one address (given as text) that the policy has judged."""


class EgressConnector:
    """Where every connection to an agent is made: the host resolved here, every address judged by the
    policy, the connection made to a judged address (the first that answers, in resolver order)."""

    def __init__(self, policy: EgressPolicy, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self._resolve = resolver or resolve

    async def judged_addresses(self, host: str, port: int) -> Sequence[IPAddress]:
        """The host's addresses, every one judged by the policy. Raises `AgentEgressError` when the policy
        refuses any of them, httpx's `ConnectError` when the name does not resolve."""
        try:
            addresses = await self._resolve(host, port)
        except OSError as exc:
            raise httpx.ConnectError(UNREACHABLE) from exc
        if not addresses:
            raise httpx.ConnectError(UNREACHABLE)
        reason = self.policy.refusal(host, addresses)
        if reason is not None:
            raise AgentEgressError(f"the service may not connect to {_normal_host(host)}: {reason}")
        return addresses

    async def connect(self, host: str, port: int, dial: Dial[T]) -> T:
        """`dial(address)` for the first judged address that accepts. Raises `AgentEgressError` (nothing
        dialled) when the policy refuses any address, httpx's `ConnectError` when none can be reached."""
        addresses = await self.judged_addresses(host, port)
        last: Exception | None = None
        for address in addresses:
            try:
                return await dial(str(address))
            except OSError as exc:
                last = exc
        raise httpx.ConnectError(str(last) or UNREACHABLE) from last


def egress_refusal_in(exc: BaseException | None) -> AgentEgressError | None:
    """The egress refusal behind a library exception, if there is one (httpx and the SDK wrap it)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, AgentEgressError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
