"""A private virtual X display (Xvfb), for the demo, headless hosts and tests.

Xvfb picks a free display number itself and reports it on a pipe (-displayfd)
once it accepts connections, so concurrent starts never race for a number and
no polling is needed.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO

from holodesk.platform.errors import BackendUnavailableError
from holodesk.platform.processes import stop_process


@dataclass
class VirtualDisplay:
    """Start with `with VirtualDisplay() as vd:`; `vd.display` is e.g. ":42".

    `extra_args` go to Xvfb as they are, e.g. ("+xinerama", "-screen", "1", "640x480x24").
    `reset_when_idle=True` leaves out -noreset, so the server resets whenever its last
    client disconnects, as a plain `Xvfb :N` does (tests run clients as users would).
    """

    width: int = 1280
    height: int = 800
    depth: int = 24
    extra_args: Sequence[str] = ()
    start_timeout_s: float = 10.0
    reset_when_idle: bool = False
    display: str = field(default="", init=False)
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    def start(self) -> str:
        if self._process is not None:
            raise RuntimeError(f"this virtual display already runs at {self.display}")
        xvfb = shutil.which("Xvfb")
        if xvfb is None:
            raise BackendUnavailableError(
                [("Xvfb is not installed", "install it: apt-get install xvfb (Debian/Ubuntu)")],
                backend="x11",
            )
        read_fd, write_fd = os.pipe()
        screen = f"{self.width}x{self.height}x{self.depth}"
        # -noreset: without it the server resets (keymap included) whenever its
        # last client disconnects, which races with the next client connecting.
        args = [xvfb, "-displayfd", str(write_fd), "-screen", "0", screen]
        args += ["-nolisten", "tcp", *([] if self.reset_when_idle else ["-noreset"])]
        args += self.extra_args
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as Xvfb
        try:
            self._process = subprocess.Popen(
                args, pass_fds=(write_fd,), stdout=self._log, stderr=self._log
            )
        finally:
            os.close(write_fd)
        try:
            number = self._read_display_number(read_fd)
        finally:
            os.close(read_fd)
        self.display = f":{number}"
        return self.display

    def _read_display_number(self, read_fd: int) -> str:
        deadline = time.monotonic() + self.start_timeout_s
        received = b""
        while not received.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([read_fd], [], [], max(remaining, 0))
            chunk = os.read(read_fd, 64) if ready else b""
            if not chunk:
                why = "timed out" if not ready else "exited"
                output = self._output()
                self.stop()
                raise BackendUnavailableError(
                    [
                        (
                            f"Xvfb {why} before reporting its display: {output or 'no output'}",
                            "run the same Xvfb command by hand to see why: "
                            f"Xvfb -displayfd 1 {' '.join(self.extra_args)}",
                        )
                    ],
                    backend="x11",
                )
            received += chunk
        return received.decode().strip()

    def wait_for_window(self, timeout_s: float) -> bool:
        """Until an app's window is on this display (x11/windows.py); False if none
        is within `timeout_s`."""
        from holodesk.platform.x11.windows import wait_for_window

        return wait_for_window(self.display, timeout_s)

    def output(self) -> str:
        """What Xvfb has written so far: its errors, and with -audit each client's visits."""
        if self._log is None:
            return ""
        # pread: Xvfb writes through the same open file, so moving its offset would
        # have it overwrite what it wrote before.
        fd = self._log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def _output(self) -> str:
        return self.output()[-2000:].strip()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> VirtualDisplay:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
