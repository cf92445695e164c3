"""Frames of a portal ScreenCast stream, read from PipeWire by a GStreamer child.

A started ScreenCast (or RemoteDesktop) session names one PipeWire node per
monitor, and OpenPipeWireRemote hands us a socket to the PipeWire daemon that
may see only those nodes. PipeWire's protocol is its own, with buffers passed as
memfd/DMA-BUF descriptors, so a pure-Python reader is out; the readers that are
kept are libpipewire itself, GStreamer's `pipewiresrc` (gstreamer1.0-pipewire)
and GObject-introspection bindings to either. Without PyGObject in the venv the
simplest kept one is a `gst-launch-1.0` child per stream::

    pipewiresrc fd=N path=NODE ! videoconvert ! video/x-raw,format=BGRx ! fdsink fd=W

with the remote's fd passed down (pass_fds) and W the write end of a pipe we
read whole BGRx frames from; `-v` prints the negotiated caps on the child's
stdout, which is where the frame size comes from. The compositor sends a frame
when the screen changes (mutter and KWin cast on damage; mutter sends one at the
start too, KWin does not), so an idle desktop costs nothing, and a grab is the
newest frame (no encode, no D-Bus
round trip): tests/bench/bench_pipewire_capture.py measured it against one
Screenshot-portal call per frame.

The newest frame can trail the screen by one frame interval (the compositor's
repaint, the stream, the pipe), as any capture trails a redraw.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
import time

from PIL import Image

from holodesk.platform.errors import CaptureError
from holodesk.platform.processes import stop_process

log = logging.getLogger(__name__)

GST_LAUNCH = "gst-launch-1.0"
INSTALL_FIX = (
    "install GStreamer's PipeWire source and tools (Debian/Ubuntu: apt-get install "
    "gstreamer1.0-pipewire gstreamer1.0-tools gstreamer1.0-plugins-base; Fedora: "
    "pipewire-gstreamer gstreamer1-plugins-base-tools)"
)
DEFAULT_FIRST_FRAME_TIMEOUT_S = 10.0
BYTES_PER_PIXEL = 4  # BGRx
# fdsink's sink pad, as `gst-launch-1.0 -v` prints it once caps are negotiated.
_CAPS = re.compile(
    r"GstFdSink:\w+\.GstPad:sink: caps = video/x-raw.*?width=\(int\)(\d+), height=\(int\)(\d+)"
)


def gst_problems(gst_launch: str = GST_LAUNCH) -> list[tuple[str, str]]:
    """(cause, fix) for each thing missing to read a PipeWire stream; empty when ready."""
    binary = shutil.which(gst_launch)
    if binary is None:
        return [(f"{gst_launch} is not installed, so PipeWire frames cannot be read", INSTALL_FIX)]
    try:
        result = subprocess.run(
            [binary.replace("gst-launch", "gst-inspect"), "pipewiresrc"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return [(f"cannot ask GStreamer for pipewiresrc: {error}", INSTALL_FIX)]
    if result.returncode != 0:
        return [("GStreamer has no pipewiresrc element", INSTALL_FIX)]
    return []


class PipeWireStream:
    """The newest frame of one PipeWire video node, kept by a reader thread.

    Takes `remote_fd` over (closed here once the child has it). Raises
    CaptureError when the child cannot start or sends no frame in time.
    """

    def __init__(
        self,
        remote_fd: int,
        node_id: int,
        *,
        gst_launch: str = GST_LAUNCH,
        first_frame_timeout_s: float = DEFAULT_FIRST_FRAME_TIMEOUT_S,
    ) -> None:
        self.node_id = node_id
        self._condition = threading.Condition()
        self._frame: Image.Image | None = None
        self._frames = 0
        self._size: tuple[int, int] | None = None
        self._failure: str | None = None
        self._stderr: list[str] = []
        binary = shutil.which(gst_launch)
        if binary is None:
            os.close(remote_fd)
            raise CaptureError(f"{gst_launch} is not installed: {INSTALL_FIX}")
        read_end, write_end = os.pipe()
        command = [
            binary,
            "-v",
            "pipewiresrc",
            f"fd={remote_fd}",
            f"path={node_id}",
            "!",
            "videoconvert",
            "!",
            "video/x-raw,format=BGRx",
            "!",
            "fdsink",
            f"fd={write_end}",
            "sync=false",
        ]
        try:
            self._process = subprocess.Popen(
                command,
                pass_fds=(remote_fd, write_end),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        except OSError as error:
            os.close(read_end)
            raise CaptureError(f"cannot start {gst_launch}: {error}") from error
        finally:
            os.close(remote_fd)
            os.close(write_end)
        self._pipe = os.fdopen(read_end, "rb", buffering=0)
        self._threads = [
            threading.Thread(target=self._read_caps, name=f"pw-caps-{node_id}", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"pw-err-{node_id}", daemon=True),
            threading.Thread(target=self._read_frames, name=f"pw-frames-{node_id}", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        self._first_frame_timeout_s = first_frame_timeout_s
        try:
            self._wait_for_size(first_frame_timeout_s)
        except BaseException:
            self.close()
            raise

    @property
    def frames(self) -> int:
        """How many frames arrived so far."""
        with self._condition:
            return self._frames

    @property
    def size(self) -> tuple[int, int]:
        """The stream's frame size in pixels (known once its format is negotiated)."""
        with self._condition:
            if self._size is None:
                raise CaptureError(f"PipeWire stream {self.node_id} has no frame yet")
            return self._size

    def latest(self) -> Image.Image:
        """The newest frame (RGB), waiting for the first one if none came yet.

        Raises CaptureError once the stream has ended, or when no first frame
        comes in time.
        """
        with self._condition:
            if self._frame is None and self._failure is None:
                self._condition.wait_for(
                    lambda: self._frame is not None or self._failure is not None,
                    self._first_frame_timeout_s,
                )
            if self._failure is not None:
                raise CaptureError(self._failure)
            if self._frame is None:
                raise CaptureError(
                    f"PipeWire stream {self.node_id} sent no frame in "
                    f"{self._first_frame_timeout_s:g} s: KWin casts only when the screen "
                    "changes, and nothing has changed since the session started"
                )
            return self._frame

    def _wait_for_size(self, timeout_s: float) -> None:
        """Block until the stream's format is negotiated (a compositor that casts on
        damage only, as KWin does, sends no frame until the screen changes)."""
        with self._condition:
            self._condition.wait_for(
                lambda: self._size is not None or self._failure is not None, timeout_s
            )
            if self._failure is not None:
                raise CaptureError(self._failure)
            if self._size is None:
                raise CaptureError(
                    f"PipeWire stream {self.node_id} negotiated no video format in "
                    f"{timeout_s:g} s: {self._why()}"
                )

    def sends_frames(self, timeout_s: float) -> bool:
        """Whether a first frame has come, or comes within `timeout_s`.

        Raises CaptureError when the stream ends instead.
        """
        with self._condition:
            self._condition.wait_for(
                lambda: self._frames > 0 or self._failure is not None, timeout_s
            )
            if self._failure is not None:
                raise CaptureError(self._failure)
            return self._frames > 0

    def wait_for_frames(self, count: int, timeout_s: float) -> None:
        """Block until `count` frames in all have arrived."""
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while self._frames < count and self._failure is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CaptureError(
                        f"PipeWire stream {self.node_id} sent {self._frames} frames, not {count}, "
                        f"in {timeout_s:g} s: {self._why()}"
                    )
                self._condition.wait(left)
            if self._failure is not None:
                raise CaptureError(self._failure)

    # -- reader threads -----------------------------------------------------------
    def _read_caps(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            match = _CAPS.search(line)
            if match is None:
                continue
            size = (int(match.group(1)), int(match.group(2)))
            with self._condition:
                if self._size is None:
                    self._size = size
                elif size != self._size:
                    self._fail(
                        f"PipeWire stream {self.node_id} changed size from "
                        f"{self._size[0]}x{self._size[1]} to {size[0]}x{size[1]} (the monitor "
                        "was resized): reopen the backend"
                    )
                self._condition.notify_all()

    def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            with self._condition:
                self._stderr = [*self._stderr[-7:], line.rstrip()]

    def _read_frames(self) -> None:
        try:
            with self._condition:
                while self._size is None and self._failure is None:
                    if self._process.poll() is not None:
                        break
                    self._condition.wait(0.1)
                size = self._size
            while size is not None:
                data = self._read_exactly(size[0] * size[1] * BYTES_PER_PIXEL)
                if data is None:
                    break
                image = Image.frombuffer("RGB", size, data, "raw", "BGRX", 0, 1)
                with self._condition:
                    self._frame = image
                    self._frames += 1
                    self._condition.notify_all()
        except OSError as error:
            log.debug("PipeWire stream %s: %s", self.node_id, error)
        code = self._process.wait()
        # Let the stderr reader finish, so the failure says what gst-launch said.
        self._threads[1].join(timeout=2)
        with self._condition:
            self._fail(
                f"PipeWire stream {self.node_id} ended (gst-launch exit {code}): {self._why()}"
            )

    def _read_exactly(self, count: int) -> bytes | None:
        chunks: list[bytes] = []
        left = count
        while left:
            chunk = self._pipe.read(left)
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _fail(self, why: str) -> None:
        if self._failure is None:
            self._failure = why
        self._condition.notify_all()

    def _why(self) -> str:
        return " | ".join(self._stderr) or "no message from gst-launch"

    def close(self) -> None:
        stop_process(self._process)
        self._pipe.close()
        for thread in self._threads:
            thread.join(timeout=5)
        # The child's stdout and stderr, once their readers are done with them.
        caps_reader, stderr_reader, _ = self._threads
        for reader, pipe in ((caps_reader, self._process.stdout),
                             (stderr_reader, self._process.stderr)):  # fmt: skip
            if pipe is not None and not reader.is_alive():
                pipe.close()
