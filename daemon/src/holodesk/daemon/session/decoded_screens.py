"""The pixels of each session's newest screen, by content: packed for all, raw for a few.

A session's next delta is painted on the screen its previous step rebuilt, and the
policy makes its model images from those pixels. Without this, every changed step
decoded that base again (~25 ms at 1080p) although the daemon had its pixels a
moment before. Two tiers, both shared by all sessions and bounded in bytes:

- packed (packed_screens.py): every kept screen, its raw pixels zstd-compressed in
  bands of rows, ~200 KiB for a 1080p screen of text (a raw one is 6 MiB RGB,
  2 MiB indexed). A rebuilt screen is packed from the one it was painted on,
  compressing only the bands its patches touched, so keeping it costs a fraction
  of a millisecond, and unpacking one costs ~3 ms. This is what lets a thousand
  sessions' screens stay decoded in a few hundred MiB;
- hot: the most recently kept or read screens as images, so a handful of busy
  sessions (and the policy reading the screen its step just rebuilt) pay no unpack.

A session's few newest screens (SCREENS_PER_SESSION): its history window, which an
engine whose processor cache lost them (vLLM's holds a few hundred screens, far
fewer than a thousand sessions' windows) asks to see again. Consecutive screens of
a session share the bands no step touched, and those are counted once, so a
session's window weighs about one packed screen. Past the packed budget, the least
recently used screens go and a read of one decodes its chain, as before.

Policies read their model images from here too (StepContext.decoded), so a screen's
decoded pixels live in this one bounded place however many steps are in flight
(besides the one screen each worker thread last decoded: frame_pixels.decode):
never a session's own memory, and never a model image's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from PIL import Image

from holodesk.daemon.frame_pixels import DecodedPatch
from holodesk.daemon.session import packed_screens
from holodesk.daemon.session.packed_screens import PackedScreen

MIB = 1024 * 1024
# Packed screens of all sessions: ~2,500 1080p screens of text, ~250 of photos
# (packed, a photo is nearly its raw size).
DEFAULT_MAX_BYTES = 512 * MIB
# Raw screens: 16 of 1080p in RGB, 48 indexed; enough that one to ten sessions never
# unpack, small beside the packed tier.
DEFAULT_HOT_BYTES = 96 * MIB
# A history window of three (holotron's) and the screen the next delta paints on:
# the fewest a chain keeps (screens_per_session_for).
SCREENS_PER_SESSION = 4


def screens_per_session_for(history_frames: Iterable[int]) -> int:
    """How many screens of a chain to keep for policies whose sessions keep these
    windows: the longest one and the screen its next delta paints on (an engine
    that lost a window's older screen then finds it here, not in a PNG to decode)."""
    return max([SCREENS_PER_SESSION, *(frames + 1 for frames in history_frames)])


@dataclass(frozen=True)
class ScreensFigures:
    """What the tiers hold now and what was asked of them so far (metrics.py)."""

    packed_screens: int
    packed_bytes: int
    raw_screens: int
    raw_bytes: int
    # Bases of deltas found here, and not (then decoded from their image).
    hits: int
    misses: int
    # Screens unpacked for a reader: from the packed tier, whole or from a neighbour.
    unpacks: int


class DecodedScreens:
    def __init__(
        self,
        max_bytes: int = DEFAULT_MAX_BYTES,
        hot_bytes: int | None = None,
        screens_per_session: int = SCREENS_PER_SESSION,
    ) -> None:
        """`max_bytes`: the packed tier's budget (0 keeps nothing); `hot_bytes`: the raw
        tier's, at most `max_bytes` (default DEFAULT_HOT_BYTES, or `max_bytes` if less);
        `screens_per_session`: how many screens of one chain of deltas stay."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be 0 or more, got {max_bytes}")
        if hot_bytes is not None and hot_bytes < 0:
            raise ValueError(f"hot_bytes must be 0 or more, got {hot_bytes}")
        if screens_per_session < 1:
            raise ValueError(f"screens_per_session must be 1 or more, got {screens_per_session}")
        self.screens_per_session = screens_per_session
        self.max_bytes = max_bytes
        self.hot_bytes = min(max_bytes, DEFAULT_HOT_BYTES if hot_bytes is None else hot_bytes)
        self._lock = threading.Lock()
        self._packed: OrderedDict[str, PackedScreen] = OrderedDict()
        self._hot: OrderedDict[str, Image.Image] = OrderedDict()
        # Raw screens kept by a rebuild and not read since: the policy reads each one
        # soon (and its window's older screens are made from it), so they go last.
        self._unread: set[str] = set()
        # A screen -> the one it was painted on (its session's chain, newest first).
        self._painted_on: dict[str, str] = {}
        # ... and the other way: a screen -> the one painted on it.
        self._painted_next: dict[str, str] = {}
        # Bands shared by the screens of a chain, counted once: id -> [users, bytes].
        self._bands: dict[int, list[int]] = {}
        self._packed_bytes = 0
        self._hot_bytes = 0
        self.hits = 0
        self.misses = 0
        self.unpacks = 0

    @property
    def bytes(self) -> int:
        """What both tiers hold: the packed screens' bytes plus the raw screens'."""
        return self._packed_bytes + self._hot_bytes

    def figures(self) -> ScreensFigures:
        with self._lock:
            return ScreensFigures(
                len(self._packed),
                self._packed_bytes,
                len(self._hot),
                self._hot_bytes,
                self.hits,
                self.misses,
                self.unpacks,
            )

    def __contains__(self, content_key: str) -> bool:
        with self._lock:
            return content_key in self._packed

    def peek(self, content_key: str) -> Image.Image | None:
        """The screen's pixels, to read (a model image made from them): never paint them."""
        with self._lock:
            image = self._hot.get(content_key)
            if image is not None:
                self._touch(content_key)
                self._unread.discard(content_key)
                return image
            packed = self._packed.get(content_key)
            near = self._hot_neighbour(content_key)
        if packed is None:
            return None
        image = self._unpacked(packed, near)
        with self._lock:
            if content_key in self._packed:  # not dropped meanwhile
                self._touch(content_key)
                self._hold_hot(content_key, image)
        return image

    def copy_of(self, content_key: str) -> Image.Image | None:
        """An image of the caller's own, to paint on (the kept one may be a policy's
        model image too)."""
        with self._lock:
            image = self._hot.get(content_key)
            packed = self._packed.get(content_key)
            if packed is None:
                self.misses += 1
                return None
            self.hits += 1
            self._touch(content_key)
            near = None if image is not None else self._hot_neighbour(content_key)
        return image.copy() if image is not None else self._unpacked(packed, near)

    def keep(
        self,
        content_key: str,
        image: Image.Image,
        supersedes: str = "",
        changed_rows: Iterable[tuple[int, int]] | None = None,
    ) -> None:
        """Keep the image as it is: nobody may paint on it afterwards.

        `supersedes`: the screen this one was painted on; it and the older screens
        of its chain go once `screens_per_session` newer ones are kept (a session's
        next delta paints on its newest screen, and its window reads a few more).
        `changed_rows`: the (top, bottom) spans in which this image differs from
        `supersedes`, so only those bands are packed again; None: pack it all."""
        if not packed_screens.packable(image) or self.max_bytes == 0:
            return
        with self._lock:
            if content_key in self._packed:
                self._touch(content_key)
                return
            base = self._packed.get(supersedes) if supersedes else None
        if base is not None and changed_rows is not None:
            packed = packed_screens.repack(image, base, changed_rows)
        else:
            packed = packed_screens.pack(image)
        with self._lock:
            if self._store_locked(content_key, packed, supersedes):
                self._hold_hot(content_key, image, unread=True)

    def paint_packed(
        self, content_key: str, base_key: str, patches: Sequence[DecodedPatch]
    ) -> bool:
        """Keep the screen that is `base_key`'s with `patches` painted over it, made
        from the base's packed bands alone, when the base is no longer held raw
        (with a hundred sessions stepping, a session's last screen has mostly left
        the raw tier by its next step: unpacking it whole to paint a line on it was
        a third of a changed step). False, and nothing kept, when the base is held
        raw (painting that copy is cheaper, and leaves the new screen raw for the
        policy) or is not held, or is indexed (see packed_screens.repaint)."""
        with self._lock:
            if content_key in self._packed:
                self._touch(content_key)
                return True
            base = self._packed.get(base_key)
            if base is None or base.mode != "RGB" or base_key in self._hot:
                return False
            self.hits += 1
            self._touch(base_key)
        packed = packed_screens.repaint(base, patches)
        with self._lock:
            self._store_locked(content_key, packed, base_key)
        return True

    def _store_locked(self, content_key: str, packed: PackedScreen, supersedes: str) -> bool:
        """Keep the packed screen (False: another thread kept it meanwhile, or the
        budget at once dropped it again)."""
        if content_key in self._packed:
            return False
        self._packed[content_key] = packed
        self._count_in(packed)
        if supersedes in self._packed:
            self._painted_on[content_key] = supersedes
            self._painted_next[supersedes] = content_key
            self._retire_older(content_key)
        while self._packed_bytes > self.max_bytes:
            self._drop_locked(next(iter(self._packed)))
        return content_key in self._packed

    def _unpacked(
        self, packed: PackedScreen, near: tuple[Image.Image, PackedScreen] | None
    ) -> Image.Image:
        self.unpacks += 1
        if near is not None:
            return packed_screens.unpack_near(packed, *near)
        return packed_screens.unpack(packed)

    def _hot_neighbour(self, content_key: str) -> tuple[Image.Image, PackedScreen] | None:
        """A screen of the same chain held raw (and its packed form), newer ones first:
        an older screen of a window is then the newest with a band or two unpacked
        (~1 ms), not a whole unpack (~4 ms)."""
        for links in (self._painted_next, self._painted_on):
            key = content_key
            for _ in range(self.screens_per_session):
                following = links.get(key)
                if following is None:
                    break
                key = following
                image = self._hot.get(key)
                if image is not None:
                    return image, self._packed[key]
        return None

    def _touch(self, content_key: str) -> None:
        self._packed.move_to_end(content_key)
        if content_key in self._hot:
            self._hot.move_to_end(content_key)

    def _hold_hot(self, content_key: str, image: Image.Image, unread: bool = False) -> None:
        """Hold it raw; past the raw budget the least recently used screen goes, one
        already read before any unread one (with a hundred sessions stepping, a
        screen a rebuild kept was pushed out before its policy read it)."""
        size = _size(image)
        if size > self.hot_bytes or content_key in self._hot:
            return
        self._hot[content_key] = image
        self._hot_bytes += size
        if unread:
            self._unread.add(content_key)
        while self._hot_bytes > self.hot_bytes:
            gone = next((key for key in self._hot if key not in self._unread), None)
            self._drop_hot(gone if gone is not None else next(iter(self._hot)))

    def _retire_older(self, newest: str) -> None:
        """Drop the screen `screens_per_session` back along `newest`'s chain."""
        key = newest
        for _ in range(self.screens_per_session - 1):
            before = self._painted_on.get(key)
            if before is None:
                return
            key = before
        oldest = self._painted_on.pop(key, None)
        if oldest is not None:
            self._drop_locked(oldest)

    def _drop_locked(self, content_key: str) -> None:
        packed = self._packed.pop(content_key, None)
        if packed is not None:
            self._count_out(packed)
        before = self._painted_on.pop(content_key, None)
        if before is not None and self._painted_next.get(before) == content_key:
            del self._painted_next[before]
        after = self._painted_next.pop(content_key, None)
        if after is not None and self._painted_on.get(after) == content_key:
            del self._painted_on[after]
        self._drop_hot(content_key)

    def _count_in(self, packed: PackedScreen) -> None:
        for band in packed.bands:
            users = self._bands.get(id(band))
            if users is None:
                self._bands[id(band)] = [1, len(band)]
                self._packed_bytes += len(band)
            else:
                users[0] += 1
        self._packed_bytes += len(packed.palette)

    def _count_out(self, packed: PackedScreen) -> None:
        for band in packed.bands:
            users = self._bands[id(band)]
            users[0] -= 1
            if users[0] == 0:
                del self._bands[id(band)]
                self._packed_bytes -= len(band)
        self._packed_bytes -= len(packed.palette)

    def _drop_hot(self, content_key: str) -> None:
        self._unread.discard(content_key)
        image = self._hot.pop(content_key, None)
        if image is not None:
            self._hot_bytes -= _size(image)


def _size(image: Image.Image) -> int:
    return image.width * image.height * len(image.getbands())
