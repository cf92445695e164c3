"""The vllm engine's weight updates (`UpdatableEngine`, engines/weights.py), with
vLLM's own APIs: pause_generation / resume_generation, collective_rpc into
holodesk's worker extension (vllm_worker.py), update_weight_version, reset of
the caches, add_lora / remove_lora.

One update, in order, so that a refused one touches nothing:
1. check, while generation goes on: the candidate's headers against the serving
   checkpoint's (engines/checkpoint.py: missing, half-written, another
   architecture or shape are refused here);
2. pause generation in the update's mode (vLLM's "keep", "wait" or "abort"),
   its caches left as they are;
3. load in the worker (streamed, in place), then fingerprint the worker's own
   tensors: unchanged is UpdateIneffectiveError and the version stays;
4. reset what the old weights computed: the prefix (KV) cache, preempting the
   requests KEEP froze, and the encoder cache; not the multimodal processor
   cache, which holds preprocessed pixels, not anything the weights computed
   (`_reset_caches` says why it must not be cleared); label the weights with
   vLLM's `update_weight_version` (str of the version number: outputs carry it
   per token);
5. resume, always, whatever happened in 2-4.

A load that fails midway leaves some tensors new and some old. Nothing may serve
that: the previous checkpoint (the one that served) is loaded again, its
fingerprint compared with the one it had, and the update fails saying so. If that
reload fails too (its folder was deleted since), the requests in flight are
aborted, `broken` says why, and the engine refuses every request until a whole
checkpoint loads (the next successful update_weights) or the daemon restarts:
a daemon that serves no weights is honest, one that serves mixed weights is not.

Modes, as vLLM implements them: KEEP freezes the requests in flight; on resume
they are recomputed on the new weights (the reset KV cache makes vLLM prefill
their prompt and the tokens so far again) and their later tokens carry the new
version, so a sample has two spans. WAIT lets them finish on the old weights
before the load. ABORT stops them; VllmEngine.generate() runs each again on the
new weights after the resume (`RequestRestarts`), so its caller gets one answer
of one version. An adapter change cannot follow KEEP (a vLLM request keeps the
adapter it started with): it runs as WAIT, and its WeightUpdate says WAIT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.engines.checkpoint import (
    Checkpoint,
    check_adapter_fits,
    check_same_model,
    read_adapter,
    read_checkpoint,
)
from holodesk.daemon.engines.vllm_worker import FINGERPRINT_METHOD, LOAD_METHOD, WORKER_EXTENSION
from holodesk.daemon.engines.weights import (
    CheckpointInvalidError,
    CheckpointNotFoundError,
    EngineClosingError,
    PolicyVersion,
    UpdateBusyError,
    UpdateIneffectiveError,
    UpdateMode,
    UpdateUnsupportedError,
    WeightUpdate,
    WeightUpdateError,
    next_version,
)
from holodesk.values.generation import VersionSpan

log = logging.getLogger(__name__)

EXTENSION_ARG = "worker_extension_cls"


def with_worker_extension(engine_args: Mapping[str, Any]) -> dict[str, Any]:
    """The engine args with holodesk's worker extension, unless the user named one."""
    args = dict(engine_args)
    if not args.get(EXTENSION_ARG):
        args[EXTENSION_ARG] = WORKER_EXTENSION
    return args


def version_number(label: str) -> int:
    """A vLLM weight-version label as a policy version: the engine labels its
    weights str(number); vLLM's own label before any is "default" (version 0)."""
    try:
        number = int(label)
    except ValueError:
        return 0
    return max(number, 0)


def spans_of(weight_versions: Any) -> tuple[VersionSpan, ...]:
    """vLLM's per-token weight-version spans of a finished completion (None when
    vLLM knew no label) as holodesk's VersionSpans."""
    if not weight_versions:
        return ()
    return tuple(
        VersionSpan(version_number(str(span.version)), int(span.start), int(span.end))
        for span in weight_versions
    )


@dataclass(frozen=True)
class Adapter:
    """The LoRA adapter every request carries (vLLM's LoRARequest fields)."""

    name: str
    lora_id: int
    path: str


class RequestRestarts:
    """What VllmEngine.generate() needs to tell a request aborted by an update
    (run it again after the resume) from one aborted by its caller (an error)."""

    def __init__(self) -> None:
        self._serving = asyncio.Event()
        self._serving.set()
        # Incremented as an ABORT pause begins; `aborting` until its resume.
        self.epoch = 0
        self.aborting = False
        # Requests run again since the engine started.
        self.restarted = 0

    def by_update(self, epoch_at_start: int) -> bool:
        """Whether an abort seen now, of a request started at `epoch_at_start`,
        came from an update (the caller's own aborts are told apart by the engine)."""
        return self.aborting or self.epoch != epoch_at_start

    async def serving(self) -> None:
        """Wait until generation is resumed."""
        await self._serving.wait()

    def paused(self, mode: UpdateMode) -> None:
        self._serving.clear()
        if mode is UpdateMode.ABORT:
            self.epoch += 1
            self.aborting = True

    def resumed(self) -> None:
        self.aborting = False
        self._serving.set()


class VllmUpdates:
    """The update half of VllmEngine, over its AsyncLLM and its requests in flight."""

    def __init__(
        self,
        engine_args: Mapping[str, Any],
        llm: Callable[[], Any],
        requests_in_flight: Callable[[], Collection[str]],
    ) -> None:
        self._args = dict(engine_args)
        self._llm = llm
        self._requests_in_flight = requests_in_flight
        self.restarts = RequestRestarts()
        self._version = PolicyVersion()
        self._busy = False
        self._closing = False
        # What an update is doing now ("" when none): checking, pausing, loading,
        # restoring, resuming. For operators and tests.
        self.stage = ""
        # Why the engine serves nothing any more ("": it serves).
        self.broken = ""
        # The fingerprint of what the worker holds when that is not the serving
        # version's weights (mixed, while broken; "?" when even that is unknown).
        self._held = ""
        # Headers of the checkpoint whose weights serve (None: not read yet).
        self._serving: Checkpoint | None = None
        self.adapter: Adapter | None = None
        self._next_lora_id = 1

    @property
    def policy_version(self) -> PolicyVersion:
        return self._version

    @property
    def updating(self) -> bool:
        return self._busy

    @property
    def extension_is_ours(self) -> bool:
        return self._args.get(EXTENSION_ARG) == WORKER_EXTENSION

    def lora_request(self) -> Any:
        """vLLM's LoRARequest for a request starting now (None: the base weights)."""
        if self.adapter is None:
            return None
        from vllm.lora.request import LoRARequest

        return LoRARequest(self.adapter.name, self.adapter.lora_id, self.adapter.path)

    async def started(self) -> None:
        """Label the weights the engine started with version 0 and fingerprint them."""
        llm = self._llm()
        await llm.update_weight_version(str(self._version.number))
        if self.extension_is_ours:
            self._version = PolicyVersion(checksum=await self._fingerprint())

    def closing(self) -> None:
        """No update starts from now on; requests waiting for a resume wake up."""
        self._closing = True
        self.restarts.resumed()

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        self._require_extension()
        async with self._turn():
            started = time.monotonic()
            number = next_version(self._version, version)
            self.stage = "checking"
            serving = await self._serving_checkpoint()
            candidate = await asyncio.to_thread(read_checkpoint, Path(checkpoint))
            check_same_model(serving, candidate)

            async def swap() -> PolicyVersion:
                checksum = await self._load(candidate, serving)
                self._serving = candidate
                # A whole checkpoint loaded: whatever was mixed before is gone.
                self.broken, self._held = "", ""
                adapter = self._version.adapter
                return PolicyVersion(number, label, adapter, checksum)

            return await self._paused(mode, started, swap)

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        self._require_lora()
        async with self._turn():
            started = time.monotonic()
            number = next_version(self._version, version)
            if not name:
                raise CheckpointInvalidError("an adapter needs a name")
            self.stage = "checking"
            serving = await self._serving_checkpoint()
            found = await asyncio.to_thread(read_adapter, Path(adapter))
            check_adapter_fits(serving, found)
            wanted = Adapter(name, self._next_lora_id, str(found.path))
            self._next_lora_id += 1

            async def swap() -> PolicyVersion:
                from vllm.lora.request import LoRARequest

                llm = self._llm()
                request = LoRARequest(wanted.name, wanted.lora_id, wanted.path)
                try:
                    added = await llm.add_lora(request)
                except Exception as exc:
                    raise CheckpointInvalidError(
                        f"vLLM refused the adapter {adapter}: {exc}"
                    ) from exc
                if not added or wanted.lora_id not in await llm.list_loras():
                    raise UpdateIneffectiveError(
                        f"vLLM did not load the adapter {adapter}: the base weights still serve"
                    )
                previous = self.adapter
                self.adapter = wanted
                if previous is not None:
                    await llm.remove_lora(previous.lora_id)
                return PolicyVersion(number, label, name, self._version.checksum)

            return await self._paused(_adapter_mode(mode), started, swap)

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        self._require_lora()
        async with self._turn():
            started = time.monotonic()
            number = next_version(self._version, version)
            if self.adapter is None:
                raise CheckpointInvalidError("no adapter serves: the base weights serve already")

            async def swap() -> PolicyVersion:
                serving = self.adapter
                self.adapter = None
                if serving is not None:
                    await self._llm().remove_lora(serving.lora_id)
                return PolicyVersion(number, label, "", self._version.checksum)

            return await self._paused(_adapter_mode(mode), started, swap)

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One update at a time, none while closing."""
        if self._closing:
            raise EngineClosingError("the vllm engine is shutting down: no update starts now")
        if self._busy:
            raise UpdateBusyError(
                f"another update of the vllm engine is running (stage: {self.stage or 'starting'})"
            )
        self._llm()  # EngineError before start() or after close()
        self._busy = True
        try:
            yield
        except WeightUpdateError:
            raise
        except Exception as exc:
            if self._closing:
                raise EngineClosingError(
                    f"the vllm engine shut down during the update: {exc}"
                ) from exc
            raise WeightUpdateError(f"the weight update failed in vLLM: {exc}") from exc
        finally:
            self._busy = False
            self.stage = ""

    async def _paused(
        self,
        mode: UpdateMode,
        started: float,
        swap: Callable[[], Awaitable[PolicyVersion]],
    ) -> WeightUpdate:
        """Pause in `mode`, swap, reset the caches, label the version, resume."""
        llm = self._llm()
        in_flight = len(self._requests_in_flight())
        restarted_before = self.restarts.restarted
        previous = self._version
        self.stage = "pausing"
        self.restarts.paused(mode)
        paused_at = time.monotonic()
        try:
            # Caches are reset after the load instead (`_reset_caches`): clear_cache
            # would also clear the multimodal processor cache under requests
            # being preprocessed.
            await llm.pause_generation(mode=mode.value, clear_cache=False)
            # WAIT's drain generated on the old weights: not counted as paused.
            paused_at = time.monotonic()
            self.stage = "loading"
            new = await swap()
            await _reset_caches(llm)
            await llm.update_weight_version(str(new.number))
            self._version = new
        finally:
            self.stage = "resuming"
            try:
                if self.broken:
                    # Mixed weights: nothing in flight may go on with them.
                    in_flight_now = list(self._requests_in_flight())
                    if in_flight_now:
                        await llm.abort(in_flight_now)
                await llm.resume_generation()
            finally:
                resumed_at = time.monotonic()
                self.restarts.resumed()
        # Requests aborted by the pause have seen their abort by now (vLLM sent it
        # before its pause returned); give their generate() a turn to count it.
        await asyncio.sleep(0)
        return WeightUpdate(
            version=self._version,
            previous=previous,
            mode=mode,
            paused_seconds=resumed_at - paused_at,
            seconds=resumed_at - started,
            requests_in_flight=in_flight,
            requests_retried=self.restarts.restarted - restarted_before,
        )

    async def _load(self, candidate: Checkpoint, serving: Checkpoint) -> str:
        """Load `candidate` in the worker and prove it; on a failure midway, load
        `serving` again. Returns the new fingerprint."""
        held = self._held or self._version.checksum
        answer = await self._rpc_load(candidate)
        if answer["error"]:
            if await self._fingerprint() == held:
                # It failed before it changed anything.
                raise _load_error(
                    candidate.path, answer, "no weight changed: the old weights serve"
                )
            raise await self._restore(candidate, serving, answer)
        checksum = await self._fingerprint()
        if checksum == held:
            raise UpdateIneffectiveError(
                f"loading {candidate.path} left the weights as they were (fingerprint "
                f"{checksum}): it holds the serving weights; version {self._version.number} "
                "still serves"
            )
        return checksum

    async def _restore(
        self, candidate: Checkpoint, serving: Checkpoint, failed: Mapping[str, Any]
    ) -> WeightUpdateError:
        """Load the serving checkpoint again after a load that failed midway; the
        error to raise says whether the old weights serve again."""
        self.stage = "restoring"
        log.error(
            "loading %s failed after %d tensors (%s): loading %s again",
            candidate.path,
            failed["tensors"],
            failed["error"],
            serving.path,
        )
        try:
            answer = await self._rpc_load(serving)
            checksum = await self._fingerprint() if not answer["error"] else ""
        except Exception as exc:
            answer, checksum = {"error": str(exc)}, ""
        if not answer["error"] and checksum == self._version.checksum:
            return _load_error(
                candidate.path,
                failed,
                f"the previous weights ({serving.path}) were loaded again and serve "
                "(fingerprint checked)",
            )
        why = answer["error"] or f"its fingerprint is {checksum}, not {self._version.checksum}"
        self.broken = (
            f"loading {candidate.path} failed midway ({failed['error']}) and loading the "
            f"previous weights {serving.path} again failed too ({why}): the weights are "
            "mixed; update the weights with a whole checkpoint, or restart the daemon"
        )
        try:
            self._held = await self._fingerprint()
        except Exception:
            self._held = "?"
        log.critical("%s", self.broken)
        return WeightUpdateError(self.broken)

    async def _rpc_load(self, checkpoint: Checkpoint) -> dict[str, Any]:
        files = [str(file) for file in checkpoint.files]
        answers = await self._llm().collective_rpc(LOAD_METHOD, args=(files,))
        # Every rank answers; the first failure (or the first answer) speaks for all.
        failed = [answer for answer in answers if answer["error"]]
        return dict(failed[0] if failed else answers[0])

    async def _fingerprint(self) -> str:
        """One fingerprint of every rank's tensors (each rank holds its own shard)."""
        answers = await self._llm().collective_rpc(FINGERPRINT_METHOD)
        if len(answers) == 1:
            return str(answers[0])
        import hashlib

        joined = "\n".join(str(answer) for answer in answers)
        return f"sha256:{hashlib.sha256(joined.encode()).hexdigest()}"

    async def _serving_checkpoint(self) -> Checkpoint:
        if self._serving is None:
            folder = await asyncio.to_thread(_serving_folder, self._args)
            if folder is None:
                raise UpdateUnsupportedError(
                    f"the folder vLLM loaded {self._args['model']} from is not known (not a "
                    "local folder and not in the hub cache): candidates cannot be checked "
                    "against it"
                )
            self._serving = await asyncio.to_thread(read_checkpoint, folder)
        return self._serving

    def _require_extension(self) -> None:
        if not self.extension_is_ours:
            raise UpdateUnsupportedError(
                f"the vllm engine runs worker_extension_cls={self._args.get(EXTENSION_ARG)!r}; "
                f"weight updates need holodesk's {WORKER_EXTENSION} (leave "
                "worker_extension_cls unset, or make your extension subclass it and name "
                "ours in the daemon's engine args)"
            )

    def _require_lora(self) -> None:
        if self.broken:
            raise UpdateUnsupportedError(
                f"the vllm engine serves nothing: {self.broken} (an adapter needs base weights)"
            )
        if not self._args.get("enable_lora"):
            raise UpdateUnsupportedError(
                "the vllm engine was started without LoRA: start it with the engine args "
                "enable_lora=true and max_lora_rank >= the adapter's rank, or merge the "
                "adapter into a checkpoint and update the weights with it"
            )


async def _reset_caches(llm: Any) -> None:
    """Drop what the old weights computed, with generation paused: the KV cache
    (vLLM's prefix cache reset, which preempts the requests KEEP froze so that
    they are prefilled again on the new weights, as vLLM's own pause with
    clear_cache does) and the encoder cache (image embeddings).

    vLLM's multimodal processor cache is left alone: it holds each image's
    preprocessed pixels (tiles, normalised), which no weight touches. Clearing it
    (what `pause_generation(clear_cache=True)` and `reset_mm_cache` do) is not
    safe while requests are preprocessed, and they are during a pause: vLLM
    preprocesses a request on its renderer thread as it is submitted, and clears
    the cache's sender side on another thread. A clear landing between the
    processor's "is this image cached?" (yes: the screenshot of the previous
    step) and its read of the cached entry, while it processes the prompt's new
    image, fails the request with an AssertionError ("Expected a cached item for
    mm_hash=..."); seen in 1 run of 5 of tests/e2e/test_rl_loop.py, a session on
    the old version ending in a round across a KEEP update. The engine core's
    side was cleared at another instant again, so the two sides also disagreed
    on what was sent. Not cleared, they cannot disagree because of an update.
    """
    # Nothing runs now (paused), so running requests are only those KEEP froze.
    await llm.reset_prefix_cache(reset_running_requests=True, reset_connector=True)
    await llm.reset_encoder_cache()


def _adapter_mode(mode: UpdateMode) -> UpdateMode:
    # A vLLM request keeps the adapter it started with: KEEP would label its later
    # tokens with a version whose adapter never served them.
    return UpdateMode.WAIT if mode is UpdateMode.KEEP else mode


def _load_error(path: Path, answer: Mapping[str, Any], outcome: str) -> WeightUpdateError:
    message = (
        f"loading {path} failed after {answer['tensors']} tensors: {answer['error']}; {outcome}"
    )
    if answer.get("missing"):
        return CheckpointNotFoundError(message)
    return CheckpointInvalidError(message)


def _serving_folder(engine_args: Mapping[str, Any]) -> Path | None:
    """The folder vLLM loaded: the model path, or its snapshot in the hub cache."""
    model = str(engine_args["model"])
    path = Path(model)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        found = snapshot_download(
            model, revision=engine_args.get("revision"), local_files_only=True
        )
    except Exception:
        return None
    return Path(found)


def raise_if_broken(updates: VllmUpdates) -> None:
    if updates.broken:
        raise EngineError(f"the vllm engine serves nothing: {updates.broken}")
