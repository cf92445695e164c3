"""TrainerService's messages <-> the engine's weight-update values (engines/weights.py).

Inbound: a mode, a folder path and a version, each held to the contract first.
Outbound: a PolicyVersion and what an update did. The engine's errors become
statuses in rpc/trainer_service.py, where the policy is known.
"""

from __future__ import annotations

from pathlib import Path

from holodesk.daemon.engines.weights import PolicyVersion, UpdateMode, WeightUpdate
from holodesk.daemon.errors import InvalidArgument
from holodesk.proto.limits import NAME_CHARS, clip
from holodesk.proto.v1 import trainer_pb2

_MODES = {
    trainer_pb2.UPDATE_MODE_UNSPECIFIED: UpdateMode.KEEP,
    trainer_pb2.UPDATE_MODE_KEEP: UpdateMode.KEEP,
    trainer_pb2.UPDATE_MODE_WAIT: UpdateMode.WAIT,
    trainer_pb2.UPDATE_MODE_ABORT: UpdateMode.ABORT,
}
_MODES_OUT = {
    UpdateMode.KEEP: trainer_pb2.UPDATE_MODE_KEEP,
    UpdateMode.WAIT: trainer_pb2.UPDATE_MODE_WAIT,
    UpdateMode.ABORT: trainer_pb2.UPDATE_MODE_ABORT,
}


def update_mode_from_pb(mode: int, field: str) -> UpdateMode:
    try:
        return _MODES[mode]  # type: ignore[index]
    except KeyError:
        raise InvalidArgument(field, f"unknown update mode {mode}") from None


def folder_from_pb(path: str, field: str) -> Path:
    """An absolute folder path on the daemon's host: a relative one would be read
    against the daemon's working directory, which no caller can see."""
    if not path:
        raise InvalidArgument(field, "required: a folder on the daemon's host")
    if "\x00" in path:
        raise InvalidArgument(field, "contains a NUL character")
    folder = Path(path)
    if not folder.is_absolute():
        raise InvalidArgument(field, f"must be an absolute path on the daemon's host, got {path!r}")
    return folder


def policy_version_to_pb(version: PolicyVersion) -> trainer_pb2.PolicyVersion:
    return trainer_pb2.PolicyVersion(
        number=version.number,
        label=clip(version.label, NAME_CHARS),
        adapter=clip(version.adapter, NAME_CHARS),
        weights_checksum=clip(version.checksum, NAME_CHARS),
    )


def weight_update_to_pb(update: WeightUpdate) -> trainer_pb2.UpdateWeightsResponse:
    return trainer_pb2.UpdateWeightsResponse(
        version=policy_version_to_pb(update.version),
        previous=policy_version_to_pb(update.previous),
        paused_seconds=update.paused_seconds,
        seconds=update.seconds,
        requests_in_flight=update.requests_in_flight,
        requests_retried=update.requests_retried,
        mode=_MODES_OUT[update.mode],
    )
