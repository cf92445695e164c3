"""A dialect as data: everything about a model's prompt and answer format that
is not parsing code. Built-in dialects are instances of `DialectSpec`; a JSON
or TOML file can override any field of one (see `registry.load_dialect`).
"""

from __future__ import annotations

import math
import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from holodesk.daemon.dialects.coords import (
    CoordinateConvention,
    MaxBox,
    NoResize,
    ResizeRule,
    SmartResize,
    TileResize,
)
from holodesk.daemon.frames import ImageEncoding

_STRICT = ConfigDict(frozen=True, extra="forbid")


class ResizeSpec(BaseModel):
    """How the daemon resizes a frame into the image the model sees.

    smart: factor, min_pixels, max_pixels (Qwen-VL). tile: tile_size, max_tiles,
    min_tiles, thumbnail, tokens_per_tile (Nemotron-VL / InternVL). max_box:
    max_width, max_height. none: the frame as sent.
    """

    model_config = _STRICT

    kind: Literal["smart", "tile", "max_box", "none"] = "smart"
    factor: int = Field(default=28, gt=0)
    min_pixels: int = Field(default=56 * 56, gt=0)
    max_pixels: int = Field(default=14 * 14 * 4 * 1280, gt=0)
    tile_size: int = Field(default=512, gt=0)
    max_tiles: int = Field(default=12, ge=1, le=64)
    min_tiles: int = Field(default=1, ge=1)
    thumbnail: bool = True
    tokens_per_tile: int = Field(default=256, gt=0)
    max_width: int = Field(default=0, ge=0)
    max_height: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check_bounds(self) -> ResizeSpec:
        if self.max_pixels < self.min_pixels:
            raise ValueError("max_pixels is below min_pixels")
        if self.min_tiles > self.max_tiles:
            raise ValueError("min_tiles is above max_tiles")
        return self

    def rule_text(self) -> str:
        """The rule as canonical text, only the fields its kind reads: what a run
        manifest records ("tile(tile_size=512,max_tiles=12,...)")."""
        fields: tuple[str, ...] = {
            "smart": ("factor", "min_pixels", "max_pixels"),
            "tile": ("tile_size", "max_tiles", "min_tiles", "thumbnail", "tokens_per_tile"),
            "max_box": ("max_width", "max_height"),
            "none": (),
        }[self.kind]
        values = ",".join(f"{name}={_text(getattr(self, name))}" for name in fields)
        return f"{self.kind}({values})" if fields else self.kind

    def rule(self) -> ResizeRule:
        if self.kind == "smart":
            return SmartResize(self.factor, self.min_pixels, self.max_pixels)
        if self.kind == "tile":
            return TileResize(
                self.tile_size, self.max_tiles, self.min_tiles, self.thumbnail, self.tokens_per_tile
            )
        if self.kind == "max_box":
            return MaxBox(self.max_width, self.max_height)
        return NoResize()


class FrameRequest(BaseModel):
    """What the client is asked to send (becomes holodesk.v1.FrameSpec)."""

    model_config = _STRICT

    max_width: int = Field(default=1920, ge=0)
    max_height: int = Field(default=1920, ge=0)
    # Lossless by default: screens are text, which JPEG blurs (and a JPEG of text is
    # bigger than its PNG); with delta frames most steps then send only small patches.
    encoding: ImageEncoding = ImageEncoding.PNG
    quality: int = Field(default=90, ge=1, le=100)


# Placeholders each template may use; checked when a dialect is built or loaded.
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    # action_list: the action space's forms, a line each in the dialect's syntax;
    # key_names: the contract's key vocabulary (both from the dialect's action space).
    "system": frozenset(
        {
            "output_schema",
            "coordinate_rule",
            "image_width",
            "image_height",
            "action_list",
            "key_names",
        }
    ),
    "task": frozenset({"task", "action_list", "key_names"}),
    "history_header": frozenset(),
    "history_step": frozenset({"step", "thought", "note", "actions", "results"}),
    "assistant_step": frozenset({"step", "thought", "note", "actions", "results"}),
    "observation_open": frozenset({"step"}),
    "observation_close": frozenset({"step"}),
    "user_reply": frozenset({"reply"}),
    "operator_note": frozenset({"note"}),
    "instruction": frozenset({"step"}),
    "repair": frozenset({"error", "hint"}),
    "locate": frozenset({"description", "coordinate_rule", "output_schema"}),
}


class PromptTemplates(BaseModel):
    """str.format templates; values (task, notes...) are never re-formatted."""

    model_config = _STRICT

    system: str = ""
    task: str = "{task}\n"
    history_header: str = ""
    history_step: str = "{step}: {actions} -> {results}\n"
    # history_style "turns": an earlier step replayed as the model's own answer.
    assistant_step: str = "{actions}"
    observation_open: str = ""
    observation_close: str = ""
    user_reply: str = "{reply}\n"
    # What an operator wrote handing the desktop back after taking it over (the live
    # view): the screen may have changed by their hand, and the note says how.
    operator_note: str = (
        "A person took over the desktop and handed it back with this note: {note}\n"
    )
    instruction: str = ""
    repair: str = "{error} {hint}"
    locate: str = "{description}"

    @model_validator(mode="after")
    def _check_placeholders(self) -> PromptTemplates:
        for name, allowed in TEMPLATE_FIELDS.items():
            template: str = getattr(self, name)
            try:
                used = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
            except ValueError as exc:
                raise ValueError(f"prompts.{name}: {exc}") from exc
            unknown = used - allowed
            if unknown:
                raise ValueError(
                    f"prompts.{name} uses unknown placeholder(s) {sorted(unknown)}; "
                    f"allowed: {sorted(allowed)}"
                )
        return self


class DialectSpec(BaseModel):
    model_config = _STRICT

    name: str
    description: str = ""
    # Key into the parser registry ("holo_json", "uitars", "nemotron_tools").
    parser: str
    # Tool-calling dialects (tool_dialect.py): the vLLM tool-call parser that reads
    # the model's calls in process, the one `vllm serve --tool-call-parser` would be
    # given ("hermes", "llama3_json", "qwen3_coder", ...). "": hermes.
    tool_parser: str = ""
    coordinates: CoordinateConvention
    resize: ResizeSpec = ResizeSpec()
    # How model images are encoded for engines that take bytes (remote ones).
    model_image_encoding: ImageEncoding = ImageEncoding.PNG
    model_image_quality: int = Field(default=90, ge=1, le=100)
    frame: FrameRequest = FrameRequest()
    # Screenshots in the prompt: the last K (window layout), K on average (append
    # layout, at most frames_kept); each one costs prefill.
    history_images: int = Field(default=3, ge=1, le=32)
    # Earlier steps described as text (the last N).
    history_steps: int = Field(default=20, ge=0)
    # "text": one user turn holding the task, a line per earlier step and the last K
    # screenshots (Holo cookbooks). "turns": a conversation replaying each earlier
    # step as an assistant turn, preceded by its screenshot while that is among the
    # last K (UI-TARS agents).
    history_style: Literal["text", "turns"] = "text"
    # Where the history goes (prompt.py). "window": the step lines first, then the last
    # history_images screenshots, both sliding by one per step, so nothing after the
    # task is the same two steps running. "append": everything in the order it happened
    # (each earlier step after its screenshot), so a step's prompt begins with the
    # previous one's and a prefix cache reuses it; screenshots leave in blocks.
    history_layout: Literal["window", "append"] = "append"
    # Append layout: how many screenshots leave at once (odd). The window grows from
    # history_images - block // 2 to history_images + block // 2, then drops `block` of
    # its oldest: history_images on average. 0: about history_images (auto_block);
    # 1: one per step, as a sliding window.
    history_block: int = Field(default=0, ge=0, le=63)
    prompts: PromptTemplates = PromptTemplates()
    # Coordinate rules, shown to the model through {coordinate_rule}.
    coordinate_rules: dict[CoordinateConvention, str] = Field(default_factory=dict)
    # Model action name -> canonical action name understood by the parser.
    action_aliases: dict[str, str] = Field(default_factory=dict)
    # Model key name -> contract key name ("return" -> "enter").
    key_aliases: dict[str, str] = Field(default_factory=dict)
    scroll_notches: int = Field(default=5, ge=1)
    default_wait_s: float = Field(default=2.0, ge=0)
    max_wait_s: float = Field(default=30.0, ge=0)
    # Press Enter after a write action (some web-agent formats imply it).
    write_presses_enter: bool = False
    # Send the parser's JSON schema to engines that can constrain decoding; parsers
    # of free-text formats have none, and then this changes nothing.
    structured_output: bool = True
    max_tokens: int = Field(default=1024, gt=0)
    temperature: float = Field(default=0.0, ge=0)
    # Parse attempts beyond the first before the step fails (ModelPolicy's default).
    parse_retries: int = Field(default=2, ge=0)

    @model_validator(mode="after")
    def _check_rules(self) -> DialectSpec:
        allowed = {"image_width", "image_height"}
        for convention, rule in self.coordinate_rules.items():
            try:
                used = {f for _, f, _, _ in string.Formatter().parse(rule) if f is not None}
            except ValueError as exc:
                raise ValueError(f"coordinate_rules.{convention.value}: {exc}") from exc
            if used - allowed:
                raise ValueError(
                    f"coordinate_rules.{convention.value} uses unknown placeholder(s) "
                    f"{sorted(used - allowed)}; allowed: {sorted(allowed)}"
                )
        if self.max_wait_s < self.default_wait_s:
            raise ValueError("max_wait_s is below default_wait_s")
        if self.history_block and self.history_block % 2 == 0:
            raise ValueError("history_block must be odd (history_images stays the average)")
        if self.history_block // 2 >= self.history_images:
            raise ValueError(
                f"history_block {self.history_block} is too wide for history_images "
                f"{self.history_images}: at most {2 * self.history_images - 1}"
            )
        return self

    # The history window (prompt.py draws what these say) ----------------------------

    @property
    def image_block(self) -> int:
        """Screenshots that leave the append layout's window at once (1: window layout)."""
        if self.history_layout == "window":
            return 1
        return self.history_block or auto_block(self.history_images)

    @property
    def frames_kept(self) -> int:
        """The most screenshots a prompt shows: the frames a session must keep and the
        engine's per-prompt image limit (history_images is their average)."""
        return self.history_images + self.image_block // 2

    def first_image_step(self, step: int) -> int:
        """The oldest step whose screenshot the prompt of `step` shows.

        It moves only by whole blocks: one step in `image_block` rebuilds the prompt
        from the first screenshot on, every other one only appends to it."""
        block = self.image_block
        fewest = self.history_images - block // 2
        return max(1, block * ((step - fewest) // block) + 1)

    def images_shown(self, step: int) -> int:
        """Screenshots in the prompt of `step` (fewer when fewer frames were kept)."""
        return step - self.first_image_step(step) + 1

    def first_history_step(self, step: int) -> int:
        """The oldest earlier step the prompt of `step` describes (`step`: none).

        Window layout: the last history_steps. Append layout: lines leave in blocks
        too, only at a screenshot drop (so the prefix breaks at no other step) and
        never while their screenshot is shown; about history_steps on average."""
        lines = self.history_steps
        if lines == 0:
            return step
        if self.history_layout == "window":
            return max(1, step - lines)
        block = self.image_block
        fewest = self.history_images - block // 2
        # Lines run from `fewest - 1 + k * block` to that + text_block - 1, k whole.
        text_block = block * max(1, _round(lines / (2 * block)))
        fewest_lines = fewest + block * max(
            0, _round((lines + 1 - (text_block - 1) / 2 - fewest) / block)
        )
        return max(1, text_block * ((step - fewest_lines) // text_block) + 1)

    def coordinate_rule(self, image_width: int, image_height: int) -> str:
        rule = self.coordinate_rules.get(self.coordinates, "")
        return rule.format(image_width=image_width, image_height=image_height)


def auto_block(history_images: int) -> int:
    """The odd block nearest history_images (at least 3): the window spans about half
    to one and a half times history_images (3: windows of 2, 3, 4 screenshots; 5: 3 to
    7). Wider blocks reuse more (fewer rebuilds) but show fewer screens after a drop."""
    if history_images == 1:
        return 1
    return max(3, history_images if history_images % 2 else history_images - 1)


def _round(value: float) -> int:
    """Half up (round() goes to even: 2.5 -> 2)."""
    return math.floor(value + 0.5)


def _text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
