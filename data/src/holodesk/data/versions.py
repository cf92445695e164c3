"""Which policy version made a recorded step, read from its Generation's JSON.

Recordings keep the Actions message as protobuf's JSON mapping
(MessageToDict, preserving field names), in which every uint64 is a *string*
("policy_version": "3", completions[].versions[].version: "3") and every zero
value is left out (no "policy_version" at all for version 0, no "start" for a
span starting at token 0). Recordings are also files a person may edit or a
future writer may change: a value that is neither an integer nor an integer's
string is taken as unknown, never an error that stops a report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class StepVersions:
    """A step's policy version (0: none known), its label, and every version that
    sampled a token of any of its completions."""

    policy_version: int = 0
    policy_label: str = ""
    versions: frozenset[int] = frozenset()

    @property
    def known(self) -> bool:
        return bool(self.policy_version or self.versions)

    @property
    def mixed(self) -> bool:
        """Its tokens came from more than one version."""
        return len(self.versions) > 1


def step_versions(generation: Json | None) -> StepVersions:
    """The versions of one recorded step's `generation` (None: a policy without a model)."""
    if not isinstance(generation, dict):
        return StepVersions()
    version = as_count(generation.get("policy_version", 0)) or 0
    label = generation.get("policy_label")
    spans = {
        number
        for completion in _dicts(generation.get("completions"))
        for span in _dicts(completion.get("versions"))
        if (number := as_count(span.get("version", 0))) is not None
    }
    versions = frozenset(spans or ({version} if version else set()))
    return StepVersions(version, label if isinstance(label, str) else "", versions)


def as_count(value: object) -> int | None:
    """A JSON integer, or an integer's decimal string (uint64), if 0 or more."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        return None
    return number if number >= 0 else None


def describe_versions(versions: Iterable[int]) -> str:
    """Versions as a person reads them: "v3"; "v2–v5" for a run of three or more
    consecutive ones; "v1, v4" otherwise; "" for none."""
    ordered = sorted(set(versions))
    if not ordered:
        return ""
    if len(ordered) > 2 and ordered[-1] - ordered[0] == len(ordered) - 1:
        return f"v{ordered[0]}–v{ordered[-1]}"
    return ", ".join(f"v{number}" for number in ordered)


def _dicts(value: object) -> list[Json]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
