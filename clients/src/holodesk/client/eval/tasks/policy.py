"""Which text of a task to send: the daemon says which policy a session gets
(ControlService.GetServerInfo: the one asked for, else its default), and the OCR
baseline needs the task in its own language (`ocr_instruction`)."""

from __future__ import annotations

import grpc
import grpc.aio

from holodesk.proto.v1 import control_pb2, control_pb2_grpc

OCR_POLICY = "ocr"
INFO_TIMEOUT_S = 30.0


class PolicyUnknownError(Exception):
    """The daemon would not say which policy it serves; the message says what to do."""


async def session_policy(channel: grpc.aio.Channel, asked: str = "") -> str:
    """The policy a session gets: `asked` when it is set, else the daemon's default."""
    if asked:
        return asked
    control = control_pb2_grpc.ControlServiceStub(channel)
    try:
        info = await control.GetServerInfo(
            control_pb2.GetServerInfoRequest(), timeout=INFO_TIMEOUT_S
        )
    except grpc.aio.AioRpcError as error:
        code = error.code().name if error.code() is not None else "UNKNOWN"
        raise PolicyUnknownError(
            f"cannot ask the daemon which policy it serves (GetServerInfo: {code}: "
            f"{error.details()}); pass --instruction-field instruction (a model policy) or "
            "ocr_instruction (the OCR baseline), or --policy"
        ) from error
    return str(info.default_policy)


def instruction_field(policy: str) -> str:
    """The task field for `policy`: the OCR baseline reads `ocr_instruction`."""
    return "ocr_instruction" if policy == OCR_POLICY else "instruction"
