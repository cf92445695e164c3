"""Typed errors, each carrying the gRPC status code and rich details it maps to.

Raise these anywhere in the daemon; the interceptor turns them into a precise
status with a readable message and google.rpc details (BadRequest field
violations, PreconditionFailure, ResourceInfo, QuotaFailure, RetryInfo,
ErrorInfo), so clients in any language can react to the cause, not just the
code.
"""

from __future__ import annotations

from typing import ClassVar

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2


class HolodeskError(Exception):
    """Base of every error a client may see."""

    code: ClassVar[grpc.StatusCode] = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def details(self) -> list[Message]:
        return []

    def to_status(self) -> status_pb2.Status:
        packed: list[any_pb2.Any] = []
        for detail in self.details():
            item = any_pb2.Any()
            item.Pack(detail)
            packed.append(item)
        return status_pb2.Status(code=_RPC_CODES[self.code], message=self.message, details=packed)


class InvalidArgument(HolodeskError):  # noqa: N818
    """A request field is malformed; `field` names it (e.g. "observation.frame.size")."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, field: str, description: str) -> None:
        super().__init__(f"{field}: {description}")
        self.field = field
        self.description = description

    def details(self) -> list[Message]:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=self.field, description=self.description
        )
        return [error_details_pb2.BadRequest(field_violations=[violation])]


class FailedPrecondition(HolodeskError):  # noqa: N818
    """The request is well-formed but not allowed in the current state."""

    code = grpc.StatusCode.FAILED_PRECONDITION

    def __init__(self, subject: str, description: str, kind: str = "STATE") -> None:
        super().__init__(f"{subject}: {description}")
        self.subject = subject
        self.description = description
        self.kind = kind

    def details(self) -> list[Message]:
        violation = error_details_pb2.PreconditionFailure.Violation(
            type=self.kind, subject=self.subject, description=self.description
        )
        return [error_details_pb2.PreconditionFailure(violations=[violation])]


class NotFound(HolodeskError):  # noqa: N818
    code = grpc.StatusCode.NOT_FOUND

    def __init__(self, resource_type: str, name: str, description: str = "") -> None:
        shown = name if name else "(empty)"
        suffix = f": {description}" if description else ""
        super().__init__(f"{resource_type} {shown} not found{suffix}")
        self.resource_type = resource_type
        self.name = name

    def details(self) -> list[Message]:
        return [
            error_details_pb2.ResourceInfo(
                resource_type=self.resource_type, resource_name=self.name, description=self.message
            )
        ]


# How long a full daemon tells callers to wait (RetryInfo on RESOURCE_EXHAUSTED).
RETRY_WHEN_FULL_S = 10.0


class ResourceExhausted(HolodeskError):  # noqa: N818
    """A quota is full; `retry_after_s`, when given, goes out as RetryInfo."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, subject: str, description: str, retry_after_s: float | None = None) -> None:
        super().__init__(f"{subject}: {description}")
        self.subject = subject
        self.description = description
        self.retry_after_s = retry_after_s

    def details(self) -> list[Message]:
        violation = error_details_pb2.QuotaFailure.Violation(
            subject=self.subject, description=self.description
        )
        out: list[Message] = [error_details_pb2.QuotaFailure(violations=[violation])]
        if self.retry_after_s is not None:
            out.append(_retry_info(self.retry_after_s))
        return out


class Unavailable(HolodeskError):  # noqa: N818
    """Try again later; `retry_after_s` goes out as RetryInfo."""

    code = grpc.StatusCode.UNAVAILABLE

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def details(self) -> list[Message]:
        return [_retry_info(self.retry_after_s)]


class Unauthenticated(HolodeskError):  # noqa: N818
    """No usable credential. The message never repeats the credential itself."""

    code = grpc.StatusCode.UNAUTHENTICATED

    def details(self) -> list[Message]:
        return [error_details_pb2.ErrorInfo(reason="UNAUTHENTICATED", domain="holodesk")]


class PermissionDenied(HolodeskError):  # noqa: N818
    """The caller is known but its role may not do this."""

    code = grpc.StatusCode.PERMISSION_DENIED

    def __init__(self, message: str, *, principal: str = "", required_role: str = "") -> None:
        super().__init__(message)
        self.principal = principal
        self.required_role = required_role

    def details(self) -> list[Message]:
        metadata = {"principal": self.principal, "required_role": self.required_role}
        return [
            error_details_pb2.ErrorInfo(
                reason="PERMISSION_DENIED",
                domain="holodesk",
                metadata={k: v for k, v in metadata.items() if v},
            )
        ]


class Aborted(HolodeskError):  # noqa: N818
    """A concurrency conflict: the same operation is already running (try it after)."""

    code = grpc.StatusCode.ABORTED

    def details(self) -> list[Message]:
        return [error_details_pb2.ErrorInfo(reason="ABORTED", domain="holodesk")]


class DeadlineExceeded(HolodeskError):  # noqa: N818
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Unimplemented(HolodeskError):  # noqa: N818
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(HolodeskError):  # noqa: N818
    """An unexpected failure; the message always names the exception type."""

    code = grpc.StatusCode.INTERNAL

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"internal error: {type(exc).__name__}: {exc}")
        self.exc_type = type(exc).__name__

    def details(self) -> list[Message]:
        return [error_details_pb2.DebugInfo(detail=self.message)]


_RPC_CODES: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.UNKNOWN: code_pb2.UNKNOWN,
    grpc.StatusCode.INVALID_ARGUMENT: code_pb2.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION: code_pb2.FAILED_PRECONDITION,
    grpc.StatusCode.NOT_FOUND: code_pb2.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED: code_pb2.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAVAILABLE: code_pb2.UNAVAILABLE,
    grpc.StatusCode.UNIMPLEMENTED: code_pb2.UNIMPLEMENTED,
    grpc.StatusCode.INTERNAL: code_pb2.INTERNAL,
    grpc.StatusCode.UNAUTHENTICATED: code_pb2.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED: code_pb2.PERMISSION_DENIED,
    grpc.StatusCode.DEADLINE_EXCEEDED: code_pb2.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED: code_pb2.ABORTED,
}


def _retry_info(retry_after_s: float) -> error_details_pb2.RetryInfo:
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(retry_after_s * 1e9))
    return error_details_pb2.RetryInfo(retry_delay=delay)
