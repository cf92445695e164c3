"""What a weight update does to the transformers engine's own model object.

New weights go through transformers' own loading path: `from_pretrained` of the
serving class and config, so every hub key is renamed, split or fused exactly as
when the engine started (Nemotron's RADIO tower keeps q, k and v fused on the hub
and split in transformers, which no key mapping alone expresses); the loaded
tensors are then copied into the serving model's parameters in place. Why a copy
and not a swap of model objects: whatever holds the model (its PEFT adapter, a
device map's hooks, the engine's references) keeps holding the same object. The
cost is a second copy of the weights in host memory during the update, which is
what this engine (development machines and small hosts) can afford; vLLM's worker
streams tensors instead.

Tensors the candidate lacks and the model initialised at load (transformers'
`missing_keys`) are never copied: they would be fresh random values. LoRA adapters
go through transformers' PEFT integration (`load_adapter`, `set_adapter`,
`delete_adapter`), which wraps the targeted modules in place; the wrapper's names
(".base_layer", the adapter's name) are left out of the names this module compares
and fingerprints, so the base weights have one fingerprint with or without an
adapter wrapped around them, and the same adapter has one whatever it was called.

Everything here runs off the event loop, in a worker thread.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holodesk.daemon.engines.checkpoint import (
    Adapter,
    Checkpoint,
    TensorInfo,
    check_adapter_fits,
    check_same_model,
    read_adapter,
    read_checkpoint,
)
from holodesk.daemon.engines.fingerprint import fingerprint
from holodesk.daemon.engines.transformers_loading import LoadedModel, import_stack
from holodesk.daemon.engines.transformers_options import TransformersSettings
from holodesk.daemon.engines.weights import CheckpointInvalidError, UpdateUnsupportedError

# PEFT's wrapper around a targeted module keeps the original under this attribute.
_BASE_LAYER = re.compile(r"\.base_layer(?=\.|$)")
_LORA = re.compile(r"\.lora_(?:A|B|embedding_A|embedding_B|magnitude_vector|dropout)(?:\.|$)")


@dataclass
class PreparedWeights:
    """A candidate checkpoint loaded beside the serving model, ready to copy in."""

    path: Path
    # The serving model's name -> the loaded tensor (on the host), for every tensor
    # the checkpoint holds.
    tensors: dict[str, Any] = field(repr=False)


def serving_folder(settings: TransformersSettings) -> Path | None:
    """The folder the engine loaded: the model path, or its snapshot in the hub cache."""
    path = Path(settings.model)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        found = snapshot_download(settings.model, revision=settings.revision, local_files_only=True)
    except Exception:
        return None
    return Path(found)


def serving_checkpoint(settings: TransformersSettings) -> Checkpoint:
    """The serving checkpoint's headers, which every candidate is checked against."""
    folder = serving_folder(settings)
    if folder is None:
        raise UpdateUnsupportedError(
            f"the folder {settings.model} was loaded from is not known (not a local folder "
            "and not in the hub cache): candidates cannot be checked against it"
        )
    return read_checkpoint(folder)


def base_name(name: str, adapter: str = "") -> str:
    """A live tensor's name without PEFT's wrapper parts: "x.q_proj.base_layer.weight"
    is "x.q_proj.weight", "x.q_proj.lora_A.<adapter>.weight" is "x.q_proj.lora_A.weight"."""
    name = _BASE_LAYER.sub("", name)
    if adapter:
        name = name.replace(f".{adapter}.", ".")
        name = name.removesuffix(f".{adapter}")
    return name


def is_adapter_tensor(name: str) -> bool:
    return _LORA.search(name) is not None


def prepare_weights(
    loaded: LoadedModel, settings: TransformersSettings, serving: Checkpoint, path: Path
) -> PreparedWeights:
    """Check `path` from its headers, then load it with the serving class and config.

    Raises CheckpointNotFoundError / CheckpointInvalidError (nothing of the serving
    model is touched), UpdateUnsupportedError for a model partly offloaded by
    accelerate (its weights are not where a copy can reach them).
    """
    candidate = read_checkpoint(path)
    check_same_model(serving, candidate, allow_extra=True)
    model = loaded.model
    if any(p.device.type == "meta" for p in model.parameters()):
        raise UpdateUnsupportedError(
            "part of the model is offloaded by its device_map (on the meta device): "
            "weights cannot be updated in place; load it on devices that hold it whole"
        )
    kwargs: dict[str, Any] = {
        "config": model.config,
        "trust_remote_code": settings.trust_remote_code,
        "dtype": loaded.dtype,
        "output_loading_info": True,
        **{k: v for k, v in settings.model_kwargs.items() if k not in ("device_map", "dtype")},
    }
    try:
        # On the host (no device_map): the copy then moves each tensor to its device.
        fresh, info = type(model).from_pretrained(str(path), **kwargs)
    except Exception as exc:
        raise CheckpointInvalidError(
            f"transformers could not load {path}: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        unexpected = sorted(info.get("unexpected_keys") or ())
        mismatched = [str(item) for item in info.get("mismatched_keys") or ()]
        if unexpected or mismatched:
            detail = f"{len(unexpected)} tensors it has no place for ({', '.join(unexpected[:5])})"
            if mismatched:
                detail = f"tensors of another shape ({', '.join(mismatched[:5])})"
            raise CheckpointInvalidError(f"{path} is not the serving model: {detail}")
        initialised = set(info.get("missing_keys") or ())
        tensors = {
            name: tensor.detach()
            for name, tensor in fresh.state_dict().items()
            if name not in initialised
        }
    finally:
        del fresh
        gc.collect()
    live = _live_tensors(model)
    unknown = sorted(set(tensors) - set(live))
    if unknown:
        raise CheckpointInvalidError(
            f"{path} loads tensors the serving model does not hold: {', '.join(unknown[:5])}"
        )
    return PreparedWeights(path, tensors)


def copy_weights(model: Any, prepared: PreparedWeights) -> int:
    """Copy the prepared tensors into the serving model in place (casting to its
    dtype, moving to its devices); the number of tensors copied."""
    torch, _ = import_stack()
    live = _live_tensors(model)
    with torch.no_grad():
        for name, tensor in prepared.tensors.items():
            live[name].copy_(tensor)
    return len(prepared.tensors)


def model_checkpoint(model: Any, path: Path) -> Checkpoint:
    """The serving model's own parameters, named as PEFT sees its modules: what an
    adapter trained on this model (with transformers) must fit."""
    return Checkpoint(
        path=path,
        architecture=None,
        tensors={
            base_name(name): TensorInfo(_dtype_name(tensor), tuple(tensor.shape))
            for name, tensor in model.named_parameters()
            if not is_adapter_tensor(name)
        },
    )


def prepare_adapter(model: Any, path: Path, serving_path: Path) -> Adapter:
    """Read a PEFT LoRA adapter and check it fits the serving model, before loading."""
    _, transformers = import_stack()
    if importlib.util.find_spec("peft") is None:
        raise UpdateUnsupportedError(
            "serving a LoRA adapter with the transformers engine needs peft: "
            "install holodesk-daemon[transformers]"
        )
    if not hasattr(model, "load_adapter"):
        raise UpdateUnsupportedError(
            f"transformers {transformers.__version__}'s {type(model).__name__} cannot load "
            "PEFT adapters"
        )
    adapter = read_adapter(path)
    check_adapter_fits(model_checkpoint(model, serving_path), adapter)
    return adapter


def attach_adapter(model: Any, adapter: Adapter, name: str, previous: str) -> None:
    """Load `adapter` as `name` and serve through it; then drop `previous` (if any),
    so that a failed load leaves the previous adapter serving."""
    try:
        model.load_adapter(str(adapter.path), adapter_name=name)
        model.set_adapter(name)
    except Exception as exc:
        _drop(model, name)
        if previous:
            model.set_adapter(previous)
        raise CheckpointInvalidError(
            f"PEFT could not load {adapter.path}: {type(exc).__name__}: {exc}"
        ) from exc
    if previous:
        model.delete_adapter(previous)


def detach_adapter(model: Any, name: str) -> None:
    """Serve the base weights again. The emptied wrappers stay (they pass through)."""
    model.delete_adapter(name)


def weights_fingerprint(model: Any, adapter: str = "") -> str:
    """The shared fingerprint of the model's parameters, under their base names."""
    torch, _ = import_stack()
    with torch.no_grad():
        return fingerprint(
            (base_name(name, adapter), tensor) for name, tensor in model.named_parameters()
        )


def _live_tensors(model: Any) -> dict[str, Any]:
    """The serving model's base tensors (parameters and persistent buffers) by base name."""
    return {
        base_name(name): tensor
        for name, tensor in model.state_dict(keep_vars=True).items()
        if not is_adapter_tensor(name)
    }


def _dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _drop(model: Any, name: str) -> None:
    # It may never have been added.
    with contextlib.suppress(Exception):
        model.delete_adapter(name)
