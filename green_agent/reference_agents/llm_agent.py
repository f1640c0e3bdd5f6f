"""The `llm` reference white agent: a plain tool-calling agent on any OpenAI-compatible endpoint.

It lets an operator assess a real model with no agent code of their own. It declares the structured dialect
(tools arrive as schemas, calls leave as DataParts); spoken to in the text dialect, it passes the green
agent's text to the model as it is and returns the model's text, which the instructions ask to be JSON.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue

from green_agent.llm import ChatLLM
from green_agent.orchestrator import TRIAL_SEED_KEY
from green_agent.reference_agents.replies import Incoming, agent_message

SYSTEM_PROMPT = (
    "You are a customer-service agent for an online retail store. Follow the policy below exactly. In each "
    "turn either write to the customer or call tools, not both.\n\n<policy>\n{policy}\n</policy>"
)
_MAX_SESSIONS = 10_000


@dataclass
class _Session:
    structured: bool
    tools: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


class LLMAgentExecutor(AgentExecutor):
    def __init__(self, llm: ChatLLM) -> None:
        self._llm = llm
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def _session(self, context_id: str, incoming: Incoming) -> _Session:
        session = self._sessions.get(context_id)
        if session is None:
            start = incoming.frame("session_start")
            session = _Session(structured=start is not None)
            if start is not None:
                session.tools = list(start.get("tools") or [])
                policy = str(start.get("policy", ""))
                session.messages.append({"role": "system", "content": SYSTEM_PROMPT.format(policy=policy)})
            self._sessions[context_id] = session
            while len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return session

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        incoming = Incoming.of(context.message)
        session = self._session(context.context_id or "", incoming)
        results = incoming.frame("tool_results")
        if results is not None:
            for item in results.get("results") or []:
                session.messages.append(
                    {"role": "tool", "tool_call_id": item.get("tool_call_id"), "content": item.get("content")}
                )
        if incoming.text:
            session.messages.append({"role": "user", "content": incoming.text})

        seed = incoming.metadata.get(TRIAL_SEED_KEY)
        reply = await self._llm.complete(
            session.messages, tools=session.tools or None, seed=int(seed) if seed is not None else None
        )
        if session.structured and reply.tool_calls:
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
            session.messages.append(
                {
                    "role": "assistant",
                    "content": reply.content,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                        }
                        for c in calls
                    ],
                }
            )
            parts = [new_data_part({"tool_calls": calls})]
        else:
            text = reply.content or ""
            session.messages.append({"role": "assistant", "content": text})
            # Text dialect: the green agent's instructions asked the model for JSON; pass its text through.
            parts = [new_text_part(text)]
        await event_queue.enqueue_event(agent_message(parts, context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None
