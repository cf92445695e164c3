"""Why SendInput inserted fewer events than it was given, and what to do about it.

SendInput reports only a count. Windows drops injected input when the input desktop
is the secure desktop (a locked workstation, a UAC prompt, Ctrl+Alt+Del), and User
Interface Privilege Isolation (UIPI) drops it when the window in front runs at a
higher integrity level (elevated) than the sender. Neither comes with a reliable
error code, so the backend gathers the facts and this module names the cause.
"""

from __future__ import annotations

from dataclasses import dataclass

_ERROR_ACCESS_DENIED = 5

ELEVATE_FIX = (
    "run the holodesk client elevated: register its Windows logon task to run with "
    "highest privileges (see packaging/), or start it from an administrator terminal"
)


@dataclass(frozen=True)
class BlockedInput:
    """What the backend knows when SendInput falls short."""

    requested: int
    inserted: int
    last_error: int
    input_desktop: str | None  # None: this process cannot open the input desktop
    foreground_elevated: bool | None  # None: unknown
    process_elevated: bool


def explain(facts: BlockedInput) -> str:
    """One message naming the most likely cause and its fix."""
    head = f"Windows accepted {facts.inserted} of {facts.requested} input events"
    desktop = facts.input_desktop
    if desktop is None or desktop.lower() != "default":
        where = f"the {desktop!r} desktop" if desktop else "a desktop this process cannot open"
        return (
            f"{head}: input goes to {where}, so the workstation is locked or the secure "
            "desktop is up (a UAC prompt or the Ctrl+Alt+Del screen), and no program may "
            "send input there. Fix: unlock the workstation or answer the prompt in person, "
            "then retry"
        )
    if facts.foreground_elevated and not facts.process_elevated:
        return (
            f"{head}: the window in front runs elevated (as administrator) and this client "
            "does not, so User Interface Privilege Isolation (UIPI) drops its input. Fix: "
            f"{ELEVATE_FIX}; or keep elevated windows out of the agent's way"
        )
    error = f" (error {facts.last_error}" + (
        ": access denied)" if facts.last_error == _ERROR_ACCESS_DENIED else ")"
    )
    return (
        f"{head}{error}: input was blocked, most likely by User Interface Privilege "
        "Isolation (UIPI: a window of higher integrity, e.g. an elevated one, has the "
        "focus) or by another program blocking input (BlockInput). Fix: "
        f"{ELEVATE_FIX}"
    )
