"""Where a model comes from, as a user meets it: one short Hub probe then offline mode, local paths said as paths,
and a run without --output that says nothing was saved."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ModelSpecError
from harness.models import create_backend
from harness.models.source import looks_like_path
from tests.conftest import ROOT


def closed_loopback_port() -> int:
    """A loopback port nothing listens on: a Hub there is unreachable at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hub_env() -> dict[str, str]:
    """This process's environment without the variables that put the Hub libraries offline."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    }


def test_an_unreachable_hub_costs_one_probe_then_the_process_is_offline(tmp_path: Path, data_dir: Path) -> None:
    """Without HF_HUB_OFFLINE, a Hub id on an unreachable Hub: one warning, one error, none of the libraries'
    retries (huggingface_hub's warnings are let through, so a retry would show, and printed once)."""
    env = hub_env()
    endpoint = f"http://127.0.0.1:{closed_loopback_port()}"
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), HF_HUB_VERBOSITY="warning")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "hf:someorg/some-vlm",
            "--tasks",
            "shapes",
            "--limit",
            "1",
            "--no-cache",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Retry" not in done.stderr and "Traceback" not in done.stderr
    assert lines == [
        f"WARNING harness.hub: the Hugging Face Hub ({endpoint}) is not reachable: working offline, from local "
        "folders and the Hub cache only; set HF_HUB_OFFLINE=1 to skip this 3 s check",
        "error: cannot load model 'someorg/some-vlm': not in the Hub cache (the Hugging Face Hub is not reachable; "
        "set HF_HUB_OFFLINE=1 to skip this check); download it where the Hub is reachable, or pass a local folder "
        "(hf:/path/to/model)",
    ]


def test_offline_mode_reaches_libraries_imported_before_the_probe(tmp_path: Path) -> None:
    """Python API users import the Hub libraries first: the probe still turns their offline mode on."""
    script = (
        "import datasets, huggingface_hub.constants as c\n"
        "from harness.hub import offline_reason\n"
        "reason = offline_reason()\n"
        "import os\n"
        "print(reason, c.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, os.environ['TRANSFORMERS_OFFLINE'])\n"
    )
    env = hub_env()
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_loopback_port()}", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split()[-3:] == ["True", "True", "1"], done.stderr
    assert done.stdout.startswith("the Hugging Face Hub is not reachable")
    assert done.stderr.count("is not reachable") == 1


def test_a_reachable_hub_leaves_the_libraries_online(tmp_path: Path) -> None:
    """A Hub that accepts the connection: no warning, and nothing is switched to offline mode."""
    script = (
        "import os\nfrom harness.hub import OFFLINE_VARIABLES, offline_reason\n"
        "print(offline_reason(), [os.environ.get(v) for v in OFFLINE_VARIABLES])\n"
    )
    env = hub_env()
    with socket.socket() as server:  # listening on loopback: the probe's connection is accepted
        server.bind(("127.0.0.1", 0))
        server.listen()
        env.update(HF_ENDPOINT=f"http://127.0.0.1:{server.getsockname()[1]}", HF_HOME=str(tmp_path / "hf"))
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
    assert done.stdout.strip() == "None [None, None, None]", done.stderr
    assert "not reachable" not in done.stderr


@pytest.mark.parametrize(
    ("name", "is_path"),
    [
        ("Qwen/Qwen2-VL-7B-Instruct", False),
        ("gpt2", False),
        ("/models/nope", True),
        ("./my-model", True),
        ("../models/m", True),
        ("~/models/m", True),
        ("models/org/m", True),
        (".", True),
        ("C:\\models\\m", True),
    ],
)
def test_names_written_as_paths_are_paths(name: str, is_path: bool) -> None:
    assert looks_like_path(name) is is_path


@pytest.mark.parametrize("name", ["/models/nope", "./my-model", "~/no-such-models/x", "models/org/name"])
def test_a_missing_local_model_folder_is_no_such_folder(name: str) -> None:
    with pytest.raises(ModelSpecError, match=f"^no such folder: {name}$"):
        create_backend(f"hf:{name}")


def test_a_file_given_as_a_model_is_not_a_folder(tmp_path: Path) -> None:
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    with pytest.raises(ModelSpecError, match=f"^not a folder: {weights} "):
        create_backend(f"hf:{weights}")


def test_eval_names_the_missing_folder_in_one_line(capsys: pytest.CaptureFixture, data_dir: Path) -> None:
    assert main(["eval", "--model", "hf:./my-model", "--tasks", "shapes", "--limit", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: no such folder: ./my-model"


def test_eval_without_output_says_nothing_was_saved(
    capsys: pytest.CaptureFixture, tmp_path: Path, data_dir: Path
) -> None:
    store = tmp_path / "responses.sqlite"
    argv = ["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes", "--limit", "1", "--verbosity", "quiet"]
    assert main([*argv, "--cache", str(store)]) == 0
    out = capsys.readouterr().out
    assert (
        f"results: not saved (no --output); the answers are in the response store {store}, so the same "
        "command with --output DIR writes the run without generating again"
    ) in out
    assert main([*argv, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "results: not saved (no --output; with --no-cache the answers were not stored either)" in out
    assert not list(tmp_path.glob("**/results.json"))


def test_a_command_that_never_asks_the_hub_says_nothing_about_it(tmp_path: Path) -> None:
    """The probe still runs before the command (silently), but only code that needs the Hub warns."""
    env = hub_env()
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_loopback_port()}", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "build", "shapes", "--output", str(tmp_path / "shapes")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "not reachable" not in done.stderr and "Hugging Face" not in done.stderr
