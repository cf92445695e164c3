"""What the client allows, as one value; the defaults are the safe choice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from holodesk.client import actions as a
from holodesk.client.safety.chords import Chord, ChordRule, parse_rule
from holodesk.platform.base import Region
from holodesk.platform.safety.hotkeys import DEFAULT_EMERGENCY_STOP
from holodesk.platform.safety.hotkeys import parse_chord as parse_hotkey
from holodesk.proto.limits import MAX_ACTIONS

# The contract's action kinds (the oneof names of holodesk.v1.Action).
ACTION_KINDS: tuple[str, ...] = (
    "click",
    "move",
    "mouse_down",
    "mouse_up",
    "drag",
    "scroll",
    "type_text",
    "key_chord",
    "key_down",
    "key_up",
    "wait",
    "navigate",
    "done",
    "fail",
    "ask_user",
)
# A session must always be able to end, whatever the allowlist says.
ALWAYS_ALLOWED: frozenset[str] = frozenset({"done", "fail"})

# Chords that take the desktop away from the agent and the user, or cannot be undone
# from inside it. alt+f4 is not here: agents close windows with it all the time.
# "CHORD except OS,..." leaves it allowed on those targets (Backend.os).
DEFAULT_DENIED_CHORDS: tuple[str, ...] = (
    "ctrl+alt+delete",  # Windows secure attention; reboots many Linux consoles
    "ctrl+alt+backspace",  # kills the X server where "zapping" is on
    # Locks the screen (Windows, GNOME): the agent cannot unlock it. On macOS it is
    # cmd+L, the address bar navigate uses; a VNC desktop may be any OS, so it counts.
    "meta+l except darwin",
    "ctrl+alt+l",  # locks the screen (KDE, Xfce, Cinnamon)
    "ctrl+meta+q",  # locks the screen (macOS)
    *(f"ctrl+alt+f{n}" for n in range(1, 13)),  # switches to a text console (Linux)
    # A shell or a run dialog: from there a model could do anything the user can.
    "ctrl+alt+t",  # opens a terminal (GNOME, Ubuntu, Cinnamon, Xfce)
    "alt+f2",  # the run dialog (GNOME, KDE, Xfce)
    "alt+space",  # KRunner (KDE); also the window menu elsewhere
    "meta+r",  # the Run dialog (Windows)
    "meta+x",  # the power-user menu with Terminal (Admin) (Windows)
    "ctrl+shift+escape",  # the Task Manager and its "Run new task" (Windows)
    "alt+printscreen",  # magic SysRq: with a letter it reboots, kills or syncs (Linux)
)
DEFAULT_MAX_ACTIONS_PER_SECOND = 10.0
# Bounds on what one step may ask (holodesk.client.safety.bounds): a long text or a
# long batch holds the desktop for as long as it runs. 0 turns a bound off.
DEFAULT_MAX_TYPE_CHARS = 10_000  # per type action (or URL typed into an address bar)
# Per batch (one model step): at most the contract's, past which a batch is a broken
# daemon's (the session ends: the results could not be answered within the contract).
DEFAULT_MAX_BATCH_ACTIONS = MAX_ACTIONS
DEFAULT_MAX_CHARS_PER_SECOND = 1_000.0  # typed characters, sustained
DEFAULT_FAIL_SAFE_PX = 4

# Asked before each action in confirm mode; True runs it.
Confirm = Callable[[a.Action], bool]


@dataclass(frozen=True)
class SafetySettings:
    # The global hotkey that stops the session at once; None turns it off.
    emergency_stop: str | None = DEFAULT_EMERGENCY_STOP
    # Stop when the pointer sits in a display corner before an action (where the
    # client did not put it): fling the mouse into a corner to stop the agent.
    fail_safe: bool = True
    # Size of the square in each display corner that counts as "in the corner".
    fail_safe_px: int = DEFAULT_FAIL_SAFE_PX
    # Action kinds that may run (None: all); done and fail always may.
    allowed_kinds: frozenset[str] | None = None
    denied_chords: tuple[str, ...] = DEFAULT_DENIED_CHORDS
    # Actions per second, sustained; excess actions wait. 0 turns the limit off.
    max_actions_per_second: float = DEFAULT_MAX_ACTIONS_PER_SECOND
    # Actions that may run back to back before the rate applies (0: one second's worth).
    burst: int = 0
    # Characters one type action may carry; longer ones are REJECTED (0: no limit).
    max_type_chars: int = DEFAULT_MAX_TYPE_CHARS
    # Actions one batch may hold (1 to the contract's 64); a longer batch is refused whole.
    max_batch_actions: int = DEFAULT_MAX_BATCH_ACTIONS
    # Typed characters per second, sustained; actions past it wait (0: no limit).
    # One action of max_type_chars may go at once (the burst), then the rate applies.
    max_chars_per_second: float = DEFAULT_MAX_CHARS_PER_SECOND
    # Confirm mode: asked before every action that touches the desktop.
    confirm: Confirm | None = None
    # Desktop regions (physical pixels) painted black in every frame before encoding.
    redact: tuple[Region, ...] = ()
    _rules: tuple[ChordRule, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.emergency_stop is not None:
            parse_hotkey(self.emergency_stop)  # a bad hotkey is an error now, not later
        if self.fail_safe_px < 1:
            raise ValueError(f"fail_safe_px must be at least 1, got {self.fail_safe_px}")
        if self.allowed_kinds is not None:
            unknown = sorted(self.allowed_kinds - set(ACTION_KINDS))
            if unknown:
                raise ValueError(
                    f"unknown action kind(s) {', '.join(unknown)}: use {', '.join(ACTION_KINDS)}"
                )
        if self.max_actions_per_second < 0 or self.burst < 0:
            raise ValueError("the rate limit and burst must not be negative")
        if self.max_type_chars < 0 or self.max_chars_per_second < 0:
            raise ValueError("the text and typing-rate limits must not be negative")
        if not 1 <= self.max_batch_actions <= MAX_ACTIONS:
            raise ValueError(
                f"max_batch_actions must be 1 to {MAX_ACTIONS} (the contract's), "
                f"not {self.max_batch_actions}"
            )
        for region in self.redact:
            if region.width == 0 or region.height == 0:
                raise ValueError(f"a redacted region must not be empty: {region}")
        object.__setattr__(self, "_rules", tuple(parse_rule(c) for c in self.denied_chords))

    def chords_on(self, os: str) -> tuple[Chord, ...]:
        """The chords denied on a target (Backend.os)."""
        return tuple(rule.chord for rule in self._rules if rule.applies_on(os))

    @property
    def burst_size(self) -> int:
        if self.burst:
            return self.burst
        return max(1, round(self.max_actions_per_second))

    @property
    def char_burst_size(self) -> int:
        """Characters that may be typed back to back: one longest action's worth, so
        an action within its limit never waits on an idle client (else one second's)."""
        return max(1, self.max_type_chars or round(self.max_chars_per_second))
