"""Asks the human a question (ask_user), without blocking the event loop."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from holodesk.client.shown import shown

T = TypeVar("T")


class NoUserError(Exception):
    """There is no one to ask: no terminal to prompt on."""


def prompt_user(question: str) -> str:
    """Default ask_user: prompt on the terminal (stdin, else /dev/tty).

    The prompt goes to stderr or the tty, never stdout, which carries only the answer.
    """
    prompt = _prompt(question)
    if sys.stdin is not None and sys.stdin.isatty():
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.readline()
    else:
        try:
            with open("/dev/tty", "r+", encoding="utf-8") as tty:
                tty.write(prompt)
                tty.flush()
                line = tty.readline()
        except OSError:
            raise NoUserError(f"cannot ask {question!r}: no terminal to prompt on") from None
    if not line:
        raise NoUserError(f"cannot ask {question!r}: the terminal closed (end of input)")
    return line.rstrip("\r\n")


def _prompt(question: str) -> str:
    """The question, inert (`shown`), each of its lines marked as the daemon's, so no
    line of it can pass for the terminal's own (a "[sudo] password:" prompt)."""
    lines = shown(question).split("\n")
    body = "\n".join(f"| {line}" for line in lines)
    return f"\n? the daemon asks:\n{body}\n> "


def in_daemon_thread(function: Callable[[], T]) -> asyncio.Future[T]:
    """Run a blocking call in a daemon thread.

    Unlike asyncio.to_thread, a thread stuck in input() cannot keep the process
    alive after the session was cancelled.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def resolve(result: T) -> None:
        if not future.done():
            future.set_result(result)

    def reject(error: BaseException) -> None:
        if not future.done():
            future.set_exception(error)

    def target() -> None:
        try:
            try:
                result = function()
            except BaseException as error:  # delivered to the awaiting coroutine
                loop.call_soon_threadsafe(reject, error)
            else:
                loop.call_soon_threadsafe(resolve, result)
        except RuntimeError:
            pass  # the loop closed while the human was still typing: nobody is waiting

    threading.Thread(target=target, name="holodesk-ask-user", daemon=True).start()
    return future
