"""Absolute pointer coordinates: virtual-desktop pixels <-> SendInput's 0..65535 range.

With MOUSEEVENTF_ABSOLUTE | MOUSEEVENTF_VIRTUALDESK, SendInput spreads 0..65535 over
the virtual screen (SM_XVIRTUALSCREEN, SM_YVIRTUALSCREEN, SM_CXVIRTUALSCREEN,
SM_CYVIRTUALSCREEN). Windows documents the end points only: 0 is the first pixel and
65535 the last. Two decodings are in use between them:

- floor:  pixel = origin + n * size // 65536   (measured on real systems)
- scaled: pixel = origin + round(n * (size - 1) / 65535)   (the documented end points
  read as a linear map)

`to_normalized` picks, for every pixel, the middle of the values that BOTH decodings
send to that pixel, so a click lands on its pixel whichever one the system uses.

Why such a value always exists: with u = 65536/size and v = 65535/(size-1), pixel r
takes [r*u, (r+1)*u) under floor and [(r-1/2)*v, (r+1/2)*v) under scaled. Since
v - u = (65536-size)/(size*(size-1)) and r <= size-1, the two overlap by at least u/2,
which is at least one unit while size <= 32768. Larger virtual screens are refused.
"""

from __future__ import annotations

NORMALIZED_MAX = 65535
_SPAN = NORMALIZED_MAX + 1


def to_normalized(pixel: int, origin: int, size: int) -> int:
    """The normalized coordinate (0..65535) that lands on `pixel` of an axis."""
    offset = _offset(pixel, origin, size)
    low_floor = _ceil_div(offset * _SPAN, size)
    high_floor = _ceil_div((offset + 1) * _SPAN, size) - 1
    if size == 1:
        low_scaled, high_scaled = 0, NORMALIZED_MAX
    else:
        # round(n * (size-1) / 65535) == offset, rounding halves up:
        # (2*offset - 1) * 65535 <= 2 * n * (size-1) < (2*offset + 1) * 65535
        low_scaled = _ceil_div((2 * offset - 1) * NORMALIZED_MAX, 2 * (size - 1))
        high_scaled = _ceil_div((2 * offset + 1) * NORMALIZED_MAX, 2 * (size - 1)) - 1
    low = max(low_floor, low_scaled, 0)
    high = min(high_floor, high_scaled, NORMALIZED_MAX)
    if low > high:
        raise ValueError(
            f"no normalized coordinate lands on pixel {pixel} of an axis of {size} pixels "
            f"from {origin} under both decodings"
        )
    return (low + high) // 2


def from_normalized_floor(value: int, origin: int, size: int) -> int:
    """The pixel the floor decoding gives for a normalized coordinate."""
    _check_normalized(value)
    return origin + value * size // _SPAN


def from_normalized_scaled(value: int, origin: int, size: int) -> int:
    """The pixel the scaled decoding gives (round half up) for a normalized coordinate."""
    _check_normalized(value)
    if size == 1:
        return origin
    return origin + (2 * value * (size - 1) + NORMALIZED_MAX) // (2 * NORMALIZED_MAX)


def _offset(pixel: int, origin: int, size: int) -> int:
    if size <= 0:
        raise ValueError(f"an axis of the virtual screen cannot have {size} pixels")
    if size > _SPAN // 2:
        raise ValueError(
            f"a virtual screen {size} pixels across is beyond what 0..65535 can address exactly"
        )
    offset = pixel - origin
    if not 0 <= offset < size:
        raise ValueError(
            f"pixel {pixel} is outside the virtual screen's axis [{origin}, {origin + size})"
        )
    return offset


def _check_normalized(value: int) -> None:
    if not 0 <= value <= NORMALIZED_MAX:
        raise ValueError(f"normalized coordinates run from 0 to 65535, not {value}")


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)
