"""Egress policy: what the service may connect to, checked on resolved addresses at connect time.

Host names are resolved by an injected resolver (a table, no network); the agents are real A2A servers on
loopback. Addresses that must never be connected to (169.254.169.254) are never bound: the test proves the
backend refused before asking the network layer."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.applications import Starlette

from green_agent import AssessmentConfig, Engine, EngineSettings
from green_agent.config import ConfigError, TaskSelection
from green_agent.core.errors import AgentEgressError, AgentNotReachedError
from green_agent.core.models import TrialResult
from green_agent.reference_agents import serve_app
from green_agent.white_agent.egress import (
    EgressConnector,
    EgressPolicy,
    IPAddress,
    ResolvedAgent,
    agent_address,
    url_problem,
)
from retail_domain import RetailData
from tests.engine.conftest import Collector
from tests.support.agents import ConcurrencyProbe, FunctionExecutor, answer_done, serve_agent

ONE = TaskSelection(task_ids=["0"])
NO_PRIVATE = EgressPolicy(allow_private=False)


def ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text)


class TableResolver:
    """DNS for tests: each name maps to a list of answers, one per lookup (the last one repeats)."""

    def __init__(self, table: dict[str, list[list[str]]]) -> None:
        self.table = table
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[IPAddress]:
        self.lookups.append(host)
        with contextlib.suppress(ValueError):
            return [ipaddress.ip_address(host)]
        answers = self.table.get(host)
        if answers is None:
            raise OSError(f"{host} does not resolve")
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return [ip(a) for a in answer]


class RecordingDial:
    """Stands in for the network below the policy: records every address it is asked to dial, opens none."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    async def __call__(self, address: str) -> Any:
        self.attempts.append(address)
        raise ConnectionRefusedError("recorded, not connected")


@contextlib.asynccontextmanager
async def engine(
    data: RetailData, resolver: TableResolver | None = None, **settings: Any
) -> AsyncIterator[Engine]:
    async with Engine(EngineSettings(**settings), data, resolver=resolver) as opened:
        yield opened


async def first_trial(opened: Engine, config: AssessmentConfig, **kwargs: Any) -> TrialResult:
    collector = Collector()
    await opened.run(config, on_event=collector, **kwargs)
    return collector.results[0]


async def not_reached(opened: Engine, config: AssessmentConfig) -> str:
    """The message of the failed assessment: an agent not reached at the start fails it as a whole."""
    return str(await not_reached_error(opened, config))


async def not_reached_error(opened: Engine, config: AssessmentConfig) -> AgentNotReachedError:
    with pytest.raises(AgentNotReachedError) as raised:
        await opened.run(config)
    return raised.value


# -- the rules --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "what"),
    [
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("::ffff:169.254.169.254", "metadata"),  # IPv4-mapped
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
    ],
)
def test_never_reachable_even_when_private_networks_are_allowed(address: str, what: str) -> None:
    open_policy = EgressPolicy(allow_private=True, allow_networks=(ipaddress.ip_network("::/0"),))
    reason = open_policy.refusal("agent.test", [ip(address)])
    assert reason is not None and what in reason


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "fd12::1"])
def test_loopback_and_private_depend_on_the_requester(address: str) -> None:
    assert EgressPolicy(allow_private=True).refusal("agent.test", [ip(address)]) is None
    reason = NO_PRIVATE.refusal("agent.test", [ip(address)])
    assert reason is not None and "may not reach private networks" in reason
    assert NO_PRIVATE.refusal("agent.test", [ip("93.184.216.34")]) is None


def test_one_refused_address_refuses_the_name() -> None:
    reason = NO_PRIVATE.refusal("agent.test", [ip("93.184.216.34"), ip("127.0.0.1")])
    assert reason is not None and "127.0.0.1" in reason


def test_operator_lists() -> None:
    policy = EgressPolicy.from_lists(
        allow=["10.1.0.0/16", "agents.corp", ".lab.corp"],
        deny=["93.184.0.0/16", "bad.example"],
        allow_private=False,
    )
    assert policy.refusal("x.test", [ip("10.1.9.9")]) is None  # allow-listed private network
    assert policy.refusal("agents.corp", [ip("10.200.0.1")]) is None  # allow-listed host name
    assert policy.refusal("a.lab.corp", [ip("192.168.0.1")]) is None  # allow-listed subdomain
    assert "may not reach private" in (policy.refusal("other.corp", [ip("10.200.0.1")]) or "")
    assert "deny-list" in (policy.refusal("x.test", [ip("93.184.216.34")]) or "")
    assert "deny-list" in (policy.refusal("BAD.example.", [ip("8.8.8.8")]) or "")
    # the allow-list never opens what is never reachable
    assert "metadata" in (policy.refusal("agents.corp", [ip("169.254.169.254")]) or "")
    only = EgressPolicy.from_lists(allow=["agents.corp"], allow_listed_only=True)
    assert only.refusal("agents.corp", [ip("8.8.8.8")]) is None
    assert "not on the operator's allow-list" in (only.refusal("elsewhere.example", [ip("8.8.8.8")]) or "")
    with pytest.raises(ValueError, match="neither a network"):
        EgressPolicy.from_lists(deny=["not a host!"])


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://user:pw@agent.test/", "user name or password"),
        ("http://token@agent.test/", "user name or password"),
        ("ftp://agent.test/", "only http:// or https://"),
        ("file:///etc/passwd", "only http:// or https://"),
        ("http:///nohost", "no host"),
        ("http://agent.test:99999/", "not a valid URL"),
    ],
)
def test_url_shape(url: str, problem: str) -> None:
    assert problem in (url_problem(url) or "")
    with pytest.raises(ValidationError, match="agent_url is refused"):
        AssessmentConfig(agent_url=url)


def test_literal_addresses_are_judged_before_any_connection() -> None:
    assert "metadata" in (NO_PRIVATE.url_refusal("http://169.254.169.254/latest/meta-data/") or "")
    assert "metadata" in (EgressPolicy().url_refusal("http://[fd00:ec2::254]/") or "")
    assert "loopback" in (NO_PRIVATE.url_refusal("http://127.0.0.1:9700/admin") or "")
    assert NO_PRIVATE.url_refusal("http://agent.test/") is None  # a name: judged when it is resolved


# -- at connect time --------------------------------------------------------------------------------------


async def test_metadata_address_is_refused_without_a_connection_attempt() -> None:
    resolver = TableResolver({"metadata.test": [["169.254.169.254"]]})
    connector = EgressConnector(EgressPolicy(allow_private=True), resolver)
    network = RecordingDial()
    for host in ("169.254.169.254", "metadata.test"):
        with pytest.raises(AgentEgressError, match="metadata"):
            await connector.connect(host, 80, network)
    assert network.attempts == []
    # the same connector does dial an allowed address (the recorder is not blind)
    with pytest.raises(httpx.ConnectError):
        await connector.connect("127.0.0.1", 9, network)
    assert network.attempts == ["127.0.0.1"]


async def test_metadata_agent_url_fails_the_assessment(data: RetailData) -> None:
    async with engine(data) as opened:
        with pytest.raises(AgentEgressError, match="metadata"):
            await opened.run(
                AssessmentConfig(agent_url="http://169.254.169.254/latest/meta-data/", tasks=ONE)
            )


async def test_host_name_resolving_to_link_local_is_refused(data: RetailData) -> None:
    resolver = TableResolver({"sneaky.test": [["169.254.10.20"]]})
    async with engine(data, resolver) as opened:
        with pytest.raises(AgentEgressError, match=r"sneaky\.test: 169\.254\.10\.20 is link-local"):
            await opened.run(AssessmentConfig(agent_url="http://sneaky.test:8080/", tasks=ONE))
    assert "sneaky.test" in resolver.lookups


async def test_card_advertising_loopback_is_refused_when_loopback_is(data: RetailData) -> None:
    """The agent is reached by an allow-listed name; its card sends the service to 127.0.0.1 (the report's
    `/admin/delete-everything` case): refused before any message is sent."""
    executor = FunctionExecutor(answer_done)
    async with serve_agent(executor, advertise=lambda url: url + "admin/delete-everything?confirm=1") as (
        _,
        port,
        recorder,
    ):
        resolver = TableResolver({"agent.test": [["127.0.0.1"]]})
        policy = EgressPolicy.from_lists(allow=["agent.test"], allow_private=False)
        async with engine(data, resolver) as opened:
            with pytest.raises(AgentEgressError, match=r"advertises the endpoint .*127\.0\.0\.1.*loopback"):
                await opened.run(
                    AssessmentConfig(agent_url=f"http://agent.test:{port}/", tasks=ONE), egress=policy
                )
    assert executor.received == []
    assert all(not seen.get("content-length") for seen in recorder.seen)  # only the card was fetched (GET)


@pytest.mark.parametrize("tail", ["\r\nX-Injected: 1", "\u202egnp.exe", "\tx"])
async def test_card_advertising_an_endpoint_with_control_or_bidi_characters_is_refused(
    data: RetailData, tail: str
) -> None:
    """An endpoint the agent writes is checked like a requester's agent URL (issue 37): `urlsplit` would drop
    the CR, LF and TAB and connect; the refusal quotes the endpoint escaped, on one line."""
    executor = FunctionExecutor(answer_done)
    async with (
        serve_agent(executor, advertise=lambda url: url + tail) as (url, _port, _recorder),
        engine(data) as opened,
    ):
        with pytest.raises(
            AgentEgressError, match=r"advertises the endpoint .*, refused: the URL holds"
        ) as e:
            await opened.run(AssessmentConfig(agent_url=url, tasks=ONE))
    assert str(e.value).isprintable(), str(e.value)
    assert executor.received == []


async def test_card_advertising_a_name_that_resolves_to_loopback_is_refused_at_connect_time(
    data: RetailData,
) -> None:
    executor = FunctionExecutor(answer_done)
    async with serve_agent(executor, advertise=lambda url: url.replace("127.0.0.1", "inside.test")) as (
        _,
        port,
        _r,
    ):
        resolver = TableResolver({"agent.test": [["127.0.0.1"]], "inside.test": [["127.0.0.1"]]})
        policy = EgressPolicy.from_lists(allow=["agent.test"], allow_private=False)
        async with engine(data, resolver) as opened:
            trial = await first_trial(
                opened, AssessmentConfig(agent_url=f"http://agent.test:{port}/", tasks=ONE), egress=policy
            )
    error = trial.error or ""
    assert "AgentEgressError" in error and "inside.test: 127.0.0.1 is a loopback address" in error
    assert trial.reward == 0
    assert executor.received == []


async def test_dns_rebinding_is_refused_at_connect_time(data: RetailData) -> None:
    """The name resolves to the agent for the card, then to the metadata address: the conversation's new
    connection is checked again and refused; nothing reaches 169.254.169.254."""
    executor = FunctionExecutor(answer_done)
    async with serve_agent(executor, advertise=lambda url: url.replace("127.0.0.1", "rebind.test")) as (
        _,
        port,
        _r,
    ):
        # looked up by the engine (the per-agent key), for the card, then for the conversation
        resolver = TableResolver({"rebind.test": [["127.0.0.1"], ["127.0.0.1"], ["169.254.169.254"]]})
        async with engine(data, resolver) as opened:
            trial = await first_trial(
                opened, AssessmentConfig(agent_url=f"http://rebind.test:{port}/", tasks=ONE)
            )
    assert resolver.lookups.count("rebind.test") >= 3
    error = trial.error or ""
    assert "AgentEgressError" in error and "169.254.169.254 is a cloud metadata address" in error
    assert executor.received == []


async def test_a_public_agent_may_not_lead_into_private_networks(data: RetailData) -> None:
    """Even where the requester may reach private networks: a name that is public when the assessment starts
    and loopback when the card is fetched is refused (the agent has no business on our network)."""
    executor = FunctionExecutor(answer_done)
    async with serve_agent(executor) as (_, port, _r):
        resolver = TableResolver({"public.test": [["93.184.216.34"], ["127.0.0.1"]]})
        async with engine(data, resolver) as opened:
            with pytest.raises(AgentEgressError, match=r"127\.0\.0\.1 is a loopback address"):
                await opened.run(AssessmentConfig(agent_url=f"http://public.test:{port}/", tasks=ONE))
    assert executor.received == []
    public, private = (
        ResolvedAgent("93.184.216.34:80", public=True),
        ResolvedAgent("10.0.0.1:80", public=False),
    )
    assert EgressPolicy().for_agent(public).allow_private is False
    assert EgressPolicy().for_agent(private) == EgressPolicy()


async def test_policies_do_not_share_connections(data: RetailData) -> None:
    """An agent reached under an open policy is refused under a stricter one in the same engine."""
    executor = FunctionExecutor(answer_done)
    async with serve_agent(executor) as (url, _, _r), engine(data) as opened:
        trial = await first_trial(opened, AssessmentConfig(agent_url=url, tasks=ONE))
        assert trial.error is None
        with pytest.raises(AgentEgressError, match="loopback"):
            await opened.run(AssessmentConfig(agent_url=url, tasks=ONE), egress=NO_PRIVATE)


# -- errors that do not tell port states apart -----------------------------------------------------------


@contextlib.asynccontextmanager
async def tcp_server(
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any],
) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def banner_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"SSH-2.0-OpenSSH_9.6\r\n")  # an open port that does not speak HTTP
    await writer.drain()
    writer.close()


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def port_states() -> AsyncIterator[dict[str, int]]:
    """A closed port, an open HTTP port that is not an A2A agent, an open port that is not HTTP."""
    async with (
        tcp_server(banner_then_close) as not_http,
        serve_app(lambda url: Starlette()) as plain_http,  # answers 404 to everything
    ):
        yield {
            "closed": closed_port(),
            "http": int(plain_http.rstrip("/").rsplit(":", 1)[1]),
            "not_http": not_http,
        }


async def test_agent_url_errors_read_the_same_whatever_the_port_state(data: RetailData) -> None:
    errors: dict[str, str] = {}
    details: dict[str, str] = {}
    seconds: dict[str, float] = {}
    async with port_states() as ports, engine(data) as opened:
        for state, port in ports.items():
            begin = time.monotonic()
            config = AssessmentConfig(agent_url=f"http://127.0.0.1:{port}", tasks=ONE)
            error = await not_reached_error(opened, config)
            seconds[state] = time.monotonic() - begin
            errors[state] = str(error).replace(str(port), "PORT")
            details[state] = error.detailed.replace(str(port), "PORT")
    assert len(set(errors.values())) == 1, errors
    assert "could not be reached: no A2A agent card was served there." in errors["closed"]
    # Only the operator's reading tells them apart (api/runtime/service.py gives it to `green-agent run`).
    assert len(set(details.values())) == 3 and "connection refused" in details["closed"], details
    # Nor does the time: each waits out the same retry schedule (1.75 s). A loose bound, not a benchmark.
    assert max(seconds.values()) < 3 * min(seconds.values()), seconds


async def test_card_endpoint_errors_read_the_same_whatever_the_port_state(data: RetailData) -> None:
    """A card may send the service to another port: what happens there is not told apart either."""
    errors: dict[str, str] = {}
    seconds: dict[str, float] = {}
    async with port_states() as ports, engine(data) as opened:
        for state, port in ports.items():
            executor = FunctionExecutor(answer_done)
            advertised = f"http://127.0.0.1:{port}/"

            def elsewhere(own_url: str, target: str = advertised) -> str:
                return target

            async with serve_agent(executor, advertise=elsewhere) as (url, _, _r):
                begin = time.monotonic()
                message = await not_reached(opened, AssessmentConfig(agent_url=url, tasks=ONE))
                seconds[state] = time.monotonic() - begin
            errors[state] = message.replace(url.rstrip("/"), "AGENT").replace(str(port), "PORT")
    assert len(set(errors.values())) == 1, errors
    assert "no message could be delivered to the address it advertises" in errors["closed"]
    assert max(seconds.values()) < 3 * min(seconds.values()), seconds


# -- per-agent cap by address, agent headers --------------------------------------------------------------


async def test_two_spellings_of_one_agent_share_one_cap(data: RetailData) -> None:
    probe = ConcurrencyProbe()
    tasks = TaskSelection(split="test", num_tasks=8)
    async with serve_agent(FunctionExecutor(probe)) as (_, port, _r):
        spellings = [
            f"http://127.0.0.1:{port}",
            f"http://localhost:{port}",
            f"http://[::ffff:127.0.0.1]:{port}",
        ]
        assert len({await agent_address(url) for url in spellings}) == 1
        async with engine(data, max_concurrent_per_agent=2) as opened:
            await asyncio.gather(
                *(
                    opened.run(AssessmentConfig(agent_url=url, tasks=tasks, concurrency=4))
                    for url in spellings
                )
            )
    assert probe.peak == 2


async def test_agent_headers_reach_the_agent_and_only_the_agent(data: RetailData) -> None:
    secret = "Bearer white-agent-secret-7f3a"
    async with serve_agent(FunctionExecutor(answer_done)) as (url, _, recorder), engine(data) as opened:
        config = AssessmentConfig(
            agent_url=url, tasks=ONE, agent_headers={"Authorization": secret, "X-Team": "t1"}
        )
        assert secret not in repr(config) and secret not in config.model_dump_json()
        collector = Collector()
        report = await opened.run(config, on_event=collector)
    card_requests = [seen for seen in recorder.seen if not seen.get("content-length")]
    message_requests = [seen for seen in recorder.seen if seen.get("content-length")]
    assert card_requests and message_requests
    assert all(seen.get("authorization") == secret and seen.get("x-team") == "t1" for seen in recorder.seen)
    assert secret not in report.model_dump_json()
    assert collector.results[0].transcript  # the trial ran: there is a transcript to search
    assert all(secret not in event.model_dump_json() for event in collector.events)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Bad Name": "x"}, "not a valid HTTP header name"),
        ({"X-Token": "a\r\nX-Injected: 1"}, "line break or control character"),
        ({"Host": "elsewhere"}, "set by the HTTP client"),
    ],
)
def test_agent_header_syntax(headers: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as raised:
        AssessmentConfig(agent_url="http://agent.test", agent_headers=headers)
    assert "\r\n" not in str(raised.value)


async def test_agent_header_bounds(data: RetailData) -> None:
    async with engine(data, max_agent_headers=2, max_agent_header_bytes=40) as opened:
        at_limit = {"A": "1", "B": "x" * 37}  # 2 headers, 40 bytes
        opened.validate(AssessmentConfig(agent_url="http://agent.test", tasks=ONE, agent_headers=at_limit))
        with pytest.raises(ConfigError, match="at most 2"):
            opened.validate(
                AssessmentConfig(
                    agent_url="http://agent.test", tasks=ONE, agent_headers={"A": "", "B": "", "C": ""}
                )
            )
        with pytest.raises(ConfigError, match=r"41 bytes .* at most 40"):
            opened.validate(
                AssessmentConfig(
                    agent_url="http://agent.test", tasks=ONE, agent_headers={"A": "1", "B": "x" * 38}
                )
            )
