"""The portal route opened on a just-started headless KDE (KWin 5.27, xdg-desktop-portal-kde).

xdg-desktop-portal-kde answers "Invalid session" until it has bound KWin's
screencast protocol (its CreateSession fails, the frontend's does not), so a
module that opens the route right after starting the desktop retries that one
refusal for a while; any other refusal is the test's error at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.wayland.portal import PortalUnavailableError
from holodesk.platform.wayland.portal_route import open_portal_route
from holodesk.platform.wayland.tokens import TokenStore
from tests.platform.wayland.desktops import HeadlessDesktop

READY_TIMEOUT_S = 30.0


def open_kde_route(desktop: HeadlessDesktop, tokens: TokenStore, **options: Any) -> Backend:
    """`open_portal_route` on the desktop (`options` are its own; by default in the desktop's
    environment, so the route reads its keymap), once KDE's portal is ready."""
    options.setdefault("environ", desktop.environ())
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            return open_portal_route(desktop.bus_address, tokens, consent_timeout_s=30, **options)
        except PortalUnavailableError as error:
            if "Invalid session" not in error.cause or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextmanager
def kde_route(
    desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory, **options: Any
) -> Iterator[Backend]:
    """A module's route on its KDE (fresh tokens), closed when the module is done."""
    tokens = TokenStore(tmp_path_factory.mktemp("kde-state") / "tokens.json")
    opened = open_kde_route(desktop, tokens, **options)
    try:
        yield opened
    finally:
        opened.close()
