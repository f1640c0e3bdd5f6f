"""Text someone outside chose (an agent URL, a task id, a model name), kept to one line wherever it goes.

Such text is logged and shown beside our own. A line break in it forges a log line of its own (an agent URL
holding `\\r\\n2026-... WARNING api.security.auth: key ... revoked` reads like the service's own record), an
escape sequence recolours a terminal, and a bidi override (U+202E) reverses what a page or a log shows after
it. Two rules, one per direction:

* coming in, `unshowable_reason` refuses such text (the doors answer a one-line 422 or a rejected task);
* going out to a log, `escape_line` writes every such character as an escape, for what got in another way
  (an agent's reply quoted in an error, a path that never reached a route).
"""

from __future__ import annotations

import unicodedata

# Control characters (CR, LF, TAB, ESC, DEL, NEL...), format characters (every bidi embedding, override,
# isolate and mark; zero-width spaces and joiners; the BOM) and the two Unicode line breaks (U+2028, U+2029).
_UNSHOWABLE = {"Cc": "a control character", "Cf": "a format or bidi character", "Zl": "a line separator"}
_UNSHOWABLE["Zp"] = "a paragraph separator"
# Also escaped in logs: lone surrogates, which a UTF-8 log stream cannot even encode.
_ESCAPED_IN_LOGS = frozenset({*_UNSHOWABLE, "Cs"})
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def unshowable_reason(text: str) -> str | None:
    """Why `text` cannot be logged or shown as one plain line (the first control, format, bidi or line
    separator character in it, named by code point and position), or None when it can. Linear in `text`."""
    if text.isprintable():  # the common case, in C: False for every character refused below
        return None
    for position, char in enumerate(text, start=1):
        kind = _UNSHOWABLE.get(unicodedata.category(char))
        if kind is not None:
            name = unicodedata.name(char, "")
            named = f"U+{ord(char):04X}" + (f" {name}" if name else "")
            return f"holds {kind} ({named}) at character {position}; send plain text on one line"
    return None


def escape_line(text: str) -> str:
    """`text` with every character `unshowable_reason` refuses (and lone surrogates) written as an escape
    (`\\n`, `\\r`, `\\t`, `\\x1b`, `\\u202e`), so that it stays on one line and reads in the order it
    was written."""
    if text.isprintable():
        return text
    return "".join(_escape(char) if unicodedata.category(char) in _ESCAPED_IN_LOGS else char for char in text)


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
