"""Several remote desktops driven at once, each from its own thread."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, Region
from holodesk.platform.select import open_backend
from tests.platform.vnc.servers import xvnc
from tests.support.probe import ProbeApp

pytestmark = pytest.mark.vnc

DESKTOPS = 3


def drive(backend: Backend, probe: ProbeApp, text: str, clicks: int) -> None:
    """What one agent does to its desktop: clicks, types, looks."""
    for _ in range(clicks):
        backend.input.click(*probe.widgets["ok"].center)
    backend.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    backend.input.type_text(text)
    probe.wait_for_entry(text)
    backend.screen.grab(Region(0, 0, 800, 600))


def test_three_desktops_three_threads(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(xvnc(800, 600)) for _ in range(DESKTOPS)]
        probes = [
            ProbeApp.start(server.display, tmp_path / f"probe{n}.log")
            for n, server in enumerate(servers)
        ]
        for probe in probes:
            stack.callback(probe.stop)
        backends = [open_backend("vnc", **server.options()) for server in servers]
        for backend in backends:
            stack.callback(backend.close)

        texts = [f"desktop {n}: ñ{n}" for n in range(DESKTOPS)]
        errors: list[BaseException] = []

        def run(n: int) -> None:
            try:
                drive(backends[n], probes[n], texts[n], clicks=n + 1)
            except BaseException as error:  # reported below, with its desktop
                errors.append(error)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(DESKTOPS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors

        # Each desktop saw its own clicks and text, and nothing of the others'.
        for n, probe in enumerate(probes):
            assert len(probe.events("command")) == n + 1
            assert probe.entry_text() == texts[n]
            typed = "".join(e["char"] for e in probe.events("key") if e["char"])
            assert typed == texts[n]
