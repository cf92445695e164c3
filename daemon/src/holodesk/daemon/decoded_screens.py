"""The pixels of the screens most recently rebuilt from deltas, by content.

A session's next delta is painted on the screen its previous step rebuilt. Without
this, every changed step decoded that base again (15-40 ms at 1080p) although the
daemon had its pixels a moment before. The cache is shared by all sessions and
bounded in bytes (a 1080p screen is 2 MiB indexed, 6 MiB RGB), and holds one screen
per session (a rebuilt screen supersedes its base): while it holds every active
session's screen, the base is always here; with more sessions, the least recently
rebuilt screens go and a delta on one decodes it, as before. Policies read their
model images from here too (StepContext.decoded), so a screen's decoded pixels live
in this one bounded place, however many steps are in flight (besides the one screen
each worker thread last decoded: frame_pixels.decode): never a session's own
memory, and never a model image's (those load lazily).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from PIL import Image

MIB = 1024 * 1024
# A 1080p screen of many colours is 6 MiB decoded: 128 active sessions' screens (the
# model is chosen for 100 per GPU); 384 of screens of few colours (2 MiB, indexed).
DEFAULT_MAX_BYTES = 768 * MIB


class DecodedScreens:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 or more, got {max_bytes}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._images: OrderedDict[str, Image.Image] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def peek(self, content_key: str) -> Image.Image | None:
        """The kept image itself, to read (a model image made from it): never paint it."""
        with self._lock:
            image = self._images.get(content_key)
            if image is not None:
                self._images.move_to_end(content_key)
            return image

    def copy_of(self, content_key: str) -> Image.Image | None:
        """A copy to paint on (the kept image may be a policy's model image too)."""
        with self._lock:
            image = self._images.get(content_key)
            if image is None:
                self.misses += 1
                return None
            self._images.move_to_end(content_key)
            self.hits += 1
        return image.copy()

    def keep(self, content_key: str, image: Image.Image, supersedes: str = "") -> None:
        """Keep the image as it is: nobody may paint on it afterwards.

        `supersedes`: the screen this one was painted on, dropped now: a session's
        next delta paints on its newest screen, so one screen per session is what
        keeps every changed step from decoding (and the cache holds twice as many
        sessions as it would keeping both)."""
        size = _size(image)
        with self._lock:
            if supersedes and supersedes != content_key:
                dropped = self._images.pop(supersedes, None)
                if dropped is not None:
                    self._bytes -= _size(dropped)
            if size > self.max_bytes:
                return
            if content_key in self._images:
                self._images.move_to_end(content_key)
                return
            self._images[content_key] = image
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = self._images.popitem(last=False)
                self._bytes -= _size(evicted)


def _size(image: Image.Image) -> int:
    return image.width * image.height * len(image.getbands())
