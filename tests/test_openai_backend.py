"""The openai backend against a real OpenAI-compatible server on loopback (``transformers serve``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from harness.engine.runner import EvalOptions, evaluate
from harness.models import GenerationParams, GenerationRequest, create_backend
from harness.models.openai_api import to_openai_messages
from harness.models.tiny import tiny_model_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(harness_cache: Path):
    """``transformers serve`` with the tiny Qwen2-VL preloaded, on a free loopback port."""
    pytest.importorskip("fastapi")
    model = tiny_model_path("qwen2_vl")
    port = _free_port()
    exe = shutil.which("transformers") or str(Path(sys.executable).parent / "transformers")
    proc = subprocess.Popen([exe, "serve", str(model), "--host", "127.0.0.1", "--port", str(port)],
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("transformers serve exited during start-up")
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("transformers serve did not start")
    yield f"{url}/v1", str(model)
    proc.terminate()
    proc.wait(timeout=30)


def test_messages_become_content_parts() -> None:
    msgs = [{"role": "user", "content": [{"type": "image", "url": Image.new("RGB", (4, 4))},
                                         {"type": "text", "text": "hi"}]}, {"role": "assistant", "content": "ok"}]
    out = to_openai_messages(msgs)
    assert out[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert out[0]["content"][1] == {"type": "text", "text": "hi"} and out[1] == {"role": "assistant", "content": "ok"}


def test_eval_through_a_local_server_with_n_samples(server, data_dir: Path) -> None:
    base_url, model = server
    # transformers serve 5.24 fails on `stop` for vision-language models: keep stop strings client-side.
    backend = create_backend(f"openai:{model}", {"base_url": base_url, "send_stop": "false"})
    opts = EvalOptions(tasks=["shapes_color"], data_dir=data_dir, limit=3, use_cache=False, show_progress=False,
                       repeats=2, gen_overrides={"temperature": 0.7, "max_new_tokens": 6})
    run, samples, _ = evaluate(backend, f"openai:{model}", opts)
    records = samples["shapes_color"]
    assert all(r.error is None and len(r.responses) == 2 for r in records)  # the server returns 1 choice per call
    assert all(isinstance(t, str) and "\n" not in t for r in records for t in r.responses)
    assert run.provenance["model"]["backend"] == "openai" and run.counts["shapes_color"].errors == 0


def test_unsupported_settings_and_a_dead_server_become_sample_errors(server) -> None:
    base_url, model = server
    backend = create_backend(f"openai:{model}", {"base_url": base_url})
    ask = [{"role": "user", "content": "hello"}]
    out = backend.generate([GenerationRequest("k", ask, GenerationParams(max_new_tokens=4, top_k=5))])
    assert isinstance(out[0], Exception) and "top_k" in str(out[0])
    dead = create_backend(f"openai:{model}", {"base_url": f"http://127.0.0.1:{_free_port()}/v1",
                                              "max_retries": "0", "timeout": "5"})
    failed = dead.generate([GenerationRequest("k", ask, GenerationParams(max_new_tokens=4))])
    assert isinstance(failed[0], Exception)
