"""Prompt growth and prompt reuse: prompt tokens per step over a 50-step session, and
the share of each step's prompt that a prefix cache could reuse, per dialect.

    uv run python -m tests.bench.bench_prompt_growth            # full run, ~1 min
    uv run python -m tests.bench.bench_prompt_growth --quick    # smoke run

For each built-in dialect (holotron, holo, holo1.5, uitars, uitars1.0) a session runs
through the daemon's own `Session` (its frame window, its step history) and the
dialect's own prompt builder, with a screen sent the way a client sends it (fitted
into the dialect's FrameSpec) and a realistic mix of actions and thoughts. Each step's
prompt is counted the way the model would count it:

- image tokens by the dialect's resize rule: Nemotron-VL 512 px tiles (256 tokens
  each, plus a thumbnail) for holotron, Qwen-VL smart-resize patches (28 or 32 px
  after the 2x2 merge) for the others, plus the two image delimiter tokens;
- text tokens: the chat rendered by a ChatML template (the tiny Holotron model's,
  or the tiny Qwen2-VL's for Qwen-family dialects) and tokenized by a byte-level BPE
  tokenizer trained here on Python's own standard library (32k tokens; ~3.9
  characters per token on the holo system prompt, close to real English tokenizers).

Growth (1920x1080 screen), baseline in the same run: the same dialect with an
unbounded window (every screenshot and every earlier step kept). Expected: both
layouts are bounded once their window fills, while the baseline grows by a
screenshot per step.

Reuse (1024x512 and 1920x1080 screens): for every step, the longest common prefix of
its prompt tokens and the previous step's (an image is its run of image tokens, equal
only to the same frame's), as a share of this step's tokens: what vLLM's prefix
cache could skip. Baseline in the same run: the same dialect in the "window" layout
(history lines before the screenshots, the oldest screenshot dropped every step).
Target: >= 60% at steady state (the mean over the last whole history cycles after
the window fills) with the same average number of screenshots.
"""

from __future__ import annotations

import statistics
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from holodesk.daemon.actions import (
    ActionKind,
    ActionResult,
    ActionStatus,
    Click,
    KeyChord,
    Scroll,
    TypeText,
)
from holodesk.daemon.dialects import Dialect, dialect_names, get_dialect
from holodesk.daemon.dialects.coords import TileResize, fit_in_box
from holodesk.daemon.engines.base import ChatMessage, ImagePart
from holodesk.daemon.frames import EncodedFrame
from holodesk.daemon.geometry import Point, Size
from holodesk.daemon.policies.base import Decision
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import SessionRequest
from tests.bench.common import Figure, Report, parser, reproduce_command
from tests.support.tiny_models import CHAT_TEMPLATE, QWEN_CHAT_TEMPLATE

NAME = "bench_prompt_growth"
Layout = Literal["window", "append"]
MODULE = f"tests.bench.{NAME}"
SCREEN = Size(1920, 1080)
# Where prompt reuse is measured: the engine-path benchmark's default, and 1080p.
REUSE_SCREENS = (Size(1024, 512), SCREEN)
TARGET_SHARE = 0.60
UNBOUNDED = 100_000
TASK = (
    "Open the quarterly revenue spreadsheet in the Documents folder, add a row for the "
    "new EMEA customer with this month's invoice total, save it, and email the file to "
    "finance with the subject 'Q3 update'."
)
THOUGHTS = (
    "The spreadsheet is open. I need the last row of the table to add the new customer, "
    "so I will click the first empty cell under the Customer column.",
    "The cell is selected. I type the customer's name, then move to the next column.",
    "The invoice total is further down in the email. I scroll down to find it.",
    "The row is complete. I save the file with the keyboard shortcut before emailing it.",
)


@dataclass
class Tokenizer:
    """Counts a chat's text tokens (images excluded) with a BPE trained on the spot."""

    fast: Any
    placeholder: str
    vocab_size: int

    def text_tokens(self, messages: Sequence[ChatMessage]) -> tuple[int, int]:
        """(text tokens, images) of the rendered chat, the image placeholders removed."""
        ids = self._ids(messages)
        placeholder_id = self.fast.convert_tokens_to_ids(self.placeholder)
        images = sum(1 for i in ids if i == placeholder_id)
        return len(ids) - images, images

    def sequence(self, messages: Sequence[ChatMessage], per_image: int) -> Tokens:
        """The prompt as the engine sees it: text token ids, and each image as one item
        (its frame's bytes) that weighs its `per_image` tokens."""
        images = iter([p.data for m in messages for p in m.content if isinstance(p, ImagePart)])
        placeholder_id = self.fast.convert_tokens_to_ids(self.placeholder)
        items: list[int | bytes] = []
        weights: list[int] = []
        for token in self._ids(messages):
            items.append(next(images) if token == placeholder_id else token)
            weights.append(per_image if token == placeholder_id else 1)
        return Tokens(items, weights)

    def _ids(self, messages: Sequence[ChatMessage]) -> list[int]:
        chat = [
            {
                "role": m.role,
                "content": [
                    {"type": "image"}
                    if isinstance(p, ImagePart)
                    else {"type": "text", "text": p.text}
                    for p in m.content
                ],
            }
            for m in messages
        ]
        text = self.fast.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        ids: list[int] = self.fast(text, add_special_tokens=False)["input_ids"]
        return ids


@dataclass
class Tokens:
    """A prompt's token sequence, an image counted as one item of many tokens."""

    items: list[int | bytes]
    weights: list[int]

    @property
    def total(self) -> int:
        return sum(self.weights)

    def common_prefix(self, other: Tokens) -> int:
        """Tokens of the longest common prefix (an image matches only the same frame)."""
        shared = 0
        for mine, theirs, weight in zip(self.items, other.items, self.weights, strict=False):
            if mine != theirs:
                break
            shared += weight
        return shared


def _corpus(limit: int) -> Iterator[str]:
    """English and code: Python's standard library sources (docstrings, comments, code)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    total = 0
    for path in sorted(root.rglob("*.py")):
        if "test" in path.parts or "site-packages" in path.parts or "idlelib" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="ignore")
        yield text
        total += len(text)
        if total >= limit:
            return


def train_tokenizers(vocab: int, corpus_bytes: int) -> dict[str, Tokenizer]:
    """One trained BPE, wrapped with each model family's chat template."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [
        "<|im_start|>",
        "<|im_end|>",
        "<img>",
        "</img>",
        "<image>",
        "<|vision_start|>",
        "<|vision_end|>",
        "<|image_pad|>",
    ]
    raw = RawTokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(_corpus(corpus_bytes), trainer)
    result = {}
    for family, template, placeholder in (
        ("nemotron", CHAT_TEMPLATE, "<image>"),
        ("qwen", QWEN_CHAT_TEMPLATE, "<|image_pad|>"),
    ):
        fast = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>")
        fast.chat_template = template
        result[family] = Tokenizer(fast, placeholder, raw.get_vocab_size())
    return result


def image_tokens(dialect: Dialect, frame: Size) -> int:
    """What one screenshot costs in the prompt: the rule's tokens + its 2 delimiters
    (<img> </img> around Nemotron's <image> run; Qwen's vision_start / vision_end)."""
    tokens = dialect.image_tokens(frame)
    if tokens is None:
        raise ValueError(f"dialect {dialect.name} has no image token rule")
    return tokens + 2


def client_frame_size(dialect: Dialect, screen: Size) -> Size:
    """The frame a holodesk client sends: the screen fitted into the FrameSpec's box."""
    spec = dialect.frame_spec((), screen)
    return fit_in_box(screen, spec.max_width, spec.max_height)


def unbounded(dialect: Dialect) -> Dialect:
    """The same dialect keeping every screenshot and every step (the baseline).
    model_copy does not validate, so the window may exceed the spec's bound of 32."""
    spec = dialect.spec.model_copy(
        update={"name": f"{dialect.name}-unbounded", "history_images": UNBOUNDED,
                "history_steps": UNBOUNDED, "history_layout": "window"}
    )  # fmt: skip
    return Dialect(spec, dialect.parser)


def with_layout(dialect: Dialect, layout: Layout, block: int = 0) -> Dialect:
    """The same dialect in another history layout (block: history_block, 0 its own)."""
    update: dict[str, Any] = {"history_layout": layout}
    if block:
        update["history_block"] = block
    spec = dialect.spec.model_validate(dialect.spec.model_dump() | update)
    return Dialect(spec, dialect.parser)


def _decision(step: int, frame: Size) -> Decision:
    kinds: tuple[ActionKind, ...]
    which = step % 4
    if which == 0:
        kinds = (Click(Point(frame.width * 0.31, frame.height * (0.2 + 0.01 * (step % 30)))),)
    elif which == 1:
        kinds = (TypeText(f"EMEA customer {step}"), KeyChord(("tab",)))
    elif which == 2:
        kinds = (Scroll(Point(frame.width / 2, frame.height / 2), dy=5),)
    else:
        kinds = (KeyChord(("ctrl", "s")),)
    return Decision(kinds, thought=THOUGHTS[which], note=f"row {step} in progress")


def run_session(
    dialect: Dialect, tokenizer: Tokenizer, steps: int, screen: Size = SCREEN
) -> list[dict[str, Any]]:
    """Prompt tokens of each step of a session driven through the daemon's Session, and
    how many of them begin the previous step's prompt too."""
    frame_size = client_frame_size(dialect, screen)
    model = dialect.geometry(frame_size).model_image
    mime = dialect.spec.model_image_encoding.mime_type
    per_image = image_tokens(dialect, frame_size)
    session = Session(
        SessionRequest(task=TASK),
        policy_name="bench",
        max_steps=steps + 1,
        # What the layout shows at most (ModelPolicy.history_frames).
        history_frames=dialect.spec.frames_kept,
    )
    counts = []
    previous: Tokens | None = None
    for step in range(1, steps + 1):
        results = tuple(ActionResult(a.action_id, ActionStatus.OK) for a in session.pending)
        session.accept_results(results, "observation.results")
        frame = EncodedFrame(f"frame-{step}", frame_size, dialect.spec.frame.encoding, b"-")
        session.accept_frame(frame, "observation.frame")
        context = session.context()
        # Only the size of a model image matters to the prompt (the engine expands it);
        # its bytes name its frame, so that only the same frame matches in a prefix.
        images = tuple(
            ImagePart(f.frame_id.encode(), mime, model.width, model.height) for f in context.frames
        )
        messages = dialect.step_messages(context, images)
        tokens = tokenizer.sequence(messages, per_image)
        text, shown = tokenizer.text_tokens(messages)
        expected = min(len(images), dialect.spec.images_shown(step))
        if shown != expected:
            raise AssertionError(f"{dialect.name}: {expected} images, {shown} in the chat")
        if tokens.total != text + shown * per_image:
            raise AssertionError(f"{dialect.name}: {tokens.total} tokens, expected otherwise")
        prefix = 0 if previous is None else tokens.common_prefix(previous)
        counts.append(
            {
                "step": step,
                "images": shown,
                "image_tokens": shown * per_image,
                "text_tokens": text,
                "prompt_tokens": tokens.total,
                "prefix_tokens": prefix,
            }
        )
        previous = tokens
        session.record_decision(_decision(step, frame_size))
    return counts


def history_cycle(dialect: Dialect) -> int:
    """Steps after which the window's shape repeats (how many screenshots and step lines
    the prompt shows); 1 for the window layout once full."""
    spec = dialect.spec
    start = fill_step(dialect)

    def shape(step: int) -> tuple[int, int]:
        return spec.images_shown(step), step - spec.first_history_step(step)

    for cycle in range(1, 4 * (spec.history_steps + spec.frames_kept) + 2):
        if all(shape(s + cycle) == shape(s) for s in range(start, start + 3 * cycle)):
            return cycle
    raise AssertionError(f"{dialect.name}: the history window never repeats")


def steady_steps(dialect: Dialect, steps: int) -> range:
    """Steady state: the last whole history cycles of the run that start at or after the
    window fills (so averages over it are the layout's own), 1-based steps."""
    first = fill_step(dialect)
    cycle = history_cycle(dialect)
    whole = max(1, (steps - first + 1) // cycle) * cycle
    return range(max(2, steps - whole + 1), steps + 1)


def reuse(dialect: Dialect, counts: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """Prefix share at steady state: the mean of each step's share, token-weighted
    too (what a cache saves of the prefill), and the screenshots shown on average."""
    steady = steady_steps(dialect, steps)
    chosen = [counts[s - 1] for s in steady]
    shares = [c["prefix_tokens"] / c["prompt_tokens"] for c in chosen]
    return {
        "layout": dialect.spec.history_layout,
        "block": dialect.spec.image_block,
        "frames_kept": dialect.spec.frames_kept,
        "steady_steps": [steady.start, steady.stop - 1],
        "share_mean": statistics.fmean(shares),
        "share_weighted": sum(c["prefix_tokens"] for c in chosen)
        / sum(c["prompt_tokens"] for c in chosen),
        "share_min": min(shares),
        "share_max": max(shares),
        "images_mean": statistics.fmean(c["images"] for c in chosen),
        "images_max": max(c["images"] for c in counts),
        "prompt_tokens_mean": statistics.fmean(c["prompt_tokens"] for c in chosen),
        "prompt_tokens_max": max(c["prompt_tokens"] for c in counts),
        "steps": counts,
    }


def fill_step(dialect: Dialect) -> int:
    """The first step whose prompt holds a full window (screenshots and step lines)."""
    return max(dialect.spec.frames_kept, dialect.spec.history_steps + 1)


def slope(values: Sequence[float]) -> float:
    """Least-squares tokens per step."""
    if len(values) < 2:
        return 0.0
    xs = range(len(values))
    return statistics.linear_regression(xs, values).slope


def add_figures(report: Report, results: dict[str, Any], steps: int) -> None:
    for name, result in results.items():
        bounded = [c["prompt_tokens"] for c in result["bounded"]]
        appended = [c["prompt_tokens"] for c in result["append"]]
        everything = [c["prompt_tokens"] for c in result["unbounded"]]
        fill = min(result["fill_step"], steps)
        tail_b, tail_u = bounded[fill - 1 :], everything[fill - 1 :]
        flat = slope(tail_b)
        result["slope_after_fill"] = {"bounded": flat, "unbounded": slope(tail_u)}
        report.add(
            Figure(
                f"{name}: prompt tokens at step {steps}",
                bounded[-1],
                "tokens",
                everything[-1],
                "same dialect, unbounded window",
                note=f"window layout; {result['image_tokens_each']} tokens per screenshot, "
                f"window {result['history_images']} screenshots / "
                f"{result['history_steps']} steps",
            )
        )
        report.add(
            Figure(
                f"{name}: growth per step after the window fills (step {fill})",
                flat,
                "tokens/step",
                slope(tail_u),
                "same dialect, unbounded window",
                target="flat (|slope| < 1% of a screenshot)",
                # Decidable only with a few steps past the fill.
                met=abs(flat) < 0.01 * result["image_tokens_each"] if len(tail_b) >= 3 else None,
                note=f"window layout; min {min(tail_b)}, max {max(tail_b)} tokens from step {fill}",
            )
        )
        report.add(
            Figure(
                f"{name}: prompt tokens summed over the session",
                sum(appended),
                "tokens",
                sum(bounded),
                "same dialect, window layout",
                note=f"{result['layout']} layout (block {result['block']}): total prefill "
                f"without a cache; at most {max(appended)} tokens in one prompt "
                f"(window layout {max(bounded)}); unbounded {sum(everything)}",
            )
        )
    for name, result in results.items():
        for screen, measured in result["reuse"].items():
            new, old = measured[result["layout"]], measured["window"]
            same_images = abs(new["images_mean"] - old["images_mean"]) < 0.01
            first, last = new["steady_steps"]
            report.add(
                Figure(
                    f"{name} {screen}: prompt tokens a prefix of the previous step's",
                    100 * new["share_mean"],
                    "%",
                    100 * old["share_mean"],
                    "same dialect, window layout",
                    better="higher",
                    target=f">= {TARGET_SHARE:.0%} at steady state, same average screenshots",
                    met=new["share_mean"] >= TARGET_SHARE and same_images,
                    note=f"{result['layout']} layout, block {new['block']}; steps "
                    f"{first}-{last}: {new['images_mean']:.2f} screenshots on average "
                    f"(window layout {old['images_mean']:.2f}), at most {new['images_max']}; "
                    f"per step {100 * new['share_min']:.0f}-{100 * new['share_max']:.0f}%; "
                    f"token-weighted {100 * new['share_weighted']:.1f}% "
                    f"(window layout {100 * old['share_weighted']:.1f}%)",
                )
            )


def plot(report: Report, results: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    columns = min(3, len(names))
    rows = (len(names) + columns - 1) // columns
    figure, axes = plt.subplots(
        2 * rows, columns, figsize=(5.2 * columns, 3.8 * 2 * rows), squeeze=False
    )
    for index, name in enumerate(names):
        axis = axes[index // columns][index % columns]
        result = results[name]
        steps = [c["step"] for c in result["bounded"]]
        axis.plot(steps, [c["prompt_tokens"] for c in result["unbounded"]], color="tab:gray",
                  label="unbounded window (baseline)")  # fmt: skip
        axis.plot(steps, [c["prompt_tokens"] for c in result["bounded"]], color="tab:blue",
                  label="window layout")  # fmt: skip
        axis.plot(steps, [c["text_tokens"] for c in result["bounded"]], color="tab:blue",
                  linestyle=":", label="of which text")  # fmt: skip
        axis.plot(steps, [c["prompt_tokens"] for c in result["append"]], color="tab:green",
                  label=f"{result['layout']} layout (block {result['block']})")  # fmt: skip
        images_full = result["history_images"]
        axis.axvline(images_full, color="tab:orange", linestyle="--", linewidth=1,
                     label=f"screenshots window full (step {images_full})")  # fmt: skip
        axis.axvline(result["fill_step"], color="tab:red", linestyle="--", linewidth=1,
                     label=f"step lines full too (step {result['fill_step']})")  # fmt: skip
        axis.set_title(f"{name} ({result['image_tokens_each']} tokens/screenshot)", fontsize=10)
        axis.set_xlabel("step")
        axis.set_ylabel("prompt tokens, 1920x1080")
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=7)
        shares = axes[rows + index // columns][index % columns]
        for (screen, measured), style in zip(result["reuse"].items(), ("--", "-"), strict=False):
            for layout, colour in (("window", "tab:blue"), (result["layout"], "tab:green")):
                series = measured[layout]["steps"]
                shares.plot([c["step"] for c in series[1:]],
                            [100 * c["prefix_tokens"] / c["prompt_tokens"] for c in series[1:]],
                            color=colour, linestyle=style, label=f"{layout}, {screen}")  # fmt: skip
        shares.axhline(100 * TARGET_SHARE, color="tab:red", linestyle=":", linewidth=1,
                       label=f"target {TARGET_SHARE:.0%}")  # fmt: skip
        shares.set_title(f"{name}: share of the prompt that begins the previous one", fontsize=9)
        shares.set_xlabel("step")
        shares.set_ylabel("prefix of the previous step, %")
        shares.set_ylim(0, 100)
        shares.legend(fontsize=7)
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].axis("off")
        axes[rows + index // columns][index % columns].axis("off")
    figure.suptitle(f"prompt tokens and prompt reuse per step — {report.command}", fontsize=9)
    figure.tight_layout()
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    cli = parser(MODULE, __doc__ or "")
    cli.add_argument("--steps", type=int, default=50)
    cli.add_argument("--dialects", nargs="+", default=list(dialect_names()))
    cli.add_argument("--vocab", type=int, default=32_000, help="tokenizer size to train")
    cli.add_argument("--corpus-mb", type=float, default=8.0, help="training text (stdlib), MB")
    cli.add_argument(
        "--block", type=int, default=0,
        help="screenshots dropped at once in the append layout (odd; 0: each dialect's own)",
    )  # fmt: skip
    args = cli.parse_args(arguments)
    if args.quick:
        # 40 steps: two whole history cycles past the fill step (21) for every dialect.
        args.steps, args.vocab, args.corpus_mb = 40, 2000, 0.5
    report = Report(NAME, "prompt growth", reproduce_command(MODULE, arguments), args.quick)
    report.header()
    tokenizers = train_tokenizers(args.vocab, int(args.corpus_mb * 1_000_000))
    results: dict[str, Any] = {}
    for name in args.dialects:
        default = get_dialect(name)
        if args.block:
            default = with_layout(default, "append", args.block)
        window = with_layout(default, "window")
        family = "nemotron" if isinstance(default.spec.resize.rule(), TileResize) else "qwen"
        tokenizer = tokenizers[family]
        frame = client_frame_size(default, SCREEN)
        reused: dict[str, Any] = {}
        for screen in REUSE_SCREENS:
            reused[f"{screen.width}x{screen.height}"] = {
                layout: reuse(d, run_session(d, tokenizer, args.steps, screen), args.steps)
                for layout, d in (("window", window), (default.spec.history_layout, default))
            }
        results[name] = {
            "frame": [frame.width, frame.height],
            "model_image": [
                default.geometry(frame).model_image.width,
                default.geometry(frame).model_image.height,
            ],
            "image_tokens_each": image_tokens(default, frame),
            "history_images": default.spec.history_images,
            "history_steps": default.spec.history_steps,
            "layout": default.spec.history_layout,
            "block": default.spec.image_block,
            "frames_kept": default.spec.frames_kept,
            # "bounded" is the window layout (its growth figures and the smoke test's
            # flatness check); "append" the dialect's own layout.
            "fill_step": fill_step(window),
            "chat_template": family,
            "bounded": reused["1920x1080"]["window"]["steps"],
            "append": reused["1920x1080"][default.spec.history_layout]["steps"],
            "unbounded": run_session(unbounded(window), tokenizer, args.steps),
            "reuse": reused,
        }
    report.data["tokenizer"] = {
        "kind": "byte-level BPE trained on Python's standard library",
        "vocab": tokenizers["nemotron"].vocab_size,
        "corpus_bytes": int(args.corpus_mb * 1_000_000),
    }
    report.data["screen"] = [SCREEN.width, SCREEN.height]
    add_figures(report, results, args.steps)
    report.data["dialects"] = results
    report.finish(plot(report, results), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
