"""A third party's backend plugs in with no change to the harness: a ``Backend`` subclass with a factory,
registered by ``register_backend`` or by an installed entry point (group ``harness.backends``); ``harness
eval --model PREFIX:NAME`` runs it, the response store keys its answers by its fingerprint, and a plug-in
that cannot be loaded fails in one line. ARCHITECTURE.md's "How to add a backend" walks through this file."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.models import base
from tests.conftest import write

#: A backend that answers every request with one word (the model name): enough to see the whole path, and
#: a figure the test can compute from the dataset alone.
TOY = """
from typing import Any

from harness.models.base import Backend, GenerationRequest

CALLS: list[int] = []


class ConstantBackend(Backend):
    def __init__(self, word: str, suffix: str = "") -> None:
        self.word, self.suffix = word, suffix

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> "ConstantBackend":
        return cls(name, model_args.get("suffix", ""))

    @property
    def fingerprint(self) -> str:
        return f"constant:{self.word}{self.suffix}"

    def info(self) -> dict[str, Any]:
        return {"model": f"constant:{self.word}", "suffix": self.suffix}

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        CALLS.append(len(requests))
        return [[self.word + self.suffix] * r.n for r in requests]
"""


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed third-party package, ``toybackend``, with its entry point and a broken one."""
    site = tmp_path_factory.mktemp("site")
    write(site / "toybackend" / "__init__.py", TOY)
    write(site / "toybackend-0.1.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: toybackend\nVersion: 0.1\n")
    write(
        site / "toybackend-0.1.dist-info" / "entry_points.txt",
        "[harness.backends]\nconstant = toybackend:ConstantBackend.from_spec\nbroken = toybackend_missing:factory\n",
    )
    return site


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, toy_site: Path) -> None:
    """The toy package importable and its entry points visible; a registry this test may change."""
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


def _eval(spec: str, data_dir: Path, out: Path, *extra: str) -> dict:
    code = main(
        [
            *("eval", "--model", spec, "--tasks", "shapes_color", "--data-dir", str(data_dir)),
            *("--output", str(out), "--verbosity", "quiet", *extra),
        ]
    )
    assert code == 0
    (results,) = out.rglob("results.json")
    return json.loads(results.read_text())


def _red_share(data_dir: Path) -> float:
    """The exact-match score answering "red" everywhere earns: the share of red shapes, read from the data."""
    from datasets import load_dataset

    colors = load_dataset(str(data_dir / "vlm-audit" / "shapes"), split="test")["color"]
    return sum(c == "red" for c in colors) / len(colors)


def test_registered_backend_runs_through_eval_and_the_store(installed: None, data_dir: Path, tmp_path: Path) -> None:
    toy = importlib.import_module("toybackend")
    base.register_backend("constant", toy.ConstantBackend.from_spec)
    toy.CALLS.clear()
    store = tmp_path / "store.sqlite"
    first = _eval("constant:red", data_dir, tmp_path / "a", "--cache", str(store))
    assert first["results"]["shapes_color"]["exact_match,none"] == pytest.approx(_red_share(data_dir))
    assert first["provenance"]["model"]["suffix"] == ""
    answered = sum(toy.CALLS)
    assert answered > 0
    _eval("constant:red", data_dir, tmp_path / "b", "--cache", str(store))
    assert sum(toy.CALLS) == answered  # the second run is answered from the store, keyed by the fingerprint
    _eval("constant:red", data_dir, tmp_path / "c", "--cache", str(store), "--model-args", "suffix=!")
    assert sum(toy.CALLS) == 2 * answered  # another fingerprint: asked again


def test_installed_backend_is_found_and_a_broken_one_fails_in_one_line(
    installed: None, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert {"constant", "broken", "hf", "tiny", "openai", "vllm"} <= set(base.available_backends())
    results = _eval("constant:blue", data_dir, tmp_path / "a", "--no-cache")
    assert results["provenance"]["model"]["model"] == "constant:blue"
    capsys.readouterr()
    assert main(["eval", "--model", "broken:x", "--tasks", "shapes_color", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: backend 'broken' (toybackend_missing:factory) cannot be loaded: No module named 'toybackend_missing'"
    )
    assert main(["eval", "--model", "nosuch:x", "--tasks", "shapes_color", "--data-dir", str(data_dir)]) == 2
    unknown = capsys.readouterr().err
    assert "unknown backend 'nosuch'" in unknown and "constant" in unknown
