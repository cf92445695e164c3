"""What a checkpoint folder holds, read from its headers alone, so that an update is
refused before a byte of its tensors is loaded.

A safetensors file opens with an 8-byte little-endian length and a JSON header
naming every tensor's dtype, shape and byte range; reading that header costs a few
kilobytes whatever the model's size, and it is enough to tell a half-written file
(shorter than the ranges its header names), a checkpoint of another architecture
or shape, or a LoRA adapter trained on another base. Engines check with this module
first (`read_checkpoint`, `check_same_model`, `check_adapter_fits`) and load only
what passed, so a refused update leaves the old weights serving untouched.

Only the standard library: the daemon checks a trainer's folder without torch, and
the vLLM and transformers engines share one set of rules and messages.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from holodesk.daemon.engines.weights import CheckpointInvalidError, CheckpointNotFoundError

INDEX_FILE = "model.safetensors.index.json"
CONFIG_FILE = "config.json"
ADAPTER_CONFIG_FILE = "adapter_config.json"
ADAPTER_WEIGHTS_FILE = "adapter_model.safetensors"
# PEFT saves its tensors under the wrapper's attribute path (PeftModel.base_model is
# a LoraModel whose .model is the base): these prefixes are PEFT's, not the base's.
PEFT_PREFIXES = ("base_model.model.",)
# A header above this is not a safetensors header (the format caps it at 100 MB).
MAX_HEADER_BYTES = 100_000_000
# How many names an error message lists before "and N more".
NAMED_IN_ERRORS = 5

_LORA_WEIGHT = re.compile(r"^(?P<module>.+)\.(?P<kind>lora_A|lora_B)(?:\.[^.]+)?\.weight$")
_LORA_EMBEDDING = re.compile(
    r"^(?P<module>.+)\.(?P<kind>lora_embedding_A|lora_embedding_B)(?:\.[^.]+)?$"
)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as its header declares it: safetensors' dtype name ("BF16", "F32")."""

    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Checkpoint:
    """A model folder's architecture and tensors, from config.json and the headers.

    An engine may also describe the model it holds this way (its own parameter
    names and shapes) to check an adapter against the names a trainer's PEFT saw.
    """

    path: Path
    # config.json's first "architectures" entry; None when it names none.
    architecture: str | None
    tensors: Mapping[str, TensorInfo] = field(repr=False)
    files: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Adapter:
    """A PEFT LoRA adapter folder: adapter_config.json + adapter_model.safetensors."""

    path: Path
    # adapter_config.json's base_model_name_or_path ("" when it names none).
    base_model: str
    rank: int
    # A list in the config, or one regular expression (kept as a 1-tuple).
    target_modules: tuple[str, ...]
    tensors: Mapping[str, TensorInfo] = field(repr=False)


def read_checkpoint(path: Path) -> Checkpoint:
    """Read a checkpoint folder's config.json and its safetensors headers.

    Raises CheckpointNotFoundError when there is no such folder, and
    CheckpointInvalidError, naming the file, for anything an engine could not load:
    config.json missing or unreadable, no *.safetensors, an index naming a shard
    that is missing or a tensor its shard lacks, a file shorter than its header
    says (still being written), an unparseable header, one tensor in two files.
    """
    folder = Path(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise CheckpointNotFoundError(f"checkpoint {folder} {what}")
    architecture = _architecture(folder / CONFIG_FILE)
    index = folder / INDEX_FILE
    if index.is_file():
        weight_map = _weight_map(index)
        files = tuple(folder / name for name in sorted(set(weight_map.values())))
        for file in files:
            if not file.is_file():
                names = [name for name, shard in weight_map.items() if shard == file.name]
                raise CheckpointInvalidError(
                    f"{index} names shard {file.name}, which is missing from {folder} "
                    f"(it holds {_few(names)})"
                )
    else:
        weight_map = {}
        files = tuple(sorted(folder.glob("*.safetensors")))
        if not files:
            raise CheckpointInvalidError(
                f"{folder} holds no *.safetensors file (and no {INDEX_FILE}): "
                "only safetensors checkpoints can be loaded"
            )
    tensors: dict[str, TensorInfo] = {}
    owner: dict[str, Path] = {}
    for file in files:
        for name, info in read_safetensors_header(file).items():
            if name in owner:
                raise CheckpointInvalidError(
                    f"tensor {name} is in both {owner[name].name} and {file.name} in {folder}"
                )
            owner[name] = file
            tensors[name] = info
    for name, shard in weight_map.items():
        if owner.get(name) is None or owner[name].name != shard:
            raise CheckpointInvalidError(
                f"{index} puts tensor {name} in {shard}, whose header has no such tensor"
            )
    return Checkpoint(folder, architecture, tensors, files)


def read_safetensors_header(file: Path) -> dict[str, TensorInfo]:
    """The tensors a safetensors file declares, checked against the file's size.

    A file shorter than the largest byte range its header names is refused as
    half-written: a trainer still saving, or a copy cut short.
    """
    try:
        size = file.stat().st_size
        with file.open("rb") as stream:
            prefix = stream.read(8)
            if len(prefix) < 8:
                raise CheckpointInvalidError(
                    f"{file} is {size} bytes, too short for a safetensors header"
                )
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER_BYTES:
                raise CheckpointInvalidError(
                    f"{file} is not a safetensors file: its header length {length} is "
                    f"above safetensors' limit of {MAX_HEADER_BYTES} bytes"
                )
            if 8 + length > size:
                raise CheckpointInvalidError(
                    f"{file} is half-written: its header needs {8 + length} bytes, "
                    f"the file has {size}"
                )
            raw = stream.read(length)
    except OSError as error:
        raise CheckpointInvalidError(f"{file} cannot be read: {error}") from error
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointInvalidError(f"{file} has an unparseable header: {error}") from error
    if not isinstance(header, dict):
        raise CheckpointInvalidError(
            f"{file} has an unparseable header: a JSON {type(header).__name__}, not an object"
        )
    tensors: dict[str, TensorInfo] = {}
    end_of_data = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = entry["dtype"]
            shape = tuple(int(dim) for dim in entry["shape"])
            begin, end = (int(offset) for offset in entry["data_offsets"])
        except (TypeError, KeyError, ValueError) as error:
            raise CheckpointInvalidError(
                f"{file} has an unparseable header: entry {name!r} is not "
                f"{{dtype, shape, data_offsets}} ({error!r})"
            ) from error
        if not isinstance(dtype, str) or begin < 0 or end < begin:
            raise CheckpointInvalidError(
                f"{file} has an unparseable header: entry {name!r} has dtype {dtype!r} "
                f"and byte range [{begin}, {end})"
            )
        tensors[name] = TensorInfo(dtype, shape)
        end_of_data = max(end_of_data, end)
    if 8 + length + end_of_data > size:
        raise CheckpointInvalidError(
            f"{file} is half-written: its header names {8 + length + end_of_data} bytes, "
            f"the file has {size}"
        )
    return tensors


def check_same_model(
    serving: Checkpoint, candidate: Checkpoint, *, allow_extra: bool = False
) -> None:
    """Refuse a candidate that is not the serving model with other values: another
    architecture, tensors missing or extra, another shape (CheckpointInvalidError
    naming the first differences).

    A different dtype is allowed: trainers commonly save float32 (or their mixed
    precision's master weights) for a model served in bfloat16, and every engine
    casts to its own dtype on load, as it did when it started.

    `allow_extra`: tensors the serving checkpoint lacks are not refused here, for an
    engine whose loader refuses itself those the model has no place for. Why: a
    trainer's `save_pretrained` writes every parameter of the model, including
    those the original checkpoint lacked and the model initialised at load.
    """
    if (
        serving.architecture is not None
        and candidate.architecture is not None
        and serving.architecture != candidate.architecture
    ):
        raise CheckpointInvalidError(
            f"{candidate.path} is another architecture: {candidate.architecture}, "
            f"the serving model is {serving.architecture}"
        )
    missing = [name for name in serving.tensors if name not in candidate.tensors]
    extra = [] if allow_extra else [n for n in candidate.tensors if n not in serving.tensors]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} tensors missing ({_few(missing)})")
        if extra:
            parts.append(f"{len(extra)} extra ({_few(extra)})")
        raise CheckpointInvalidError(
            f"{candidate.path} is not the serving model: {', '.join(parts)}"
        )
    reshaped = [
        f"{name} {_shape(candidate.tensors[name].shape)} "
        f"where the serving model has {_shape(info.shape)}"
        for name, info in serving.tensors.items()
        if candidate.tensors[name].shape != info.shape
    ]
    if reshaped:
        raise CheckpointInvalidError(
            f"{candidate.path} has another shape: {_few(reshaped, sep='; ')}"
        )


def read_adapter(path: Path) -> Adapter:
    """Read a PEFT LoRA adapter folder's config and safetensors header."""
    folder = Path(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise CheckpointNotFoundError(f"adapter {folder} {what}")
    config = _json_object(folder / ADAPTER_CONFIG_FILE, "a PEFT adapter's")
    weights = folder / ADAPTER_WEIGHTS_FILE
    if not weights.is_file():
        hint = (
            " (only adapter_model.bin: save it with safe_serialization=True)"
            if (folder / "adapter_model.bin").exists()
            else ""
        )
        raise CheckpointInvalidError(f"{folder} has no {ADAPTER_WEIGHTS_FILE}{hint}")
    peft_type = config.get("peft_type", "LORA")
    if peft_type != "LORA":
        raise CheckpointInvalidError(
            f"{folder / ADAPTER_CONFIG_FILE} is a {peft_type} adapter: only LoRA is served"
        )
    rank = config.get("r", 0)
    if not isinstance(rank, int):
        raise CheckpointInvalidError(f"{folder / ADAPTER_CONFIG_FILE}: r is {rank!r}, not a rank")
    targets = config.get("target_modules") or ()
    target_modules = (
        (targets,)
        if isinstance(targets, str)
        else tuple(str(t) for t in targets)
        if isinstance(targets, list | tuple)
        else ()
    )
    return Adapter(
        path=folder,
        base_model=str(config.get("base_model_name_or_path") or ""),
        rank=rank,
        target_modules=target_modules,
        tensors=read_safetensors_header(weights),
    )


def check_adapter_fits(serving: Checkpoint, adapter: Adapter) -> None:
    """Refuse "a LoRA for another base": every lora_A / lora_B tensor must name a
    module of the serving model with the matching dimensions (lora_A: (r, in),
    lora_B: (out, r) for a base weight (out, in); embeddings the other way round).

    Module names are matched after PEFT's own prefix ("base_model.model.") is
    dropped: exactly, else by the longest dotted suffix of two or more parts that
    the base shares ("model.language_model.layers.0.mixer.q_proj" finds the hub's
    "language_model.backbone.layers.0.mixer.q_proj.weight"), because an adapter
    trained with transformers' class names what the hub checkpoint names
    otherwise. A suffix that several base modules of different shapes share is
    refused as ambiguous. Other saved tensors (modules_to_save) must match the
    base's shape where the base has them.
    """
    index = _ModuleIndex(serving.tensors)
    loras: dict[str, dict[str, TensorInfo]] = {}
    for key, info in adapter.tensors.items():
        name = _strip_peft_prefix(key)
        match = _LORA_WEIGHT.match(name) or _LORA_EMBEDDING.match(name)
        if match is None:
            if "lora_magnitude_vector" in name:
                continue
            base = index.tensor(name)
            if base is not None and base.shape != info.shape:
                raise _another_base(
                    adapter,
                    f"{key} is {_shape(info.shape)} where the base's {name} "
                    f"is {_shape(base.shape)}",
                )
            continue
        loras.setdefault(match["module"], {})[match["kind"]] = info
    if not loras:
        raise CheckpointInvalidError(f"{adapter.path} holds no lora_A / lora_B tensors")
    for module, parts in sorted(loras.items()):
        base = index.tensor(module + ".weight")
        if base is None:
            raise _another_base(adapter, f"module {module} is not in the serving model")
        _check_lora_shapes(adapter, module, parts, base.shape)


def _check_lora_shapes(
    adapter: Adapter, module: str, parts: Mapping[str, TensorInfo], base: tuple[int, ...]
) -> None:
    embedding = "lora_embedding_A" in parts or "lora_embedding_B" in parts
    a = parts.get("lora_embedding_A" if embedding else "lora_A")
    b = parts.get("lora_embedding_B" if embedding else "lora_B")
    if a is None or b is None:
        raise CheckpointInvalidError(
            f"{adapter.path}: module {module} has only {', '.join(sorted(parts))}"
        )
    if len(base) < 2 or len(a.shape) < 2 or len(b.shape) < 2:
        raise _another_base(
            adapter,
            f"module {module}: lora A {_shape(a.shape)}, B {_shape(b.shape)} "
            f"on a base weight {_shape(base)}",
        )
    # A Linear weight is (out, in); an Embedding's is (num_embeddings, dim) and its
    # LoRA is A: (r, num_embeddings), B: (dim, r).
    out_dim, in_dim = (base[1], base[0]) if embedding else (base[0], base[1])
    if a.shape[1] != in_dim or b.shape[0] != out_dim or a.shape[0] != b.shape[1]:
        raise _another_base(
            adapter,
            f"module {module} is {_shape(base)} in the serving model; the adapter's "
            f"lora_A is {_shape(a.shape)} and lora_B {_shape(b.shape)} "
            f"(expected (r, {in_dim}) and ({out_dim}, r))",
        )


class _ModuleIndex:
    """Finds a base tensor by an adapter's name: exactly, else by a shared suffix."""

    def __init__(self, tensors: Mapping[str, TensorInfo]) -> None:
        self._tensors = tensors
        self._by_suffix: dict[str, list[str]] = {}
        for name in tensors:
            parts = name.split(".")
            for start in range(len(parts)):
                self._by_suffix.setdefault(".".join(parts[start:]), []).append(name)

    def tensor(self, name: str) -> TensorInfo | None:
        if name in self._tensors:
            return self._tensors[name]
        parts = name.split(".")
        if len(parts) == 2:
            # A top-level module ("lm_head.weight"): found when the base has one only.
            top = self._by_suffix.get(name, [])
            return self._tensors[top[0]] if len(top) == 1 else None
        # Two parts at least ("mixer.q_proj.weight" would match every layer's).
        for start in range(1, len(parts) - 2):
            found = self._by_suffix.get(".".join(parts[start:]))
            if found:
                shapes = {self._tensors[candidate].shape for candidate in found}
                if len(shapes) > 1:
                    raise CheckpointInvalidError(
                        f"{name} is ambiguous in the serving model: {_few(found)} "
                        "have different shapes"
                    )
                return self._tensors[found[0]]
        return None


def _strip_peft_prefix(key: str) -> str:
    for prefix in PEFT_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _another_base(adapter: Adapter, detail: str) -> CheckpointInvalidError:
    base = f" (trained on {adapter.base_model})" if adapter.base_model else ""
    return CheckpointInvalidError(f"{adapter.path} is a LoRA for another base{base}: {detail}")


def _architecture(config_file: Path) -> str | None:
    config = _json_object(config_file, "a model's")
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures:
        return str(architectures[0])
    return None


def _weight_map(index: Path) -> dict[str, str]:
    content = _json_object(index, "an index's")
    weight_map = content.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(value, str) for value in weight_map.values()
    ):
        raise CheckpointInvalidError(f"{index} has no weight_map of tensor name -> shard file")
    return {str(name): shard for name, shard in weight_map.items()}


def _json_object(file: Path, what: str) -> dict[str, object]:
    if not file.is_file():
        raise CheckpointInvalidError(f"{file.parent} has no {file.name} ({what} configuration)")
    try:
        content = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointInvalidError(f"{file} cannot be read: {error}") from error
    if not isinstance(content, dict):
        raise CheckpointInvalidError(f"{file} is a JSON {type(content).__name__}, not an object")
    return content


def _few(items: Iterable[str], sep: str = ", ") -> str:
    listed = list(items)
    shown = sep.join(listed[:NAMED_IN_ERRORS])
    more = len(listed) - NAMED_IN_ERRORS
    return f"{shown}{sep}and {more} more" if more > 0 else shown


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ")"
