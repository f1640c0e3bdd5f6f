"""Hypothesis strategies for what a hostile white agent can put on the wire (the builders live in
`green_agent.reference_agents.hostile`): nesting, sizes, unicode with NUL and surrogates, NaN and 1e999,
hundreds of tool calls, huge argument objects, long ids, truncated and duplicated JSON, floods of echoed task
history."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from green_agent.reference_agents.hostile import (
    WEIRD_NUMBERS_JSON,
    HostileReply,
    call_json,
    data_reply,
    duplicated,
    echoing,
    many_keys_json,
    nested_json,
    raw_reply,
    text_reply,
    truncated,
)
from retail_domain import TOOL_SCHEMAS

TOOL_NAMES = [schema["function"]["name"] for schema in TOOL_SCHEMAS]

_nasty_char = st.one_of(
    st.characters(),
    st.sampled_from(
        ["\x00", "\ud800", "\udbff", "\udc00", "\udfff", "\ufffe", "\u202e", "{", "[", '"', "\\"]
    ),
)
nasty_text = st.builds(
    lambda text, times: text * times, st.text(_nasty_char, min_size=1, max_size=40), st.integers(1, 8_000)
)
names = st.one_of(st.sampled_from([*TOOL_NAMES, "respond"]), nasty_text)


def _as(kind: str, raw_json: str, label: str) -> HostileReply:
    """`raw_json` (one call, or anything) as text-dialect text, or as a DataPart's `tool_calls` entry."""
    if kind == "data":
        return data_reply('{"tool_calls": [' + raw_json + "]}", label)
    return text_reply(raw_json, label)


def _call_list(name: str, count: int, kind: str) -> HostileReply:
    calls = ", ".join(call_json(name, "{}", f"c{i}") for i in range(count))
    return _as(kind, calls if kind == "data" else "[" + calls + "]", "many calls")


kinds = st.sampled_from(["text", "data"])

nested = st.builds(
    lambda depth, opener, kind, wrapped: _as(
        kind,
        call_json("calculate", nested_json(depth, opener)) if wrapped else nested_json(depth, opener),
        "nested",
    ),
    st.integers(1, 100_000),
    st.sampled_from(["[", "{"]),
    kinds,
    st.booleans(),
)
weird_numbers = st.builds(
    lambda name, kind: _as(kind, call_json(name, WEIRD_NUMBERS_JSON), "numbers"), names, kinds
)
many_calls = st.builds(_call_list, names, st.integers(2, 600), kinds)
huge_arguments = st.builds(
    lambda name, keys, kind: _as(kind, call_json(name, many_keys_json(keys)), "many keys"),
    names,
    st.integers(1, 30_000),
    kinds,
)
long_ids = st.builds(
    lambda name, length, kind: _as(kind, call_json(name, "{}", "i" * length), "long id"),
    names,
    st.integers(100, 5_000),
    kinds,
)
unicode_text = st.builds(text_reply, nasty_text)
unicode_call = st.builds(
    lambda name, value, kind: _as(kind, call_json(name, json.dumps({value: value})), "unicode call"),
    names,
    nasty_text,
    kinds,
)
raw_bodies = st.builds(raw_reply, st.binary(max_size=2_000))
echoed = st.builds(
    lambda reply, history: echoing(reply, history),
    st.one_of(unicode_text, many_calls, weird_numbers),
    st.one_of(
        st.builds(lambda depth: nested_json(depth, "["), st.integers(1, 100_000)),  # deep, or merely many
        st.builds(lambda n: "[" + ",".join(["[]"] * n) + "]", st.integers(1, 600_000)),
        st.builds(lambda text: json.dumps([{"parts": [{"text": text}]}]), nasty_text),
        st.just("{not json"),
    ),
)
"""An answer as a task carrying an echoed history: deep, a flood of values up to past the echo allowance,
hostile text, or not JSON at all."""

_whole = st.one_of(
    nested, weird_numbers, many_calls, huge_arguments, long_ids, unicode_text, unicode_call, echoed
)
hostile_replies = st.one_of(
    _whole,
    st.builds(truncated, _whole, st.floats(0.0, 0.99)),
    st.builds(duplicated, _whole),
    raw_bodies,
)
"""One hostile answer of any kind."""

hostile_programs = st.lists(hostile_replies, min_size=1, max_size=3)
"""What a hostile agent sends on one trial before it gives up."""
