"""Part (a): the model's own chat template, rendered with the dialect's messages.

Engines render prompts with the checkpoint's chat template (vLLM and the
transformers engine in process, a vLLM or SGLang server remotely), so a
template that cannot take what the dialect sends breaks every step. This
renders one navigation step, counts its tokens, and names what is wrong:

- no chat template at all;
- the system role rejected (some templates raise on it) or dropped;
- list-of-parts content rejected, or printed as a Python list;
- no image placeholder written for an image part;
- a processor that expands no image tokens from the placeholder.

It also compares the dialect's estimate of an image's tokens with what the
processor really produced (a note, not a problem: the estimate sizes frames
and prefill budgets, it does not map coordinates).
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from holodesk.daemon.dialects import Dialect
from holodesk.daemon.engines.base import ChatMessage, EngineError
from holodesk.daemon.engines.chat import template_chat
from holodesk.daemon.engines.transformers_loading import import_stack, load_processor
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.model_check.screenshot import Screenshot
from holodesk.daemon.steps import StepContext

log = logging.getLogger(__name__)

# Content parts printed as a Python or JSON list by a template that wants strings.
_LIST_MARKERS = ("{'type': 'text'", "{'type': 'image'", '{"type": "text"', '{"type": "image"')


@dataclass
class TemplateReport:
    model: str
    # Whose template rendered the prompt: "processor" or "tokenizer".
    source: str = ""
    rendered: str = ""
    prompt_tokens: int | None = None
    image_tokens_estimate: int | None = None
    image_tokens_actual: int | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def navigation_messages(dialect: Dialect, screenshot: Screenshot) -> tuple[ChatMessage, ...]:
    """The dialect's messages for step 1 of the check's navigation task."""
    frame = screenshot.frame()
    context = StepContext(session_id="model-check", task=screenshot.task, step=1, frames=(frame,))
    return dialect.step_messages(context, (dialect.model_image(frame),))


def load_template_owner(
    model: str, *, trust_remote_code: bool = False, revision: str | None = None
) -> tuple[Any, Any]:
    """(processor, tokenizer) of a checkpoint, loaded once for several dialects;
    raises EngineError when neither loads."""
    _, transformers = import_stack()
    settings = TransformersSettings(
        model=model, trust_remote_code=trust_remote_code, revision=revision
    )
    return load_processor(transformers, settings)


def processor_image_tokens(processor: Any, tokenizer: Any, screenshot: Screenshot) -> int | None:
    """Image tokens the model's own processor makes of the screenshot as captured
    (None: the checkpoint has no image processor or names no image token).

    This is the figure a dialect's resize rule should reproduce: the dialect whose
    estimate is nearest is the one whose image rule is the model's."""
    takes_images = processor is not tokenizer and hasattr(processor, "image_processor")
    image_id = _image_token_id(processor, tokenizer) if takes_images else None
    if image_id is None:
        return None
    message = {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "."}]}
    rendered = _render(processor, [message])
    with Image.open(io.BytesIO(screenshot.png)) as picture:
        image = picture.convert("RGB")
    inputs = processor(images=[image], text=[rendered], add_special_tokens=False)
    return sum(1 for i in inputs["input_ids"][0] if int(i) == image_id)


def check_template(
    model: str,
    dialect: Dialect,
    screenshot: Screenshot,
    *,
    trust_remote_code: bool = False,
    revision: str | None = None,
) -> TemplateReport:
    """Load the checkpoint's processor (or tokenizer) and inspect its template."""
    report = TemplateReport(model)
    try:
        _, transformers = import_stack()
        settings = TransformersSettings(
            model=model, trust_remote_code=trust_remote_code, revision=revision
        )
        processor, tokenizer = load_processor(transformers, settings)
    except EngineError as exc:
        report.problems.append(f"cannot load the tokenizer of {model}: {exc}")
        return report
    inspect_template(report, processor, tokenizer, dialect, screenshot)
    return report


def inspect_template(
    report: TemplateReport,
    processor: Any,
    tokenizer: Any,
    dialect: Dialect,
    screenshot: Screenshot,
) -> None:
    """Fill `report` from an already loaded processor and tokenizer (the same
    object for a text-only checkpoint)."""
    if processor is not tokenizer and getattr(processor, "chat_template", None):
        owner, report.source = processor, "processor"
    elif getattr(tokenizer, "chat_template", None):
        owner, report.source = tokenizer, "tokenizer"
    else:
        report.problems.append(
            f"no chat template: {report.model} ships none (chat_template.jinja, or "
            "chat_template in tokenizer_config.json), so no engine can render its prompts; "
            "add the model's template or serve it with an explicit --chat-template"
        )
        return
    messages = navigation_messages(dialect, screenshot)
    chat = template_chat(messages)
    rendered = _render_or_diagnose(report, owner, chat.messages)
    if rendered is None:
        return
    report.rendered = rendered
    _check_rendered(report, owner, chat.messages, rendered)
    report.image_tokens_estimate = dialect.image_tokens(screenshot.size)
    _count_tokens(report, processor, tokenizer, rendered, chat.images)


def _render(owner: Any, messages: list[dict[str, Any]]) -> str:
    text = owner.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text if isinstance(text, str) else str(text)


def _render_or_diagnose(
    report: TemplateReport, owner: Any, messages: list[dict[str, Any]]
) -> str | None:
    try:
        return _render(owner, messages)
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
    if messages and messages[0]["role"] == "system":
        merged = _without_system(messages)
        try:
            text = _render(owner, merged)
        except Exception as retry:  # not the system role either: the next probe says what
            log.debug("the template fails without the system role too: %s", retry, exc_info=retry)
        else:
            report.problems.append(
                f"the template rejects the system role ({failure}); put the dialect's system "
                "text into the first user turn (a dialect file with an empty system prompt)"
            )
            return text
    try:
        _render(owner, _as_strings(messages))
    except Exception as retry:
        # The first failure is the one to fix; the probe's own is kept in the log.
        log.debug("the template fails on string content too: %s", retry, exc_info=retry)
        report.problems.append(f"the template fails on the dialect's messages: {failure}")
        return None
    report.problems.append(
        f"the template rejects list-of-parts content ({failure}); it takes string content "
        "only, so it has no way to place images"
    )
    return None


def _check_rendered(
    report: TemplateReport, owner: Any, messages: list[dict[str, Any]], rendered: str
) -> None:
    texts = "".join(_first_text(m) for m in messages)
    if any(marker in rendered and marker not in texts for marker in _LIST_MARKERS):
        report.problems.append(
            "the template printed the content parts as a list: it expects string content"
        )
    system = next((m for m in messages if m["role"] == "system"), None)
    if system is not None and _first_text(system)[:60] not in rendered:
        report.problems.append("the template drops the system message")
    no_images = [
        {**m, "content": [p for p in m["content"] if p["type"] != "image"]} for m in messages
    ]
    try:
        text_only = _render(owner, no_images)
    except Exception as exc:
        report.notes.append(
            f"could not render the prompt without its image: {type(exc).__name__}: {exc}"
        )
        return
    if text_only == rendered:
        report.problems.append(
            "the template writes no image placeholder for an image part: the model would "
            "never see the screenshot"
        )


def _count_tokens(
    report: TemplateReport, processor: Any, tokenizer: Any, rendered: str, images: tuple[Any, ...]
) -> None:
    takes_images = processor is not tokenizer and hasattr(processor, "image_processor")
    if not takes_images:
        report.prompt_tokens = len(tokenizer(rendered, add_special_tokens=False)["input_ids"])
        report.notes.append(
            "no image processor in the checkpoint: the prompt's token count excludes the "
            "image's tokens (vLLM brings its own processor for the architectures it knows)"
        )
        return
    try:
        inputs = processor(images=list(images), text=[rendered], add_special_tokens=False)
    except Exception as exc:
        report.problems.append(
            f"the processor failed on the rendered prompt: {type(exc).__name__}: {exc}"
        )
        return
    ids = list(inputs["input_ids"][0])
    report.prompt_tokens = len(ids)
    image_id = _image_token_id(processor, tokenizer)
    if image_id is None:
        report.notes.append("the processor names no image token: image tokens not counted")
        return
    report.image_tokens_actual = sum(1 for i in ids if int(i) == image_id)
    if report.image_tokens_actual == 0:
        report.problems.append(
            "the processor expanded no image tokens: the placeholder the template writes is "
            f"not the one the processor looks for ({getattr(processor, 'image_token', '?')!r})"
        )
        return
    estimate = report.image_tokens_estimate
    if estimate is not None and abs(estimate - report.image_tokens_actual) > 0.1 * estimate:
        report.notes.append(
            f"the dialect estimates {estimate} image tokens, the processor made "
            f"{report.image_tokens_actual}: its resize rule is not this processor's"
        )


def _image_token_id(processor: Any, tokenizer: Any) -> int | None:
    value = getattr(processor, "image_token_id", None)
    if isinstance(value, int):
        return value
    token = getattr(processor, "image_token", None)
    if isinstance(token, str):
        found = tokenizer.convert_tokens_to_ids(token)
        if isinstance(found, int) and found != getattr(tokenizer, "unk_token_id", None):
            return found
    return None


def _first_text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["content"] if p["type"] == "text")


def _without_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system, rest = messages[0], [dict(m) for m in messages[1:]]
    prefix = {"type": "text", "text": _first_text(system) + "\n\n"}
    if rest and rest[0]["role"] == "user":
        rest[0] = {**rest[0], "content": [prefix, *rest[0]["content"]]}
    else:
        rest.insert(0, {"role": "user", "content": [prefix]})
    return rest


def _as_strings(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": m["role"], "content": _first_text(m)} for m in messages]
