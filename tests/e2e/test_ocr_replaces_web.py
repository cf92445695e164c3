"""`type X into F` replaces a filled-in field's text on a web page too (issue 30, item 2).

The same keys select the field's text in Chromium as in Tk and GTK (the OCR
policy's replace.py); this checks it where web workloads run: a real daemon with
the OCR policy, the client's run_session on the web backend (headless Chromium),
a local page whose Name input already holds a text. The page's own value and
what it submitted are asserted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from holodesk.client.events import Outcome
from holodesk.client.outcome import SessionOutcome
from holodesk.client.session import SessionOptions, run_session
from holodesk.daemon.config import ServerConfig
from holodesk.daemon.policies.ocr.planner import PlannerConfig
from holodesk.daemon.policies.ocr.policy import OcrPolicy, OcrPolicyConfig
from holodesk.daemon.rpc.server import serve
from holodesk.platform.web.backend import WebBackend, create
from tests.support.web_site import page, serve_pages

pytestmark = [pytest.mark.web, pytest.mark.e2e, pytest.mark.timeout(300)]

NEW = "Grace Hopper"
BEFORE = {
    "another-name": "Ada Lovelace",
    "a-longer-text": "Rear Admiral Grace Brewster Murray Hopper",
    "the-same-text": NEW,
}


def form_page(value: str) -> str:
    return page(
        "sign up",
        f"""
<div style="position:absolute;left:40px;top:40px;font:28px sans-serif">
  <label for="name" style="display:inline-block;width:120px">Name</label>
  <input id="name" value="{value}" style="font:28px sans-serif;width:560px">
  <br><br>
  <button id="submit" style="font:28px sans-serif;margin-left:124px"
    onclick="window.submitted = document.getElementById('name').value">Submit</button>
</div>
""",
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pages = {f"{case}.html": form_page(value) for case, value in BEFORE.items()}
    with serve_pages(Path(tmp_path_factory.mktemp("site")), pages) as base:
        yield base


def run(backend: WebBackend) -> SessionOutcome:
    async def session() -> SessionOutcome:
        policy = OcrPolicy(OcrPolicyConfig(planner=PlannerConfig(retry_wait_s=0.3)))
        async with serve(ServerConfig(listen="127.0.0.1:0"), policies=[policy]) as running:
            await asyncio.shield(running.policies_started)
            task = f'type "{NEW}" into "Name"; click "Submit"; answer "signed up"'
            return await run_session(running.address, task, backend, SessionOptions())

    return asyncio.run(session())


@pytest.mark.parametrize("case", list(BEFORE))
def test_typing_into_a_filled_input_replaces_its_text(site: str, case: str) -> None:
    backend = create(f"{site}/{case}.html", width=900, height=400)
    try:
        outcome = run(backend)
        value = backend.page.evaluate("document.getElementById('name').value")
        submitted = backend.page.evaluate("window.submitted || null")
    finally:
        backend.close()
    assert outcome.outcome is Outcome.SUCCEEDED, (outcome.reason, value)
    assert (value, submitted) == (NEW, NEW)
