"""Run the example's loop: ``python -m examples.rl_loop --serving DIR --policy DIR``.

Without ``--daemon`` it starts a daemon in this process (vLLM on ``--serving``, the
click-only format of serving.py, recording into a scratch folder); with it, it
drives yours (started with ``--record --record-dir DIR`` and a ``trainer`` token).
Each iteration rolls out the target task on a web page and a desktop app, exports,
makes one GRPO update with TRL and pushes it while the next rollouts run.
docs/online-rl.md walks through it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import grpc.aio

from examples.rl_loop.grpo import TrlGrpoTrainer
from examples.rl_loop.loop import Iteration, RolloutPlan, iterate
from examples.rl_loop.serving import click_only, local_policy
from examples.rl_loop.targets import target_environments, target_reward, target_tasks
from holodesk.client.channel import ChannelSettings, open_channel
from holodesk.client.credentials import BearerToken


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.rl_loop", description=__doc__)
    parser.add_argument("--serving", type=Path, required=True, help="the checkpoint vLLM serves")
    parser.add_argument(
        "--policy", type=Path, required=True, help="the same model as transformers loads it"
    )
    parser.add_argument("--daemon", help="a running daemon's address (default: start one here)")
    parser.add_argument("--token-file", type=Path, help="a file holding a trainer-role token")
    parser.add_argument("--record-dir", type=Path, help="the daemon's --record-dir")
    parser.add_argument("--work-dir", type=Path, help="exports and checkpoints (default: temp)")
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=2, help="GRPO groups per round")
    parser.add_argument("--n", type=int, default=2, help="rollouts per task")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--mode", choices=("keep", "wait", "abort"), default="keep")
    return parser.parse_args()


@contextlib.asynccontextmanager
async def daemon(args: argparse.Namespace, record_dir: Path) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to the daemon: the given one, or one started here."""
    token = None
    if args.token_file is not None:
        token = BearerToken(args.token_file.read_text().strip(), str(args.token_file))
    if args.daemon:
        channel = open_channel(args.daemon, ChannelSettings(token=token))
        try:
            yield channel
        finally:
            await channel.close()
        return
    from holodesk.daemon.config import ServerConfig
    from holodesk.daemon.rpc.server import serve

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    config = ServerConfig(listen="127.0.0.1:0", record=True, record_dir=str(record_dir))
    async with serve(config, policies=[local_policy(args.serving)]) as running:
        await asyncio.shield(running.policies_started)
        channel = open_channel(running.address)
        try:
            yield channel
        finally:
            await channel.close()


def show(number: int, report: Iteration) -> None:
    rewards = [t.reward.reward for t in report.before if t.reward is not None]
    print(f"iteration {number}: rewards {[round(r or 0.0, 3) for r in rewards]}")
    if report.update is not None:
        version = report.update.version
        print(f"  pushed version {version.number} ({version.weights_checksum[:19]}...)")
    after = sorted({v for t in report.after for v in t.policy_versions})
    print(f"  versions after: {after}; seconds: {report.seconds}")


async def main() -> None:
    args = arguments()
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rl-loop-")))
        work_dir = args.work_dir or scratch / "work"
        record_dir = args.record_dir or scratch / "recordings"
        trainer = TrlGrpoTrainer(
            args.policy,
            args.serving,
            work_dir,
            learning_rate=args.learning_rate,
            schema=click_only().step_schema(),
        )
        environments = stack.enter_context(target_environments())
        plan = RolloutPlan(
            target_tasks(args.tasks),
            environments,
            target_reward(),
            n=args.n,
            max_steps=args.max_steps,
        )
        async with daemon(args, record_dir) as channel:
            for number in range(1, args.iterations + 1):
                report = await iterate(
                    channel, plan, trainer, record_dir=record_dir, work_dir=work_dir, mode=args.mode
                )
                show(number, report)


if __name__ == "__main__":
    asyncio.run(main())
