"""Decoded screens: packed for every session, raw for a few, exact either way."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from holodesk.daemon.config import ServerConfig
from holodesk.daemon.rpc.server import serve
from holodesk.daemon.session import packed_screens
from holodesk.daemon.session.decoded_screens import (
    SCREENS_PER_SESSION,
    DecodedScreens,
    screens_per_session_for,
)
from holodesk.daemon.session.packed_screens import BAND_ROWS, pack, repack, unpack
from tests.bench.daemon_proc import InstantPolicy
from tests.daemon.test_daemon_deltas import noise


def _text_screen(width: int, height: int, seed: int) -> Image.Image:
    """Many colours in long runs, as a screen of anti-aliased text is."""
    image = Image.new("RGB", (width, height), (250, 250, 248))
    draw = ImageDraw.Draw(image)
    for row in range(0, height, 14):
        line = f"line {row} of screen {seed}: def f(x): return x"
        draw.text((4 + seed % 7, row), line, fill=(20 + seed, 40, 160))
    return image


def _same(a: Image.Image, b: Image.Image) -> bool:
    return a.mode == b.mode and a.size == b.size and np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("mode", ["RGB", "P"])
@pytest.mark.parametrize("size", [(1, 1), (64, 48), (333, 129), (1920, 1080)])
def test_a_screen_unpacks_to_exactly_its_pixels(mode: str, size: tuple[int, int]) -> None:
    screen = noise(*size, seed=3)
    if mode == "P":
        screen = screen.quantize(200)
    packed = pack(screen)
    assert len(packed.bands) == -(-size[1] // BAND_ROWS)
    back = unpack(packed)
    assert _same(back, screen)
    if mode == "P":
        assert back.convert("RGB").tobytes() == screen.convert("RGB").tobytes()


def test_a_screen_of_text_packs_far_smaller_than_its_raw_pixels() -> None:
    screen = _text_screen(1920, 1080, seed=1)
    packed = pack(screen)
    assert packed.nbytes * 10 < 1920 * 1080 * 3


def test_repacking_compresses_only_the_bands_a_change_touched() -> None:
    screen = _text_screen(640, 400, seed=1)
    earlier = pack(screen)
    changed = screen.copy()
    changed.paste((255, 0, 0), (10, 70, 200, 140))  # rows 70-139: bands 1 and 2
    again = repack(changed, earlier, [(70, 140)])
    assert _same(unpack(again), changed)
    shared = [a is b for a, b in zip(again.bands, earlier.bands, strict=True)]
    assert shared == [True, False, False, True, True, True, True]


def test_repacking_a_screen_that_changed_mode_packs_it_whole() -> None:
    screen = noise(64, 200, seed=1).quantize(16)
    earlier = pack(screen)
    changed = screen.convert("RGB")
    changed.paste((1, 2, 3), (0, 0, 4, 4))
    again = repack(changed, earlier, [(0, 4)])
    assert again.mode == "RGB"
    assert _same(unpack(again), changed)


def test_a_screen_in_another_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="indexed or RGB"):
        pack(Image.new("RGBA", (4, 4)))
    screens = DecodedScreens()
    screens.keep("a", Image.new("RGBA", (4, 4)))
    assert screens.copy_of("a") is None


def test_decoded_screens_hand_out_copies_that_paint_without_touching_the_kept_one() -> None:
    screens = DecodedScreens()
    first = noise(64, 48, seed=1)
    screens.keep("a", first)
    copy = screens.copy_of("a")
    assert copy is not None
    assert copy is not first
    copy.paste((0, 0, 0), (0, 0, 10, 10))
    assert _same(screens.copy_of("a") or Image.new("RGB", (1, 1)), first)
    assert screens.peek("a") is first  # the raw tier hands out the image it keeps


def test_past_the_raw_budget_a_screen_is_unpacked_exactly_and_promoted() -> None:
    first, second, third = noise(64, 48, seed=1), noise(64, 48, seed=2), noise(64, 48, seed=3)
    screens = DecodedScreens(max_bytes=1 << 20, hot_bytes=2 * 64 * 48 * 3)  # two raw screens
    screens.keep("a", first)
    screens.keep("b", second)
    screens.keep("c", third)  # "a" leaves the raw tier, stays packed
    assert screens.peek("b") is second
    assert screens.peek("c") is third
    assert screens.unpacks == 0
    again = screens.peek("a")
    assert again is not None
    assert again is not first
    assert _same(again, first)
    assert screens.unpacks == 1
    assert screens.peek("a") is again  # promoted: read again without unpacking
    assert screens.unpacks == 1
    assert screens.bytes <= (1 << 20) + 2 * 64 * 48 * 3


def test_a_screen_no_policy_has_read_yet_outlasts_those_read_already() -> None:
    """With a hundred sessions stepping, dozens of screens are rebuilt before their
    policies read them: a raw screen already read goes first, whatever its age."""
    screens = DecodedScreens(max_bytes=1 << 20, hot_bytes=2 * 64 * 48 * 3)
    made = [noise(64, 48, seed) for seed in range(3)]
    screens.keep("unread", made[1])
    screens.keep("read", made[0])
    assert screens.peek("read") is made[0]  # used last, yet read already
    screens.keep("newest", made[2])  # over the raw budget: "read" goes, not "unread"
    assert screens.peek("unread") is made[1]
    assert screens.peek("newest") is made[2]
    assert screens.unpacks == 0


def test_past_the_packed_budget_the_least_recently_used_screen_goes() -> None:
    screens_made = [noise(64, 48, seed) for seed in (1, 2, 3)]
    sizes = [pack(s).nbytes for s in screens_made]
    screens = DecodedScreens(max_bytes=sizes[0] + sizes[1] + sizes[2] - 1)
    screens.keep("a", screens_made[0])
    screens.keep("b", screens_made[1])
    assert screens.copy_of("a") is not None  # "a" used lately: "b" is the oldest now
    screens.keep("c", screens_made[2])
    assert screens.copy_of("b") is None
    assert "a" in screens
    assert "c" in screens
    assert screens.bytes <= screens.max_bytes + screens.hot_bytes
    assert DecodedScreens(max_bytes=100).copy_of("a") is None
    nothing = DecodedScreens(max_bytes=0)
    nothing.keep("a", screens_made[0])
    assert nothing.copy_of("a") is None
    assert nothing.bytes == 0


def test_a_session_keeps_its_newest_screens_and_their_shared_bands_count_once() -> None:
    """Its history window stays (an engine may ask for it again); older screens go,
    and screens that differ in a few rows weigh little more than one."""
    screens = DecodedScreens(screens_per_session=3)
    chain = [_text_screen(640, 400, seed=2)]
    screens.keep("s0", chain[0])
    one = screens.bytes - screens._hot_bytes
    for step in range(1, 5):
        changed = chain[-1].copy()
        changed.paste((9, 9, step), (0, 300, 640, 310))
        chain.append(changed)
        screens.keep(f"s{step}", changed, supersedes=f"s{step - 1}", changed_rows=[(300, 310)])
    assert [f"s{i}" in screens for i in range(5)] == [False, False, True, True, True]
    for step in (2, 3, 4):
        assert _same(screens.copy_of(f"s{step}") or Image.new("RGB", (1, 1)), chain[step])
    packed = screens.bytes - screens._hot_bytes
    assert packed < one * 1.5  # three screens, one band apart: about one screen's bytes


def test_dropping_screens_gives_back_exactly_their_bytes() -> None:
    screens = DecodedScreens(screens_per_session=2)
    base = _text_screen(320, 200, seed=1)
    screens.keep("a", base)
    for step, key in enumerate(("b", "c", "d"), start=1):
        changed = base.copy()
        changed.paste((step, 0, 0), (0, 10 * step, 50, 10 * step + 5))
        screens.keep(
            key, changed, supersedes="abc"[step - 1], changed_rows=[(10 * step, 10 * step + 5)]
        )
        base = changed
    expected = {id(band): len(band) for key in ("c", "d") for band in screens._packed[key].bands}
    assert screens.bytes - screens._hot_bytes == sum(expected.values())


def test_a_thousand_1080p_sessions_screens_fit_in_the_default_budget() -> None:
    """The point of packing (issue 14): every session's newest screen stays decoded."""
    screen = _text_screen(1920, 1080, seed=5)
    per_screen = pack(screen).nbytes
    assert 1000 * per_screen < DecodedScreens().max_bytes


def test_an_older_screen_of_a_window_is_made_from_the_newest_one_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A window's older screens differ from the newest (held raw) in a band or two:
    those bands are unpacked over a copy of it, never the whole screen."""
    screens = DecodedScreens(hot_bytes=640 * 400 * 3)  # the newest screen only
    chain = [_text_screen(640, 400, seed=4)]
    screens.keep("s0", chain[0])
    for step in (1, 2):
        changed = chain[-1].copy()
        changed.paste((200, 10, step), (5, 100 * step, 300, 100 * step + 12))
        chain.append(changed)
        rows = [(100 * step, 100 * step + 12)]
        screens.keep(f"s{step}", changed, supersedes=f"s{step - 1}", changed_rows=rows)
    whole: list[object] = []
    monkeypatch.setattr(packed_screens, "unpack", lambda packed: whole.append(packed))
    oldest = screens.peek("s0")
    assert oldest is not None
    assert _same(oldest, chain[0])
    middle = screens.copy_of("s1")
    assert middle is not None
    assert _same(middle, chain[1])
    assert whole == []


def test_a_screen_whose_neighbour_differs_in_mode_is_unpacked_whole() -> None:
    base = noise(64, 200, seed=5).quantize(32)
    rgb = base.convert("RGB")
    rgb.paste((1, 2, 3), (0, 0, 64, 3))
    earlier = pack(base)
    later = repack(rgb, earlier, [(0, 3)])
    assert _same(packed_screens.unpack_near(earlier, rgb, later), base)


def test_repainting_a_packed_screen_paints_exactly_and_touches_only_its_bands() -> None:
    screen = _text_screen(640, 400, seed=2)
    earlier = pack(screen)
    line = noise(300, 20, seed=4)  # rows 120-139: band 1 and band 2
    menu = noise(100, 90, seed=5)  # over the line, rows 130-219: bands 2 and 3
    corner = noise(50, 30, seed=6)  # the last rows: the short last band
    patches = [(line, (10, 120)), (menu, (200, 130)), (corner, (590, 370))]
    again = packed_screens.repaint(earlier, patches)
    expected = screen.copy()
    for pixels, at in patches:
        expected.paste(pixels, at)
    assert _same(unpack(again), expected)
    shared = [a is b for a, b in zip(again.bands, earlier.bands, strict=True)]
    assert shared == [True, False, False, False, True, False, False]


def test_an_indexed_screen_is_never_repainted_band_by_band() -> None:
    with pytest.raises(ValueError, match="RGB"):
        packed_screens.repaint(pack(noise(64, 64, seed=1).quantize(16)), [])


def test_a_base_that_left_the_raw_tier_is_painted_packed_and_reads_back_exactly() -> None:
    first, other = _text_screen(320, 200, seed=1), _text_screen(320, 200, seed=2)
    raw = 320 * 200 * 3
    screens = DecodedScreens(max_bytes=1 << 22, hot_bytes=raw)  # one raw screen
    screens.keep("a", first)
    patch = [(noise(40, 10, seed=3), (5, 70))]
    assert not screens.paint_packed("a+1", "a", patch)  # raw still: painted raw instead
    screens.keep("b", other)  # "a" leaves the raw tier
    assert screens.paint_packed("a+1", "a", patch)
    assert screens.unpacks == 0
    expected = first.copy()
    expected.paste(*patch[0])
    assert _same(screens.peek("a+1") or Image.new("RGB", (1, 1)), expected)
    assert not screens.paint_packed("c+1", "c", patch)  # an unknown base
    screens.keep("p", noise(64, 64, seed=1).quantize(16))
    screens.keep("q", other.copy())
    assert not screens.paint_packed("p+1", "p", patch)  # indexed


def test_a_chain_keeps_the_longest_window_of_the_daemons_policies() -> None:
    assert screens_per_session_for([]) == SCREENS_PER_SESSION
    assert screens_per_session_for([1, 3]) == SCREENS_PER_SESSION
    assert screens_per_session_for([1, 8, 3]) == 9


async def test_the_daemon_keeps_as_many_screens_a_session_as_its_policies_window_shows() -> None:
    async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[InstantPolicy(8)]) as running:
        assert running.decoded_screens is not None
        assert running.decoded_screens.screens_per_session == 9
