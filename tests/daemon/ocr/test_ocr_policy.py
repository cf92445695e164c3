"""OcrPolicy through the daemon's real session bookkeeping, on rendered screens."""

from __future__ import annotations

import asyncio

import pytest

from holodesk.daemon.actions import ActionResult, Click, Done
from holodesk.daemon.errors import InvalidArgument
from holodesk.daemon.frames import EncodedFrame, ImageEncoding
from holodesk.daemon.geometry import Size
from holodesk.daemon.policies.base import Policy
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig, check_tesseract
from holodesk.daemon.policies.ocr.tesseract import TesseractConfig, TesseractNotFoundError
from holodesk.daemon.policies.registry import PolicyConfigError, create_policy
from holodesk.daemon.session.sessions import Session
from holodesk.daemon.session.values import Ending, SessionOutcome, SessionRequest
from holodesk.daemon.steps import StepContext
from holodesk.data.format import ClientInfo

from .desktop import HEIGHT, WIDTH, Desktop
from .screens import form_screen

FAST = OcrPolicyConfig(planner=PlannerConfig(max_retries=2, retry_wait_s=0.1))


async def _run(
    policy: Policy, task: str, desktop: Desktop, max_steps: int = 15, client_os: str = ""
) -> Ending:
    """One session, as the daemon runs it: frame -> decide -> actions -> results."""
    session = Session(
        SessionRequest(task=task, client=ClientInfo(os=client_os)),
        policy_name=policy.name,
        max_steps=max_steps,
        history_frames=policy.history_frames,
    )
    for number in range(max_steps):
        frame = EncodedFrame(f"f{number}", Size(WIDTH, HEIGHT), ImageEncoding.PNG, desktop.png())
        session.accept_frame(frame, "observation.frame")
        decision = await policy.decide(session.context())
        sent, ending = session.record_decision(decision)
        if ending is not None and not sent:
            return ending
        results = tuple(
            ActionResult(a.action_id, status, error)
            for a in sent
            for status, error in [desktop.apply(a.kind)]
        )
        session.accept_results(results, "observation.results")
        if ending is not None:
            return ending
    raise AssertionError(f"no ending after {max_steps} steps; desktop did {desktop.log}")


@pytest.fixture
async def policy() -> OcrPolicy:
    started = OcrPolicy(FAST)
    await started.start()
    return started


async def test_a_whole_task_runs_to_success(policy: OcrPolicy) -> None:
    desktop = Desktop(dialog_delay=1)
    task = 'click "File"; click "Open"; type "report-été.txt" into "File name"; press enter'
    ending = await _run(policy, task, desktop)
    assert ending.outcome is SessionOutcome.SUCCEEDED
    assert desktop.opened == "report-été.txt"
    # The dialog came one frame late: the policy waited for it once, then went on.
    # Typing into the field clicks it, selects its text (three chords), types over it.
    select = ["KeyChord"] * 3
    assert desktop.log == ["Click", "Click", "Wait", "Click", *select, "TypeText", "KeyChord"]


@pytest.mark.parametrize(
    ("client_os", "select"),
    [
        ("linux", [("ctrl", "a"), ("ctrl", "home"), ("ctrl", "shift", "end")]),
        ("darwin", [("meta", "a")]),
    ],
)
async def test_the_field_is_selected_with_the_clients_platforms_keys(
    policy: OcrPolicy, client_os: str, select: list[tuple[str, ...]]
) -> None:
    # The client's SessionStart says which OS it is; the session hands it to the policy.
    desktop = Desktop(dialog_delay=0)
    task = 'click "File"; click "Open"; type "a.txt" into "File name"; press enter'
    ending = await _run(policy, task, desktop, client_os=client_os)
    assert ending.outcome is SessionOutcome.SUCCEEDED, ending.reason
    assert desktop.chords == [*select, ("enter",)]


async def test_typing_the_screen_does_not_show_fails_the_session_naming_it(
    policy: OcrPolicy,
) -> None:
    desktop = Desktop(dialog_delay=0, hides_typing=True)
    task = 'click "File"; click "Open"; type "a.txt" into "File name"; press enter'
    ending = await _run(policy, task, desktop)
    assert ending.outcome is SessionOutcome.FAILED
    assert 'does not show "a.txt" near "File name"' in ending.reason
    # Typed once, looked once more, and no other field beside the label: no Enter.
    select = ["KeyChord"] * 3  # the field's text selected before typing
    assert desktop.log == ["Click", "Click", "Click", *select, "TypeText", "Wait"]


async def test_text_that_never_appears_fails_the_session_naming_it(policy: OcrPolicy) -> None:
    desktop = Desktop()
    ending = await _run(policy, 'click "File"; click "Export"', desktop)
    assert ending.outcome is SessionOutcome.FAILED
    assert '"Export" is not on the screen' in ending.reason
    assert desktop.log == ["Click", "Wait", "Wait"]  # max_retries=2 waits, then fail


async def test_a_failed_action_is_retried_then_fails_the_session(policy: OcrPolicy) -> None:
    desktop = Desktop()
    # Typing with no field focused fails on this desktop: tried again while retries
    # last (max_retries=2), then the session fails, passing on the client's error.
    ending = await _run(policy, 'type "x"', desktop)
    assert ending.outcome is SessionOutcome.FAILED
    assert "did not run after 3 tries" in ending.reason
    assert "no field has the focus" in ending.reason
    assert desktop.log == ["TypeText", "TypeText", "TypeText"]


async def test_a_task_in_plain_english_fails_with_the_language(policy: OcrPolicy) -> None:
    ending = await _run(policy, "open the report please", Desktop())
    assert ending.outcome is SessionOutcome.FAILED
    assert 'click "TEXT"' in ending.reason


async def test_decide_reports_its_reasoning_and_raw_output(policy: OcrPolicy) -> None:
    desktop = Desktop()
    frame = EncodedFrame("f0", Size(WIDTH, HEIGHT), ImageEncoding.PNG, desktop.png())
    decision = await policy.decide(StepContext("s", 'click "Edit"', 1, (frame,)))
    (click,) = decision.actions
    assert isinstance(click, Click)
    assert 70 <= click.point.x <= 110
    assert 0 <= click.point.y <= 28
    assert decision.note.startswith("[ocr 1/1]")
    assert "Edit" in decision.thought
    assert '"click_element"' in decision.raw_output


async def test_an_undecodable_frame_is_the_callers_error(policy: OcrPolicy) -> None:
    frame = EncodedFrame("f0", Size(10, 10), ImageEncoding.PNG, b"not a png")
    with pytest.raises(InvalidArgument, match="frame 'f0' cannot be decoded"):
        await policy.decide(StepContext("s", 'click "OK"', 1, (frame,)))


async def test_the_last_step_done_ends_with_an_empty_answer(policy: OcrPolicy) -> None:
    frame = EncodedFrame("f0", Size(WIDTH, HEIGHT), ImageEncoding.PNG, Desktop().png())
    decision = await policy.decide(StepContext("s", 'answer "all good"', 1, (frame,)))
    assert decision.actions == (Done("all good"),)


async def test_locate_finds_each_description(policy: OcrPolicy) -> None:
    screen = form_screen().resized(1024, 640)
    frame = EncodedFrame("f", Size(1024, 640), ImageEncoding.PNG, screen.png())
    ok, email, missing = await policy.locate(frame, ("OK", "email address", "Print preview"))
    for location, text in ((ok, "OK"), (email, "Email address:")):
        assert location.found
        assert location.point is not None
        assert location.box is not None
        left, top, right, bottom = screen.texts[text]
        assert left <= location.point.x <= right
        assert top <= location.point.y <= bottom
        assert abs(location.box.left - left) <= 3
        assert abs(location.box.right - location.box.left - (right - left)) <= 4
        assert '"score": 1.0' in location.raw_output
    assert not missing.found
    assert missing.point is None


async def test_sessions_run_concurrently(policy: OcrPolicy) -> None:
    desktops = [Desktop(dialog_delay=0) for _ in range(3)]
    task = 'click "File"; click "Open"; type "a.txt" into "File name"; press enter'
    endings = await asyncio.gather(*(_run(policy, task, d) for d in desktops))
    assert all(e.outcome is SessionOutcome.SUCCEEDED for e in endings)
    assert [d.opened for d in desktops] == ["a.txt"] * 3


def test_the_policy_is_registered_and_validates_its_options() -> None:
    policy = create_policy("ocr", {"max_retries": "5", "languages": "eng", "timeout_s": "12"})
    assert isinstance(policy, OcrPolicy)
    assert isinstance(policy, Policy)
    assert policy.config.planner.max_retries == 5
    assert policy.config.reader.tesseract.timeout_s == 12.0
    with pytest.raises(PolicyConfigError, match="max_retries"):
        create_policy("ocr", {"max_retries": "many"})
    with pytest.raises(PolicyConfigError, match="outside"):
        create_policy("ocr", {"retry_wait_s": "nan"})
    with pytest.raises(PolicyConfigError, match="no option"):
        create_policy("ocr", {"colour": "blue"})


def test_frames_are_asked_for_lossless() -> None:
    policy = OcrPolicy()
    assert policy.frame_spec(()).encoding is ImageEncoding.PNG
    assert policy.frame_spec((ImageEncoding.JPEG,)).encoding is ImageEncoding.JPEG
    assert policy.history_frames == 1


async def test_start_fails_clearly_without_tesseract() -> None:
    config = OcrPolicyConfig(reader=FAST.reader.__class__(tesseract=TesseractConfig("no-tess")))
    policy = OcrPolicy(config)
    with pytest.raises(TesseractNotFoundError, match="apt-get install tesseract-ocr"):
        await policy.start()
    assert not policy.ready
    check_tesseract(TesseractConfig())  # the real one is installed here
