"""engines/fingerprint.py: what the weights fingerprint tells apart, on real tensors."""

from __future__ import annotations

import pytest

from holodesk.daemon.engines.fingerprint import fingerprint

torch = pytest.importorskip("torch", reason="needs torch (holodesk-daemon[transformers])")


def weights() -> dict[str, object]:
    generator = torch.Generator().manual_seed(0)
    return {
        "a.weight": torch.randn(64, 32, generator=generator),
        "b.weight": torch.randn(32, generator=generator).to(torch.bfloat16),
        "c.scale": torch.zeros(8),
    }


def test_the_same_tensors_give_the_same_fingerprint() -> None:
    first, second = weights(), weights()
    assert fingerprint(first.items()).startswith("sha256:")
    assert fingerprint(first.items()) == fingerprint(second.items())


def test_one_element_changed_is_seen() -> None:
    base = fingerprint(weights().items())
    changed = weights()
    b = changed["b.weight"]
    assert isinstance(b, torch.Tensor)
    b.view(torch.int16)[7] ^= 1  # the lowest bit of one bfloat16
    assert fingerprint(changed.items()) != base
    zero = weights()
    scale = zero["c.scale"]
    assert isinstance(scale, torch.Tensor)
    scale[3] = -0.0  # equal as a float, other bits
    assert fingerprint(zero.items()) != base


def test_renamed_permuted_or_recast_tensors_are_seen() -> None:
    base = fingerprint(weights().items())
    renamed = {("z.weight" if k == "a.weight" else k): v for k, v in weights().items()}
    assert fingerprint(renamed.items()) != base
    permuted = weights()
    a = permuted["a.weight"]
    assert isinstance(a, torch.Tensor)
    permuted["a.weight"] = a.flip(0)
    assert fingerprint(permuted.items()) != base
    recast = weights()
    recast["c.scale"] = torch.zeros(8, dtype=torch.float16)
    assert fingerprint(recast.items()) != base
