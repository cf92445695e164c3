"""Rollouts on four web pages at once: one headless Chromium, four pages of a local
sign-up form, one real daemon with the OCR policy, run_rollouts driving them all.

The reward function reads each page's own form, so input that reached another
page would show as the wrong name there; each page's event log says which
elements it was clicked on and typed into.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.events import Outcome
from holodesk.client.rollouts import Finished, Reward, RolloutTask, WebEnvironment, run_rollouts
from holodesk.daemon.policies.ocr.policy import OcrPolicy
from holodesk.platform.web.backend import WebBackend
from holodesk.platform.web.browser import WebBrowser
from tests.daemon.support import running_daemon
from tests.support.web_site import PAGES, page, serve_pages

pytestmark = [pytest.mark.web, pytest.mark.e2e, pytest.mark.timeout(300)]

NAMES = ("ada", "grace", "edsger", "barbara")

FORM_PAGE = page(
    "sign up",
    """
<div style="position:absolute;left:40px;top:40px;font:28px sans-serif">
  <label for="name" style="display:inline-block;width:120px">Name</label>
  <input id="name" style="font:28px sans-serif;width:360px">
  <br><br>
  <button id="submit" style="font:28px sans-serif;margin-left:124px"
    onclick="document.getElementById('thanks').textContent =
      'Thanks, ' + document.getElementById('name').value; window.submitted =
      document.getElementById('name').value">Submit</button>
  <p id="thanks"></p>
</div>
""",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pages = {**PAGES, "form.html": FORM_PAGE}
    with serve_pages(Path(tmp_path_factory.mktemp("site")), pages) as base:
        yield base


@pytest.fixture
def environments(site: str) -> Iterator[list[WebEnvironment]]:
    with WebBrowser() as browser, contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                WebEnvironment(f"{site}/form.html", browser=browser, width=900, height=500)
            )
            for _ in NAMES
        ]


def submitted(finished: Finished) -> Reward:
    backend = finished.backend
    assert isinstance(backend, WebBackend)
    name = backend.page.evaluate("window.submitted || ''")
    events = backend.page.evaluate("window.events")
    typed = "".join(e["data"] or "" for e in events if e["type"] == "input")
    clicked = sorted({e["target"] for e in events if e["type"] == "click"})
    ok = name == finished.trajectory.task.metadata["name"]
    return Reward(1.0 if ok else 0.0, ok, note=f"{name}|{typed}|{','.join(clicked)}")


async def test_four_sessions_on_four_pages_each_act_in_their_own(
    environments: list[WebEnvironment],
) -> None:
    tasks = [
        RolloutTask(
            f'type "{name}" into "Name"; click "Submit"; answer "signed up {name}"',
            metadata={"name": name},
        )
        for name in NAMES
    ]
    async with running_daemon([OcrPolicy()]) as daemon:
        trajectories = await run_rollouts(
            daemon.running.address, tasks, environments, reward=submitted, max_steps=10
        )

    assert len({t.environment for t in trajectories}) == 4
    for trajectory in trajectories:
        name = trajectory.task.metadata["name"]
        assert trajectory.outcome is Outcome.SUCCEEDED, trajectory.reason
        assert trajectory.answer == f"signed up {name}"
        assert trajectory.reward is not None
        # Its own page got its own name, typed once, and clicks on the field and button.
        assert trajectory.reward.note == f"{name}|{name}|name,submit", trajectory.reward.note
        assert trajectory.reward.success
        assert trajectory.steps
        for step in trajectory.steps:
            assert step.frame is not None
            assert (step.frame.width, step.frame.height) == (900, 500)
            assert len(step.results) == len(step.actions)
