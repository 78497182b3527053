"""Preflight: every model and task of a run checked before the first model loads, every problem in one line."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.preflight import Plan, TaskLoad, model_problems, preflight
from harness.engine.progress import generation_label
from harness.engine.runner import EvalOptions
from harness.models.base import GenerationParams, GenerationRequest


def one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err.splitlines()[-1]  # in-process, the datasets library's bars may precede it


def test_a_second_model_without_its_extra_stops_the_run_before_any_generation(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the [openai] extra were not installed
    store, out = tmp_path / "store.sqlite", tmp_path / "runs"
    err = one_line(
        capsys,
        [
            *("eval", "--model", "tiny:qwen2_vl", "--model", "openai:gpt-4o-mini", "--tasks", "shapes"),
            *("--limit", "2", "--cache", str(store), "--output", str(out)),
        ],
    )
    assert err == "error: openai:gpt-4o-mini: the openai backend needs the openai package: pip install '.[openai]'"
    assert not store.exists() and not any(out.iterdir())  # no model answered, no run folder was made


def test_every_problem_of_the_run_is_named_at_once(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    err = one_line(
        capsys,
        [
            *("eval", "--model", "hf:/no/such/model", "--model", "tiny:nope", "--model", "hf:org/not-cached"),
            *("--tasks", "shapes,nothere"),
        ],
    )
    assert err.startswith("error: 4 problems, nothing was run: ")
    assert "no such folder: /no/such/model" in err
    assert "tiny:nope: no tiny chat model 'nope'" in err
    assert "cannot load model 'org/not-cached': not in the Hub cache (offline: HF_HUB_OFFLINE is set)" in err
    assert "unknown task 'nothere'" in err


def test_a_task_problem_alone_reads_as_it_always_has(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    assert one_line(capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "nothere"]) == (
        "error: unknown task 'nothere'; `harness tasks` lists them"
    )


def test_a_model_folder_without_config_and_a_non_chat_tiny_model(tmp_path: Path) -> None:
    assert model_problems(f"hf:{tmp_path}", {}) == [f"not a model folder: {tmp_path} has no config.json"]
    (tmp_path / "config.json").write_text("{}")
    assert model_problems(f"hf:{tmp_path}", {}) == []
    assert model_problems("qwen", {})[0].startswith("model spec 'qwen' must look like BACKEND:NAME")
    assert model_problems("nope:x", {})[0].startswith("unknown backend 'nope' in 'nope:x'")


class _Models(BaseHTTPRequestHandler):
    """``GET /v1/models`` of an OpenAI-compatible server: a list of one model, or 401 for the key ``bad``."""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") == "Bearer bad":
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"object": "list", "data": [{"id": "served", "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_an_openai_compatible_server_is_asked_once_for_its_models(server: str) -> None:
    assert model_problems("openai:served", {"base_url": server}) == []
    assert model_problems("openai:other", {"base_url": server}) == [
        f"openai:other: {server} does not serve 'other' (it serves served)"
    ]
    assert model_problems("openai:served", {"base_url": server, "api_key": "bad"}) == [
        f"openai:served: {server} refused the API key (HTTP 401)"
    ]


def test_a_dead_server_and_a_missing_key_are_named(monkeypatch: pytest.MonkeyPatch, server: str) -> None:
    dead = server.rsplit(":", 1)[0] + ":9/v1"  # port 9 (discard): nothing listens on loopback
    (problem,) = model_problems("openai:m", {"base_url": dead})
    assert problem.startswith(f"openai:m: no server answers at {dead} within 3 s (")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert model_problems("openai:gpt-4o-mini", {}) == [
        "openai:gpt-4o-mini: no API key for https://api.openai.com/v1 "
        "(set OPENAI_API_KEY, or --model-args base_url=... for a local server)"
    ]


def test_the_plan_counts_prompts_samples_and_tokens(data_dir: Path) -> None:
    opts = EvalOptions(tasks=["shapes"], data_dir=data_dir, limit=2, repeats=3, gen_overrides={"max_new_tokens": 10})
    datasets, plan = preflight(["tiny:qwen2_vl", "tiny:llava"], {}, opts)
    assert set(datasets) == {"shapes_color", "shapes_kind"}
    assert plan == Plan(2, (TaskLoad("shapes_color", 2, 3, 10, False), TaskLoad("shapes_kind", 2, 3, 10, False)))
    # per model: 2 tasks x 2 prompts x 3 samples = 12 samples; 12 x 10 = 120 new tokens at most
    assert plan.describe() == (
        "preflight ok: per model 12 samples, up to 120 new tokens (shapes_color: 2 x 3 of up to 10 tokens, "
        "shapes_kind: 2 x 3 of up to 10 tokens); 2 models: 24 samples; answers already in the response store "
        "are not generated again"
    )


def test_a_progress_bar_names_its_work() -> None:
    def request(key: str, n: int, tokens: int) -> GenerationRequest:
        return GenerationRequest(key, [], GenerationParams(max_new_tokens=tokens), n, 0)

    assert generation_label("generate", []) == "generate"
    assert generation_label("generate", [request("a", 10, 1000), request("b", 10, 1000)]) == (
        "generate: 2 prompts x 10 samples, up to 1,000 tokens each"
    )
    assert generation_label("turn 2", [request("a", 1, 16)]) == "turn 2: 1 prompt, up to 16 tokens each"
    assert generation_label("generate", [request("a", 1, 8), request("b", 3, 16)]) == (
        "generate: 2 prompts, 4 samples, up to 16 tokens each"
    )
