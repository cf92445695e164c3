"""One GRPO update from holodesk's trainer export, with TRL: the glue a trainer needs.

What goes in: the rows of ``holodesk export --format trainer`` (Parquet; one row
per sampled completion: the prompt's token ids exactly as the engine saw them, the
completion's token ids and sampling logprobs, the loss mask, the pixels the
engine's processor was handed for each prompt image, the policy version, the
trajectory's reward). What comes out: a checkpoint folder in the serving model's
own layout (the hub's safetensors key names, its config and tokenizer), ready for
``TrainerService.UpdateWeights``.

Why TRL, and why its GRPOTrainer at two seams rather than whole:

- TRL is on PyPI, kept by Hugging Face, already in this workspace's dev group, and
  its GRPO loss (clipped importance ratios, DAPO/GRPO/Dr.GRPO normalisations,
  optional KL and off-policy masking) and update (transformers' Trainer: AdamW,
  clipping, schedule, accelerate) are what most teams start from. verl and
  OpenRLHF expose standalone loss functions, but pull Ray and pinned serving
  stacks into a trainer that needs none of it here.
- GRPOTrainer generates its own rollouts; ours come from holodesk sessions. TRL
  1.16's ``rollout_func`` hook takes precomputed prompt ids, completion ids and
  logprobs, but (read in its source) it needs one completion per repeated prompt
  (a multi-step session has one prompt per step, and different step counts per
  trajectory), re-renders the prompt text to get pixel values, and applies the
  sampling-logprob correction only when TRL itself drives vLLM. Its experimental
  AsyncGRPOTrainer owns the vLLM server and its NCCL weight transfer. So this
  module keeps GRPOTrainer's loss (``_compute_loss``) and its whole update loop
  (``train()``), and replaces what TRL calls its generation step:
  ``_generate_and_score_completions`` reads the exported rows instead of sampling.
- TRL's vision path does not know this model class (NemotronH_Omni's
  ``image_grid_hw``; its fused LM head looks for a backbone the class does not
  have), so ``_get_per_token_logps_and_entropies`` runs the model's own forward,
  one sample at a time and unpadded (a hybrid Mamba model then scores exactly the
  sequence the engine scored), and gathers the logprobs with TRL's
  ``selective_log_softmax``.

Structured decoding changes the policy: vLLM applies the grammar's token mask to the
logits before it samples and before it computes logprobs, so a recorded logprob is
the masked distribution's (on the tiny model, about 6 nats above the unmasked one,
where the grammar forces a token). A trainer that scores the unmasked model against
it sees ratios near e^-6 and clips everything away. So, given the JSON schema the
daemon decoded with, `GrammarMasks` rebuilds each position's allowed tokens with
xgrammar (vLLM's own backend, same settings) and the trainer scores the masked,
renormalised distribution: the policy that actually sampled.

The GRPO group is the task: every trajectory of one task is one sample of the
group; each of its steps is trained with the trajectory's advantage (per-step
training, as GUI RL systems do: a sliding screenshot window means no step's
prompt extends the one before it). The old policy of the clipped ratio is the one
that sampled: ``old_per_token_logps`` are the recorded sampling logprobs, so the
ratio corrects for both the trainer/engine numerics and a policy that moved since.

Written against TRL 1.16 (its private seams named above may move in another
release; tests/e2e/test_rl_loop.py runs this module against the installed TRL).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from trl.trainer.grpo_config import GRPOConfig
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.utils import entropy_from_logits, pad, selective_log_softmax

# The weights of the serving model's checkpoint, by its own key names.
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"


@dataclass(frozen=True)
class TrainerSample:
    """One exported row, as a trainer uses it."""

    # The GRPO group (the task) and the trajectory (the session) it belongs to.
    group: str
    trajectory: str
    step: int
    prompt_token_ids: tuple[int, ...]
    completion_token_ids: tuple[int, ...]
    # The engine's sampling logprob of each completion token (never recomputed).
    completion_logprobs: tuple[float, ...]
    # 1 where the completion's token is the model's (trained), 0 where it is not.
    completion_mask: tuple[int, ...]
    # The encoded pixels the engine's processor got, in prompt order.
    images: tuple[bytes, ...]
    reward: float
    policy_version: int
    # The weights changed while this completion was sampled (an update in mode KEEP).
    mixed_versions: bool = False


@dataclass(frozen=True)
class Selection:
    """What read_trainer_rows kept, and why it left the others out (counted)."""

    samples: tuple[TrainerSample, ...]
    skipped: dict[str, int] = field(default_factory=dict)


def read_trainer_rows(
    dataset: Path | Sequence[dict[str, Any]], *, chosen_only: bool = True
) -> Selection:
    """The rows of a trainer export (a Parquet file, or its rows as dicts) to train on.

    A row without a reward cannot be scored and is left out. With `chosen_only`, of a
    step sampled several times (candidates) only the completion that acted is kept,
    since the trajectory's reward says nothing of the others; a step none of whose
    completions parsed keeps them all (they are what failed).
    """
    rows = _rows(dataset)
    acted = {(r["session_id"], r["step"]) for r in rows if r["chosen"]}
    samples: list[TrainerSample] = []
    skipped: dict[str, int] = {}
    for row in rows:
        why = _skip_reason(row, chosen_only, acted)
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        prompt = tuple(int(t) for t in row["prompt_token_ids"])
        completion = tuple(int(t) for t in row["completion_token_ids"])
        mask = tuple(int(m) for m in row["loss_mask"])
        if len(mask) != len(prompt) + len(completion) or any(mask[: len(prompt)]):
            raise ValueError(
                f"session {row['session_id']} step {row['step']}: loss_mask does not cover "
                "prompt (0s) + completion"
            )
        samples.append(
            TrainerSample(
                group=str(row["task"]),
                trajectory=str(row["session_id"]),
                step=int(row["step"]),
                prompt_token_ids=prompt,
                completion_token_ids=completion,
                completion_logprobs=tuple(float(x) for x in row["completion_logprobs"]),
                completion_mask=mask[len(prompt) :],
                images=tuple(bytes(image["bytes"]) for image in row["images"]),
                reward=float(row["reward"]),
                policy_version=int(row["policy_version"]),
                mixed_versions=bool(row.get("mixed_versions", False)),
            )
        )
    return Selection(tuple(samples), skipped)


def _rows(dataset: Path | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(dataset, Path):
        import pyarrow.parquet as pq

        return list(pq.read_table(dataset).to_pylist())
    return list(dataset)


def _skip_reason(row: dict[str, Any], chosen_only: bool, acted: set[tuple[str, int]]) -> str:
    if row.get("reward") is None:
        return "no reward"
    if not row["completion_token_ids"]:
        return "empty completion"
    if chosen_only and not row["chosen"] and (row["session_id"], row["step"]) in acted:
        return "another completion of its step acted"
    return ""


def group_advantages(samples: Iterable[TrainerSample], *, scale: bool = True) -> dict[str, float]:
    """GRPO's advantage of each trajectory: its reward minus its group's mean, over the
    group's standard deviation (`scale`, TRL's scale_rewards="group"); each trajectory
    counts once however many steps it has. A group of one, or of equal rewards,
    teaches nothing: its advantages are 0."""
    rewards: dict[str, dict[str, float]] = {}
    for sample in samples:
        rewards.setdefault(sample.group, {})[sample.trajectory] = sample.reward
    advantages: dict[str, float] = {}
    for by_trajectory in rewards.values():
        values = torch.tensor(list(by_trajectory.values()), dtype=torch.float64)
        centred = values - values.mean()
        if scale and len(values) > 1:
            centred = centred / (values.std() + 1e-4)
        for trajectory, advantage in zip(by_trajectory, centred.tolist(), strict=True):
            advantages[trajectory] = advantage if len(values) > 1 else 0.0
    return advantages


class GrammarMasks:
    """The tokens structured decoding allowed at each position of a completion, as
    vLLM's xgrammar backend decides them (its settings: no free whitespace, compact
    separators, the request's stop tokens), for scoring the policy that sampled."""

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        schema: dict[str, Any],
        stop_token_ids: Sequence[int],
        *,
        any_whitespace: bool = False,
    ) -> None:
        import xgrammar

        self._xgr = xgrammar
        self.vocab_size = vocab_size
        self.stop_token_ids = list(stop_token_ids)
        info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size)
        self._grammar = xgrammar.GrammarCompiler(info).compile_json_schema(
            json.dumps(schema),
            any_whitespace=any_whitespace,
            separators=None if any_whitespace else (",", ":"),
        )

    @classmethod
    def for_model(cls, model: Any, processor: Any, schema: dict[str, Any]) -> GrammarMasks:
        """The masks for `model` (its vocabulary, its end-of-sequence tokens)."""
        tokenizer = processor.tokenizer
        stops = {tokenizer.eos_token_id}
        configured = model.generation_config.eos_token_id
        stops.update(configured if isinstance(configured, list) else [configured])
        vocab = model.config.get_text_config().vocab_size
        return cls(tokenizer, vocab, schema, sorted(s for s in stops if s is not None))

    def allowed(self, completion: Sequence[int]) -> torch.Tensor:
        """(tokens, vocab) booleans; ValueError when the completion is not one this
        grammar could have produced (another schema, another decoder)."""
        xgr = self._xgr
        matcher = xgr.GrammarMatcher(self._grammar, override_stop_tokens=self.stop_token_ids)
        bitmask = xgr.allocate_token_bitmask(len(completion), self.vocab_size)
        for position, token in enumerate(completion):
            if matcher.is_terminated():
                raise ValueError(f"the completion goes on after its grammar ended ({position})")
            matcher.fill_next_token_bitmask(bitmask, position)
            if not matcher.accept_token(int(token)):
                raise ValueError(f"token {token} at {position} is not allowed by the grammar")
        blocked = torch.zeros(len(completion), self.vocab_size)
        xgr.apply_token_bitmask_inplace(blocked, bitmask)
        return blocked == 0


def masked(logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """Logits with the tokens the grammar forbade pushed out of the distribution (a
    finite floor, so that entropies stay finite)."""
    if allowed is None:
        return logits
    return logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)


class ExportedRolloutsGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose "generation" reads holodesk's exported rows (see module doc).

    Its train dataset is one row per group (the task); TRL's sampler repeats each
    `num_generations` times, the number of trajectories per task, and a generation
    batch holding every group makes one optimizer step over every sample.
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        samples: Sequence[TrainerSample],
        args: GRPOConfig,
        *,
        masks: GrammarMasks | None = None,
        **kwargs: Any,
    ) -> None:
        from datasets import Dataset  # type: ignore[import-untyped]

        self.samples = tuple(samples)
        # The allowed tokens of each sample's completion, by its whole token sequence
        # (what the logprob seam sees of a sample after TRL shuffled the batch).
        self.allowed: dict[tuple[int, ...], torch.Tensor] = {}
        if masks is not None:
            for sample in self.samples:
                key = sample.prompt_token_ids + sample.completion_token_ids
                self.allowed[key] = masks.allowed(sample.completion_token_ids)
        self.groups = sorted({s.group for s in self.samples})
        self.advantages = group_advantages(self.samples, scale=args.scale_rewards != "none")
        dataset = Dataset.from_list(
            [{"prompt": group, "group": index} for index, group in enumerate(self.groups)]
        )
        super().__init__(
            model=model,
            reward_funcs=[self.recorded_reward],
            args=args,
            train_dataset=dataset,
            processing_class=processor,
            **kwargs,
        )

    def recorded_reward(self, prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:
        """The reward the environment gave (TRL insists on a reward function; holodesk's
        evaluator already scored every trajectory, and the rows carry it)."""
        raise RuntimeError("rewards come from the export, never recomputed")

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        groups = {self.groups[row["group"]] for row in inputs}
        batch = [s for s in self.samples if s.group in groups]
        device = self.accelerator.device
        pad_id = self._tokenizer.pad_token_id

        def ragged(values: Iterable[Sequence[Any]], dtype: torch.dtype) -> list[torch.Tensor]:
            return [torch.tensor(list(v), dtype=dtype) for v in values]

        prompt_ids = pad(ragged((s.prompt_token_ids for s in batch), torch.long), pad_id, "left")
        prompt_mask = pad(
            [torch.ones(len(s.prompt_token_ids), dtype=torch.long) for s in batch], 0, "left"
        )
        completion_ids = pad(ragged((s.completion_token_ids for s in batch), torch.long), pad_id)
        completion_mask = pad(ragged((s.completion_mask for s in batch), torch.long), 0)
        sampled = pad(ragged((s.completion_logprobs for s in batch), torch.float32), 0)
        vision = pixel_inputs(self.processing_class, batch)
        advantages = torch.tensor([self.advantages[s.trajectory] for s in batch])
        return {
            "prompt_ids": prompt_ids.to(device),
            "prompt_mask": prompt_mask.to(device),
            "completion_ids": completion_ids.to(device),
            "completion_mask": completion_mask.to(device),
            "advantages": advantages.to(device, torch.float32),
            # The sampling policy is the old policy of the clipped ratio.
            "old_per_token_logps": sampled.to(device),
            "sampling_per_token_logps": sampled.to(device),
            "num_items_in_batch": completion_mask.sum().to(device),
            "pixel_values": vision["pixel_values"].to(device),
            # TRL's name for a per-image patch grid: its batch splitting and shuffling
            # then keep each sample's patches with it (rows = product of the grid).
            "image_grid_thw": vision["image_grid_hw"].to(device),
            "num_images": [len(s.images) for s in batch],
        }

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        pixel_values: torch.Tensor | None = None,
        image_grid_thw: torch.Tensor | None = None,
        num_images: list[int] | None = None,
        **_: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, None]:
        logps = torch.zeros(input_ids.shape[0], logits_to_keep, device=input_ids.device)
        entropies = torch.zeros_like(logps)
        rows_per_sample = _rows_per_sample(image_grid_thw, num_images, input_ids.shape[0])
        pixel_start = image_start = 0
        for index in range(input_ids.shape[0]):
            keep = attention_mask[index].bool()
            ids = input_ids[index][keep]
            # Completion positions that hold real tokens (right padding comes last).
            completion = attention_mask[index, -logits_to_keep:].bool()
            count = int(completion.sum())
            vision: dict[str, torch.Tensor] = {}
            images = num_images[index] if num_images is not None else 0
            if pixel_values is not None and image_grid_thw is not None and images:
                rows = rows_per_sample[index]
                vision = {
                    "pixel_values": pixel_values[pixel_start : pixel_start + rows],
                    "image_grid_hw": image_grid_thw[image_start : image_start + images],
                }
                pixel_start += rows
                image_start += images
            logits = token_logits(model, ids, vision, count)
            logits = masked(logits, self.allowed.get(tuple(ids.tolist())))
            targets = ids[-count:] if count else ids[:0]
            logps[index, :count] = selective_log_softmax(logits, targets)
            if compute_entropy:
                entropies[index, :count] = entropy_from_logits(logits)
        return logps, (entropies if compute_entropy else None), None


def _rows_per_sample(
    grid: torch.Tensor | None, num_images: list[int] | None, samples: int
) -> list[int]:
    if grid is None or num_images is None:
        return [0] * samples
    per_image = grid.prod(-1).tolist()
    rows, start = [], 0
    for count in num_images:
        rows.append(int(sum(per_image[start : start + count])))
        start += count
    return rows


def token_logits(
    model: Any, ids: torch.Tensor, vision: dict[str, torch.Tensor], completion_tokens: int
) -> torch.Tensor:
    """The logits that predicted the last `completion_tokens` of `ids` (one unpadded
    sequence, its prompt's pixel values in `vision`), as float32."""
    outputs = model(input_ids=ids.unsqueeze(0), use_cache=False, **vision)
    logits = outputs.logits[0, -completion_tokens - 1 : -1]
    return logits.float()


def pixel_inputs(processor: Any, samples: Sequence[TrainerSample]) -> dict[str, torch.Tensor]:
    """The vision inputs of `samples`' prompt images through the model's own image
    processor, checked against the prompts' placeholder tokens: pixels that do not
    fill exactly the engine's image tokens would train on another picture."""
    images = [Image.open(io.BytesIO(data)).convert("RGB") for s in samples for data in s.images]
    if not images:
        return {
            "pixel_values": torch.zeros(0, 1),
            "image_grid_hw": torch.zeros(0, 2, dtype=torch.long),
        }
    vision = processor.image_processor(images=images, return_tensors="pt")
    grid = vision["image_grid_hw"]
    merge = round(1 / processor.image_processor.downsample_ratio) ** 2
    tokens = (grid.prod(-1) // merge).tolist()
    image_token = processor.image_token_id
    start = 0
    for sample in samples:
        expected = sum(tokens[start : start + len(sample.images)])
        start += len(sample.images)
        found = sum(1 for t in sample.prompt_token_ids if t == image_token)
        if found != expected:
            raise ValueError(
                f"session {sample.trajectory} step {sample.step}: the prompt holds {found} image "
                f"tokens, the processor makes {expected} from its images: the engine tiled them "
                "otherwise (this glue reproduces one-tile images; see docs/online-rl.md)"
            )
    return {"pixel_values": vision["pixel_values"], "image_grid_hw": grid}


def freeze_vision_tower(model: Any) -> int:
    """Train the language model and projector only (TRL's async GRPO does the same for
    vision-language models); returns the number of frozen parameters. Why here: the
    transformers class holds vision parameters the hub checkpoint has no key for
    (RADIO's layer scales, a video patch embedding), which a served checkpoint
    could not carry if they trained."""
    frozen = 0
    for parameter in model.vision_model.parameters():
        parameter.requires_grad_(False)
        frozen += parameter.numel()
    return frozen


@dataclass(frozen=True)
class UpdateResult:
    checkpoint: Path
    samples: int
    groups: int
    # TRL's logged metrics of the step (loss, clip ratios, entropy ...).
    metrics: dict[str, float]
    seconds: float


def grpo_update(
    policy: Path,
    serving: Path,
    samples: Sequence[TrainerSample],
    output: Path,
    *,
    learning_rate: float = 1e-5,
    config: dict[str, Any] | None = None,
    schema: dict[str, Any] | None = None,
) -> UpdateResult:
    """One GRPO optimizer step on `samples` from the weights in `policy` (a checkpoint
    transformers loads: the native class, trust_remote_code for its processor), saved
    into `output` in the layout of `serving` (the checkpoint the engine serves).
    `config` overrides GRPOConfig fields (loss_type, epsilon, beta ...); `schema` is
    the JSON schema the daemon's structured decoding held the steps to (None: none)."""
    import time

    from transformers import AutoModelForImageTextToText, AutoProcessor

    started = time.perf_counter()
    groups = {s.group for s in samples}
    if not any(len({s.trajectory for s in samples if s.group == g}) > 1 for g in groups):
        raise ValueError("GRPO needs a task rolled out 2 or more times; no group has 2")
    model = AutoModelForImageTextToText.from_pretrained(
        str(policy), trust_remote_code=True, dtype=torch.float32
    )
    processor = AutoProcessor.from_pretrained(str(policy), trust_remote_code=True)
    freeze_vision_tower(model)
    with tempfile.TemporaryDirectory(prefix="grpo-") as scratch:
        fields: dict[str, Any] = {
            "output_dir": scratch,
            "learning_rate": learning_rate,
            # TRL's sampler repeats each task row num_generations times; the rows only
            # name groups (each group's trajectories come from the export), so 2 does.
            "num_generations": 2,
            "per_device_train_batch_size": 2 * len(groups),
            "gradient_accumulation_steps": 1,
            "steps_per_generation": 1,
            "max_steps": 1,
            "beta": 0.0,
            "use_cpu": not torch.cuda.is_available(),
            "bf16": False,
            "gradient_checkpointing": False,
            "remove_unused_columns": False,
            "save_strategy": "no",
            "report_to": [],
            "logging_steps": 1,
            "disable_tqdm": True,
            **(config or {}),
        }
        masks = None if schema is None else GrammarMasks.for_model(model, processor, schema)
        trainer = ExportedRolloutsGRPOTrainer(
            model, processor, samples, GRPOConfig(**fields), masks=masks
        )
        trainer.train()
        metrics = {
            k: float(v)
            for entry in trainer.state.log_history
            for k, v in entry.items()
            if isinstance(v, int | float)
        }
    save_served_checkpoint(model, serving, output)
    return UpdateResult(output, len(samples), len(groups), metrics, time.perf_counter() - started)


def save_served_checkpoint(model: Any, serving: Path, output: Path) -> Path:
    """`model`'s weights as a checkpoint of the serving model's layout, written whole or
    not at all (the daemon refuses a half-written folder; this never leaves one).

    transformers' save_pretrained writes the hub's key names back (its conversion
    mapping of this class runs both ways); the class's tensors the hub checkpoint has
    no key for (vision-only, frozen: freeze_vision_tower) are left out, and every
    key and shape of the serving checkpoint must be there. The serving folder's other
    files (config, its config class, tokenizer) are copied: same model, new values.
    """
    from safetensors.torch import load_file, save_file

    expected = _serving_shapes(serving)
    output = output.resolve()
    staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="save-") as saved:
            model.save_pretrained(saved)
            tensors: dict[str, torch.Tensor] = {}
            for file in sorted(Path(saved).glob("*.safetensors")):
                tensors.update(load_file(str(file)))
        extra = sorted(set(tensors) - set(expected))
        trainable = {n for n, p in model.named_parameters() if p.requires_grad}
        if any(not name.startswith("vision_model.") for name in extra) or any(
            name.startswith("vision_model.") for name in trainable
        ):
            raise ValueError(f"the trained model has tensors the served one cannot load: {extra}")
        missing = sorted(set(expected) - set(tensors))
        reshaped = [n for n in expected if n in tensors and tuple(tensors[n].shape) != expected[n]]
        if missing or reshaped:
            raise ValueError(f"not the serving layout: missing {missing}, reshaped {reshaped}")
        kept = {name: tensors[name].contiguous() for name in expected}
        save_file(kept, str(staging / WEIGHTS_FILE), metadata={"format": "pt"})
        for file in serving.iterdir():
            weights = file.name.endswith(".safetensors") or file.name == WEIGHTS_INDEX
            if file.is_file() and not weights:
                shutil.copy2(file, staging / file.name)
        if output.exists():
            shutil.rmtree(output)
        os.replace(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return output


def _serving_shapes(serving: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor of the serving checkpoint by name, from the safetensors headers."""
    from safetensors import safe_open

    index = serving / WEIGHTS_INDEX
    files = (
        sorted({serving / f for f in json.loads(index.read_text())["weight_map"].values()})
        if index.exists()
        else sorted(serving.glob("*.safetensors"))
    )
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        with safe_open(str(file), "pt") as handle:
            for name in handle.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                shapes[name] = tuple(handle.get_slice(name).get_shape())
    return shapes


def policy_view(template: Path, checkpoint: Path, output: Path) -> Path:
    """A folder transformers loads with `checkpoint`'s weights: `template`'s files (the
    native class's config, processor) with the checkpoint's safetensors linked in.
    Valid because the native class reads the hub's key names (it renames on load):
    the served checkpoint's weights need no conversion to train again."""
    output.mkdir(parents=True, exist_ok=True)
    for file in template.iterdir():
        weights = file.name.endswith(".safetensors") or file.name == WEIGHTS_INDEX
        source = (checkpoint / file.name) if weights else file
        if weights and not source.exists():
            continue
        link = output / file.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source.resolve())
    for file in checkpoint.glob("*.safetensors"):
        if not (output / file.name).exists():
            (output / file.name).symlink_to(file.resolve())
    return output


class TrlGrpoTrainer:
    """The loop's trainer (loop.Trainer): each call is one GRPO update from a trainer
    export, written as a checkpoint of the serving layout under `work_dir`, after
    which it trains from the new weights. `policy` is the serving model as
    transformers loads it (native class, processor); `serving` the folder the
    daemon's engine loaded; `schema` the JSON schema of its structured decoding (None:
    free decoding)."""

    def __init__(
        self,
        policy: Path,
        serving: Path,
        work_dir: Path,
        *,
        learning_rate: float = 1e-5,
        config: dict[str, Any] | None = None,
        schema: dict[str, Any] | None = None,
    ) -> None:
        self.template = policy
        self.schema = schema
        self.policy = policy
        self.serving = serving
        self.work_dir = work_dir
        self.learning_rate = learning_rate
        self.config = config
        self.results: list[UpdateResult] = []
        self.selections: list[Selection] = []

    def __call__(self, rows: Path, version: int) -> Path:
        selection = read_trainer_rows(rows)
        self.selections.append(selection)
        checkpoint = self.work_dir / f"checkpoint-v{version}"
        result = grpo_update(
            self.policy,
            self.serving,
            selection.samples,
            checkpoint,
            learning_rate=self.learning_rate,
            config=self.config,
            schema=self.schema,
        )
        self.results.append(result)
        self.policy = policy_view(self.template, checkpoint, self.work_dir / f"policy-v{version}")
        return checkpoint


@dataclass(frozen=True)
class Scored:
    """A completion's logprobs under some weights, and where the grammar left the
    model a choice (more than one allowed token: where the weights matter)."""

    logprobs: torch.Tensor
    free: torch.Tensor


def completion_logprobs(
    policy: Path, samples: Sequence[TrainerSample], schema: dict[str, Any] | None = None
) -> list[Scored]:
    """Each sample's completion tokens' logprobs under the weights in `policy` (float32,
    temperature 1, masked by `schema`'s grammar as the engine decoded): what the
    engine's sampling logprobs should equal, within numerics, when those weights
    served."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(
        str(policy), trust_remote_code=True, dtype=torch.float32
    ).eval()
    processor = AutoProcessor.from_pretrained(str(policy), trust_remote_code=True)
    masks = None if schema is None else GrammarMasks.for_model(model, processor, schema)
    scored = []
    with torch.no_grad():
        for sample in samples:
            vision = pixel_inputs(processor, [sample]) if sample.images else {}
            ids = torch.tensor(sample.prompt_token_ids + sample.completion_token_ids)
            count = len(sample.completion_token_ids)
            allowed = None if masks is None else masks.allowed(sample.completion_token_ids)
            logits = masked(token_logits(model, ids, vision, count), allowed)
            free = torch.ones(count, dtype=torch.bool) if allowed is None else allowed.sum(-1) > 1
            scored.append(Scored(selective_log_softmax(logits, ids[-count:]), free))
    return scored
