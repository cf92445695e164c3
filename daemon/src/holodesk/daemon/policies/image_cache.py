"""The model's images of recent screens, kept so each screen is prepared once.

Every step shows the model several recent screens (2-4 for holotron), and
making a model image (decode, and resize where the engine will not) is the most
expensive thing the daemon does per step. Only the newest frame of a window can
be new, so the others come from here; and images are keyed by what the screen
shows (`EncodedFrame.content_key`), not by frame id, so an unchanged screen (a
delta without patches, a full frame with the same bytes) maps to the image
already made, in any session.

The images are lazy (their pixels are made when an engine asks, see
dialects/images.py), so an entry holds the frame bytes its loader reads, shared
with the session's window. The cache is shared by all sessions of a policy and
bounded in bytes: past the bound the least recently used images go, and are made again if
needed, so memory stays flat at any session count. An image stays while a session
has it in its window; when the last of them moves on or ends, it goes at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from holodesk.daemon.engines.base import ImagePart

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024


@dataclass
class _Entry:
    image: ImagePart
    # Sessions that used it; the entry goes when the last one ends.
    sessions: set[str] = field(default_factory=set)


class ModelImageCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 or more, got {max_bytes}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        # content key -> image, least recently used first.
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        # session id -> the keys it used (so ending a session is not a full scan).
        self._keys_of: dict[str, set[str]] = {}
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, session_id: str, key: str, make: Callable[[], ImagePart]) -> ImagePart:
        """The image for `key`, made (outside the lock) only when not cached.

        Two sessions missing the same key at once both make it; the first one kept
        wins, so every caller gets an equal image and the cache holds one."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self._own(entry, session_id, key)
                self.hits += 1
                return entry.image
            self.misses += 1
        return self._put(session_id, key, make())

    def retain(self, session_id: str, keys: Iterable[str]) -> None:
        """The session needs only these images now (its window): it lets go of the
        others, which go unless another session holds them. So a session holds at
        most its window, however long it runs (a lazy image pins its frame's bytes)."""
        wanted = set(keys)
        with self._lock:
            held = self._keys_of.get(session_id)
            if held is None:
                return
            for key in held - wanted:
                self._release(session_id, key)
            held &= wanted

    def drop_session(self, session_id: str) -> None:
        with self._lock:
            for key in self._keys_of.pop(session_id, ()):
                self._release(session_id, key)

    def _release(self, session_id: str, key: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return
        entry.sessions.discard(session_id)
        if not entry.sessions:
            self._bytes -= self._entries.pop(key).image.nbytes

    def _own(self, entry: _Entry, session_id: str, key: str) -> None:
        entry.sessions.add(session_id)
        self._keys_of.setdefault(session_id, set()).add(key)

    def _put(self, session_id: str, key: str, image: ImagePart) -> ImagePart:
        size = image.nbytes
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._own(entry, session_id, key)
                return entry.image
            if size > self.max_bytes:
                return image
            entry = _Entry(image)
            self._own(entry, session_id, key)
            self._entries[key] = entry
            self._bytes += size
            while self._bytes > self.max_bytes:
                evicted_key, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.image.nbytes
                for owner in evicted.sessions:
                    keys = self._keys_of.get(owner)
                    if keys is not None:
                        keys.discard(evicted_key)
            return image
