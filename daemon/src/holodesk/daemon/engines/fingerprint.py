"""A fingerprint of a model's weights, computed from the engine's own tensors where
they live: how an engine proves that an update changed what it serves.

One function for every in-process engine (vLLM's workers, engines/vllm_worker.py;
the transformers engine, transformers_weights.py), so two engines holding the same
tensors under the same names report the same "sha256:..." and a trainer can compare
them. torch is imported inside the function: the daemon imports this without it.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable
from typing import Any

# Elements reduced at a time: bounds the fingerprint's temporary memory (two
# int64 buffers of this size, 64 MiB) on a GPU whose memory vLLM has taken.
_CHUNK = 4 << 20


def fingerprint(tensors: Iterable[tuple[str, Any]]) -> str:
    """ "sha256:<hex>" over each tensor's name, dtype, shape and two reductions of
    its bits, computed where the tensor lives (the GPU: one transfer of two
    int64 per tensor at the end, so a 12B model takes well under a second).

    The tensor is viewed as integers of its own width (bfloat16 as int16...),
    widened to int64, and reduced to its sum and its position-weighted sum
    (sum of (i + 1) * x[i], wrapping modulo 2**64).
    It detects: any change of a single element's bits (including -0.0 for 0.0
    and NaN payloads, which compare equal as floats), tensors that moved, swapped
    or were renamed, elements permuted within a tensor, any change of dtype or shape.
    It cannot detect: changes built to keep both sums (several elements changed
    so that the changes cancel in both; not something a load or a transport
    failure produces), nor state outside the tensors it is given. What each
    engine gives is its own choice: vLLM's worker its parameters, the weights its
    CPU kernels packed out of them, and its buffers (vllm_worker.leaf_tensors: a
    buffer derived from a weight once held the previous checkpoint's values after
    an update); the transformers engine its parameters. It is a change detector, not a
    cryptographic digest of the bytes (vLLM's `compute_weight_checksums` is one,
    and copies every tensor to the host to make it).
    """
    import torch

    names: list[str] = []
    sums: list[Any] = []
    for name, tensor in tensors:
        flat = _as_integers(tensor.detach()).reshape(-1)
        total = torch.zeros((), dtype=torch.int64, device=flat.device)
        weighted = torch.zeros((), dtype=torch.int64, device=flat.device)
        for start in range(0, flat.numel(), _CHUNK):
            chunk = flat[start : start + _CHUNK].to(torch.int64)
            positions = torch.arange(
                start + 1, start + 1 + chunk.numel(), dtype=torch.int64, device=flat.device
            )
            total += chunk.sum()
            weighted += (chunk * positions).sum()
        names.append(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}")
        sums.append(torch.stack((total, weighted)))
    digest = hashlib.sha256()
    values = torch.stack(sums).cpu().tolist() if sums else []
    for label, (total_value, weighted_value) in zip(names, values, strict=True):
        digest.update(label.encode())
        digest.update(struct.pack("<qq", total_value, weighted_value))
    return f"sha256:{digest.hexdigest()}"


def _as_integers(tensor: Any) -> Any:
    import torch

    if not tensor.is_floating_point() and tensor.dtype != torch.bool:
        return tensor
    widths = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if tensor.dtype == torch.bool:
        return tensor.to(torch.uint8)
    return tensor.view(widths[tensor.element_size()])
