"""The results contract: typed results.json parts, and version-1 files still read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.engine.report import summary_table
from harness.errors import HarnessError
from harness.results.interval import Interval
from harness.results.schema import SCHEMA_VERSION, read_run, read_samples

# A results.json as version 1 wrote it (untyped dicts; follow-up counts only when a task had turns).
V1_RESULTS = {
    "schema_version": 1,
    "results": {"shapes_color": {"alias": "shapes_color", "exact_match,none": 0.5, "exact_match_stderr,none": 0.5}},
    "groups": {},
    "group_subtasks": {},
    "configs": {"shapes_color": {"task": "shapes_color", "source": "tasks/shapes/shapes_color.yaml"}},
    "versions": {"shapes_color": 1},
    "n-samples": {"shapes_color": {"original": 96, "effective": 2}},
    "higher_is_better": {"shapes_color": {"exact_match": True}},
    "counts": {"shapes_color": {"samples": 2, "scored": 2, "errors": 0, "unparsed": {}}},
    "reports": {},
    "config": {
        "model": "tiny:qwen2_vl",
        "model_args": {},
        "batch_size": 1,
        "limit": 2,
        "seed": 0,
        "tasks": ["shapes_color"],
        "include_paths": [],
        "gen_overrides": {},
        "repeats": None,
        "use_cache": True,
        "refresh": False,
    },
    "provenance": {
        "harness_version": "0.1.0",
        "git_revision": "abc123",
        "packages": {"torch": "2.4.0"},
        "python": "3.11.9",
        "platform": "Linux",
        "command": ["harness", "eval"],
        "model": {
            "backend": "tiny",
            "model": "tiny:qwen2_vl",
            "model_type": "qwen2_vl",
            "model_family": "qwen2_vl",
            "revision": None,
            "commit": None,
            "fingerprint": "f00d",
            "dtype": "float32",
            "device": "cpu",
            "attn_implementation": "sdpa",
            "parameters": 123456,
            "smoke_test_model": True,
            "min_pixels": 3136,
        },
        "datasets": {
            "shapes_color": {
                "kind": "local",
                "path": "/data/vlm-audit/shapes",
                "sha256": "beef",
                "split": "test",
                "num_rows": 96,
                "datasets_fingerprint": "fp",
            }
        },
        "generation": {
            "shapes_color": {
                "max_new_tokens": 8,
                "temperature": 0.0,
                "top_p": 1.0,
                "top_k": None,
                "num_beams": 1,
                "until": [],
                "do_sample": False,
                "n": 1,
            }
        },
        "seeds": {"base_seed": 0, "per_request": "sha256(base_seed:request_key)[:8]"},
        "started_at": "2026-01-01T00:00:00+00:00",
        "wall_time_s": 1.5,
        "generation_time_s": 1.0,
        "throughput_samples_per_s": 2.0,
        "requests": {"requests": 2, "unique_requests": 2, "cached": 0, "generated": 2, "generated_samples": 2},
    },
}
V1_SAMPLE = {
    "task": "shapes_color",
    "doc_id": 0,
    "doc_hash": "h0",
    "doc": {"id": "shape-0000", "color": "red"},
    "target": "red",
    "prompt": [],
    "request_key": "k0",
    "seed": 7,
    "responses": ["red"],
    "filtered": {"none": "red"},
    "metrics": {"exact_match,none": 1.0},
    "unparsed": [],
    "turns": [{"prompt": "Why?", "request_keys": ["k1"], "responses": ["because"], "error": None}],
    "error": None,
}


def _v1_run(folder: Path, **changes: object) -> Path:
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({**V1_RESULTS, **changes}))
    (folder / "samples_shapes_color.jsonl").write_text(json.dumps(V1_SAMPLE) + "\n")
    return folder


def test_a_version_1_results_file_reads_as_the_current_typed_model(tmp_path: Path) -> None:
    run = read_run(_v1_run(tmp_path / "v1"))
    assert run.schema_version == SCHEMA_VERSION == 3
    assert (run.config.model, run.config.limit, run.config.tasks) == ("tiny:qwen2_vl", 2, ["shapes_color"])
    model = run.provenance.model
    assert (model.model_family, model.parameters, model.smoke_test_model) == ("qwen2_vl", 123456, True)
    assert model.model_extra == {
        "dtype": "float32",
        "device": "cpu",
        "attn_implementation": "sdpa",
        "min_pixels": 3136,
    }  # a backend's own keys are kept
    assert run.provenance.datasets["shapes_color"].sha256 == "beef"
    assert run.provenance.generation["shapes_color"].params.max_new_tokens == 8
    assert run.provenance.requests.generated == 2 and run.provenance.requests.follow_up_generated == 0
    assert run.provenance.rescored is None
    (turn,) = read_samples(tmp_path / "v1", "shapes_color")[0].turns
    assert (turn.prompt, turn.responses, turn.error) == ("Why?", ["because"], None)
    written = json.loads(run.to_json())
    assert written["schema_version"] == 3 and written["provenance"]["model"]["min_pixels"] == 3136


def test_a_file_from_before_intervals_says_so_for_each_figure(tmp_path: Path) -> None:
    """Versions 1 and 2 recorded no intervals: the reader gives each figure one that says why, which the
    printed table shows, and a version-3 file keeps the intervals it holds."""
    for version in (1, 2):
        run = read_run(_v1_run(tmp_path / f"v{version}", schema_version=version))
        (interval,) = run.intervals["shapes_color"].values()
        assert list(run.intervals["shapes_color"]) == ["exact_match,none"] and not interval.defined
        assert interval.reason == (
            f"the run was written before intervals were recorded (schema {version}); harness score adds them"
        )
        assert "none: the run was written before intervals were recorded" in summary_table(run)
    kept = Interval.of(0.1, 0.9, "clt", 2)
    current = read_run(
        _v1_run(tmp_path / "v3", schema_version=3, intervals={"shapes_color": {"exact_match,none": kept.model_dump()}})
    )
    assert current.intervals == {"shapes_color": {"exact_match,none": kept}}
    assert "| [0.100, 0.900] | clt, 2 docs |" in summary_table(current)


def test_a_file_without_a_version_is_version_1_and_an_unknown_version_is_refused(tmp_path: Path) -> None:
    unversioned = {k: v for k, v in V1_RESULTS.items() if k != "schema_version"}
    folder = tmp_path / "none"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(unversioned))
    assert read_run(folder).config.model == "tiny:qwen2_vl"
    with pytest.raises(HarnessError, match=r"results.json: schema_version 9; this harness reads version\(s\) 1, 2, 3"):
        read_run(_v1_run(tmp_path / "v9", schema_version=9))


def test_a_mistyped_provenance_field_names_its_place(tmp_path: Path) -> None:
    bad = {**V1_RESULTS["provenance"], "requests": {"requests": "many"}}
    with pytest.raises(HarnessError, match=re.escape("not a harness results file (provenance.requests.requests: ")):
        read_run(_v1_run(tmp_path / "bad", provenance=bad))
