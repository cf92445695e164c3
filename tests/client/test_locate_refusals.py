"""Refusals about the daemon (a stopping gRPC core's CANCELLED, an ABORTED or INTERNAL
call) are asked again, and meet the daemon's real state: an answer, or UNAVAILABLE once
it is gone. Any other refusal, and the last of the tries, is raised as it came."""

from __future__ import annotations

import grpc
import grpc.aio
import pytest

from holodesk.client.locate.refusals import RETRIED_CODES, asked_again


def refusal(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), code.name)


class Calls:
    """Answers with each of `outcomes` in turn: an exception is raised, else returned."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.made = 0

    async def __call__(self) -> object:
        outcome = self.outcomes[self.made]
        self.made += 1
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


@pytest.mark.parametrize("code", sorted(RETRIED_CODES, key=str))
async def test_a_refusal_about_the_daemon_is_asked_again(code: grpc.StatusCode) -> None:
    calls = Calls(refusal(code), "answer")
    assert await asked_again(calls, (0.0, 0.0)) == "answer"
    assert calls.made == 2


async def test_a_daemon_gone_meanwhile_is_its_unavailable() -> None:
    calls = Calls(refusal(grpc.StatusCode.CANCELLED), refusal(grpc.StatusCode.UNAVAILABLE))
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await asked_again(calls, (0.0, 0.0))
    assert gone.value.code() == grpc.StatusCode.UNAVAILABLE
    assert calls.made == 2


async def test_the_last_try_is_raised_as_it_came() -> None:
    calls = Calls(*(refusal(grpc.StatusCode.INTERNAL) for _ in range(3)))
    with pytest.raises(grpc.aio.AioRpcError) as last:
        await asked_again(calls, (0.0, 0.0))
    assert last.value.code() == grpc.StatusCode.INTERNAL
    assert calls.made == 3


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.DEADLINE_EXCEEDED]
)
async def test_a_refusal_of_the_image_itself_is_not_asked_again(code: grpc.StatusCode) -> None:
    calls = Calls(refusal(code), "never")
    with pytest.raises(grpc.aio.AioRpcError):
        await asked_again(calls, (0.0, 0.0))
    assert calls.made == 1
