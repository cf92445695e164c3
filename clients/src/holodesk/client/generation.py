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


@dataclass(frozen=True)
class Generation:
    """Every completion of a step (`Sampling.candidates` per model call, repair
    calls included, in order) and the index of the one the actions came from."""

    completions: tuple[Completion, ...]
    chosen: int = 0
    prompt_tokens: int = 0
    engine_seconds: float = 0.0

    @property
    def chosen_completion(self) -> Completion | None:
        if 0 <= self.chosen < len(self.completions):
            return self.completions[self.chosen]
        return None
