"""The small task language the OCR baseline understands.

A task is a list of steps separated by `;`, a newline, or the word `then`.
Keywords are case-insensitive; quoted text is kept exactly (any Unicode). Quotes
may be "...", '...', “...”, ‘...’ or «...»; inside them a backslash escapes the
next character.

    click "OK"                    left click on the text OK
    double-click "File"           also: double click
    right-click "Item"            also: right click
    type "héllo wörld" into "Name"
                                  the field that belongs to the label Name (also:
                                  in) ends up holding the text: click it, select
                                  what it holds, type over it; done only when the
                                  field shows the text, all of it
    type "text"                   type at the current keyboard focus
    press ctrl+s                  a key or chord: enter, tab, ctrl+shift+t, f5,
                                  a single character ...
    scroll down 3 at "List"       up/down/left/right; the amount (default 3) and
                                  the place (default: the screen centre) are optional
    wait 1                        seconds (default 1; at most 30)
    answer "42"                   finish, with an answer
    done                          finish

Example: `type "ada" into "Name"; click "OK" then wait 2`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from holodesk.daemon.dialects.base import DialectParseError
from holodesk.daemon.dialects.values import KEY_ALIASES, key_list

SUPPORTED_FORMS = """supported steps (separate them with ';', a newline or 'then'):
  click "TEXT" | double-click "TEXT" | right-click "TEXT"
  type "TEXT" | type "TEXT" into "LABEL"
  press KEY[+KEY...]            e.g. press enter, press ctrl+s
  scroll up|down|left|right [N] [at "TEXT"]
  wait [SECONDS]
  answer "TEXT" | done"""

# The holo dialect's limit (DialectSpec.max_wait_s); longer waits would be cut.
MAX_WAIT_S = 30.0
MAX_SCROLL = 50
DEFAULT_SCROLL = 3

Direction = Literal["up", "down", "left", "right"]
_DIRECTIONS: dict[str, Direction] = {"up": "up", "down": "down", "left": "left", "right": "right"}
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“"}
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")


class InstructionError(ValueError):
    """The task is not in the baseline's language; the message lists what is."""


@dataclass(frozen=True)
class Click:
    target: str
    button: Literal["left", "right"] = "left"
    count: int = 1


@dataclass(frozen=True)
class TypeText:
    text: str
    into: str | None = None


@dataclass(frozen=True)
class Press:
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Scroll:
    direction: Direction
    amount: int = DEFAULT_SCROLL
    at: str | None = None


@dataclass(frozen=True)
class Wait:
    seconds: float = 1.0


@dataclass(frozen=True)
class Done:
    answer: str = ""


Step = Click | TypeText | Press | Scroll | Wait | Done


@dataclass(frozen=True)
class _Token:
    kind: Literal["word", "quoted", "sep"]
    text: str


def parse(task: str) -> list[Step]:
    """The steps of `task`, or InstructionError naming the first step not understood."""
    steps: list[Step] = []
    for number, tokens in enumerate(_split_steps(_tokenize(task)), start=1):
        try:
            steps.append(_parse_step(tokens))
        except InstructionError as exc:
            shown = " ".join(_show(t) for t in tokens)
            raise InstructionError(
                f"step {number} `{shown}` is not understood: {exc}\n{SUPPORTED_FORMS}"
            ) from None
    if not steps:
        raise InstructionError(f"the task has no steps\n{SUPPORTED_FORMS}")
    return steps


def describe(step: Step) -> str:
    """The step written back in the task language (for notes and failure reasons)."""
    match step:
        case Click(target, "right", _):
            return f"right-click {_quote(target)}"
        case Click(target, _, 2):
            return f"double-click {_quote(target)}"
        case Click(target, _, _):
            return f"click {_quote(target)}"
        case TypeText(text, None):
            return f"type {_quote(text)}"
        case TypeText(text, into):
            return f"type {_quote(text)} into {_quote(into or '')}"
        case Press(keys):
            return "press " + "+".join(keys)
        case Scroll(direction, amount, None):
            return f"scroll {direction} {amount}"
        case Scroll(direction, amount, at):
            return f"scroll {direction} {amount} at {_quote(at or '')}"
        case Wait(seconds):
            return f"wait {seconds:g}"
        case Done(""):
            return "done"
        case Done(answer):
            return f"answer {_quote(answer)}"


def _parse_step(tokens: list[_Token]) -> Step:
    head, rest = tokens[0], tokens[1:]
    if head.kind != "word":
        raise InstructionError("a step starts with a verb, not quoted text")
    verb = head.text.casefold()
    if verb in ("double", "right") and rest and _is_word(rest[0], "click"):
        verb, rest = f"{verb}-click", rest[1:]
    match verb:
        case "click" | "double-click" | "doubleclick" | "right-click" | "rightclick":
            target = _only_quoted(rest, verb)
            if verb.startswith("right"):
                return Click(target, "right")
            return Click(target, "left", 2 if verb.startswith("double") else 1)
        case "type" | "write":
            return _parse_type(rest)
        case "press" | "hotkey" | "key":
            return Press(_parse_keys(rest))
        case "scroll":
            return _parse_scroll(rest)
        case "wait" | "sleep":
            return Wait(_parse_wait(rest))
        case "answer":
            return Done(_only_quoted(rest, "answer"))
        case "done" | "finish" | "stop":
            if rest:
                raise InstructionError(f"`{verb}` takes nothing after it")
            return Done()
    raise InstructionError(f"unknown verb `{head.text}`")


def _parse_type(rest: list[_Token]) -> TypeText:
    if not rest or rest[0].kind != "quoted":
        raise InstructionError('`type` needs the text in quotes, e.g. type "hello"')
    text, rest = rest[0].text, rest[1:]
    if not rest:
        return TypeText(text)
    into = len(rest) == 2 and (_is_word(rest[0], "into") or _is_word(rest[0], "in"))
    if into and rest[1].kind == "quoted" and rest[1].text.strip():
        return TypeText(text, rest[1].text)
    raise InstructionError('after the text, only `into "LABEL"` may follow')


def _parse_keys(rest: list[_Token]) -> tuple[str, ...]:
    if not rest or any(t.kind != "word" for t in rest):
        raise InstructionError("`press` needs key names, e.g. press ctrl+s")
    # The dialect's own reader, so a chord accepted here is one the dialect accepts.
    try:
        return key_list(" ".join(t.text for t in rest), KEY_ALIASES)
    except DialectParseError as exc:
        raise InstructionError(f"{exc.message}. {exc.hint}") from None


def _parse_scroll(rest: list[_Token]) -> Scroll:
    if not rest or rest[0].kind != "word" or rest[0].text.casefold() not in _DIRECTIONS:
        raise InstructionError("`scroll` needs a direction: up, down, left or right")
    direction = _DIRECTIONS[rest[0].text.casefold()]
    rest = rest[1:]
    amount = DEFAULT_SCROLL
    if rest and rest[0].kind == "word" and not _is_word(rest[0], "at"):
        if not re.fullmatch(r"[0-9]+", rest[0].text) or not 1 <= int(rest[0].text) <= MAX_SCROLL:
            raise InstructionError(f"the scroll amount must be a whole number 1-{MAX_SCROLL}")
        amount, rest = int(rest[0].text), rest[1:]
    if not rest:
        return Scroll(direction, amount)
    at = len(rest) == 2 and _is_word(rest[0], "at")
    if at and rest[1].kind == "quoted" and rest[1].text.strip():
        return Scroll(direction, amount, rest[1].text)
    raise InstructionError('after the amount, only `at "TEXT"` may follow')


def _parse_wait(rest: list[_Token]) -> float:
    if not rest:
        return 1.0
    words = [t.text.casefold() for t in rest if t.kind == "word"]
    if len(words) != len(rest) or len(words) > 2 or not _NUMBER.fullmatch(words[0]):
        raise InstructionError("`wait` takes a number of seconds, e.g. wait 2")
    if len(words) == 2 and words[1] not in ("s", "sec", "secs", "second", "seconds"):
        raise InstructionError("`wait` counts seconds only, e.g. wait 2 s")
    seconds = float(words[0])
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_WAIT_S:
        raise InstructionError(f"`wait` takes more than 0 and at most {MAX_WAIT_S:g} seconds")
    return seconds


def _only_quoted(rest: list[_Token], verb: str) -> str:
    if len(rest) != 1 or rest[0].kind != "quoted" or not rest[0].text.strip():
        raise InstructionError(f'`{verb}` needs one quoted, non-empty text, e.g. {verb} "OK"')
    return rest[0].text


def _tokenize(task: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(task):
        char = task[i]
        if char in ";\n":
            tokens.append(_Token("sep", char))
            i += 1
        elif char.isspace():
            i += 1
        elif char in _QUOTES:
            text, i = _read_quoted(task, i)
            tokens.append(_Token("quoted", text))
        else:
            start = i
            while i < len(task) and not task[i].isspace() and task[i] not in ";\n":
                i += 1
            word = task[start:i]
            sep = word.casefold() == "then"
            tokens.append(_Token("sep" if sep else "word", word))
    return tokens


def _read_quoted(task: str, start: int) -> tuple[str, int]:
    """The text of the quote opening at `start`, and the index after its closer."""
    closer = _QUOTES[task[start]]
    chars: list[str] = []
    i = start + 1
    while i < len(task):
        char = task[i]
        if char == "\\" and i + 1 < len(task):
            chars.append(task[i + 1])
            i += 2
        elif char == closer:
            return "".join(chars), i + 1
        else:
            chars.append(char)
            i += 1
    raise InstructionError(
        f"the quote opened at character {start + 1} is never closed\n{SUPPORTED_FORMS}"
    )


def _split_steps(tokens: list[_Token]) -> list[list[_Token]]:
    steps: list[list[_Token]] = [[]]
    for token in tokens:
        if token.kind == "sep":
            steps.append([])
        else:
            steps[-1].append(token)
    return [step for step in steps if step]


def _is_word(token: _Token, word: str) -> bool:
    return token.kind == "word" and token.text.casefold() == word


def _show(token: _Token) -> str:
    return _quote(token.text) if token.kind == "quoted" else token.text


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
