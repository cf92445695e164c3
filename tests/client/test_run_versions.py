"""`holodesk run` says which policy version made each step: in --json's step and
outcome events, and as "v2" in the progress lines.

`main(["run", ...])` against a real daemon (ModelPolicy over the versioned test
engine of tests/support/versioned_engine.py, whose weights change while the second
step is sampled and again before the third) on the fake backend.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.dialects import get_dialect
from holodesk.daemon.policies.model import ModelPolicy
from tests.client.test_rollouts import ANSWER, CLICK
from tests.daemon.support import running_daemon
from tests.support.versioned_engine import VersionedEngine


def versioned_policy() -> ModelPolicy:
    # Step 1 by v1; step 2 straddles v1 -> v2; step 3 (the answer) by v3.
    engine = VersionedEngine([CLICK, CLICK, ANSWER], updates={1: "straddle", 2: "bump"})
    return ModelPolicy(get_dialect("holo"), engine, name="versioned")


async def run(*extra: str) -> int:
    async with running_daemon([versioned_policy()]) as daemon:
        argv = ["run", "--server", daemon.running.address, "--backend", "fake", "--no-estop"]
        return await asyncio.to_thread(main, [*argv, *extra, "click twice"])


async def test_json_steps_carry_their_policy_version_and_the_outcome_all_of_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await run("--json") == ExitCode.SUCCEEDED
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    steps = [e for e in events if e["event"] == "step"]
    assert [(s["step"], s["policy_version"], s["versions"]) for s in steps] == [
        (1, 1, [1]),
        (2, 2, [1, 2]),
        (3, 3, [3]),
    ]
    assert [s["policy_label"] for s in steps] == ["step-10", "step-20", "step-30"]
    (outcome,) = [e for e in events if e["event"] == "outcome"]
    assert outcome["outcome"] == "succeeded"
    assert outcome["policy_versions"] == [1, 2, 3]


async def test_progress_lines_name_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert await run() == ExitCode.SUCCEEDED
    lines = capsys.readouterr().err.splitlines()
    # The answer's step ran no action; its line says how it ended the session.
    starts = [line.split("  ")[0] for line in lines if line.startswith("step ")]
    assert starts == ["step 1 v1", "step 2 v1+v2", "step 3 v3"]
    assert any(line.startswith("step 3 v3  done ") for line in lines), lines
