"""The client's safety rules, applied by the executor to the fake backend.

Every test runs real batches through ActionExecutor with a SafetyGuard and
checks the results the daemon would get and the input the desktop did (or did
not) receive.
"""

from __future__ import annotations

import threading

import pytest

from holodesk.client import actions as a
from holodesk.client.capture import FrameCapturer
from holodesk.client.executor import ActionExecutor
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.client.halt import Halt, HaltReason
from holodesk.client.prompt import NoUserError
from holodesk.client.safety import SafetyGuard, SafetySettings
from holodesk.client.safety.chords import parse_chord
from holodesk.client.safety.corner import corner_at
from holodesk.client.safety.rate import TokenBucket
from holodesk.client.safety.settings import DEFAULT_DENIED_CHORDS
from holodesk.platform.backends import fake

OK, FAILED = a.ActionStatus.OK, a.ActionStatus.FAILED
REJECTED, SKIPPED = a.ActionStatus.REJECTED, a.ActionStatus.SKIPPED
# Rules under test are switched on one at a time.
NOTHING = SafetySettings(emergency_stop=None, fail_safe=False, max_actions_per_second=0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def frame(backend: fake.FakeBackend) -> SentFrame:
    # The primary display (1280x800 at 0,0) sent as 640x400: frame (x, y) is (2x, 2y).
    return FrameCapturer(backend.screen, FrameSpec(max_width=640, max_height=640)).capture()


def _executor(
    backend: fake.FakeBackend, frame: SentFrame, settings: SafetySettings, **guard: object
) -> ActionExecutor:
    executor = ActionExecutor(backend, guard=SafetyGuard(settings, backend, **guard))  # type: ignore[arg-type]
    executor.remember_frame(frame)
    return executor


def _statuses(results: list[a.ActionResult]) -> list[a.ActionStatus]:
    return [r.status for r in results]


def _click(action_id: str, frame: SentFrame, x: float = 100, y: float = 100) -> a.Click:
    return a.Click(action_id=action_id, frame_id=frame.frame_id, point=a.FramePoint(x, y))


# -- allowlist --------------------------------------------------------------------------


def test_allowlist_rejects_other_kinds_with_a_reason(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    settings = SafetySettings(
        emergency_stop=None, fail_safe=False, allowed_kinds=frozenset({"click", "wait"})
    )
    report = _executor(backend, frame, settings).execute(
        [
            _click("c", frame),
            a.TypeText(action_id="t", text="rm -rf /"),
            a.Wait(action_id="w", duration_ms=0),
        ]
    )
    assert _statuses(report.results) == [OK, REJECTED, SKIPPED]
    assert report.results[1].error == (
        "type_text actions are not allowed on this client (allowed: click, wait)"
    )
    assert fake.Text("rm -rf /") not in backend.input.events


def test_allowlist_always_lets_a_session_end(backend: fake.FakeBackend, frame: SentFrame) -> None:
    settings = SafetySettings(emergency_stop=None, allowed_kinds=frozenset({"click"}))
    executor = _executor(backend, frame, settings)
    assert _statuses(executor.execute([a.Done(action_id="d", answer="x")]).results) == [OK]
    assert _statuses(executor.execute([a.Fail(action_id="f")]).results) == [OK]
    asked = executor.execute([a.AskUser(action_id="q", question="?")])
    assert _statuses(asked.results) == [REJECTED]
    assert asked.control is None


def test_unknown_kinds_in_settings_are_an_error() -> None:
    with pytest.raises(ValueError, match="unknown action kind"):
        SafetySettings(allowed_kinds=frozenset({"click", "format_disk"}))


# -- key-chord denylist -----------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [
        ("ctrl", "alt", "delete"),
        ("Control", "Alt", "Del"),  # any spelling
        ("alt", "ctrl", "delete"),  # any order
        ("super", "L"),  # meta+l, a capital letter too
        ("ctrl", "alt", "F2"),
    ],
)
def test_denied_chords_are_rejected_and_send_no_input(
    backend: fake.FakeBackend, frame: SentFrame, keys: tuple[str, ...]
) -> None:
    report = _executor(backend, frame, SafetySettings(emergency_stop=None)).execute(
        [a.KeyChord(action_id="k", keys=keys)]
    )
    assert _statuses(report.results) == [REJECTED]
    assert "is denied on this client" in report.results[0].error
    assert backend.input.events == []


def test_a_denied_chord_built_from_held_keys_is_rejected_and_they_are_released(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    """Proves: holding ctrl and alt with key_down, then pressing delete, is caught;
    and the batch's early end releases the keys it held."""
    report = _executor(backend, frame, SafetySettings(emergency_stop=None)).execute(
        [
            a.KeyDown(action_id="1", key="ctrl"),
            a.KeyDown(action_id="2", key="alt"),
            a.KeyChord(action_id="3", keys=("delete",)),
            a.TypeText(action_id="4", text="after"),
        ]
    )
    assert _statuses(report.results) == [OK, OK, REJECTED, SKIPPED]
    assert report.results[2].error == "the key chord ctrl+alt+delete is denied on this client"
    assert fake.Key("delete", True) not in backend.input.events
    assert backend.input.held() == ((), ())
    assert backend.input.events[-2:] == [fake.Key("alt", False), fake.Key("ctrl", False)]


def test_typing_while_a_modifier_is_held_counts_as_a_chord(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    executor = _executor(backend, frame, SafetySettings(emergency_stop=None))
    report = executor.execute(
        [a.KeyDown(action_id="1", key="meta"), a.TypeText(action_id="2", text="hello")]
    )
    assert _statuses(report.results) == [OK, REJECTED]
    assert "meta+l" in report.results[1].error
    # The same text without the modifier is fine.
    assert _statuses(executor.execute([a.TypeText(action_id="3", text="hello")]).results) == [OK]


def test_ordinary_chords_and_custom_denials(backend: fake.FakeBackend, frame: SentFrame) -> None:
    settings = SafetySettings(emergency_stop=None, denied_chords=(*DEFAULT_DENIED_CHORDS, "alt+f4"))
    report = _executor(backend, frame, settings).execute(
        [
            a.KeyChord(action_id="1", keys=("ctrl", "s")),
            a.KeyChord(action_id="2", keys=("ctrl", "shift", "t")),
            a.KeyChord(action_id="3", keys=("Alt", "F4")),
        ]
    )
    assert _statuses(report.results) == [OK, OK, REJECTED]


def test_an_empty_denylist_denies_nothing(backend: fake.FakeBackend, frame: SentFrame) -> None:
    settings = SafetySettings(emergency_stop=None, denied_chords=())
    report = _executor(backend, frame, settings).execute(
        [a.KeyChord(action_id="1", keys=("ctrl", "alt", "delete"))]
    )
    assert _statuses(report.results) == [OK]


def test_bad_chords_in_settings_are_an_error() -> None:
    with pytest.raises(ValueError, match="unknown key 'nokey'"):
        SafetySettings(denied_chords=("ctrl+nokey",))
    with pytest.raises(ValueError, match="joined by"):
        parse_chord("ctrl++")


# -- rate limit -------------------------------------------------------------------------


def test_token_bucket_waits_grow_with_debt() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=4.0, burst=2, clock=clock)
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.0, 0.25, 0.5]
    clock.now += 10  # idle: the bucket refills, but only up to the burst
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.25]


def test_rate_limit_makes_excess_actions_wait_never_rejects(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    clock = FakeClock()
    pauses: list[float] = []

    def pause(seconds: float, halt: Halt) -> bool:
        pauses.append(seconds)
        clock.now += seconds
        return False

    settings = SafetySettings(
        emergency_stop=None, fail_safe=False, max_actions_per_second=2, burst=1
    )
    executor = _executor(backend, frame, settings, pause=pause, clock=clock)
    batch: list[a.Action] = [a.TypeText(action_id=str(i), text=str(i)) for i in range(5)]
    batch.insert(2, a.Wait(action_id="w", duration_ms=0))  # a wait costs no token
    report = executor.execute(batch)
    assert _statuses(report.results) == [OK] * 6
    assert pauses == [0.5, 0.5, 0.5, 0.5]
    assert len([e for e in backend.input.events if isinstance(e, fake.Text)]) == 5


def test_a_stop_during_a_rate_wait_starts_nothing_more(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    halt = Halt()

    def pause(seconds: float, halt_: Halt) -> bool:
        halt_.trigger(HaltReason.EMERGENCY_STOP, "emergency stop (hotkey pressed)")
        return True

    settings = SafetySettings(
        emergency_stop=None, fail_safe=False, max_actions_per_second=1, burst=1
    )
    report = _executor(backend, frame, settings, pause=pause).execute(
        [a.TypeText(action_id="1", text="a"), a.TypeText(action_id="2", text="b")], halt
    )
    assert _statuses(report.results) == [OK, SKIPPED]
    assert "emergency stop" in report.results[1].error
    assert backend.input.events == [fake.Text("a")]


# -- confirm mode -----------------------------------------------------------------------


def test_confirm_runs_what_is_confirmed_and_rejects_the_rest(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    asked: list[a.Action] = []

    def confirm(action: a.Action) -> bool:
        asked.append(action)
        return not (isinstance(action, a.TypeText) and action.text == "no")

    settings = SafetySettings(emergency_stop=None, fail_safe=False, confirm=confirm)
    report = _executor(backend, frame, settings).execute(
        [
            a.TypeText(action_id="1", text="yes"),
            a.Wait(action_id="w", duration_ms=0),  # touches nothing: not asked
            a.TypeText(action_id="2", text="no"),
            a.TypeText(action_id="3", text="later"),
        ]
    )
    assert _statuses(report.results) == [OK, OK, REJECTED, SKIPPED]
    assert report.results[2].error == "refused by the user (confirm mode)"
    assert [x.action_id for x in asked] == ["1", "2"]
    assert backend.input.events == [fake.Text("yes")]


def test_confirm_without_anyone_to_ask_rejects(backend: fake.FakeBackend, frame: SentFrame) -> None:
    def nobody(action: a.Action) -> bool:
        raise NoUserError("no terminal to prompt on")

    settings = SafetySettings(emergency_stop=None, fail_safe=False, confirm=nobody)
    report = _executor(backend, frame, settings).execute([a.TypeText(action_id="1", text="x")])
    assert _statuses(report.results) == [REJECTED]
    assert "no one could confirm it (no terminal to prompt on)" in report.results[0].error
    assert backend.input.events == []


def test_an_unanswered_confirmation_does_not_delay_a_stop(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    """Proves: while the human has not answered, an emergency stop still ends the
    batch (the question runs on a daemon thread; nothing waits for it)."""
    asking = threading.Event()
    never = threading.Event()

    def confirm(action: a.Action) -> bool:
        asking.set()
        never.wait(60)
        return True

    halt = Halt()
    settings = SafetySettings(emergency_stop=None, fail_safe=False, confirm=confirm)
    executor = _executor(backend, frame, settings)
    results: list[a.ActionResult] = []
    worker = threading.Thread(
        target=lambda: results.extend(
            executor.execute([a.TypeText(action_id="1", text="x")], halt).results
        )
    )
    worker.start()
    assert asking.wait(30)
    halt.trigger(HaltReason.EMERGENCY_STOP, "emergency stop")
    worker.join(30)
    never.set()
    assert not worker.is_alive()
    assert _statuses(results) == [SKIPPED]
    assert backend.input.events == []


# -- fail-safe corner -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ((0, 0), ("main", "top-left")),
        ((1279, 799), ("main", "bottom-right")),
        ((1276, 2), ("main", "top-right")),
        ((1275, 0), None),  # 5 px from the corner: outside a 4 px zone
        ((-2560, -200), ("retina", "top-left")),  # a display left of and above the primary
        ((-1, 1399), ("retina", "bottom-right")),
        ((640, 400), None),
    ],
)
def test_corners_of_every_display(
    backend: fake.FakeBackend, point: tuple[int, int], expected: tuple[str, str] | None
) -> None:
    corner = corner_at(*point, backend.screen.displays(), 4)
    assert (None if corner is None else (corner.display_id, corner.name)) == expected


def test_pointer_in_a_corner_stops_the_session(backend: fake.FakeBackend, frame: SentFrame) -> None:
    backend.input.move(-2559, -199)  # the user flings the mouse to the top-left of "retina"
    backend.input.clear()
    halt = Halt()
    report = _executor(backend, frame, SafetySettings(emergency_stop=None)).execute(
        [_click("1", frame), a.TypeText(action_id="2", text="x")], halt
    )
    assert _statuses(report.results) == [REJECTED, SKIPPED]
    assert report.results[0].error.startswith(
        "fail-safe: the pointer is in the top-left corner of display 'retina'"
    )
    assert halt.state is not None
    assert halt.state.reason is HaltReason.FAIL_SAFE
    assert backend.input.events == []


def test_a_corner_the_agent_clicked_itself_is_not_a_stop(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    """Proves: the fail-safe ignores a corner where the client's own action left the
    pointer (say, a maximised window's close button), and trips once a human moves it
    into a corner."""
    executor = _executor(backend, frame, SafetySettings(emergency_stop=None))
    report = executor.execute([_click("1", frame, 639.9, 0), a.TypeText(action_id="2", text="x")])
    assert _statuses(report.results) == [OK, OK]
    assert backend.input.cursor_position() == (1279, 0)
    backend.input.move(0, 799)  # now a human moves it
    report = executor.execute([a.TypeText(action_id="3", text="y")])
    assert _statuses(report.results) == [REJECTED]
    assert "bottom-left corner of display 'main'" in report.results[0].error


def test_fail_safe_off_ignores_corners(backend: fake.FakeBackend, frame: SentFrame) -> None:
    backend.input.move(0, 0)
    settings = SafetySettings(emergency_stop=None, fail_safe=False)
    report = _executor(backend, frame, settings).execute([a.TypeText(action_id="1", text="x")])
    assert _statuses(report.results) == [OK]


def test_fail_safe_watches_only_pointers_a_person_can_move(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    """Proves: a target whose pointer is only the client's own (a web page, a VNC
    session) never trips the fail-safe, even when that pointer starts at (0, 0)."""
    backend.input.move(0, 0)
    backend.observes_user_pointer = False
    settings = SafetySettings(emergency_stop=None)
    report = _executor(backend, frame, settings).execute([a.TypeText(action_id="1", text="x")])
    assert _statuses(report.results) == [OK]


# -- held input -------------------------------------------------------------------------


def test_a_failure_mid_batch_releases_what_the_batch_held(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    backend.input.fail_on.add(fake.Text)
    report = _executor(backend, frame, NOTHING).execute(
        [
            a.KeyDown(action_id="1", key="shift"),
            a.MouseDown(action_id="2"),
            a.TypeText(action_id="3", text="boom"),
            a.KeyUp(action_id="4", key="shift"),
        ]
    )
    assert _statuses(report.results) == [OK, OK, FAILED, SKIPPED]
    assert backend.input.held() == ((), ())
    assert report.release_error == ""


def test_a_batch_that_completes_keeps_its_held_keys(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    """A key held on purpose across steps (shift-click over two steps) stays held
    while all goes well; the session releases it when it ends."""
    report = _executor(backend, frame, NOTHING).execute([a.KeyDown(action_id="1", key="shift")])
    assert _statuses(report.results) == [OK]
    assert backend.input.held() == (("shift",), ())


def test_link_loss_skips_as_not_delivered_and_releases(
    backend: fake.FakeBackend, frame: SentFrame
) -> None:
    halt = Halt()
    executor = _executor(backend, frame, NOTHING)
    executor.execute([a.KeyDown(action_id="1", key="alt")], halt)
    halt.trigger(HaltReason.LINK_LOST, "the stream dropped")
    report = executor.execute([a.TypeText(action_id="2", text="x")], halt)
    assert _statuses(report.results) == [a.ActionStatus.NOT_DELIVERED]
    assert backend.input.held() == ((), ())
    # The record answers a resume: executed ids with their results, unknown ids not delivered.
    assert _statuses(executor.results_for(["1", "2", "zz"])) == [
        OK,
        a.ActionStatus.NOT_DELIVERED,
        a.ActionStatus.NOT_DELIVERED,
    ]
    assert executor.results_for(["zz"])[0].error == "this client never received it"
