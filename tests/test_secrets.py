"""A credential given to a backend (``--model-args api_key=...``, a backend's declared secret, a secret
environment variable, a URL's password) is never written: not to a run folder (``config.model_args``,
``provenance.command``, ``provenance.model``, the samples), a log or error line, nor the response store;
each place it would have been holds the marker that it was given. The leaderboard's side is in
tests/leaderboard/test_leaderboard_trust.py."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import ModelSpecError
from harness.models import base
from harness.models.base import Backend, GenerationRequest, create_backend
from harness.models.vllm import VLLMSettings
from harness.secrets import SECRET_MARKER, find_secret, is_secret, redact_argv, redact_text, remember
from tests.models.test_openai_backend import ScriptedServer, choice

KEY = "sk-live-0123456789abcdef"
ORG = "org-declared-4242"
PASSWORD = "hunter2-password"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("API-KEY", True),
        ("token", True),
        ("hf_token", True),
        ("OPENAI_API_KEY", True),
        ("authorization", True),
        ("password", True),
        ("client_secret", True),
        ("max_new_tokens", False),
        ("base_url", False),
        ("dtype", False),
    ],
)
def test_which_names_are_secret(name: str, secret: bool) -> None:
    assert is_secret(name) is secret


def test_a_command_line_keeps_that_a_secret_was_given_and_loses_its_value() -> None:
    argv = [
        *("harness", "eval", "--model", "openai:m", "--model-args", f"base_url=http://u:{PASSWORD}@h/v1,api_key={KEY}"),
        *("--token", KEY, f"--api-key={KEY}", f"--model-args=api_key={KEY},concurrency=2"),
        *("--gen-kwargs", "max_new_tokens=4"),
    ]
    cleared = redact_argv(argv)
    assert KEY not in str(cleared) and PASSWORD not in str(cleared)
    assert cleared[5] == f"base_url=http://{SECRET_MARKER}@h/v1,api_key={SECRET_MARKER}"
    assert cleared[6:] == [
        *(
            "--token",
            SECRET_MARKER,
            f"--api-key={SECRET_MARKER}",
            f"--model-args=api_key={SECRET_MARKER},concurrency=2",
        ),
        *("--gen-kwargs", "max_new_tokens=4"),
    ]
    assert find_secret({"provenance": {"command": argv}}) == "provenance.command[5]"
    assert find_secret({"provenance": {"command": cleared}}) is None


def test_secret_environment_values_are_cleared_from_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_environment_value_77")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to look for in free text
    remember()  # as a command does when it starts, and each backend when it is created
    text = 'failed: "hf_environment_value_77" abc'
    assert redact_text(text) == f'failed: "{SECRET_MARKER}" abc'


class _Keyed(Backend):
    """A plug-in whose fingerprint, provenance and errors all hold its credentials as given."""

    secret_args = frozenset({"org"})

    def __init__(self, args: dict[str, str]) -> None:
        self.args, self.calls = args, 0

    @property
    def fingerprint(self) -> str:
        return f"keyed|{self.args.get('org')}|{self.args.get('api_key')}"

    def info(self) -> dict[str, Any]:
        return {"model": "keyed", "org": self.args.get("org"), "endpoint": f"https://me:{PASSWORD}@api.example"}

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        logging.getLogger("keyed").warning("calling with key %s and org %s", self.args["api_key"], self.args["org"])
        self.calls += 1
        if self.calls == 1:  # the first request fails with a message that quotes both
            return [RuntimeError(f"401: key {self.args['api_key']} not valid for {self.args['org']}")] * len(requests)
        return [[f"echo {self.args['api_key']}"] * r.n for r in requests]


def _everything_written(root: Path) -> str:
    """Every file under ``root`` as text (SQLite files too, byte for byte)."""
    return "\n".join(p.read_bytes().decode("utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_a_plug_in_backends_declared_and_named_secrets_are_written_nowhere(
    data_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(base, "_REGISTRY", {**base._REGISTRY, "keyed": lambda name, args: _Keyed(args)})
    argv = [
        *("eval", "--model", "keyed:x", "--model-args", f"api_key={KEY},org={ORG}", "--tasks", "shapes_color"),
        *("--limit", "3", "--data-dir", str(data_dir), "--output", str(tmp_path / "runs")),
        *("--cache", str(tmp_path / "store" / "store.sqlite"), "--verbosity", "debug"),
    ]
    monkeypatch.setattr("sys.argv", ["harness", *argv])
    with caplog.at_level(logging.DEBUG):
        assert main(argv) == 0
    (run_dir,) = {p.parent for p in (tmp_path / "runs").rglob("results.json")}
    written = _everything_written(tmp_path)
    assert KEY not in written and ORG not in written and PASSWORD not in written
    results = json.loads((run_dir / "results.json").read_text())
    assert results["config"]["model_args"] == {"api_key": SECRET_MARKER, "org": SECRET_MARKER}
    assert f"api_key={SECRET_MARKER},org={SECRET_MARKER}" in results["provenance"]["command"]
    assert results["provenance"]["model"]["org"] == SECRET_MARKER
    assert results["provenance"]["model"]["endpoint"] == f"https://{SECRET_MARKER}@api.example"
    assert find_secret(results) is None
    rows = [json.loads(line) for line in (run_dir / "samples_shapes_color.jsonl").read_text().splitlines()]
    assert f"key {SECRET_MARKER} not valid for {SECRET_MARKER}" in rows[0]["error"]
    assert rows[1]["responses"] == [f"echo {SECRET_MARKER}"]
    with sqlite3.connect(tmp_path / "store" / "store.sqlite") as db:
        assert {m for (m,) in db.execute("SELECT DISTINCT model FROM responses")} == {
            f"keyed|{SECRET_MARKER}|{SECRET_MARKER}"
        }
    logged = caplog.text + capsys.readouterr().err
    assert "calling with key" in logged and KEY not in logged and ORG not in logged


def test_openai_api_key_and_url_password_reach_the_server_and_no_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    server = ScriptedServer()
    seen: list[str] = []
    server.choices = lambda body: [choice("red")]
    try:
        url = server.base_url.replace("http://", f"http://user:{PASSWORD}@")
        argv = [
            *("eval", "--model", "openai:scripted", "--model-args", f"base_url={url},api_key={KEY},max_retries=0"),
            *("--tasks", "shapes_color", "--limit", "2", "--data-dir", str(data_dir)),
            *("--output", str(tmp_path / "runs"), "--cache", str(tmp_path / "store.sqlite")),
        ]
        monkeypatch.setattr("sys.argv", ["harness", *argv])
        assert main(argv) == 0
        seen.extend(b["model"] for b in server.bodies)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert seen == ["scripted", "scripted"]  # the run really went through the server
    written = _everything_written(tmp_path)
    assert KEY not in written and PASSWORD not in written
    (results,) = (tmp_path / "runs").rglob("results.json")
    raw = json.loads(results.read_text())
    assert raw["config"]["model_args"]["api_key"] == SECRET_MARKER
    assert raw["provenance"]["model"]["base_url"].startswith(f"http://{SECRET_MARKER}@127.0.0.1:")


def test_a_run_read_back_gives_the_backend_no_marker_as_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit re-creating a run's model from its config gets no credential: the environment's is used."""
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-1")
    backend = create_backend("openai:m", {"api_key": SECRET_MARKER, "base_url": "http://127.0.0.1:9/v1"})
    assert backend.client.api_key == "sk-from-the-environment-1"  # type: ignore[attr-defined]


@pytest.mark.parametrize("spec", ["tiny:qwen2_vl", "hf:/no/such/model"])
def test_hf_and_tiny_refuse_a_credential_they_do_not_take_without_showing_it(
    spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ModelSpecError, match="unknown key") as caught:
        create_backend(spec, {"hf_token": KEY})
    assert KEY not in str(caught.value)
    assert main(["eval", "--model", spec, "--model-args", f"hf_token={KEY}", "--tasks", "shapes_color"]) == 2
    err = capsys.readouterr().err
    assert "hf_token" in err and KEY not in err


def test_vllm_argument_parsing_never_shows_a_credential() -> None:
    with pytest.raises(ModelSpecError, match="unknown key") as caught:
        VLLMSettings.from_model_args({"hf_token": KEY, "dtype": "float16"})
    assert KEY not in str(caught.value)


def test_score_rewrites_a_run_that_recorded_a_secret_without_it(
    tmp_path: Path, saved_run: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.test_score import run_copy

    run_dir = run_copy(tmp_path, saved_run)
    raw = json.loads((run_dir / "results.json").read_text())
    raw["config"]["model_args"] = {"api_key": KEY}
    raw["provenance"]["command"] += ["--model-args", f"api_key={KEY}"]
    (run_dir / "results.json").write_text(json.dumps(raw))
    assert find_secret(raw) == "config.model_args.api_key"
    assert main(["score", str(run_dir)]) == 0
    assert KEY not in (run_dir / "results.json").read_text()
    assert find_secret(json.loads((run_dir / "results.json").read_text())) is None


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"config": {"model_args": {"api_key": KEY}}}, "config.model_args.api_key"),
        ({"config": {"model_args": {"base_url": f"http://u:{PASSWORD}@h/v1"}}}, "config.model_args.base_url (a URL"),
        (
            {"provenance": {"model": {"endpoints": ["http://h", f"https://u:{PASSWORD}@h"]}}},
            "provenance.model.endpoints[1]",
        ),
        ({"provenance": {"rescored": {"command": ["harness", "--token", KEY]}}}, "provenance.rescored.command[2]"),
        (
            {
                "config": {"model_args": {"api_key": SECRET_MARKER}},
                "provenance": {"command": ["--token", SECRET_MARKER]},
            },
            None,
        ),
        ({"configs": {"task": {"cluster_key": "question_id"}}}, None),  # a task's own config is not looked at
    ],
)
def test_find_secret_names_the_field_that_holds_one(raw: dict[str, Any], field: str | None) -> None:
    found = find_secret(raw)
    assert found is None if field is None else found is not None and found.startswith(field)
