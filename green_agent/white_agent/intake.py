"""Admitting one white-agent reply into a trial: bounds, storable strings, then the dialect's reading.

This is the one gate between what the agent sent and the rest of the engine. What comes out is bounded
(`core.limits.AgentLimits`) and storable on every database; a reply that breaks a bound on its tool
calls raises `AgentProtocolError`, which ends the trial as `agent_error` (reward 0).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from green_agent.core.errors import AgentProtocolError
from green_agent.core.limits import (
    AgentLimits,
    ValueTooLarge,
    clean_json,
    compact_json,
    cut_text,
    storable,
    utf8_size,
)
from green_agent.white_agent.client import LARGE_REPLY_BYTES, AgentReply
from green_agent.white_agent.dialect import Dialect
from green_agent.white_agent.reply_parsing import ParsedCall, ParsedReply


async def admit_reply(reply: AgentReply, dialect: Dialect, limits: AgentLimits) -> ParsedReply:
    """Read one reply under `dialect` within `limits`; raises `AgentProtocolError` past a tool-call bound.

    Its three steps (cleaning the DataParts, the dialect's reading, the bounds on each call) cost up to a few
    ms each at the bounds (e.g. a DataPart of 2,000 values holding 500 calls), so each runs in an event-loop
    callback of its own (the loop rule of `client.py`)."""
    warnings: list[str] = []
    # Small replies (the usual ones) are admitted in one callback: their steps cost far under a millisecond.
    large = bool(reply.data) or len(reply.text) > LARGE_REPLY_BYTES
    if large:
        await asyncio.sleep(0)
    try:
        # + 3: the structured dialect's envelope around arguments, {"tool_calls": [{"arguments": ...}]}
        data = tuple(clean_json(item, max_depth=limits.max_json_depth + 3) for item in reply.data)
    except ValueTooLarge as exc:
        raise AgentProtocolError(f"a DataPart of the reply is {exc}") from None
    if large:
        await asyncio.sleep(0)
    # The whole text is read (it is within max_reply_bytes, and reading is linear); what the customer sees of
    # it is cut below.
    parsed = dialect.parse(AgentReply(text=reply.text, data=data))
    if len(parsed.calls) > limits.max_tool_calls:
        raise AgentProtocolError(
            f"the reply holds {len(parsed.calls)} tool calls; at most {limits.max_tool_calls} are accepted "
            "(max_tool_calls)"
        )
    if large:
        await asyncio.sleep(0)
    calls = tuple(_admit_call(call, limits) for call in parsed.calls)
    said = parsed.text
    if said is not None:
        said, cut = cut_text(storable(said), limits.max_text_bytes, "message text")
        if cut:
            warnings.append(f"text for the customer over max_text_bytes={limits.max_text_bytes} was cut")
    notes = tuple(storable(w) for w in (*warnings, *parsed.warnings))
    return replace(parsed, calls=calls, text=said, warnings=notes)


def _admit_call(call: ParsedCall, limits: AgentLimits) -> ParsedCall:
    name = storable(call.name)
    shown = name[:60] + ("…" if len(name) > 60 else "")
    if len(name) > limits.max_name_chars:
        raise AgentProtocolError(
            f"tool name {shown!r} has {len(name)} characters; "
            f"at most {limits.max_name_chars} (max_name_chars)"
        )
    if call.id is not None and len(call.id) > limits.max_id_chars:
        raise AgentProtocolError(
            f"the id of a call to {shown!r} has {len(call.id)} characters; at most {limits.max_id_chars} "
            "(max_id_chars)"
        )
    try:
        arguments = clean_json(
            call.arguments, max_depth=limits.max_json_depth, max_keys=limits.max_argument_keys
        )
    except ValueTooLarge as exc:
        raise AgentProtocolError(f"the arguments of a call to {shown!r} are {exc}") from None
    size = utf8_size(compact_json(arguments))
    if size > limits.max_argument_bytes:
        raise AgentProtocolError(
            f"the arguments of a call to {shown!r} take {size} bytes; at most {limits.max_argument_bytes} "
            "(max_argument_bytes)"
        )
    return ParsedCall(name=name, arguments=arguments, id=storable(call.id) if call.id is not None else None)
