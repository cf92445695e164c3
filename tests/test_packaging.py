"""packaging/: the service definitions are current, valid, and name only flags and
files that exist."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from holodesk.daemon.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False, env=env
    )


def test_client_service_examples_are_generated_from_the_renderers() -> None:
    result = _run(sys.executable, "tools/gen_packaging.py", "--check")
    assert result.returncode == 0, result.stderr


def _unit_with_real_paths(tmp_path: Path) -> Path:
    # verify checks that ExecStart's program and the EnvironmentFile exist.
    holodeskd = Path(sys.executable).with_name("holodeskd")
    text = (PACKAGING / "systemd" / "holodeskd.service").read_text()
    text = text.replace("/opt/holodesk/bin/holodeskd", str(holodeskd))
    text = text.replace(
        "EnvironmentFile=/etc/holodesk/holodeskd.env",
        f"EnvironmentFile={PACKAGING / 'systemd' / 'holodeskd.env'}",
    )
    unit = tmp_path / "holodeskd.service"
    unit.write_text(text)
    return unit


def test_daemon_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: tools/setup.sh installs systemd"
    result = _run(analyze, "verify", str(_unit_with_real_paths(tmp_path)))
    # verify exits 0 on warnings (unknown keys, bad values): any output is a finding.
    assert result.returncode == 0, result.stderr
    assert not (result.stdout + result.stderr).strip()


def test_daemon_unit_is_type_notify_and_its_command_line_parses() -> None:
    text = (PACKAGING / "systemd" / "holodeskd.service").read_text()
    assert "\nType=notify\n" in text
    env = dict(
        line.split("=", 1)
        for line in (PACKAGING / "systemd" / "holodeskd.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    exec_start = re.search(r"^ExecStart=(.*)$", text, re.MULTILINE)
    assert exec_start
    # systemd: ${VAR} is one word, $VAR splits on whitespace.
    line = re.sub(r"\$\{(\w+)\}", lambda m: shlex.quote(env[m.group(1)]), exec_start.group(1))
    line = re.sub(r"\$(\w+)", lambda m: env[m.group(1)], line)
    argv = shlex.split(line)
    args = build_parser().parse_args(argv[1:])
    assert args.policy == "vllm"


def _daemon_containers() -> list[dict[str, Any]]:
    documents = list(yaml.safe_load_all((PACKAGING / "kubernetes" / "holodesk.yaml").read_text()))
    deployments = [d for d in documents if d and d["kind"] == "Deployment"]
    return [
        c
        for d in deployments
        for c in d["spec"]["template"]["spec"]["containers"]
        if d["metadata"]["name"] == "holodeskd"
    ]


def test_kubernetes_daemon_args_are_holodeskds_own_flags() -> None:
    (container,) = _daemon_containers()
    args = build_parser().parse_args(container["args"])
    assert args.policy == "openai"
    # The daemons reach the shared vLLM Service by its name and port.
    documents = list(yaml.safe_load_all((PACKAGING / "kubernetes" / "holodesk.yaml").read_text()))
    services = {d["metadata"]["name"]: d for d in documents if d and d["kind"] == "Service"}
    port = services["holotron-vllm"]["spec"]["ports"][0]["port"]
    assert f"--policy-opt=base_url=http://holotron-vllm:{port}/v1" in container["args"]
    # Resume needs the same pod: the daemon Service keeps clients on one.
    assert services["holodeskd"]["spec"]["sessionAffinity"] == "ClientIP"


def test_kubernetes_probe_runs_the_bundled_healthcheck() -> None:
    (container,) = _daemon_containers()
    probe = container["readinessProbe"]["exec"]["command"]
    assert probe[:3] == ["python", "-m", "holodesk.daemon.healthcheck"]


def test_containerfile_copies_what_exists_and_runs_valid_flags() -> None:
    text = (PACKAGING / "container" / "Containerfile").read_text()
    for source in re.findall(r"^COPY (?!--from)(\S+) ", text, re.MULTILINE):
        assert (ROOT / source).exists(), f"Containerfile copies missing {source}"
    cmd = re.search(r"^CMD (\[.*\])$", text, re.MULTILINE)
    assert cmd
    args = build_parser().parse_args(yaml.safe_load(cmd.group(1)))
    assert args.policy == "vllm"


@pytest.mark.parametrize("path", sorted(PACKAGING.rglob("*")), ids=str)
def test_packaging_files_carry_no_secrets(path: Path) -> None:
    if path.is_file():
        text = path.read_bytes().decode("utf-8", "replace")
        assert "BEGIN PRIVATE KEY" not in text
        assert not re.search(r"hdk_[A-Za-z0-9_-]{20,}", text)
