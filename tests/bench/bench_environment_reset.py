"""What a fresh desktop costs per rollout, by kind of environment (issue 32).

    uv run python -m tests.bench.bench_environment_reset            # 8 rounds, ~25 s
    uv run python -m tests.bench.bench_environment_reset --quick    # 2 rounds

One figure per kind: the time from reset() to the first full-screen grab that shows
the app (any frame that is not one flat colour), through the backend reset() gives,
i.e. what a rollout waits before its first useful step, and the ratio to the
baseline, a private Xvfb whose app (xterm) is started anew:

- xvfb: XvfbEnvironment(xterm): the X server stays, the app is restarted;
- vnc: VncEnvironment on a running Xvnc with xterm, no reset command (a new VNC
  connection only: the floor of any VNC target);
- sandbox: SandboxEnvironment: a whole new sandbox (Xvnc, openbox, xterm, VNC
  password) per rollout. No container runtime runs here, so the stand-in runtime
  of tests/client/environments runs the image's entrypoint as the container:
  docker's own start (~0.3-1 s) is not in the figure.

Kinds alternate within each round, and medians are taken, so a shared machine's
drift hits all alike. Reported, never asserted; results in
bench-results/bench_environment_reset.{json,png}.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from holodesk.client.rollouts import RolloutTask, SandboxEnvironment, VncEnvironment
from holodesk.client.rollouts.environments import Environment
from holodesk.client.rollouts.factories import CommandApp, XvfbCommand
from holodesk.platform.base import Region
from tests.bench.common import Figure, Report, parser, reproduce_command
from tests.client.environments.stand_in import install_stand_in
from tests.platform.vnc.servers import xvnc

MODULE = "tests.bench.bench_environment_reset"
NAME = "bench_environment_reset"
WIDTH, HEIGHT = 1024, 640
TASK = RolloutTask("bench")


def first_frame_s(environment: Environment) -> float:
    started = time.perf_counter()
    backend = environment.reset(TASK)
    try:
        while True:
            frame = backend.screen.grab(Region(0, 0, WIDTH, HEIGHT))
            if frame.getcolors(1) is None:  # more than one colour
                return time.perf_counter() - started
            if time.perf_counter() - started > 60:
                raise RuntimeError(f"{environment.name}: the app never showed")
    finally:
        backend.close()


@contextlib.contextmanager
def environments(folder: Path) -> Iterator[dict[str, Environment]]:
    with contextlib.ExitStack() as stack:
        xvfb = stack.enter_context(XvfbCommand(("xterm",), WIDTH, HEIGHT)("xvfb"))
        server = stack.enter_context(xvnc(WIDTH, HEIGHT))
        stack.enter_context(CommandApp(("xterm",))(server.display))
        vnc = VncEnvironment(f"127.0.0.1::{server.port}", name="vnc")
        runtime = install_stand_in(folder)
        sandbox = SandboxEnvironment(
            runtime=str(runtime.path), apps="xterm", width=WIDTH, height=HEIGHT, name="sb"
        )
        stack.enter_context(sandbox)
        stack.callback(runtime.remove_all)
        yield {"xvfb": xvfb, "vnc": vnc, "sandbox": sandbox}


def plot(times: dict[str, list[float]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    kinds = list(times)
    axes.bar(kinds, [statistics.median(times[k]) for k in kinds])
    axes.set_yscale("log")
    axes.set_ylabel("seconds from reset() to the app on screen (median)")
    axes.set_title("A fresh desktop per rollout, by environment")
    axes.grid(alpha=0.3, axis="y")
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parser(MODULE, __doc__ or "")
    options.add_argument("--rounds", type=int, default=None, help="resets per environment")
    args = options.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 8)
    report = Report(
        NAME, "Reset to the app on screen, by environment", reproduce_command(MODULE, argv),
        quick=args.quick,
    )  # fmt: skip
    report.header()
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, environments(Path(tmp)) as kinds:
        for environment in kinds.values():
            first_frame_s(environment)  # warm: first starts, first imports
        for _ in range(rounds):
            for kind, environment in kinds.items():
                times.setdefault(kind, []).append(first_frame_s(environment))
    baseline = statistics.median(times["xvfb"])
    for kind, values in times.items():
        report.add(
            Figure(
                f"{kind}: reset to the app on screen",
                statistics.median(values),
                "s",
                baseline=baseline,
                baseline_name="xvfb: the app restarted on a kept Xvfb",
                note=f"median of {rounds}, min {min(values):.3f} s, max {max(values):.3f} s",
            )
        )
    report.data["seconds"] = times
    report.finish(plot(times), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
