"""The model's images of recent frames, kept so each frame is resized once.

Every step shows the model the whole history window (3 frames for holotron), and
making a model image (decode, resize to the dialect's grid) is the most expensive
thing the daemon does per step: ~65 ms for a 1080p screen. Only the newest frame of
a window is new, so the others come from here. Images are kept as pixels, which is
what in-process engines take (encoding them for the cache and decoding them again
for vLLM cost twice the resize), so an entry is ~6 MiB at 2048x1024: the default
bound holds the windows of ~55 sessions. The cache is shared by all sessions,
drops a session's images when it ends, and is bounded in bytes: past the bound the
least recently used images go, and are simply made again if needed, so memory
stays flat at any session count.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from holodesk.daemon.engines.base import ImagePart
from holodesk.daemon.frames import EncodedFrame

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024


class ModelImageCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 or more, got {max_bytes}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        # (session id, frame id) -> image; frame ids are unique within a session.
        self._images: OrderedDict[tuple[str, str], ImagePart] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def get(
        self, session_id: str, frame: EncodedFrame, make: Callable[[EncodedFrame], ImagePart]
    ) -> ImagePart:
        """The frame's model image, made (outside the lock) only when not cached."""
        key = (session_id, frame.frame_id)
        with self._lock:
            image = self._images.get(key)
            if image is not None:
                self._images.move_to_end(key)
                self.hits += 1
                return image
            self.misses += 1
        image = make(frame)
        self._put(key, image)
        return image

    def drop_session(self, session_id: str) -> None:
        with self._lock:
            for key in [k for k in self._images if k[0] == session_id]:
                self._bytes -= self._images.pop(key).nbytes

    def _put(self, key: tuple[str, str], image: ImagePart) -> None:
        size = image.nbytes
        with self._lock:
            if size > self.max_bytes or key in self._images:
                return
            self._images[key] = image
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, evicted = self._images.popitem(last=False)
                self._bytes -= evicted.nbytes
