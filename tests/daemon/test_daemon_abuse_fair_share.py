"""Issue 15 item 7: one principal cannot hold the daemon's session slots.

By default a principal gets a fair share of --max-sessions wherever callers are
told apart; a session whose client never sends its first observation ends after
--first-observation-timeout-s; a stream that goes silent between steps is
reaped after --idle-timeout-s; a stream that never even starts is closed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from holodesk.daemon.cli import build_parser, config_from_args
from holodesk.daemon.config import FAIR_SHARE_DIVISOR, ServerConfig
from holodesk.proto.v1 import agent_pb2
from tests.daemon.support import (
    Stream,
    holo,
    make_frame,
    ok_results,
    running_daemon,
    scripted_policy,
    wait_until,
    write_tokens,
)

pytestmark = pytest.mark.abuse

CLICK = holo({"action": "click", "x": 10, "y": 10})
SHORT_S = 0.3


async def test_a_principal_gets_a_fair_share_of_the_sessions_by_default(tmp_path: Path) -> None:
    """No per-principal flag: with 8 slots, agent a holds 2 (a quarter); past them it
    gets RESOURCE_EXHAUSTED, while agent b still gets in."""
    tokens = write_tokens(tmp_path, a="agent", b="agent")
    async with running_daemon(
        [scripted_policy([CLICK])], tokens_file=str(tokens.path), max_sessions=8
    ) as daemon:
        share = 8 // FAIR_SHARE_DIVISOR
        for _ in range(share):
            await Stream(daemon.channel, metadata=tokens.metadata("a")).start()
        extra = Stream(daemon.channel, metadata=tokens.metadata("a"))
        await extra.start_nowait()
        refused = await extra.error()
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "sessions of token:a" in (refused.details() or "")
        assert (await Stream(daemon.channel, metadata=tokens.metadata("b")).start()).session_id
        assert len(daemon.running.registry) == share + 1


def test_the_default_cap_is_a_quarter_where_callers_are_told_apart() -> None:
    with_tokens = config_from_args(build_parser().parse_args(["--tokens-file", "t.toml"]))
    assert with_tokens.sessions_per_principal == 1024 // FAIR_SHARE_DIVISOR
    # Without credentials every caller is the same principal: a cap would only
    # shrink --max-sessions, so there is none unless asked for.
    assert ServerConfig().sessions_per_principal == 0
    assert ServerConfig(max_sessions_per_principal=3).sessions_per_principal == 3
    explicit = ServerConfig(tokens_file="t.toml", max_sessions_per_principal=0)
    assert explicit.sessions_per_principal == 0


async def test_a_session_without_a_first_observation_ends_and_frees_its_slot() -> None:
    async with running_daemon(
        [scripted_policy([CLICK])], first_observation_timeout_s=SHORT_S
    ) as daemon:
        stream = daemon.stream()
        await stream.start()
        ended = (await stream.recv()).ended
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_TIME_LIMIT
        assert "first observation" in ended.reason
        await wait_until(lambda: len(daemon.running.registry) == 0, "the slot to free")


async def test_a_stream_that_goes_silent_between_steps_is_reaped() -> None:
    async with running_daemon([scripted_policy([CLICK] * 3)], idle_timeout_s=SHORT_S) as daemon:
        stream = daemon.stream()
        await stream.start()
        assert (await stream.observe(make_frame("f1", 64, 48))).actions.actions
        ended = (await stream.recv()).ended  # no observation follows
        assert ended.outcome == agent_pb2.SESSION_OUTCOME_TIME_LIMIT
        assert "idle" in ended.reason
        await wait_until(lambda: len(daemon.running.registry) == 0, "the slot to free")


async def test_a_slow_but_steady_client_is_not_reaped() -> None:
    """The idle limit bounds each wait for the client, not the session: five steps
    taking longer together than the limit all go through (the limit leaves each
    step's pause a wide margin, for a loaded machine)."""
    limit = 1.0
    async with running_daemon(
        [scripted_policy([CLICK] * 6)], idle_timeout_s=limit, first_observation_timeout_s=limit
    ) as daemon:
        stream = daemon.stream()
        await stream.start()
        step = (await stream.observe(make_frame("f0", 64, 48))).actions
        for n in range(1, 6):
            await asyncio.sleep(limit / 4)
            step = (await stream.observe(make_frame(f"f{n}", 64, 48), ok_results(step))).actions
            assert step.actions, n


async def test_a_stream_that_never_starts_is_closed() -> None:
    async with running_daemon(
        [scripted_policy([CLICK])], first_observation_timeout_s=SHORT_S
    ) as daemon:
        silent = daemon.stream()
        error = await silent.error()
        assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert "SessionStart" in (error.details() or "")


def test_the_new_limits_are_flags_in_holodeskds_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    for flag in ("--first-observation-timeout-s", "--idle-timeout-s", "--log-task"):
        assert flag in text, flag
    args = ["--first-observation-timeout-s", "5", "--idle-timeout-s", "7", "--log-task"]
    config = config_from_args(build_parser().parse_args(args))
    assert (config.first_observation_timeout_s, config.idle_timeout_s) == (5, 7)
    assert config.log_task
