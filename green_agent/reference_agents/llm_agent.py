"""The `llm` reference white agent: a plain tool-calling agent on any OpenAI-compatible endpoint.

It lets an operator assess a real model with no agent code of their own. It declares the structured dialect
(tools arrive as schemas, calls leave as DataParts); spoken to in the text dialect, it passes the green
agent's text to the model as it is and returns the model's text, which the instructions ask to be JSON.

Two ways to get tool calls out of the model (`ToolCallMode`):
* `native`: the request carries `tools` and the endpoint returns `tool_calls` (OpenAI, vLLM, ...).
* `json_schema`: for models and servers without native tool calling (the bundled 135M model under llama.cpp):
  every request carries a `json_schema` response format whose alternatives are "say this to the customer" or
  "call tool X with arguments matching X's own parameter schema", so the reply is always one well-formed
  action; tool results go back as user-role text.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue

from green_agent.conversation.orchestrator import TRIAL_SEED_KEY
from green_agent.llm.client import ChatLLM
from green_agent.reference_agents.replies import Incoming, agent_message

SYSTEM_PROMPT = (
    "You are a customer-service agent for an online retail store. Follow the policy below exactly. In each "
    "turn either write to the customer or call tools, not both.\n\n<policy>\n{policy}\n</policy>"
)
_MAX_SESSIONS = 10_000

ToolCallMode = Literal["native", "json_schema"]
MESSAGE_MAX_CHARS = 600
"""Longest message to the customer a schema-constrained action may hold."""
JSON_ACTIONS_PROMPT = (
    "\n\nYou act by answering with one JSON object, nothing else: either "
    '{{"action": "respond", "message": "<your message to the customer>"}} or '
    '{{"action": "call", "name": "<tool name>", "arguments": {{...}}}}. Tools:\n{tools}'
)


def tool_list(tools: list[dict[str, Any]]) -> str:
    """One line per tool: name, description and argument names (the schema itself constrains the values)."""
    lines = []
    for tool in tools:
        function = tool.get("function", tool)
        arguments = ", ".join((function.get("parameters") or {}).get("properties") or {})
        lines.append(f"- {function.get('name')}({arguments}): {function.get('description', '')}")
    return "\n".join(lines)


def actions_response_format(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A `json_schema` response format: respond to the customer, or call one of `tools` with arguments that
    match that tool's parameter schema."""
    respond = {
        "type": "object",
        # Bounded, so that a small model's rambling ends inside the JSON, not cut off by max_tokens.
        "properties": {
            "action": {"const": "respond"},
            "message": {"type": "string", "maxLength": MESSAGE_MAX_CHARS},
        },
        "required": ["action", "message"],
    }
    calls = []
    for tool in tools:
        function = tool.get("function", tool)
        calls.append(
            {
                "type": "object",
                "properties": {
                    "action": {"const": "call"},
                    "name": {"const": function.get("name")},
                    "arguments": function.get("parameters") or {"type": "object"},
                },
                "required": ["action", "name", "arguments"],
            }
        )
    schema = {"anyOf": [respond, *calls]}
    return {"type": "json_schema", "json_schema": {"name": "agent_action", "schema": schema}}


def parse_action(text: str) -> tuple[str, dict[str, Any]] | str:
    """A schema-constrained reply as `(tool name, arguments)` or the message text. A reply that is not the
    promised JSON (an endpoint that ignored the schema) is passed on as text, as a plain agent would."""
    try:
        action = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(action, dict):
        return text
    if action.get("action") == "call" and isinstance(action.get("name"), str):
        arguments = action.get("arguments")
        return action["name"], arguments if isinstance(arguments, dict) else {}
    message = action.get("message")
    return message if isinstance(message, str) else text


@dataclass
class _Session:
    structured: bool
    tools: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


class LLMAgentExecutor(AgentExecutor):
    def __init__(self, llm: ChatLLM, tool_calls: ToolCallMode = "native") -> None:
        self._llm = llm
        self._tool_calls = tool_calls
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def _session(self, context_id: str, incoming: Incoming) -> _Session:
        session = self._sessions.get(context_id)
        if session is None:
            start = incoming.frame("session_start")
            session = _Session(structured=start is not None)
            if start is not None:
                session.tools = list(start.get("tools") or [])
                policy = str(start.get("policy", ""))
                system = SYSTEM_PROMPT.format(policy=policy)
                if self._tool_calls == "json_schema":
                    system += JSON_ACTIONS_PROMPT.format(tools=tool_list(session.tools))
                session.messages.append({"role": "system", "content": system})
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
                session.messages.append(self._tool_result(item))
        if incoming.text:
            session.messages.append({"role": "user", "content": incoming.text})

        seed = incoming.metadata.get(TRIAL_SEED_KEY)
        if self._tool_calls == "json_schema" and session.structured:
            parts = await self._schema_turn(session, seed)
            await event_queue.enqueue_event(agent_message(parts, context.context_id))
            return
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

    def _tool_result(self, item: dict[str, Any]) -> dict[str, Any]:
        if self._tool_calls == "json_schema":  # no tool role without native tool calling
            return {"role": "user", "content": f"Tool result: {item.get('content')}"}
        return {"role": "tool", "tool_call_id": item.get("tool_call_id"), "content": item.get("content")}

    async def _schema_turn(self, session: _Session, seed: Any) -> list[Any]:
        reply = await self._llm.complete(
            session.messages,
            seed=int(seed) if seed is not None else None,
            response_format=actions_response_format(session.tools),
        )
        text = reply.content or ""
        session.messages.append({"role": "assistant", "content": text})
        action = parse_action(text)
        if isinstance(action, str):
            return [new_text_part(action)]
        name, arguments = action
        return [new_data_part({"tool_calls": [{"name": name, "arguments": arguments}]})]

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None
