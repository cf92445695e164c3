"""The platform layer's errors say what is wrong and how to fix it."""

from __future__ import annotations

import pytest

from holodesk.platform.errors import (
    BackendUnavailableError,
    InputError,
    PlatformError,
    UnknownKeyError,
)


def test_backend_unavailable_lists_every_cause_with_its_fix() -> None:
    error = BackendUnavailableError(
        [("DISPLAY is not set", "export DISPLAY=:0"), ("python-xlib is missing", "uv sync")],
        backend="x11",
    )
    message = str(error)
    assert message.splitlines()[0] == "the 'x11' platform backend is unavailable:"
    assert "1. DISPLAY is not set" in message
    assert "fix: export DISPLAY=:0" in message
    assert "2. python-xlib is missing" in message
    assert "fix: uv sync" in message
    assert error.causes == [
        ("DISPLAY is not set", "export DISPLAY=:0"),
        ("python-xlib is missing", "uv sync"),
    ]


def test_backend_unavailable_needs_a_cause() -> None:
    with pytest.raises(ValueError, match="at least one"):
        BackendUnavailableError([])


def test_unknown_key_names_the_key_and_the_vocabulary() -> None:
    error = UnknownKeyError("hyper", ["ctrl", "shift", "f1..f24"])
    assert "'hyper'" in str(error)
    assert "ctrl, shift, f1..f24" in str(error)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("kind", [BackendUnavailableError, UnknownKeyError, InputError])
def test_every_error_is_a_platform_error(kind: type[Exception]) -> None:
    assert issubclass(kind, PlatformError)
