"""The hdesktop conversation on the transformers engine (tiny Holotron-architecture
model): the checkpoint's chat template takes the harness's layout (consecutive user
turns, assistant JSON turns, tool outputs) with every screenshot it shows.

transformers has no structured decoding here, so random weights answer gibberish: the
test is the path, and a daemon session over it ends as a clean failure."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from holodesk.daemon.engines.base import GenerationRequest, SamplingParams
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.policies.model import ModelPolicy
from tests.daemon.support import running_daemon
from tests.engines.hdesktop_conversation import conversation, short_dialect
from tests.engines.support import KeepOpen, assert_failed_unparseable, gibberish_session
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
pytest.importorskip("transformers", reason="needs transformers (holodesk-daemon[transformers])")

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

# A 512x512 image through the tiny processor: 256 image tokens between <img> and </img>.
IMAGE_TOKENS = 256 + 2


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine(
    tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[TransformersEngine]:
    path = tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))
    settings = TransformersSettings(model=str(path), device="cpu", trust_remote_code=True)
    engine = TransformersEngine(settings)
    await engine.start()
    yield engine
    await engine.close()


async def test_the_harness_conversation_renders_through_the_chat_template(
    engine: TransformersEngine,
) -> None:
    messages = conversation(short_dialect())
    assert [m.role for m in messages].count("assistant") == 2
    request = GenerationRequest("hd", messages, SamplingParams(max_tokens=4))
    result = await engine.generate(request)
    assert result.prompt_tokens > 3 * IMAGE_TOKENS  # all three screenshots, and the text
    assert result.completion_tokens == 4


async def test_a_daemon_session_over_it_fails_cleanly_on_gibberish(
    engine: TransformersEngine,
) -> None:
    dialect = short_dialect()
    policy = ModelPolicy(dialect, KeepOpen(engine), name="tiny-hdesktop")
    async with running_daemon([policy]) as daemon:
        endings = [await gibberish_session(daemon, 0)]
    assert_failed_unparseable(endings)
