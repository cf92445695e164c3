"""DPI awareness comes first, geometry is physical, captures are exact.

Windows cannot run here: FakeWinApi stands in for the OS calls, records their order
and answers as Windows would at each awareness level.
"""

from __future__ import annotations

import pytest
from PIL import Image

from holodesk.platform.base import Backend, Grab, Region
from holodesk.platform.errors import BackendUnavailableError, CaptureError
from holodesk.platform.windows import backend as win32
from holodesk.platform.windows.api import DpiAwareness, Monitor
from holodesk.platform.windows.blocked import BlockedInput, explain
from holodesk.platform.windows.dpi import enable_per_monitor_awareness
from tests.platform.windows.conftest import MONITORS
from tests.platform.windows.fake_api import DpiBehaviour, FakeWinApi

GEOMETRY_CALLS = {"monitors", "virtual_screen", "system_dpi", "capture", "cursor_position"}


def test_per_monitor_v2_is_set_before_any_geometry_call() -> None:
    api = FakeWinApi(MONITORS)
    backend = win32.create(api=api)
    backend.screen.displays()
    backend.screen.grab(Region(0, 0, 10, 10))
    assert api.calls[0] == "SetProcessDpiAwarenessContext"
    assert api.awareness == DpiAwareness.PER_MONITOR_V2
    first_geometry = min(i for i, call in enumerate(api.calls) if call in GEOMETRY_CALLS)
    assert "SetProcessDpiAwareness" not in api.calls  # no older call once v2 worked
    assert first_geometry > 0
    assert (backend.name, backend.os) == ("win32", "windows")


@pytest.mark.parametrize(
    ("behaviour", "expected", "tried"),
    [
        # Windows 8.1 / 10 before 1703: no v2, per-monitor v1.
        (
            DpiBehaviour(v2=None),
            DpiAwareness.PER_MONITOR,
            ["SetProcessDpiAwarenessContext", "SetProcessDpiAwareness"],
        ),
        # Windows 7: only system awareness.
        (
            DpiBehaviour(v2=None, v1=None),
            DpiAwareness.SYSTEM,
            ["SetProcessDpiAwarenessContext", "SetProcessDpiAwareness", "SetProcessDPIAware"],
        ),
        # Already set to v2 by a manifest: refused, and nothing older is tried.
        (
            DpiBehaviour(v2=False, initial=DpiAwareness.PER_MONITOR_V2),
            DpiAwareness.PER_MONITOR_V2,
            ["SetProcessDpiAwarenessContext"],
        ),
    ],
)
def test_awareness_falls_back_only_where_newer_calls_are_missing(
    behaviour: DpiBehaviour, expected: DpiAwareness, tried: list[str]
) -> None:
    api = FakeWinApi(MONITORS, dpi=behaviour)
    assert enable_per_monitor_awareness(api) == expected
    assert [call for call in api.calls if call.startswith("SetProcess")] == tried


def test_system_awareness_with_mixed_scales_is_refused_with_the_fix() -> None:
    # Something set system awareness first: Windows would rescale two of the monitors.
    api = FakeWinApi(MONITORS, dpi=DpiBehaviour(v2=False, initial=DpiAwareness.SYSTEM))
    with pytest.raises(BackendUnavailableError) as raised:
        win32.create(api=api)
    [(cause, fix)] = raised.value.causes
    assert "only system DPI aware" in cause
    assert r"\\.\DISPLAY1 at 200%" in cause
    assert r"\\.\DISPLAY3 at 150%" in cause
    assert "before anything else in this process sets DPI awareness" in fix
    assert "Override high DPI scaling" in fix
    assert api.closed


def test_system_awareness_is_enough_when_every_monitor_has_one_scale() -> None:
    same = [Monitor(m.device, m.bounds, m.primary, dpi=120) for m in MONITORS]
    api = FakeWinApi(same, dpi=DpiBehaviour(v2=None, v1=None))
    backend = win32.create(api=api)
    assert {d.scale_factor for d in backend.screen.displays()} == {1.25}


def test_an_unaware_process_on_a_scaled_monitor_is_refused() -> None:
    api = FakeWinApi(MONITORS[:1], dpi=DpiBehaviour(v2=None, v1=None, system=None))
    with pytest.raises(BackendUnavailableError, match="not DPI aware and a monitor is scaled"):
        win32.create(api=api)


def test_monitors_without_a_dpi_use_the_system_dpi() -> None:
    old = [Monitor(r"\\.\DISPLAY1", Region(0, 0, 1920, 1080), True, dpi=None)]
    api = FakeWinApi(old, dpi=DpiBehaviour(v2=None, v1=None), system_dpi=144)
    [display] = win32.create(api=api).screen.displays()
    assert display.scale_factor == 1.5


def test_displays_are_physical_primary_first_with_device_names(backend: Backend) -> None:
    displays = backend.screen.displays()
    assert [d.display_id for d in displays] == [r"\\.\DISPLAY1", r"\\.\DISPLAY2", r"\\.\DISPLAY3"]
    assert [d.primary for d in displays] == [True, False, False]
    assert [d.scale_factor for d in displays] == [2.0, 1.0, 1.5]
    assert [d.name for d in displays] == ["Dell U2720Q", "HP E24", "LG 27"]
    assert displays[1].bounds == Region(-1920, 540, 1920, 1080)
    assert backend.screen.virtual_desktop() == Region(-1920, -1440, 5760, 3600)
    # Ids are the device names Windows keeps while the monitor stays connected.
    assert [d.display_id for d in backend.screen.displays()] == [d.display_id for d in displays]


def test_grab_captures_the_region_as_asked(backend: Backend, api: FakeWinApi) -> None:
    image = backend.screen.grab(Region(-1920, 540, 1920, 1080))
    assert image.size == (1920, 1080)
    assert image.mode == "RGB"
    assert api.captures == [Region(-1920, 540, 1920, 1080)]
    assert image.getpixel((0, 0)) == (-1920 % 256, 540 % 256, 7)


def test_grab_outside_the_virtual_desktop_is_refused(backend: Backend) -> None:
    with pytest.raises(ValueError, match="inside"):
        backend.screen.grab(Region(-1930, 0, 20, 20))


def test_a_scaled_capture_is_an_error_not_a_silent_resample(api: FakeWinApi) -> None:
    backend = win32.create(api=api)

    def scaled(region: Region) -> Image.Image:
        return Image.new("RGB", (region.width * 2 // 3, region.height * 2 // 3))

    api.capture = scaled  # type: ignore[method-assign]
    with pytest.raises(CaptureError, match="not per-monitor DPI aware"):
        backend.screen.grab(Region(0, 0, 300, 300))


def test_closing_the_backend_releases_the_api(backend: Backend, api: FakeWinApi) -> None:
    backend.input.key_down("shift")
    backend.close()
    assert api.closed
    assert backend.input.held() == ((), ())


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (
            BlockedInput(4, 0, 5, "Winlogon", None, False),
            ["accepted 0 of 4", "'Winlogon' desktop", "locked", "UAC prompt", "in person"],
        ),
        (
            BlockedInput(2, 0, 0, None, None, True),
            ["a desktop this process cannot open", "secure desktop"],
        ),
        (
            BlockedInput(2, 1, 5, "Default", True, False),
            [
                "accepted 1 of 2",
                "runs elevated",
                "UIPI",
                "highest privileges",
                "administrator terminal",
            ],
        ),
        (
            BlockedInput(3, 0, 5, "Default", None, False),
            ["error 5: access denied", "most likely", "UIPI", "BlockInput", "highest privileges"],
        ),
    ],
)
def test_blocked_input_names_its_cause_and_fix(facts: BlockedInput, expected: list[str]) -> None:
    message = explain(facts)
    for part in expected:
        assert part in message


def test_an_elevated_client_is_not_told_to_elevate_for_an_elevated_window() -> None:
    message = explain(BlockedInput(1, 0, 0, "Default", True, True))
    assert "runs elevated (as administrator) and this client does not" not in message


def test_incremental_grabs_go_through_the_api_with_the_same_checks(api: FakeWinApi) -> None:
    backend = win32.create(api=api)
    area = Region(-1920, 540, 1920, 1080)
    first = backend.screen.grab_since(area)
    assert first.changed_rows is None  # the fake cannot tell: the encoder compares
    assert first.image.getpixel((0, 0)) == (-1920 % 256, 540 % 256, 7)
    told = Grab(area, first.image, ((3, 9),))

    def telling(region: Region, previous: Grab | None) -> Grab:
        assert (region, previous) == (area, first)
        return told

    api.capture_since = telling  # type: ignore[method-assign]
    assert backend.screen.grab_since(area, first) is told
    with pytest.raises(ValueError, match="inside"):
        backend.screen.grab_since(Region(-1930, 0, 20, 20), first)

    def scaled(region: Region, previous: Grab | None) -> Grab:
        return Grab(region, Image.new("RGB", (region.width * 2 // 3, region.height * 2 // 3)))

    api.capture_since = scaled  # type: ignore[method-assign]
    with pytest.raises(CaptureError, match="not per-monitor DPI aware"):
        backend.screen.grab_since(area, first)
