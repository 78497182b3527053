"""The openai backend against real OpenAI-compatible servers on loopback: ``transformers serve``, and a
small stdlib HTTP server that answers the way misbehaving servers do (no choices, null content, refusals)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness.cli import main
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.store import ResponseStore
from harness.errors import ModelSpecError
from harness.models import GenerationParams, GenerationRequest, create_backend
from harness.models.messages import ChatMessage
from harness.models.openai_api import to_openai_messages
from harness.tiny_models import tiny_model_path


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
    proc = subprocess.Popen(
        [exe, "serve", str(model), "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
    msgs = [ChatMessage.user("hi", [Image.new("RGB", (4, 4))]), ChatMessage.of_text("assistant", "ok")]
    out = to_openai_messages(msgs)
    assert out[0]["role"] == "user" and out[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert out[0]["content"][1] == {"type": "text", "text": "hi"}
    assert out[1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}


def test_eval_through_a_local_server_with_n_samples(server, data_dir: Path) -> None:
    base_url, model = server
    # transformers serve 5.24 fails on `stop` for vision-language models: keep stop strings client-side.
    backend = create_backend(f"openai:{model}", {"base_url": base_url, "send_stop": "false"})
    opts = EvalOptions(
        tasks=["shapes_color"],
        data_dir=data_dir,
        limit=3,
        use_cache=False,
        show_progress=False,
        repeats=2,
        gen_overrides={"temperature": 0.7, "max_new_tokens": 6},
    )
    run, samples, _ = evaluate(backend, f"openai:{model}", opts)
    records = samples["shapes_color"]
    assert all(r.error is None and len(r.responses) == 2 for r in records)  # the server returns 1 choice per call
    assert all(isinstance(t, str) and "\n" not in t for r in records for t in r.responses)
    assert run.provenance.model.backend == "openai" and run.counts["shapes_color"].errors == 0


def test_unsupported_settings_and_a_dead_server_become_sample_errors(server) -> None:
    base_url, model = server
    backend = create_backend(f"openai:{model}", {"base_url": base_url})
    ask = [ChatMessage.of_text("user", "hello")]
    out = backend.generate([GenerationRequest("k", ask, GenerationParams(max_new_tokens=4, top_k=5))])
    assert isinstance(out[0], Exception) and "top_k" in str(out[0])
    dead = create_backend(
        f"openai:{model}", {"base_url": f"http://127.0.0.1:{_free_port()}/v1", "max_retries": "0", "timeout": "5"}
    )
    failed = dead.generate([GenerationRequest("k", ask, GenerationParams(max_new_tokens=4))])
    assert isinstance(failed[0], Exception)


class ScriptedServer:
    """``/v1/chat/completions`` on a free loopback port; ``choices(body)`` builds each answer's choices
    and ``bodies`` keeps every request the server received."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.choices: Callable[[dict[str, Any]], list[dict[str, Any]]] = lambda body: []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name for the POST handler
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                reply = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": server.choices(body),
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def choice(content: str | None, finish_reason: str = "stop", index: int = 0) -> dict[str, Any]:
    return {
        "index": index,
        "finish_reason": finish_reason,
        "message": {"role": "assistant", "content": content, "refusal": None},
    }


@pytest.fixture()
def scripted() -> Iterator[ScriptedServer]:
    pytest.importorskip("openai")
    server = ScriptedServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def _ask(server: ScriptedServer, n: int, temperature: float) -> list[str] | Exception:
    backend = create_backend("openai:scripted", {"base_url": server.base_url, "max_retries": "0", "timeout": "10"})
    params = GenerationParams(max_new_tokens=4, temperature=temperature)
    return backend.generate([GenerationRequest("k", [ChatMessage.of_text("user", "hi")], params, n=n, seed=7)])[0]


def test_zero_choices_end_the_request_after_one_call(scripted: ScriptedServer) -> None:
    out = _ask(scripted, n=3, temperature=0.7)
    assert isinstance(out, Exception) and "no choices" in str(out)
    assert len(scripted.bodies) == 1


def test_top_up_calls_are_bounded_by_n(scripted: ScriptedServer) -> None:
    scripted.choices = lambda body: [choice(f"seed {body['seed']}")]  # ignores n, as many local servers do
    assert _ask(scripted, n=3, temperature=0.7) == ["seed 7", "seed 8", "seed 9"]
    assert [b["n"] for b in scripted.bodies] == [3, 2, 1]
    answers = iter([[choice("a")], []])  # one choice, then none: the request fails instead of looping
    scripted.choices = lambda body: next(answers)
    scripted.bodies.clear()
    out = _ask(scripted, n=3, temperature=0.7)
    assert isinstance(out, Exception) and "1 of 3 completions" in str(out) and len(scripted.bodies) == 2


def test_a_trailing_replacement_character_is_dropped_as_in_every_backend(scripted: ScriptedServer) -> None:
    """A server that detokenizes the last, incomplete character to U+FFFD (harness.models.base.finished_text)."""
    scripted.choices = lambda body: [choice("red \ufffdsquare\ufffd")]
    assert _ask(scripted, n=1, temperature=0.0) == ["red \ufffdsquare"]


@pytest.mark.parametrize(
    "bad",
    [
        choice(None),
        choice("partial", "content_filter"),
        {
            **choice(None, "stop"),
            "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        },
    ],
)
def test_a_choice_without_text_is_an_error(scripted: ScriptedServer, bad: dict[str, Any]) -> None:
    scripted.choices = lambda body: [bad]
    out = _ask(scripted, n=1, temperature=0.0)
    assert isinstance(out, Exception) and "no text" in str(out)
    if bad["message"]["refusal"]:
        assert "I can't help with that." in str(out)


def test_refusals_are_sample_errors_not_cached_answers(
    scripted: ScriptedServer, data_dir: Path, tmp_path: Path
) -> None:
    argv = [
        "eval",
        "--model",
        "openai:scripted",
        "--model-args",
        f"base_url={scripted.base_url},max_retries=0",
        "--tasks",
        "shapes_color",
        "--limit",
        "2",
        "--cache",
        str(tmp_path / "store.sqlite"),
        "--output",
        str(tmp_path / "runs"),
    ]

    def run() -> dict[str, Any]:
        main(argv)
        latest = sorted((tmp_path / "runs").glob("*/*/results.json"))[-1]
        return json.loads(latest.read_text())

    scripted.choices = lambda body: [choice(None, "content_filter")]
    first = run()
    assert first["counts"]["shapes_color"]["errors"] == 2 and len(scripted.bodies) == 2
    rows = [json.loads(line) for line in next(Path(tmp_path / "runs").glob("*/*/samples_shapes_color.jsonl")).open()]
    assert all("content_filter" in row["error"] and not row["responses"] for row in rows)
    scripted.choices = lambda body: [choice("red")]
    second = run()  # nothing was cached: both docs are asked again, and answered
    assert len(scripted.bodies) == 4 and second["counts"]["shapes_color"]["errors"] == 0
    run()
    assert len(scripted.bodies) == 4  # the answers are cached


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("concurrency=abc", "concurrency='abc': expected a whole number >= 1"),
        ("concurrency=0", "concurrency='0': expected a whole number >= 1"),
        ("concurrency=-2", "concurrency='-2': expected a whole number >= 1"),
        ("timeout=abc", "timeout='abc': expected a number of seconds > 0"),
        ("timeout=0", "timeout='0': expected a number of seconds > 0"),
        ("timeout=-1.5", "timeout='-1.5': expected a number of seconds > 0"),
        ("timeout=nan", "timeout='nan': expected a number of seconds > 0"),
        ("max_retries=-1", "max_retries='-1': expected a whole number >= 0"),
        ("max_retries=two", "max_retries='two': expected a whole number >= 0"),
        ("send_stop=maybe", "send_stop='maybe': expected true or false"),
    ],
)
def test_bad_model_args_fail_with_one_line(
    arg: str, expected: str, capsys: pytest.CaptureFixture, data_dir: Path
) -> None:
    key, _, value = arg.partition("=")
    with pytest.raises(ModelSpecError, match=re.escape(expected)) as caught:
        create_backend("openai:m", {key: value})
    assert "\n" not in str(caught.value)
    assert main(["eval", "--model", "openai:m", "--model-args", arg, "--tasks", "shapes_color"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: --model-args {expected}" and not any("Traceback" in line for line in err)


def test_a_lone_surrogate_from_the_server_is_kept_marked_and_stored(
    scripted: ScriptedServer, data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers = iter(["red \ud800 square", "blue"])
    scripted.choices = lambda body: [choice(next(answers))]
    raw = json.dumps({"content": "red \ud800 square"})
    assert "\\ud800" in raw  # the server sends the escape, which json reads back as a lone surrogate
    argv = [
        *("eval", "--model", "openai:scripted", "--model-args", f"base_url={scripted.base_url},max_retries=0"),
        *("--tasks", "shapes_color", "--limit", "2", "--data-dir", str(data_dir)),
        *("--cache", str(tmp_path / "store.sqlite"), "--output", str(tmp_path / "runs")),
    ]
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 0
    assert "still locked" not in caplog.text
    (run_dir,) = {p.parent for p in (tmp_path / "runs").rglob("results.json")}
    rows = [json.loads(line) for line in (run_dir / "samples_shapes_color.jsonl").read_text().splitlines()]
    marked = {tuple(r["responses"]): r.get("text_replaced", False) for r in rows}
    assert marked == {("red \ufffd square",): True, ("blue",): False}
    assert sum("text_replaced" in json.dumps(r) for r in rows) == 1  # other samples keep their bytes
    store = ResponseStore(tmp_path / "store.sqlite")
    try:
        assert store.count() == 2  # both answers are in the store: a rerun asks nothing
    finally:
        store.close()
    assert main(argv) == 0 and len(scripted.bodies) == 2
