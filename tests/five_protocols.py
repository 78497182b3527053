"""Tiny-model runs of all five protocols and their audits in one folder, with hostile strings in a model
answer, a prompt and a dataset field: what ``harness report`` and ``harness view`` are tested on. Built once
per session (the ``five`` fixture in ``tests/conftest.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.cli import main
from harness.results.interval import Interval

MODEL = "tiny:qwen2_vl"
# Each payload would run script or fetch if it reached the page unescaped.
ANSWER = '<script>window.__xss = "answer"</script><img src=x onerror="window.__xss=1">'
PROMPT = '"><svg onload="window.__xss=2"><a href="javascript:alert(1)">prompt</a>'
FIELD = '</pre><iframe src="https://example.invalid/"></iframe><style>body{display:none}</style>'
QUIET = ["--verbosity", "quiet"]
RECORDED = Interval.of(0.1, 0.4, "cluster_bootstrap", 6, unit="sentence")


def eval_into(out: Path, *args: str) -> Path:
    assert (
        main(["eval", "--model", MODEL, *args, "--output", str(out), "--gen-kwargs", "max_new_tokens=8", *QUIET]) == 0
    )
    return next((out / "tiny__qwen2_vl").iterdir())


def poison(run_dir: Path, task: str, field: str) -> None:
    """The first sample of the task gets the hostile answer, prompt text and dataset field."""
    path = run_dir / f"samples_{task}.jsonl"
    lines = path.read_text(encoding="utf-8").split("\n")
    first = json.loads(lines[0])
    first["responses"][0] = ANSWER
    for message in first["prompt"]:
        for part in message["content"]:
            if part.get("type") == "text":
                part["text"] = PROMPT + part["text"]
    first["doc"][field] = FIELD
    lines[0] = json.dumps(first)
    path.write_text("\n".join(lines), encoding="utf-8")


def build_five(root: Path) -> Path:
    """The five protocols' runs (and FusionAudit's and DiaVLo's audits) under ``root``; the protocols' datasets
    must be built (the session's ``stealth_dir``, ``mist_dir``, ``fusion_dir`` and ``diavlo_dir``)."""
    from builders import build_dataset

    build_dataset("vista", None, generator="tiny:sdxl_turbo", topics=("asian",), image_size=64)
    stealth = eval_into(root / "stealth", "--tasks", "stealth_short", "--limit", "6")
    poison(stealth, "stealth_short", "text")
    results = json.loads((stealth / "results.json").read_text(encoding="utf-8"))
    # one recorded interval the report must show as recorded (eval records every figure's)
    results.setdefault("intervals", {}).setdefault("stealth_short", {})["total_range,none"] = RECORDED.model_dump()
    (stealth / "results.json").write_text(json.dumps(results), encoding="utf-8")
    mist = eval_into(root / "mist", "--tasks", "mist", "--limit", "5")
    poison(mist, "mist", "sentence")
    vista_argv = ["--model", "tiny:llava", "--tasks", "vista", "--limit", "2", "--repeats", "2", "--judge", "embedding"]
    eval_into(root / "vista", *vista_argv)
    fusion = eval_into(root / "fusion", "--tasks", "fusion", "--limit", "2")
    assert main(["audit", "fusion", str(fusion), "--output", str(root / "audit-fusion"), *QUIET]) == 0
    diavlo = eval_into(root / "diavlo", "--tasks", "diavlo_llava_bench", "--limit", "1")
    audit = ["audit", "diavlo", str(diavlo), "--quick", "--max-subsets", "2", "--mi-resamples", "10"]
    assert main([*audit, "--output", str(root / "audit-diavlo"), *QUIET]) == 0
    return root
