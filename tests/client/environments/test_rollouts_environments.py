"""`holodesk rollouts --sandbox` and `--vnc` end to end: a real holodeskd with the OCR
policy, the sandbox's real entrypoint behind the stand-in runtime (conftest.py),
real xterm; each task types a command over VNC and its reward looks for the file
the command made in that container. (The flags' misuses are with the others', in
tests/client/ray/test_rollouts_command.py.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.client.rollouts.environments.containers import ContainerRuntime
from holodesk.client.rollouts.environments.sandbox import DEFAULT_IMAGE, VNC_PORT
from holodesk.platform.vnc.backend import PASSWORD_ENV
from tests.client.environments.stand_in import StandIn
from tests.client.environments.typing_tasks import write_typing_tasks
from tests.client.eval.ocr_daemon import ocr_holodeskd

REWARD = "tests.client.environments.typing_tasks:typed_file"


def test_two_kinds_of_environment_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "t"}\n')
    assert main(["rollouts", str(tasks), "--vnc", "h:1", "--sandbox"]) == ExitCode.USAGE
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_missing_runtime_is_environments_that_did_not_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task": "t"}\n')
    args = ["--sandbox", "--container-runtime", "/nonexistent/docker"]
    code = main(["rollouts", str(tasks), "--server", "127.0.0.1:1", *args])
    assert code == ExitCode.BACKEND_UNAVAILABLE
    err = capsys.readouterr().err
    assert "environments did not start" in err
    assert "/nonexistent/docker" in err


@pytest.fixture(scope="module")
def daemon() -> Iterator[str]:
    with ocr_holodeskd() as address:
        yield address


@pytest.mark.vnc
@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_rollouts_on_sandbox_containers(daemon: str, stand_in: StandIn, tmp_path: Path) -> None:
    tasks = write_typing_tasks(tmp_path / "tasks.jsonl", ["made-one", "made-two", "made-three"])
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "rollouts", str(tasks), "--server", daemon, "--envs", "2", "--out", str(out),
            "--sandbox", "--container-runtime", str(stand_in.path),
            "--sandbox-apps", "xterm", "--size", "800x600", "--reward", REWARD,
        ]
    )  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == ExitCode.SUCCEEDED, lines
    assert sorted(line["metadata"]["file"] for line in lines) == [
        "made-one", "made-three", "made-two",
    ]  # fmt: skip
    assert [line["reward"] for line in lines] == [1.0, 1.0, 1.0]
    assert {line["environment"] for line in lines} <= {"sandbox-1", "sandbox-2"}
    # A fresh container per rollout, none left.
    assert sum(call[0] == "run" for call in stand_in.calls()) == 3
    assert stand_in.containers() == []


@pytest.mark.vnc
@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_rollouts_on_a_vnc_desktop_with_its_reset_command(
    daemon: str, stand_in: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone else's desktop: a sandbox started by hand, its password known.
    runtime = ContainerRuntime(str(stand_in.path))
    container = runtime.run_detached(
        DEFAULT_IMAGE,
        name="by-hand",
        env={"SANDBOX_VNC_PASSWORD": "by-hand", "SANDBOX_NOVNC": "0", "SANDBOX_APPS": "xterm"},
        publish=[f"127.0.0.1::{VNC_PORT}"],
    )
    deadline = time.monotonic() + 60
    while "sandbox: ready" not in runtime.logs(container):
        assert time.monotonic() < deadline, runtime.logs(container)
        time.sleep(0.2)
    host, port = runtime.published(container, VNC_PORT)
    monkeypatch.setenv(PASSWORD_ENV, "by-hand")
    resets = tmp_path / "resets"
    reset = f"sh -c 'echo $HOLODESK_VNC_SERVER >> {resets}'"
    tasks = write_typing_tasks(tmp_path / "tasks.jsonl", ["first-file", "second-file"])
    out = tmp_path / "out.jsonl"
    code = main(
        [
            "rollouts", str(tasks), "--server", daemon, "--out", str(out),
            "--vnc", f"{host}::{port}", "--vnc-reset", reset,
        ]
    )  # fmt: skip
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == ExitCode.SUCCEEDED, lines
    assert [line["environment"] for line in lines] == [f"vnc-{host}-{port}-1"] * 2
    assert resets.read_text().split() == [f"{host}::{port}"] * 2
    home = stand_in.state / container / "home"
    assert (home / "first-file").exists()
    assert (home / "second-file").exists()
