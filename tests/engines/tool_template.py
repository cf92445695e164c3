"""A ChatML chat template that takes `tools`, for the tiny models: the tools go into
the system turn as Hermes/Qwen templates write them, calls as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (what vLLM's "hermes"
tool parser reads, and what its structural tag for "required" makes a model
write), tool results as ``<tool_response>`` in a user turn. Image parts render as
the model's ``<image>`` placeholder, as tiny_models.CHAT_TEMPLATE does.

`with_tool_template(folder)` writes it into a tiny checkpoint's tokenizer config
(for the in-process engines); `write_tool_template(path)` as a file for `vllm serve
--chat-template`.
"""

from __future__ import annotations

import json
from pathlib import Path

_CONTENT = (
    "{% macro content(message) %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}<image>"
    "{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% endmacro %}"
)

TOOL_CHAT_TEMPLATE = (
    _CONTENT + "{% set first = 0 %}"
    "{% if tools %}<|im_start|>system\n"
    "{% if messages[0]['role'] == 'system' %}{{ content(messages[0]) }}\n\n{% endif %}"
    "# Tools\n\nYou may call one function. Its signature is in <tools></tools>:\n<tools>"
    "{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}\n</tools>\n\n"
    'Call it as <tool_call>{"name": <function-name>, "arguments": <args-json-object>}'
    "</tool_call><|im_end|>\n"
    "{% elif messages[0]['role'] == 'system' %}"
    "<|im_start|>system\n{{ content(messages[0]) }}<|im_end|>\n"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' and loop.first %}"
    "{% elif message['role'] == 'assistant' %}<|im_start|>assistant\n{{ content(message) }}"
    "{% for call in message.get('tool_calls') or [] %}"
    "{% set f = call['function'] if call['function'] is defined else call %}"
    '<tool_call>{"name": "{{ f["name"] }}", "arguments": '
    "{% if f['arguments'] is string %} {{ f['arguments'] }}"
    "{% else %} {{ f['arguments'] | tojson }}{% endif %}}</tool_call>"
    "{% endfor %}<|im_end|>\n"
    "{% elif message['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ content(message) }}\n</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ message['role'] }}\n{{ content(message) }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def with_tool_template(folder: Path) -> Path:
    """The checkpoint in `folder` with the tool template as its chat template."""
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.pop("chat_template", None) is not None:
        config_path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / "chat_template.jinja").write_text(TOOL_CHAT_TEMPLATE, encoding="utf-8")
    return folder


def write_tool_template(path: Path) -> Path:
    path.write_text(TOOL_CHAT_TEMPLATE, encoding="utf-8")
    return path
