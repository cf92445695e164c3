"""The flags of the one `vllm serve` this package's modules share (conftest.py starts it).

Starting the server costs ~70 s on 2 cores, so one server carries every module's
needs at once: the abort test's long request fits its context, and the tool
modules' parser and template are on. Without `tools` in a request neither changes
what the others send: the tool template renders a tool-less conversation exactly as
the tiny model's own ChatML template does (test_shared_template.py), and vLLM
leaves the answer's content to the client when the request has no tools
(tool_choice "none").
"""

from __future__ import annotations

from pathlib import Path

from tests.support.vllm_server import cpu_serve_args

SERVED_NAME = "tiny-holotron"
# Long enough (~1 min of decoding here) that the abort test sees the request running
# before it ends: under load, GET /metrics answers only every few seconds while vLLM decodes.
ABORT_TOKENS = 15000
MAX_MODEL_LEN = ABORT_TOKENS + 1024  # the prompt fits beside the longest answer


def shared_serve_args(model: Path, *, tool_template: Path, port: int) -> list[str]:
    """cpu_serve_args plus what the tool-calling module needs: vLLM parses the
    model's <tool_call> syntax (hermes) and renders `tools` with the tool template."""
    return [
        *cpu_serve_args(model, served_name=SERVED_NAME, port=port, max_model_len=MAX_MODEL_LEN),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--chat-template",
        str(tool_template),
    ]
