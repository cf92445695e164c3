"""A headless sway for tests: private runtime directory, XWayland, IPC through swaymsg.

sway refuses to run as root (it drops privileges it cannot regain, or will not
start), and CI runs as root: there it runs as `nobody`, in a runtime directory
made for it, and its XWayland is opened to root with xhost. When sway cannot
start, SwayUnavailableError says why (the fixtures fail with it, never skip).

A headless sway has no input device of its own, so its seat would have a pointer
and a keyboard only while some test's backend is open, and each open and close
would add and remove the seat's capabilities. Clients rebind their wl_pointer and
wl_keyboard each time, and sway 1.7 (wlroots 0.15) crashes now and then on such a
rebind (SIGSEGV in a request handler near its relative-pointer code, a GTK client
binding as the capability flapped: 1 in 2 to 26 app launches with a backend
opened and closed in between; none in 60 with the devices kept). So the sway holds
one virtual pointer and keyboard of its own for its whole life, as a desktop's
mouse and keyboard stay plugged in; they send nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.platform.base import Backend
from holodesk.platform.errors import PlatformError
from holodesk.platform.select import open_backend

START_TIMEOUT_S = 20.0
INSTALL_FIX = "apt-get install sway xwayland x11-xserver-utils (tools/setup.sh does)"
BASE_CONFIG = """\
xwayland force
default_border none
focus_follows_mouse no
# X11 windows float where they ask to be, so the probe app's own geometry holds.
for_window [class=".*"] floating enable, move absolute position {window_x} {window_y}
"""


class SwayUnavailableError(RuntimeError):
    """sway could not start here; the message says why and how to fix it."""


@dataclass
class Sway:
    """A running headless sway."""

    process: subprocess.Popen[bytes]
    runtime_dir: Path
    wayland_socket: str  # an absolute path: WAYLAND_DISPLAY accepts one
    ipc_socket: str
    x_display: str
    log_path: Path
    # The seat's resident pointer and keyboard (see above); None once stopped.
    seat_devices: Backend | None = None

    @classmethod
    def start(
        cls,
        outputs: Sequence[str] = ("output HEADLESS-1 resolution 1280x800 position 0,0",),
        *,
        headless_outputs: int = 1,
        window_position: tuple[int, int] = (40, 30),
    ) -> Sway:
        """Start sway with one headless output per `headless_outputs`, configured by
        `outputs` (sway config lines), and wait for its sockets and XWayland."""
        binary = shutil.which("sway")
        if binary is None:
            raise SwayUnavailableError(f"sway is not installed: {INSTALL_FIX}")
        if shutil.which("Xwayland") is None:
            raise SwayUnavailableError(f"Xwayland is not installed: {INSTALL_FIX}")
        runtime = Path(tempfile.mkdtemp(prefix="holodesk-sway-"))
        config = runtime / "config"
        config.write_text(
            BASE_CONFIG.format(window_x=window_position[0], window_y=window_position[1])
            + "\n".join(outputs)
            + "\n"
        )
        as_user: list[str] = []
        if os.geteuid() == 0:
            os.chown(runtime, 65534, 65534)
            os.chown(config, 65534, 65534)
            as_user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(runtime),
            "XDG_RUNTIME_DIR": str(runtime),
            "WLR_BACKENDS": "headless",
            "WLR_HEADLESS_OUTPUTS": str(headless_outputs),
            "WLR_LIBINPUT_NO_DEVICES": "1",
            "WLR_RENDERER": "pixman",
        }
        log_path = runtime / "sway.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*as_user, binary, "-c", str(config)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            wayland, ipc = _wait_for_sockets(process, runtime, log_path)
            x_display = _wait_for_xwayland(runtime, log_path)
            _open_x_to_root(x_display, as_user)
            devices = open_backend("wlroots", socket=wayland)
        except BaseException:
            _terminate(process)
            shutil.rmtree(runtime, ignore_errors=True)
            raise
        return cls(process, runtime, wayland, ipc, x_display, log_path, devices)

    def msg(self, *args: str) -> Any:
        """swaymsg's JSON answer (`msg("-t", "get_outputs")`, `msg("output * scale 2")`)."""
        result = subprocess.run(
            ["swaymsg", "-s", self.ipc_socket, "-r", *args],
            capture_output=True,
            timeout=10,
            check=False,
        )
        if result.returncode != 0:
            why = (result.stderr or result.stdout).decode(errors="replace").strip()
            raise RuntimeError(f"swaymsg {' '.join(args)} failed: {why}")
        return json.loads(result.stdout or b"null")

    def command(self, command: str) -> None:
        answers = self.msg(command)
        failed = [a for a in answers if not a.get("success")]
        if failed:
            raise RuntimeError(f"sway refused {command!r}: {failed}")

    def environ(self) -> dict[str, str]:
        """What a client of this sway needs in its environment."""
        return {"WAYLAND_DISPLAY": self.wayland_socket}

    def stop(self) -> None:
        if self.seat_devices is not None:
            devices, self.seat_devices = self.seat_devices, None
            with contextlib.suppress(PlatformError):  # sway already gone: nothing to release
                devices.close()
        _terminate(self.process)
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


@contextlib.contextmanager
def running_sway(**options: Any) -> Iterator[Sway]:
    sway = Sway.start(**options)
    try:
        yield sway
    finally:
        sway.stop()


def _wait_for_sockets(
    process: subprocess.Popen[bytes], runtime: Path, log_path: Path
) -> tuple[str, str]:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SwayUnavailableError(
                f"sway exited with {process.returncode} at start: {_tail(log_path)}"
            )
        wayland = [p for p in runtime.glob("wayland-*") if not p.name.endswith(".lock")]
        ipc = list(runtime.glob("sway-ipc.*.sock"))
        if wayland and ipc:
            return str(wayland[0]), str(ipc[0])
        time.sleep(0.05)
    raise SwayUnavailableError(f"sway made no sockets in {START_TIMEOUT_S:g} s: {_tail(log_path)}")


def _wait_for_xwayland(runtime: Path, log_path: Path) -> str:
    """The display of the XWayland this sway started: its command line names it, and
    its environment is sway's (wlroots double-forks it, so it is no child of sway)."""
    marker = f"XDG_RUNTIME_DIR={runtime}".encode()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for proc in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                if not argv[0].endswith(b"Xwayland"):
                    continue
                if marker in (proc / "environ").read_bytes().split(b"\0"):
                    return next(a.decode() for a in argv if a.startswith(b":"))
        time.sleep(0.05)
    raise SwayUnavailableError(f"sway started no XWayland: {_tail(log_path)}")


def _open_x_to_root(display: str, as_user: Sequence[str]) -> None:
    """Let root's clients in: XWayland admits only its own user's by default."""
    if not as_user:
        return
    if shutil.which("xhost") is None:
        raise SwayUnavailableError(f"xhost is not installed: {INSTALL_FIX}")
    deadline = time.monotonic() + START_TIMEOUT_S
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DISPLAY": display}
    while True:
        result = subprocess.run(
            [*as_user, "xhost", "+si:localuser:root"], env=env, capture_output=True, check=False
        )
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise SwayUnavailableError(f"XWayland {display} did not answer: {result.stderr!r}")
        time.sleep(0.1)


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
