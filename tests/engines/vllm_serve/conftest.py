"""One `vllm serve` for every module in this package, stopped after the last of them.

Each module still opens its own OpenAIEngine (its own event loop). Tests that read
the server's log or /metrics look only at their own request ids or at gauges, never
at totals another module could have moved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from holodesk.daemon.engines.openai_engine import OpenAIEngine
from tests.engines.tool_template import write_tool_template
from tests.engines.vllm_serve.shared_server import shared_serve_args
from tests.support.tiny_models import build_tiny_nemotron_vl
from tests.support.vllm_server import VllmServer, free_port, start_vllm_server


@pytest.fixture(scope="package")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    folder = tmp_path_factory.mktemp("vllm-serve")
    model = build_tiny_nemotron_vl(folder / "tiny-holotron")
    template = write_tool_template(folder / "tool_template.jinja")
    port = free_port()
    server = start_vllm_server(
        shared_serve_args(model.path, tool_template=template, port=port),
        port=port,
        log_path=folder / "vllm-serve.log",
        # vLLM's RL and dev routes (/weight_info, /pause, /collective_rpc, ...): what a
        # trainer that updates the server itself calls (test_openai_vllm_serve_versions).
        env={"VLLM_SERVER_DEV_MODE": "1"},
    )
    print(
        f"\nvllm serve up in {server.started_s:.1f} s, "
        f"RSS {server.rss_bytes() / 2**30:.2f} GiB (API server + EngineCore)"
    )
    yield server
    print(f"\nvllm serve RSS at the end: {server.rss_bytes() / 2**30:.2f} GiB")
    server.stop()


@pytest.fixture(scope="module")
def server(shared_server: VllmServer) -> VllmServer:
    """The shared server, checked at each module's start: one an earlier module killed
    fails here with its exit status and log, not as a refused connection."""
    if not shared_server.alive():
        pytest.fail(
            f"the package's vllm serve exited with {shared_server.process.returncode} "
            f"during an earlier module:\n{shared_server.log_tail()}"
        )
    return shared_server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(server: VllmServer, request: pytest.FixtureRequest) -> AsyncIterator[OpenAIEngine]:
    """An engine on the shared server, in the module's loop, with the module's
    ENGINE_TIMEOUT_S per request (default 60 s)."""
    timeout_s = float(getattr(request.module, "ENGINE_TIMEOUT_S", 60.0))
    engine = OpenAIEngine(server.base_url, timeout_s=timeout_s, max_retries=0)
    await engine.start()
    yield engine
    await engine.close()
