"""LoRA stance implantation (appendix A.3): fine-tune a VLM on chat-formatted image + question -> answer
pairs, the loss on the answer tokens only, with checkpoints that let an interrupted run resume.

The defaults are A.3's: rank 16, alpha 32, q/k/v/o projections, 3 epochs, learning rate 1e-3, AdamW,
batch 4, warmup ratio 0.1 (linear warmup, then linear decay). The paper is silent on LoRA dropout and
weight decay; both default to 0, which also makes a resumed run's weights equal an uninterrupted run's
(the epoch order is a fixed function of the seed and the epoch).

``out/`` receives ``checkpoint/`` (the adapter, optimizer and scheduler state and the step reached,
rewritten every ``save_every`` steps and at each epoch's end), ``train_log.jsonl`` (step, epoch, loss,
learning rate), ``adapter/`` (the final LoRA adapter) and ``merged/`` (``merge_and_unload()``: a plain
checkpoint with the base model's processor, which the ``hf:`` backend loads).
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.extras import require

A3_TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class LoraSettings:
    """A.3's LoRA configuration, every field overridable."""

    rank: int = 16
    alpha: int = 32
    target_modules: tuple[str, ...] = A3_TARGET_MODULES
    epochs: int = 3
    learning_rate: float = 1e-3
    batch_size: int = 4
    warmup_ratio: float = 0.1
    dropout: float = 0.0  # not in A.3
    weight_decay: float = 0.0  # not in A.3
    seed: int = 0
    save_every: int = 0  # steps between checkpoints besides each epoch's end (0: epoch ends only)

    def check(self) -> None:
        """Refuse settings no run could use, in one line each."""
        for name in ("rank", "alpha", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise HarnessError(f"LoRA {name} must be at least 1, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise HarnessError(f"LoRA learning rate must be positive, got {self.learning_rate}")
        if not 0 <= self.warmup_ratio < 1:
            raise HarnessError(f"LoRA warmup ratio must lie in [0, 1), got {self.warmup_ratio}")
        if not self.target_modules:
            raise HarnessError("LoRA needs at least one target module")


@dataclass(frozen=True)
class Example:
    """One training pair: an image, the user's question and the answer the model is taught."""

    image: Any  # PIL image
    question: str
    answer: str


@dataclass(frozen=True)
class TrainResult:
    """Where the run wrote its adapter and merged checkpoint, and what it did."""

    adapter: Path
    merged: Path
    steps: int
    resumed_from: int  # the step a resumed run started at (0 for a fresh run)
    final_loss: float


def encode_example(processor: Any, example: Example) -> dict[str, Any]:
    """Model inputs for one pair with ``labels``: the chat template's prompt (image placeholder expanded by
    the processor) followed by the answer and the end-of-turn token; only the answer's tokens are scored."""
    import torch

    chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": example.question}]}]
    prompt = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    enc = processor(text=[prompt], images=[example.image.convert("RGB")], return_tensors="pt")
    tokenizer = processor.tokenizer
    answer = tokenizer(
        " " + example.answer.strip() if prompt.endswith(":") else example.answer.strip(),
        add_special_tokens=False,
        return_tensors="pt",
    )["input_ids"]
    answer = torch.cat([answer, torch.tensor([[tokenizer.eos_token_id]])], dim=1)
    length = enc["input_ids"].shape[1]
    out: dict[str, Any] = {}
    for key, value in enc.items():
        if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape == (1, length):
            fill = (
                answer
                if key == "input_ids"
                else torch.ones_like(answer)
                if key == "attention_mask"
                else torch.zeros_like(answer)
            )
            out[key] = torch.cat([value, fill.to(value.dtype)], dim=1)
        else:
            out[key] = value
    out["labels"] = torch.cat([torch.full((1, length), -100), answer], dim=1)
    return out


def collate(items: Sequence[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """A batch: token-aligned tensors right-padded (labels with -100, masks with 0), image tensors
    concatenated along their first axis (LLaVA's images, Qwen2-VL's patches and grids)."""
    import torch

    width = max(item["input_ids"].shape[1] for item in items)
    out: dict[str, Any] = {}
    for key in items[0]:
        values = [item[key] for item in items]
        if key in _TOKEN_KEYS:
            fill = {"input_ids": pad_id, "labels": -100}.get(key, 0)
            out[key] = torch.cat([torch.nn.functional.pad(v, (0, width - v.shape[1]), value=fill) for v in values])
        else:
            out[key] = torch.cat(values)
    return out


_TOKEN_KEYS = {"input_ids", "attention_mask", "labels", "token_type_ids", "mm_token_type_ids"}


def train_lora(
    base: str | Path,
    examples: Sequence[Example],
    out: Path,
    settings: LoraSettings,
    show_progress: bool = True,
    stop_after: int | None = None,
) -> TrainResult | None:
    """Train a LoRA adapter on ``examples`` from the model folder or Hub id ``base`` into ``out``, resuming
    from ``out/checkpoint`` when one is there; ``stop_after`` ends the run after that many steps in all (an
    interruption, for tests), returning None with the checkpoint written."""
    require("peft", "vista", "LoRA stance implantation")
    import torch
    from peft import set_peft_model_state_dict  # the [vista] extra
    from tqdm.auto import tqdm

    settings.check()
    if not examples:
        raise HarnessError("no training pairs: the dataset split chosen holds none")
    model, processor = _load_base(base)
    model = _with_lora(model, settings)
    encoded = [encode_example(processor, e) for e in examples]
    per_epoch = math.ceil(len(encoded) / settings.batch_size)
    total = per_epoch * settings.epochs
    optimizer, scheduler = _optimizer(model, settings, total)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint"
    start = _resume(checkpoint, model, optimizer, scheduler, settings, set_peft_model_state_dict)
    log_file = (out / "train_log.jsonl").open("a" if start else "w", encoding="utf-8")
    pad_id = processor.tokenizer.pad_token_id
    bar = tqdm(total=total, initial=start, desc="implant", unit="step", disable=not show_progress)
    step, loss_value = start, math.nan
    model.train()
    try:
        for epoch in range(start // per_epoch, settings.epochs):
            order = torch.randperm(len(encoded), generator=torch.Generator().manual_seed(settings.seed + epoch))
            for b in range(step - epoch * per_epoch, per_epoch):
                batch = collate(
                    [encoded[i] for i in order[b * settings.batch_size : (b + 1) * settings.batch_size]], pad_id
                )
                step, loss_value = step + 1, _train_step(model, optimizer, scheduler, batch)
                log_file.write(
                    json.dumps({"step": step, "epoch": epoch, "loss": loss_value, "lr": scheduler.get_last_lr()[0]})
                    + "\n"
                )
                bar.update()
                bar.set_postfix(loss=f"{loss_value:.3f}", epoch=epoch + 1)
                end_of_epoch = step % per_epoch == 0
                if end_of_epoch or (settings.save_every and step % settings.save_every == 0) or step == stop_after:
                    _save_checkpoint(checkpoint, model, optimizer, scheduler, step, settings)
                if step == stop_after and step < total:
                    return None
    finally:
        bar.close()
        log_file.close()
    return _finish(model, processor, out, step, start, loss_value)


def _with_lora(model: Any, settings: LoraSettings) -> Any:
    """The model wrapped with fresh LoRA adapters on the target modules (their A matrices drawn from the seed)."""
    import torch
    from peft import LoraConfig, get_peft_model  # the [vista] extra

    torch.manual_seed(settings.seed)  # peft draws the LoRA A matrices from the global generator
    try:
        return get_peft_model(
            model,
            LoraConfig(
                r=settings.rank,
                lora_alpha=settings.alpha,
                target_modules=_targets(settings.target_modules),
                lora_dropout=settings.dropout,
                bias="none",
            ),
        )
    except ValueError as exc:
        raise HarnessError(
            f"LoRA target modules {', '.join(settings.target_modules)}: {str(exc).splitlines()[0]}"
        ) from None


def _optimizer(model: Any, settings: LoraSettings, total: int) -> tuple[Any, Any]:
    """AdamW over the trainable (LoRA) parameters, with linear warmup then linear decay over ``total`` steps."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    return optimizer, get_linear_schedule_with_warmup(optimizer, round(settings.warmup_ratio * total), total)


def _train_step(model: Any, optimizer: Any, scheduler: Any, batch: dict[str, Any]) -> float:
    """One optimizer step on ``batch``; returns its loss."""
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return float(loss.detach())


def _targets(modules: tuple[str, ...]) -> str | list[str]:
    """The ``target_modules`` peft takes: a list of module names, or its ``all-linear`` shorthand as the bare string."""
    return "all-linear" if modules == ("all-linear",) else list(modules)


def _load_base(base: str | Path) -> tuple[Any, Any]:
    """The base model (float32, for training) and its processor, as the ``hf:`` backend would load them."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(str(base))
        model = AutoModelForImageTextToText.from_pretrained(str(base), dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise HarnessError(f"cannot load base model {str(base)!r}: {str(exc).splitlines()[0]}") from None
    if getattr(processor, "tokenizer", None) is None or processor.tokenizer.eos_token_id is None:
        raise HarnessError(f"base model {str(base)!r}: its processor has no tokenizer with an end-of-turn token")
    if processor.tokenizer.pad_token_id is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return model, processor


def _save_checkpoint(
    folder: Path, model: Any, optimizer: Any, scheduler: Any, step: int, settings: LoraSettings
) -> None:
    """Write the resumable state to a fresh folder, then swap it in, so a kill mid-write keeps the last one."""
    import torch
    from peft import get_peft_model_state_dict  # the [vista] extra

    tmp = folder.with_name(folder.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(
        {
            "adapter": get_peft_model_state_dict(model),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        },
        tmp / "state.pt",
    )
    (tmp / "progress.json").write_text(json.dumps({"step": step, "settings": asdict(settings)}), encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def _resume(folder: Path, model: Any, optimizer: Any, scheduler: Any, settings: LoraSettings, set_state: Any) -> int:
    """The step to start at: 0 without a checkpoint, else the saved one after loading its state (a
    checkpoint written under other settings is refused rather than silently mixed)."""
    import torch

    if not (folder / "progress.json").is_file():
        return 0
    progress = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
    saved = {k: tuple(v) if isinstance(v, list) else v for k, v in progress["settings"].items()}
    if saved != asdict(settings):
        changed = sorted(k for k in saved if saved[k] != asdict(settings).get(k))
        raise HarnessError(
            f"{folder} was written with other LoRA settings ({', '.join(changed)}); "
            "pass the same settings to resume or a new --output to start over"
        )
    state = torch.load(folder / "state.pt", weights_only=False)
    set_state(model, state["adapter"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return int(progress["step"])


def _finish(model: Any, processor: Any, out: Path, steps: int, start: int, loss: float) -> TrainResult:
    """Save the adapter, then the merged checkpoint with the processor beside it."""
    model.eval()
    adapter = out / "adapter"
    model.save_pretrained(str(adapter))
    merged = out / "merged"
    shutil.rmtree(merged, ignore_errors=True)
    model.merge_and_unload().save_pretrained(str(merged))
    processor.save_pretrained(str(merged))
    return TrainResult(adapter, merged, steps, start, loss)
