"""Ray and psutil come with the client's `ray` extra; this is the one place that
imports them, lazily, so that holodesk without the extra still imports and runs, and
a missing extra says how to install it."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_HINT = "install the client's ray extra: pip install 'holodesk-client[ray]'"


class RayUnavailableError(ImportError):
    """The Ray pool was asked for without the `ray` extra installed."""


def import_ray() -> ModuleType:
    return _import("ray")


def import_psutil() -> ModuleType:
    return _import("psutil")


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise RayUnavailableError(
            f"environments on a Ray cluster need the {name!r} package ({error}): {INSTALL_HINT}"
        ) from error
