"""Model sampling a session asks for, and what the model generated at each step.

`Sampling` goes out in SessionStart.sampling; `Generation` comes back with every
Actions message of a model policy (policies without a model send none). Values
only: convert.py maps them to and from the contract.

`Sampling` and `Completion` are the contract's values, defined once in
holodesk.values.generation (the daemon reads and fills the same two). `Generation`
is the client's own: the step as the wire carries it (`chosen` a plain index into
`completions`). The daemon's StepGeneration differs on purpose (it keeps the prompt
its engine saw and `chosen` None when nothing parsed; none of that is sent), and
convert.generation_from_pb is what ties the two, through agent.proto's Generation.
"""

from __future__ import annotations

from dataclasses import dataclass

from holodesk.values.generation import Completion as Completion
from holodesk.values.generation import Sampling as Sampling
from holodesk.values.generation import VersionSpan as VersionSpan


@dataclass(frozen=True)
class PromptImage:
    """An image of a step's prompt: the frame its pixels came from, the content id
    naming exactly the pixels the model saw, and their size."""

    frame_id: str
    content_id: str
    width: int
    height: int
    # The daemon resized the frame to this size; False: the engine got it as sent.
    resized: bool = False


@dataclass(frozen=True)
class Generation:
    """Every completion of a step (`Sampling.candidates` per model call, repair
    calls included, in order) and the index of the one the actions came from.

    `policy_version` is the daemon's PolicyVersion.number of the weights that made
    the chosen completion (its newest, when an update landed while it was sampled:
    its `versions` tell), 0 for a policy without versions. `prompt_token_ids` is the
    chosen completion's prompt exactly as the engine saw it, with
    Sampling(prompt_token_ids=True) on an engine that gives ids."""

    completions: tuple[Completion, ...]
    chosen: int = 0
    prompt_tokens: int = 0
    engine_seconds: float = 0.0
    policy_version: int = 0
    policy_label: str = ""
    prompt_token_ids: tuple[int, ...] = ()
    images: tuple[PromptImage, ...] = ()

    @property
    def versions(self) -> frozenset[int]:
        """Every policy version that sampled a token of this step (any completion)."""
        spans = {span.version for c in self.completions for span in c.versions}
        return frozenset(spans or ({self.policy_version} if self.policy_version else set()))

    @property
    def chosen_completion(self) -> Completion | None:
        if 0 <= self.chosen < len(self.completions):
            return self.completions[self.chosen]
        return None
