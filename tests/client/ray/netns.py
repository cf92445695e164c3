"""A two-node Ray cluster, a daemon and their desktops inside a network namespace
of the test's own.

Why a namespace: outside one, Ray binds this machine's non-loopback address and
probes public DNS servers to learn it, and no test here may send traffic anywhere
but loopback. `unshare --net` makes an empty namespace (we run as root, CI too); a
holder process brings its loopback up and keeps it alive; everything else enters
it with `nsenter --net`: the Ray head (`desktop_a` resources, HOLODESK_TEST_NODE=a),
a worker node (`desktop_b`, b), holodeskd with the OCR policy on 127.0.0.1:50051,
and the drivers (scenarios.py). Ports inside are the namespace's alone, so fixed
ones are safe. Every process of the cluster is found by its namespace (never by
name: other tests and helpers run Xvfb and maybe Ray on this machine) and stopped
by pid at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[3]
RAY = str(Path(sys.executable).with_name("ray"))
HEAD_PORT = 6379
DAEMON = "127.0.0.1:50051"
HEAD_ADDRESS = f"127.0.0.1:{HEAD_PORT}"
# Nodes noticed dead within ~1.5 s (Ray's default is 5 missed checks 3 s apart),
# so a lost node's rollouts are reported in seconds.
SYSTEM_CONFIG = {
    "health_check_period_ms": 500,
    "health_check_failure_threshold": 3,
    "health_check_initial_delay_ms": 0,
}
STARTUP_S = 120.0
# The worker node's label: environments pinned there by a label selector (the head's
# by its desktop_a resource), so both ways of placing are tested.
WORKER_LABEL = "holodesk-desktops"
# How long the daemon keeps a session whose client vanished, for a resume: the bound
# on a lost rollout's session, once its actor's process (and connection) is gone.
RESUME_WINDOW_S = 5.0


# The namespace's holder: brings its loopback up (SIOCSIFFLAGS, as `ip link set lo up`
# does, without needing iproute2), says so, and sleeps until it is killed.
_HOLDER = """
import fcntl, os, signal, socket, struct, subprocess
# X sockets are files in /tmp/.X11-unix, shared across network namespaces: a display
# here would take over (and on exit remove) the socket of the same number outside.
# The namespace gets its own mount namespace with a private, empty socket folder.
os.makedirs("/tmp/.X11-unix", mode=0o1777, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/tmp/.X11-unix"], check=True)
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 0x1))
print("up", flush=True)
signal.pause()
"""


class Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hdray-"))  # short: Ray's socket paths
        self.holder: subprocess.Popen[str] | None = None
        self.daemon: subprocess.Popen[str] | None = None
        self.namespace = ""

    # --- running things inside -------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            # Ray would otherwise see `uv run` above the driver and have every worker
            # build its own environment from the working directory (from PyPI).
            "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            **extra,
        }

    def command(self, argv: Sequence[str]) -> list[str]:
        assert self.holder is not None
        return ["nsenter", f"--target={self.holder.pid}", "--net", "--mount", "--", *argv]

    def run(self, argv: Sequence[str], timeout_s: float = STARTUP_S, **extra: str) -> str:
        done = subprocess.run(
            self.command(argv),
            env=self.env(**extra),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv[:3])} ... exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done.stdout

    def spawn(self, argv: Sequence[str], log: str, **extra: str) -> subprocess.Popen[str]:
        """A process inside; stdout piped, stderr to DIR/LOG (never a pipe nobody drains)."""
        with (self.dir / log).open("w") as stderr:
            return subprocess.Popen(
                self.command(argv),
                env=self.env(**extra),
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )

    def log(self, name: str) -> str:
        return (self.dir / name).read_text()[-4000:]

    def scenario(self, name: str, *args: str, timeout_s: float = 240.0) -> dict[str, Any]:
        """Run scenarios.NAME as a driver inside the namespace; its JSON result."""
        out = self.dir / f"{name}.json"
        self.run(
            [sys.executable, "-m", "tests.client.ray.scenarios", name, str(out), *args],
            timeout_s=timeout_s,
        )
        result: dict[str, Any] = json.loads(out.read_text())
        return result

    # --- the cluster -------------------------------------------------------------

    def start(self) -> None:
        self.holder = subprocess.Popen(
            [
                "unshare",
                "--net",
                "--mount",
                "--propagation",
                "private",
                sys.executable,
                "-c",
                _HOLDER,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "up":
            raise RuntimeError("could not make a network namespace (unshare --net needs root)")
        self.namespace = os.readlink(f"/proc/{self.holder.pid}/ns/net")
        self.run(
            [
                RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={HEAD_PORT}",
                "--num-cpus=1", '--resources={"desktop_a": 4}', "--include-dashboard=false",
                "--object-store-memory=78643200", f"--temp-dir={self.dir / 'ray'}",
                "--disable-usage-stats", f"--system-config={json.dumps(SYSTEM_CONFIG)}",
            ],
            HOLODESK_TEST_NODE="a",
        )  # fmt: skip
        self.start_worker()
        self.daemon = self.spawn(
            [
                sys.executable,
                "-m",
                "holodesk.daemon.cli",
                "--listen",
                DAEMON,
                "--policy",
                "ocr",
                f"--resume-window-s={RESUME_WINDOW_S:g}",
            ],
            "holodeskd.log",
        )
        assert self.daemon.stdout is not None
        line = self.daemon.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"holodeskd did not start: {line!r}\n{self.log('holodeskd.log')}")

    def start_worker(self) -> None:
        """The second node (again, after a test killed it)."""
        self.run(
            [
                RAY, "start", f"--address={HEAD_ADDRESS}", "--node-ip-address=127.0.0.1",
                "--num-cpus=1", '--resources={"desktop_b": 4}', f"--labels={WORKER_LABEL}=b",
                "--object-store-memory=78643200", "--disable-usage-stats",
            ],
            HOLODESK_TEST_NODE="b",
        )  # fmt: skip

    def worker_alive(self) -> bool:
        return bool(self.raylets("desktop_b"))

    def raylets(self, resource: str) -> list[psutil.Process]:
        found = []
        for process in self.processes():
            try:
                if process.name() == "raylet" and resource in " ".join(process.cmdline()):
                    found.append(process)
            except psutil.Error:
                continue
        return found

    def processes(self) -> list[psutil.Process]:
        """Every live process in the namespace (the holder included)."""
        found = []
        for process in psutil.process_iter():
            try:
                if (
                    os.readlink(f"/proc/{process.pid}/ns/net") == self.namespace
                    and process.status() != psutil.STATUS_ZOMBIE
                ):
                    found.append(process)
            except (OSError, psutil.Error):
                continue
        return found

    def desktops(self) -> list[str]:
        """Xvfb servers and form apps alive in the namespace, as 'pid name'."""
        found = []
        for process in self.processes():
            try:
                line = " ".join(process.cmdline())
                name = process.name()
            except psutil.Error:
                continue
            if name == "Xvfb" or "holodesk.client.demo.form_app" in line:
                found.append(f"{process.pid} {line[:120]}")
        return found

    def wait_for_no_desktops(self, timeout_s: float = 30.0) -> list[str]:
        """Poll until no desktop is left (what the reapers and Ray do); what is left."""
        deadline = time.monotonic() + timeout_s
        left = self.desktops()
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self.desktops()
        return left

    def stop(self) -> None:
        """Stop every process of the namespace by pid, the holder last."""
        holder = self.holder.pid if self.holder is not None else -1
        for _ in range(2):
            others = [p for p in self.processes() if p.pid != holder]
            for process in others:
                try:
                    process.send_signal(signal.SIGTERM)
                except psutil.Error:
                    continue
            _, alive = psutil.wait_procs(others, timeout=5)
            for process in alive:
                try:
                    process.kill()
                except psutil.Error:
                    continue
            psutil.wait_procs(alive, timeout=5)
        for popen in (self.daemon, self.holder):
            if popen is not None and popen.poll() is None:
                popen.kill()
            if popen is not None:
                popen.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
