"""The Ray placement flags (--ray, --resources, --labels) that `holodesk rollouts` and
`holodesk eval tasks` share, so both commands parse and refuse them the same way
(docs/ray.md). Nothing here imports ray: the flags are checked before a cluster is
asked for anything."""

from __future__ import annotations

import argparse
import json
from typing import Any

RAY_ONLY = "--resources and --labels place Ray actors: give --ray ADDRESS"


def resources(text: str) -> dict[str, float]:
    """--resources: a JSON object of positive amounts, e.g. '{"desktop": 1}'."""
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"--resources is not JSON: {error.msg}") from None
    if not isinstance(value, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value.values()
    ):
        raise argparse.ArgumentTypeError(
            "resources are a JSON object of positive amounts, e.g. '{\"desktop\": 1}'"
        )
    return {str(k): float(v) for k, v in value.items()}


def labels(text: str) -> dict[str, str]:
    """--labels: K=V pairs, comma-separated; a node must carry every one."""
    found = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise argparse.ArgumentTypeError(f"a label is KEY=VALUE, got {item!r}")
        found[key] = value
    return found


def add_ray_arguments(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    """--ray ADDRESS, --resources JSON and --labels K=V,... on this group."""
    group.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the environments as actors on this Ray cluster (head:6379, or 'auto')",
    )
    group.add_argument(
        "--resources",
        type=resources,
        default={},
        metavar="JSON",
        help="Ray resources each environment needs, e.g. '{\"desktop\": 1}'",
    )
    group.add_argument(
        "--labels", type=labels, default={}, metavar="K=V,...", help="node labels to run on"
    )
