"""Sends a rollout's reward to the daemon (AgentService.ReportReward), which writes
it into the session's recording. A daemon that records nothing, or has no
recording of the session, is worth a warning (once per kind), never a failure:
the reward stays in the Trajectory either way."""

from __future__ import annotations

import logging

import grpc
import grpc.aio

from holodesk.client import convert
from holodesk.client.rollouts.trajectory import Reward
from holodesk.client.shown import shown
from holodesk.proto.v1 import agent_pb2_grpc

log = logging.getLogger(__name__)

REPORT_TIMEOUT_S = 30.0

_WHY = {
    grpc.StatusCode.UNIMPLEMENTED: "this daemon does not record rewards",
    grpc.StatusCode.NOT_FOUND: "the daemon has no recording of the session (is it recording?)",
    grpc.StatusCode.FAILED_PRECONDITION: "the daemon cannot record a reward for the session",
}


class RewardReporter:
    def __init__(self, channel: grpc.aio.Channel, timeout_s: float = REPORT_TIMEOUT_S) -> None:
        self._stub = agent_pb2_grpc.AgentServiceStub(channel)
        self._timeout_s = timeout_s
        self._warned: set[str] = set()

    async def report(self, session_id: str, reward: Reward) -> bool:
        """True when the daemon wrote the reward into the session's recording."""
        request = convert.reward_request(session_id, reward.reward, reward.success, reward.note)
        try:
            response = await self._stub.ReportReward(request, timeout=self._timeout_s)
        except grpc.aio.AioRpcError as error:
            code = error.code()
            name = code.name if code is not None else "UNKNOWN"
            why = (
                _WHY.get(code, "reporting it failed") if code is not None else "reporting it failed"
            )
            self._warn(name, session_id, f"{why} ({name}: {error.details()})")
            return False
        if not response.recorded:
            self._warn("NOT_RECORDED", session_id, "the daemon is not recording the session")
        return bool(response.recorded)

    def _warn(self, kind: str, session_id: str, why: str) -> None:
        if kind in self._warned:
            log.debug(
                "the reward of session %s is not recorded: %s",
                shown(session_id, multiline=False),
                shown(why, multiline=False),
            )
            return
        self._warned.add(kind)
        log.warning(
            "the reward of session %s is not recorded: %s; rewards stay in the "
            "trajectories (further warnings of this kind are not shown)",
            shown(session_id, multiline=False),
            shown(why, multiline=False),
        )
