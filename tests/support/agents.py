"""Helpers to serve ad-hoc white agents (custom executors) over real loopback A2A, for tests."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from domain_kit import DomainData
from green_agent.conversation.orchestrator import TRIAL_SEED_KEY
from green_agent.reference_agents import agent_card, build_agent_app, serve_app
from green_agent.reference_agents.oracle import _TASK_NAMED, OracleExecutor, _Session
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts
from retail_domain import WRITE_TOOLS, RetailData

Reply = Callable[[Incoming, RequestContext, EventQueue], Awaitable[None]]


class FunctionExecutor(AgentExecutor):
    """An executor whose behaviour is one async function of the incoming message (tests write it inline)."""

    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self.received: list[Incoming] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        incoming = Incoming.of(context.message)
        self.received.append(incoming)
        await self._reply(incoming, context, event_queue)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@contextlib.asynccontextmanager
async def serve_executor(
    executor: AgentExecutor,
    *,
    structured: bool = False,
    protocol_version: str = "1.0",
    name: str = "test-agent",
) -> AsyncIterator[str]:
    """Serve any executor as an A2A agent on loopback (its card named `name`); yields its base URL."""

    def app_for(url: str) -> Starlette:
        card = agent_card(
            name=name,
            description="a white agent written by a test",
            url=url,
            structured=structured,
            protocol_version=protocol_version,
        )
        return build_agent_app(executor, card=card)

    async with serve_app(app_for) as url:
        yield url


class HeaderRecorder:
    """ASGI middleware keeping the headers of every request (what the agent really received)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


class ConcurrencyProbe:
    """A reply function that answers after `delay_s` and keeps the peak number of messages handled at once
    (how many trials the engine let run against this agent)."""

    def __init__(self, delay_s: float = 0.05) -> None:
        self.delay_s = delay_s
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        await queue.enqueue_event(agent_message(text_parts(False, "Done."), context.context_id))


async def answer_done(incoming: Incoming, context: RequestContext, queue: EventQueue) -> None:
    """A white agent that answers every message with the same short text."""
    await queue.enqueue_event(agent_message(text_parts(False, "###STOP###"), context.context_id))


@contextlib.asynccontextmanager
async def serve_agent(
    executor: AgentExecutor, *, advertise: Callable[[str], str] = lambda url: url
) -> AsyncIterator[tuple[str, int, HeaderRecorder]]:
    """A real A2A agent on loopback whose card advertises `advertise(own_url)` as its endpoint (a test of
    where a card may send the service); yields its URL, its port and the headers it received."""
    recorders: list[HeaderRecorder] = []

    def app_for(url: str) -> Starlette:
        card = agent_card(
            name="test-agent", description="a white agent written by a test", url=advertise(url)
        )
        recorder = HeaderRecorder(build_agent_app(executor, card=card))
        recorders.append(recorder)
        return recorder  # type: ignore[return-value]

    async with serve_app(app_for) as url:
        yield url, int(url.rstrip("/").rsplit(":", 1)[1]), recorders[0]


HOSTILE_TEXT = (
    '<script>window.__pwned = "script"</script><img src="x" onerror="window.__pwned = \'img\'">'
    "<b>bold?</b> All done!"
)
"""What a hostile white agent says: if any UI ever renders it as HTML, `window.__pwned` gets set."""


class SloppyExecutor(AgentExecutor):
    """A white agent that fails the DB check in a way worth debugging (text dialect, scripted customer).

    It looks up an order id that does not exist (an error result), performs the task's gold actions except the
    last write (so the final DB differs from gold in the fields that write changes), then answers the customer
    with `HOSTILE_TEXT` as bare text, not in the text dialect's JSON (a protocol warning). On the tasks in
    `complete_tasks` it performs every gold action (its DB check passes)."""

    def __init__(self, data: DomainData, complete_tasks: frozenset[str] = frozenset()) -> None:
        self._data = data
        self._complete = complete_tasks
        self._plans: dict[str, list[tuple[str, dict[str, Any]] | None]] = {}

    def _plan(self, task_id: str) -> list[tuple[str, dict[str, Any]] | None]:
        actions = list(self._data.tasks[task_id].gold_actions)
        writes = [i for i, a in enumerate(actions) if a.name in self._data.write_tools]
        if writes and task_id not in self._complete:
            del actions[writes[-1]]
        bogus: tuple[str, dict[str, Any]] = ("get_order_details", {"order_id": "#W0000000"})
        return [bogus, *((a.name, copy.deepcopy(a.arguments)) for a in actions), None]

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        incoming = Incoming.of(context.message)
        context_id = context.context_id or ""
        if context_id not in self._plans:
            match = re.search(r"scripted customer for task ([^\s.]+)", incoming.text)
            self._plans[context_id] = self._plan(match.group(1)) if match else [None]
        plan = self._plans[context_id]
        step = plan.pop(0) if plan else None
        parts = [new_text_part(HOSTILE_TEXT)] if step is None else call_parts(False, *step)
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class BuggyExecutor(SloppyExecutor):
    """A white agent with the bugs a vendor hunts, one per task (text dialect, scripted customer): on each
    task named in `bugs` it makes the gold calls with that bug, on any other task the gold calls as they are.

    * `skip_write`: leaves out the last gold write (a missing action);
    * `wrong_payment`: sends the last gold write with a payment method the user does not have;
    * `extra_write`: makes the gold calls, then changes the user's address (a write the task did not want);
    * `loop`: looks the user up again and again until the step limit ends the trial.

    `bugs` may be changed between assessments (a vendor fixing one)."""

    def __init__(self, data: RetailData, bugs: dict[str, str]) -> None:
        super().__init__(data)
        self.bugs = bugs

    def _plan(self, task_id: str) -> list[tuple[str, dict[str, Any]] | None]:
        actions = [(a.name, copy.deepcopy(a.arguments)) for a in self._data.tasks[task_id].gold_actions]
        writes = [i for i, (name, _) in enumerate(actions) if name in WRITE_TOOLS]
        user = next((args["user_id"] for _, args in actions if "user_id" in args), "nobody")
        bug = self.bugs.get(task_id)
        if bug == "skip_write" and writes:
            del actions[writes[-1]]
        elif bug == "wrong_payment" and writes:
            actions[writes[-1]][1]["payment_method_id"] = "gift_card_0000000"
        elif bug == "extra_write":
            address = {"address1": "1 Nowhere Road", "address2": "", "city": "Austin", "state": "TX"}
            actions.append(
                ("modify_user_address", {"user_id": user, **address, "country": "USA", "zip": "78701"})
            )
        elif bug == "loop":
            return [("get_user_details", {"user_id": user})] * 10_000
        return [*actions, None]


class FlakyOracle(OracleExecutor):
    """The oracle, except that in a fixed share of trials it does nothing and closes (its DB check fails).

    Which trials fail is a pure function of (`salt`, task, trial seed), so a test can compute the expected
    numbers from `fails` alone; two salts are two runs of one flaky agent."""

    def __init__(self, data: RetailData, *, failure_rate: float, salt: str) -> None:
        super().__init__(data)
        self.failure_rate = failure_rate
        self.salt = salt

    def fails(self, task_id: str, seed: int) -> bool:
        digest = hashlib.sha256(f"{self.salt}/{task_id}/{seed}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.failure_rate

    def _session(self, context_id: str, incoming: Incoming) -> _Session | None:
        new = context_id not in self._sessions
        session = super()._session(context_id, incoming)
        named = _TASK_NAMED.search(incoming.text)
        seed = int(incoming.metadata.get(TRIAL_SEED_KEY, -1))  # JSON-over-protobuf makes it a float
        if new and session is not None and named is not None and self.fails(named.group(1), seed):
            session.actions = ()
        return session
