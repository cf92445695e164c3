"""Per-monitor DPI awareness: asked for first, checked against the monitors.

Without it Windows lies about geometry: on a monitor scaled to 150% an unaware
process sees two thirds of the pixels, captures come back resampled and clicks land
off target. Awareness must be set before the process creates a window or asks for
geometry, which is why `windows.backend.create` calls `enable_per_monitor_awareness`
before anything else.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from holodesk.platform.windows.api import BASE_DPI, DpiAwareness, Monitor, WinApi

log = logging.getLogger(__name__)

Problem = tuple[str, str]

_FIX = (
    "create the holodesk backend before anything else in this process sets DPI awareness "
    "(a GUI toolkit, or an application manifest), and clear 'Override high DPI scaling "
    "behavior' in the Compatibility properties of python.exe"
)


def enable_per_monitor_awareness(api: WinApi) -> DpiAwareness:
    """Ask for per-monitor v2, else per-monitor (8.1), else system awareness (Vista).

    An older call is tried only when the newer one does not exist: a refusal means
    awareness was already set, and no later call can change it. Returns what the
    process has afterwards.
    """
    attempts = (
        (
            "SetProcessDpiAwarenessContext(PER_MONITOR_AWARE_V2)",
            api.set_dpi_awareness_context_per_monitor_v2,
        ),
        (
            "SetProcessDpiAwareness(PER_MONITOR_DPI_AWARE)",
            api.set_process_dpi_awareness_per_monitor,
        ),
        ("SetProcessDPIAware()", api.set_process_dpi_aware),
    )
    for name, attempt in attempts:
        result = attempt()
        if result is None:
            continue
        if not result:
            log.info("%s refused: DPI awareness was already set for this process", name)
        break
    awareness = api.dpi_awareness()
    if awareness < DpiAwareness.PER_MONITOR:
        log.warning("this process is only %s DPI aware", awareness.name)
    return awareness


def awareness_problems(awareness: DpiAwareness, monitors: Sequence[Monitor]) -> list[Problem]:
    """Why geometry would be wrong at this awareness on these monitors; empty when fine."""
    if awareness >= DpiAwareness.PER_MONITOR:
        return []
    dpis = {monitor.dpi for monitor in monitors if monitor.dpi is not None}
    if awareness == DpiAwareness.SYSTEM and len(dpis) > 1:
        listing = ", ".join(f"{m.device} at {_percent(m.dpi)}" for m in monitors if m.dpi)
        return [
            (
                "this process is only system DPI aware and the monitors use different "
                f"scales ({listing}): Windows rescales coordinates on some of them, so "
                "clicks and captures would be off",
                _FIX,
            )
        ]
    if awareness == DpiAwareness.UNAWARE and any(dpi != BASE_DPI for dpi in dpis):
        return [
            (
                "this process is not DPI aware and a monitor is scaled above 100%: Windows "
                "shows it scaled coordinates, so clicks and captures would be off",
                _FIX,
            )
        ]
    return []


def scale_factor(monitor: Monitor, system_dpi: int) -> float:
    """Physical pixels per logical pixel on a monitor."""
    dpi = monitor.dpi if monitor.dpi else system_dpi
    return dpi / BASE_DPI


def _percent(dpi: int | None) -> str:
    return f"{round(100 * (dpi or BASE_DPI) / BASE_DPI)}%"
