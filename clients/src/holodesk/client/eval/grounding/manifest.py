"""RUN_DIR/manifest.json: what a grounding run ran, so a resumed run and `eval compare`
can tell whether two sets of answers were asked the same way.

    {"format", "benchmark",
     "dataset": {"path", "content_hash", "samples", "not_read", "limit", "scope"},
     "policy": {"policy", "model", "engine", "dialect", "prompt_hash", "resize_rule",
                "coordinates", "sampling", "policy_version", "policy_version_label"} | null,
     "daemon": {"server", "version"}, "holodesk_version", "started_at", "resumed_at"}

`policy` is what the daemon's Locate answers say answered them (agent.proto's
PolicyPinning); null when the daemon does not say (older than that field), and then
nothing about the model can be checked. `dataset.samples` counts the samples read,
`not_read` those its reader left out, `scope` those this run asks about (--limit).

A resumed run must match on RESUME_FIELDS (else its answers would mix two runs);
`eval compare` requires COMPARABLE_FIELDS to match (else the scores differ for
reasons other than the model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from holodesk.client.locations import PolicyPinning

FILE_NAME = "manifest.json"
FORMAT = "holodesk-eval-grounding/1"

# What makes two runs' scores comparable: the same questions on the same data, asked
# the same way (the model may differ: that is what a comparison is for).
COMPARABLE_FIELDS: tuple[str, ...] = (
    "benchmark",
    "dataset.content_hash",
    "dataset.scope",
    "policy.prompt_hash",
    "policy.resize_rule",
    "policy.coordinates",
    "policy.sampling",
)
# What a resumed run must share with the run it finishes: all of the above and the
# model and its weights.
RESUME_FIELDS: tuple[str, ...] = (
    "benchmark",
    "dataset.content_hash",
    "dataset.limit",
    "dataset.scope",
    "policy",
)


class ManifestError(ValueError):
    """A manifest that cannot be read, or that does not match; the message says how."""


def policy_json(pinning: PolicyPinning | None) -> dict[str, Any] | None:
    if pinning is None:
        return None
    out = asdict(pinning)
    if pinning.sampling is not None:
        sampling = pinning.sampling
        out["sampling"] = {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed,
        }
    return out


def new_manifest(
    *,
    benchmark: str,
    dataset_path: Path,
    content_hash: str,
    samples: int,
    not_read: int,
    limit: int | None,
    scope: int,
    pinning: PolicyPinning | None,
    server: str,
    daemon_version: str | None,
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "benchmark": benchmark,
        "dataset": {
            "path": str(dataset_path.resolve()),
            "content_hash": content_hash,
            "samples": samples,
            "not_read": not_read,
            "limit": limit,
            "scope": scope,
        },
        "policy": policy_json(pinning),
        "daemon": {"server": server, "version": daemon_version},
        "holodesk_version": version("holodesk-client"),
        "started_at": _now(),
        "resumed_at": [],
    }


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path} does not exist: {run_dir} is not a grounding run") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ManifestError(f"cannot read {path}: {error}") from error
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f"{path} is not a holodesk grounding manifest ({FORMAT})")
    return data


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Atomically: a crash leaves the old manifest or the new one, never half of one."""
    path = run_dir / FILE_NAME
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
    os.replace(temporary, path)


def resumed(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with this resumption's time added."""
    out = dict(manifest)
    out["resumed_at"] = [*manifest.get("resumed_at", []), _now()]
    return out


def field(manifest: Mapping[str, Any], dotted: str) -> Any:
    """A field by its dotted name ("policy.prompt_hash"); None when absent."""
    value: Any = manifest
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def differences(
    a: Mapping[str, Any], b: Mapping[str, Any], fields: Sequence[str]
) -> list[tuple[str, Any, Any]]:
    """(field, value in a, value in b) for every field that differs; a mapping field
    ("policy") is compared and reported key by key."""
    found: list[tuple[str, Any, Any]] = []
    for name in fields:
        left, right = field(a, name), field(b, name)
        if isinstance(left, Mapping) and isinstance(right, Mapping):
            keys = sorted(set(left) | set(right))
            found.extend(differences(a, b, [f"{name}.{key}" for key in keys]))
        elif left != right:
            found.append((name, left, right))
    return found


def describe(found: Sequence[tuple[str, Any, Any]], left: str, right: str) -> str:
    """One line per difference: `field: <left> X, <right> Y`."""
    return "\n".join(f"  {name}: {left} {_shown(a)}, {right} {_shown(b)}" for name, a, b in found)


def _shown(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
