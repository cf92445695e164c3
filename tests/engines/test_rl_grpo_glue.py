"""examples/rl_loop/grpo.py's glue without vLLM: the parts a wrong line would silently
break (advantages, the served layout, the grammar masks, the row selection), on the
tiny Holotron-architecture model in transformers. The whole loop runs in
tests/e2e/test_rl_loop.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl", reason="the RL example needs TRL (dev group)")

from examples.rl_loop.grpo import (
    GrammarMasks,
    TrainerSample,
    group_advantages,
    read_trainer_rows,
    save_served_checkpoint,
)
from examples.rl_loop.serving import click_only
from tests.support.tiny_models import (
    TinyModel,
    build_tiny_nemotron_vl,
    tiny_nemotron_vl_for_transformers,
)


def sample(group: str, trajectory: str, reward: float, step: int = 1) -> TrainerSample:
    return TrainerSample(group, trajectory, step, (1, 2), (3,), (-1.0,), (1,), (), reward, 0)


def test_advantages_are_per_trajectory_within_its_task() -> None:
    samples = [
        sample("a", "t1", 1.0),
        sample("a", "t1", 1.0, step=2),  # a second step does not count twice
        sample("a", "t2", 0.0),
        sample("b", "t3", 0.5),
        sample("b", "t4", 0.5),  # equal rewards: nothing to learn
        sample("c", "t5", 1.0),  # a group of one: nothing to learn
    ]
    advantages = group_advantages(samples)
    assert advantages["t1"] == pytest.approx(-advantages["t2"])
    assert advantages["t1"] > 0.7  # (1 - 0.5) / std([1, 0]) ~ 0.707
    assert advantages["t3"] == advantages["t4"] == advantages["t5"] == 0.0
    unscaled = group_advantages(samples, scale=False)
    assert unscaled["t1"] == pytest.approx(0.5)


def test_rows_without_reward_or_that_did_not_act_are_left_out() -> None:
    def row(session: str, step: int, chosen: bool, reward: float | None) -> dict[str, object]:
        return {
            "task": "t",
            "session_id": session,
            "step": step,
            "chosen": chosen,
            "prompt_token_ids": [1, 2],
            "completion_token_ids": [3],
            "completion_logprobs": [-0.5],
            "loss_mask": [0, 0, 1],
            "images": [],
            "reward": reward,
            "policy_version": 2,
        }

    selection = read_trainer_rows(
        [
            row("s", 1, True, 1.0),
            row("s", 1, False, 1.0),  # another candidate of a step that acted
            row("s", 2, False, 1.0),  # a step none of whose candidates parsed: kept
            row("u", 1, True, None),
        ]
    )
    assert [(s.trajectory, s.step) for s in selection.samples] == [("s", 1), ("s", 2)]
    assert selection.samples[0].completion_mask == (1,)
    assert selection.skipped == {"another completion of its step acted": 1, "no reward": 1}
    with pytest.raises(ValueError, match="loss_mask"):
        read_trainer_rows([{**row("s", 1, True, 1.0), "loss_mask": [1, 0, 1]}])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[TinyModel, Path]:
    model = build_tiny_nemotron_vl(tmp_path_factory.mktemp("tiny-holotron"))
    return model, tiny_nemotron_vl_for_transformers(model, tmp_path_factory.mktemp("tiny-tf"))


def test_a_trained_model_is_saved_in_the_serving_layout(
    tiny: tuple[TinyModel, Path], tmp_path: Path
) -> None:
    from safetensors import safe_open
    from transformers import AutoModelForImageTextToText

    served, policy = tiny
    model = AutoModelForImageTextToText.from_pretrained(str(policy), trust_remote_code=True)
    with torch.no_grad():
        model.language_model.lm_head.weight.add_(1.0)
    for parameter in model.vision_model.parameters():
        parameter.requires_grad_(False)
    out = save_served_checkpoint(model, served.path, tmp_path / "ckpt")

    def tensors(folder: Path) -> dict[str, torch.Tensor]:
        with safe_open(str(folder / "model.safetensors"), "pt") as handle:
            return {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118

    before, after = tensors(served.path), tensors(out)
    assert set(after) == set(before)  # the hub's names, none of the class's extras
    assert all(after[name].shape == before[name].shape for name in before)
    head = "language_model.lm_head.weight"
    assert torch.equal(after[head], before[head] + 1)
    assert torch.equal(after["mlp1.1.weight"], before["mlp1.1.weight"])
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["NemotronH_Nano_VL_V2"]
    assert not list(tmp_path.glob(".ckpt.*"))  # no staging folder left behind

    # A trainable vision tower would carry tensors the served model cannot load.
    for parameter in model.vision_model.parameters():
        parameter.requires_grad_(True)
    with pytest.raises(ValueError, match="cannot load"):
        save_served_checkpoint(model, served.path, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()


def test_grammar_masks_allow_what_the_schema_allows(tiny: tuple[TinyModel, Path]) -> None:
    from transformers import AutoTokenizer

    _, policy = tiny
    tokenizer = AutoTokenizer.from_pretrained(str(policy))
    schema = click_only().step_schema()
    assert schema is not None
    masks = GrammarMasks(tokenizer, len(tokenizer), schema, [tokenizer.eos_token_id])
    answer = '{"thought":"ok","action":{"action":"click_element","x":12,"y":345}}'
    ids = [*tokenizer(answer, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
    allowed = masks.allowed(ids)
    assert allowed.shape == (len(ids), len(tokenizer))
    assert all(allowed[i, token] for i, token in enumerate(ids))
    assert allowed[0].sum() < len(tokenizer)  # "{" first, not anything
    assert int(allowed[-1].sum()) == 1  # after the closing brace: only the end
    bad = tokenizer('{"note":', add_special_tokens=False)["input_ids"]
    with pytest.raises(ValueError, match="not allowed"):
        masks.allowed(bad)
