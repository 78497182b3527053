"""The building blocks every tiny recipe shares, the chat table's and the protocols' own: a tokenizer trained
here, a CLIP tokenizer and text encoder, and the saved folder's marker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The file that marks a saved folder as a tiny model (``tiny_model_path`` builds it only once).
MARKER = "SMOKE_TEST_MODEL.txt"

_CORPUS_WORDS = (
    "the a an is are was of to in on and or what which who where when how why this that these those "
    "red green blue yellow black white color shape circle square triangle star image picture photo "
    "describe answer question yes no one two three four five left right top bottom large small "
    "person people man woman child car house tree dog cat sky water text word sentence positive "
    "negative happy sad good bad figurative literal idiom meaning please reply with only"
).split()


def bpe_tokenizer(specials: list[str], template: str | None, **special_kwargs: Any) -> Any:
    """Train a byte-level BPE on a small fixed corpus and wrap it with the architecture's tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [" ".join(_CORPUS_WORDS[i:] + _CORPUS_WORDS[:i]) for i in range(len(_CORPUS_WORDS))]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, chat_template=template, padding_side="left", **special_kwargs)


def clip_tokenizer(folder: Path) -> Any:
    """A byte-level CLIP tokenizer with one token per byte (no merges), written to ``folder``."""
    from transformers import CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=256)


def clip_text_config(tokenizer: Any, max_positions: int) -> Any:
    """The tiny CLIP text encoder that the protocols' diffusion recipes (a generator, an editor) condition on."""
    from transformers import CLIPTextConfig

    return CLIPTextConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        hidden_size=32,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=len(tokenizer),
        projection_dim=32,
        max_position_embeddings=max_positions,
    )


def save_tiny(model: Any, processor: Any, out: Path) -> None:
    """Save a recipe's model and processor (or tokenizer) to ``out`` and mark the folder as a tiny model."""
    model.save_pretrained(out)
    processor.save_pretrained(out)
    mark_tiny(out)


def mark_tiny(out: Path) -> None:
    """Mark a recipe's saved folder as a tiny random-weight model (``tiny_model_path`` builds it only once)."""
    (out / MARKER).write_text(
        "Tiny random-weight model built by the harness for offline tests; its outputs are meaningless.\n"
    )
