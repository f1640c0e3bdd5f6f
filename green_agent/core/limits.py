"""Bounds on everything a white agent controls, and the helpers that apply them.

The agent under test is an adversary (docs/threat-model.md): its replies may be huge, deeply nested, full of
NUL bytes or lone surrogates, carry NaN or 1e999, or hundreds of tool calls. Every bound here is an operator
setting (`EngineSettings.limits`, env `GREEN_AGENT_MAX_*`) and every way past it is charged to the agent:

* a reply body over `max_reply_bytes` or with more than `max_reply_values` JSON values (task history the
  agent's server echoes back not counted, within `max_echo_bytes`), or a tool call over any call bound
  (count, argument bytes, keys or depth, id or name length) ends the trial as `agent_error`;
* text over `max_text_bytes` is cut, with a visible marker and a protocol warning; the conversation goes on;
* a transcript reaching `max_transcript_bytes` is cut at the bound with a marker and ends the trial as
  `agent_error`, so what is stored per trial stays within the bound;
* what the agent puts before our user-simulator and judge LLMs in one trial (its messages and the tool results
  it asked for) reaching `max_agent_text_bytes_per_trial` is cut the same way and ends the trial as
  `agent_error` before that text reaches an LLM, so flooding our LLMs' context is charged to the agent.

Strings are made storable before they reach the trial (NUL and lone surrogates become U+FFFD, non-finite
numbers become the strings "NaN", "Infinity", "-Infinity"), so one trial scores and stores identically on
SQLite and PostgreSQL. Every helper is linear in its input, and no Python loop here runs per byte.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from domain_kit import TerminationReason
from green_agent.core.errors import InfrastructureError, LLMContextTooLong, LLMRefusedConversation

KIB = 1024
TRUNCATION_MARKER = "…[truncated by the green agent: {what} over {limit} bytes]"


class AgentLimits(BaseModel):
    """Bounds on what one white agent may send; the defaults leave ample room for any honest agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_reply_bytes: int = Field(
        default=128 * KIB,
        ge=1 * KIB,
        description="Bytes of one HTTP response from the white agent: body, headers, trailers and any "
        "informational (1xx) responses before it.",
    )
    max_reply_values: int = Field(
        default=2_048,
        ge=16,
        description="JSON values in one reply body, counted as its '{', '[' and ',' bytes (the A2A SDK "
        "parses replies on the event loop at a few microseconds per value).",
    )
    max_echo_bytes: int = Field(
        default=1024 * KIB,
        ge=0,
        description="Bytes of task history a white agent's server may echo back with a reply, on top of "
        "max_reply_bytes: our own messages, never counted against the agent's bounds nor parsed (a2a-sdk 0.3 "
        "echoes the whole conversation when asked for none). The default is some 40 times our first message "
        "(policy and tools: 26 KB in retail).",
    )
    max_json_depth: int = Field(
        default=32, ge=2, le=512, description="Nesting depth of JSON read from a reply and of tool arguments."
    )
    max_tool_calls: int = Field(default=16, ge=1, description="Tool calls in one reply.")
    max_argument_bytes: int = Field(
        default=16 * KIB, ge=64, description="Bytes of one tool call's arguments, as compact JSON."
    )
    max_argument_keys: int = Field(
        default=256, ge=1, description="Object keys in one tool call's arguments, at every nesting level."
    )
    max_id_chars: int = Field(default=128, ge=8, le=255, description="Characters of a tool-call id.")
    max_name_chars: int = Field(default=128, ge=8, description="Characters of a tool name.")
    max_text_bytes: int = Field(
        default=64 * KIB, ge=256, description="UTF-8 bytes of the text of one message; longer text is cut."
    )
    max_transcript_bytes: int = Field(
        default=2 * 1024 * KIB,
        ge=16 * KIB,
        description="Bytes of one trial's transcript (contents and tool calls); reaching it ends the trial.",
    )
    max_agent_text_bytes_per_trial: int = Field(
        default=192 * KIB,
        ge=16 * KIB,
        description="Bytes the agent puts before the user-simulator and judge LLMs in one trial: its "
        "messages (text and tool calls) and the tool results it asked for; reaching it ends the trial. The "
        "default fits the context of gpt-4.1 and gpt-5.2, with our prompts and the customer's lines, even at "
        "one token per byte.",
    )
    max_card_name_chars: int = Field(
        default=80,
        ge=8,
        le=1024,
        description="Characters of the agent card's name kept with an assessment (control and bidi "
        "characters removed first); a longer name is cut, with an ellipsis.",
    )
    max_failures_per_kind: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Failures of one kind listed per trial (scoring/failures.py); past it, one more "
        "entry says how many were left out.",
    )
    max_failure_value_bytes: int = Field(
        default=1024,
        ge=64,
        description="Bytes of one value a failure quotes (an argument sent, an error text), as compact "
        "JSON; a longer one is cut to text with a marker (the transcript has it whole).",
    )
    max_customer_state_bytes: int = Field(
        default=16384,
        ge=256,
        description="Bytes of the customer's side a trial page shows in dual control (telecom's phone, "
        "mock's inbox: its DB at the task's start and at the trial's end, as JSON); past it only the "
        "fields that changed are listed, as many as fit, and the page says what was left out.",
    )


# -- strings ---------------------------------------------------------------------------------------------

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD: PostgreSQL rejects the first in text columns,
    and neither database driver can encode the second."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def display_name(text: str, limit: int) -> str | None:
    """A name the agent chose (its card's), fit to show beside its URL: control, format (bidi overrides,
    zero-width characters), private-use and unassigned characters dropped, line breaks and other spaces
    made single spaces, at most `limit` characters (a longer name ends with an ellipsis); None when nothing
    is left. Linear in `limit`, whatever the card holds."""
    kept = []
    for char in text[: limit * 4]:
        category = unicodedata.category(char)
        if category[0] == "Z" or category == "Cc":
            kept.append(" ")
        elif category[0] != "C":
            kept.append(char)
    name = " ".join("".join(kept).split())
    if len(name) > limit:
        name = name[: limit - 1].rstrip() + "…"
    return name or None


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def cut_text(text: str, limit: int, what: str) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes, a visible marker included; True when something was cut."""
    if len(text) * 4 <= limit or utf8_size(text) <= limit:
        return text, False
    marker = TRUNCATION_MARKER.format(what=what, limit=limit)
    room = max(limit - utf8_size(marker), 0)
    return text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore") + marker, True


# -- JSON ------------------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth_within(raw: str, limit: int) -> bool:
    """True when the JSON text `raw` nests at most `limit` deep (False also for unbalanced brackets, which
    are no valid JSON anyway). Called before `json.loads`, which would raise RecursionError on deep input.

    Linear and without a per-character Python loop: strings and everything but brackets are removed by
    regular expressions, then each pass drops the innermost pairs, one nesting level per pass."""
    skeleton = _NOT_BRACKET.sub("", _JSON_STRING.sub("", raw))
    for _ in range(limit):
        if not skeleton:
            return True
        shorter = skeleton.replace("[]", "").replace("{}", "")
        if len(shorter) == len(skeleton):
            return False
        skeleton = shorter
    return not skeleton


def reply_values(body: bytes) -> int:
    """How many JSON values a reply body holds, roughly and from above (commas in strings count too)."""
    return body.count(b"{") + body.count(b"[") + body.count(b",")


class ValueTooLarge(ValueError):
    """A value from the agent exceeds a bound; the message names the bound and says by how much."""


def clean_json(value: Any, *, max_depth: int, max_keys: int | None = None) -> Any:
    """A copy of a decoded JSON value that is safe to store and score: strings made storable (keys too),
    non-finite numbers turned into strings, nesting and key count checked (raises `ValueTooLarge`).

    Iterative, so that no nesting can exhaust the Python stack."""
    keys = 0
    root: list[Any] = [None]
    # (source, depth, container to fill, key or index in it)
    stack: list[tuple[Any, int, Any, Any]] = [(value, 1, root, 0)]
    while stack:
        source, depth, target, slot = stack.pop()
        if isinstance(source, dict):
            if depth > max_depth:
                raise ValueTooLarge(f"nested deeper than {max_depth} (max_json_depth)")
            keys += len(source)
            if max_keys is not None and keys > max_keys:
                raise ValueTooLarge(f"more than {max_keys} keys (max_argument_keys)")
            copy: dict[str, Any] = {}
            target[slot] = copy
            for key, item in source.items():
                clean_key = storable(key) if isinstance(key, str) else str(key)
                copy[clean_key] = None
                stack.append((item, depth + 1, copy, clean_key))
        elif isinstance(source, list | tuple):
            if depth > max_depth:
                raise ValueTooLarge(f"nested deeper than {max_depth} (max_json_depth)")
            items: list[Any] = [None] * len(source)
            target[slot] = items
            stack.extend((item, depth + 1, items, i) for i, item in enumerate(source))
        elif isinstance(source, str):
            target[slot] = storable(source)
        elif isinstance(source, float) and not math.isfinite(source):
            target[slot] = "NaN" if math.isnan(source) else ("Infinity" if source > 0 else "-Infinity")
        else:
            target[slot] = source
    return root[0]


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- transcripts -----------------------------------------------------------------------------------------


def message_bytes(content: str | None, tool_calls: Iterable[Any] | None = None) -> int:
    """What one transcript message counts against `max_transcript_bytes`: its text and its tool calls
    (id, name and arguments as compact JSON), in UTF-8 bytes. Tool calls may be models or dicts."""
    size = utf8_size(content) if content else 0
    for call in tool_calls or ():
        fields = call if isinstance(call, dict) else call.model_dump()
        size += utf8_size(fields["id"]) + utf8_size(fields["name"])
        size += utf8_size(compact_json(fields["arguments"]))
    return size


# -- who pays when our LLM fails --------------------------------------------------------------------------


def llm_failure_outcome(
    exc: InfrastructureError, agent_bytes: int, limits: AgentLimits, party: str = "customer"
) -> tuple[TerminationReason, str]:
    """The termination and stored error for a failure of the customer's (user simulator's) or the judge's
    LLM (`party`), `agent_bytes` into the trial (what the agent had put before our LLMs: its messages and the
    tool results it asked for).

    The rule (docs/scoring.md, "Who pays for a failure of our LLMs"): a failure that the agent's text can
    provoke is the agent's, once its text is in the conversation; every other failure is ours.

    * `LLMRefusedConversation` (content-policy refusal; a reply cut by the content filter, refused or empty
      on every attempt) depends only on what the conversation says. With agent text in it (`agent_bytes` >
      0), the agent pays: an honest agent never gets there, and retried at temperature 0 it is what the
      conversation makes the model do. Before the agent has said anything (the customer's opening), ours.
    * `LLMContextTooLong` is the agent's only when its own text and tool results fill at least half of
      `max_agent_text_bytes_per_trial`: far more than any honest conversation weighs. Under that, the model's
      context is too small for an honest conversation, a configuration of ours.
    * Everything else (connection errors, timeouts, 401/403/404, 429, 5xx, other 400s) no text can cause:
      an excluded infrastructure error.
    """
    if isinstance(exc, LLMRefusedConversation) and agent_bytes > 0:
        return TerminationReason.AGENT_ERROR, (
            f"{LLM_FAILURE_CODE}:{exc.cause}: the {party} LLM failed on a conversation holding the agent's "
            f"text ({_CAUSES.get(exc.cause, exc.cause)}), so the trial is the agent's failure: {exc}"
        )
    prefix = "judge failed: " if party == "judge" else f"{type(exc).__name__}: "
    if isinstance(exc, LLMContextTooLong) and 2 * agent_bytes >= limits.max_agent_text_bytes_per_trial:
        return TerminationReason.AGENT_ERROR, (
            f"{prefix}the agent put {agent_bytes} bytes before our LLM (half of "
            f"max_agent_text_bytes_per_trial={limits.max_agent_text_bytes_per_trial} or more), which refused "
            f"the conversation as too long: {exc}"
        )
    return TerminationReason.INFRASTRUCTURE_ERROR, prefix + str(exc)


LLM_FAILURE_CODE = "provoked_llm_failure"
"""Leads the error of a trial charged for a failure of our LLM that its text provoked, followed by `:` and
the cause (`provoked_llm_failure:content_policy`), so reports, the UI and exports can name it."""

CUSTOMER_CALLS_CAUSE = "customer_tool_calls"
"""The cause of an `LLMRefusedConversation` raised for a customer reply whose tool calls break a bound."""

_CAUSES = {
    CUSTOMER_CALLS_CAUSE: "the customer's tool calls broke a bound of the agent's",
    "content_policy": "the provider's content policy refused it",
    "content_filter": "the provider's content filter cut every reply",
    "refusal": "the model refused to answer on every attempt",
    "empty_reply": "the model's reply was empty on every attempt",
}
