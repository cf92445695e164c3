"""A trainer updates the weights under 100 running sessions: none ends, no action
is sent twice, and every step says which version made it (issue 29's "Done when").

Real components throughout: vLLM's CPU build serving the tiny random-weight
Holotron-architecture model in process, a real daemon on 127.0.0.1 (gRPC,
sessions, the ModelPolicy, TrainerService), 100 raw RunSession streams stepping
back to back with tiny PNG frames, and UpdateWeights in each mode (KEEP, WAIT,
ABORT) while nearly every session has a step generating in vLLM. The format is
examples/rl_loop's click_only: structured decoding holds the random model to one
click per step, so every step parses and a session that ended could only have
been ended by an update. The session driver and the version rules are shared
with the benchmark (tests/bench/update_load.py, bench_weight_update.py).

Lean on purpose (2 CPU cores): one engine and one daemon for the module, one
test running the three updates one after another under the same sessions; each
update waits until every session has taken a step asked after the previous one
returned. Frames are 32 px (vLLM sees one 512 px tile whatever is sent); the
schema closes each answer after ~35-55 tokens (MAX_TOKENS only bounds the rare
escaped thought).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from examples.rl_loop.serving import click_only, cpu_engine_args
from holodesk.daemon.engines.vllm_engine import VllmEngine
from holodesk.daemon.policies.model import ModelPolicy
from tests.bench.update_load import (
    MODES,
    LoopSession,
    Trainer,
    Update,
    check_versions,
    open_channels,
    settle,
    wait_all_stepped_after,
)
from tests.daemon.support import Daemon, running_daemon
from tests.engines.support import needs_vllm
from tests.support.checkpoints import perturbed
from tests.support.tiny_models import TinyModel

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(600),
    needs_vllm,
]

SESSIONS = 100
# A click is ~35-55 of the tiny tokenizer's tokens; a 6-character thought of escaped
# characters (\uXXXX each) takes ~35 more, and a truncated answer would end its
# session for a reason that is not the update's.
MAX_TOKENS = 128


@dataclass(frozen=True)
class Served:
    daemon: Daemon
    engine: VllmEngine
    # The engine's own checkpoint, then a perturbed copy: updates alternate.
    checkpoints: tuple[Path, Path]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(
    tiny_model: TinyModel, vllm_env: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Served]:
    other = perturbed(tiny_model.path, tmp_path_factory.mktemp("checkpoint") / "b", seed=7)
    engine = VllmEngine(cpu_engine_args(tiny_model.path, max_num_seqs=SESSIONS))
    started = time.perf_counter()
    # Started before the daemon, whose readiness wait is shorter than vLLM's start.
    await engine.start()
    print(f"\nvllm engine start (import included): {time.perf_counter() - started:.1f} s")
    policy = ModelPolicy(click_only(max_tokens=MAX_TOKENS), engine, name="rl", parse_retries=0)
    # The daemon's defaults but the step limit: an update must end nothing under
    # the step and idle timeouts a real daemon runs with.
    async with running_daemon([policy], max_steps=10_000) as daemon:
        yield Served(daemon, engine, (tiny_model.path, other))
    await engine.close()


async def test_updates_under_100_sessions_end_none_and_send_no_action_twice(
    served: Served,
) -> None:
    began = time.perf_counter()
    trainer = Trainer(served.daemon.channel, served.checkpoints)
    channels = open_channels(served.daemon.running.address, 8)
    sessions = [
        LoopSession(channels[i % len(channels)], f"s{i}", max_tokens=MAX_TOKENS)
        for i in range(SESSIONS)
    ]
    updates: list[Update] = []
    stop = asyncio.Event()
    try:
        await asyncio.gather(*(s.start() for s in sessions))
        running = [asyncio.create_task(s.run(stop)) for s in sessions]
        for mode in MODES:
            await settle(served.engine, SESSIONS)
            update = await trainer.update(mode)
            updates.append(update)
            print(
                f"\n{mode}: version {update.previous} -> {update.version}, paused "
                f"{update.paused_s:.3f} s, call {update.rpc_s:.3f} s, {update.in_flight} "
                f"in flight, {update.retried} retried"
            )
            await wait_all_stepped_after(sessions, update.returned)
        stop.set()
        await asyncio.gather(*running)
    finally:
        for session in sessions:
            session.cancel()
        await asyncio.gather(*(c.close() for c in channels))
    check = check_versions(sessions, updates, start_version=updates[0].previous)
    steps = sum(len(s.steps) for s in sessions)
    print(
        f"\n{SESSIONS} sessions, {steps} steps, 3 updates: {time.perf_counter() - began:.1f} s; "
        f"steps under each update {check.across}, of them with two spans {check.two_spans}"
    )

    # No session ended because of the updates; each went on to its next step after each.
    assert [f"{s.name}: {s.ended}" for s in sessions if s.ended] == []
    assert check.continued == {0: SESSIONS, 1: SESSIONS, 2: SESSIONS}
    # No action id reached a session twice.
    assert {s.name: s.duplicates for s in sessions if s.duplicates} == {}
    # The updates ran under load: most sessions had a step in vLLM as generation paused.
    for update in updates:
        assert update.in_flight >= SESSIONS // 2, update
        assert update.version == update.previous + 1, update
    keep, wait, abort = updates
    assert (keep.mode, wait.mode, abort.mode) == ("keep", "wait", "abort")
    assert abort.retried >= 1, "ABORT stopped no request in flight to run it again"
    assert keep.retried == wait.retried == 0
    # Steps asked after an update are its version on every completion; steps under
    # one are its old or new version, and only KEEP's mix them, in two spans.
    assert check.wrong == []
    assert check.steady >= len(updates) * SESSIONS  # a whole step after each update
    # KEEP froze requests mid-completion (the update waited for one with a token):
    # at least one step carries the old version's tokens, then the new one's.
    assert check.two_spans[0] >= 1, f"no step straddled KEEP: {check.across[0]} under it"
    assert check.two_spans[1] == check.two_spans[2] == 0
