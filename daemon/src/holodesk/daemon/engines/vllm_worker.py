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

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from holodesk.daemon.engines.fingerprint import fingerprint

log = logging.getLogger(__name__)

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
    """Every tensor the model computes with, by name: its parameters (with the
    tensors that hold the bytes of vLLM's shared and wrapper parameters, TorchAO's
    qdata and scale..., as vLLM's own weight checksum walks them), the weights its
    CPU kernels repacked (`kernel_weight`), then its buffers.

    Buffers count because vLLM keeps state derived from the weights in them: Mamba2's
    `conv_weights` is a view of conv1d's weight that a reload updates only while the
    two share memory (see `_refresh_detached_views`). A fingerprint of parameters
    alone called an engine whose conv_weights still held the previous checkpoint's
    values "the same weights" as a fresh start on the new one.
    """
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

    for module_name, module in model.named_modules():
        prefix = f"{module_name}." if module_name else ""
        for name, parameter in module.named_parameters(recurse=False):
            packed = kernel_weight(module) if name == "weight" else None
            yield from leaves(prefix + name, parameter if packed is None else packed)
    for name, buffer in model.named_buffers():
        yield name, buffer


def kernel_weight(layer: Any) -> Any:
    """The weight a linear layer's CPU kernel computes with, where vLLM packed it
    out of the parameter (None elsewhere).

    On CPU, vLLM's unquantized linear layers hand their weight to a kernel (oneDNN,
    or the AMX "sgl" kernels, or zentorch) that keeps its own packed copy, and
    replace the parameter by an empty tensor: the parameter says nothing of what
    the layer computes. The kernel itself is asked: multiplied by the identity, it
    gives back W^T exactly (each output is one weight times 1.0 plus zeros, so no
    rounding and no summation order), in the weight's dtype and shape, so a layer
    fingerprints as the parameter it was loaded from. Costs one (K x K) @ (K x N)
    product per layer, run only for packed layers.
    """
    import torch

    weight = getattr(layer, "weight", None)
    linear = getattr(layer, "cpu_linear", None)
    if not callable(linear) or not isinstance(weight, torch.Tensor) or weight.numel():
        return None
    inputs: int = getattr(layer, "input_size_per_partition", 0) or getattr(layer, "input_size", 0)
    identity = torch.eye(inputs, dtype=weight.dtype, device=weight.device)
    try:
        return linear(identity, weight, None).t().contiguous()
    except Exception as exc:
        # A kernel this does not know how to ask: its (empty) parameter stands in.
        log.warning(
            "a packed %s weight is left out of the fingerprint: %s", type(layer).__name__, exc
        )
        return None


def _same_memory(a: Any, b: Any) -> bool:
    return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def _refresh_detached_views(model: Any) -> list[str]:
    """Bring buffers that are views of a parameter up to date after a reload;
    returns those that could not be (the reload left them with old values).

    vLLM's layerwise reload copies new values into each parameter's memory and
    leaves non-persistent buffers alone, counting on them being views of that
    memory. A kernel that repacked a parameter at load time gave it new memory,
    and the view kept the old: on CPUs with AVX512-BF16 or bf16 on Arm, vLLM
    prepacks Mamba2's conv1d weight (`causal_conv1d_weight_pack`), and the
    mixer's `conv_weights` buffer, the view its convolution reads, kept the
    first checkpoint's values through every update: an updated engine computed
    with the old convolution and the new everything else. The unpacked weight
    the kernel keeps beside the packed one (`_cpu_unpacked_conv_weight`, set
    again by the reload) is copied into the view's memory, as at a fresh load.
    """
    import torch

    owners = {id(p): m for m in model.modules() for p in m.parameters(recurse=False)}
    stale: list[str] = []
    for module_name, module in model.named_modules():
        for name, buffer in module.named_buffers(recurse=False):
            base = buffer._base
            if base is None or _same_memory(buffer, base):
                continue
            source = getattr(owners.get(id(base)), "_cpu_unpacked_conv_weight", None)
            if (
                isinstance(source, torch.Tensor)
                and source.numel() == buffer.numel()
                and source.dtype == buffer.dtype
            ):
                buffer.copy_(source.reshape(buffer.shape))
            else:
                stale.append(f"{module_name}.{name}" if module_name else name)
    return stale


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
        Then buffers that are views of a parameter a CPU kernel repacked (Mamba2's
        `conv_weights`) get the new values (`_refresh_detached_views`), and the
        worker's LoRA adapters are dropped (loaded again from their folders by the
        next request naming them). The loaded model then holds what a fresh start on
        the checkpoint holds, tensor for tensor, buffers included
        (tests/engines/test_vllm_weights.py compares the two). The encoder and KV
        caches are the caller's to reset (vllm_weights._reset_caches), on the engine
        core's side and the worker's at once: this worker's encoder cache dropped
        alone, the scheduler would still count an image's embedding as computed and
        the next request with it would kill the engine core ("Encoder cache miss").

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
                stale = _refresh_detached_views(self.model_runner.get_model())
                self.model_runner.reset_lora_state()
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
        if stale and not error:
            # The previous values stay in them: the caller loads the previous
            # checkpoint again, which they fit.
            error = (
                f"the reload left {', '.join(stale)} with the previous weights' values (views "
                "of parameters a kernel repacked, with no unpacked copy to refresh them from)"
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
        """`fingerprint` of this rank's tensors as they are now (`leaf_tensors`:
        parameters, CPU-packed weights through their kernel, buffers)."""
        import torch

        with torch.inference_mode():
            return fingerprint(leaf_tensors(self.model_runner.get_model()))
