"""``harness eval``'s vllm: path against a bare ``vllm.LLM.chat``, and against hf:, on the same requests.

Run in the vLLM environment (``.venv-vllm/bin/python benchmarks/vllm_vs_raw.py``; on CPU with vLLM's CPU
build and ``VLLM_CPU_KVCACHE_SPACE=1``). One engine serves both vLLM paths:

- harness: ``evaluate`` (what ``harness eval --model vllm:M`` runs after parsing its arguments: the task's
  prompts, every request in one ``LLM.chat`` call, the answers stored and scored), no response store;
- raw: ``LLM.chat`` on the very conversations and sampling parameters the harness sends (built by the same
  task code), nothing else;
- hf: ``evaluate`` on ``hf:`` with the same model and task, in the same process.

Sampled requests (``--repeats`` completions each, seeded per request), best of ``--rounds``; tokens are the
raw path's generated tokens (the harness path samples the same ones: its texts are checked equal). hf:
samples other completions (its own generator) under the same token budget, so it is compared by wall time.
The engine start is timed apart and excluded from the ratio (target >= 0.95).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.engine.limits import docs_to_run  # noqa: E402
from harness.engine.requests import make_request  # noqa: E402
from harness.engine.runner import EvalOptions, evaluate  # noqa: E402
from harness.engine.settings import resolve_settings  # noqa: E402
from harness.engine.tasks import open_task  # noqa: E402
from harness.models.base import finished_text  # noqa: E402
from harness.tiny_models import tiny_model_path  # noqa: E402


def options(args: argparse.Namespace, data_dir: Path) -> EvalOptions:
    return EvalOptions(
        tasks=[args.task],
        data_dir=data_dir,
        limit=args.prompts,
        use_cache=False,
        gen_overrides={"temperature": 1.0, "max_new_tokens": args.tokens, "do_sample": True},
        repeats=args.repeats,
        show_progress=False,
        batch_size=args.hf_batch,
    )


def harness_requests(backend: Any, task: str, opts: EvalOptions) -> list[Any]:
    """The generation requests ``evaluate`` makes of the task's docs (same prompts, parameters and seeds)."""
    opened = open_task(task, backend.model_family, opts.data_dir)
    settings = resolve_settings(opened.config, backend.model_family, opts.flags)
    docs = [opened.docs[i] for i in range(docs_to_run(len(opened.docs), opts.limit))]
    return [make_request(opened.prompts.build_messages(d), settings.params, settings.n, opts.seed) for d in docs]


def timed_eval(backend: Any, spec: str, opts: EvalOptions) -> tuple[float, list[list[str]]]:
    start = time.perf_counter()
    _, samples, _ = evaluate(backend, spec, opts)
    seconds = time.perf_counter() - start
    (records,) = samples.values()
    return seconds, [r.responses for r in sorted(records, key=lambda r: r.doc_id)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="qwen2_vl_hd32", help="a tiny recipe vLLM loads (head_dim 32)")
    parser.add_argument("--model", help="a local model folder instead of the tiny one")
    parser.add_argument("--task", default="shapes_color")
    parser.add_argument("--prompts", type=int, default=96, help="docs of the task (shapes_color has 96)")
    parser.add_argument("--repeats", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hf-batch", type=int, default=16, help="hf:'s --batch-size")
    parser.add_argument("--max-model-len", type=int, default=1024)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    from builders import build_dataset
    from harness.data import default_data_dir
    from harness.models.hf import HFBackend
    from harness.models.vllm import VLLMBackend

    build_dataset("shapes", None, seed=0)
    data_dir = default_data_dir()
    model = args.model or str(tiny_model_path(args.arch))
    opts = options(args, data_dir)
    start = time.perf_counter()
    backend = VLLMBackend(model, {"dtype": "float32", "max_model_len": str(args.max_model_len)})
    engine_start = time.perf_counter() - start
    requests = harness_requests(backend, args.task, opts)
    raw_s, harness_s, tokens, same = raw_and_harness(backend, model, requests, opts, args.rounds)
    hf = HFBackend(model, {"device": "cpu", "dtype": "float32"})
    hf_seconds, _ = timed_eval(hf, f"hf:{model}", opts)
    raw, harness = tokens / min(raw_s), tokens / min(harness_s)
    completions = len(requests) * args.repeats
    print(
        f"{len(requests)} requests ({args.task}) x {args.repeats} sampled completions, {tokens} tokens, "
        f"model {model}; best of {args.rounds}"
    )
    print(f"engine start (excluded)    {engine_start:8.1f} s")
    print(f"raw LLM.chat               {raw:8.1f} tokens/s  ({min(raw_s):.2f} s)")
    print(f"harness eval, vllm:        {harness:8.1f} tokens/s  ({min(harness_s):.2f} s)")
    print(f"harness / raw              {harness / raw:8.3f}  (target >= 0.95)")
    print(
        f"harness eval, hf: (bs {args.hf_batch:>2})  {completions / hf_seconds:8.1f} completions/s  "
        f"({hf_seconds:.2f} s; vllm: {completions / min(harness_s):.1f} completions/s)"
    )
    print(f"vllm: / hf: (wall time)    {hf_seconds / min(harness_s):8.2f}x")
    print(f"requests whose sampled texts are the same on both vLLM paths: {same}/{len(requests)}")


def raw_and_harness(
    backend: Any, model: str, requests: list[Any], opts: EvalOptions, rounds: int
) -> tuple[list[float], list[float], int, int]:
    """``rounds`` times, the same requests through the raw ``LLM.chat`` and through ``harness eval``: the
    seconds of each, the tokens generated and how many requests got the same texts on both paths."""
    from vllm import SamplingParams

    from harness.models.vllm import sampling_kwargs, to_vllm_messages

    conversations = [to_vllm_messages(r.messages) for r in requests]
    sampling = [SamplingParams(**sampling_kwargs(r)) for r in requests]
    backend._llm.chat(conversations[:8], sampling[:8], use_tqdm=False)  # warm-up
    raw_s, harness_s, tokens, same = [], [], 0, 0
    for _ in range(rounds):
        start = time.perf_counter()
        outputs = backend._llm.chat(conversations, sampling, use_tqdm=False)
        raw_s.append(time.perf_counter() - start)
        tokens = sum(len(c.token_ids) for o in outputs for c in o.outputs)
        seconds, answers = timed_eval(backend, f"vllm:{model}", opts)
        harness_s.append(seconds)
        raw_texts = [
            [finished_text(c.text, r.params.until) for c in o.outputs] for o, r in zip(outputs, requests, strict=True)
        ]
        same = sum(a == r for a, r in zip(answers, raw_texts, strict=True))
    return raw_s, harness_s, tokens, same


if __name__ == "__main__":
    main()
