"""The chord denylist judges the key events that really reach the desktop.

Every key event of every action counts, with what is held at that moment: keys
held by earlier key_down actions, and keys an action synthesises itself (navigate's
ctrl+L and Enter, a typed line break). Checked on the fake backend's event list and
on the real X11 backend, as the Tk probe app on Xvfb reports the keys it received.
"""

from __future__ import annotations

import pytest

from holodesk.client import actions as a
from holodesk.client.capture import FrameCapturer
from holodesk.client.executor import ActionExecutor
from holodesk.client.frames import FrameSpec
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.safety.keygate import KeyGate
from holodesk.client.safety.settings import DEFAULT_DENIED_CHORDS
from holodesk.platform.backends import fake
from holodesk.platform.base import Backend, InputDriver
from tests.support.probe import CONTROL_MASK, MOD1_MASK, Event, ProbeApp

pytestmark = pytest.mark.abuse

OK, REJECTED, SKIPPED = a.ActionStatus.OK, a.ActionStatus.REJECTED, a.ActionStatus.SKIPPED
# The denylist alone: no hotkey, corner or rate limit in the way.
DENYLIST = SafetySettings(emergency_stop=None, fail_safe=False, max_actions_per_second=0)


def _executor(backend: Backend, settings: SafetySettings = DENYLIST) -> ActionExecutor:
    return ActionExecutor(backend, guard=SafetyGuard(settings, backend))


def _hold_ctrl_alt() -> list[a.Action]:
    return [a.KeyDown(action_id="d1", key="ctrl"), a.KeyDown(action_id="d2", key="alt")]


def _pressed_keys(events: list[fake.FakeEvent]) -> list[str]:
    return [e.key for e in events if isinstance(e, fake.Key) and e.down]


# -- the fake backend ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "chord"),
    [
        (a.Navigate(action_id="n", url="example.org"), "ctrl+alt+l"),  # navigate's ctrl+L
        (a.TypeText(action_id="t", text="x\x7f"), "ctrl+alt+delete"),
        (a.TypeText(action_id="t", text="\b"), "ctrl+alt+backspace"),
        (a.KeyChord(action_id="k", keys=("t",)), "ctrl+alt+t"),
    ],
)
def test_held_keys_and_an_actions_own_keys_make_one_chord(action: a.Action, chord: str) -> None:
    backend = fake.create()
    after = a.TypeText(action_id="after", text="z")
    report = _executor(backend).execute([*_hold_ctrl_alt(), action, after])
    assert [r.status for r in report.results] == [OK, OK, REJECTED, SKIPPED]
    assert report.results[2].error == f"the key chord {chord} is denied on this client"
    # Nothing but the two modifiers went down, no text went out, and they were released.
    assert _pressed_keys(backend.input.events) == ["ctrl", "alt"]
    assert not any(isinstance(e, fake.Text) for e in backend.input.events)
    assert backend.input.held() == ((), ())


def test_navigate_with_a_line_break_while_shift_is_held_is_judged_per_key() -> None:
    """A custom denial of shift+enter catches the Enter navigate presses after the URL."""
    backend = fake.create()
    settings = SafetySettings(
        emergency_stop=None,
        fail_safe=False,
        max_actions_per_second=0,
        denied_chords=("shift+enter",),
    )
    report = _executor(backend, settings).execute(
        [a.KeyDown(action_id="s", key="shift"), a.Navigate(action_id="n", url="example.org")]
    )
    assert [r.status for r in report.results] == [OK, REJECTED]
    assert report.results[1].error == "the key chord shift+enter is denied on this client"


def test_an_uppercase_letter_is_typed_with_shift() -> None:
    backend = fake.create()
    settings = SafetySettings(
        emergency_stop=None,
        fail_safe=False,
        max_actions_per_second=0,
        denied_chords=("ctrl+shift+t",),
    )
    executor = _executor(backend, settings)
    report = executor.execute(
        [a.KeyDown(action_id="c", key="ctrl"), a.TypeText(action_id="t1", text="T")]
    )
    assert [r.status for r in report.results] == [OK, REJECTED]
    report = executor.execute(
        [a.KeyDown(action_id="c2", key="ctrl"), a.TypeText(action_id="t2", text="t")]
    )
    assert [r.status for r in report.results] == [OK, OK]


def test_a_clicks_modifiers_count_with_the_held_keys() -> None:
    backend = fake.create()
    executor = _executor(backend)
    frame = FrameCapturer(backend.screen, FrameSpec(max_width=1280, max_height=800)).capture()
    executor.remember_frame(frame)
    click = a.Click(
        action_id="c", frame_id=frame.frame_id, point=a.FramePoint(10, 10), modifiers=("l",)
    )
    report = executor.execute([*_hold_ctrl_alt(), click])
    assert [r.status for r in report.results] == [OK, OK, REJECTED]
    assert not any(isinstance(e, fake.Button) for e in backend.input.events)


def test_ordinary_input_passes_the_gate_unchanged() -> None:
    backend = fake.create()
    report = _executor(backend).execute(
        [
            a.Navigate(action_id="n", url="example.org"),
            a.KeyDown(action_id="s", key="shift"),
            a.TypeText(action_id="t", text="Hello\n"),
            a.KeyUp(action_id="u", key="shift"),
            a.KeyChord(action_id="k", keys=("ctrl", "s")),
        ]
    )
    assert [r.status for r in report.results] == [OK] * 5
    assert fake.Text("example.org") in backend.input.events
    assert fake.Text("Hello\n") in backend.input.events


@pytest.mark.parametrize(
    "keys",
    [
        ("ctrl", "alt", "t"),  # a terminal (GNOME, Ubuntu)
        ("alt", "F2"),  # the run dialog (GNOME, KDE, Xfce)
        ("super", "r"),  # the run dialog (Windows)
        ("alt", "printscreen", "b"),  # magic SysRq: reboot
        ("ctrl", "shift", "escape"),  # the task manager's "run new task"
    ],
)
def test_the_default_list_refuses_the_usual_ways_to_a_shell(keys: tuple[str, ...]) -> None:
    backend = fake.create()
    report = _executor(backend).execute([a.KeyChord(action_id="k", keys=keys)])
    assert [r.status for r in report.results] == [REJECTED]
    assert backend.input.events == []


def test_the_defaults_stay_configurable() -> None:
    backend = fake.create()
    settings = SafetySettings(
        emergency_stop=None,
        fail_safe=False,
        max_actions_per_second=0,
        denied_chords=tuple(c for c in DEFAULT_DENIED_CHORDS if c != "ctrl+alt+t"),
    )
    report = _executor(backend, settings).execute(
        [a.KeyChord(action_id="k", keys=("ctrl", "alt", "t"))]
    )
    assert [r.status for r in report.results] == [OK]


@pytest.mark.parametrize(
    ("os", "denied"), [("darwin", False), ("linux", True), ("windows", True), ("vnc", True)]
)
def test_meta_l_is_cmd_l_on_macos_where_navigate_presses_it(os: str, denied: bool) -> None:
    """The default list denies meta+l (a screen lock) except on macOS, where it is the
    address bar that navigate on a desktop presses; a VNC desktop may be any OS."""
    backend = fake.create(os=os)
    report = _executor(backend).execute(
        [
            a.Navigate(action_id="n", url="example.org"),
            a.KeyChord(action_id="k", keys=("meta", "l")),
        ]
    )
    assert [r.status for r in report.results] == [OK, REJECTED if denied else OK]


def test_a_chord_named_by_the_user_applies_everywhere() -> None:
    backend = fake.create(os="darwin")
    settings = SafetySettings(
        emergency_stop=None, fail_safe=False, max_actions_per_second=0, denied_chords=("meta+l",)
    )
    report = _executor(backend, settings).execute([a.KeyChord(action_id="k", keys=("cmd", "l"))])
    assert [r.status for r in report.results] == [REJECTED]
    with pytest.raises(ValueError, match="name the targets"):
        SafetySettings(denied_chords=("meta+l except ",))


def test_the_gate_passes_on_every_public_method_of_the_driver() -> None:
    """A method added to InputDriver later must be forwarded by the gate too, or the
    gate would run the base class's copy on its own state instead of the backend's."""
    public = {n for n in vars(InputDriver) if not n.startswith("_")}
    assert public <= set(vars(KeyGate)), sorted(public - set(vars(KeyGate)))


# -- the real X11 backend --------------------------------------------------------------


def _ctrl_alt_presses(events: list[Event]) -> list[str]:
    both = CONTROL_MASK | MOD1_MASK
    return [
        str(e["keysym"]).lower()
        for e in events
        if e["type"] == "key" and int(e["state"]) & both == both
    ]


@pytest.mark.x11
@pytest.mark.parametrize(
    "action",
    [
        a.Navigate(action_id="n", url="example.org"),
        a.KeyChord(action_id="k", keys=("l",)),
        a.TypeText(action_id="t", text="lt"),
    ],
)
def test_on_x11_no_denied_chord_reaches_the_app(
    x11: Backend, probe: ProbeApp, action: a.Action
) -> None:
    x11.input.click(*probe.widgets["entry"].center)
    probe.wait_for_event("focus", widget="entry")
    report = _executor(x11).execute([*_hold_ctrl_alt(), action])
    assert [r.status for r in report.results] == [OK, OK, REJECTED]
    # A marker typed afterwards: once it arrives, everything sent before it has too.
    assert [
        r.status for r in _executor(x11).execute([a.TypeText(action_id="m", text="done")]).results
    ] == [OK]
    events = probe.wait_for(lambda _: probe.entry_text().endswith("done"))
    assert _ctrl_alt_presses(events) == []
    assert x11.input.held() == ((), ())
