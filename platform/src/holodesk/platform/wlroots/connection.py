"""One connection to a Wayland compositor: its globals, its seat and its outputs.

The wlroots route binds everything in REQUIRED; others need less (the portal
route asks any compositor for its outputs' geometry only: GEOMETRY_ONLY).

Screen and input share it (one socket, one event queue). pywayland's display is
not thread-safe, and the client may grab frames on one thread while input runs on
another, so every use holds `lock`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from holodesk.platform.base import Region
from holodesk.platform.errors import BackendUnavailableError, PlatformError
from holodesk.platform.wlroots.bindings import Protocols, protocols
from holodesk.platform.wlroots.outputs import Layout, Output

SCREENCOPY = "zwlr_screencopy_manager_v1"
VIRTUAL_POINTER = "zwlr_virtual_pointer_manager_v1"
VIRTUAL_KEYBOARD = "zwp_virtual_keyboard_manager_v1"
XDG_OUTPUT = "zxdg_output_manager_v1"
REQUIRED: dict[str, str] = {
    SCREENCOPY: "screen capture (wlr-screencopy)",
    VIRTUAL_POINTER: "pointer input (wlr-virtual-pointer)",
    VIRTUAL_KEYBOARD: "keyboard input (virtual-keyboard)",
    XDG_OUTPUT: "output geometry (xdg-output)",
    "wl_shm": "shared-memory buffers (wl_shm)",
    "wl_seat": "a seat to type on (wl_seat)",
}
# What reading the outputs' geometry needs (wl_output is bound wherever offered).
GEOMETRY_ONLY: dict[str, str] = {XDG_OUTPUT: REQUIRED[XDG_OUTPUT]}
NOT_WLROOTS_FIX = (
    "run a wlroots compositor (sway, Hyprland, river, labwc, Wayfire) that offers these "
    "protocols; on GNOME or KDE use the wayland backend (the desktop portal)"
)
NO_DISPLAY_FIX = (
    "run holodesk inside the Wayland session (WAYLAND_DISPLAY is set there), or set "
    "WAYLAND_DISPLAY to the compositor's socket (a name under $XDG_RUNTIME_DIR, or a path)"
)
_MODE_CURRENT = 1


class WlrError(PlatformError):
    """The compositor refused or broke a request."""


@dataclass
class _OutputState:
    """What the compositor said so far about one wl_output."""

    proxy: Any
    xdg: Any = None
    name: str = ""
    mode: tuple[int, int] | None = None
    transform: int = 0
    logical_position: tuple[int, int] | None = None
    logical_size: tuple[int, int] | None = None

    def output(self) -> Output | None:
        if self.mode is None or self.logical_position is None or self.logical_size is None:
            return None
        width, height = self.mode
        if self.transform % 2:  # 90 or 270 degrees: the mode is the panel's, unrotated
            width, height = height, width
        return Output(
            self.name or f"wl_output-{id(self.proxy)}",
            Region(*self.logical_position, *self.logical_size),
            width,
            height,
        )


@dataclass
class WlrConnection:
    """An open connection, its bound globals and the outputs' state."""

    display: Any
    protocols: Protocols
    lock: threading.RLock = field(default_factory=threading.RLock)
    globals: dict[str, tuple[int, int]] = field(default_factory=dict)
    bound: dict[str, Any] = field(default_factory=dict)
    needs: Mapping[str, str] = field(default_factory=lambda: REQUIRED)
    # wl_seat's capabilities (pointer 1, keyboard 2, touch 4) as last announced,
    # when the seat is bound: mutter 43 crashes on a get_keyboard without keyboard.
    seat_capabilities: int = 0
    _outputs: dict[int, _OutputState] = field(default_factory=dict)
    _registry: Any = None

    @classmethod
    def open(
        cls,
        socket: str | None = None,
        environ: Mapping[str, str] | None = None,
        needs: Mapping[str, str] = REQUIRED,
    ) -> WlrConnection:
        """Connect to `socket` (default $WAYLAND_DISPLAY) and bind the globals in `needs`
        (name: what it is for; default: everything the wlroots route needs).

        BackendUnavailableError, listing every missing protocol, when the compositor
        does not offer them.
        """
        env = os.environ if environ is None else environ
        target = socket or env.get("WAYLAND_DISPLAY", "").strip()
        if not target:
            raise BackendUnavailableError(
                [("WAYLAND_DISPLAY is not set, so there is no compositor to connect to",
                  NO_DISPLAY_FIX)],
                backend="wlroots",
            )  # fmt: skip
        bindings = protocols()
        from pywayland.client.display import Display

        display = Display(socket_path(target, env))
        try:
            display.connect()
        except Exception as error:
            raise BackendUnavailableError(
                [(f"cannot connect to the Wayland compositor at {target!r}: {error}",
                  NO_DISPLAY_FIX)],
                backend="wlroots",
            ) from error  # fmt: skip
        connection = cls(display, bindings, needs=needs)
        try:
            connection._start()
        except BaseException:
            connection.close()
            raise
        return connection

    def _start(self) -> None:
        self._registry = self.display.get_registry()
        self._registry.dispatcher["global"] = self._on_global
        self._registry.dispatcher["global_remove"] = self._on_global_remove
        self.display.roundtrip()
        missing = [what for name, what in self.needs.items() if name not in self.globals]
        if missing:
            raise BackendUnavailableError(
                [(f"this compositor does not offer {what}", NOT_WLROOTS_FIX) for what in missing],
                backend="wlroots",
            )
        wayland, p = self.protocols.wayland, self.protocols
        interfaces: dict[str, tuple[Any, int]] = {
            "wl_shm": (wayland.WlShm, 1),
            "wl_seat": (wayland.WlSeat, 1),
            XDG_OUTPUT: (p.xdg_output.ZxdgOutputManagerV1, 3),
            SCREENCOPY: (p.screencopy.ZwlrScreencopyManagerV1, 3),
            VIRTUAL_POINTER: (p.virtual_pointer.ZwlrVirtualPointerManagerV1, 2),
            VIRTUAL_KEYBOARD: (p.virtual_keyboard.ZwpVirtualKeyboardManagerV1, 1),
        }
        for name in self.needs:
            self._bind(name, *interfaces[name])
        for state in self._outputs.values():
            if XDG_OUTPUT in self.bound:
                self._watch_xdg(state)
        self.display.roundtrip()
        self.display.roundtrip()  # xdg-output's events follow its creation

    def _bind(self, name: str, interface: Any, version: int) -> None:
        global_name, offered = self.globals[name]
        proxy = self._registry.bind(global_name, interface, min(version, offered))
        if name == "wl_seat":
            # Announced right after the bind: watched before the next roundtrip.
            proxy.dispatcher["capabilities"] = self._on_seat_capabilities
        self.bound[name] = proxy

    def _on_seat_capabilities(self, _seat: Any, capabilities: int) -> None:
        self.seat_capabilities = capabilities

    def _on_global(self, registry: Any, name: int, interface: str, version: int) -> None:
        if interface == "wl_output":
            proxy = registry.bind(name, self.protocols.wayland.WlOutput, min(version, 4))
            state = _OutputState(proxy)
            proxy.dispatcher["mode"] = lambda _p, flags, w, h, _r: _on_mode(state, flags, w, h)
            proxy.dispatcher["geometry"] = lambda _p, *args: _on_geometry(state, args)
            self._outputs[name] = state
            if XDG_OUTPUT in self.bound:  # hot-plugged after start
                self._watch_xdg(state)
        else:
            self.globals.setdefault(interface, (name, version))

    def _on_global_remove(self, _registry: Any, name: int) -> None:
        self._outputs.pop(name, None)

    def _watch_xdg(self, state: _OutputState) -> None:
        xdg = self.bound[XDG_OUTPUT].get_xdg_output(state.proxy)
        state.xdg = xdg

        def position(_p: Any, x: int, y: int) -> None:
            state.logical_position = (x, y)

        def size(_p: Any, width: int, height: int) -> None:
            state.logical_size = (width, height)

        def name(_p: Any, value: str) -> None:
            state.name = value

        xdg.dispatcher["logical_position"] = position
        xdg.dispatcher["logical_size"] = size
        xdg.dispatcher["name"] = name

    # -- use -------------------------------------------------------------------------
    def roundtrip(self) -> None:
        """Send what is queued and wait until the compositor has handled it (and any
        events it sent back, output changes included, are dispatched)."""
        with self.lock:
            try:
                self.display.roundtrip()
            except Exception as error:
                raise WlrError(f"the Wayland connection failed: {error}") from error

    def flush(self) -> None:
        with self.lock:
            self.display.flush()

    def layout(self) -> Layout:
        """The outputs as the compositor last described them, sorted by position."""
        with self.lock:
            outputs = [s.output() for s in self._outputs.values()]
        known = sorted((o for o in outputs if o is not None), key=_placement)
        if not known:
            raise WlrError("the compositor reports no output with a known geometry")
        return Layout(tuple(known))

    def output_proxy(self, name: str) -> Any:
        """The wl_output of the output called `name`."""
        with self.lock:
            for state in self._outputs.values():
                output = state.output()
                if output is not None and output.name == name:
                    return state.proxy
        raise WlrError(f"the output {name!r} is gone")

    def transform_of(self, name: str) -> int:
        with self.lock:
            for state in self._outputs.values():
                output = state.output()
                if output is not None and output.name == name:
                    return state.transform
        return 0

    def close(self) -> None:
        with self.lock, contextlib.suppress(Exception):  # already gone: nothing to release
            self.display.disconnect()


def _placement(output: Output) -> tuple[int, int, str]:
    return output.logical.y, output.logical.x, output.name


def _on_mode(state: _OutputState, flags: int, width: int, height: int) -> None:
    if flags & _MODE_CURRENT:
        state.mode = (width, height)


def _on_geometry(state: _OutputState, args: tuple[Any, ...]) -> None:
    # geometry(x, y, physical_width, physical_height, subpixel, make, model, transform)
    state.transform = int(args[-1])


def socket_path(target: str, env: Mapping[str, str]) -> str:
    """WAYLAND_DISPLAY's socket: a path as given, a name under $XDG_RUNTIME_DIR."""
    if os.path.isabs(target):
        return target
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    return os.path.join(runtime, target) if runtime else target
