"""The flags that choose and open a platform backend, shared by the commands that
drive a desktop (`run`, `replay`): which backend, and for the web backend its page."""

from __future__ import annotations

import argparse
from typing import Any

from holodesk.platform.select import chosen_backend_name


def add_backend_arguments(parser: argparse.ArgumentParser, url_help: str) -> None:
    parser.add_argument("--backend", help="platform backend (default: this OS's own)")
    parser.add_argument("--url", help=url_help)


def url_options(name: str | None, url: str | None) -> dict[str, Any]:
    """open_backend's options for --url: the web backend's first page; ValueError for
    another backend (it has no page to open)."""
    if chosen_backend_name(name) != "web":
        if url:
            raise ValueError("--url is for the web backend (--backend web)")
        return {}
    return {"url": url} if url else {}
