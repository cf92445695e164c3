"""What a model generated for one session step: the values shared by policies
(which fill them), the contract converter (Actions.generation) and recordings.

A policy without a model (scripted, OCR) leaves Decision.generation empty.

`Sampling` (what a session asks for, SessionStart.sampling) and `Completion` (one
sampled candidate) are the contract's values, defined once in
holodesk.values.generation: the client builds the same Sampling and reads back the
same Completion. `StepGeneration` is the daemon's own and differs from the client's
Generation on purpose: it keeps the prompt exactly as handed to the engine (images
as the model sees them), `chosen` None when no candidate parsed, and the completion
tokens the metrics count; convert.generation_to_pb writes what the wire carries of
it (agent.proto Generation), which is what ties the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.daemon.engines.base import ChatMessage

# The daemon's bounds on what a session may ask (SessionStart.sampling): the
# contract's, defined once in holodesk.proto.limits (re-exported for the daemon).
from holodesk.proto.limits import MAX_CANDIDATES as MAX_CANDIDATES
from holodesk.proto.limits import MAX_SAMPLED_TOKENS as MAX_SAMPLED_TOKENS
from holodesk.values.generation import Completion as Completion
from holodesk.values.generation import Sampling as Sampling


@dataclass(frozen=True)
class PromptImageRef:
    """An image of the step's prompt: the frame it shows, the content id naming the
    exact pixels the model saw (ImagePart.content_id), and their size."""

    frame_id: str
    content_id: str
    width: int
    height: int
    # The daemon resized the frame to width x height (else the engine got it as sent).
    resized: bool = False


@dataclass(frozen=True)
class StepGeneration:
    # The prompt exactly as handed to the engine (images as the model sees them).
    messages: tuple[ChatMessage, ...]
    # Every completion of the step in sampling order, repair retries included (the
    # wire's Generation.completions, the client's Generation.completions).
    completions: tuple[Completion, ...]
    # Index of the completion the actions came from; None when none parsed.
    chosen: int | None
    prompt_tokens: int = 0
    engine_seconds: float = 0.0
    # Summed over every candidate (the engines' GenerationResult.completion_tokens).
    completion_tokens: int = 0
    # The policy version that made the chosen completion (its newest where an update
    # landed under it: the completion's versions tell) and its label; 0: no versions.
    policy_version: int = 0
    policy_label: str = ""
    # The chosen completion's prompt as token ids exactly as the engine saw them;
    # kept only when the session asks (Sampling.prompt_token_ids).
    prompt_token_ids: tuple[int, ...] = ()
    # The prompt's images, in prompt order.
    images: tuple[PromptImageRef, ...] = ()
