"""Candidate checkpoints of the tiny model for weight-update tests, written on the
spot from the serving checkpoint (hub names): perturbed values, another shape,
another architecture, a tensor left out, a half-written file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file


def config_of(tiny_path: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(tiny_path / "config.json", folder / "config.json")
    return folder


def perturbed(tiny_path: Path, folder: Path, seed: int = 1, **shapes: tuple[int, ...]) -> Path:
    """The serving checkpoint's tensors (hub names) with noise; `shapes` reshapes some
    (name with "__" for ".") to another size."""
    weights = load_file(str(tiny_path / "model.safetensors"))
    rng = np.random.default_rng(seed)
    changed = {
        name: value + (rng.standard_normal(value.shape) * 0.05).astype(value.dtype)
        for name, value in weights.items()
    }
    for name, shape in shapes.items():
        changed[name.replace("__", ".")] = np.zeros(shape, dtype=np.float32)
    save_file(changed, str(config_of(tiny_path, folder) / "model.safetensors"))
    return folder


def half_written(tiny_path: Path, folder: Path) -> Path:
    whole = (tiny_path / "model.safetensors").read_bytes()
    (config_of(tiny_path, folder) / "model.safetensors").write_bytes(whole[: len(whole) // 2])
    return folder


def other_architecture(tiny_path: Path, folder: Path) -> Path:
    perturbed(tiny_path, folder)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["Qwen2VLForConditionalGeneration"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def without(folder: Path, name: str) -> Path:
    weights = load_file(str(folder / "model.safetensors"))
    del weights[name]
    save_file(weights, str(folder / "model.safetensors"))
    return folder
