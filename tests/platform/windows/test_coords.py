"""Every pixel of a virtual desktop maps to a 0..65535 value that decodes back to it.

Windows' decoding is not documented between the end points; both decodings in use
(floor and scaled) are checked for every pixel of each axis, origins negative.
"""

from __future__ import annotations

import pytest

from holodesk.platform.windows.coords import (
    NORMALIZED_MAX,
    from_normalized_floor,
    from_normalized_scaled,
    to_normalized,
)

# (origin, size) of virtual-screen axes: three monitors left of and above the primary.
AXES = [
    (-1920, 1920 + 3840 + 2560),  # 1920 | 3840 | 2560 across
    (-1440, 1440 + 2160),  # a monitor above a 4K one
    (-3840, 3840),  # everything left of the primary
    (0, 1366),
    (-1, 3),
    (0, 1),
    (-20000, 32768),  # the widest the 16-bit range addresses exactly
]


@pytest.mark.parametrize(("origin", "size"), AXES)
def test_every_pixel_round_trips_under_both_decodings(origin: int, size: int) -> None:
    for pixel in range(origin, origin + size):
        value = to_normalized(pixel, origin, size)
        assert 0 <= value <= NORMALIZED_MAX
        assert from_normalized_floor(value, origin, size) == pixel
        assert from_normalized_scaled(value, origin, size) == pixel


def test_every_width_up_to_the_limit_reaches_its_ends_and_middle() -> None:
    for size in range(1, 32769):
        for pixel in (0, size // 3, size - 1):
            value = to_normalized(pixel - 7, -7, size)
            assert from_normalized_floor(value, -7, size) == pixel - 7
            assert from_normalized_scaled(value, -7, size) == pixel - 7


def test_first_and_last_pixels_sit_near_the_documented_ends() -> None:
    assert to_normalized(-1920, -1920, 8320) < 8
    assert to_normalized(8320 - 1920 - 1, -1920, 8320) > NORMALIZED_MAX - 8


@pytest.mark.parametrize("pixel", [-1921, 6400])
def test_pixels_off_the_virtual_screen_are_refused(pixel: int) -> None:
    with pytest.raises(ValueError, match="outside the virtual screen"):
        to_normalized(pixel, -1920, 8320)


def test_a_screen_too_wide_for_exact_addressing_is_refused() -> None:
    with pytest.raises(ValueError, match=r"beyond what 0\.\.65535 can address"):
        to_normalized(0, 0, 40000)


def test_decoders_reject_values_outside_the_range() -> None:
    with pytest.raises(ValueError, match="0 to 65535"):
        from_normalized_floor(65536, 0, 100)
