"""The ``hf:`` backend: any transformers image-text-to-text model (or text-only causal LM).

The loaded ``model`` and ``processor`` are public attributes and :meth:`HFBackend.prepare_inputs`
turns chat messages into model inputs, so white-box code (gradients, attention read-outs, hooks,
teacher-forced scoring) can reuse exactly the preprocessing that generation uses.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import GENERATION_TYPES, SCORING_TYPES, Backend, GenerationRequest, finished_text
from harness.models.family import lmms_family
from harness.models.loglikelihood import LoglikelihoodRequest, score_continuations
from harness.models.messages import ChatMessage, ImagePart, has_image
from harness.models.sampling import seeded_sampler
from harness.models.source import load_error, local_folder
from harness.results.schema import ScoredChoice

log = logging.getLogger(__name__)

_MODEL_ARGS = {
    "revision",
    "dtype",
    "device",
    "attn_implementation",
    "trust_remote_code",
    "min_pixels",
    "max_pixels",
    "cut_characters",
}
#: What becomes of a trailing character cut off mid-way (``finished_text``): dropped, as every backend does,
#: or kept as U+FFFD, as lmms-eval's transformers model classes decode it.
_CUT_CHARACTERS = ("drop", "keep")
# Processors whose dynamic resolution takes pixel-count bounds (``smart_resize``'s min/max_pixels).
_PIXEL_BOUNDED = {"qwen2_vl", "qwen2_5_vl"}
_DTYPES = {"float32", "float16", "bfloat16"}
_FULL_HASH_LIMIT = 256 * 1024 * 1024
#: Plain-text prompts of the families whose checkpoints ship no chat template, as lmms-eval and their papers
#: prompt them (BLIP-2: "Question: {q} Answer:"; InstructBLIP: the instruction itself): a user turn's text fills
#: the format, other turns' text follows as is. The processor puts the image's query tokens first by itself.
PLAIN_PROMPTS = {"blip-2": "Question: {} Answer:", "instructblip": "{}"}
_PROCESSOR_TEMPLATE, _TOKENIZER_TEMPLATE = "the processor's chat template", "the tokenizer's chat template"


def _auto_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu")


def _check_device(value: str) -> str:
    """``value`` when torch can place a model there on this machine, else one clear line; checked before
    the weights load, so a typo or a missing accelerator never costs a model load or a traceback."""
    import torch

    choices = "choose auto, cpu, cuda, cuda:N, mps, xpu or xpu:N"
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        raise ModelSpecError(f"--model-args device={value!r}: not a device; {choices}") from None
    if device.type not in _DEVICE_TYPES:
        raise ModelSpecError(f"--model-args device={value!r}: not a device; {choices}")
    if device.type == "cpu":
        return value
    if device.type == "mps":
        count = int(torch.backends.mps.is_available())
    else:
        module = getattr(torch, device.type)
        count = module.device_count() if module.is_available() else 0
    if count == 0:
        raise ModelSpecError(
            f"--model-args device={value!r}: this machine has no {device.type} device (use device=cpu or device=auto)"
        )
    if device.index is not None and device.index >= count:
        raise ModelSpecError(f"--model-args device={value!r}: this machine has {device.type} devices 0..{count - 1}")
    return value


def _auto_dtype(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    if device == "mps":
        return "float16"
    return "float32"


def folder_fingerprint(path: Path) -> str:
    """Content hash of a model folder (file names, sizes, and bytes when the folder is small)."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    total = sum(p.stat().st_size for p in files)
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(path)}:{p.stat().st_size}\n".encode())
        if total <= _FULL_HASH_LIMIT or p.suffix in {".json", ".jinja", ".txt"}:
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _positive_int(key: str, value: str) -> int:
    if not value.isdigit() or int(value) == 0:
        raise ModelSpecError(f"--model-args {key}={value!r}: expected a positive whole number of pixels")
    return int(value)


def check_model_args(model_args: dict[str, str]) -> None:
    """An ``hf:`` or ``tiny:`` model's ``--model-args`` keys, checked before anything loads (a preflight asks
    it for every model of a run); an unknown key is one :class:`ModelSpecError` naming the known ones."""
    unknown = sorted(set(model_args) - _MODEL_ARGS)
    if unknown:
        raise ModelSpecError(
            f"--model-args: unknown key(s) {', '.join(unknown)} for hf (known: {', '.join(sorted(_MODEL_ARGS))})"
        )


class HFBackend(Backend):
    """Transformers generation with chat templates and left-padded batches, greedy or sampled (each sampled
    request from its own seeded generator, so its samples do not depend on its batch)."""

    def __init__(self, name: str, model_args: dict[str, str], smoke: bool = False) -> None:
        check_model_args(model_args)
        self.name = name
        self.is_smoke_model = smoke
        self.device = model_args.get("device", "auto")
        self.device = _auto_device() if self.device == "auto" else _check_device(self.device)
        dtype = model_args.get("dtype", "auto")
        dtype = _auto_dtype(self.device) if dtype == "auto" else dtype
        if dtype not in _DTYPES:
            raise ModelSpecError(f"--model-args dtype={dtype!r}: choose auto, {', '.join(sorted(_DTYPES))}")
        self.dtype = dtype
        self.revision = model_args.get("revision")
        self.attn_implementation = model_args.get("attn_implementation")
        self.pixel_bounds: dict[str, int] = {
            key: _positive_int(key, model_args[key]) for key in ("min_pixels", "max_pixels") if key in model_args
        }
        cut = model_args.get("cut_characters", "drop")
        if cut not in _CUT_CHARACTERS:
            raise ModelSpecError(f"--model-args cut_characters={cut!r}: choose {' or '.join(_CUT_CHARACTERS)}")
        self.keep_cut_character = cut == "keep"
        trust = model_args.get("trust_remote_code", "false").lower() in {"1", "true", "yes"}
        self._load(trust)

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> HFBackend:
        """The backend for ``hf:NAME``: a Hub id or a local model folder."""
        return cls(name, model_args)

    @classmethod
    def from_tiny_spec(cls, arch: str, model_args: dict[str, str]) -> HFBackend:
        """The backend for ``tiny:ARCH``: a tiny random-weight model of that architecture, built once into the cache."""
        from harness.tiny_models import tiny_model_path

        return cls(str(tiny_model_path(arch)), model_args, smoke=True)

    def _load(self, trust_remote_code: bool) -> None:
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

        common: dict[str, Any] = {"revision": self.revision, "trust_remote_code": trust_remote_code}
        folder = local_folder(self.name)
        try:
            config = AutoConfig.from_pretrained(self.name, **common)
        except (OSError, ValueError) as exc:
            raise load_error(self.name, folder, exc) from None
        self.model_type = config.model_type
        self.is_multimodal = config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
        self.model_family = lmms_family(config.model_type)
        if self.pixel_bounds and self.model_type not in _PIXEL_BOUNDED:
            raise ModelSpecError(
                f"--model-args min_pixels/max_pixels apply to {', '.join(sorted(_PIXEL_BOUNDED))} "
                f"processors, not {self.model_type}"
            )
        load_kwargs: dict[str, Any] = {**common, "dtype": getattr(torch, self.dtype)}
        if self.attn_implementation:
            load_kwargs["attn_implementation"] = self.attn_implementation
        try:
            if self.is_multimodal:
                self.processor = AutoProcessor.from_pretrained(self.name, **common, **self.pixel_bounds)
                self.tokenizer = self.processor.tokenizer
                self.model = AutoModelForImageTextToText.from_pretrained(self.name, **load_kwargs)
            else:
                self.processor = self.tokenizer = AutoTokenizer.from_pretrained(self.name, **common)
                self.model = AutoModelForCausalLM.from_pretrained(self.name, **load_kwargs)
        except (OSError, ValueError, ImportError) as exc:  # ImportError: a processor's own dependency (num2words)
            raise ModelSpecError(f"cannot load model {self.name!r}: {str(exc).splitlines()[0]}") from None
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.to(self.device).eval()
        self.prompt_format = self._prompt_format()
        if self.prompt_format != _PROCESSOR_TEMPLATE:
            log.info("%s has no processor chat template: prompts use %s", self.name, self.prompt_format)
        self.commit = getattr(config, "_commit_hash", None)
        self._fingerprint = hashlib.sha256(
            json.dumps(
                {
                    "model": folder_fingerprint(folder) if folder else f"{self.name}@{self.commit or self.revision}",
                    "dtype": self.dtype,
                    "attn": self.attn_implementation,
                    **self.pixel_bounds,
                    **({"prompt": self.prompt_format} if self.prompt_format != _PROCESSOR_TEMPLATE else {}),
                    **({"cut_characters": "keep"} if self.keep_cut_character else {}),
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()[:16]

    def _prompt_format(self) -> str:
        """How prompts are rendered: the processor's chat template, else the tokenizer's, else the family's plain
        prompt (``PLAIN_PROMPTS``); the processor's when there is none of them (rendering then refuses)."""
        if not getattr(self.processor, "chat_template", None):
            if getattr(self.tokenizer, "chat_template", None):
                return _TOKENIZER_TEMPLATE
            if self.model_type in PLAIN_PROMPTS:
                return f"the plain prompt {PLAIN_PROMPTS[self.model_type]!r}"
        return _PROCESSOR_TEMPLATE

    @property
    def fingerprint(self) -> str:
        """The model's identity in the response store: weights, processor and the options that change answers."""
        return self._fingerprint

    def info(self) -> dict[str, Any]:
        """What provenance records of the model: backend, name, type, family, fingerprint, revision, size, dtype,
        device."""
        return {
            "backend": "tiny" if self.is_smoke_model else "hf",
            "model": self.name,
            "model_type": self.model_type,
            "model_family": self.model_family,
            "revision": self.revision,
            "commit": self.commit,
            "fingerprint": self.fingerprint,
            "dtype": self.dtype,
            "device": self.device,
            "attn_implementation": self.attn_implementation or getattr(self.model.config, "_attn_implementation", None),
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "smoke_test_model": self.is_smoke_model,
            **self.pixel_bounds,
        }

    # -- preprocessing -------------------------------------------------------------------------
    def _render(self, messages: list[ChatMessage], add_generation_prompt: bool = True) -> tuple[str, list[Any]]:
        """Chat-template text plus the images in the order their placeholders appear."""
        images: list[Any] = []
        chat: list[dict[str, Any]] = []
        for message in messages:
            if not self.is_multimodal:
                if message.images:
                    raise UnsupportedRequestError(f"{self.name} is a text-only model; it cannot take images")
                chat.append({"role": message.role, "content": message.text})
                continue
            items: list[dict[str, Any]] = []
            for part in message.content:
                if isinstance(part, ImagePart):
                    images.append(part.image.convert("RGB"))
                    items.append({"type": "image"})
                else:
                    items.append({"type": "text", "text": part.text})
            chat.append({"role": message.role, "content": items})
        return self._apply_template(chat, add_generation_prompt), images

    def _apply_template(self, chat: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        """``chat`` rendered in the model's prompt format (:meth:`_prompt_format`)."""
        if self.prompt_format == _PROCESSOR_TEMPLATE:
            if not getattr(self.processor, "chat_template", None):
                raise UnsupportedRequestError(
                    f"{self.name} has no chat template (processor or tokenizer) and "
                    f"{self.model_type} no plain prompt format"
                )
            return str(
                self.processor.apply_chat_template(chat, add_generation_prompt=add_generation_prompt, tokenize=False)
            )
        # the fallbacks take text turns: the processor puts the image's query tokens first by itself
        turns = [
            {
                "role": m["role"],
                "content": m["content"]
                if isinstance(m["content"], str)
                else " ".join(i["text"] for i in m["content"] if i["type"] == "text"),
            }
            for m in chat
        ]
        if self.prompt_format == _TOKENIZER_TEMPLATE:
            return str(
                self.tokenizer.apply_chat_template(turns, add_generation_prompt=add_generation_prompt, tokenize=False)
            )
        plain = PLAIN_PROMPTS[self.model_type]
        return " ".join(plain.format(t["content"]) if t["role"] == "user" else t["content"] for t in turns)

    def prepare_inputs(self, batch: list[list[ChatMessage]]) -> Any:
        """Model inputs (a BatchFeature on the model's device) for a batch of conversations."""
        rendered = [self._render(m) for m in batch]
        return self.encode([t for t, _ in rendered], [imgs for _, imgs in rendered])

    def encode(self, texts: list[str], images: list[list[Any]]) -> Any:
        """Rendered texts (and each one's images) as model inputs on the model's device."""
        if not self.is_multimodal:
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        else:
            kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
            if any(images):
                if not all(images):
                    raise UnsupportedRequestError("a batch mixes prompts with and without images")
                kwargs["images"] = images
            enc = self.processor(**kwargs)
            if self.model_type in PLAIN_PROMPTS:
                _move_padding(enc)
        return enc.to(self.model.device)

    # -- teacher-forced scoring ----------------------------------------------------------------
    def supports(self, output_type: str) -> bool:
        """Generation, and loglikelihood scoring of ``multiple_choice`` tasks."""
        return output_type in GENERATION_TYPES | SCORING_TYPES

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[list[ScoredChoice] | Exception]:
        """Each request's continuations scored teacher-forced (one prefix pass per prompt); a request that
        fails is its own exception."""
        out: list[list[ScoredChoice] | Exception] = []
        for req in requests:
            try:
                out.append(score_continuations(self, req.messages, req.continuations))
            except Exception as exc:  # one prompt's failure is that sample's error
                log.debug("scoring failed", exc_info=True)
                out.append(exc)
        return out

    # -- generation ----------------------------------------------------------------------------
    def preferred_batch(self, requests: list[GenerationRequest], batch_size: int) -> list[list[GenerationRequest]]:
        """Requests batch by identical settings (and, when sampled, identical ``n``), with or without images
        apart; ``batch_size`` counts prompts, so a sampled batch holds ``batch_size * n`` rows."""
        batches: list[list[GenerationRequest]] = []
        open_batches: dict[Any, list[GenerationRequest]] = {}
        for req in requests:
            key = (req.params, req.n if req.params.do_sample else None, has_image(req.messages))
            group = open_batches.setdefault(key, [])
            group.append(req)
            if len(group) >= batch_size:
                batches.append(open_batches.pop(key))
        batches.extend(open_batches.values())
        return batches

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """Answers for a batch; a request that fails alone is its own exception, so the rest of the batch survives."""
        try:
            return list(self._generate_batch(requests))
        except Exception as exc:  # isolate the failing request instead of failing the batch
            if len(requests) == 1:
                log.debug("generation failed", exc_info=True)
                return [exc]
            out: list[list[str] | Exception] = []
            for req in requests:
                out.extend(self.generate([req]))
            return out

    def _generate_batch(self, requests: list[GenerationRequest]) -> list[list[str]]:
        import torch

        params = requests[0].params
        assert all(r.params == params for r in requests)
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "num_beams": params.num_beams,
            "pad_token_id": self.tokenizer.pad_token_id,
            "do_sample": False,
            "temperature": None,
            "top_p": None,
            "top_k": None,
        }
        if params.until:
            kwargs.update(stop_strings=list(params.until), tokenizer=self.tokenizer)
        if params.do_sample:
            # n rows per request, each request drawing from its own generator (see harness.models.sampling)
            n = requests[0].n
            assert all(r.n == n for r in requests)
            inputs = self.prepare_inputs([r.messages for r in requests for _ in range(n)])
            kwargs["logits_processor"] = [seeded_sampler(self.model, params, [r.seed for r in requests], n)]
        else:
            inputs = self.prepare_inputs([r.messages for r in requests])
        with torch.inference_mode():
            output = self.model.generate(**inputs, **kwargs)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        texts = [finished_text(t, params.until, self.keep_cut_character) for t in texts]
        if params.do_sample:
            return [texts[i * n : (i + 1) * n] for i in range(len(requests))]
        # Greedy decoding is deterministic: one completion stands for all n samples.
        return [[t] * r.n for t, r in zip(texts, requests, strict=True)]


def _move_padding(enc: Any) -> None:
    """The BLIP processors pad a batch between the query tokens they put first and the text: move that padding to
    the front, so that a batch shifts a prompt's positions as a whole (as any left-padded batch does), and move
    InstructBLIP's Q-Former text padding to the end, where the Q-Former's absolute positions (BERT's) need it."""
    for ids, mask, pads_first in (
        ("input_ids", "attention_mask", True),
        ("qformer_input_ids", "qformer_attention_mask", False),
    ):
        if ids in enc:
            order = (enc[mask] if pads_first else 1 - enc[mask]).argsort(dim=1, stable=True)
            enc[ids], enc[mask] = enc[ids].gather(1, order), enc[mask].gather(1, order)
