"""The tool dialects' conversations through a real chat template that takes `tools`
(tool_template.py, the tiny Holotron-architecture checkpoint's tokenizer), and the
model's own call syntax read back by vLLM's hermes tool parser (vllm_tools.py): what
the in-process engines do around the model, without running it.

Proves: the tools reach the system turn as function specs; earlier calls render as
the model's <tool_call> syntax and their results as <tool_response> turns; the
screenshots stay image placeholders; and a call written in that syntax, or a
malformed one, comes back as a tool reply that the dialect parses or refuses with
a parse error.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from holodesk.daemon.dialects import DialectParseError
from holodesk.daemon.engines.base import GenerationRequest
from holodesk.daemon.engines.chat import template_chat, template_tools
from tests.engines.support import needs_vllm
from tests.engines.tool_conversation import FRAME, TOOL_DIALECTS, conversation, short_dialect
from tests.engines.tool_template import with_tool_template
from tests.support.tiny_models import TinyModel

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tokenizer(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tool-template") / "tok"
    shutil.copytree(tiny_model.path, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    with_tool_template(Path(folder))
    return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)


def render(tokenizer: Any, request: GenerationRequest) -> str:
    chat = template_chat(request.messages, decode=False)
    text = tokenizer.apply_chat_template(
        chat.messages, tokenize=False, add_generation_prompt=True, **template_tools(request)
    )
    return str(text)


@pytest.mark.parametrize("name", TOOL_DIALECTS)
def test_the_template_renders_tools_calls_and_results(tokenizer: Any, name: str) -> None:
    dialect = short_dialect(name)
    request = GenerationRequest("r", conversation(dialect), tools=dialect.tool_use())
    text = render(tokenizer, request)
    for tool in dialect.tools:
        assert f'"name": "{tool.name}"' in text  # the function specs, in the system turn
    assert text.index("<tools>") < text.index("Task: Save the file.")
    # Steps 1 and 2, as the model writes calls (the system turn shows the syntax once).
    assert text.count('<tool_call>{"name": "') == 2
    assert text.count("<tool_response>") == 2
    assert "ok\n</tool_response>" in text
    assert "error: failed: no window" in text
    assert text.count("<image>") == 3
    assert text.endswith("<|im_start|>assistant\n")


@needs_vllm
@pytest.mark.parametrize("name", TOOL_DIALECTS)
def test_vllms_parser_reads_the_models_syntax(tokenizer: Any, name: str) -> None:
    from holodesk.daemon.engines.vllm_tools import ToolCalling

    dialect = short_dialect(name)
    use = dialect.tool_use()
    calling = ToolCalling(tokenizer, use)
    assert calling.structured_outputs is not None  # "required": a structural tag
    assert "<tool_call>" in str(calling.structured_outputs.structural_tag)
    geometry = dialect.geometry(FRAME)
    if name == "nemotron-tools":
        written = (
            'I click it.<tool_call>{"name": "computer", "arguments": {"actions": '
            '[{"action": "left_click", "coordinate": [0.5, 0.25]}]}}</tool_call>'
        )
    else:
        written = (
            'I click it.<tool_call>{"name": "click_desktop", "arguments": '
            '{"element": "Save", "x": 500, "y": 250}}</tool_call>'
        )
    step = dialect.parse_step(calling.reply(written), geometry)
    assert step.thought == "I click it."
    assert len(step.actions) == 1
    broken = {
        "no tool call": "I would click the button.",
        "2 tool calls": written + written.removeprefix("I click it."),
        "unknown tool": '<tool_call>{"name": "shell", "arguments": {}}</tool_call>',
    }
    for error, text in broken.items():
        with pytest.raises(DialectParseError, match=error):
            dialect.parse_step(calling.reply(text), geometry)
