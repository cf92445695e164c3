"""KWin's ScreenShot2 capture against what a KWin, or a hostile service in its name, may answer.

The real KWin's answers (pixels of a real desktop, and NoAuthorized from one that
does not trust us) are tested in test_portal_kwin.py and test_portal_kwin_native.py.
Here a stand-in owns org.kde.KWin.ScreenShot2 on a real private bus and answers
CaptureWorkspace as each case tells it: every QImage format KWin may send, with
padded rows, and the answers a broken or hostile one could give (short, long or no
pixels, impossible geometry, an unknown format, a refusal, another error). Each
must be a CaptureError that says what happened, never a wrong image or a hang.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from jeepney import MessageType, new_error, new_method_return  # type: ignore[import-untyped]
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.blocking import open_dbus_connection  # type: ignore[import-untyped]

from holodesk.platform.errors import CaptureError
from holodesk.platform.wayland.dbus import PortalBus
from holodesk.platform.wayland.kwin_screenshot import (
    KWIN_SCREENSHOT_NAME,
    NO_CHECKS_ENV,
    NOT_AUTHORIZED,
    KWinScreenshots,
    ScreenshotRefusedError,
)

ARGB32_PREMULTIPLIED = 6
RGB888 = 13
RGBA8888 = 17
MONO = 1
# Three pixels in a row: red, green, blue.
PIXELS = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]


@dataclass
class Answer:
    """How the stand-in answers one CaptureWorkspace."""

    results: dict[str, tuple[str, Any]] = field(default_factory=dict)
    data: bytes = b""
    error: str = ""
    hold_pipe_s: float = 0.0  # keep the pipe open (writing nothing more) this long


class StandinKWin:
    """Owns KWin's ScreenShot2 name on `address` and answers each call with `answer`."""

    def __init__(self, address: str) -> None:
        self.answer = Answer()
        self.calls: list[tuple[Any, ...]] = []
        self._connection = open_dbus_connection(bus=address, enable_fds=True)
        self._connection.send_and_get_reply(message_bus.RequestName(KWIN_SCREENSHOT_NAME))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="standin-kwin", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                message = self._connection.receive(timeout=0.1)
            except TimeoutError:
                continue
            if message.header.message_type != MessageType.method_call:
                continue
            options, pipe = message.body
            self.calls.append((message.header.fields, options))
            fd = pipe.to_raw_fd()
            answer = self.answer
            if answer.error:
                os.close(fd)
                self._connection.send(new_error(message, answer.error, "s", ("no, thanks",)))
                continue
            self._connection.send(new_method_return(message, "a{sv}", (answer.results,)))
            threading.Thread(target=self._write, args=(fd, answer), daemon=True).start()

    @staticmethod
    def _write(fd: int, answer: Answer) -> None:
        try:
            os.write(fd, answer.data)
            time.sleep(answer.hold_pipe_s)
        except BrokenPipeError:
            pass  # the reader refused the answer before its pixels (the hostile cases)
        finally:
            os.close(fd)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._connection.close()


@pytest.fixture
def kwin(bus: str) -> Iterator[StandinKWin]:
    standin = StandinKWin(bus)
    yield standin
    standin.close()


@pytest.fixture
def shots(bus: str, kwin: StandinKWin) -> Iterator[KWinScreenshots]:
    taker = KWinScreenshots(bus, timeout_s=2)
    yield taker
    taker.close()


def _header(width: int, height: int, stride: int, qimage_format: int) -> dict[str, tuple[str, Any]]:
    return {
        "type": ("s", "raw"),
        "format": ("u", qimage_format),
        "width": ("u", width),
        "height": ("u", height),
        "stride": ("u", stride),
        "scale": ("d", 1.0),
    }


def _rows(pixel: Any, stride: int, rows: int = 2) -> bytes:
    row = b"".join(pixel(rgb) for rgb in PIXELS)
    return (row + b"\xee" * (stride - len(row))) * rows  # padding that must not show


@pytest.mark.parametrize(
    ("qimage_format", "pixel", "stride"),
    [
        # One little-endian 0xAARRGGBB word per pixel: bytes B, G, R, A.
        (ARGB32_PREMULTIPLIED, lambda rgb: bytes((rgb[2], rgb[1], rgb[0], 255)), 16),
        (RGBA8888, lambda rgb: bytes((*rgb, 255)), 12),
        (RGB888, bytes, 12),  # 9 bytes of pixels, rows padded to 4 bytes
    ],
    ids=["argb32-premultiplied", "rgba8888", "rgb888-padded"],
)
def test_each_format_kwin_sends_reads_as_exactly_its_pixels(
    kwin: StandinKWin, shots: KWinScreenshots, qimage_format: int, pixel: Any, stride: int
) -> None:
    kwin.answer = Answer(_header(3, 2, stride, qimage_format), _rows(pixel, stride))
    image = shots.take()
    assert (image.mode, image.size) == ("RGB", (3, 2))
    assert [image.getpixel((x, y)) for y in range(2) for x in range(3)] == PIXELS * 2
    ((_, options),) = kwin.calls
    # Physical pixels of every output, and the pointer left out of the frame.
    assert options == {"native-resolution": ("b", True), "include-cursor": ("b", False)}


def test_kwin_is_offered_only_where_its_name_is_owned(bus: str) -> None:
    plain = PortalBus(bus)
    try:
        assert not KWinScreenshots.offered(plain)
        standin = StandinKWin(bus)
        try:
            assert KWinScreenshots.offered(plain)
        finally:
            standin.close()
    finally:
        plain.close()


def test_a_refusal_names_the_fix(kwin: StandinKWin, shots: KWinScreenshots) -> None:
    kwin.answer = Answer(error=NOT_AUTHORIZED)
    with pytest.raises(
        ScreenshotRefusedError, match="KWin refused holodesk a screenshot"
    ) as raised:
        shots.take()
    assert f"{NO_CHECKS_ENV}=1" in raised.value.fix


def test_another_error_is_a_capture_error_with_its_name(
    kwin: StandinKWin, shots: KWinScreenshots
) -> None:
    kwin.answer = Answer(error="org.kde.KWin.ScreenShot2.Error.Cancelled")
    with pytest.raises(CaptureError, match=r"Error\.Cancelled") as raised:
        shots.take()
    assert not isinstance(raised.value, ScreenshotRefusedError)


def test_no_kwin_on_the_bus_is_a_capture_error(bus: str) -> None:
    taker = KWinScreenshots(bus, timeout_s=2)
    try:
        with pytest.raises(CaptureError, match="KWin's ScreenShot2 failed"):
            taker.take()
    finally:
        taker.close()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Answer(_header(3, 2, 16, ARGB32_PREMULTIPLIED), b"\0" * 20), "wrote 20 bytes"),
        (Answer(_header(3, 2, 16, ARGB32_PREMULTIPLIED), b"\0" * 33), "more than"),
        (Answer(_header(3, 2, 16, MONO), b"\0" * 32), "QImage format 1"),
        (Answer(_header(3, 2, 8, ARGB32_PREMULTIPLIED), b"\0" * 16), "impossible geometry"),
        (Answer(_header(100_000, 2, 400_000, RGBA8888)), "impossible geometry"),
        (Answer(_header(0, 2, 16, RGBA8888)), "impossible geometry"),
        (Answer({"type": ("s", "raw"), "width": ("u", 3)}), "lacks its geometry"),
        (Answer({**_header(3, 2, 16, RGBA8888), "type": ("s", "png")}), "not raw"),
        (Answer({**_header(3, 2, 12, RGBA8888), "scale": ("d", 0.0)}), "impossible geometry"),
    ],
    ids=[
        "short",
        "long",
        "unknown-format",
        "rows-too-short",
        "huge",
        "empty",
        "no-size",
        "png",
        "no-scale",
    ],
)
def test_a_broken_or_hostile_answer_is_a_capture_error(
    kwin: StandinKWin, shots: KWinScreenshots, answer: Answer, message: str
) -> None:
    kwin.answer = answer
    with pytest.raises(CaptureError, match=message):
        shots.take()


def test_pixels_that_never_come_end_at_the_timeout(
    kwin: StandinKWin, shots: KWinScreenshots
) -> None:
    kwin.answer = Answer(_header(3, 2, 16, ARGB32_PREMULTIPLIED), b"\0" * 8, hold_pipe_s=5)
    started = time.monotonic()
    with pytest.raises(CaptureError, match="wrote 8 of the screenshot's 32 bytes"):
        shots.take()
    assert time.monotonic() - started < 4  # the 2 s timeout, not the writer's 5 s


def test_kwins_scale_comes_with_the_image(kwin: StandinKWin, shots: KWinScreenshots) -> None:
    kwin.answer = Answer(
        {**_header(3, 2, 12, RGBA8888), "scale": ("d", 1.5)},
        _rows(lambda rgb: bytes((*rgb, 255)), 12),
    )
    image, scale = shots.take_scaled()
    assert (image.size, scale) == ((3, 2), 1.5)


def test_screenshots_stay_correct_one_after_another(
    kwin: StandinKWin, shots: KWinScreenshots
) -> None:
    for shade in (0, 128, 255):
        kwin.answer = Answer(_header(1, 1, 4, RGBA8888), bytes((shade, shade, shade, 255)))
        assert shots.take().getpixel((0, 0)) == (shade, shade, shade)
    assert len(kwin.calls) == 3
