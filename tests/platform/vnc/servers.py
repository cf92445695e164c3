"""Real VNC servers for tests: TigerVNC's Xvnc, and x11vnc serving an Xvfb."""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from PIL import Image

from holodesk.platform.virtual_display import VirtualDisplay

# The fixed key VNC servers obfuscate stored passwords with (vncpasswd's format).
_OBFUSCATION_KEY = bytes.fromhex("e84ad660c4721ae0")
_START_TIMEOUT_S = 20.0


def require(program: str, package: str) -> str:
    """The program's path, or skip: these tests need a Debian package installed.

    Under CI (tools/setup.sh installs the package) a missing program fails instead.
    """
    path = shutil.which(program)
    if path is None:
        message = f"{program} is not installed (apt-get install {package}; tools/setup.sh does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def xvnc_version() -> tuple[int, ...]:
    """TigerVNC's version, from `Xvnc -version` ("Xvnc TigerVNC 1.12.0 - built ...")."""
    shown = subprocess.run(
        [require("Xvnc", "tigervnc-standalone-server"), "-version"],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    match = re.search(r"TigerVNC (\d+(?:\.\d+)+)", shown.stdout + shown.stderr)
    if match is None:
        raise RuntimeError(f"no TigerVNC version in: {shown.stdout + shown.stderr!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def password_file(directory: Path, password: str) -> Path:
    """A vncpasswd-format file: the password DES-encrypted with the fixed key."""
    plain = password.encode()[:8].ljust(8, b"\0")
    encryptor = Cipher(TripleDES(_OBFUSCATION_KEY * 3), modes.ECB()).encryptor()
    path = directory / "passwd"
    path.write_bytes(encryptor.update(plain) + encryptor.finalize())
    path.chmod(0o600)
    return path


def wait_for_port(port: int, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """Until the server accepts TCP connections (it listens shortly after starting)."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the VNC server did not start listening on {port}: {_tail(log)}")
        time.sleep(0.05)


@dataclass
class VncServer:
    """A running VNC server: its X display, its RFB port, its password."""

    display: str
    port: int
    password: str | None
    process: subprocess.Popen[bytes]
    log: IO[bytes] = field(repr=False)

    def options(self) -> dict[str, object]:
        """Keyword arguments for open_backend("vnc", ...)."""
        return {"host": "127.0.0.1", "port": self.port, "password": self.password}

    def kill(self) -> None:
        """End the server abruptly (SIGKILL), as a crash or a lost VM would."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        if not self.log.closed:
            self.log.close()

    def output(self) -> str:
        return "log closed" if self.log.closed else _tail(self.log)


@contextlib.contextmanager
def xvnc(
    width: int = 1280,
    height: int = 800,
    password: str | None = None,
    port: int | None = None,
) -> Iterator[VncServer]:
    """A TigerVNC Xvnc: an X server whose screen is served over VNC."""
    with tempfile.TemporaryDirectory(prefix="holodesk-xvnc-") as tmp:
        server = start_xvnc(Path(tmp), width, height, password, port)
        try:
            yield server
        finally:
            server.stop()


def start_xvnc(
    directory: Path,
    width: int = 1280,
    height: int = 800,
    password: str | None = None,
    port: int | None = None,
) -> VncServer:
    """Start Xvnc (the caller stops it); `port` None picks a free one."""
    binary = require("Xvnc", "tigervnc-standalone-server")
    security = ["-SecurityTypes", "None"]
    if password is not None:
        security = [
            "-SecurityTypes",
            "VncAuth",
            "-PasswordFile",
            str(password_file(directory, password)),
        ]
    chosen = port or free_port()
    read_fd, write_fd = os.pipe()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
    args = [
        binary,
        "-displayfd",
        str(write_fd),
        "-geometry",
        f"{width}x{height}",
        "-depth",
        "24",
        "-rfbport",
        str(chosen),
        "-interface",
        "127.0.0.1",
        "-nolisten",
        "tcp",
        "-AlwaysShared",
        *security,
    ]
    try:
        process = subprocess.Popen(args, pass_fds=(write_fd,), stdout=log, stderr=log)
    finally:
        os.close(write_fd)
    try:
        display = ":" + _read_display(read_fd, process, log)
    finally:
        os.close(read_fd)
    server = VncServer(display, chosen, password, process, log)
    try:
        wait_for_port(chosen, process, log)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def x11vnc(width: int = 1280, height: int = 800) -> Iterator[VncServer]:
    """x11vnc serving a fresh Xvfb (how a desktop that already runs gets VNC)."""
    binary = require("x11vnc", "x11vnc")
    port = free_port()
    with VirtualDisplay(width, height) as virtual, tempfile.TemporaryFile() as log:
        args = [binary, "-display", virtual.display, "-rfbport", str(port), "-localhost"]
        args += ["-nopw", "-shared", "-forever", "-quiet"]
        process = subprocess.Popen(args, stdout=log, stderr=log)
        server = VncServer(virtual.display, port, None, process, log)
        try:
            wait_for_port(port, process, log)
            yield server
        finally:
            server.stop()


def _read_display(read_fd: int, process: subprocess.Popen[bytes], log: IO[bytes]) -> str:
    deadline = time.monotonic() + _START_TIMEOUT_S
    received = b""
    while not received.endswith(b"\n"):
        ready, _, _ = select.select([read_fd], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(read_fd, 64) if ready else b""
        if not chunk:
            process.kill()
            process.wait()
            raise RuntimeError(f"Xvnc did not report its display: {_tail(log)}")
        received += chunk
    return received.decode().strip()


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read()[-2000:].decode(errors="replace").strip() or "no output"


def solid_colour(image: Image.Image) -> tuple[int, ...] | None:
    """The one colour of an image, or None when it has several."""
    unique = np.unique(np.asarray(image.convert("RGB")).reshape(-1, 3), axis=0)
    return tuple(int(value) for value in unique[0]) if len(unique) == 1 else None
