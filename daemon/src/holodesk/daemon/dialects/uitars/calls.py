"""UI-TARS answer text -> thought and function calls (no meaning attached yet).

An answer is ``Thought: ...`` (or ``Reflection: ... Action_Summary: ...``)
then ``Action: name(key='value', ...)``; several calls are separated by blank
lines. Values are quoted strings with Python escapes, or bare tokens such as
``(120,45)``. Everything here raises DialectParseError and nothing else.

Quotes inside a value need not be escaped, as with the reference parser's
handling of ``type(content='it's')``: a quote only closes a value where what
follows can continue the call (``, key=`` or ``)`` ending the call).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.jsontext import MAX_OUTPUT_CHARS, strip_reasoning

MAX_CALLS = 16
# Markers examined from the end; bounds the work on text full of "Action:".
_MAX_MARKERS = 8

FORMAT_HINT = "Answer as: Thought: <reasoning>\\nAction: click(start_box='(x,y)')"

_MARKER = re.compile(r"Action\s*[:：]")
_LINE_MARKER = re.compile(r"^[ \t]*(Action\s*[:：])", re.MULTILINE)
_CALL_START = re.compile(r"\s*([A-Za-z_]\w*)\s*\(")
_KEY = re.compile(r"([A-Za-z_]\w*)\s*=\s*")
_SPACE = re.compile(r"\s*")
# After a quote: does the call continue here (next argument, or its end)?
_CLOSES = re.compile(r"\s*(?:,\s*[A-Za-z_]\w*\s*=|\)\s*(?:$|[A-Za-z_]\w*\s*\())")
_CLOSES_LOOSELY = re.compile(r"\s*[,)]")
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9A-Fa-f]{2}\\u[dD][c-fC-F][0-9A-Fa-f]{2}"  # a UTF-16 pair
    r"|\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|N\{[^}\n]{1,80}\}|[0-7]{1,3}|.)",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "\n": "",  # a backslash before a line break continues the line, as in Python
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


@dataclass(frozen=True)
class Call:
    """One function call; positional arguments are keyed "#0", "#1", ..."""

    name: str
    args: Mapping[str, str] = field(default_factory=dict)
    source: str = ""

    def arg(self, *names: str, position: int | None = None) -> str | None:
        for name in names:
            if name in self.args:
                return self.args[name]
        if position is not None:
            return self.args.get(f"#{position}")
        return None


@dataclass(frozen=True)
class Answer:
    thought: str
    reflection: str
    calls: tuple[Call, ...]


def decode_escapes(raw: str) -> str:
    """Python string-literal escapes, as the reference parser gets them from
    `ast`: \\' \\" \\n \\t \\\\ \\xhh \\uXXXX ...; unknown or malformed escapes stay as
    written (Python keeps unknown ones too, and a model's "C:\\dir" should survive)."""

    def one(match: re.Match[str]) -> str:
        body = match.group(0)[1:]
        if body in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[body]
        try:
            if len(body) == 11:  # \uD83D\uDE00: what JSON-minded models write for emoji
                high, low = int(body[1:5], 16), int(body[7:], 16)
                return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            if body[0] in "xuU" and len(body) > 1:
                char = chr(int(body[1:], 16))
            elif body.startswith("N{"):
                char = unicodedata.lookup(body[2:-1])
            elif body[0] in "01234567":
                char = chr(int(body, 8))
            else:
                return match.group(0)
        except (KeyError, ValueError, OverflowError):
            return match.group(0)  # \U out of range, unknown \N{name}: keep as written
        # A lone surrogate cannot be sent as UTF-8: keep the escape as written.
        return match.group(0) if 0xD800 <= ord(char) <= 0xDFFF else char

    return _ESCAPE.sub(one, raw)


def parse_answer(text: object) -> Answer:
    if not isinstance(text, str):
        raise DialectParseError(f"model output is {type(text).__name__}, not text", FORMAT_HINT)
    if len(text) > MAX_OUTPUT_CHARS:
        raise DialectParseError(f"model output is {len(text)} characters long", FORMAT_HINT)
    body = strip_reasoning(text)
    if not body:
        raise DialectParseError("model output is empty", FORMAT_HINT)
    markers = list(_MARKER.finditer(body))
    if not markers:
        if _CALL_START.match(body):  # a bare call (grounding answers, terse models)
            return Answer("", "", scan_calls(body))
        raise DialectParseError("the answer has no Action: line", FORMAT_HINT)
    # The action is at the start of a line; a marker in mid-line may be inside the
    # thought or a typed text. Latest first, like the reference parsers.
    at_line_start = list(_LINE_MARKER.finditer(body))[-_MAX_MARKERS:]
    starts = {m.start(1) for m in at_line_start}
    others = [m for m in markers[-2 * _MAX_MARKERS :] if m.start() not in starts]
    candidates = [
        *(_Marker(m.start(1), m.end()) for m in reversed(at_line_start)),
        *(_Marker(m.start(), m.end()) for m in reversed(others)),
    ][:_MAX_MARKERS]
    first_error: DialectParseError | None = None
    for marker in candidates:
        block = body[marker.end :]
        if not _CALL_START.match(block):
            continue
        try:
            calls = scan_calls(block)
        except DialectParseError as exc:
            first_error = first_error or exc
            continue
        thought, reflection = _thought(body[: marker.start])
        return Answer(thought, reflection, calls)
    if first_error is not None:
        raise first_error
    raise DialectParseError("no function call follows Action:", FORMAT_HINT)


@dataclass(frozen=True)
class _Marker:
    start: int
    end: int


def _thought(prefix: str) -> tuple[str, str]:
    """(thought, reflection) from the text before the action."""
    text = prefix.strip()
    if text.startswith("Reflection:"):
        reflection, sep, summary = text[len("Reflection:") :].partition("Action_Summary:")
        if sep:
            return summary.strip(), reflection.strip()
        return "", reflection.strip()
    for label in ("Thought:", "Action_Summary:"):
        at = text.find(label)
        if at >= 0:
            return text[at + len(label) :].strip(), ""
    return text, ""


def scan_calls(block: str) -> tuple[Call, ...]:
    """Calls separated by whitespace; nothing else may follow the last one."""
    calls: list[Call] = []
    pos = 0
    end = len(block)
    while True:
        pos = _skip_space(block, pos)
        if pos >= end:
            break
        start = _CALL_START.match(block, pos)
        if start is None:
            raise DialectParseError(
                f"unexpected text after the action: {_excerpt(block[pos:])}",
                "Put nothing after the action call(s); separate calls with a blank line.",
            )
        if len(calls) == MAX_CALLS:
            raise DialectParseError(
                f"more than {MAX_CALLS} actions", f"Give at most {MAX_CALLS} actions."
            )
        call, pos = _call(block, start)
        calls.append(call)
    if not calls:
        raise DialectParseError("no function call follows Action:", FORMAT_HINT)
    return tuple(calls)


def _call(block: str, start: re.Match[str]) -> tuple[Call, int]:
    name = start.group(1)
    pos = start.end()
    args: dict[str, str] = {}
    positional = 0
    while True:
        pos = _skip_space(block, pos)
        if pos >= len(block):
            raise DialectParseError(
                f"{name}( is not closed", f"Close the call: {name}(...) with a ')'."
            )
        if block[pos] == ")":
            pos += 1
            break
        key_match = _KEY.match(block, pos)
        if key_match is not None:
            key = key_match.group(1)
            pos = key_match.end()
        else:
            key = f"#{positional}"
            positional += 1
        if key in args:
            raise DialectParseError(
                f"{name}() gives {key} twice", f"Give each argument of {name}() once."
            )
        value, pos = _value(block, pos, name)
        args[key] = value
        pos = _skip_space(block, pos)
        if pos < len(block) and block[pos] == ",":
            pos += 1
        elif pos >= len(block) or block[pos] != ")":
            raise DialectParseError(
                f"unexpected {_excerpt(block[pos:])} in {name}()",
                f"Write arguments as {name}(key='value', ...).",
            )
    return Call(name, args, block[start.start() : pos].strip()), pos


def _value(block: str, pos: int, name: str) -> tuple[str, int]:
    if pos < len(block) and block[pos] in "'\"":
        return _quoted(block, pos, name)
    # A bare value such as (120,45) or [1,2,3,4] or 3: up to a comma or ')' at depth 0.
    depth = 0
    start = pos
    while pos < len(block):
        char = block[pos]
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        elif (char == "," and depth == 0) or char in "'\"\n":
            break
        pos += 1
    value = block[start:pos].strip()
    if not value:
        raise DialectParseError(
            f"{name}() has an empty argument", f"Write arguments as {name}(key='value')."
        )
    return value, pos


def _quoted(block: str, pos: int, name: str) -> tuple[str, int]:
    quote = block[pos]
    closing = _closing_quote(block, pos + 1, quote, _CLOSES)
    if closing is None:
        closing = _closing_quote(block, pos + 1, quote, _CLOSES_LOOSELY)
    if closing is None:
        raise DialectParseError(
            f"a string in {name}() is not closed",
            f"Close each value with {quote}, and escape {quote} inside it as \\{quote}.",
        )
    return decode_escapes(block[pos + 1 : closing]), closing + 1


def _closing_quote(block: str, pos: int, quote: str, follows: re.Pattern[str]) -> int | None:
    while pos < len(block):
        char = block[pos]
        if char == "\\":
            pos += 2
            continue
        if char == quote and follows.match(block, pos + 1):
            return pos
        pos += 1
    return None


def _skip_space(block: str, pos: int) -> int:
    match = _SPACE.match(block, pos)
    return match.end() if match else pos


def _excerpt(text: str) -> str:
    text = text.strip()
    return repr(text[:40] + ("..." if len(text) > 40 else ""))
