"""The sandbox container (packaging/container/sandbox): its entrypoint, run here.

No container runtime runs on the CI machine, so the entrypoint script is run
directly, as the image runs it: a real Xvnc, openbox, xterm and websockify
serving Debian's noVNC. The test checks what a person relies on: the desktop is
up with a window manager managing a real app's window, noVNC's page answers,
the browser's path works (a full RFB handshake over websockify's WebSocket, to
the desktop's real size and name), and SIGTERM stops every process it started
and exits 0; a dying X server takes the rest down with exit 1. Where a runtime
is present (docker or podman answering), the image itself is built and run too
(marker `container`). run.sh is checked with a stand-in runtime that records
its arguments: the one command's contract is the `run` line it executes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from holodesk.platform.base import Region
from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.select import open_backend
from tests.support.vllm_server import free_port

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "packaging" / "container" / "sandbox"
ENTRYPOINT = SANDBOX / "entrypoint.sh"
NOVNC = Path("/usr/share/novnc")
NEEDS = ("Xvnc", "websockify", "openbox", "xterm", "xdpyinfo", "xprop")
READY_S = 40.0

pytestmark = [
    pytest.mark.vnc,
    pytest.mark.skipif(
        any(shutil.which(tool) is None for tool in NEEDS) or not (NOVNC / "vnc.html").exists(),
        reason=f"needs {', '.join(NEEDS)} and noVNC (tools/setup.sh installs them)",
    ),
]


@dataclass
class Sandbox:
    process: subprocess.Popen[str]
    novnc_port: int
    lines: list[str] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, pattern: str, timeout_s: float = READY_S) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        regex = re.compile(pattern)
        with self._changed:
            while True:
                for line in self.lines:
                    match = regex.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._more()):
                    raise AssertionError(f"no line /{pattern}/ in:\n" + "\n".join(self.lines))
                self._changed.wait(min(left, 0.5))

    def _more(self) -> bool:
        return self.process.stdout is not None and not self.process.stdout.closed

    @property
    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)


def children(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """Running (a zombie counts as gone: it has exited, its parent has not reaped it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start(**env: str) -> Iterator[Sandbox]:
    novnc_port = free_port()
    settings = {
        "SANDBOX_DISPLAY": "auto",
        "SANDBOX_VNC_PORT": str(free_port()),
        "SANDBOX_NOVNC_PORT": str(novnc_port),
        "SANDBOX_NOVNC_LISTEN": "127.0.0.1",
        "SANDBOX_APPS": "xterm -title sandbox-terminal",
        "SANDBOX_START_TIMEOUT": "30",
        **env,
    }
    process = subprocess.Popen(
        [str(ENTRYPOINT)],
        env={**os.environ, **settings},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    sandbox = Sandbox(process, novnc_port)
    reader = threading.Thread(target=sandbox.read, daemon=True)
    reader.start()
    try:
        yield sandbox
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # its own group, started above
                process.wait(5)
        reader.join(5)
        # Shown by pytest only when the test failed: what the entrypoint said.
        print("entrypoint output:\n" + sandbox.output)


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    yield from start()


def wait_until(predicate: object, what: str, timeout_s: float = 30.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def x(display: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        env={**os.environ, "DISPLAY": display},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


async def rfb_handshake(port: int) -> tuple[bytes, int, int, str]:
    """What a noVNC tab does first: WebSocket to websockify, then RFB 3.8 with the
    None security type and ClientInit. Returns (version, width, height, name)."""
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            f"ws://127.0.0.1:{port}/websockify",
            protocols=("binary",),
            timeout=aiohttp.ClientWSTimeout(ws_receive=10),
        ) as ws,
    ):
        buffer = bytearray()

        async def take(count: int) -> bytes:
            while len(buffer) < count:
                message = await ws.receive(timeout=10)
                assert message.type == aiohttp.WSMsgType.BINARY, message
                buffer.extend(message.data)
            data = bytes(buffer[:count])
            del buffer[:count]
            return data

        version = await take(12)
        await ws.send_bytes(b"RFB 003.008\n")
        (count,) = await take(1)
        types = await take(count)
        assert 1 in types, f"the server offers no None security: {list(types)}"
        await ws.send_bytes(b"\x01")
        (result,) = struct.unpack(">I", await take(4))
        assert result == 0, "security handshake failed"
        await ws.send_bytes(b"\x01")  # ClientInit: shared
        width, height = struct.unpack(">HH", await take(4))
        await take(16)  # pixel format
        (length,) = struct.unpack(">I", await take(4))
        name = (await take(length)).decode()
        return version, width, height, name


def test_the_sandbox_serves_a_desktop_through_novnc_and_stops_cleanly(
    sandbox: Sandbox,
) -> None:
    ready = sandbox.wait_for_line(r"sandbox: ready: (http://\S+)")
    display = sandbox.wait_for_line(r"desktop (:\d+) \(1280x800\) up").group(1)
    assert f"localhost:{sandbox.novnc_port}/vnc.html" in ready.group(1)
    # The desktop: the X server answers, openbox manages it, the terminal's window is mapped.
    assert x(display, "xdpyinfo").returncode == 0
    wait_until(
        lambda: "_NET_SUPPORTING_WM_CHECK(WINDOW)" in x(display, "xprop", "-root").stdout,
        "openbox to take the display",
    )
    wait_until(
        lambda: (
            x(
                display, "xdotool", "search", "--onlyvisible", "--name", "sandbox-terminal"
            ).stdout.strip()
            != ""
        ),
        "the terminal's window",
    )
    # noVNC's page.
    with urllib.request.urlopen(f"http://127.0.0.1:{sandbox.novnc_port}/vnc.html", timeout=10) as r:
        page = r.read().decode()
        assert r.status == 200
    assert "noVNC" in page
    # The browser's path to the desktop: RFB over websockify's WebSocket.
    version, width, height, name = asyncio.run(rfb_handshake(sandbox.novnc_port))
    assert version.startswith(b"RFB 003.")
    assert (width, height, name) == (1280, 800, "holodesk-sandbox")
    # SIGTERM stops every process it started, then exits 0.
    started = children(sandbox.process.pid)
    assert len(started) >= 4, started  # Xvnc, openbox, xterm, websockify
    sandbox.process.send_signal(signal.SIGTERM)
    assert sandbox.process.wait(30) == 0, sandbox.output
    sandbox.wait_for_line(r"sandbox: stopped")
    assert [pid for pid in started if alive(pid)] == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", sandbox.novnc_port), timeout=2).close()
    # Xvnc took its lock away: a lock there now is another server's, one that took the
    # freed display number meanwhile (a clean CI run saw one), never ours.
    assert _lock_owner(display) not in started


def _lock_owner(display: str) -> int | None:
    """The pid in the X server lock of `display` (":N"), None when there is none."""
    try:
        return int(Path(f"/tmp/.X{display[1:]}-lock").read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError):
        return None


def test_the_x_server_dying_stops_the_sandbox_with_exit_1() -> None:
    for sandbox in start(SANDBOX_APPS=""):
        sandbox.wait_for_line(r"sandbox: ready:")
        pids = children(sandbox.process.pid)
        xvnc = next(p for p in pids if Path(f"/proc/{p}/comm").read_text().strip() == "Xvnc")
        os.kill(xvnc, signal.SIGKILL)  # a process this test's sandbox started
        assert sandbox.process.wait(30) == 1, sandbox.output
        assert "Xvnc" in sandbox.wait_for_line(r"error: process \d+ \((\w+)\) exited").group(1)
        assert [pid for pid in pids if alive(pid)] == []


def test_a_missing_novnc_is_a_clear_error() -> None:
    for sandbox in start(SANDBOX_NOVNC_WEB="/nonexistent/novnc"):
        assert sandbox.process.wait(30) == 1
        sandbox.wait_for_line(r"error: no noVNC in /nonexistent/novnc \(vnc.html missing\)")


# --- driven over plain VNC (a rollout pool): a password, no noVNC ---------------------

PASSWORD = "s3cret!"


def rfb_security_types(port: int) -> list[int]:
    """The security types the VNC server on loopback offers an RFB 3.8 client."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as conn,
        conn.makefile("rb") as reader,
    ):
        version = reader.read(12)
        assert version.startswith(b"RFB 003."), version
        conn.sendall(b"RFB 003.008\n")
        (count,) = reader.read(1)
        return list(reader.read(count))


def command_line(pid: int) -> list[str]:
    return [os.fsdecode(arg) for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]


@pytest.mark.skipif(shutil.which("vncpasswd") is None, reason="needs vncpasswd (tigervnc-tools)")
def test_driven_over_vnc_it_asks_for_the_password_and_runs_no_novnc(tmp_path: Path) -> None:
    vnc_port = free_port()
    # On loopback: the password path is the same wherever Xvnc listens, and tests listen
    # nowhere else. TMPDIR: the password directory lands where the test can see it.
    for sandbox in start(
        SANDBOX_VNC_PORT=str(vnc_port),
        SANDBOX_VNC_LISTEN="127.0.0.1",
        SANDBOX_VNC_PASSWORD=PASSWORD,
        SANDBOX_NOVNC="0",
        SANDBOX_APPS="",
        TMPDIR=str(tmp_path),
    ):
        ready = sandbox.wait_for_line(r"sandbox: ready: (\S+)").group(1)
        assert ready == f"vnc://127.0.0.1:{vnc_port}"
        sandbox.wait_for_line(rf"VNC on 127\.0\.0\.1:{vnc_port} \(VNC password\)")
        started = children(sandbox.process.pid)
        commands = {pid: command_line(pid) for pid in started}
        assert not any("websockify" in " ".join(args) for args in commands.values()), commands
        xvnc = next(pid for pid, args in commands.items() if args[0].endswith("Xvnc"))
        args = commands[xvnc]
        assert args[args.index("-SecurityTypes") + 1] == "VncAuth"
        secret = Path(args[args.index("-rfbauth") + 1])
        assert secret.parent.parent == tmp_path
        assert secret.stat().st_mode & 0o777 == 0o600
        assert secret.parent.stat().st_mode & 0o777 == 0o700
        # The programs on the desktop do not inherit the password. (A bash child between
        # its fork and its exec still shows the entrypoint's first environment: skipped.)
        programs = [
            pid for pid, args in commands.items() if Path(args[0]).name not in ("Xvnc", "bash")
        ]
        assert any(commands[pid][0].endswith("openbox") for pid in programs), commands
        for pid in programs:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # the tick's sleep
                environ = Path(f"/proc/{pid}/environ").read_bytes()
                assert b"SANDBOX_VNC_PASSWORD" not in environ, commands[pid]
        # VNC authentication only: no way in without the password.
        assert rfb_security_types(vnc_port) == [2]
        backend = open_backend("vnc", host="127.0.0.1", port=vnc_port, password=PASSWORD)
        try:
            assert backend.screen.grab(Region(0, 0, 1280, 800)).size == (1280, 800)
        finally:
            backend.close()
        with pytest.raises(BackendUnavailableError, match="rejected the VNC password"):
            open_backend("vnc", host="127.0.0.1", port=vnc_port, password="wrong")
        assert PASSWORD not in sandbox.output
        # SIGTERM: everything stopped, exit 0, the password file gone with its directory.
        sandbox.process.send_signal(signal.SIGTERM)
        assert sandbox.process.wait(30) == 0, sandbox.output
        sandbox.wait_for_line(r"sandbox: stopped")
        assert [pid for pid in started if alive(pid)] == []
        assert not secret.parent.exists()


@pytest.mark.parametrize("listen", ["0.0.0.0", "192.0.2.1"])
def test_listening_beyond_loopback_without_a_password_is_refused(
    tmp_path: Path, listen: str
) -> None:
    # A stand-in Xvnc first on PATH records whether it was started; should the refusal
    # regress, no real desktop opens on a network.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "xvnc-started"
    fake = bin_dir / "Xvnc"
    fake.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
    fake.chmod(0o755)
    for sandbox in start(
        SANDBOX_VNC_LISTEN=listen,
        SANDBOX_VNC_PASSWORD="",
        SANDBOX_NOVNC="0",
        PATH=f"{bin_dir}:{os.environ['PATH']}",
    ):
        assert sandbox.process.wait(10) == 1, sandbox.output
        error = sandbox.wait_for_line(r"sandbox: error: .*").group(0)
        assert f"SANDBOX_VNC_LISTEN={listen}" in error
        assert "SANDBOX_VNC_PASSWORD" in error
        assert not marker.exists()


def test_without_novnc_it_needs_no_novnc_files_and_names_a_dead_xvnc() -> None:
    vnc_port = free_port()
    for sandbox in start(
        SANDBOX_VNC_PORT=str(vnc_port),
        SANDBOX_VNC_LISTEN="127.0.0.1",
        SANDBOX_VNC_PASSWORD="",
        SANDBOX_NOVNC="0",
        SANDBOX_NOVNC_WEB="/nonexistent/novnc",
        SANDBOX_APPS="",
    ):
        ready = sandbox.wait_for_line(r"sandbox: ready: (\S+)").group(1)
        assert ready == f"vnc://127.0.0.1:{vnc_port}"
        assert rfb_security_types(vnc_port) == [1]
        # With websockify absent, Xvnc is the only core process: its death is named.
        pids = children(sandbox.process.pid)
        xvnc = next(p for p in pids if Path(f"/proc/{p}/comm").read_text().strip() == "Xvnc")
        os.kill(xvnc, signal.SIGKILL)  # a process this test's sandbox started
        assert sandbox.process.wait(30) == 1, sandbox.output
        sandbox.wait_for_line(rf"error: process {xvnc} \(Xvnc\) exited")


# --- run.sh, the one command ---------------------------------------------------------

RECORDER = """#!/bin/sh
# A stand-in container runtime: records each call, has no image until one is built.
echo "$*" >> "$RECORD"
case $1 in
    image) [ -e "$RECORD.built" ] ;;
    build) touch "$RECORD.built" ;;
esac
"""


def run_sh(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    runtime = tmp_path / "runtime"
    runtime.write_text(RECORDER)
    runtime.chmod(0o755)
    record = tmp_path / "calls"
    result = subprocess.run(
        [str(SANDBOX / "run.sh"), *args],
        env={**os.environ, "CONTAINER_RUNTIME": str(runtime), "RECORD": str(record)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    calls = record.read_text().splitlines() if record.exists() else []
    return result, calls


def test_run_sh_builds_once_then_runs_with_novnc_on_loopback(tmp_path: Path) -> None:
    result, calls = run_sh(tmp_path, "--port", "7000", "--demo")
    assert result.returncode == 0, result.stderr
    image, build, run = calls
    assert image == "image inspect holodesk/sandbox"
    assert build == f"build -f {SANDBOX}/Containerfile -t holodesk/sandbox {ROOT}"
    assert run.startswith("run --rm -it --name holodesk-sandbox")
    assert "-p 127.0.0.1:7000:6080" in run
    assert "-e SANDBOX_DEMO=1" in run
    assert "-e SANDBOX_GEOMETRY=1280x800" in run
    assert run.endswith(" holodesk/sandbox")
    assert "http://localhost:7000/vnc.html" in result.stdout
    # The image exists now: no second build.
    (tmp_path / "calls").unlink()
    result, calls = run_sh(tmp_path, "--server", "gpu:50051")
    assert [c.split()[0] for c in calls] == ["image", "run"]
    assert "-e HOLODESK_SERVER=gpu:50051" in calls[1]
    assert "-p 127.0.0.1:6080:6080" in calls[1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--port", "http"), "--port must be a number"),
        (("--geometry", "big"), "--geometry must be WIDTHxHEIGHT"),
        (("--nope",), "unknown option --nope"),
    ],
)
def test_run_sh_refuses_bad_options(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    result, calls = run_sh(tmp_path, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert calls == []


# --- the image definition ------------------------------------------------------------


def containerfile() -> str:
    return (SANDBOX / "Containerfile").read_text()


def test_the_containerfile_copies_what_exists_and_installs_what_the_entrypoint_runs() -> None:
    text = containerfile()
    assert text.count("FROM debian:bookworm-slim") == 2
    for source in re.findall(r"^COPY (?!--from)(\S+) ", text, re.MULTILINE):
        assert (ROOT / source).exists(), f"Containerfile copies missing {source}"
    assert "COPY packaging/container/sandbox/entrypoint.sh /usr/local/bin/holodesk-sandbox" in text
    assert 'ENTRYPOINT ["tini", "--", "holodesk-sandbox"]' in text
    assert "EXPOSE 6080" in text
    packages = set(" ".join(re.findall(r"apt-get install[^&]*", text)).split())
    debian = {
        "Xvnc": "tigervnc-standalone-server",
        "openbox": "openbox",
        "websockify": "websockify",
        "xterm": "xterm",
        "xdpyinfo": "x11-utils",
        "tini": "tini",
        "novnc": "novnc",
        "vncpasswd": "tigervnc-tools",
    }
    assert set(debian.values()) <= packages
    assert os.access(ENTRYPOINT, os.X_OK)
    assert os.access(SANDBOX / "run.sh", os.X_OK)


@pytest.mark.skipif(shutil.which("apt-cache") is None, reason="needs Debian's apt-cache")
def test_every_package_the_image_installs_is_in_debian() -> None:
    text = containerfile()
    wanted = set(" ".join(re.findall(r"apt-get install[^&]*", text)).split())
    wanted -= {"apt-get", "install", "-y", "--no-install-recommends", "\\"}
    shown = subprocess.run(
        ["apt-cache", "show", "--no-all-versions", *sorted(wanted)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = set(re.findall(r"^Package: (\S+)$", shown.stdout, re.MULTILINE))
    assert wanted - found == set(), shown.stderr


def container_runtime() -> str | None:
    for name in ("podman", "docker"):
        path = shutil.which(name)
        if path and subprocess.run([path, "info"], capture_output=True, timeout=30).returncode == 0:
            return path
    return None


@pytest.mark.container
@pytest.mark.timeout(1800)
def test_the_image_builds_and_serves_novnc() -> None:
    runtime = container_runtime()
    if runtime is None:
        pytest.skip("no container runtime answers (docker/podman info fails)")
    image = "holodesk/sandbox:test"
    build = subprocess.run(
        [runtime, "build", "-f", str(SANDBOX / "Containerfile"), "-t", image, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    port = free_port()
    name = f"holodesk-sandbox-test-{port}"
    subprocess.run(
        [runtime, "run", "-d", "--rm", "--name", name, "-p", f"127.0.0.1:{port}:6080", image],
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:

        def page() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/vnc.html", timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        wait_until(page, "noVNC in the container", timeout_s=60)
        _version, width, height, desktop = asyncio.run(rfb_handshake(port))
        assert (width, height, desktop) == (1280, 800, "holodesk-sandbox")
    finally:
        stop = subprocess.run([runtime, "stop", "-t", "15", name], capture_output=True, timeout=60)
    assert stop.returncode == 0


@pytest.mark.e2e
@pytest.mark.timeout(180)
def test_holodesk_demo_runs_on_the_sandbox_desktop() -> None:
    """What --demo runs in the image, on the sandbox's desktop (openbox on Xvnc): the
    whole stack with the OCR policy fills in and submits the form."""
    for sandbox in start(SANDBOX_APPS=""):
        display = sandbox.wait_for_line(r"desktop (:\d+) \(1280x800\) up").group(1)
        sandbox.wait_for_line(r"sandbox: ready:")
        holodesk = shutil.which("holodesk")
        assert holodesk is not None
        demo = subprocess.run(
            [holodesk, "demo", "--display", display],
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
        )
        out = demo.stdout + demo.stderr
        assert "succeeded after" in out, out
        name = "héllo wörld ñ € 日本"
        assert f"the app received: name='{name}', submitted='{name}'" in out
        assert demo.returncode == 0, out
