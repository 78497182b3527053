"""The one resolution of a run's generation settings (``harness.engine.settings.resolve_settings``) and the
one type that carries them from the task to the backend and into ``results.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.engine.settings import RunFlags, resolve_settings
from harness.errors import HarnessError, UnsupportedRequestError
from harness.models.base import GenerationParams
from harness.results.generation import RequestSettings
from harness.results.schema import RunConfig, read_run
from harness.taskspec.config import TaskConfig

BASE = {
    "task": "t",
    "output_type": "generate_until",
    "doc_to_text": "q",
    "doc_to_target": "a",
    "metric_list": [{"metric": "exact_match"}],
}


def _config(tmp_path: Path, **extra: object) -> TaskConfig:
    return TaskConfig.from_dict({**BASE, **extra}, tmp_path / "t.yaml")


def test_the_order_task_then_family_default_then_lmms_model_then_gen_kwargs_then_repeats(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        generation_kwargs={"temperature": 0, "until": ["\n\n", "Q:"]},
        model_specific_generation_kwargs={"gemma3": {"top_p": 0.5}},
        repeats=2,
    )
    plain = resolve_settings(config, "qwen2_vl", RunFlags())
    assert (plain.params.max_new_tokens, plain.params.until, plain.n, plain.prompt_family) == (
        128,
        ("\n\n", "Q:"),
        2,
        "qwen2_vl",
    )
    assert plain.applied_defaults == {"max_new_tokens": {"value": 128, "from": "lmms-eval model qwen2_vl"}}
    # --lmms-model gemma3: its block, its 128 tokens, its stop handling (drops "\n\n"), its prompt family
    gemma = resolve_settings(config, "qwen2_vl", RunFlags(lmms_model="gemma3"))
    assert (gemma.params.top_p, gemma.params.until, gemma.prompt_family) == (0.5, ("Q:",), "gemma3")
    # --gen-kwargs on top (a temperature replaces the task's do_sample), --repeats over the task's repeats
    flags = RunFlags({"max_new_tokens": 9, "temperature": 0.7}, "gemma3", 3, seed=5)
    sampled = resolve_settings(config, "qwen2_vl", flags)
    assert (sampled.params.max_new_tokens, sampled.params.do_sample, sampled.params.until, sampled.n) == (
        9,
        True,
        ("Q:",),
        3,
    )
    assert "max_new_tokens" not in sampled.applied_defaults
    assert flags.seed_policy(None).base_seed == 5


def test_a_setting_no_backend_honours_fails_in_one_line(tmp_path: Path) -> None:
    """(A multi-round task asked for repeats fails here too: tests/engine/test_multi_round.py.)"""
    with pytest.raises(UnsupportedRequestError, match="task t generation_kwargs: top_p=0"):
        resolve_settings(_config(tmp_path), None, RunFlags({"top_p": 0}))


def test_the_declared_flags_of_a_saved_run() -> None:
    config = RunConfig(model="m", gen_overrides={"max_new_tokens": 3}, lmms_model="llava_hf", repeats=2, seed=4)
    assert RunFlags.of_run(config) == RunFlags({"max_new_tokens": 3}, "llava_hf", 2, 4)
    assert RunFlags.of_run(RunConfig(model="m", seed=9)).describe() == ""


def test_the_record_is_the_backends_value_written_flat_with_the_keys_it_always_had() -> None:
    settings = RequestSettings(params=GenerationParams(max_new_tokens=5, temperature=0.5, until=("\n",)), n=3)
    written = json.loads(settings.model_dump_json())
    assert list(written) == [
        "max_new_tokens",
        "temperature",
        "top_p",
        "top_k",
        "num_beams",
        "until",
        "do_sample",
        "n",
    ]
    assert written["do_sample"] is True and written["until"] == ["\n"]
    assert RequestSettings.model_validate(written) == settings


def test_a_recorded_setting_no_run_could_have_used_is_refused_in_one_line(
    tmp_path: Path, saved_run: dict[str, bytes]
) -> None:
    results = json.loads(saved_run["results.json"])
    results["provenance"]["generation"]["shapes_color"]["do_sample"] = True  # with temperature 0
    (tmp_path / "results.json").write_text(json.dumps(results))
    with pytest.raises(HarnessError, match=r"provenance.generation.shapes_color: .*do_sample is true but temperature"):
        read_run(tmp_path)
