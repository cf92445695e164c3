"""The one registry of set-up steps, getters and metrics, built once from per-kind
modules into frozen mappings.

To add entries, write a module exposing STEPS, GETTERS or METRICS (a mapping of
OSWorld's name to the entry) and add its import path to the matching tuple below:
one line. The same name in two modules is an error at import, never a silent
override."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from holodesk.client.eval.tasks.kinds import Getter, Metric, Step

STEP_MODULES: tuple[str, ...] = (
    "holodesk.client.eval.tasks.steps.general",
    "holodesk.client.eval.tasks.steps.windows",
    "holodesk.client.eval.tasks.steps.browser",
)
GETTER_MODULES: tuple[str, ...] = (
    "holodesk.client.eval.tasks.getters.files",
    "holodesk.client.eval.tasks.getters.general",
    "holodesk.client.eval.tasks.getters.browser",
    "holodesk.client.eval.tasks.gnumeric",
    "holodesk.client.eval.tasks.chromium_page",
)
METRIC_MODULES: tuple[str, ...] = (
    "holodesk.client.eval.tasks.metrics.general",
    "holodesk.client.eval.tasks.metrics.files",
    "holodesk.client.eval.tasks.metrics.browser",
    "holodesk.client.eval.tasks.gnumeric",
)


def merged(
    modules: Sequence[str], attribute: str, check: Callable[[Any], bool]
) -> Mapping[str, Any]:
    """Every module's `attribute` mapping, merged into one read-only mapping."""
    entries: dict[str, Any] = {}
    owners: dict[str, str] = {}
    for name in modules:
        mapping = getattr(importlib.import_module(name), attribute)
        for key, entry in mapping.items():
            if key in entries:
                raise ValueError(f"{attribute} {key!r} is defined by both {owners[key]} and {name}")
            if not check(entry):
                raise TypeError(f"{name}.{attribute}[{key!r}] is not a valid entry: {entry!r}")
            entries[key] = entry
            owners[key] = name
    return MappingProxyType(entries)


STEPS: Mapping[str, Step] = merged(STEP_MODULES, "STEPS", lambda e: isinstance(e, Step))
GETTERS: Mapping[str, Getter] = merged(GETTER_MODULES, "GETTERS", lambda e: isinstance(e, Getter))
METRICS: Mapping[str, Metric] = merged(METRIC_MODULES, "METRICS", callable)
