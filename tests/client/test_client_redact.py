"""Redaction: regions of the desktop are black in every frame before it is encoded.

Checked on decoded frames: what a daemon (or anyone on the wire) could see.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from PIL import Image, ImageChops

from holodesk.client.capture import ALL_DISPLAYS, FrameCapturer
from holodesk.client.events import Outcome
from holodesk.client.frames import FrameSpec
from holodesk.client.safety import SafetySettings
from holodesk.client.safety.redact import redact
from holodesk.client.session import SessionOptions, run_session
from holodesk.platform.backends import fake
from holodesk.platform.base import Region
from holodesk.proto.v1 import agent_pb2
from holodesk.values.encoding import ImageEncoding

from .conftest import TWO_DISPLAYS
from .scripted import Conversation, Script, ScriptedDaemon, done

Daemon = Callable[[Script], ScriptedDaemon]
# On the primary display (0,0 1280x800): a password field, say.
SECRET_BOX = Region(200, 100, 400, 200)


def _decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


def _black(image: Image.Image) -> bool:
    return not any(image.tobytes())


def _with_secret(backend: fake.FakeBackend, color: tuple[int, int, int]) -> None:
    """Paint the secret box (desktop pixels) in the fake screen's picture."""
    desktop = backend.screen.virtual_desktop()
    left, top = SECRET_BOX.x - desktop.x, SECRET_BOX.y - desktop.y
    backend.screen.image.paste(color, (left, top, left + SECRET_BOX.width, top + SECRET_BOX.height))


def test_redacted_pixels_are_black_after_downsizing() -> None:
    backend = fake.create(displays=TWO_DISPLAYS)
    _with_secret(backend, (255, 0, 255))
    spec = FrameSpec(max_width=640, max_height=640)  # 1280x800 -> 640x400: half size
    frame = FrameCapturer(backend.screen, spec, None, (SECRET_BOX,)).capture()
    image = _decode(frame.data)
    assert image.size == (640, 400)
    # The box is (100, 50)-(300, 150) in the frame; a few pixels in from its edges the
    # Lanczos kernel (3 lobes) reaches only black.
    inner = image.crop((104, 54, 296, 146))
    assert _black(inner)
    # Outside the box the frame is the screen as usual.
    plain = FrameCapturer(backend.screen, spec).capture()
    far = (0, 0, 640, 40)
    assert ImageChops.difference(image.crop(far), _decode(plain.data).crop(far)).getbbox() is None


def test_nothing_inside_the_box_reaches_the_frame() -> None:
    """Proves: two screens that differ only inside the redacted box give identical
    frames, pixel for pixel, so no information from inside it leaves the machine."""
    frames = []
    for color in ((255, 255, 255), (12, 34, 56)):
        backend = fake.create(displays=TWO_DISPLAYS)
        _with_secret(backend, color)
        spec = FrameSpec(max_width=500, max_height=500)  # an uneven scale
        frames.append(FrameCapturer(backend.screen, spec, None, (SECRET_BOX,)).capture())
    assert _decode(frames[0].data).tobytes() == _decode(frames[1].data).tobytes()


def test_lossy_frames_are_redacted_too() -> None:
    backend = fake.create(displays=TWO_DISPLAYS)
    _with_secret(backend, (255, 255, 255))
    spec = FrameSpec(max_width=1280, max_height=1280, encoding=ImageEncoding.JPEG, quality=90)
    frame = FrameCapturer(backend.screen, spec, None, (SECRET_BOX,)).capture()
    inner = _decode(frame.data).crop((220, 120, 580, 280))
    assert max(inner.tobytes()) <= 8  # JPEG noise, no content


def test_regions_are_clipped_to_the_captured_display_and_the_desktop() -> None:
    backend = fake.create(displays=TWO_DISPLAYS)
    spanning = Region(-100, 700, 300, 300)  # over both displays and below the primary
    spec = FrameSpec()  # full size, lossless
    primary = _decode(FrameCapturer(backend.screen, spec, None, (spanning,)).capture().data)
    assert _black(primary.crop((0, 700, 200, 800)))
    assert primary.getpixel((200, 700)) != (0, 0, 0)
    whole = FrameCapturer(backend.screen, spec, ALL_DISPLAYS, (spanning,)).capture()
    image = _decode(whole.data)  # the desktop starts at (-2560, -200)
    assert _black(image.crop((2460, 900, 2760, 1000)))
    assert image.getpixel((2459, 950)) != (0, 0, 0)


def test_redact_scales_boxes_outward_when_the_image_is_not_one_to_one() -> None:
    image = Image.new("RGB", (50, 50), (255, 255, 255))
    out = redact(image, Region(0, 0, 100, 100), [Region(11, 11, 9, 9)])
    assert out.getpixel((5, 5)) == (0, 0, 0)  # 11/2 floors to 5
    assert out.getpixel((9, 9)) == (0, 0, 0)  # 20/2 ceils to 10, exclusive
    assert out.getpixel((10, 10)) == (255, 255, 255)
    assert image.getpixel((5, 5)) == (255, 255, 255)  # the original is untouched


async def test_the_frames_a_daemon_receives_are_redacted(
    daemon: Daemon, backend: fake.FakeBackend
) -> None:
    _with_secret(backend, (255, 0, 255))

    async def script(conv: Conversation) -> None:
        await conv.open()
        await conv.send_actions(1, done("d", "ok"))
        await conv.recv_observation()
        await conv.end(agent_pb2.SESSION_OUTCOME_SUCCEEDED, answer="ok")

    server = daemon(script)
    safety = SafetySettings(emergency_stop=None, redact=(SECRET_BOX,))
    outcome = await run_session(server.target, "t", backend, SessionOptions(safety=safety))
    assert outcome.outcome is Outcome.SUCCEEDED
    frame = server.conversation.received[1].observation.frame
    image = _decode(frame.data)
    assert image.size == (640, 400)
    assert _black(image.crop((104, 54, 296, 146)))
