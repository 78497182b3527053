"""benchmarks/scale_plan.py's arithmetic, by hand for VISTA at the default assumptions, and its reading of
benchmarks/gpu_check.sh's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scale_plan import WORKLOADS, compute_gpu_s, gpu_check_tps, main, parse, wall_s


def test_vista_projection_by_hand(capsys: pytest.CaptureFixture) -> None:
    args = parse([])
    main([])
    vista = WORKLOADS[0]
    # 6 models x 19,000 completions x 600 tokens / 2,500 tokens/s x 1.15 (prefill) = 31,464 GPU-s.
    assert compute_gpu_s(vista, args) == pytest.approx(31_464)
    assert wall_s(vista, 1, args) == pytest.approx(31_464 + 6 * 120)
    # 4 GPUs at 90%: 31,464 / 3.6 = 8,740 s, and two rounds of model loads (6 models on 4 GPUs).
    assert wall_s(vista, 4, args) == pytest.approx(8_740 + 2 * 120)
    assert wall_s(vista, 32, args) == pytest.approx(31_464 / 28.8 + 120)
    table = capsys.readouterr().out
    assert "| VISTA | 6 | 19,000 | 8.7 | 8.9 | 8.9 | 2.5 | 10.0 | 0.3 | 10.8 |" in table


def test_fusion_pgd_dominates_its_cost() -> None:
    args = parse([])
    fusion = WORKLOADS[-1]
    # 18 x (3,000 x 64 / 2,500 x 1.15 + 120,000 steps x 0.25 s) = 18 x (88.32 + 30,000) GPU-s.
    assert compute_gpu_s(fusion, args) == pytest.approx(18 * (88.32 + 30_000))


def test_throughput_from_the_gpu_check_log(tmp_path: Path) -> None:
    log = tmp_path / "gpu_check.log"
    log.write_text("ok   tiny models (9 s)\nRESULT vllm_raw_tps=5100.0\nRESULT vllm_harness_tps=4980.5\n")
    assert gpu_check_tps(log) == 4980.5
    assert parse(["--gpu-check-log", str(log)]).decode_tps == 4980.5
    log.write_text("FAIL vllm throughput\n")
    with pytest.raises(SystemExit, match="no 'RESULT vllm_harness_tps=' line"):
        gpu_check_tps(log)
