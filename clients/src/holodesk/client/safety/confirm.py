"""Confirm mode: ask a human before each action, without blocking a stop."""

from __future__ import annotations

import threading

from holodesk.client import actions as a
from holodesk.client.halt import Halt
from holodesk.client.prompt import NoUserError, prompt_user
from holodesk.client.render import describe
from holodesk.client.safety.settings import Confirm

_POLL_S = 0.05


def terminal_confirm(action: a.Action) -> bool:
    """The CLI's confirm callback: y or yes runs the action, anything else refuses it."""
    answer = prompt_user(f"run {describe(action)}? [y/N]")
    return answer.strip().lower() in ("y", "yes")


def ask(confirm: Confirm, action: a.Action, halt: Halt) -> str:
    """Why the action must not run ('' when confirmed, or when a halt came first).

    The question runs on a daemon thread, so a human who never answers can
    neither keep the process alive nor delay an emergency stop.
    """
    done = threading.Event()
    outcome: list[bool | BaseException] = []

    def run() -> None:
        try:
            outcome.append(confirm(action))
        except BaseException as error:  # handed back to the backend thread
            outcome.append(error)
        done.set()

    threading.Thread(target=run, name="holodesk-confirm", daemon=True).start()
    while not done.wait(_POLL_S):
        if halt.is_set():
            return ""  # the caller sees the halt and does not start the action
    answer = outcome[0]
    if isinstance(answer, BaseException):
        if isinstance(answer, NoUserError | OSError | EOFError):
            return f"confirm mode: no one could confirm it ({answer})"
        return f"confirm mode: asking failed: {type(answer).__name__}: {answer}"
    return "" if answer is True else "refused by the user (confirm mode)"
