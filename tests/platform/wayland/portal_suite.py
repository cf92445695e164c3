"""The checks every real portal desktop runs (mutter, KWin): frames, then the conformance suite.

A module imports `probe` and the `test_*` functions below and provides two
module fixtures: `desktop` (a HeadlessDesktop) and `backend` (the portal route
opened on it). The app is one Tk probe per module (reset before each case:
fields emptied, focus back on its window, only later records counted) on the
compositor's XWayland: its input
comes from the compositor's seat, which the portal's NotifyPointer* and
NotifyKeyboardKeysym calls feed, as every app's does.

`conformance(limits, refused)` makes the suite's test for one compositor: `limits`
maps a case id to what that compositor itself cannot do through the portal (a
strict xfail, so a compositor that learns it makes the case fail until the entry
goes; its waits are cut to KNOWN_LIMIT_WAIT_S); `refused`, to the InputError the
route must raise instead, before sending anything (keys the desktop's keymap
lacks, which the compositor would drop without a word: `check_refused`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from PIL import Image

from holodesk.platform.base import Backend, MouseButton, Region
from holodesk.platform.errors import InputError
from tests.platform.conformance import (
    CASES,
    Case,
    Field,
    Motion,
    Observed,
    Press,
    Target,
    TkTarget,
    tk_observed,
)
from tests.platform.wayland.desktops import HeadlessDesktop
from tests.support.probe import Event, ProbeApp, server_key_names


def rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


def colours(image: Image.Image) -> set[Any]:
    return {image.getpixel((x, y)) for x in range(image.width) for y in range(image.height)}


def _swatch_inside(app: ProbeApp) -> Region:
    swatch = app.widgets["swatch"]
    return Region(swatch.x + 5, swatch.y + 5, swatch.width - 10, 20)


# A case in a compositor's `limits` waits this long, not the suite's 10 to 30 s: what
# the probe does receive arrives within 0.5 s here (the slowest passing case), so a
# compositor that learns the case still turns its strict xfail into a failure, and
# the 17 known limits cost 2 s each instead of about 12 s.
KNOWN_LIMIT_WAIT_S = 2.0

_PROBE_FIELDS: Mapping[Field, str] = {"line": "entry", "lines": "area"}


class SettledTarget(TkTarget):
    """The module's Tk probe, seen from one case: only the records after `skip` count.

    The probe serves every case of a module (starting one per case cost about 3 s
    each on mutter), so what a case observes, whether OK was pushed and which
    focus changes it waits for start at the offset taken once its reset and its
    settling click are logged.
    """

    def __init__(self, backend: Backend, probe: ProbeApp, skip: int) -> None:
        super().__init__(backend, probe)
        self._skip = skip
        # Set for a case the compositor is known not to do (a strict xfail): how long
        # its waits last (see KNOWN_LIMIT_WAIT_S).
        self.wait_cap_s: float | None = None

    def wait(self, done: Callable[[], object], what: str, timeout_s: float = 10.0) -> None:
        if self.wait_cap_s is not None:
            timeout_s = min(timeout_s, self.wait_cap_s)
        super().wait(done, what, timeout_s)

    def _events(self) -> list[Event]:
        return self.probe.events()[self._skip :]

    def observed(self) -> list[Observed]:
        return tk_observed(server_key_names(self._events(), self.probe.display))

    def pushed(self) -> bool:
        return any(event["type"] == "command" for event in self._events())

    def focus(self, field: Field) -> None:
        widget = _PROBE_FIELDS[field]
        self.backend.input.click(*self.probe.widgets[widget].center)
        self.wait(
            lambda: any(e["type"] == "focus" and e["widget"] == widget for e in self._events()),
            f"the {widget} field to take the focus",
        )


@pytest.fixture(scope="module")
def probe(
    desktop: HeadlessDesktop, backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProbeApp]:
    """The module's Tk probe on the desktop's XWayland, shown where it stays."""
    log = tmp_path_factory.mktemp("probe") / "probe.log"
    app = ProbeApp.start(desktop.x_display, log, x=40, y=30)
    try:
        # Input during a map animation is lost: wait until the screen shows the window
        # drawn in place.
        region = _swatch_inside(app)
        TkTarget(backend, app).wait(
            lambda: colours(backend.screen.grab(region)) == {rgb(app.colors["swatch"])},
            "the probe window drawn in place",
        )
        yield app
    finally:
        app.stop()


def reset(probe: ProbeApp) -> None:
    """Empty the probe's fields and give its window the focus, as a fresh one would be."""
    done = len(probe.events("reset"))
    probe.log_path.with_name(probe.log_path.name + ".reset").touch()
    probe.wait_for(lambda events: sum(e["type"] == "reset" for e in events) > done)


@pytest.fixture
def target(backend: Backend, probe: ProbeApp) -> Iterator[SettledTarget]:
    """The probe, reset, once a click on its label has arrived whole (so clicks land now).

    The backend is the module's: whatever a failed check left held is released
    afterwards, so one failure stays one.
    """
    reset(probe)
    label = probe.widgets["label"].center
    released = Press("release", MouseButton.LEFT, *label)
    deadline = time.monotonic() + 20
    while True:
        # Only this attempt's records: an earlier case's release on the label is not one.
        whole = SettledTarget(backend, probe, len(probe.events()))
        backend.input.click(*label)

        def arrived(attempt: SettledTarget = whole) -> bool:
            return released in attempt.of(Press)

        try:
            whole.wait(arrived, "a click on the label", timeout_s=1)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    try:
        yield SettledTarget(backend, probe, len(probe.events()))
    finally:
        backend.input.release_all()


def test_displays_come_from_the_stream(desktop: HeadlessDesktop, backend: Backend) -> None:
    (display,) = backend.screen.displays()
    assert display.bounds == Region(0, 0, desktop.width, desktop.height)
    assert display.scale_factor == 1.0


def test_frames_show_the_probe_window(backend: Backend, probe: ProbeApp) -> None:
    region = _swatch_inside(probe)
    image = backend.screen.grab(region)
    assert image.mode == "RGB"
    assert image.size == (region.width, region.height)
    assert colours(image) == {rgb(probe.colors["swatch"])}
    # Pixel positions kept: window colour, then swatch colour, across its left edge.
    swatch = probe.widgets["swatch"]
    row = backend.screen.grab(Region(swatch.x - 4, swatch.y + 10, 8, 1))
    assert [row.getpixel((i, 0)) for i in range(8)] == (
        [rgb(probe.colors["window"])] * 4 + [rgb(probe.colors["swatch"])] * 4
    )


def test_frames_follow_what_input_changes(
    backend: Backend, probe: ProbeApp, target: SettledTarget
) -> None:
    entry = probe.widgets["entry"]
    box = Region(entry.x + 2, entry.y + 2, entry.width - 4, entry.height - 4)
    before = backend.screen.grab(box).tobytes()
    target.focus("line")
    backend.input.type_text("WWWWWWWW")
    target.wait_text("line", "WWWWWWWW")
    target.wait(lambda: backend.screen.grab(box).tobytes() != before, "the typed text in a frame")


def test_drag_path(backend: Backend, target: SettledTarget) -> None:
    # The conformance check wants every point of a fast drag as a motion event; here
    # motions that arrive close together are merged on the way (the compositor batches
    # them per frame, and Tk on XWayland collapses a batch it is handed), so the app
    # must see a part of the path, in order, ending where the drag ends, with the
    # button held throughout.
    pad = target.pad()
    path = [(pad.x + 20 + 40 * i, pad.y + 30 + 25 * i) for i in range(6)]
    backend.input.drag(path, duration_s=0.5)
    target.wait(lambda: [p for p in target.of(Press) if p.kind == "release"], "the release")
    assert target.of(Press) == [
        Press("press", MouseButton.LEFT, *path[0]),
        Press("release", MouseButton.LEFT, *path[-1]),
    ]
    held = [(m.x, m.y) for m in target.of(Motion) if m.left_held]
    assert held
    assert held[-1] == path[-1]
    remaining = iter(path[1:])
    assert all(point in remaining for point in held), f"{held} is not a part of {path}"


# What the portal route refuses on a desktop whose keymap is the stock US one (mutter 43's
# and KWin 5.27's here), naming the first keys each case needs that would not arrive:
# characters no key has, keys the portal would type as others, a key beyond XWayland.
US_KEYMAP_REFUSALS = {
    "held-character-without-a-key": r"layout has no key for: 'ß' \(U\+00DF\)\. Nothing",
    "unicode-text": (
        r"has no key for: 'é' \(U\+00E9\), 'ö' \(U\+00F6\), 'ñ' \(U\+00F1\), '日' "
        r"\(U\+65E5\), '本' \(U\+672C\); these are only on a key above keycode 255, which X11 "
        r"apps on XWayland never receive: '€' \(U\+20AC\)\. Nothing"
    ),
    "format-characters": (
        r"has no key for: U\+200D ZERO WIDTH JOINER, U\+200C ZERO WIDTH NON-JOINER, U\+200E "
        r"LEFT-TO-RIGHT MARK, U\+200F RIGHT-TO-LEFT MARK, U\+E0041 TAG LATIN CAPITAL LETTER A\."
    ),
    # The stock keymap's KEY_REFRESH and KEY_STOP are XF86Reload and Cancel.
    "browser-keys": r"has no key for: the browser_refresh key\. Nothing",
    # KP_0 is Num Lock's level of KP_Insert's key, and both desktops press Shift for it:
    # KP_Insert would arrive (the case's xfail before: "KP_Decimal arrives as
    # Shift+KP_Delete").
    "keypad-keys": (
        r"the key the portal would press for these types something else: the kp_0 key\. Nothing"
    ),
}


def check_refused(case: Case, target: Target, pattern: str) -> None:
    """`case` ends in the InputError `pattern` matches, which names the desktop and its
    layout, and nothing of the refused input reached the app: every case refused
    here works in the one-line field, and a "d" typed next arrives alone."""
    with pytest.raises(InputError, match=pattern) as raised:
        case.run(target)
    # Read from the compositor, not assumed.
    assert "its keyboard layout (English (US)) has a key for" in str(raised.value), raised.value
    assert target.backend.input.held() == ((), ())
    target.backend.input.type_text("d")
    assert target.wait_text("line", "d") == "d"


def conformance(
    limits: Mapping[str, str], refused: Mapping[str, str] | None = None
) -> Callable[..., None]:
    """The conformance suite over CASES for the module's `backend`, with `limits` xfailed
    and `refused` (case id: a pattern of the InputError) checked by `check_refused`.

    drag-path runs as test_drag_path above (close motions are merged on the way).
    """
    refusals = dict(refused or {})
    unknown = (set(limits) | set(refusals)) - {case.id for case in CASES}
    if unknown:
        raise ValueError(f"no conformance cases named {sorted(unknown)}")

    def marks(case: Case) -> Any:
        if case.id == "drag-path":
            return pytest.mark.skip(reason="test_drag_path checks it: motions are merged")
        if case.id in limits:
            return pytest.mark.xfail(reason=limits[case.id], strict=True)
        return ()

    @pytest.mark.parametrize(
        "case", [pytest.param(case, id=case.id, marks=marks(case)) for case in CASES]
    )
    def test_conformance(case: Case, target: SettledTarget) -> None:
        if case.id in refusals:
            check_refused(case, target, refusals[case.id])
            return
        if case.id in limits:
            target.wait_cap_s = KNOWN_LIMIT_WAIT_S
        case.run(target)

    return test_conformance
