"""Nemotron-VL tiling (TileResize) and the holotron dialect that uses it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from holodesk.daemon.actions import Click
from holodesk.daemon.dialects import DEFAULT_DIALECT, DialectConfigError, get_dialect, load_dialect
from holodesk.daemon.dialects.coords import TileResize, fit_in_box, tile_grid
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Point, Size
from tests.daemon.support import image_bytes

NEMOTRON = TileResize(tile_size=512, max_tiles=12, min_tiles=1, thumbnail=True)


@pytest.mark.parametrize(
    ("screen", "grid", "tokens"),
    [
        # 16:9 (1.78) sits between 3:2 and 2:1; 2:1 is closer, and the screen has more
        # than half of a 4x2 grid's pixels, so the larger of the 2:1 grids: 8 + thumbnail.
        (Size(1920, 1080), (4, 2), 9 * 256),
        (Size(2560, 1440), (4, 2), 9 * 256),
        (Size(1366, 768), (4, 2), 9 * 256),
        (Size(960, 540), (2, 1), 3 * 256),  # under half of 4x2's pixels: the small 2:1 grid
        (Size(1920, 1200), (3, 2), 7 * 256),  # 16:10 = 1.6: 3:2 is closest
        (Size(1440, 900), (3, 2), 7 * 256),
        (Size(1024, 768), (4, 3), 13 * 256),  # 4:3 exactly: 12 tiles + thumbnail
        (Size(1280, 1024), (4, 3), 13 * 256),  # 5:4 = 1.25: 4:3 is the closest grid
        (Size(1080, 1920), (2, 4), 9 * 256),  # portrait 9:16
        (Size(1200, 1920), (2, 3), 7 * 256),  # portrait 10:16
        (Size(390, 844), (1, 2), 3 * 256),  # a phone
        (Size(3440, 1440), (5, 2), 11 * 256),  # 21:9 = 2.39: 5:2 is closest
        (Size(5120, 1440), (4, 1), 5 * 256),  # 32:9 = 3.56: 4:1 (7:2 would need 14 tiles)
        (Size(7680, 4320), (4, 2), 9 * 256),  # huge: tiles cap the cost, not the pixels
        (Size(100, 100), (1, 1), 256),  # one tile: no thumbnail
        (Size(64, 48), (4, 3), 13 * 256),  # tiny 4:3 is still stretched onto 4x3
        (Size(1, 1), (1, 1), 256),
        (Size(12_000, 10), (12, 1), 13 * 256),
        (Size(10, 12_000), (1, 12), 13 * 256),
    ],
)
def test_grid_choice_and_token_estimates(screen: Size, grid: tuple[int, int], tokens: int) -> None:
    assert NEMOTRON.grid(screen) == grid
    assert NEMOTRON.apply(screen) == Size(grid[0] * 512, grid[1] * 512)
    assert NEMOTRON.image_tokens(screen) == tokens


def test_a_full_hd_screenshot_is_about_2300_tokens() -> None:
    tokens = get_dialect("holotron").image_tokens(Size(1920, 1080))
    assert tokens == 2304  # 8 tiles + thumbnail: "about 2.3k tokens"


def test_thumbnail_and_limits_are_parameters() -> None:
    no_thumb = TileResize(thumbnail=False)
    assert no_thumb.image_tokens(Size(1920, 1080)) == 8 * 256
    six = TileResize(max_tiles=6)
    assert six.grid(Size(1920, 1080)) == (2, 1)  # 4x2 is over the limit
    assert six.grid(Size(1024, 768)) == (3, 2)  # no 4:3 grid within 6 tiles; 3:2 is closest
    with pytest.raises(ValueError, match="tile counts"):
        TileResize(max_tiles=2, min_tiles=3)
    with pytest.raises(ValueError, match="empty"):
        tile_grid(Size(0, 10), 512, 1, 12)


sizes = st.builds(Size, st.integers(1, 10_000), st.integers(1, 10_000))
limits = st.integers(1, 16)


@given(size=sizes, max_tiles=limits)
def test_the_grid_is_the_closest_aspect_ratio_within_the_limit(size: Size, max_tiles: int) -> None:
    rule = TileResize(max_tiles=max_tiles)
    cols, rows = rule.grid(size)
    assert 1 <= cols * rows <= max_tiles
    aspect = size.width / size.height
    best = abs(aspect - cols / rows)
    for c in range(1, max_tiles + 1):
        for r in range(1, max_tiles // c + 1):
            assert abs(aspect - c / r) >= best


@given(size=sizes, max_tiles=limits)
def test_grid_sizes_are_fixed_points(size: Size, max_tiles: int) -> None:
    """The daemon sends the grid-sized image; the engine's tiling must not resample it."""
    rule = TileResize(max_tiles=max_tiles)
    out = rule.apply(size)
    assert rule.apply(out) == out
    assert rule.tiles(out) == rule.tiles(size)


@given(screen=st.builds(Size, st.integers(200, 8000), st.integers(200, 8000)))
def test_the_frame_box_keeps_the_grid(screen: Size) -> None:
    """A client that fits the screen into the size-aware box sends a frame whose grid
    is the screen's, and never much more than the grid shows: either the screen as it
    is (when at most 1.2x the grid's image per side) or a frame within the grid."""
    dialect = get_dialect("holotron")
    spec = dialect.frame_spec((), screen)
    frame = fit_in_box(screen, spec.max_width, spec.max_height)
    static = fit_in_box(screen, dialect.spec.frame.max_width, dialect.spec.frame.max_height)
    grid = NEMOTRON.apply(static)
    if frame == screen:
        assert frame.width <= grid.width * 1.2
        assert frame.height <= grid.height * 1.2
    else:
        assert frame.width <= grid.width
        assert frame.height <= grid.height
    assert NEMOTRON.grid(frame) == NEMOTRON.grid(static)


def test_a_screen_barely_larger_than_the_model_image_is_sent_as_it_is() -> None:
    dialect = get_dialect("holotron")
    # 1920x1080 becomes a 2048x1024 grid image: no client-side resample first.
    spec = dialect.frame_spec((), Size(1920, 1080))
    assert (spec.max_width, spec.max_height) == (1920, 1080)
    # A 4K screen is still brought down to the grid's image before it is sent.
    spec = dialect.frame_spec((), Size(3840, 2160))
    assert (spec.max_width, spec.max_height) == (2048, 1024)
    assert fit_in_box(Size(3840, 2160), spec.max_width, spec.max_height) == Size(1820, 1024)


def test_holotron_is_the_default_and_holo_stays_available() -> None:
    assert DEFAULT_DIALECT == "holotron"
    default = get_dialect()
    assert default.name == "holotron"
    assert default.spec.parser == get_dialect("holo").spec.parser == "holo_json"
    assert default.spec.resize.rule() == NEMOTRON
    assert get_dialect("holo").spec.resize.kind == "smart"


def test_holotron_answers_in_holo_json_with_normalized_coordinates() -> None:
    dialect = get_dialect("holotron")
    geometry = dialect.geometry(Size(1920, 1080))
    assert geometry.model_image == Size(2048, 1024)  # what the vision tower sees
    text = json.dumps({"thought": "t", "action": {"action": "click_element", "x": 500, "y": 250}})
    assert dialect.parse_step(text, geometry).actions == (Click(Point(960, 270)),)
    assert dialect.step_schema() is not None  # structured decoding, as for Holo2


def test_holotron_sends_the_model_the_grid_sized_image() -> None:
    dialect = get_dialect("holotron")
    frame = EncodedFrame("f", Size(1820, 1024), ImageEncoding.JPEG, image_bytes(1820, 1024, "JPEG"))
    part = dialect.model_image(frame)
    assert (part.width, part.height) == (2048, 1024)
    assert part.pixels().size == (2048, 1024)
    with Image.open(io.BytesIO(part.encoded())) as decoded:  # what a remote engine gets
        assert (decoded.format, decoded.size) == ("PNG", (2048, 1024))


def test_frame_spec_narrows_to_the_grid_when_the_screen_is_known() -> None:
    dialect = get_dialect("holotron")
    assert (dialect.frame_spec().max_width, dialect.frame_spec().max_height) == (2048, 2048)
    # 1920x1080 is within 1.2x of its 2048x1024 grid image: asked for as it is.
    full_hd = dialect.frame_spec((), Size(1920, 1080))
    assert (full_hd.max_width, full_hd.max_height) == (1920, 1080)
    four_k = dialect.frame_spec((), Size(3840, 2160))
    assert (four_k.max_width, four_k.max_height) == (2048, 1024)
    # Other rules: the box is the model image (Holo2's smart resize of 1920x1080 under
    # 1920*1080 pixels is 1920x1056), never above the static cap.
    holo = get_dialect("holo").frame_spec((), Size(3840, 2160))
    assert (holo.max_width, holo.max_height) == (1920, 1056)


def test_tile_rules_load_from_dialect_files(tmp_path: Path) -> None:
    path = tmp_path / "holotron-small.toml"
    path.write_text('base = "holotron"\nname = "small"\n[resize]\nmax_tiles = 6\n')
    dialect = load_dialect(path)
    assert dialect.spec.resize.rule() == TileResize(max_tiles=6)
    assert dialect.geometry(Size(1920, 1080)).model_image == Size(1024, 512)
    assert dialect.image_tokens(Size(1920, 1080)) == 3 * 256
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"resize": {"kind": "tile", "min_tiles": 5, "max_tiles": 4}}))
    with pytest.raises(DialectConfigError, match="min_tiles"):
        load_dialect(bad)


def test_files_without_a_base_start_from_the_default(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"name": "mine"}))
    assert load_dialect(path).spec.resize.kind == "tile"


def test_smart_resize_token_estimates() -> None:
    # Qwen2.5-VL: one token per 28x28 block of the resized image.
    assert get_dialect("uitars").image_tokens(Size(1920, 1080)) == (1932 // 28) * (1092 // 28)
    assert get_dialect("holo1.5").image_tokens(Size(1920, 1080)) == (1316 // 28) * (728 // 28)


def test_a_grid_that_the_processor_would_regrid_is_followed_to_its_fixed_point() -> None:
    # 1058x1115 picks 3x3 under 16 tiles, but 3x3's own 1536x1536 image picks 4x4
    # (it holds more than half of 4x4's pixels): sending 1536x1536 would be resampled.
    rule = TileResize(max_tiles=16)
    assert tile_grid(Size(1058, 1115), 512, 1, 16) == (3, 3)
    assert tile_grid(Size(1536, 1536), 512, 1, 16) == (4, 4)
    assert rule.grid(Size(1058, 1115)) == (4, 4)
    assert rule.apply(Size(1058, 1115)) == Size(2048, 2048)
    assert rule.tiles(Size(1058, 1115)) == 17
