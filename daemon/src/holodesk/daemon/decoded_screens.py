"""The pixels of the screens most recently rebuilt from deltas, by content.

A session's next delta is painted on the screen its previous step rebuilt. Without
this, every changed step decoded that base again (15-40 ms at 1080p) although the
daemon had its pixels a moment before. The cache is shared by all sessions and
bounded in bytes (a 1080p screen is 2 MiB indexed, 6 MiB RGB): with a few dozen
active sessions the base is nearly always here; with many more, the least recently
rebuilt screens go and a delta on one decodes it, as before. Policies read their
model images from here too (StepContext.decoded), so a screen's decoded pixels live
in this one bounded place, however many steps are in flight: never a session's own
memory, and never a model image's (those load lazily).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from PIL import Image

MIB = 1024 * 1024
DEFAULT_MAX_BYTES = 256 * MIB


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

    def keep(self, content_key: str, image: Image.Image) -> None:
        """Keep the image as it is: nobody may paint on it afterwards."""
        size = _size(image)
        if size > self.max_bytes:
            return
        with self._lock:
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
