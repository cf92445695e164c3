"""The platform tests' set-up (their `x11` and `probe` fixtures are tests/conftest.py's)."""

from __future__ import annotations

import sys

import pytest

# Before the test modules import it: its checks' failures then show the values compared.
pytest.register_assert_rewrite("tests.platform.conformance")

# The X11 modules import python-xlib, a Linux-only dependency.
collect_ignore_glob = [] if sys.platform.startswith("linux") else ["test_x11_*.py"]
