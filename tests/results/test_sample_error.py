"""SampleError: a sample's error kind, typed in memory and written as the one string every version wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.results.sample_error import ERROR_KINDS, SampleError
from harness.results.schema import SampleRecord, Turn, read_samples

# A line of samples_<task>.jsonl as written before errors were typed: the kind is the string's prefix.
OLD_LINE = {
    "task": "shapes_color",
    "doc_id": 3,
    "doc_hash": "h3",
    "doc": {"id": "shape-0003"},
    "responses": ["blue"],
    "turns": [
        {"prompt": "Why?", "request_keys": ["k1"], "error": "generation failed: RuntimeError: CUDA out of memory"}
    ],
    "error": "scoring failed: process_results: KeyError: 'label'",
}


def test_the_string_splits_at_the_first_colon_after_the_kind() -> None:
    error = SampleError.parse("bad input: doc_to_text: KeyError: 'question'")
    assert (error.kind, error.message) == ("bad input", "doc_to_text: KeyError: 'question'")
    assert str(error) == "bad input: doc_to_text: KeyError: 'question'"
    assert ERROR_KINDS == ("bad input", "generation failed", "scoring failed")


@pytest.mark.parametrize("text", ["timeout", "generation failed", "Bad input: x", "other kind: x"])
def test_a_string_of_no_known_kind_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="known kind"):
        SampleError.parse(text)


def test_an_old_samples_file_reads_typed_and_is_written_back_byte_identical(tmp_path: Path) -> None:
    line = json.dumps(OLD_LINE)
    (tmp_path / "samples_shapes_color.jsonl").write_text(line + "\n")
    (record,) = read_samples(tmp_path, "shapes_color")
    assert record.error == SampleError("scoring failed", "process_results: KeyError: 'label'")
    assert record.turns[0].error == SampleError("generation failed", "RuntimeError: CUDA out of memory")
    written = json.loads(record.model_dump_json())
    assert written["error"] == OLD_LINE["error"] and written["turns"][0]["error"] == OLD_LINE["turns"][0]["error"]
    assert record.model_dump()["error"] == OLD_LINE["error"]  # the python form (bundle hashes) is the string too
    assert SampleRecord.model_validate_json(record.model_dump_json()) == record


def test_a_record_built_in_memory_takes_the_type_and_writes_the_string() -> None:
    turn = Turn(prompt="Why?", error=SampleError("bad input", "harness_turns: KeyError: 'x'"))
    assert json.loads(turn.model_dump_json())["error"] == "bad input: harness_turns: KeyError: 'x'"


def test_a_samples_line_whose_error_has_no_known_kind_fails_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "samples_shapes_color.jsonl").write_text(json.dumps({**OLD_LINE, "error": "it broke"}) + "\n")
    with pytest.raises(HarnessError, match=r"line 1: not a sample record \(error: Value error, error 'it broke'"):
        read_samples(tmp_path, "shapes_color")
