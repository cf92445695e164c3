"""Each browser task of the bundled suite, its evaluator on a page state that should
pass it and on one that should fail it, in a real Chromium on Xvfb.

The Chromium is the one the suite's `open` step starts (chromium.start: its own
DevTools port, its profile in the task's HOME) on the suite's own pages, copied by
the tasks' own `download` step; the states are made by driving the page over
DevTools as a user would (fill, click, press Enter), then the evaluator reads the
live page as `holodesk eval tasks` does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from holodesk.client.eval.tasks import chromium, evaluate
from holodesk.client.eval.tasks.context import TaskContext
from holodesk.client.eval.tasks.processes import OwnedProcesses
from holodesk.client.eval.tasks.setup import run_steps

from .suite import bundled, task

pytestmark = [pytest.mark.x11, pytest.mark.web, pytest.mark.timeout(180)]

Drive = Callable[[Page], None]


def _submit(page: Page, selector: str) -> None:
    with page.expect_navigation():
        page.click(selector)


def _signup(email: str) -> Drive:
    def drive(page: Page) -> None:
        page.fill("#name", "Ada Lovelace")
        page.fill("#email", email)
        _submit(page, "text=Create account")

    return drive


def _link(text: str) -> Drive:
    return lambda page: _submit(page, f"text={text}")


def _newsletter(choice: str | None) -> Drive:
    def drive(page: Page) -> None:
        if choice:
            page.click(f"text={choice}")
        _submit(page, "text=Subscribe")

    return drive


def _search(query: str) -> Drive:
    def drive(page: Page) -> None:
        page.fill("#q", query)
        with page.expect_navigation():
            page.press("#q", "Enter")

    return drive


def _todo_add(submit: bool) -> Drive:
    def drive(page: Page) -> None:
        page.fill("#new", "Buy milk")
        if submit:
            page.click("text=Add")

    return drive


def _tick(label: str) -> Drive:
    return lambda page: page.click(f"text={label}")


# task id: (its start page, a drive that passes, one that fails)
STATES: dict[str, tuple[str, Drive, Drive]] = {
    "browser-signup": ("signup.html", _signup("ada@example.com"), _signup("ada@example.org")),
    "browser-opening-hours": ("bakery.html", _link("Opening hours"), _link("Our menu")),
    "browser-newsletter-weekly": ("newsletter.html", _newsletter("Once a week"), _newsletter(None)),
    "browser-library-search": ("search.html", _search("penguins"), _search("penguin")),
    "browser-todo-add": ("todo.html", _todo_add(True), _todo_add(False)),
    "browser-todo-tick": ("todo.html", _tick("Pay rent"), _tick("Water the plants")),
}


@pytest.fixture(scope="module")
def browser(xvfb: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TaskContext]:
    """The suite's Chromium with the suite's pages in HOME/site, as a task starts it."""
    root = tmp_path_factory.mktemp("browser-task")
    home, cache = root / "home", root / "cache"
    home.mkdir()
    cache.mkdir()
    processes = OwnedProcesses(root / "processes.log")
    first = task("browser-signup")
    context = TaskContext(
        display=xvfb, home=home, cache=cache, task_folder=first.folder, processes=processes
    )
    try:
        downloads = tuple(step for step in first.config if step.type == "download")
        assert downloads, "the browser tasks copy their pages into HOME"
        run_steps(downloads, context, task_id=first.id)
        chromium.start(context, urls=["about:blank"])
        yield context
    finally:
        processes.stop_all()


def _state(context: TaskContext, start: str, drive: Drive) -> None:
    url = (context.home / "site" / start).as_uri()
    with sync_playwright() as playwright:
        remote = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{context.devtools_port}")
        page = remote.contexts[0].pages[0]
        page.goto(url, wait_until="load")
        drive(page)
        page.wait_for_load_state("load")


def test_every_feasible_browser_task_has_both_states() -> None:
    tasks = {t.id for t in bundled().tasks if t.domain == "browser" and not t.evaluator.infeasible}
    assert tasks == set(STATES)


@pytest.mark.parametrize("task_id", sorted(STATES))
def test_browser_task_scores_the_live_page(task_id: str, browser: TaskContext) -> None:
    start, passing, failing = STATES[task_id]
    found = task(task_id)
    browser.task_folder = found.folder

    _state(browser, start, passing)
    passed = evaluate(found, browser, failed_on_purpose=False)
    assert passed.score == 1.0, passed.note

    _state(browser, start, failing)
    failed = evaluate(found, browser, failed_on_purpose=False)
    assert failed.score == 0.0, failed.note


def test_browser_getters_give_nothing_without_a_chromium(tmp_path: Path) -> None:
    processes = OwnedProcesses(tmp_path / "processes.log")
    context = TaskContext(
        display=":0", home=tmp_path, cache=tmp_path, task_folder=tmp_path, processes=processes
    )
    score = evaluate(task("browser-todo-tick"), context, failed_on_purpose=False)
    assert score.score == 0.0
