"""Points and rectangles <-> geometry.proto, shared by frames, actions and Locate.

box_outward lives here because it is the one place a continuous box (what a model
says) becomes whole pixels (what the wire carries).
"""

from __future__ import annotations

import math

from holodesk.daemon.geometry import Box, Point, Rect
from holodesk.proto.v1 import geometry_pb2


def rect_from_pb(rect: geometry_pb2.Rect) -> Rect:
    return Rect(rect.x, rect.y, rect.width, rect.height)


def point_to_pb(point: Point) -> geometry_pb2.Point:
    return geometry_pb2.Point(x=point.x, y=point.y)


def rect_to_pb(rect: Rect) -> geometry_pb2.Rect:
    return geometry_pb2.Rect(x=rect.x, y=rect.y, width=rect.width, height=rect.height)


def box_outward(box: Box) -> Rect:
    """The smallest whole-pixel Rect that covers a continuous box (edges rounded outward)."""
    left, top = math.floor(box.left), math.floor(box.top)
    return Rect(left, top, math.ceil(box.right) - left, math.ceil(box.bottom) - top)
