"""Loading a checkpoint with transformers: processor, model class, device and dtype.

- The processor: `AutoProcessor` (a tokenizer plus an image processor for a
  vision-language model); checkpoints without one (text-only models) fall back
  to `AutoTokenizer`.
- The model class: the one the checkpoint's remote code names in `auto_map`
  (image-text-to-text, then causal LM, then plain AutoModel), else
  `AutoModelForImageTextToText` for architectures transformers lists as
  image-text-to-text, else `AutoModelForCausalLM`.
- trust_remote_code is passed to every loader: a checkpoint whose config,
  processor or model is code (Holotron-12B's is) needs it.

Everything here runs in the engine's worker thread; torch and transformers are
imported on first use with an actionable message when missing.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from holodesk.daemon.engines.base import EngineError
from holodesk.daemon.engines.transformers_options import TransformersSettings

INSTALL_HINT = "install holodesk-daemon[transformers] (transformers, torch, accelerate)"
# Model classes a checkpoint's remote code may name, in order of preference.
_REMOTE_CLASSES = ("AutoModelForImageTextToText", "AutoModelForCausalLM", "AutoModel")


@dataclass
class LoadedModel:
    model: Any
    # A processor (tokenizer + image processor) or, for text-only models, the tokenizer.
    processor: Any
    tokenizer: Any
    device: Any
    dtype: Any

    @property
    def takes_images(self) -> bool:
        return self.processor is not self.tokenizer and hasattr(self.processor, "image_processor")


def import_stack() -> tuple[Any, Any]:
    """(torch, transformers), or an EngineError that says what to install."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EngineError(
            f"the transformers engine needs torch and transformers ({exc}): {INSTALL_HINT}"
        ) from exc
    return torch, transformers


def resolve_device(torch: Any, device: str) -> Any:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            built = torch.version.cuda or "no CUDA"
            raise EngineError(
                f"device {device} asked for, but torch {torch.__version__} ({built}) sees no "
                "CUDA GPU; use device=cpu or fix the driver"
            )
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise EngineError(f"device {device}: torch sees {torch.cuda.device_count()} GPU(s)")
    if device == "mps" and not torch.backends.mps.is_available():
        raise EngineError("device mps asked for, but this torch has no usable MPS backend")
    return torch.device(device)


def resolve_dtype(torch: Any, settings: TransformersSettings, device: Any) -> Any:
    """A torch dtype, or "auto" (the checkpoint's own dtype)."""
    name = settings.dtype_name
    if name == "auto":
        # Half precision on a CPU is slow where it works at all; a GPU runs the
        # checkpoint as it was saved (bfloat16 for Holotron-12B).
        if settings.device_map is None and device.type == "cpu":
            return torch.float32
        return "auto"
    return getattr(torch, name)


def model_class(transformers: Any, config: Any) -> Any:
    auto_map = getattr(config, "auto_map", None) or {}
    for name in _REMOTE_CLASSES:
        if name in auto_map:
            return getattr(transformers, name)
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    if getattr(config, "model_type", None) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def load_processor(transformers: Any, settings: TransformersSettings) -> tuple[Any, Any]:
    """(processor, tokenizer); they are the same object for a text-only model."""
    common = {"trust_remote_code": settings.trust_remote_code, "revision": settings.revision}
    try:
        processor = transformers.AutoProcessor.from_pretrained(settings.model, **common)
    except (OSError, ValueError, TypeError, KeyError, ImportError) as exc:
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(settings.model, **common)
        except Exception as fallback:
            raise EngineError(
                f"cannot load a processor or tokenizer for {settings.model}: {exc}; {fallback}"
            ) from fallback
        return tokenizer, tokenizer
    tokenizer = getattr(processor, "tokenizer", None)
    return processor, tokenizer if tokenizer is not None else processor


def load(settings: TransformersSettings) -> LoadedModel:
    torch, transformers = import_stack()
    device = resolve_device(torch, settings.device)
    if settings.device_map is not None and importlib.util.find_spec("accelerate") is None:
        raise EngineError(f"device_map needs the accelerate package: {INSTALL_HINT}")
    dtype = resolve_dtype(torch, settings, device)
    common = {"trust_remote_code": settings.trust_remote_code, "revision": settings.revision}
    try:
        config = transformers.AutoConfig.from_pretrained(settings.model, **common)
    except Exception as exc:
        raise EngineError(f"cannot read the config of {settings.model}: {exc}") from exc
    processor, tokenizer = load_processor(transformers, settings)
    cls = model_class(transformers, config)
    kwargs: dict[str, Any] = {**common, "dtype": dtype, **settings.model_kwargs}
    if settings.device_map is not None:
        kwargs["device_map"] = settings.device_map
    try:
        model = cls.from_pretrained(settings.model, **kwargs)
    except ValueError as exc:
        if "Unrecognized configuration class" in str(exc):
            raise EngineError(
                f"transformers {transformers.__version__} has no {cls.__name__} for "
                f"{settings.model} (model_type {getattr(config, 'model_type', '?')}); a checkpoint "
                "whose model is remote code needs trust_remote_code=true and its auto_map"
            ) from exc
        raise EngineError(f"transformers could not load {settings.model}: {exc}") from exc
    except Exception as exc:
        raise EngineError(f"transformers could not load {settings.model}: {exc}") from exc
    if settings.device_map is None:
        model.to(device)
    model.eval()
    return LoadedModel(model, processor, tokenizer, model.device, model.dtype)
