"""The transformers engine's weight updates (`UpdatableEngine`, engines/weights.py):
checks first, the change between generations, proof after.

Each update runs in three steps, so that a refused one touches nothing:
1. prepare, while generation goes on: read the candidate's headers and check it
   against the serving checkpoint (engines/checkpoint.py), then load it beside
   the serving model (transformers_weights.py), or read and check an adapter;
2. swap, with the generation gate closed (generation_gate.py): copy the tensors
   in, or attach / detach the adapter;
3. prove: fingerprint the model's own tensors; unchanged is UpdateIneffectiveError
   and the version stays.

What the modes mean here, since `generate()` cannot change weights midway:
- WAIT: the running generation finishes on the old weights; requests queued
  behind it start on the new ones.
- KEEP: the same as WAIT. vLLM's KEEP lets a request continue on the new weights
  (two version spans); transformers cannot, so a KEEP request finishes on the old
  ones and every sample still has one span, which is true.
- ABORT: the running generation stops at its next token and runs again from its
  first token on the new weights, inside the `generate()` its caller awaits
  (`requests_retried`); it is never lost and never mixes versions.
In every mode the pause (`paused_seconds`) is the time no generation could start:
from the gate closing (the wait for the running generation included) to its opening.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from holodesk.daemon.engines.checkpoint import Checkpoint
from holodesk.daemon.engines.generation_gate import GenerationGate
from holodesk.daemon.engines.transformers_loading import LoadedModel
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.engines.transformers_weights import (
    attach_adapter,
    copy_weights,
    detach_adapter,
    prepare_adapter,
    prepare_weights,
    serving_checkpoint,
    weights_fingerprint,
)
from holodesk.daemon.engines.weights import (
    CheckpointInvalidError,
    EngineClosingError,
    PolicyVersion,
    UpdateBusyError,
    UpdateIneffectiveError,
    UpdateMode,
    WeightUpdate,
    WeightUpdateError,
    next_version,
)

Prepared = TypeVar("Prepared")


class TransformersUpdates:
    """The update half of TransformersEngine, over its model, gate and requests."""

    def __init__(
        self,
        settings: TransformersSettings,
        gate: GenerationGate,
        loaded: Callable[[], LoadedModel],
        requests_in_flight: Callable[[], int],
    ) -> None:
        self._settings = settings
        self._gate = gate
        self._loaded = loaded
        self._requests_in_flight = requests_in_flight
        self._version = PolicyVersion()
        self._busy = False
        self._closing = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._serving: Checkpoint | None = None
        # PEFT's name of the adapter serving now ("holodesk-v<number>"); "": none.
        self._adapter_key = ""

    @property
    def version(self) -> PolicyVersion:
        """The version serving now."""
        return self._version

    def fingerprint_started(self, loaded: LoadedModel) -> None:
        """Fingerprint the weights as loaded (version 0), on the engine's worker thread:
        what a trainer compares its checkpoint with before any update."""
        checksum = weights_fingerprint(loaded.model, self._adapter_key)
        self._version = dataclasses.replace(self._version, checksum=checksum)

    @property
    def updating(self) -> bool:
        return self._busy

    async def update_weights(
        self, checkpoint: Path, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        def prepare(loaded: LoadedModel) -> Any:
            if self._serving is None:
                self._serving = serving_checkpoint(self._settings)
            return prepare_weights(loaded, self._settings, self._serving, Path(checkpoint))

        def swap(loaded: LoadedModel, prepared: Any, number: int) -> str:
            copy_weights(loaded.model, prepared)
            return self._version.adapter

        return await self._run(mode, version, label, prepare, swap)

    async def load_adapter(
        self, adapter: Path, name: str, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        shown = name or Path(adapter).name

        def prepare(loaded: LoadedModel) -> Any:
            return prepare_adapter(loaded.model, Path(adapter), Path(self._settings.model))

        def swap(loaded: LoadedModel, prepared: Any, number: int) -> str:
            key = f"holodesk-v{number}"
            attach_adapter(loaded.model, prepared, key, self._adapter_key)
            self._adapter_key = key
            return shown

        return await self._run(mode, version, label, prepare, swap)

    async def unload_adapter(
        self, mode: UpdateMode, *, version: int = 0, label: str = ""
    ) -> WeightUpdate:
        def prepare(loaded: LoadedModel) -> None:
            if not self._adapter_key:
                raise CheckpointInvalidError("no adapter serves: there is nothing to unload")

        def swap(loaded: LoadedModel, prepared: None, number: int) -> str:
            detach_adapter(loaded.model, self._adapter_key)
            self._adapter_key = ""
            return ""

        return await self._run(mode, version, label, prepare, swap)

    def refuse(self) -> None:
        """Refuse updates from now on (EngineClosingError): the engine is closing."""
        self._closing = True

    async def idle(self) -> None:
        """Wait for a running update to end."""
        await self._idle.wait()

    async def _run(
        self,
        mode: UpdateMode,
        version: int,
        label: str,
        prepare: Callable[[LoadedModel], Prepared],
        swap: Callable[[LoadedModel, Prepared, int], str],
    ) -> WeightUpdate:
        if self._closing:
            raise EngineClosingError("the transformers engine is shutting down: no update now")
        if self._busy:
            raise UpdateBusyError(
                f"another update of {self._settings.model} is running; the serving version "
                f"is {self._version.number}"
            )
        # Set before the first await: a second caller in the same loop turn sees it.
        self._busy = True
        self._idle.clear()
        try:
            loaded = self._loaded()
            number = next_version(self._version, version)
            started = time.monotonic()

            def work() -> WeightUpdate:
                prepared = prepare(loaded)
                if self._closing:
                    raise EngineClosingError("the transformers engine is shutting down")
                return self._swap(loaded, prepared, swap, mode, number, label, started)

            # The update runs to its end even if its caller goes away: a model left
            # half-copied would serve neither version.
            task = asyncio.ensure_future(asyncio.to_thread(work))
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                await asyncio.wait([task])
                raise
        finally:
            self._busy = False
            self._idle.set()

    def _swap(
        self,
        loaded: LoadedModel,
        prepared: Prepared,
        swap: Callable[[LoadedModel, Prepared, int], str],
        mode: UpdateMode,
        number: int,
        label: str,
        started: float,
    ) -> WeightUpdate:
        previous = self._version
        in_flight = self._requests_in_flight()
        interrupted = self._gate.interrupted
        with self._gate.closed(interrupt=mode is UpdateMode.ABORT) as closed_at:
            try:
                adapter = swap(loaded, prepared, number)
            except WeightUpdateError:
                raise
            except Exception as exc:
                raise self._failed(loaded, previous, exc) from exc
            checksum = weights_fingerprint(loaded.model, self._adapter_key)
            if checksum == previous.checksum:
                raise UpdateIneffectiveError(
                    f"the weights did not change (fingerprint {checksum}): version "
                    f"{previous.number} still serves"
                )
            self._version = PolicyVersion(number, label, adapter, checksum)
            paused = time.monotonic() - closed_at
        return WeightUpdate(
            version=self._version,
            previous=previous,
            mode=mode,
            paused_seconds=paused,
            seconds=time.monotonic() - started,
            requests_in_flight=in_flight,
            requests_retried=self._gate.interrupted - interrupted,
        )

    def _failed(
        self, loaded: LoadedModel, previous: PolicyVersion, exc: Exception
    ) -> WeightUpdateError:
        """An error during the swap itself, saying which weights serve after it."""
        checksum = weights_fingerprint(loaded.model, self._adapter_key)
        if checksum == previous.checksum:
            return WeightUpdateError(
                f"the update failed ({type(exc).__name__}: {exc}); version "
                f"{previous.number} still serves"
            )
        self._version = dataclasses.replace(previous, checksum=checksum, label="partly updated")
        return WeightUpdateError(
            f"the update failed midway ({type(exc).__name__}: {exc}): the model holds part "
            "of the new weights; update again with a whole checkpoint"
        )
