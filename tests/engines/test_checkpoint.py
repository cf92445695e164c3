"""Checkpoint and adapter folders checked from their headers (engines/checkpoint.py).

Every folder is written here with safetensors' own writer; each bad case asserts
the message an operator reads, since that message is what a trainer gets back as
INVALID_ARGUMENT. The adapters that must fit are made by PEFT itself on the tiny
Holotron-architecture model transformers loads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from holodesk.daemon.engines.checkpoint import (
    Adapter,
    Checkpoint,
    TensorInfo,
    check_adapter_fits,
    check_same_model,
    read_adapter,
    read_checkpoint,
)
from holodesk.daemon.engines.weights import CheckpointInvalidError, CheckpointNotFoundError
from tests.support.tiny_models import TinyModel, tiny_nemotron_vl_for_transformers

ARCH = "TinyForCausalLM"


def tensors(**shapes: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Zero tensors under dotted names ("a__b" -> "a.b"), float32."""
    return {
        name.replace("__", "."): np.zeros(shape, dtype=np.float32) for name, shape in shapes.items()
    }


BASE = tensors(
    embed__weight=(16, 8),
    layers__0__q_proj__weight=(8, 8),
    layers__0__up_proj__weight=(12, 8),
    lm_head__weight=(16, 8),
)


def write_model(
    folder: Path,
    weights: Mapping[str, np.ndarray] | None = None,
    architecture: str | None = ARCH,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {"model_type": "tiny"}
    if architecture is not None:
        config["architectures"] = [architecture]
    (folder / "config.json").write_text(json.dumps(config))
    save_file(dict(weights if weights is not None else BASE), str(folder / "model.safetensors"))
    return folder


def write_sharded(folder: Path, shards: Mapping[str, Mapping[str, np.ndarray]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": [ARCH]}))
    weight_map = {}
    for shard, content in shards.items():
        save_file(dict(content), str(folder / shard))
        weight_map.update(dict.fromkeys(content, shard))
    index = {"metadata": {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def refused(pattern: str) -> pytest.RaisesExc[CheckpointInvalidError]:
    return pytest.raises(CheckpointInvalidError, match=pattern)


# --- read_checkpoint -------------------------------------------------------------------


def test_reads_names_shapes_dtypes_and_architecture(tmp_path: Path) -> None:
    weights = dict(BASE)
    weights["lm_head.weight"] = weights["lm_head.weight"].astype(np.float16)
    folder = write_model(tmp_path / "m", weights)
    checkpoint = read_checkpoint(folder)
    assert checkpoint.architecture == ARCH
    assert checkpoint.files == (folder / "model.safetensors",)
    assert checkpoint.tensors == {
        "embed.weight": TensorInfo("F32", (16, 8)),
        "layers.0.q_proj.weight": TensorInfo("F32", (8, 8)),
        "layers.0.up_proj.weight": TensorInfo("F32", (12, 8)),
        "lm_head.weight": TensorInfo("F16", (16, 8)),
    }


def test_reads_only_the_header_of_each_file(tmp_path: Path) -> None:
    """The tensor bytes are never read: garbage in them changes nothing."""
    folder = write_model(tmp_path / "m")
    file = folder / "model.safetensors"
    length = int.from_bytes(file.read_bytes()[:8], "little")
    data = bytearray(file.read_bytes())
    data[8 + length :] = b"\xff" * (len(data) - 8 - length)
    file.write_bytes(bytes(data))
    assert set(read_checkpoint(folder).tensors) == set(BASE)


def test_reads_a_sharded_checkpoint_through_its_index(tmp_path: Path) -> None:
    names = sorted(BASE)
    folder = write_sharded(
        tmp_path / "m",
        {
            "model-00001-of-00002.safetensors": {n: BASE[n] for n in names[:2]},
            "model-00002-of-00002.safetensors": {n: BASE[n] for n in names[2:]},
        },
    )
    # A stray file the index does not name is not part of the checkpoint.
    save_file({"stray": np.zeros(1, dtype=np.float32)}, str(folder / "old.safetensors"))
    checkpoint = read_checkpoint(folder)
    assert set(checkpoint.tensors) == set(BASE)
    assert [f.name for f in checkpoint.files] == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]


def test_a_missing_folder_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError, match=r"checkpoint .*/nowhere does not exist"):
        read_checkpoint(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointNotFoundError, match=r"checkpoint .*/file is not a folder"):
        read_checkpoint(tmp_path / "file")


def test_no_config_json(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    (folder / "config.json").unlink()
    with refused(r"/m has no config\.json \(a model's configuration\)"):
        read_checkpoint(folder)


def test_unreadable_config_json(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    (folder / "config.json").write_text('{"architectures": [')
    with refused(r"/m/config\.json cannot be read: Expecting value"):
        read_checkpoint(folder)
    (folder / "config.json").write_text("[1, 2]")
    with refused(r"/m/config\.json is a JSON list, not an object"):
        read_checkpoint(folder)


def test_no_safetensors(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with refused(r"/m holds no \*\.safetensors file \(and no model\.safetensors\.index\.json\)"):
        read_checkpoint(folder)


def test_index_naming_a_missing_shard(tmp_path: Path) -> None:
    folder = write_sharded(
        tmp_path / "m",
        {
            "a.safetensors": {"embed.weight": BASE["embed.weight"]},
            "b.safetensors": {"lm_head.weight": BASE["lm_head.weight"]},
        },
    )
    (folder / "b.safetensors").unlink()
    with refused(r"index\.json names shard b\.safetensors, which is missing .*lm_head\.weight"):
        read_checkpoint(folder)


def test_index_naming_a_tensor_not_in_its_shard(tmp_path: Path) -> None:
    folder = write_sharded(
        tmp_path / "m", {"a.safetensors": {"embed.weight": BASE["embed.weight"]}}
    )
    index = folder / "model.safetensors.index.json"
    content = json.loads(index.read_text())
    content["weight_map"]["lm_head.weight"] = "a.safetensors"
    index.write_text(json.dumps(content))
    with refused(r"puts tensor lm_head\.weight in a\.safetensors, whose header has no such"):
        read_checkpoint(folder)


def test_a_half_written_file(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    file = folder / "model.safetensors"
    whole = file.read_bytes()
    file.write_bytes(whole[:-10])
    expected = f"model.safetensors is half-written: its header names {len(whole)} bytes, "
    with refused(re.escape(expected) + f"the file has {len(whole) - 10}"):
        read_checkpoint(folder)
    # Cut inside the header itself.
    file.write_bytes(whole[:20])
    with refused(
        r"model\.safetensors is half-written: its header needs \d+ bytes, the file has 20"
    ):
        read_checkpoint(folder)
    file.write_bytes(whole[:5])
    with refused(r"model\.safetensors is 5 bytes, too short for a safetensors header"):
        read_checkpoint(folder)


def test_an_unparseable_header(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    file = folder / "model.safetensors"
    header = b'{"embed.weight": {"dtype": "F32", '
    file.write_bytes(len(header).to_bytes(8, "little") + header)
    with refused(r"model\.safetensors has an unparseable header: Expecting"):
        read_checkpoint(folder)
    header = b'{"embed.weight": {"dtype": "F32"}}'
    file.write_bytes(len(header).to_bytes(8, "little") + header)
    with refused(r"unparseable header: entry 'embed\.weight' is not \{dtype, shape, data_offsets"):
        read_checkpoint(folder)
    file.write_bytes((2**40).to_bytes(8, "little") + header)
    with refused(r"model\.safetensors is not a safetensors file: its header length 1099511627776"):
        read_checkpoint(folder)


def test_the_same_tensor_in_two_files(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m")
    save_file({"lm_head.weight": BASE["lm_head.weight"]}, str(folder / "z-extra.safetensors"))
    with refused(r"tensor lm_head\.weight is in both model\.safetensors and z-extra\.safetensors"):
        read_checkpoint(folder)


# --- check_same_model ------------------------------------------------------------------


def test_same_model_with_another_dtype_is_accepted(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    half = {name: value.astype(np.float16) for name, value in BASE.items()}
    check_same_model(serving, read_checkpoint(write_model(tmp_path / "half", half)))


def test_another_architecture(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    other = read_checkpoint(write_model(tmp_path / "other", architecture="LlamaForCausalLM"))
    with refused(r"/other is another architecture: LlamaForCausalLM, the serving model is Tiny"):
        check_same_model(serving, other)
    # A config that names none is judged by its tensors alone.
    check_same_model(serving, read_checkpoint(write_model(tmp_path / "none", architecture=None)))


def test_missing_and_extra_tensors_are_named(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = {n: v for n, v in BASE.items() if n != "lm_head.weight"}
    weights["layers.0.k_proj.weight"] = np.zeros((8, 8), dtype=np.float32)
    candidate = read_checkpoint(write_model(tmp_path / "c", weights))
    with refused(
        r"/c is not the serving model: 1 tensors missing \(lm_head\.weight\), "
        r"1 extra \(layers\.0\.k_proj\.weight\)"
    ):
        check_same_model(serving, candidate)


def test_extra_tensors_allowed_where_the_engine_checks_them(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = {**BASE, "layers.0.k_proj.weight": np.zeros((8, 8), dtype=np.float32)}
    candidate = read_checkpoint(write_model(tmp_path / "c", weights))
    check_same_model(serving, candidate, allow_extra=True)
    missing = read_checkpoint(
        write_model(tmp_path / "m", {n: v for n, v in weights.items() if n != "embed.weight"})
    )
    with refused(r"/m is not the serving model: 1 tensors missing \(embed\.weight\)$"):
        check_same_model(serving, missing, allow_extra=True)


def test_many_missing_tensors_name_a_few(tmp_path: Path) -> None:
    many = {f"layers.{i}.w": np.zeros(2, dtype=np.float32) for i in range(9)}
    serving = read_checkpoint(write_model(tmp_path / "serving", many))
    candidate = read_checkpoint(write_model(tmp_path / "c", {"layers.0.w": many["layers.0.w"]}))
    with refused(r"8 tensors missing \(layers\.1\.w, .*layers\.5\.w, and 3 more\)$"):
        check_same_model(serving, candidate)


def test_another_shape(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = dict(BASE)
    weights["layers.0.up_proj.weight"] = np.zeros((24, 8), dtype=np.float32)
    candidate = read_checkpoint(write_model(tmp_path / "c", weights))
    with refused(
        r"/c has another shape: layers\.0\.up_proj\.weight \(24, 8\) "
        r"where the serving model has \(12, 8\)$"
    ):
        check_same_model(serving, candidate)


# --- adapters --------------------------------------------------------------------------


def write_adapter(
    folder: Path,
    weights: Mapping[str, np.ndarray],
    rank: int = 2,
    base: str = "tiny",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "peft_type": "LORA",
        "r": rank,
        "lora_alpha": 4,
        "target_modules": ["q_proj", "up_proj"],
        "base_model_name_or_path": base,
    }
    (folder / "adapter_config.json").write_text(json.dumps(config))
    save_file(dict(weights), str(folder / "adapter_model.safetensors"))
    return folder


def lora(module: str, r: int, in_dim: int, out_dim: int) -> dict[str, np.ndarray]:
    prefix = f"base_model.model.{module}"
    return {
        f"{prefix}.lora_A.weight": np.zeros((r, in_dim), dtype=np.float32),
        f"{prefix}.lora_B.weight": np.zeros((out_dim, r), dtype=np.float32),
    }


def test_read_adapter(tmp_path: Path) -> None:
    folder = write_adapter(tmp_path / "a", lora("layers.0.q_proj", 2, 8, 8))
    adapter = read_adapter(folder)
    assert (adapter.base_model, adapter.rank, adapter.target_modules) == (
        "tiny",
        2,
        ("q_proj", "up_proj"),
    )
    assert adapter.tensors["base_model.model.layers.0.q_proj.lora_A.weight"].shape == (2, 8)


def test_hand_written_adapter_fits_its_base(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = lora("layers.0.q_proj", 2, 8, 8) | lora("layers.0.up_proj", 2, 8, 12)
    weights |= {
        "base_model.model.embed.lora_embedding_A": np.zeros((2, 16), dtype=np.float32),
        "base_model.model.embed.lora_embedding_B": np.zeros((8, 2), dtype=np.float32),
    }
    check_adapter_fits(serving, read_adapter(write_adapter(tmp_path / "a", weights)))


def test_adapter_with_other_dimensions_is_for_another_base(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    # up_proj is (12, 8) here; this LoRA was made for a (24, 8) one.
    weights = lora("layers.0.q_proj", 2, 8, 8) | lora("layers.0.up_proj", 2, 8, 24)
    adapter = read_adapter(write_adapter(tmp_path / "a", weights, base="big-model"))
    with refused(
        r"/a is a LoRA for another base \(trained on big-model\): module layers\.0\.up_proj "
        r"is \(12, 8\) in the serving model; the adapter's lora_A is \(2, 8\) and lora_B "
        r"\(24, 2\) \(expected \(r, 8\) and \(12, r\)\)"
    ):
        check_adapter_fits(serving, adapter)


def test_adapter_naming_a_module_the_base_lacks(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = lora("model.layers.0.self_attn.q_proj", 2, 8, 8)
    adapter = read_adapter(write_adapter(tmp_path / "a", weights))
    with refused(
        r"LoRA for another base \(trained on tiny\): module model\.layers\.0\.self_attn\.q_proj "
        r"is not in the serving model"
    ):
        check_adapter_fits(serving, adapter)


def test_adapter_with_a_mismatched_rank(tmp_path: Path) -> None:
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = lora("layers.0.q_proj", 2, 8, 8)
    weights["base_model.model.layers.0.q_proj.lora_B.weight"] = np.zeros((8, 4), np.float32)
    with refused(r"lora_A is \(2, 8\) and lora_B \(8, 4\)"):
        check_adapter_fits(serving, read_adapter(write_adapter(tmp_path / "a", weights)))


def test_adapter_saving_a_whole_module_of_another_shape(tmp_path: Path) -> None:
    """modules_to_save: a full copy of a base tensor, which must have the base's shape."""
    serving = read_checkpoint(write_model(tmp_path / "serving"))
    weights = lora("layers.0.q_proj", 2, 8, 8)
    weights["base_model.model.lm_head.weight"] = np.zeros((16, 8), np.float32)
    check_adapter_fits(serving, read_adapter(write_adapter(tmp_path / "fits", weights)))
    weights["base_model.model.lm_head.weight"] = np.zeros((32, 8), np.float32)
    with refused(
        r"LoRA for another base \(trained on tiny\): base_model\.model\.lm_head\.weight is "
        r"\(32, 8\) where the base's lm_head\.weight is \(16, 8\)"
    ):
        check_adapter_fits(serving, read_adapter(write_adapter(tmp_path / "a", weights)))


def test_adapter_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError, match=r"adapter .*/none does not exist"):
        read_adapter(tmp_path / "none")
    folder = write_adapter(tmp_path / "a", lora("layers.0.q_proj", 2, 8, 8))
    (folder / "adapter_model.safetensors").rename(folder / "adapter_model.bin")
    with refused(r"/a has no adapter_model\.safetensors \(only adapter_model\.bin: save it with"):
        read_adapter(folder)
    (folder / "adapter_config.json").unlink()
    with refused(r"/a has no adapter_config\.json \(a PEFT adapter's configuration\)"):
        read_adapter(folder)


# --- PEFT's own adapters on the tiny Holotron model -----------------------------------


@pytest.fixture(scope="module")
def tiny_transformers_model(tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")
    transformers = pytest.importorskip("transformers")
    path = tiny_nemotron_vl_for_transformers(tiny_model, tmp_path_factory.mktemp("tiny-tf"))
    return path, transformers.AutoModelForImageTextToText.from_pretrained(
        str(path), trust_remote_code=True
    )


def peft_adapter(model: object, folder: Path, **lora_config: object) -> Adapter:
    peft = pytest.importorskip("peft")
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=4, **lora_config))
    try:
        wrapped.save_pretrained(str(folder))
    finally:
        wrapped.unload()
    return read_adapter(folder)


def parameters_of(model: object, path: Path) -> Checkpoint:
    """The model an engine holds, named as PEFT sees its modules."""
    return Checkpoint(
        path=path,
        architecture=None,
        tensors={
            name: TensorInfo(str(p.dtype), tuple(p.shape))
            for name, p in model.named_parameters()  # type: ignore[attr-defined]
        },
    )


def test_peft_adapter_fits_the_model_it_was_made_on(tiny_transformers_model, tmp_path: Path):  # type: ignore[no-untyped-def]
    path, model = tiny_transformers_model
    adapter = peft_adapter(model, tmp_path / "a", target_modules=["q_proj", "v_proj", "in_proj"])
    assert adapter.rank == 4
    assert set(adapter.target_modules) == {"q_proj", "v_proj", "in_proj"}
    assert any(".mixer.in_proj.lora_A" in name for name in adapter.tensors)
    check_adapter_fits(parameters_of(model, path), adapter)


def test_peft_adapter_of_the_language_model_fits_the_hub_names(  # type: ignore[no-untyped-def]
    tiny_transformers_model, tiny_model: TinyModel, tmp_path: Path
):
    """transformers calls the hub's language_model.backbone.layers.N language_model.model
    .layers.N: the shared suffix finds them, and the shapes are checked."""
    _, model = tiny_transformers_model
    adapter = peft_adapter(
        model, tmp_path / "a", target_modules=r".*language_model.*\.(q_proj|o_proj|up_proj)"
    )
    assert any(".layers.1.mixer.q_proj.lora_B" in name for name in adapter.tensors)
    check_adapter_fits(read_checkpoint(tiny_model.path), adapter)
    # The vision tower is no renaming away: the hub's RADIO blocks fuse q, k and v.
    vision = peft_adapter(model, tmp_path / "v", target_modules=["q_proj"])
    with refused(r"module vision_model\.encoder\.layer\.0\.attention\.q_proj is not in the"):
        check_adapter_fits(read_checkpoint(tiny_model.path), vision)


def test_peft_adapter_of_another_size_is_refused(tiny_transformers_model, tmp_path: Path):  # type: ignore[no-untyped-def]
    """An adapter PEFT made for a wider model of the same layout."""
    path, model = tiny_transformers_model
    adapter = peft_adapter(model, tmp_path / "a", target_modules=["q_proj"])
    hub_names = parameters_of(model, path)
    q = next(n for n in hub_names.tensors if n.endswith("layers.1.mixer.q_proj.weight"))
    out_dim, in_dim = hub_names.tensors[q].shape
    narrower = Checkpoint(
        path=path,
        architecture=None,
        tensors={**hub_names.tensors, q: TensorInfo("float32", (out_dim, in_dim // 2))},
    )
    module = re.escape(q.removesuffix(".weight"))
    with refused(
        rf"a LoRA for another base \(trained on .*\): module {module} is "
        rf"\({out_dim}, {in_dim // 2}\) in the serving model; the adapter's lora_A is "
        rf"\(4, {in_dim}\)"
    ):
        check_adapter_fits(narrower, adapter)
