"""Fixtures shared by every test folder (helpers live in tests/support)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.xvfb import xvfb as start_xvfb


@pytest.fixture(scope="session")
def xvfb() -> Iterator[str]:
    """A 1280x800x24 Xvfb for the whole session; DISPLAY points at it meanwhile."""
    with start_xvfb() as display, pytest.MonkeyPatch.context() as patch:
        patch.setenv("DISPLAY", display)
        yield display
