"""The oracle white agent: replays the task's gold actions, one per turn, then says a short closing text
that states every fact the task wants communicated (its `communicate_info`, which airline scores).

It learns the domain and the task from the scripted customer's opening line, which names both, or, in the
demo with a model-played customer, from the message metadata the demo's engine adds (`TASK_ID_KEY` and
`DOMAIN_KEY`, never sent otherwise). It serves every domain: one it was not built with is loaded through the
registry on first use.

In dual control (telecom, mock) some gold actions are the customer's own: where a run of them is due, the
oracle hands over with `HANDOVER_TEXT` instead of calling (it has no such tools), and the scripted customer,
which follows the same gold list, performs that run before it answers.

Told nothing, it apologizes and calls nothing. Told by metadata, it ends the conversation itself once the
actions are done (`###STOP###` after its closing text): a small model playing the customer may never stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import re
from collections import OrderedDict
from dataclasses import dataclass

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue

from domain_kit import DomainData, GoldAction
from green_agent.conversation.orchestrator import AGENT_STOP_TOKEN, DOMAIN_KEY, TASK_ID_KEY
from green_agent.domains import DEFAULT_DOMAIN, UnknownDomainError, load_domain
from green_agent.reference_agents.replies import Incoming, agent_message, call_parts, text_parts

_TASK_NAMED = re.compile(r"scripted customer for task ([^\s.]+)(?: of the (\w+) domain)?")
_MAX_SESSIONS = 50_000
DONE_TEXT = "All done: everything you asked for has been taken care of. Is there anything else?"
UNKNOWN_TEXT = "Sorry, I can only serve the scripted customer, who tells me the task number."
HANDOVER_TEXT = "Please do the next steps on your side, then tell me when you are done."


@dataclass
class _Session:
    actions: tuple[GoldAction, ...]
    facts: tuple[str, ...]
    structured: bool
    next_action: int = 0
    stops: bool = False


def named_task(incoming: Incoming) -> tuple[str, str, re.Match[str] | None]:
    """The task id and domain the customer named (the scripted customer's opening line, or the demo's
    metadata), and the opening line's match (None: told by metadata)."""
    match = _TASK_NAMED.search(incoming.text)
    if match is not None:
        return match.group(1), match.group(2) or DEFAULT_DOMAIN, match
    task_id = str(incoming.metadata.get(TASK_ID_KEY, ""))
    return task_id, str(incoming.metadata.get(DOMAIN_KEY, DEFAULT_DOMAIN)), None


class OracleExecutor(AgentExecutor):
    def __init__(
        self, data: DomainData | None = None, delay_s: float = 0.0, *, state_facts: bool = True
    ) -> None:
        """`state_facts=False`: the closing text leaves out the task's communicate_info, so that the
        conversation holds exactly the gold calls, as the trajectory upstream's conformance runs score."""
        self._domains: dict[str, DomainData] = {data.name: data} if data is not None else {}
        self._delay_s = delay_s
        self._state_facts = state_facts
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    async def _load(self, name: str) -> None:
        """Load a domain the customer named, once, on first use, in a thread (airline parses 7 MB)."""
        if name not in self._domains:
            await asyncio.to_thread(self.load_now, name)

    def load_now(self, name: str) -> None:
        """`_load`, blocking: for callers without an event loop of their own to spare."""
        if name not in self._domains:
            # A name this service does not run is left out: the session is refused below.
            with contextlib.suppress(UnknownDomainError, KeyError):
                self._domains[name] = load_domain(name)

    def _session(self, context_id: str, incoming: Incoming) -> _Session | None:
        session = self._sessions.get(context_id)
        if session is not None:
            return session
        task_id, domain_name, match = named_task(incoming)
        domain = self._domains.get(domain_name)
        if domain is None or task_id not in domain.tasks:
            return None
        task = domain.tasks[task_id]
        session = _Session(
            actions=task.gold_actions,
            facts=task.communicate_info if self._state_facts else (),
            structured=incoming.structured,
            stops=match is None,
        )
        self._sessions[context_id] = session
        while len(self._sessions) > _MAX_SESSIONS:  # bounded memory for long-running demos
            self._sessions.popitem(last=False)
        return session

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        incoming = Incoming.of(context.message)
        context_id = context.context_id or ""
        if context_id not in self._sessions:
            await self._load(named_task(incoming)[1])
        session = self._session(context_id, incoming)
        if session is None:
            parts = text_parts(incoming.structured, UNKNOWN_TEXT)
        elif session.next_action < len(session.actions):
            action = session.actions[session.next_action]
            session.next_action += 1
            if action.requestor == "user":  # the customer's run: skip it, and hand over
                while (
                    session.next_action < len(session.actions)
                    and session.actions[session.next_action].requestor == "user"
                ):
                    session.next_action += 1
                parts = text_parts(session.structured, HANDOVER_TEXT)
            else:
                parts = call_parts(session.structured, action.name, copy.deepcopy(action.arguments))
        else:
            closing = DONE_TEXT + "".join(f" {fact}." for fact in session.facts)
            closing = f"{closing} {AGENT_STOP_TOKEN}" if session.stops else closing
            parts = text_parts(session.structured, closing)
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None
