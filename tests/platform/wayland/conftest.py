"""Fixtures for the Wayland backend: a private session bus and a stand-in portal on Xvfb.

No Wayland compositor runs here, so the portal is tests/support/portal_standin.py,
which turns portal calls into XTest input on the session's Xvfb (see its docstring).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from holodesk.platform.base import Backend
from holodesk.platform.select import open_backend
from holodesk.platform.wayland.portal_keysyms import AnyKeysym
from holodesk.platform.wayland.tokens import TokenStore
from tests.support.dbus_session import dbus_daemon, private_session_bus

# The stand-in portal imports python-xlib (Linux only); the pure-logic tests run anywhere.
collect_ignore_glob = (
    []
    if sys.platform.startswith("linux")
    else ["test_wayland_portal_*.py", "test_wayland_uinput*.py"]
)

StartPortal = Callable[..., Any]
OpenWayland = Callable[..., Backend]


def _require_dbus() -> None:
    if dbus_daemon() is None:
        pytest.skip("dbus-daemon is not installed (apt-get install dbus)")


@pytest.fixture(scope="module")
def shared_bus() -> Iterator[str]:
    """One private session bus for a test module."""
    _require_dbus()
    with private_session_bus() as address:
        yield address


@pytest.fixture(scope="module")
def shared_portal(
    shared_bus: str, xvfb: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """A default stand-in portal (consent allowed, one monitor: the Xvfb screen)."""
    from tests.support.portal import PortalStandin

    portal = PortalStandin.start(shared_bus, xvfb, tmp_path_factory.mktemp("portal"))
    yield portal
    portal.stop()


@pytest.fixture(scope="module")
def shared_tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's restore-token file: consent is asked once per module, as for a user."""
    return tmp_path_factory.mktemp("state") / "tokens.json"


@pytest.fixture
def tokens(tmp_path: Path) -> TokenStore:
    """A test's own restore-token store, empty: nothing approved before."""
    return TokenStore(tmp_path / "tokens.json")


@pytest.fixture
def open_wayland(shared_portal: Any, shared_tokens: Path) -> OpenWayland:
    """Open the wayland backend, portal route, on the shared stand-in portal (caller closes).

    Frames through the Screenshot portal: the stand-in has no PipeWire stream. The
    stand-in binds a key for any keysym (as KWin 6 does), and has no compositor whose
    keymap could be read: nothing is refused (AnyKeysym).
    """

    def open_(**options: Any) -> Backend:
        return open_backend(
            "wayland",
            input="portal",
            bus_address=shared_portal.address,
            token_path=shared_tokens,
            **{"capture": "screenshot", "keysyms": AnyKeysym(), **options},
        )

    return open_


@pytest.fixture
def bus() -> Iterator[str]:
    """A fresh private session bus for one test (its portal, if any, is the test's)."""
    _require_dbus()
    with private_session_bus() as address:
        yield address


@pytest.fixture
def start_portal(bus: str, xvfb: str, tmp_path: Path) -> Iterator[StartPortal]:
    """Start a stand-in portal on the test's bus with options (see PortalStandin.start)."""
    from tests.support.portal import PortalStandin

    started: list[PortalStandin] = []

    def start(**options: Any) -> PortalStandin:
        portal = PortalStandin.start(bus, xvfb, tmp_path / f"portal{len(started)}", **options)
        started.append(portal)
        return portal

    yield start
    for portal in started:
        portal.stop()


# -- real headless desktops (mutter, KWin) with their portals -----------------------------
# (their marker, portal_desktop, is registered in pyproject.toml: tests/e2e uses it too)


def start_desktop(kind: str, **options: Any) -> Any:
    """HeadlessDesktop.start, failing the test (never skipping it) when it cannot start here."""
    from tests.platform.wayland.desktops import DesktopUnavailableError, HeadlessDesktop

    try:
        return HeadlessDesktop.start(kind, **options)
    except DesktopUnavailableError as error:
        pytest.fail(f"a headless {kind} desktop cannot start here: {error}")
