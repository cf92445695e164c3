"""OSWorld's browser metrics: is_expected_active_tab, is_expected_url_pattern_match,
is_expected_tabs (on what the browser getters read)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse, urlunparse


def _url(value: Any) -> str | None:
    if isinstance(value, Mapping):
        url = value.get("url")
        return None if url is None else str(url)
    return None if value is None else str(value)


def _without_query(url: str) -> str:
    return urlunparse(urlparse(url)._replace(query=""))


def is_expected_active_tab(active_tab_info: Any, rule: Mapping[str, Any]) -> float:
    """The active tab's URL is rule["url"], the query left out (OSWorld's current rule)."""
    url = _url(active_tab_info)
    if url is None or rule.get("type") != "url":
        return 0.0
    return float(_without_query(str(rule["url"])) == _without_query(url))


def is_expected_url_pattern_match(result: Any, rules: Mapping[str, Any]) -> float:
    url = _url(result)
    if url is None:
        return 0.0
    return float(all(re.search(str(p), url) for p in rules["expected"]))


def is_expected_tabs(open_tabs: Any, rule: Mapping[str, Any]) -> float:
    if not isinstance(open_tabs, list) or rule.get("type") != "url":
        return 0.0
    return float([_url(t) for t in open_tabs] == list(rule["urls"]))


METRICS: Mapping[str, Callable[..., float]] = {
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
    "is_expected_tabs": is_expected_tabs,
}
