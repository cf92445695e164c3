"""The contract's length limits, held on an inbound message before anything else.

Every inbound conversion calls check_limits first, before a value is converted,
logged or echoed in an error (holodesk.proto.limits says what the limits are); one
home so the error's wording (the limit and the size, never the value) is the same
for every message.
"""

from __future__ import annotations

from google.protobuf.message import Message

from holodesk.daemon.errors import InvalidArgument
from holodesk.proto import limits


def check_limits(message: Message, field: str = "") -> None:
    """INVALID_ARGUMENT naming the first field of `message` over its contract limit.

    The description gives the limit and the size, never the value: an error (and
    the log line it makes) stays small whatever was sent.
    """
    violation = limits.first_violation(message, field)
    if violation is not None:
        raise InvalidArgument(violation.field, violation.description)
