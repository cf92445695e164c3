"""ActionExecutor against the fake backend: order, skip, idempotence, release."""

from __future__ import annotations

import threading

import pytest

from holodesk.client import actions as a
from holodesk.client.capture import FrameCapturer
from holodesk.client.executor import ActionExecutor
from holodesk.client.frames import FrameSpec, SentFrame
from holodesk.client.halt import Halt, HaltReason
from holodesk.platform.backends import fake
from holodesk.platform.base import MouseButton, Navigator
from holodesk.platform.errors import NavigationError

OK, FAILED, SKIPPED = a.ActionStatus.OK, a.ActionStatus.FAILED, a.ActionStatus.SKIPPED
LEFT = MouseButton.LEFT


@pytest.fixture
def frame(backend: fake.FakeBackend) -> SentFrame:
    # The retina display (origin -2560,-200, 2560x1600) sent as 1280x800.
    spec = FrameSpec(max_width=1280, max_height=1280)
    return FrameCapturer(backend.screen, spec, "retina").capture()


@pytest.fixture
def executor(backend: fake.FakeBackend, frame: SentFrame) -> ActionExecutor:
    executor = ActionExecutor(backend)
    executor.remember_frame(frame)
    return executor


def _statuses(results: list[a.ActionResult]) -> list[a.ActionStatus]:
    return [r.status for r in results]


def test_actions_run_in_order_with_coordinates_mapped(
    backend: fake.FakeBackend, executor: ActionExecutor, frame: SentFrame
) -> None:
    f = frame.frame_id
    report = executor.execute(
        [
            a.Click(action_id="1", frame_id=f, point=a.FramePoint(640, 400), count=2),
            a.TypeText(action_id="2", text="héllo 世界"),
            a.KeyChord(action_id="3", keys=("Control", "s")),
            a.Scroll(action_id="4", frame_id=f, point=a.FramePoint(10, 20.5), dy=3),
        ]
    )
    assert _statuses(report.results) == [OK, OK, OK, OK]
    assert [r.action_id for r in report.results] == ["1", "2", "3", "4"]
    assert report.control is None
    assert backend.input.events == [
        fake.Move(-1280, 600),
        fake.Button(LEFT, True),
        fake.Button(LEFT, False),
        fake.Button(LEFT, True),
        fake.Button(LEFT, False),
        fake.Text("héllo 世界"),
        fake.Key("ctrl", True),
        fake.Key("s", True),
        fake.Key("s", False),
        fake.Key("ctrl", False),
        fake.Move(-2540, -159),
        fake.Scroll(0, 3),
    ]


def test_actions_after_a_failure_are_skipped(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    report = executor.execute(
        [
            a.TypeText(action_id="1", text="a"),
            a.KeyChord(action_id="2", keys=("ctrl", "no-such-key")),
            a.TypeText(action_id="3", text="b"),
        ]
    )
    assert _statuses(report.results) == [OK, FAILED, SKIPPED]
    assert "unknown key 'no-such-key'" in report.results[1].error
    assert "'2'" in report.results[2].error
    assert backend.input.events == [fake.Text("a")]  # the bad chord pressed nothing


def test_an_action_id_is_never_executed_twice(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    batch: list[a.Action] = [
        a.TypeText(action_id="t1", text="once"),
        a.Wait(action_id="w1", duration_ms=0),
    ]
    first = executor.execute(batch)
    again = executor.execute([*batch, a.TypeText(action_id="t2", text="new")])
    assert again.results[:2] == first.results
    assert _statuses(again.results) == [OK, OK, OK]
    assert backend.input.events == [fake.Text("once"), fake.Text("new")]


def test_a_failed_action_is_not_retried_and_still_skips_the_rest(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    bad = a.KeyDown(action_id="k", key="nope-key")
    executor.execute([bad])
    report = executor.execute([bad, a.TypeText(action_id="t", text="x")])
    assert _statuses(report.results) == [FAILED, SKIPPED]
    assert backend.input.events == []


def test_input_error_releases_everything_held(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    backend.input.fail_on = {fake.Text}
    batch: list[a.Action] = [
        a.KeyDown(action_id="1", key="shift"),
        a.TypeText(action_id="2", text="x"),
        a.KeyUp(action_id="3", key="shift"),
    ]
    report = executor.execute(batch)
    assert _statuses(report.results) == [OK, FAILED, SKIPPED]
    assert "fake failure injected" in report.results[1].error
    assert backend.input.held() == ((), ())
    assert backend.input.events == [fake.Key("shift", True), fake.Key("shift", False)]


def test_unknown_or_missing_frame_id_fails(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    report = executor.execute(
        [a.Move(action_id="1", frame_id="never-sent", point=a.FramePoint(1, 1))]
    )
    assert _statuses(report.results) == [FAILED]
    assert "unknown frame id 'never-sent'" in report.results[0].error
    report = executor.execute([a.Move(action_id="2", point=a.FramePoint(1, 1))])
    assert "no frame_id" in report.results[0].error
    assert backend.input.events == []


def test_off_screen_point_fails_instead_of_clamping(
    backend: fake.FakeBackend, executor: ActionExecutor, frame: SentFrame
) -> None:
    report = executor.execute(
        [a.Click(action_id="1", frame_id=frame.frame_id, point=a.FramePoint(1280, 10))]
    )
    assert _statuses(report.results) == [FAILED]
    assert "outside the frame" in report.results[0].error
    assert backend.input.events == []


@pytest.mark.parametrize("count", [0, 4])
def test_click_count_outside_1_to_3_fails(
    backend: fake.FakeBackend, executor: ActionExecutor, frame: SentFrame, count: int
) -> None:
    click = a.Click(action_id="c", frame_id=frame.frame_id, point=a.FramePoint(1, 1), count=count)
    report = executor.execute([click])
    assert _statuses(report.results) == [FAILED]
    assert "1, 2 or 3" in report.results[0].error
    assert backend.input.events == []


def test_drag_needs_two_points(executor: ActionExecutor, frame: SentFrame) -> None:
    drag = a.Drag(action_id="d", frame_id=frame.frame_id, path=(a.FramePoint(1, 1),))
    assert "at least two points" in executor.execute([drag]).results[0].error


def test_drag_follows_the_mapped_path(
    backend: fake.FakeBackend, executor: ActionExecutor, frame: SentFrame
) -> None:
    path = (a.FramePoint(0, 0), a.FramePoint(10, 0), a.FramePoint(10, 10))
    drag = a.Drag(action_id="d", frame_id=frame.frame_id, path=path, duration_ms=1)
    assert _statuses(executor.execute([drag]).results) == [OK]
    assert backend.input.events == [
        fake.Move(-2560, -200),
        fake.Button(LEFT, True),
        fake.Move(-2540, -200),
        fake.Move(-2540, -180),
        fake.Button(LEFT, False),
    ]


def test_control_actions_are_acknowledged_not_executed(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    done = a.Done(action_id="2", answer="42")
    report = executor.execute(
        [a.TypeText(action_id="1", text="x"), done, a.TypeText(action_id="3", text="y")]
    )
    assert report.control == done
    assert _statuses(report.results) == [OK, OK, SKIPPED]
    assert "follows done" in report.results[2].error
    assert backend.input.events == [fake.Text("x")]


def test_control_action_after_a_failure_is_skipped(executor: ActionExecutor) -> None:
    report = executor.execute(
        [a.KeyDown(action_id="1", key="bogus-key"), a.Done(action_id="2", answer="x")]
    )
    assert report.control is None
    assert _statuses(report.results) == [FAILED, SKIPPED]


def test_unsupported_action_fails_with_its_reason(executor: ActionExecutor) -> None:
    report = executor.execute([a.Unsupported(action_id="u", reason="unknown mouse button 9")])
    assert report.results[0].status is FAILED
    assert report.results[0].error == "unknown mouse button 9"


def test_stop_interrupts_a_wait_and_releases_held_keys(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    stop = Halt()
    batch: list[a.Action] = [
        a.KeyDown(action_id="1", key="shift"),
        a.Wait(action_id="2", duration_ms=60_000),
        a.TypeText(action_id="3", text="never"),
    ]
    results: list[a.ActionResult] = []
    worker = threading.Thread(target=lambda: results.extend(executor.execute(batch, stop).results))
    worker.start()
    # Stop once the key is down, i.e. while the batch is waiting.
    for _ in range(10_000):
        if backend.input.held()[0]:
            break
        threading.Event().wait(0.001)
    stop.trigger(HaltReason.USER, "stop pressed")
    worker.join(30)
    assert not worker.is_alive()
    assert _statuses(results) == [OK, FAILED, SKIPPED]
    assert results[1].error == "stopped by the user"
    assert backend.input.held() == ((), ())
    assert fake.Text("never") not in backend.input.events


class RecordingNavigator(Navigator):
    def __init__(self) -> None:
        self.urls: list[str] = []

    def navigate(self, url: str) -> None:
        if "unreachable" in url:
            raise NavigationError(f"loading {url!r} failed: net::ERR_NAME_NOT_RESOLVED")
        self.urls.append(url)

    def current_url(self) -> str:
        return self.urls[-1] if self.urls else "about:blank"


def test_navigate_uses_the_backends_navigator(
    backend: fake.FakeBackend, executor: ActionExecutor
) -> None:
    navigator = RecordingNavigator()
    backend.navigator = navigator
    report = executor.execute(
        [
            a.Navigate(action_id="1", url=" https://example.org/ "),
            a.Navigate(action_id="2", url="https://unreachable.invalid/"),
            a.Navigate(action_id="3", url="https://never.example/"),
        ]
    )
    assert _statuses(report.results) == [OK, FAILED, SKIPPED]
    assert "ERR_NAME_NOT_RESOLVED" in report.results[1].error
    assert navigator.urls == ["https://example.org/"]
    assert backend.input.events == []


@pytest.mark.parametrize(("os", "modifier"), [("linux", "ctrl"), ("darwin", "meta")])
def test_navigate_on_a_desktop_types_into_the_address_bar(os: str, modifier: str) -> None:
    backend = fake.create(os=os)
    report = ActionExecutor(backend).execute([a.Navigate(action_id="1", url="example.org")])
    assert _statuses(report.results) == [OK]
    assert backend.input.events == [
        fake.Key(modifier, True),
        fake.Key("l", True),
        fake.Key("l", False),
        fake.Key(modifier, False),
        fake.Text("example.org"),
        fake.Key("enter", True),
        fake.Key("enter", False),
    ]


def test_navigate_without_a_url_fails_untouched(executor: ActionExecutor) -> None:
    report = executor.execute([a.Navigate(action_id="1", url="  ")])
    assert report.results[0].status is FAILED
    assert "needs a URL" in report.results[0].error


def test_wait_beyond_the_limit_fails(backend: fake.FakeBackend) -> None:
    executor = ActionExecutor(backend, max_wait_ms=1000)
    report = executor.execute([a.Wait(action_id="w", duration_ms=1001)])
    assert "exceeds this client's limit of 1000 ms" in report.results[0].error


def test_old_frames_are_forgotten(backend: fake.FakeBackend) -> None:
    executor = ActionExecutor(backend, frames_kept=2)
    capturer = FrameCapturer(backend.screen, FrameSpec(max_width=64, max_height=64))
    frames = [capturer.capture() for _ in range(3)]
    for frame in frames:
        executor.remember_frame(frame)
    moves = [
        a.Move(action_id=f"m{i}", frame_id=frame.frame_id, point=a.FramePoint(1, 1))
        for i, frame in enumerate(frames)
    ]
    assert _statuses(executor.execute(moves[:1]).results) == [FAILED]
    assert _statuses(executor.execute(moves[1:]).results) == [OK, OK]
