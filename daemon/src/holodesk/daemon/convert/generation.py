"""Sampling in (SamplingParams -> Sampling) and a step's generation out
(StepGeneration -> Generation).

Apart because the sampling rules (temperature, top_p, how many completions, token
budget) are the generation feature's, checked where the request comes in.
"""

from __future__ import annotations

import math

from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.generation import MAX_CANDIDATES, MAX_SAMPLED_TOKENS, Sampling, StepGeneration
from holodesk.proto import limits
from holodesk.proto.limits import clip
from holodesk.proto.v1 import agent_pb2


def sampling_from_pb(params: agent_pb2.SamplingParams, field: str) -> Sampling:
    temperature = params.temperature if params.HasField("temperature") else None
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise InvalidArgument(f"{field}.temperature", f"must be 0 or more, got {temperature}")
    top_p = params.top_p if params.HasField("top_p") else None
    if top_p is not None and not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise InvalidArgument(f"{field}.top_p", f"must be above 0 and at most 1, got {top_p}")
    candidates = params.candidates or 1
    if candidates > MAX_CANDIDATES:
        raise InvalidArgument(
            f"{field}.candidates", f"at most {MAX_CANDIDATES} per step, got {candidates}"
        )
    if candidates > 1 and temperature == 0:
        raise InvalidArgument(
            f"{field}.candidates",
            f"{candidates} candidates need a temperature above 0 (greedy ones are all the same)",
        )
    max_tokens = params.max_tokens if params.HasField("max_tokens") else None
    if max_tokens is not None and not 1 <= max_tokens <= MAX_SAMPLED_TOKENS:
        raise InvalidArgument(
            f"{field}.max_tokens", f"must be 1 to {MAX_SAMPLED_TOKENS}, got {max_tokens}"
        )
    return Sampling(
        temperature=temperature,
        top_p=top_p,
        seed=params.seed if params.HasField("seed") else None,
        candidates=candidates,
        logprobs=params.logprobs,
        max_tokens=max_tokens,
        prompt_token_ids=params.prompt_token_ids,
    )


def generation_to_pb(generation: StepGeneration) -> agent_pb2.Generation:
    # Generation.chosen is a plain index. A step none of whose candidates parsed ends
    # the session as FAILED; its chosen 0 then names a completion with parsed=false.
    return agent_pb2.Generation(
        completions=[
            agent_pb2.Completion(
                text=clip(c.text, limits.COMPLETION_CHARS),
                token_ids=list(c.token_ids),
                token_logprobs=list(c.token_logprobs),
                cumulative_logprob=c.cumulative_logprob or 0.0,
                parsed=c.parsed,
                parse_error=clip(c.parse_error, limits.REASON_CHARS),
                versions=[
                    agent_pb2.VersionSpan(version=v.version, start=v.start, end=v.end)
                    for v in c.versions[: limits.MAX_VERSION_SPANS]
                ],
            )
            for c in generation.completions
        ],
        chosen=generation.chosen or 0,
        prompt_tokens=generation.prompt_tokens,
        engine_seconds=generation.engine_seconds,
        policy_version=generation.policy_version,
        policy_label=clip(generation.policy_label, limits.NAME_CHARS),
        # Never cut: a prompt cut short would train on a prompt the model never saw.
        # Longer ones are left out whole (the step's prompt_tokens still counts them).
        prompt_token_ids=(
            generation.prompt_token_ids
            if len(generation.prompt_token_ids) <= limits.MAX_PROMPT_TOKENS
            else ()
        ),
        images=[
            agent_pb2.PromptImage(
                frame_id=i.frame_id,
                content_id=i.content_id,
                width=i.width,
                height=i.height,
                resized=i.resized,
            )
            for i in generation.images[: limits.MAX_PROMPT_IMAGES]
        ],
    )
