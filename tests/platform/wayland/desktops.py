"""A headless GNOME (mutter) or KDE (KWin) desktop for tests, with its portal and PipeWire.

Each desktop gets a private runtime directory and HOME, its own session bus
(dbus-daemon with the standard service directories, so xdg-desktop-portal can
activate the permission store and document portal), PipeWire with WirePlumber,
the compositor (mutter --headless --virtual-monitor, or kwin_wayland --virtual,
each with an XWayland), the compositor's portal backend and xdg-desktop-portal
itself; a KDE desktop also gets a notification server (notification_server.py),
as plasmashell is on a real one. Every process of it carries the runtime
directory in its environment, which is how stop() finds the ones D-Bus
activated.

KWin's binary carries file capabilities (cap_sys_resource) that a container's
bounding set may lack (exec then fails with EPERM): a copy without them is run.
When something cannot start, DesktopUnavailableError says what and why (the
fixtures fail with it, never skip).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.platform.wayland.kwin_screenshot import NO_CHECKS_ENV

START_TIMEOUT_S = 30.0
INSTALL_FIX = {
    "mutter": "apt-get install mutter xdg-desktop-portal xdg-desktop-portal-gnome pipewire "
    "wireplumber gstreamer1.0-pipewire gstreamer1.0-tools (tools/setup.sh does)",
    "kwin": "apt-get install kwin-wayland xdg-desktop-portal xdg-desktop-portal-kde qtwayland5 "
    "pipewire wireplumber gstreamer1.0-pipewire gstreamer1.0-tools (tools/setup.sh does)",
}
PORTAL = "/usr/libexec/xdg-desktop-portal"
BACKENDS = {
    "mutter": "/usr/libexec/xdg-desktop-portal-gnome",
    "kwin": "/usr/lib/x86_64-linux-gnu/libexec/xdg-desktop-portal-kde",
}
# The bus name each backend owns; the portal activates it by that name if it is not owned.
BACKEND_NAMES = {
    "mutter": "org.freedesktop.impl.portal.desktop.gnome",
    "kwin": "org.freedesktop.impl.portal.desktop.kde",
}
DESKTOP_NAMES = {"mutter": "GNOME", "kwin": "KDE"}
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={directory}</listen>
  <auth>EXTERNAL</auth>
  <standard_session_servicedirs/>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
X11_SOCKETS = Path("/tmp/.X11-unix")
NOTIFICATION_SERVER = Path(__file__).with_name("notification_server.py")
NOTIFICATIONS = "org.freedesktop.Notifications"
_MUTTER_X = re.compile(r"Using public X11 display (:\d+)")


class DesktopUnavailableError(RuntimeError):
    """The headless desktop could not start here; the message says why and the fix."""


@dataclass
class HeadlessDesktop:
    """A running headless desktop: its bus, sockets and processes."""

    kind: str  # "mutter" or "kwin"
    runtime_dir: Path
    bus_address: str
    wayland_display: str
    x_display: str
    width: int
    height: int
    # KWin only: let any client take screenshots through org.kde.KWin.ScreenShot2 (what
    # a headless KWin for agents sets), else only the ones its desktop files trust.
    screenshots_for_anyone: bool = False
    # KWin only: the output's scale; width and height stay logical (its mode is their
    # product with it).
    scale: float = 1.0
    # KWin only: the keyboard layouts (xkb names, comma-separated: "de", "us,ru"), as
    # Plasma's keyboard settings give them; empty: KWin's default (us).
    layouts: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        kind: str,
        width: int = 1280,
        height: int = 800,
        *,
        screenshots_for_anyone: bool = False,
        scale: float = 1.0,
        layouts: str = "",
    ) -> HeadlessDesktop:
        if kind not in BACKENDS:
            raise ValueError(f"kind must be one of {', '.join(BACKENDS)}, not {kind!r}")
        runtime = Path(tempfile.mkdtemp(prefix=f"holodesk-{kind}-"))
        runtime.chmod(0o700)
        if scale != 1.0 and kind != "kwin":
            raise ValueError("only the KWin desktop takes a scale here")
        if layouts and kind != "kwin":
            raise ValueError("only the KWin desktop takes keyboard layouts here")
        desktop = cls(
            kind, runtime, "", "", "", width, height, screenshots_for_anyone, scale, layouts
        )
        try:
            desktop._start_all()
        except BaseException:
            desktop.stop()
            raise
        return desktop

    # -- environment ------------------------------------------------------------
    @property
    def log_dir(self) -> Path:
        return self.runtime_dir / "logs"

    @property
    def notification_log(self) -> Path:
        """KWin only: what the desk's notification server was sent (JSON lines)."""
        return self.log_dir / "notifications.jsonl"

    def environ(self) -> dict[str, str]:
        """The environment every process of this desktop (and its clients) runs in."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.runtime_dir / "home"),
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "XDG_CONFIG_HOME": str(self.runtime_dir / "home" / ".config"),
            "XDG_STATE_HOME": str(self.runtime_dir / "home" / ".local" / "state"),
            "XDG_CURRENT_DESKTOP": DESKTOP_NAMES[self.kind],
            "XDG_SESSION_TYPE": "wayland",
            "NO_AT_BRIDGE": "1",
            "LANG": "C.UTF-8",
        }
        if self.kind == "kwin":
            env |= {"QT_QPA_PLATFORM": "wayland", "KDE_FULL_SESSION": "true"}
        if self.bus_address:
            env["DBUS_SESSION_BUS_ADDRESS"] = self.bus_address
        if self.wayland_display:
            env["WAYLAND_DISPLAY"] = self.wayland_display
        if self.x_display:
            env["DISPLAY"] = self.x_display
        return env

    # -- start ------------------------------------------------------------------
    def _start_all(self) -> None:
        for binary in ("dbus-daemon", "pipewire", "wireplumber", "gst-launch-1.0"):
            if shutil.which(binary) is None:
                raise DesktopUnavailableError(
                    f"{binary} is not installed: {INSTALL_FIX[self.kind]}"
                )
        for path in (PORTAL, BACKENDS[self.kind]):
            if not Path(path).exists():
                raise DesktopUnavailableError(f"{path} is not installed: {INSTALL_FIX[self.kind]}")
        (self.runtime_dir / "home" / ".config").mkdir(parents=True)
        self.log_dir.mkdir()
        self._start_bus()
        self._update_activation_environment()
        if self.kind == "mutter":
            self._configure_gnome()
        else:
            # A key held while a check looks would auto-repeat after KWin's 600 ms; and
            # KWin takes Meta with a click or the wheel for itself (moving, resizing,
            # opacity), which the conformance suite sends to the app.
            config = self.runtime_dir / "home" / ".config"
            (config / "kcminputrc").write_text("[Keyboard]\nKeyRepeat=nothing\n")
            if self.layouts:  # what Plasma's keyboard settings write
                (config / "kxkbrc").write_text(f"[Layout]\nLayoutList={self.layouts}\nUse=true\n")
            (config / "kwinrc").write_text(
                "[MouseBindings]\nCommandAll1=Nothing\nCommandAll2=Nothing\n"
                "CommandAll3=Nothing\nCommandAllWheel=Nothing\n"
            )
        if self.kind == "kwin":
            self._start_notification_server()
        self._spawn("pipewire", ["pipewire"])
        self._wait(lambda: (self.runtime_dir / "pipewire-0").exists(), "pipewire's socket")
        self._spawn("wireplumber", ["wireplumber"])
        self._start_compositor()
        self._update_activation_environment()
        backend = self._spawn("portal-backend", [BACKENDS[self.kind]])
        # Before the portal starts: it activates the backend by name when nobody owns
        # it, and the second backend (or ours, losing the name) then exits at once.
        self._wait(
            lambda: self._owned_by(BACKEND_NAMES[self.kind], backend.pid),
            f"{Path(BACKENDS[self.kind]).name} on the bus",
        )
        self._spawn("portal", [PORTAL, "-r"])
        self._wait(self._portal_answers, "xdg-desktop-portal on the bus")

    def _start_bus(self) -> None:
        config = self.runtime_dir / "bus.conf"
        config.write_text(BUS_CONFIG.format(directory=self.runtime_dir))
        process = self._spawn(
            "dbus",
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        address = process.stdout.readline().decode().strip()  # printed once it listens
        if not address:
            raise DesktopUnavailableError(f"dbus-daemon exited with {process.wait()}")
        self.bus_address = address

    def _start_notification_server(self) -> None:
        # Before the portal backend, which notifies at every remote-control start.
        command = [sys.executable, str(NOTIFICATION_SERVER), self.bus_address]
        server = self._spawn("notifications", [*command, str(self.notification_log)])
        self._wait(lambda: self._owned_by(NOTIFICATIONS, server.pid), "the notification server")

    def _start_compositor(self) -> None:
        size = (self.width, self.height)
        # Both XWaylands listen in /tmp/.X11-unix but, unlike Xvfb, neither makes it: on a
        # fresh machine where no X server ran before, KWin aborts ("Failed to establish X11
        # socket") and mutter runs without XWayland.
        if not X11_SOCKETS.is_dir():
            X11_SOCKETS.mkdir()
            X11_SOCKETS.chmod(0o1777)  # as X servers make it: anyone's socket, theirs alone
        if self.kind == "mutter":
            if shutil.which("mutter") is None:
                raise DesktopUnavailableError(f"mutter is not installed: {INSTALL_FIX['mutter']}")
            monitor = f"{size[0]}x{size[1]}"
            command = ["mutter", "--headless", "--virtual-monitor", monitor, "--wayland"]
        else:
            binary = shutil.which("kwin_wayland")
            if binary is None:
                raise DesktopUnavailableError(
                    f"kwin_wayland is not installed: {INSTALL_FIX['kwin']}"
                )
            copy = self.runtime_dir / "kwin_wayland"
            shutil.copyfile(binary, copy)  # without its file capabilities (see above)
            copy.chmod(0o755)
            command = [str(copy), "--virtual", "--width", str(size[0]), "--height", str(size[1])]
            command += ["--scale", str(self.scale), "--xwayland", "--socket", "wayland-0"]
        trust = {NO_CHECKS_ENV: "1"} if self.screenshots_for_anyone else {}
        self._spawn("compositor", command, extra_env=trust)
        self._wait(lambda: (self.runtime_dir / "wayland-0").exists(), "the Wayland socket")
        self.wayland_display = "wayland-0"
        self.x_display = self._find_x_display()
        self._open_x_to_everyone_local()

    def _open_x_to_everyone_local(self) -> None:
        """Let local clients in without the compositor's cookie (the probe app gets no
        XAUTHORITY): xhost, run with the cookie file the compositor made."""
        if shutil.which("xhost") is None:
            raise DesktopUnavailableError(
                "xhost is not installed: apt-get install x11-xserver-utils"
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            for cookie in [None, *self.runtime_dir.glob(".mutter-Xwaylandauth*"),
                           *self.runtime_dir.glob("xauth_*")]:  # fmt: skip
                env = {**self.environ(), **({"XAUTHORITY": str(cookie)} if cookie else {})}
                result = subprocess.run(
                    ["xhost", "+local:"], env=env, capture_output=True, check=False, timeout=20
                )
                if result.returncode == 0:
                    return
            if time.monotonic() > deadline:
                raise DesktopUnavailableError(
                    f"XWayland {self.x_display} did not let us in: {result.stderr!r}"
                )
            time.sleep(0.1)

    def _find_x_display(self) -> str:
        log = self.log_dir / "compositor.log"
        if self.kind == "mutter":
            found: list[str] = []

            def logged() -> bool:
                found[:] = _MUTTER_X.findall(log.read_text(errors="replace"))
                return bool(found)

            self._wait(logged, "mutter's XWayland display in its log")
            return found[0]
        # KWin starts XWayland with -displayfd; its command line names the display.
        marker = f"XDG_RUNTIME_DIR={self.runtime_dir}".encode()
        displays: list[str] = []

        def xwayland() -> bool:
            for proc in _processes_with(marker):
                argv = _read(proc / "cmdline").split(b"\0")
                if argv and argv[0].endswith(b"Xwayland"):
                    displays[:] = [a.decode() for a in argv if re.fullmatch(rb":\d+", a)]
                    return bool(displays)
            return False

        self._wait(xwayland, "KWin's XWayland")
        return displays[0]

    def _configure_gnome(self) -> None:
        """GNOME takes Super for itself (alone: the overview; with a click: moving the
        window), and the conformance suite sends Super to the app, so both are turned
        off; and key repeat, as a key held while a check looks would repeat after 500 ms."""
        for schema, key, value in (
            ("org.gnome.mutter", "overlay-key", ""),
            ("org.gnome.desktop.wm.preferences", "mouse-button-modifier", ""),
            ("org.gnome.desktop.peripherals.keyboard", "repeat", "false"),
        ):
            result = subprocess.run(
                ["gsettings", "set", schema, key, value],
                env=self.environ(),
                capture_output=True,
                check=False,
                timeout=20,
            )
            if result.returncode != 0:
                raise DesktopUnavailableError(
                    f"gsettings set {schema} {key} failed: {result.stderr.decode(errors='replace')}"
                )

    def _update_activation_environment(self) -> None:
        """Services D-Bus activates (document portal, permission store) get this desktop's env."""
        pairs = [f"{key}={value}" for key, value in self.environ().items()]
        result = subprocess.run(
            ["dbus-update-activation-environment", *pairs],
            env=self.environ(),
            capture_output=True,
            check=False,
            timeout=20,
        )
        if result.returncode != 0:
            raise DesktopUnavailableError(
                "dbus-update-activation-environment failed: "
                + result.stderr.decode(errors="replace")
            )

    def _portal_answers(self) -> bool:
        """Whether the portal we started owns its name and answers.

        Asking the name before it is owned would make D-Bus activate a second
        xdg-desktop-portal, which ours (-r) then replaces, perhaps after a test
        has opened its session there: KDE's backend then drops that session
        ("disconnected without replying", "Invalid session"). So the owner is
        asked of the bus itself first, which activates nothing.
        """
        if not self._owned_by("org.freedesktop.portal.Desktop", self._portal_pid()):
            return False
        result = subprocess.run(
            ["busctl", "--address", self.bus_address, "get-property",
             "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
             "org.freedesktop.portal.RemoteDesktop", "version"],
            capture_output=True,
            check=False,
            timeout=20,
        )  # fmt: skip
        return result.returncode == 0

    def _owned_by(self, name: str, pid: int) -> bool:
        """Whether process `pid` owns bus name `name` (asked of the bus: activates nothing)."""
        owner = subprocess.run(
            ["busctl", "--address", self.bus_address, "call", "org.freedesktop.DBus",
             "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
             "s", name],
            capture_output=True,
            text=True,
            check=False,
            timeout=20,
        )  # fmt: skip
        return owner.returncode == 0 and owner.stdout.split() == ["u", str(pid)]

    def _portal_pid(self) -> int:
        (portal,) = (p for p in self.processes if p.args[0] == PORTAL)  # type: ignore[index]
        return portal.pid

    def _spawn(
        self,
        name: str,
        command: list[str],
        stdout: int | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        log = (self.log_dir / f"{name}.log").open("wb")
        try:
            process = subprocess.Popen(
                command,
                env=self.environ() | (extra_env or {}),
                stdin=subprocess.DEVNULL,
                stdout=stdout if stdout is not None else log,
                stderr=log,
                cwd=self.runtime_dir,
            )
        except OSError as error:
            raise DesktopUnavailableError(f"cannot start {command[0]}: {error}") from error
        finally:
            log.close()
        self.processes.append(process)
        return process

    def _wait(self, done: object, what: str) -> None:
        assert callable(done)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not done():
            for process in self.processes:
                if process.poll() is not None:
                    name = Path(str(process.args[0])).name  # type: ignore[index]
                    raise DesktopUnavailableError(
                        f"{name} exited with {process.returncode} while waiting for {what}: "
                        + self.log_tail()
                    )
            if time.monotonic() > deadline:
                raise DesktopUnavailableError(
                    f"no {what} within {START_TIMEOUT_S:g} s: {self.log_tail()}"
                )
            time.sleep(0.05)

    def log_tail(self, lines: int = 6) -> str:
        """The last lines of every log, for failure messages."""
        tails = []
        for path in sorted(self.log_dir.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            if text:
                tails.append(f"[{path.stem}] " + " | ".join(text))
        return " ; ".join(tails) or "(no logs)"

    # -- stop -------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process of this desktop, the D-Bus-activated ones too."""
        marker = f"XDG_RUNTIME_DIR={self.runtime_dir}".encode()
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        deadline = time.monotonic() + 5
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in _processes_with(marker):
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(proc.name), sig)
            while _processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            deadline = time.monotonic() + 5
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _processes_with(marker: bytes) -> list[Path]:
    """Live processes (not zombies) whose environment holds `marker`."""
    found = []
    own = os.getpid()
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) == own:
            continue
        if marker in _read(proc / "environ").split(b"\0"):
            stat = _read(proc / "stat")
            if b") Z " not in stat:
                found.append(proc)
    return found
