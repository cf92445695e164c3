"""A tiny random-weight model of Holotron-12B's architecture, built offline.

`build_tiny_nemotron_vl(folder)` writes a checkpoint folder that vLLM (and any
loader of the hub layout) reads like `Hcompany/Holotron-12B`:

- `config.json` with architecture `NemotronH_Nano_VL_V2`: a NemotronH hybrid
  language model (Mamba2, attention and MLP layers, `hybrid_override_pattern`),
  a RADIO ViT vision tower (`vision_config.args`, whose `hidden_size`,
  `num_hidden_layers`, `num_attention_heads`, `intermediate_size` override the
  named ViT's sizes) and the MLP projector `mlp1`; 512x512 tiles, 256 image
  tokens per tile, a thumbnail when there is more than one tile.
- `configuration_tiny_nemotron_vl.py`, the config class `auto_map` points at
  (load with trust_remote_code=True): the hub's own config class fetches another
  hub repository, so an offline checkpoint needs its own.
- `model.safetensors`: seeded random weights under the hub's key names
  (float32 on disk; the model runs in bfloat16, which vLLM casts to).
- A byte-level BPE tokenizer trained here on generated text, with the special
  tokens `<img>`, `</img>`, `<image>` and a ChatML chat template.

`tiny_nemotron_vl_for_transformers(model, folder)` writes the same weights and
tokenizer as a checkpoint transformers loads natively (its `nemotron_h_omni`
class has the same module layout and renames the hub keys on load), with a
small processor class the checkpoint names in `auto_map`, as the real
checkpoint does (load with trust_remote_code=True).

`build_tiny_qwen2_vl(folder)` writes a tiny random Qwen2-VL (a native
architecture of both vLLM and transformers), float32, with a tokenizer trained
here: the model on which the two engines agree token for token.

Nothing is downloaded. Random weights give gibberish: tests check the path.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

ARCHITECTURE = "NemotronH_Nano_VL_V2"
IMG_START, IMG_END, IMG_CONTEXT = "<img>", "</img>", "<image>"
SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "<|im_start|>",
    "<|im_end|>",
    IMG_START,
    IMG_END,
    IMG_CONTEXT,
    "<video>",
)
# ChatML; an image part renders as the <image> placeholder vLLM expands per tile.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CONFIG_MODULE = "configuration_tiny_nemotron_vl"
CONFIG_CLASS = "TinyNemotronNanoVLConfig"
# Written into the checkpoint folder; transformers imports it (trust_remote_code).
CONFIG_SOURCE = '''"""Offline config class of a NemotronH_Nano_VL_V2 checkpoint (holodesk tests)."""

from transformers import AutoConfig, PretrainedConfig


class TinyNemotronNanoVLConfig(PretrainedConfig):
    model_type = "NemotronH_Nano_VL_V2"
    is_composition = True

    def __init__(self, vision_config=None, llm_config=None, **kwargs):
        super().__init__(**kwargs)
        self.vision_config = PretrainedConfig(**(vision_config or {}))
        llm = dict(llm_config or {})
        llm.pop("model_type", None)
        self.llm_config = AutoConfig.for_model("nemotron_h", **llm)
        self.text_config = self.llm_config
'''


@dataclass(frozen=True)
class TinyNemotronSpec:
    """Sizes of the tiny model. Attention head_dim must be one vLLM's CPU kernels have."""

    # The most tokens BPE training may learn (it stops earlier on a small corpus).
    vocab_size: int = 1024
    hidden_size: int = 64
    # M = Mamba2, * = attention, - = MLP (NemotronH's hybrid_override_pattern).
    pattern: str = "M*M-"
    attention_heads: int = 2
    kv_heads: int = 1
    head_dim: int = 32
    mlp_size: int = 128
    mamba_heads: int = 8
    mamba_head_dim: int = 16
    mamba_groups: int = 2
    ssm_state: int = 16
    conv_kernel: int = 4
    vit_hidden: int = 32
    vit_layers: int = 2
    vit_heads: int = 2
    vit_mlp: int = 128
    vit_teachers: int = 3
    vit_register_multiple: int = 8
    vit_max_size: int = 2048
    tile_size: int = 512
    patch_size: int = 16
    projector_hidden: int = 64
    max_positions: int = 16384
    seed: int = 0


@dataclass(frozen=True)
class TinyModel:
    path: Path
    spec: TinyNemotronSpec
    parameters: int


def build_tiny_nemotron_vl(folder: str | Path, spec: TinyNemotronSpec | None = None) -> TinyModel:
    """Write the tiny checkpoint into `folder` (created if missing) and describe it."""
    spec = spec or TinyNemotronSpec()
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _write_tokenizer(path, spec)
    vocab = tokenizer["vocab_size"]  # what training reached, at most spec.vocab_size
    weights = _weights(spec, vocab)
    save_file(weights, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / f"{CONFIG_MODULE}.py").write_text(CONFIG_SOURCE, encoding="utf-8")
    config = _config(spec, tokenizer, vocab)
    (path / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return TinyModel(path, spec, sum(int(w.size) for w in weights.values()))


def _write_tokenizer(path: Path, spec: TinyNemotronSpec) -> dict[str, int]:
    return _train_tokenizer(
        path,
        spec.vocab_size,
        spec.seed,
        SPECIAL_TOKENS,
        CHAT_TEMPLATE,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="</s>",
    )


def _train_tokenizer(
    path: Path,
    vocab_size: int,
    seed: int,
    special_tokens: tuple[str, ...],
    chat_template: str,
    **named_tokens: str,
) -> dict[str, int]:
    """A byte-level BPE tokenizer trained on generated text, saved into `path`;
    returns the special tokens' ids and the tokenizer's size ("vocab_size")."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=named_tokens.get("unk_token")))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(seed), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, **named_tokens)
    fast.chat_template = chat_template
    fast.save_pretrained(str(path))
    ids = {token: int(fast.convert_tokens_to_ids(token)) for token in special_tokens}
    ids["vocab_size"] = len(fast)
    return ids


def _corpus(seed: int) -> Iterator[str]:
    """Generated text close to what the model reads and writes: prose and JSON actions."""
    rng = random.Random(seed)
    words = [
        "the",
        "a",
        "click",
        "open",
        "type",
        "press",
        "scroll",
        "wait",
        "answer",
        "button",
        "window",
        "menu",
        "file",
        "edit",
        "search",
        "field",
        "page",
        "screen",
        "left",
        "right",
        "up",
        "down",
        "enter",
        "note",
        "thought",
        "action",
        "done",
        "save",
        "close",
        "settings",
        "text",
        "login",
        "name",
        "with",
        "on",
        "in",
        "to",
        "of",
        "and",
        "is",
        "for",
    ]
    for _ in range(3000):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        action = {
            "note": "",
            "thought": sentence,
            "action": {
                "action": rng.choice(words),
                "x": rng.randint(0, 1000),
                "y": rng.randint(0, 1000),
            },
        }
        yield sentence.capitalize() + "."
        yield json.dumps(action)


def _weights(spec: TinyNemotronSpec, vocab: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec.seed)

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    def ones(*shape: int) -> np.ndarray:
        return np.ones(shape, dtype=np.float32)

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=np.float32)

    h = spec.hidden_size
    w: dict[str, np.ndarray] = {}
    llm = "language_model.backbone"
    w[f"{llm}.embeddings.weight"] = normal(vocab, h)
    mamba_inner = spec.mamba_heads * spec.mamba_head_dim
    groups_state = 2 * spec.mamba_groups * spec.ssm_state
    for i, kind in enumerate(spec.pattern):
        layer = f"{llm}.layers.{i}"
        w[f"{layer}.norm.weight"] = ones(h)
        if kind == "M":
            heads = spec.mamba_heads
            w[f"{layer}.mixer.in_proj.weight"] = normal(2 * mamba_inner + groups_state + heads, h)
            w[f"{layer}.mixer.conv1d.weight"] = normal(
                mamba_inner + groups_state, 1, spec.conv_kernel
            )
            w[f"{layer}.mixer.conv1d.bias"] = zeros(mamba_inner + groups_state)
            # A = -exp(A_log) in [-16, -1]: a stable decay, as Mamba2 initialises it.
            w[f"{layer}.mixer.A_log"] = np.log(rng.uniform(1, 16, heads)).astype(np.float32)
            w[f"{layer}.mixer.D"] = ones(heads)
            w[f"{layer}.mixer.dt_bias"] = rng.uniform(-4, -2, heads).astype(np.float32)
            w[f"{layer}.mixer.norm.weight"] = ones(mamba_inner)
            w[f"{layer}.mixer.out_proj.weight"] = normal(h, mamba_inner)
        elif kind == "*":
            q, kv = spec.attention_heads * spec.head_dim, spec.kv_heads * spec.head_dim
            w[f"{layer}.mixer.q_proj.weight"] = normal(q, h)
            w[f"{layer}.mixer.k_proj.weight"] = normal(kv, h)
            w[f"{layer}.mixer.v_proj.weight"] = normal(kv, h)
            w[f"{layer}.mixer.o_proj.weight"] = normal(h, q)
        elif kind == "-":
            w[f"{layer}.mixer.up_proj.weight"] = normal(spec.mlp_size, h)
            w[f"{layer}.mixer.down_proj.weight"] = normal(h, spec.mlp_size)
        else:
            raise ValueError(f"unknown layer kind {kind!r} in pattern {spec.pattern!r}")
    w[f"{llm}.norm_f.weight"] = ones(h)
    w["language_model.lm_head.weight"] = normal(vocab, h)

    # Projector: RMSNorm, Linear, ReLU², Linear on pixel-shuffled (2x2) ViT features.
    shuffled = spec.vit_hidden * 4
    w["mlp1.0.weight"] = ones(shuffled)
    w["mlp1.1.weight"] = normal(spec.projector_hidden, shuffled)
    w["mlp1.3.weight"] = normal(h, spec.projector_hidden)

    d = spec.vit_hidden
    vit = "vision_model.radio_model.model"
    cls_tokens = spec.vit_teachers
    registers = spec.vit_register_multiple - cls_tokens % spec.vit_register_multiple
    positions = (spec.vit_max_size // spec.patch_size) ** 2
    w[f"{vit}.patch_generator.cls_token.token"] = normal(cls_tokens + registers, d)
    w[f"{vit}.patch_generator.embedder.weight"] = normal(d, 3 * spec.patch_size**2)
    w[f"{vit}.patch_generator.pos_embed"] = normal(1, positions, d)
    for i in range(spec.vit_layers):
        block = f"{vit}.blocks.{i}"
        w[f"{block}.norm1.weight"], w[f"{block}.norm1.bias"] = ones(d), zeros(d)
        w[f"{block}.attn.qkv.weight"], w[f"{block}.attn.qkv.bias"] = normal(3 * d, d), zeros(3 * d)
        w[f"{block}.attn.proj.weight"], w[f"{block}.attn.proj.bias"] = normal(d, d), zeros(d)
        w[f"{block}.norm2.weight"], w[f"{block}.norm2.bias"] = ones(d), zeros(d)
        w[f"{block}.mlp.fc1.weight"], w[f"{block}.mlp.fc1.bias"] = (
            normal(spec.vit_mlp, d),
            zeros(spec.vit_mlp),
        )
        w[f"{block}.mlp.fc2.weight"], w[f"{block}.mlp.fc2.bias"] = normal(d, spec.vit_mlp), zeros(d)
    return w


def _config(spec: TinyNemotronSpec, tokens: dict[str, int], vocab: int) -> dict[str, object]:
    llm_config = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "torch_dtype": "bfloat16",
        # Exactly the tokenizer's size: every logit is a token the tokenizer can decode.
        "vocab_size": vocab,
        "hidden_size": spec.hidden_size,
        "hybrid_override_pattern": spec.pattern,
        "num_attention_heads": spec.attention_heads,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "intermediate_size": spec.mlp_size,
        "mlp_hidden_act": "relu2",
        "mamba_num_heads": spec.mamba_heads,
        "mamba_head_dim": spec.mamba_head_dim,
        "n_groups": spec.mamba_groups,
        "ssm_state_size": spec.ssm_state,
        "conv_kernel": spec.conv_kernel,
        "chunk_size": 64,
        "max_position_embeddings": spec.max_positions,
        "tie_word_embeddings": False,
        "bos_token_id": tokens["<s>"],
        "eos_token_id": tokens["<|im_end|>"],
        "pad_token_id": tokens["</s>"],
    }
    teachers = [{"name": f"teacher{i}"} for i in range(spec.vit_teachers)]
    return {
        "architectures": [ARCHITECTURE],
        "model_type": ARCHITECTURE,
        "auto_map": {"AutoConfig": f"{CONFIG_MODULE}.{CONFIG_CLASS}"},
        "torch_dtype": "bfloat16",
        "force_image_size": spec.tile_size,
        "patch_size": spec.patch_size,
        "downsample_ratio": 0.5,
        "template": None,
        "ps_version": "v2",
        "image_tag_type": "internvl",
        "projector_hidden_size": spec.projector_hidden,
        "vit_hidden_size": spec.vit_hidden,
        "use_thumbnail": True,
        "norm_mean": [0.48145466, 0.4578275, 0.40821073],
        "norm_std": [0.26862954, 0.26130258, 0.27577711],
        "img_context_token_id": tokens[IMG_CONTEXT],
        "img_context_token": IMG_CONTEXT,
        "img_start_token": IMG_START,
        "img_end_token": IMG_END,
        "eos_token_id": tokens["<|im_end|>"],
        "vision_config": {
            "args": {
                "model": "vit_huge_patch16_224",
                "hidden_size": spec.vit_hidden,
                "num_hidden_layers": spec.vit_layers,
                "num_attention_heads": spec.vit_heads,
                "intermediate_size": spec.vit_mlp,
                "cpe_max_size": spec.vit_max_size,
                "register_multiple": spec.vit_register_multiple,
                "teachers": teachers,
                "cls_token_per_teacher": True,
            },
            "patch_size": spec.patch_size,
            "preferred_resolution": [spec.tile_size, spec.tile_size],
            "max_resolution": spec.vit_max_size,
        },
        "llm_config": llm_config,
    }


# --- the same tiny model for transformers' native class ---------------------------------

PROCESSOR_MODULE = "processing_tiny_holotron"
PROCESSOR_CLASS = "TinyHolotronProcessor"
# transformers' own processor for this module layout also wants an audio feature
# extractor (librosa); the checkpoint's processor is images and text only, which is
# what the real checkpoint's remote-code processor is too.
PROCESSOR_SOURCE = '''"""Images-and-text processor of a tiny Holotron-architecture checkpoint."""

from transformers.models.nemotron_h_omni.processing_nemotron_h_omni import (
    NemotronH_Omni_Reasoning_V3Processor,
)
from transformers.processing_utils import ProcessorMixin


class TinyHolotronProcessor(NemotronH_Omni_Reasoning_V3Processor):
    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        self.video_temporal_patch_dim = 2
        self.image_token = "<image>"
        self.image_start_token = "<img>"
        self.image_end_token = "</img>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
'''


def tiny_nemotron_vl_for_transformers(model: TinyModel, folder: str | Path) -> Path:
    """The tiny checkpoint as transformers' `nemotron_h_omni` (same weights and tokenizer).

    The config is converted (hub `llm_config` -> `text_config`, the RADIO sizes as a
    `radio` config); weights and tokenizer files are linked, not copied. Images go
    through that class's own processor (dynamic resolution in 16 px patches, 2x2
    pixel shuffle), not Nemotron Nano VL's 512 px tiles: the path is the same, the
    number of image tokens differs from vLLM's.
    """
    from transformers.models.nemotron_h_omni import NemotronH_Omni_Reasoning_V3ImageProcessor

    source = json.loads((model.path / "config.json").read_text(encoding="utf-8"))
    spec = model.spec
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    llm = {
        k: v for k, v in source["llm_config"].items() if k not in ("architectures", "torch_dtype")
    }
    cls_tokens = spec.vit_teachers
    config = {
        "architectures": ["NemotronH_Omni_Reasoning_V3"],
        "model_type": "nemotron_h_omni",
        "auto_map": {"AutoProcessor": f"{PROCESSOR_MODULE}.{PROCESSOR_CLASS}"},
        "dtype": "float32",
        "text_config": llm,
        "vision_config": {
            "model_type": "radio",
            "hidden_size": spec.vit_hidden,
            "num_hidden_layers": spec.vit_layers,
            "num_attention_heads": spec.vit_heads,
            "mlp_ratio": spec.vit_mlp / spec.vit_hidden,
            "patch_size": spec.patch_size,
            "max_img_size": spec.vit_max_size,
            "num_cls_tokens": cls_tokens,
            "num_registers": spec.vit_register_multiple - cls_tokens % spec.vit_register_multiple,
            "norm_mean": source["norm_mean"],
            "norm_std": source["norm_std"],
            # The class insists on a video patch size; its weights are simply missing.
            "video_temporal_patch_size": 2,
        },
        "force_image_size": spec.tile_size,
        "downsample_ratio": source["downsample_ratio"],
        "projector_hidden_size": spec.projector_hidden,
        "vision_hidden_size": spec.vit_hidden,
        "image_token_id": source["img_context_token_id"],
        "eos_token_id": source["eos_token_id"],
    }
    (path / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        link = path / name
        if not link.exists():
            link.symlink_to((model.path / name).resolve())
    for extra in model.path.glob("*.jinja"):
        if not (path / extra.name).exists():
            (path / extra.name).symlink_to(extra.resolve())
    (path / f"{PROCESSOR_MODULE}.py").write_text(PROCESSOR_SOURCE, encoding="utf-8")
    images = NemotronH_Omni_Reasoning_V3ImageProcessor(
        norm_mean=source["norm_mean"], norm_std=source["norm_std"]
    )
    images.save_pretrained(str(path))
    processor = {
        "processor_class": PROCESSOR_CLASS,
        "auto_map": {"AutoProcessor": f"{PROCESSOR_MODULE}.{PROCESSOR_CLASS}"},
    }
    (path / "processor_config.json").write_text(json.dumps(processor), encoding="utf-8")
    return path


# --- a tiny Qwen2-VL --------------------------------------------------------------------

QWEN_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinyQwen2VLSpec:
    """Sizes of the tiny Qwen2-VL. head_dim 32 is one vLLM's CPU attention has;
    mrope_section sums to head_dim / 2."""

    vocab_size: int = 1024
    hidden_size: int = 64
    layers: int = 2
    attention_heads: int = 2
    kv_heads: int = 1
    mlp_size: int = 128
    mrope_section: tuple[int, int, int] = (4, 6, 6)
    vit_depth: int = 2
    vit_embed: int = 32
    vit_heads: int = 2
    # The image processor's bounds; 14 px patches merged 2x2, so factor 28.
    min_pixels: int = 56 * 56
    max_pixels: int = 1280 * 28 * 28
    max_positions: int = 16384
    seed: int = 0


@dataclass(frozen=True)
class TinyQwenModel:
    path: Path
    spec: TinyQwen2VLSpec
    parameters: int
    image_token_id: int


def build_tiny_qwen2_vl(folder: str | Path, spec: TinyQwen2VLSpec | None = None) -> TinyQwenModel:
    """Write a tiny random float32 Qwen2-VL checkpoint (processor included) into `folder`."""
    import torch
    from transformers import (
        AutoTokenizer,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    spec = spec or TinyQwen2VLSpec()
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    tokens = _train_tokenizer(
        path,
        spec.vocab_size,
        spec.seed,
        QWEN_SPECIAL_TOKENS,
        QWEN_CHAT_TEMPLATE,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    )
    head_dim = spec.hidden_size // spec.attention_heads
    if sum(spec.mrope_section) * 2 != head_dim:
        raise ValueError(f"mrope_section {spec.mrope_section} must sum to head_dim/2 ({head_dim})")
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": tokens["vocab_size"],
            "hidden_size": spec.hidden_size,
            "intermediate_size": spec.mlp_size,
            "num_hidden_layers": spec.layers,
            "num_attention_heads": spec.attention_heads,
            "num_key_value_heads": spec.kv_heads,
            "max_position_embeddings": spec.max_positions,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": list(spec.mrope_section),
            },
            "bos_token_id": tokens["<|endoftext|>"],
            "eos_token_id": tokens["<|im_end|>"],
            "pad_token_id": tokens["<|endoftext|>"],
        },
        vision_config={
            "depth": spec.vit_depth,
            "embed_dim": spec.vit_embed,
            "hidden_size": spec.hidden_size,
            "num_heads": spec.vit_heads,
            "mlp_ratio": 4,
        },
        image_token_id=tokens["<|image_pad|>"],
        video_token_id=tokens["<|video_pad|>"],
        vision_start_token_id=tokens["<|vision_start|>"],
        vision_end_token_id=tokens["<|vision_end|>"],
        eos_token_id=tokens["<|im_end|>"],
        pad_token_id=tokens["<|endoftext|>"],
        tie_word_embeddings=False,
        dtype="float32",
    )
    torch.manual_seed(spec.seed)
    model = Qwen2VLForConditionalGeneration(config)
    model.save_pretrained(str(path))
    model.generation_config.save_pretrained(str(path))
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(
            min_pixels=spec.min_pixels, max_pixels=spec.max_pixels
        ),
        tokenizer=AutoTokenizer.from_pretrained(str(path)),
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    processor.save_pretrained(str(path))
    parameters = sum(int(p.numel()) for p in model.parameters())
    return TinyQwenModel(path, spec, parameters, tokens["<|image_pad|>"])
