"""The vllm backend against hf and against raw vLLM, on one GPU or vLLM's CPU build (benchmarks/gpu_check.sh).

- ``answers --backend hf|vllm --arch A --out F``: greedy answers (through the backend), generated token
  ids (through the engine itself: ``model.generate`` for hf, ``LLM.chat`` for vllm) and multiple_choice
  scores (``loglikelihood``: teacher-forced for hf, prompt logprobs for vllm) for the same prompts on a
  tiny model, written to F; hf runs in the main environment, vllm in the vLLM one.
- ``compare F1 F2``: token-for-token agreement of two answer files, and the largest difference of their
  choice loglikelihoods (exits 1 on any difference in token ids, or on scores apart by more than 1e-3;
  differing texts are reported).
- ``throughput [--model PATH]``: the same sampled requests (n=10, seeded) through ``VLLMBackend.generate``
  and through a bare ``LLM.chat`` on the same engine, best of ``--rounds``; prints tokens/s of each and
  their ratio (target >= 0.95) as ``RESULT`` lines that benchmarks/scale_plan.py reads.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.engine.requests import make_request  # noqa: E402
from harness.models.base import GenerationParams, GenerationRequest  # noqa: E402
from harness.models.messages import ChatMessage  # noqa: E402
from harness.tiny_models import tiny_model_path  # noqa: E402

COLOURS = [(220, 30, 30), (30, 160, 60), (40, 60, 200), (230, 200, 20), (20, 190, 200), (200, 40, 200)]
QUESTIONS = ["What colour is the square?", "Describe the image.", "Which shape do you see?", "Is it bright?"]


def prompts(count: int) -> list[list[ChatMessage]]:
    """``count`` one-image conversations: coloured squares of varying size and place on varying canvases."""
    from PIL import Image, ImageDraw

    out = []
    for i in range(count):
        image = Image.new("RGB", (48 + 8 * (i % 5), 40 + 6 * (i % 3)), (250, 250, 250))
        ImageDraw.Draw(image).rectangle((4 + i % 7, 4, 24 + i % 11, 28), fill=COLOURS[i % len(COLOURS)])
        out.append([ChatMessage.user(QUESTIONS[i % len(QUESTIONS)], [image])])
    return out


def greedy_requests(count: int) -> list[GenerationRequest]:
    params = GenerationParams.from_kwargs({"max_new_tokens": 24})
    return [make_request(m, params) for m in prompts(count)]


def choice_requests(count: int) -> list[Any]:
    """multiple_choice requests on the same prompts: each colour name as a choice."""
    from harness.engine.loglikelihood import choice_request

    return [choice_request(m, ["red", "green", "blue", "yellow", "a square"]) for m in prompts(count)]


def _until_eos(ids: list[int], eos: set[int]) -> list[int]:
    for i, token in enumerate(ids):
        if token in eos:
            return ids[:i]
    return ids


def answers(args: argparse.Namespace) -> None:
    """Greedy texts through the backend and token ids through the engine, for the same prompts."""
    model = str(tiny_model_path(args.arch))
    requests = greedy_requests(args.prompts)
    if args.backend == "hf":
        import torch

        from harness.models.hf import HFBackend

        backend: Any = HFBackend(model, {"device": "auto", "dtype": "float32"})
        texts = [out[0] for out in backend.generate(requests)]
        ids = []
        for request in requests:
            inputs = backend.prepare_inputs([request.messages])
            with torch.inference_mode():
                out = backend.model.generate(
                    **inputs, max_new_tokens=24, do_sample=False, pad_token_id=backend.tokenizer.pad_token_id
                )
            ids.append(out[0, inputs["input_ids"].shape[1] :].tolist())
        eos = backend.model.generation_config.eos_token_id
    else:
        from vllm import SamplingParams

        from harness.models.vllm import VLLMBackend, sampling_kwargs, to_vllm_messages

        backend = VLLMBackend(model, {"dtype": "float32", "gpu_memory_utilization": "0.5", "max_model_len": "2048"})
        texts = [out[0] for out in backend.generate(requests)]
        outputs = backend._llm.chat(
            [to_vllm_messages(r.messages) for r in requests],
            [SamplingParams(**sampling_kwargs(r)) for r in requests],
            use_tqdm=False,
        )
        ids = [list(o.outputs[0].token_ids) for o in outputs]
        eos = backend._llm.get_tokenizer().eos_token_id
    eos_ids = set(eos if isinstance(eos, list) else [eos])
    scores = [[c.loglikelihood for c in out] for out in backend.loglikelihood(choice_requests(args.prompts))]
    Path(args.out).write_text(
        json.dumps({"texts": texts, "ids": [_until_eos(i, eos_ids) for i in ids], "scores": scores})
    )


def compare(args: argparse.Namespace) -> None:
    a, b = (json.loads(Path(p).read_text()) for p in (args.first, args.second))
    same_ids = sum(x == y for x, y in zip(a["ids"], b["ids"], strict=True))
    same_texts = sum(x == y for x, y in zip(a["texts"], b["texts"], strict=True))
    total = len(a["ids"])
    print(
        f"RESULT {Path(args.first).stem}_vs_{Path(args.second).stem} token_ids_equal={same_ids}/{total} "
        f"texts_equal={same_texts}/{total}"
    )
    for i, (x, y) in enumerate(zip(a["ids"], b["ids"], strict=True)):
        if x != y:
            print(f"  prompt {i}: {x} != {y}")
            break
    if same_texts < total:  # random weights emit partial UTF-8 byte tokens, which detokenizers may render apart
        print("  note: texts differ where token ids agree only if the two detokenizers differ")
    gap = max(abs(x - y) for r, q in zip(a["scores"], b["scores"], strict=True) for x, y in zip(r, q, strict=True))
    print(
        f"RESULT {Path(args.first).stem}_vs_{Path(args.second).stem} max_loglikelihood_gap={gap:.2e} (target <= 1e-3)"
    )
    sys.exit(0 if same_ids == total and gap <= 1e-3 else 1)


def throughput(args: argparse.Namespace) -> None:
    """Harness path against the bare engine on the same requests; best of ``--rounds`` each, alternating."""
    from vllm import SamplingParams

    from harness.models.vllm import VLLMBackend, sampling_kwargs, to_vllm_messages

    model = args.model or str(tiny_model_path(args.arch))
    backend = VLLMBackend(model, {"gpu_memory_utilization": "0.8", "max_model_len": str(args.max_model_len)})
    params = GenerationParams.from_kwargs({"temperature": 1.0, "max_new_tokens": args.tokens})
    requests = [make_request(m, params, n=10, base_seed=1) for m in prompts(args.prompts)]
    conversations = [to_vllm_messages(r.messages) for r in requests]
    sampling = [SamplingParams(**sampling_kwargs(r)) for r in requests]
    backend._llm.chat(conversations[:8], sampling[:8], use_tqdm=False)  # warm-up (compilation, CUDA graphs)
    raw_s, harness_s, tokens = [], [], 0
    for _ in range(args.rounds):
        start = time.perf_counter()
        outputs = backend._llm.chat(conversations, sampling, use_tqdm=False)
        raw_s.append(time.perf_counter() - start)
        tokens = sum(len(c.token_ids) for o in outputs for c in o.outputs)
        start = time.perf_counter()
        backend.generate(requests)
        harness_s.append(time.perf_counter() - start)
    raw, harness = tokens / min(raw_s), tokens / min(harness_s)
    print(f"{len(requests)} requests x n=10, {tokens} tokens, model {model}")
    print(f"RESULT vllm_raw_tps={raw:.1f}")
    print(f"RESULT vllm_harness_tps={harness:.1f}")
    print(f"RESULT vllm_harness_over_raw={harness / raw:.3f} (target >= 0.95)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("answers")
    a.add_argument("--backend", choices=["hf", "vllm"], required=True)
    a.add_argument(
        "--arch",
        choices=["qwen2_vl", "llava", "qwen2_vl_hd32", "qwen2_5_vl_hd32", "llava_hd32"],
        required=True,
        help="the *_hd32 recipes for vLLM's CPU build (its attention needs head_dim 32)",
    )
    a.add_argument("--prompts", type=int, default=32)
    a.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("first")
    c.add_argument("second")
    t = sub.add_parser("throughput")
    t.add_argument("--model", help="a local model folder (default: the tiny --arch)")
    t.add_argument("--arch", default="qwen2_vl")
    t.add_argument("--prompts", type=int, default=256)
    t.add_argument("--tokens", type=int, default=128)
    t.add_argument("--rounds", type=int, default=2)
    t.add_argument("--max-model-len", type=int, default=4096)
    args = parser.parse_args()
    {"answers": answers, "compare": compare, "throughput": throughput}[args.command](args)


if __name__ == "__main__":
    main()
