"""`holodesk export --format trainer` on a real daemon serving the tiny Holotron model
with the transformers engine: the exported prompt ids are what the model's own
processor makes of the recorded prompt and images.

The daemon records a session that asked for Sampling(logprobs=True,
prompt_token_ids=True) and two candidates a call. Random weights answer gibberish,
so the step is asked again twice (repair prompts) and fails: its recorded prompt is
the last repair prompt, and only that call's two completions may become rows.

The check is independent of the export's own code: the test renders the recorded
prompt messages with the tiny checkpoint's chat template and runs its processor on
the pixels the engine was handed, which the test knows from what it sent: the
frame as sent where the dialect left the resize to the engine's processor
(holotron with an in-process engine), or the frame resized to the prompt's image
size, bicubic, where the daemon resized it (an engine that runs no processor of its
own). The pixels matter: the tiny processor sizes images in 16 px patches, so the
640x320 frame and its 1024x512 resize give different numbers of image tokens.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import pytest_asyncio
from PIL import Image

from holodesk.client.cli import main
from holodesk.client.exit_codes import ExitCode
from holodesk.daemon.engines.base import GenerationRequest, GenerationResult
from holodesk.daemon.engines.transformers_engine import TransformersEngine
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.policies.model import ModelPolicy
from holodesk.data.format import ImagePart, PromptMessage, TextPart
from holodesk.data.reader import Recording
from holodesk.data.trainer_rows import EARLIER_ATTEMPT
from holodesk.proto.v1 import agent_pb2, frame_pb2, geometry_pb2
from tests.daemon.support import Daemon, running_daemon
from tests.engines.support import KeepOpen, tiny_dialect
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

torch = pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
transformers = pytest.importorskip(
    "transformers", reason="needs transformers (holodesk-daemon[transformers])"
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]

# Holotron shows it on a 2x1 grid of 512 px tiles: the daemon's size for it, which
# the engine's processor may also make from the frame itself.
FRAME_SIZE = (640, 320)
MODEL_SIZE = (1024, 512)
CANDIDATES = 2
ATTEMPTS = 3  # the dialect's parse_retries (2) + 1


class KeptResults(KeepOpen):
    """The module's engine, keeping every result it gave by request id; with
    processes_images False the daemon resizes each image before handing it over."""

    def __init__(self, engine: TransformersEngine, *, processes_images: bool) -> None:
        super().__init__(engine)
        self.processes_images = processes_images
        self.results: dict[str, GenerationResult] = {}

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        result = await super().generate(request)
        self.results[request.request_id] = result
        return result


@pytest.fixture(scope="module")
def tiny_path(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))


@pytest.fixture(scope="module")
def processor(tiny_path: Path) -> Any:
    """The checkpoint's own processor (its tokenizer, chat template, image processor)."""
    return transformers.AutoProcessor.from_pretrained(str(tiny_path), trust_remote_code=True)


def frame_png() -> bytes:
    image = Image.new("RGB", FRAME_SIZE, (230, 230, 230))
    for x in range(0, FRAME_SIZE[0], 40):
        image.paste((x % 256, 40, 200), (x, 0, x + 20, FRAME_SIZE[1]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass
class Recorded:
    root: Path
    frame: bytes
    # policy name -> (the session's recording id, the engine wrapper it ran on)
    sessions: dict[str, tuple[str, KeptResults]]


async def one_step_session(daemon: Daemon, policy: str, frame: bytes) -> str:
    stream = daemon.stream()
    started = await stream.start(
        f"open the menu ({policy})",
        policy=policy,
        sampling=agent_pb2.SamplingParams(
            candidates=CANDIDATES,
            temperature=1.0,
            seed=5,
            logprobs=True,
            prompt_token_ids=True,
        ),
    )
    width, height = FRAME_SIZE
    reply = await stream.observe(
        frame_pb2.Frame(
            frame_id="f1",
            size=geometry_pb2.Size(width=width, height=height),
            encoding=frame_pb2.IMAGE_ENCODING_PNG,
            data=frame,
            source=geometry_pb2.Rect(x=0, y=0, width=width, height=height),
            scale_factor=1.0,
        )
    )
    assert reply.WhichOneof("event") == "ended", reply
    assert reply.ended.outcome == agent_pb2.SESSION_OUTCOME_FAILED
    await stream.finished_ok()
    return started.recording_id


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def recorded(
    tiny_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Recorded]:
    settings = TransformersSettings(
        model=str(tiny_path), device="cpu", trust_remote_code=True, max_new_tokens=12
    )
    engine = TransformersEngine(settings)
    await engine.start()
    root = tmp_path_factory.mktemp("recordings")
    dialect = tiny_dialect(tmp_path_factory.mktemp("dialect"), max_tokens=12)
    wrappers = {
        "engine-resizes": KeptResults(engine, processes_images=True),
        "daemon-resizes": KeptResults(engine, processes_images=False),
    }
    policies = [ModelPolicy(dialect, wrapper, name=name) for name, wrapper in wrappers.items()]
    frame = frame_png()
    try:
        async with running_daemon(policies, record=True, record_dir=str(root)) as daemon:
            sessions = {
                name: (await one_step_session(daemon, name, frame), wrapper)
                for name, wrapper in wrappers.items()
            }
    finally:
        await engine.close()
    yield Recorded(root, frame, sessions)


def chat_of(prompt: list[PromptMessage]) -> list[dict[str, Any]]:
    """The recorded prompt as the chat a Hugging Face chat template renders."""
    chat: list[dict[str, Any]] = []
    for message in prompt:
        content: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            else:
                assert isinstance(part, ImagePart), part
                content.append({"type": "image"})
        chat.append({"role": message.role, "content": content})
    return chat


def processor_ids(
    processor: Any, chat: list[dict[str, Any]], images: list[Image.Image]
) -> list[int]:
    owner = processor if getattr(processor, "chat_template", None) else processor.tokenizer
    text = owner.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    inputs = processor(images=images, text=[text], return_tensors="pt", add_special_tokens=False)
    return [int(t) for t in inputs["input_ids"][0].tolist()]


def decoded(data: bytes) -> Image.Image:
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB")


@pytest.mark.parametrize("policy", ["engine-resizes", "daemon-resizes"])
async def test_exported_prompt_ids_are_the_processors_for_the_recorded_prompt(
    recorded: Recorded,
    processor: Any,
    policy: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recording_id, engine = recorded.sessions[policy]
    out = tmp_path / "out"
    code = main(
        ["export", str(recorded.root / recording_id), "--out", str(out), "--format", "trainer"]
    )
    assert code == ExitCode.SUCCEEDED
    err = capsys.readouterr().err
    rows = pq.read_table(out / "trainer.parquet").to_pylist()

    # Three calls of two candidates: the last call's two are rows, the rest skipped.
    last_call = ATTEMPTS * CANDIDATES - CANDIDATES
    assert [r["completion_index"] for r in rows] == [last_call, last_call + 1]
    assert f"skipped {last_call} completion(s): {EARLIER_ATTEMPT}" in err
    assert not any(r["chosen"] or r["parsed"] for r in rows)  # gibberish: nothing parsed

    # The pixels the engine's processor got, from what the test sent.
    sent = decoded(recorded.frame)
    given = (
        sent if policy == "engine-resizes" else sent.resize(MODEL_SIZE, Image.Resampling.BICUBIC)
    )
    recording = Recording.open(recorded.root / recording_id)
    step = recording.steps()[0]
    assert step.actions is not None
    assert step.actions.prompt is not None
    chat = chat_of(step.actions.prompt)
    expected = processor_ids(processor, chat, [given])
    # The other pixel rule gives other ids: the check can tell them apart.
    other = sent.resize(MODEL_SIZE, Image.Resampling.BICUBIC) if given is sent else sent
    assert processor_ids(processor, chat, [other]) != expected

    result = engine.results[f"{recording.manifest.session_id}/1/{ATTEMPTS - 1}"]
    for row in rows:
        assert row["prompt_token_ids"] == expected
        assert len(row["prompt_token_ids"]) == result.prompt_tokens
        # The exported image is those pixels, and gives those ids back.
        (image,) = row["images"]
        assert decoded(image["bytes"]).tobytes() == given.tobytes()
        assert processor_ids(processor, chat, [decoded(image["bytes"])]) == expected
        assert row["image_sizes"] == [{"width": MODEL_SIZE[0], "height": MODEL_SIZE[1]}]
        assert row["image_frame_ids"] == ["f1"]

        # The completion's ids and logprobs are the engine's, as sampled.
        sample = result.all_samples[row["completion_index"] - last_call]
        assert row["completion_token_ids"] == list(sample.token_ids)
        assert row["completion_logprobs"] == list(sample.token_logprobs)
        assert len(row["completion_token_ids"]) == len(row["completion_logprobs"]) >= 1
        assert row["loss_mask"] == [0] * len(expected) + [1] * len(sample.token_ids)
        # One version sampled every token (no update ran).
        assert row["versions"] == [
            {"version": s.version, "start": s.start, "end": s.end} for s in sample.versions
        ]
        assert [(s["start"], s["end"]) for s in row["versions"]] == [(0, len(sample.token_ids))]
        assert row["mixed_versions"] is False
