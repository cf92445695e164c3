"""holodesk's vLLM worker extension: weight loads and weight fingerprints that run
inside vLLM's workers, next to the tensors, through `AsyncLLM.collective_rpc`.

vLLM mixes the class named by the engine arg `worker_extension_cls` into its
worker class (GPU and CPU workers alike: the CPU worker subclasses the GPU one),
so these methods see `self.model_runner` and `self.vllm_config`. VllmEngine sets
`WORKER_EXTENSION` unless the user gave another extension; weight updates need
this one (a user's own extension may subclass it).

Why in the worker and not in the daemon: with tensor parallelism every rank holds
its own shard, and only the worker can say what it really holds. A transport that
"succeeds" without changing a byte (vLLM's NCCL one off CUDA) is caught by the
fingerprint, which is computed from the worker's own tensors after the load.

This module imports vLLM and torch only inside the methods, so the daemon can
import it (for its qualified name) without either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from holodesk.daemon.engines.fingerprint import fingerprint

WORKER_EXTENSION = "holodesk.daemon.engines.vllm_worker.HolodeskWorkerExtension"
LOAD_METHOD = "holodesk_load_safetensors"
FINGERPRINT_METHOD = "holodesk_weights_fingerprint"


def safetensors_tensors(
    files: Sequence[str], wanted: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, Any]]:
    """Each tensor of the files (those `wanted`), one at a time, read on the CPU
    (memory-mapped): the whole checkpoint is never in memory at once."""
    from safetensors import safe_open

    for file in files:
        with safe_open(file, framework="pt", device="cpu") as opened:
            for name in opened.keys():  # noqa: SIM118 (safe_open is no mapping)
                if wanted is None or wanted(name):
                    yield name, opened.get_tensor(name)


class _Counted:
    """An iterator of named tensors that counts what it handed out."""

    def __init__(self, tensors: Iterable[tuple[str, Any]]) -> None:
        self._tensors = iter(tensors)
        self.count = 0

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> tuple[str, Any]:
        item = next(self._tensors)
        self.count += 1
        return item


def leaf_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    """The model's parameters, with the tensors that hold the bytes of vLLM's
    shared and wrapper parameters (TorchAO's qdata and scale...), as vLLM's own
    weight checksum walks them."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass
    from vllm.model_executor.parameter import SharedWeightParameter

    def leaves(name: str, tensor: Any) -> Iterator[tuple[str, Any]]:
        if isinstance(tensor, SharedWeightParameter):
            for index, partition in tensor.partitions.items():
                yield from leaves(f"{name}.{index}", partition)
        elif is_traceable_wrapper_subclass(tensor):
            for attr in tensor.__tensor_flatten__()[0]:
                yield from leaves(f"{name}.{attr}", getattr(tensor, attr))
        else:
            yield name, tensor

    for name, parameter in model.named_parameters():
        yield from leaves(name, parameter)


def _describe(exc: BaseException) -> str:
    """The error and the line that raised it (a bare assert says nothing else)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


class HolodeskWorkerExtension:
    """Methods vLLM mixes into its worker; called with `collective_rpc`, each rank
    answers for itself. Names carry a prefix: vLLM refuses an extension whose
    attributes clash with the worker's."""

    model_runner: Any
    vllm_config: Any

    def holodesk_load_safetensors(self, files: list[str]) -> dict[str, Any]:
        """Load the tensors of `files` into the serving model in place, streamed
        tensor by tensor (memory-mapped, never the whole checkpoint at once).

        Pass 1 is vLLM's in-place reload (what its `reload_weights` does): every
        layer is put back in checkpoint form on the meta device, the model's own
        `load_weights` runs (renames, q/k/v stacking, sharding across ranks), and
        each layer, once all its tensors arrived, is materialized, processed as
        after a first load (Mamba's conv1d weight is reshaped then: the model's
        `load_weights` alone fails on a loaded model) and copied into the
        tensors the kernels use. A layer the model loads without its parameters'
        weight loaders is never seen arriving, and vLLM puts its old tensors back
        (in vLLM 0.32, NemotronH_Nano_VL_V2's projector `mlp1`, loaded with
        `default_weight_loader`: an update would silently keep the old projector).
        Pass 2 loads the checkpoint's tensors of those layers again, now on their
        real tensors, through the model's own `load_weights`.
        Then the worker's LoRA adapters (loaded again from their folders by the
        next request naming them), encoder and multimodal caches are dropped.

        Answers {"tensors": n read, "second_pass": n loaded by pass 2, "error": ""
        or what failed, "missing": the failure was a file not found}: an answer,
        not an exception, because vLLM sends a worker's exception back as a bare
        message. After a failure the reload is finalized all the same, which puts
        every layer back on the device: the layers it had not reached keep their
        old values, those it had hold new ones. The caller tells the two apart
        with the fingerprint and loads a whole checkpoint again if needed
        (VllmEngine reloads the previous one).
        """
        import torch
        from vllm.config import set_current_vllm_config

        counted = _Counted(safetensors_tensors(files))
        second = 0
        try:
            with set_current_vllm_config(self.vllm_config), torch.inference_mode():
                unreached = self._reload_in_place(counted)
                loaded = counted.count
                # A loader may stop early: whatever it left unread was not loaded.
                unread = sum(1 for _ in counted)
                if unreached:
                    second = self._load_directly(files, unreached)
                self.model_runner.reset_lora_state()
                self.model_runner.reset_encoder_cache()
                self.model_runner.reset_mm_cache()
        except Exception as exc:
            return {
                "tensors": counted.count,
                "second_pass": second,
                "error": _describe(exc),
                "missing": isinstance(exc, FileNotFoundError),
            }
        error = (
            f"the model's loader left {unread} tensor(s) of the checkpoint unread" if unread else ""
        )
        return {"tensors": loaded, "second_pass": second, "error": error, "missing": False}

    def _reload_in_place(self, tensors: Iterable[tuple[str, Any]]) -> set[str]:
        """Pass 1; returns the names of the modules it did not reach."""
        from vllm.model_executor.model_loader.reload import (
            finalize_layerwise_reload,
            initialize_layerwise_reload,
        )
        from vllm.model_executor.model_loader.reload.layerwise import get_layerwise_info

        model = self.model_runner.get_model()
        initialize_layerwise_reload(model)
        try:
            model.load_weights(tensors)
            unreached = set()
            for name, module in model.named_modules():
                info = get_layerwise_info(module)
                if info.can_load() and info.load_numel == 0 and (info.load_numel_total or 0) > 0:
                    unreached.add(name)
            return unreached
        finally:
            # Also after a failure: every layer goes back on the device.
            finalize_layerwise_reload(model, self.vllm_config.model_config)

    def _load_directly(self, files: Sequence[str], modules: set[str]) -> int:
        """Pass 2: the files' tensors of `modules`, through the model's `load_weights`."""
        wanted = [
            (name, tensor)
            for name, tensor in safetensors_tensors(
                files, lambda n: n.rpartition(".")[0] in modules
            )
        ]
        if wanted:
            self.model_runner.get_model().load_weights(wanted)
        return len(wanted)

    def holodesk_weights_fingerprint(self) -> str:
        """`fingerprint` of this rank's parameters, as they are now."""
        import torch

        with torch.inference_mode():
            return fingerprint(leaf_tensors(self.model_runner.get_model()))
