"""Screen Recording and Accessibility: which app needs them, and what to tell the user.

macOS grants both to the app responsible for a process, not to the process: to the
terminal app when holodesk runs from a terminal, and to the program a launchd agent
starts (the Python interpreter binary) when it runs as a LaunchAgent. The message
names that app, so the user flips the right switch the first time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

Problem = tuple[str, str]

# TERM_PROGRAM values, then bundle identifiers (__CFBundleIdentifier), of common hosts.
_TERM_PROGRAMS: dict[str, str] = {
    "Apple_Terminal": "Terminal",
    "iTerm.app": "iTerm2",
    "vscode": "Visual Studio Code",
    "WezTerm": "WezTerm",
    "ghostty": "Ghostty",
    "WarpTerminal": "Warp",
    "Tabby": "Tabby",
    "Hyper": "Hyper",
}
_BUNDLES: dict[str, str] = {
    "com.apple.Terminal": "Terminal",
    "com.googlecode.iterm2": "iTerm2",
    "com.microsoft.VSCode": "Visual Studio Code",
    "com.github.wez.wezterm": "WezTerm",
    "com.mitchellh.ghostty": "Ghostty",
    "dev.warp.Warp-Stable": "Warp",
    "net.kovidgoyal.kitty": "kitty",
    "org.alacritty": "Alacritty",
}

SCREEN_RECORDING_PANE = (
    "System Settings > Privacy & Security > Screen Recording "
    "(named Screen & System Audio Recording from macOS 15)"
)
ACCESSIBILITY_PANE = "System Settings > Privacy & Security > Accessibility"


@dataclass(frozen=True)
class HostProcess:
    """What identifies the app macOS holds responsible for this process."""

    environ: Mapping[str, str]
    parent_pid: int
    executable: str  # sys.executable

    @classmethod
    def current(cls, executable: str) -> HostProcess:
        return cls(dict(os.environ), os.getppid(), executable)


@dataclass(frozen=True)
class ResponsibleApp:
    label: str  # how to name it in a sentence
    launchd: bool  # a launchd agent's program rather than an app the user opened


def responsible_app(host: HostProcess) -> ResponsibleApp:
    environ = host.environ
    term = environ.get("TERM_PROGRAM", "")
    bundle = environ.get("__CFBundleIdentifier", "")
    if term in _TERM_PROGRAMS:
        return ResponsibleApp(f"the terminal app {_TERM_PROGRAMS[term]}", launchd=False)
    if bundle in _BUNDLES:
        return ResponsibleApp(f"the app {_BUNDLES[bundle]}", launchd=False)
    if bundle:
        return ResponsibleApp(f"the app {bundle}", launchd=False)
    if term:
        return ResponsibleApp(f"the terminal app {term}", launchd=False)
    service = environ.get("XPC_SERVICE_NAME", "0")
    from_launchd = host.parent_pid == 1 or (
        service != "0" and not service.startswith("application.")
    )
    if from_launchd:
        program = os.path.realpath(host.executable)
        return ResponsibleApp(f"the program the launchd agent runs, {program}", launchd=True)
    return ResponsibleApp(
        "the app you started holodesk from (your terminal), or, when holodesk runs as "
        f"a launchd agent, its program {os.path.realpath(host.executable)}",
        launchd=False,
    )


def permission_problems(
    screen_capture: bool, accessibility: bool, host: HostProcess
) -> list[Problem]:
    """One problem per missing permission, each saying exactly what to switch on."""
    if screen_capture and accessibility:
        return []
    app = responsible_app(host)
    add = (
        "click + and add that file (press Cmd+Shift+G in the file dialog to type its path)"
        if app.launchd
        else "add it with + if it is not listed"
    )
    found: list[Problem] = []
    if not screen_capture:
        found.append(
            (
                f"macOS has not granted Screen Recording to {app.label}, so holodesk cannot "
                "capture the screen (captures would show only the wallpaper)",
                f"open {SCREEN_RECORDING_PANE}, switch it on for {app.label} ({add}), "
                "then quit and restart it: macOS applies this permission at launch",
            )
        )
    if not accessibility:
        found.append(
            (
                f"macOS has not granted Accessibility to {app.label}, so the clicks and keys "
                "holodesk posts would be dropped",
                f"open {ACCESSIBILITY_PANE}, switch it on for {app.label} ({add}), "
                "then restart holodesk",
            )
        )
    return found
