"""One tiny chat model as data (``ChatRecipe``, a row of ``harness.tiny_models.chat.RECIPES``) and the
functions that build any row: train its tokenizers, make its processor, fill the token ids into its
config, build the model with random weights and save it as a checkpoint folder.

A row names transformers classes by their names (imported only when a model is built) and writes the
values known only once a tokenizer is trained as ``Id(token)`` and ``VOCAB``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.extras import require_listed
from harness.tiny_models.blocks import bpe_tokenizer, save_tiny

#: The name under which a row's main tokenizer is trained and handed to its processor.
TOKENIZER = "tokenizer"


@dataclass(frozen=True)
class Id:
    """The id of ``token`` in the tokenizer ``of`` (its processor argument's name), once it is trained.
    A token the vocabulary lacks gets the unknown token's id, as ``convert_tokens_to_ids`` gives it."""

    token: str
    of: str = TOKENIZER


@dataclass(frozen=True)
class VocabSize:
    """The number of tokens of the tokenizer ``of``, once it is trained (a text model's ``vocab_size``)."""

    of: str = TOKENIZER


#: The main tokenizer's size.
VOCAB = VocabSize()


@dataclass(frozen=True)
class Vocabulary:
    """A byte-level BPE tokenizer to train (``bpe_tokenizer``): its special tokens in id order, its chat
    template, the tokens it names (``bos_token``, ``pad_token``, ``extra_special_tokens`` that a processor
    reads by name) and the side it pads on."""

    specials: tuple[str, ...]
    template: str | None
    named: Mapping[str, Any]
    padding_side: str = "left"

    def ids(self) -> dict[str, Id | None]:
        """Its pad, eos and bos ids as a config states them (None for a token it does not name)."""
        return {f"{role}_id": Id(self.named[role]) if role in self.named else None for role in _ROLES}


_ROLES = ("pad_token", "eos_token", "bos_token")


@dataclass(frozen=True)
class Part:
    """An object a processor is made of (an image, video or audio processor): its transformers class and
    arguments."""

    cls: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatRecipe:
    """One tiny chat model of a real architecture: what its checkpoint folder is built from.

    ``config`` holds the arguments of the model class's ``config_class`` (nested text and vision configs as
    dicts). ``parts`` are the processor's arguments that are objects (``Part``) or further tokenizers
    (``Vocabulary``, named as the processor takes them); the main tokenizer's chat template is the
    processor's too. ``generation`` is set on the built model's generation config; ``redraw`` names weights
    whose default init is constant (all zeros or ones, which would hide the image) to draw again from
    N(0, 0.02); ``hub_layout`` saves LLaVA's vision weights as llava-hf checkpoints hold them;
    ``requires`` is an optional module (``harness.extras.OPTIONAL``) the processor needs."""

    model: str
    tokenizer: Vocabulary
    config: Mapping[str, Any]
    processor: str | None = None  # None: a text model, saved with its tokenizer
    parts: Mapping[str, Part | Vocabulary] = field(default_factory=dict)
    processor_args: Mapping[str, Any] = field(default_factory=dict)
    generation: Mapping[str, Any] = field(default_factory=dict)
    redraw: tuple[str, ...] = ()
    hub_layout: bool = False
    requires: str | None = None


def build_chat_model(arch: str, recipe: ChatRecipe, out: Path) -> None:
    """Build ``recipe`` (the row of ``tiny:arch``) into ``out``: tokenizers, processor, config, then the model,
    whose random weights the caller's torch seed decides."""
    import transformers

    if recipe.requires:
        require_listed(recipe.requires, f"tiny:{arch} (transformers' {recipe.processor})")
    built = {TOKENIZER: train(recipe.tokenizer)}
    built |= {name: _make(part, transformers) for name, part in recipe.parts.items()}
    processor = built[TOKENIZER]
    if recipe.processor is not None:
        template = {"chat_template": recipe.tokenizer.template} if recipe.tokenizer.template else {}
        processor_cls = getattr(transformers, recipe.processor)
        processor = processor_cls(**built, **template, **resolve(recipe.processor_args, built))
    model_cls = getattr(transformers, recipe.model)
    model = model_cls(model_cls.config_class(**resolve(recipe.config, built)))
    if recipe.redraw:
        _redraw(model, recipe.redraw)
    for name, value in resolve(recipe.generation, built).items():
        setattr(model.generation_config, name, value)
    save_tiny(model, processor, out)
    if recipe.hub_layout:
        hub_llava_layout(out)


def train(vocabulary: Vocabulary) -> Any:
    """The trained tokenizer of ``vocabulary``."""
    named = copy.deepcopy(dict(vocabulary.named))
    tok = bpe_tokenizer(list(vocabulary.specials), vocabulary.template, **named)
    tok.padding_side = vocabulary.padding_side
    return tok


def _make(part: Part | Vocabulary, transformers: Any) -> Any:
    if isinstance(part, Vocabulary):
        return train(part)
    return getattr(transformers, part.cls)(**resolve(part.args, {}))


def resolve(value: Any, built: Mapping[str, Any]) -> Any:
    """A fresh copy of ``value`` with each ``Id`` and ``VocabSize`` replaced by what the trained tokenizers
    in ``built`` say (the table's own values are never handed to transformers, which may change them)."""
    if isinstance(value, Id):
        return built[value.of].convert_tokens_to_ids(value.token)
    if isinstance(value, VocabSize):
        return len(built[value.of])
    if isinstance(value, Mapping):
        return {key: resolve(item, built) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, built) for item in value]
    return value


def _redraw(model: Any, weights: tuple[str, ...]) -> None:
    import torch

    with torch.no_grad():
        for path in weights:
            functools.reduce(getattr, path.split("."), model).normal_(0.0, 0.02)


def hub_llava_layout(folder: Path) -> None:
    """Rename a saved LLaVA's vision weights from transformers' ``vision_tower.*`` to the
    ``vision_tower.vision_model.*`` that llava-hf checkpoints use (and vLLM's loader requires); transformers
    and lmms-eval load both."""
    from safetensors.torch import load_file, save_file

    prefix = "vision_tower."
    for path in sorted(folder.glob("*.safetensors")):
        weights = load_file(str(path))
        renamed = {
            (
                prefix + "vision_model." + k[len(prefix) :]
                if k.startswith(prefix) and not k.startswith(prefix + "vision_model.")
                else k
            ): v
            for k, v in weights.items()
        }
        save_file(renamed, str(path), metadata={"format": "pt"})
