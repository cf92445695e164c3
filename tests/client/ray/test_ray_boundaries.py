"""Ray stays optional (issue 32): only the Ray pool's loader imports it, holodesk
imports and runs without it, and asking for a Ray pool without it says how to get
it. And the reaper, on its own: a guarded process's children die with it, even
when it is SIGKILLed.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[3]
LOADER = ROOT / "clients/src/holodesk/client/rollouts/ray_pool/loading.py"
_IMPORTS_RAY = re.compile(
    r"^\s*(import\s+ray\b|from\s+ray(\.|\s)|.*import_module\(\s*['\"]ray)", re.M
)


def test_only_the_ray_pool_loader_imports_ray() -> None:
    sources = [
        *ROOT.glob("*/src/**/*.py"),
        *ROOT.glob("examples/**/*.py"),
        *ROOT.glob("tools/**/*.py"),
    ]
    offenders = [
        str(path.relative_to(ROOT))
        for path in sources
        if path != LOADER and _IMPORTS_RAY.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"only ray_pool/loading.py may import ray: {offenders}"
    # And the loader imports it by name, lazily: not at module level.
    assert "importlib.import_module(name)" in LOADER.read_text()


def run_without_ray(code: str) -> subprocess.CompletedProcess[str]:
    # ray (and psutil) made unimportable, as on a machine without the extra.
    prelude = "import sys; sys.modules['ray'] = None; sys.modules['psutil'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_holodesk_runs_without_ray_and_the_pool_says_how_to_get_it() -> None:
    result = run_without_ray(
        """
        import holodesk.client.cli, holodesk.client.rollouts.ray_pool as pool
        from holodesk.client.rollouts.command import COMMAND
        try:
            pool.RayPool("127.0.0.1:1", [pool.EnvironmentSpec(lambda name: None)])
        except pool.RayUnavailableError as error:
            print(error)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'holodesk-client[ray]'" in result.stdout
    assert "'ray'" in result.stdout


def test_the_reaper_stops_a_sigkilled_owners_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import os, subprocess, sys, time
                from holodesk.client.rollouts.ray_pool.reaper import guard_this_process
                guard_this_process()
                # A child, and a grandchild in a session of its own (as a browser's).
                child = subprocess.Popen(["sleep", "300"])
                grandchild = subprocess.Popen(
                    ["bash", "-c", "setsid sleep 301 & echo $! ; wait"], stdout=subprocess.PIPE,
                    text=True)
                open({str(pids)!r}, "w").write(f"{{child.pid}} {{grandchild.stdout.readline()}}")
                time.sleep(300)
                """
            ),
        ],
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while not pids.exists() or len(pids.read_text().split()) < 2:
        assert owner.poll() is None
        assert time.monotonic() < deadline
        time.sleep(0.05)
    spawned = [psutil.Process(int(pid)) for pid in pids.read_text().split()]
    assert all(p.is_running() for p in spawned)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    _, alive = psutil.wait_procs(spawned, timeout=10)
    assert not alive, f"left running after their owner died: {alive}"
