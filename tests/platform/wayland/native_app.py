"""The GTK conformance app (tests/apps/gtk_conformance_app.py) as a native Wayland client of a
headless desktop (mutter), fullscreen, so its surface is the output: (0, 0) and the
output's size.

mutter places and animates new windows itself and GTK draws its own title bar and
shadow there, and a Wayland client never learns where its window is; fullscreen
leaves neither, so the app's surface-local positions are the output's pixels (at
scale 1), as on sway where the test floats the window at a known place. The
records are read by the wlroots suite's GtkTarget (tests/platform/wlroots/gtk_target.py).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from holodesk.platform.base import Backend, Region
from tests.platform.conformance import CASES, Case, Motion
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.platform.wayland.portal_suite import KNOWN_LIMIT_WAIT_S, check_refused
from tests.platform.wlroots.gtk_probe import (
    INSTALL_FIX,
    SYSTEM_PYTHON,
    GtkProbe,
    GtkUnavailableError,
)
from tests.platform.wlroots.gtk_target import APP, APP_ID, GtkTarget

SETTLE_TIMEOUT_S = 20.0


def start_native_app(desktop: HeadlessDesktop, log_path: Path) -> GtkProbe:
    """The app on `desktop`'s compositor, once it logged being made fullscreen."""
    check = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0')"],
        capture_output=True,
        check=False,
    )
    if check.returncode != 0:
        raise GtkUnavailableError(f"GTK 3 for Python is missing: {INSTALL_FIX}")
    log_path.write_text("")
    runtime = Path(tempfile.mkdtemp(prefix="holodesk-gtk-"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(runtime),
        "XDG_RUNTIME_DIR": str(runtime),
        "WAYLAND_DISPLAY": str(desktop.runtime_dir / desktop.wayland_display),
        "GDK_BACKEND": "wayland",
        "NO_AT_BRIDGE": "1",
    }
    process = subprocess.Popen([SYSTEM_PYTHON, str(APP), str(log_path), "--fullscreen"], env=env)
    window = Region(0, 0, desktop.width, desktop.height)
    app = GtkProbe(process, log_path, runtime, window, APP_ID)
    try:
        app.wait(lambda: app.events("ready") and app.events("fullscreen"), "the app fullscreen")
    except BaseException:
        app.stop()
        raise
    return app


class NativeTarget(GtkTarget):
    """GtkTarget whose waits a known compositor limit cuts short (`wait_cap_s`, as
    portal_suite's SettledTarget does for the Tk probe)."""

    wait_cap_s: float | None = None

    def wait(self, done: Callable[[], object], what: str, timeout_s: float = 10.0) -> None:
        if self.wait_cap_s is not None:
            timeout_s = min(timeout_s, self.wait_cap_s)
        super().wait(done, what, timeout_s)


def settled_target(backend: Backend, app: GtkProbe) -> NativeTarget:
    """A target whose records start once a motion lands where it was aimed.

    GtkTarget's warm-up waits for any motion; on mutter the first ones can come
    while the window is still being made fullscreen (mapped where mutter placed it,
    then moved), so this also waits until a motion arrives at the aimed pixel.
    """
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    step = 0
    while True:
        target = NativeTarget(backend, app)
        pad = target.pad()
        step = step % 20 + 1
        aimed = Motion(pad.x + 30 + step, pad.y + 20 + step, False)
        backend.input.move(aimed.x, aimed.y)
        try:
            target.wait(_arrived(target, aimed), f"a motion at {aimed}", timeout_s=1)
            return NativeTarget(backend, app)  # its records start after this one
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def _arrived(target: GtkTarget, motion: Motion) -> Callable[[], bool]:
    return lambda: motion in target.of(Motion)


# The fixtures and the suite below serve every native module (mutter's, KWin's): each
# gives its own `desktop` and `backend` fixtures and imports these.


@pytest.fixture
def native_app(desktop: HeadlessDesktop, tmp_path: Path) -> Iterator[GtkProbe]:
    """A fresh fullscreen app per case on the module's desktop."""
    try:
        app = start_native_app(desktop, tmp_path / "gtk.log")
    except GtkUnavailableError as error:
        pytest.fail(f"the native Wayland app cannot run here: {error}")
    yield app
    app.stop()


@pytest.fixture
def target(backend: Backend, native_app: GtkProbe) -> Iterator[NativeTarget]:
    """The app, settled; whatever a failed check left held is released afterwards."""
    try:
        yield settled_target(backend, native_app)
    finally:
        backend.input.release_all()


def native_conformance(
    limits: Mapping[str, str], refused: Mapping[str, str] | None = None
) -> Callable[..., None]:
    """The conformance suite over CASES (drag-path too: the native app gets every
    motion) on the module's `backend`, with `limits` xfailed, strictly, and `refused`
    (case id: a pattern of the InputError) checked by portal_suite's `check_refused`."""
    refusals = dict(refused or {})
    unknown = (set(limits) | set(refusals)) - {case.id for case in CASES}
    if unknown:
        raise ValueError(f"no conformance cases named {sorted(unknown)}")

    def marks(case: Case) -> tuple[pytest.MarkDecorator, ...]:
        if case.id in limits:
            return (pytest.mark.xfail(reason=limits[case.id], strict=True),)
        return ()

    @pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=marks(c)) for c in CASES])
    def test_conformance(case: Case, target: NativeTarget) -> None:
        if case.id in refusals:
            check_refused(case, target, refusals[case.id])
            return
        if case.id in limits:
            target.wait_cap_s = KNOWN_LIMIT_WAIT_S
        case.run(target)

    return test_conformance
