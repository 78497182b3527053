"""The backend seam: typed generation requests, the ``Backend`` interface and the backend registry.

A request's decoding settings are a :class:`harness.results.generation.GenerationParams`, the type a run's
provenance records, so what the backend receives and what the run says it used are one value."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

from harness.errors import ModelSpecError
from harness.models.messages import ChatMessage
from harness.results.generation import GenerationParams as GenerationParams  # the seam's type, home in results
from harness.secrets import SECRET_MARKER, remember


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to answer ``n`` times; ``key`` is its content hash and ``seed`` makes sampling repeatable."""

    key: str
    messages: list[ChatMessage] = field(compare=False)
    params: GenerationParams
    n: int = 1
    seed: int = 0


def truncate_at_stop(text: str, until: tuple[str, ...]) -> str:
    """Cut a completion at the first occurrence of any stop string (lmms-eval's ``until``)."""
    cut = len(text)
    for stop in until:
        if stop:
            pos = text.find(stop)
            if pos != -1:
                cut = min(cut, pos)
    return text[:cut]


#: What a byte-level decoder makes of bytes that are not (yet) a whole UTF-8 character.
REPLACEMENT_CHARACTER = "\ufffd"


def finished_text(text: str, until: tuple[str, ...], keep_cut_character: bool = False) -> str:
    """A completion as every backend returns it: cut at the first stop string, then without a trailing
    character cut off mid-way. A completion whose last tokens hold only the first bytes of a multi-byte
    character decodes (``hf:``) to a trailing U+FFFD, while vLLM's incremental detokenizer holds those bytes
    back and never emits them; so the same tokens give the same text in ``hf:``, ``vllm:`` and ``openai:``,
    trailing U+FFFD characters are dropped everywhere (a U+FFFD inside the text stays: it is the same in
    all of them). ``keep_cut_character`` keeps them, as lmms-eval's transformers model classes do
    (``hf:``'s ``cut_characters=keep``, set by ``--lmms-model``)."""
    text = truncate_at_stop(text, until)
    return text if keep_cut_character else text.rstrip(REPLACEMENT_CHARACTER)


# output types every generating backend serves: a multi-round task's rounds are generations too
GENERATION_TYPES = frozenset({"generate_until", "generate_until_multi_round"})
#: Output types answered by scoring given continuations (``loglikelihood`` requests), not by generation.
SCORING_TYPES = frozenset({"multiple_choice", "loglikelihood"})


class Backend(ABC):
    """A model that answers generation requests. Subclasses register under a spec prefix."""

    #: lmms-eval model name used to pick ``lmms_eval_specific_kwargs`` blocks (e.g. ``qwen2_vl``).
    model_family: str | None = None
    #: True for offline smoke-test models whose outputs carry no meaning.
    is_smoke_model: bool = False
    #: Model arguments that are credentials although their names do not say so (``harness.secrets.is_secret``
    #: already marks ``api_key``, ``token``, ``*_key``, ...): never written to a run, a log line or the store.
    secret_args: ClassVar[frozenset[str]] = frozenset()

    @property
    @abstractmethod
    def fingerprint(self) -> str:
        """Identifies the weights and settings that determine outputs; keys the response store."""

    @abstractmethod
    def info(self) -> dict[str, Any]:
        """Provenance for results.json: model id, revision, dtype, device and the like."""

    @abstractmethod
    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """Answer a batch: for each request ``n`` completions, or the exception that prevented them."""

    def preferred_batch(self, requests: list[GenerationRequest], batch_size: int) -> list[list[GenerationRequest]]:
        """Group requests into calls of ``generate``; by default fixed-size chunks in order."""
        return [requests[i : i + batch_size] for i in range(0, len(requests), batch_size)]

    def supports(self, output_type: str) -> bool:
        """Whether the backend answers requests of this lmms-eval ``output_type``."""
        return output_type in GENERATION_TYPES

    def answer(
        self, requests: list[GenerationRequest], batch_size: int
    ) -> Iterator[tuple[GenerationRequest, list[str] | Exception]]:
        """Each request with its answers, as they come: here each preferred batch in turn; a backend that
        answers on several replicas yields them as its replicas finish, so the caller stores them at once."""
        for batch in self.preferred_batch(requests, batch_size):
            yield from zip(batch, self.generate(batch), strict=True)


@runtime_checkable
class WhiteBoxBackend(Protocol):
    """What white-box code (gradients through the model, attention read-outs, hooks) needs from a backend:
    the loaded model with its tokenizer and processor, and the exact inputs ``generate`` would build, so an
    attack differentiates the same path that answers. ``harness.models.hf.HFBackend`` is one."""

    model_type: str
    is_multimodal: bool
    model: Any
    tokenizer: Any
    processor: Any

    @property
    def fingerprint(self) -> str:
        """The model's identity in the response store."""

    def info(self) -> dict[str, Any]:
        """What provenance records of the model."""

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """Answers for a batch of requests, a failed request being its own exception."""

    def prepare_inputs(self, batch: list[list[ChatMessage]]) -> Any:
        """The model's inputs for a batch of conversations, exactly as generation prepares them."""


BackendFactory = Callable[[str, dict[str, str]], Backend]
_REGISTRY: dict[str, str | BackendFactory] = {
    "hf": "harness.models.hf:HFBackend.from_spec",
    "tiny": "harness.models.hf:HFBackend.from_tiny_spec",
    "openai": "harness.models.openai_api:OpenAIBackend.from_spec",
    "vllm": "harness.models.vllm:VLLMBackend.from_spec",
}


#: Installed packages add backends through this entry-point group: ``mybackend = "mypkg.backend:factory"``
#: makes ``--model mybackend:NAME`` call ``factory(NAME, model_args)``.
ENTRY_POINT_GROUP = "harness.backends"


def register_backend(prefix: str, factory: str | BackendFactory) -> None:
    """Register a backend factory (or a lazy ``module:attr`` path) under a spec prefix."""
    _REGISTRY[prefix] = factory


def _installed() -> dict[str, str]:
    """The backends installed packages declare (prefix -> ``module:attr``); a built-in or registered prefix wins."""
    return {e.name: e.value for e in entry_points(group=ENTRY_POINT_GROUP) if e.name not in _REGISTRY}


def available_backends() -> list[str]:
    """The backend names a model spec may start with (``name:...``)."""
    return sorted({*_REGISTRY, *_installed()})


def parse_model_args(text: str | None) -> dict[str, str]:
    """``k=v,k2=v2`` into a dict; a malformed pair fails with one line."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ModelSpecError(f"--model-args: expected key=value, got {part!r}")
        out[key.strip()] = value.strip()
    return out


def split_spec(spec: str) -> tuple[str, str]:
    """``BACKEND:NAME`` as (backend, name), the backend one that is registered or installed."""
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        raise ModelSpecError(
            f"model spec {spec!r} must look like BACKEND:NAME (backends: {', '.join(available_backends())})"
        )
    if prefix not in available_backends():
        raise ModelSpecError(f"unknown backend {prefix!r} in {spec!r}; available: {', '.join(available_backends())}")
    return prefix, name


def create_backend(spec: str, model_args: dict[str, str] | None = None) -> Backend:
    """Instantiate the backend for ``BACKEND:NAME``."""
    prefix, name = split_spec(spec)
    if prefix == "tiny":
        from harness.tiny_models import require_chat_arch

        require_chat_arch(name)
    # A run read back (an audit re-creating its model) holds only the marker where a credential was given:
    # left out, so the backend takes it from its environment variable as it would have without one.
    given = {k: v for k, v in (model_args or {}).items() if v != SECRET_MARKER}
    remember(given)  # before the factory runs: its own errors and log lines are cleared too
    backend = backend_factory(prefix)(name, given)
    remember(given, backend.secret_args)
    return backend


def backend_factory(prefix: str) -> BackendFactory:
    """The factory of a known backend, imported when it is named by path (a plug-in that cannot be imported
    fails in one line)."""
    factory = _REGISTRY.get(prefix) or _installed()[prefix]
    return _resolve(prefix, factory) if isinstance(factory, str) else factory


def _resolve(prefix: str, path: str) -> BackendFactory:
    """The factory a ``module:attr`` path names; a plug-in that cannot be imported fails in one line."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        if prefix in _REGISTRY and module_name.startswith("harness."):
            raise  # a built-in's missing extra: the command line names the extra
        raise ModelSpecError(f"backend {prefix!r} ({path}) cannot be loaded: {exc}") from None
    if not callable(obj):
        raise ModelSpecError(f"backend {prefix!r} ({path}) is not a factory: it names a {type(obj).__name__}")
    return cast(BackendFactory, obj)
