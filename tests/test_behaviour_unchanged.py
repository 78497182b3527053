"""Behaviour is pinned by golden runs: the demo group ``shapes`` and the MIST protocol task, run greedily
with the tasks' own settings, and ``shapes_color`` sampled (per-request seeds, two answers per prompt,
batches of two), each by ``harness build`` and ``harness eval`` on ``tiny:qwen2_vl`` in fresh processes
(``tests/golden/regenerate.py`` holds the commands).

Their ``samples_<task>.jsonl`` files must be byte-identical to the kept ones in ``tests/golden/<run>/``,
and their ``results.json`` equal to the kept one except for the fields that record the machine, the
software versions and the clock (``UNCOMPARED``: versions, git revision, packages, python, platform,
command line, the model's and datasets' folders, the tiny model's fingerprint, start time, wall and
generation times, throughput). The one path outside provenance, each task config's ``source`` (its YAML
file), is compared relative to the checkout. Nothing in the samples files depends on the machine, so they
are compared as they are.

A change that is meant to change behaviour regenerates them: ``python -m tests.golden.regenerate --overwrite``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden.regenerate import GOLDEN, RUNS, UNCOMPARED, comparable, golden_files, main, run_all

REGENERATE = "if the change is meant, run: python -m tests.golden.regenerate --overwrite"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every golden run made again by this checkout's code: run name -> its run folder."""
    return run_all(tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("run", sorted(RUNS))
def test_samples_files_are_byte_identical(fresh: dict[str, Path], run: str) -> None:
    kept = sorted(p.name for p in (GOLDEN / run).glob("samples_*.jsonl"))
    made = sorted(p.name for p in golden_files(fresh[run]) if p.name != "results.json")
    assert made == kept, f"the {run} run wrote other samples files than the kept ones; {REGENERATE}"
    for name in kept:
        new, old = (fresh[run] / name).read_bytes(), (GOLDEN / run / name).read_bytes()
        if new != old:  # say which doc and which fields moved, not only that the bytes differ
            for k, (a, b) in enumerate(zip(new.splitlines(), old.splitlines(), strict=False)):
                got, want = json.loads(a), json.loads(b)
                moved = sorted(key for key in got.keys() | want.keys() if got.get(key) != want.get(key))
                assert got == want, f"{run}/{name} line {k + 1}: {moved} differ; {REGENERATE}"
            assert new.count(b"\n") == old.count(b"\n"), f"{run}/{name}: other number of lines; {REGENERATE}"
            assert new == old, f"{run}/{name}: same records, other bytes (key order or spelling); {REGENERATE}"


@pytest.mark.parametrize("run", sorted(RUNS))
def test_results_equal_but_for_provenance_and_timing(fresh: dict[str, Path], run: str) -> None:
    kept = json.loads((GOLDEN / run / "results.json").read_text(encoding="utf-8"))
    made = comparable(fresh[run] / "results.json")
    for section in sorted(kept.keys() | made.keys()):  # one section at a time, so a failure names it
        assert made.get(section) == kept.get(section), f"{run} results.json: {section!r} differs; {REGENERATE}"


def _present(node: object, parts: list[str]) -> bool:
    if not parts:
        return True
    if not isinstance(node, dict):
        return False
    head, rest = parts[0], parts[1:]
    children = list(node.values()) if head == "*" else [node[head]] if head in node else []
    return bool(children) and all(_present(child, rest) for child in children)


def test_every_uncompared_field_is_written(fresh: dict[str, Path]) -> None:
    """The fields set aside are ones a run does write: a provenance field renamed or dropped fails here
    rather than leaving a stale name that hides nothing."""
    results = json.loads((fresh["greedy"] / "results.json").read_text(encoding="utf-8"))
    assert [field for field in UNCOMPARED if not _present(results, field.split("."))] == []


def test_regenerate_refuses_to_overwrite_without_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    before = {p: p.read_bytes() for run in RUNS for p in (GOLDEN / run).iterdir()}
    assert main([]) == 2
    assert "pass --overwrite to replace them" in capsys.readouterr().err
    assert {p: p.read_bytes() for run in RUNS for p in (GOLDEN / run).iterdir()} == before
