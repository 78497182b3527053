"""One answer never costs the run: a backend's text that is not UTF-8 is kept with U+FFFD in its place, marked on its
sample, stored in the response store and written to the run, and the other answers are kept with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.engine.runner import EvalOptions, evaluate
from harness.engine.store import ResponseStore
from harness.models import base
from harness.models.base import Backend, GenerationRequest


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "samples_shapes_color.jsonl").read_text().splitlines()]


class _Undecodable(Backend):
    """A plug-in whose answers are not all text UTF-8 can hold: bytes read with ``surrogateescape``."""

    @property
    def fingerprint(self) -> str:
        return "undecodable"

    def info(self) -> dict[str, Any]:
        return {"model": "undecodable"}

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        bad = b"r\xffd".decode("utf-8", errors="surrogateescape")
        return [[bad] * r.n for r in requests]


def test_invalid_utf8_from_a_plug_in_backend_is_kept_marked_and_stored(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_REGISTRY", {**base._REGISTRY, "undecodable": lambda name, args: _Undecodable()})
    opts = EvalOptions(
        tasks=["shapes_color"],
        data_dir=data_dir,
        limit=2,
        output=tmp_path / "runs",
        store_path=tmp_path / "store.sqlite",
        show_progress=False,
    )
    _, samples, run_dir = evaluate(base.create_backend("undecodable:x"), "undecodable:x", opts)
    assert run_dir is not None
    assert [r["responses"] for r in _rows(run_dir)] == [["r\ufffdd"], ["r\ufffdd"]]
    assert all(r.text_replaced for r in samples["shapes_color"])
    store = ResponseStore(tmp_path / "store.sqlite")
    try:
        assert store.count("undecodable") == 2
    finally:
        store.close()


def test_the_store_keeps_an_answer_utf8_cannot_hold(tmp_path: Path) -> None:
    """The store's own insert never fails on such text (a caller that did not clean it first)."""
    store = ResponseStore(tmp_path / "store.sqlite")
    try:
        store.put("m", "k", 0, ["a\udc80b"])
    finally:
        store.close()
    again = ResponseStore(tmp_path / "store.sqlite")
    try:
        assert again.get("m", "k", 0, 1) == ["a\ufffdb"]
    finally:
        again.close()
