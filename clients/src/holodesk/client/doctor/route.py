"""The doctor's Wayland route finding: which route, why, and what a person must approve.

The platform layer decides (`holodesk.platform.wlroots.route`, which returns None
off Wayland, so this adds nothing there); this only turns its answer into a
finding: ok when nothing needs approving, warn when the desktop's dialog will
ask once, fail when no route works until someone grants what it says.
"""

from __future__ import annotations

from collections.abc import Mapping

from holodesk.client.doctor.findings import Finding, Status
from holodesk.platform.select import ENV_VAR
from holodesk.platform.wlroots.route import Route, wayland_route

ROUTE = "wayland route"


def check_route(backend: str | None, environ: Mapping[str, str]) -> Finding | None:
    """The route finding, or None when this is no Wayland session.

    `backend`: the backend asked for by name (--backend); it, or $HOLODESK_PLATFORM_BACKEND,
    overrides the automatic choice, and the finding says so.
    """
    route = wayland_route(environ)
    if route is None:
        return None
    detail = _describe(route)
    chosen = backend or environ.get(ENV_VAR, "").strip()
    if chosen:
        source = "--backend" if backend else ENV_VAR
        detail = f"{source} chose the {chosen} backend; without it: {detail}"
    if not route.usable:
        return Finding(ROUTE, Status.FAIL, detail, route.approval)
    if route.asks:
        return Finding(ROUTE, Status.WARN, detail, route.approval)
    return Finding(ROUTE, Status.OK, f"{detail}; to approve: {route.approval}")


def _describe(route: Route) -> str:
    if route.name == "none":
        return f"no route works: {route.why}"
    return f"{route.name} (the {route.backend} backend): {route.why}"
