"""Navigation for the web target: load a URL in the page, read the URL shown."""

from __future__ import annotations

import ipaddress
import re

from holodesk.platform.base import Navigator
from holodesk.platform.errors import NavigationError
from holodesk.platform.web.page import WebPage

_HAS_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://")
# Schemes written without "//".
_OPAQUE_SCHEMES = ("about:", "data:", "blob:")
_LOCAL_HOSTS = ("localhost",)


def normalize_url(url: str) -> str:
    """The URL to load; a bare host ("example.org/a") gets a scheme, as an address bar adds.

    Local hosts (localhost, loopback and private addresses) get http, others https.
    """
    text = url.strip()
    if not text:
        raise NavigationError("the URL is empty")
    if any(char.isspace() for char in text):
        raise NavigationError(f"{url!r} is not a URL: it contains whitespace")
    lowered = text.lower()
    if lowered.startswith("javascript:"):
        raise NavigationError("javascript: URLs are not loaded; act on the page instead")
    if _HAS_SCHEME.match(text) or lowered.startswith(_OPAQUE_SCHEMES):
        return text
    return f"{'http' if _is_local(text) else 'https'}://{text}"


def _is_local(address: str) -> bool:
    host = address.split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    else:
        host = host.split(":", 1)[0]
    if host.lower() in _LOCAL_HOSTS:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_unspecified


class WebNavigator(Navigator):
    def __init__(self, page: WebPage, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self._page = page
        self._timeout_s = timeout_s

    def navigate(self, url: str) -> None:
        self._page.navigate(normalize_url(url), self._timeout_s)

    def current_url(self) -> str:
        return self._page.url()
