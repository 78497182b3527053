"""``harness audit fusion`` on hand-built run folders: every figure against a hand computation."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.protocols.fusion.audit_report import FusionAuditReport
from harness.results.sample_error import SampleError
from harness.results.schema import RunResults, SampleRecord, TaskCounts, write_run

ITEMS = ["i1", "i2", "i3", "i4", "i5"]


def _record(task: str, k: int, metrics: dict | None, error: SampleError | None = None, **doc: str) -> SampleRecord:
    return SampleRecord(
        task=task,
        doc_id=k,
        doc_hash=f"h{k}",
        doc={"id": ITEMS[k], **doc},
        metrics={} if metrics is None else metrics,
        error=error,
    )


def _run(
    folder: Path,
    model: str,
    model_type: str,
    tasks: dict[str, list[SampleRecord]],
    attacks: list[dict] = (),
    diagnostics: list[dict] = (),
) -> Path:
    run = RunResults(
        results={t: {} for t in tasks},
        configs={t: {} for t in tasks},
        versions={},
        **{"n-samples": {}},
        counts={t: TaskCounts(samples=5, scored=5, errors=0) for t in tasks},
        config={"model": model},
        provenance={"model": {"model_type": model_type}},
    )
    write_run(folder, run, tasks)
    if attacks:
        (folder / "attack_outcomes.jsonl").write_text("".join(json.dumps(a) + "\n" for a in attacks))
    if diagnostics:
        (folder / "diagnostics.jsonl").write_text("".join(json.dumps(d) + "\n" for d in diagnostics))
    return folder


def _clean(correct: list[int]) -> list[SampleRecord]:
    return [
        _record("fusion_clean", k, {"correct,none": float(k in correct), "uses_injected,none": 0.0}) for k in range(5)
    ]


def _flips(attack: str, flipped: list[int], items: list[int], errors: tuple[int, ...] = ()) -> list[dict]:
    return [
        {"item": ITEMS[k], "attack": attack, "flipped": k in flipped, "error": "boom" if k in errors else None}
        for k in items
    ]


def _model_a(root: Path) -> list[Path]:
    """C = {i1..i4}; Vis {i1}, End {i2}, Typo {i1} (i4 errored), MANTIS {i3} (i4 errored),
    Nat-Evid {i3} (i2 answered wrong but its edit destroyed the evidence)."""
    typo = [
        _record("fusion_typo", 0, {"correct,none": 0.0, "uses_injected,none": 1.0}),
        _record("fusion_typo", 1, {"correct,none": 1.0, "uses_injected,none": 0.0}),
        _record("fusion_typo", 2, {"correct,none": 1.0, "uses_injected,none": 0.0}),
        _record("fusion_typo", 3, None, error=SampleError("generation failed", "timeout")),
        _record("fusion_typo", 4, {"correct,none": 0.0, "uses_injected,none": 0.0}),
    ]
    nat = [
        _record(
            "fusion_natevid",
            k,
            {"correct,none": float(k not in (1, 2)), "uses_injected,none": 0.0},
            natevid_status="destroyed" if k == 1 else "preserved",
        )
        for k in range(5)
    ]
    read = [_record("fusion_read_typo", k, {"reads_injected,none": float(k in (0, 1, 3))}) for k in range(5)]
    evals = _run(
        root / "a-eval",
        "tiny:llava",
        "llava",
        {"fusion_clean": _clean([0, 1, 2, 3]), "fusion_typo": typo, "fusion_natevid": nat, "fusion_read_typo": read},
    )
    attack = _run(
        root / "a-attack",
        "tiny:llava",
        "llava",
        {"fusion_clean": _clean([0, 1, 2, 3])},
        _flips("vis_pgd", [0], [0, 1, 2, 3])
        + _flips("end_pgd", [1], [0, 1, 2, 3])
        + _flips("mantis", [2], [0, 1, 2, 3], errors=(3,)),
        [
            {"item": "i1", "diagnostic": "oar", "value": 2.0},
            {"item": "i2", "diagnostic": "oar", "value": 1.0},
            {"item": "i1", "diagnostic": "oar_clean", "value": 0.5},
            {"item": "i2", "diagnostic": "oar_clean", "value": 1.0},
            {"item": "i2", "diagnostic": "restoration", "value": True, "depths": [1]},
        ],
    )
    return [evals, attack]


def _simple(root: Path, name: str, model: str, end: list[int], mantis: list[int]) -> Path:
    return _run(
        root / name,
        model,
        "qwen2_vl",
        {"fusion_clean": _clean([0, 1, 2, 3])},
        _flips("end_pgd", end, [0, 1, 2, 3]) + _flips("mantis", mantis, [0, 1, 2, 3]),
    )


def test_audit_fusion_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [
        *_model_a(tmp_path),
        _simple(tmp_path, "b", "tiny:qwen2_vl", [0], []),
        _simple(tmp_path, "c", "hf:other", [0, 1, 2], [3]),
    ]
    out = tmp_path / "audit"
    assert (
        main(
            [
                "audit",
                "fusion",
                *map(str, runs),
                "--output",
                str(out),
                "--resamples",
                "200",
                "--fusion-level",
                "hf:other=L3",
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    audit = FusionAuditReport.read(out)
    a = audit.models["tiny:llava"]
    f = a.figures
    assert a.fusion_level == "L1" and f["n_clean_correct"] == 4
    assert [f[f"asr_{k}"] for k in ("vis_pgd", "end_pgd", "typo_evid", "mantis", "nat_evid")] == [0.25] * 5
    assert (f["r0"], f["r_plus"], f["delta"]) == (0.5, 0.75, 0.25)
    assert (f["delta_mantis"], f["delta_nat_evid"]) == (0.25, 0.25)
    assert (f["exclusive_vis_pgd"], f["exclusive_end_pgd"], f["exclusive_mantis"]) == (0.0, 0.25, 0.0)
    # RUG on typo: items with both answers i1..i3: read 2/3, used 1/3
    assert f["p_read_typo"] == pytest.approx(2 / 3) and f["rug_typo"] == pytest.approx(1 / 3)
    assert f["oar"] == 1.5 and f["restoration"] == 1.0
    # OAR vs the matched clean image: i1 2.0 / 0.5 - 1 = 3, i2 1.0 / 1.0 - 1 = 0 -> mean +150%
    assert f["oar_clean"] == 0.75 and f["oar_increase"] == pytest.approx(1.5)
    assert audit.levels["L1"].macro["oar_increase"] == pytest.approx(1.5)
    assert a.restoration_by_depth == {0: 0.0, 1: 1.0}
    assert a.missing == {"vis_pgd": 0, "end_pgd": 0, "typo_evid": 1, "mantis": 1, "nat_evid": 1}
    ci = a.intervals["r_plus"]
    assert ci.low is not None and ci.high is not None and ci.low <= 0.75 <= ci.high <= 1
    assert (ci.method, ci.unit, ci.n) == ("paired_bootstrap", "clean-correct item", 4)
    # the user's level beats the table (hf:other is a qwen2_vl, L2 in the paper's table)
    assert audit.models["hf:other"].fusion_level == "L3"
    # model b ran End-PGD and MANTIS only: the other attacks were not run, not "never successful"
    b = audit.models["tiny:qwen2_vl"]
    assert b.attacks_not_run == ["vis_pgd", "typo_evid", "nat_evid"] and b.figures["asr_vis_pgd"] is None
    assert b.figures["asr_end_pgd"] == 0.25 and b.intervals["asr_vis_pgd"].reason == "the figure is undefined"
    assert (
        "Note: tiny:qwen2_vl: no outcome on C for vis_pgd, typo_evid, nat_evid, shown as `-` (an attack not run; "
        "for Nat-Evid also edits whose OCR check found the evidence destroyed, counted only with --natevid-all)"
    ) in capsys.readouterr().out
    assert audit.levels["L2"].models == ["tiny:qwen2_vl"] and audit.levels["L3"].models == ["hf:other"]
    assert audit.levels["L1"].macro["r_plus"] == 0.75
    # End-PGD ASR (0.25, 0.25, 0.75) vs R+ (0.75, 0.25, 1.0): rho = 1.5/sqrt(3); tau-b = 2/sqrt(6)
    agreement = audit.rank_agreement_end_pgd_vs_r_plus
    assert agreement.spearman_rho == pytest.approx(1.5 / 3**0.5)
    assert agreement.kendall_tau_b == pytest.approx(2 / 6**0.5)
    rows = list(csv.DictReader((out / "audit.csv").open()))
    assert [r["model"] for r in rows] == ["tiny:llava", "tiny:qwen2_vl", "hf:other"]
    assert float(rows[0]["r_plus"]) == 0.75 and "r_plus_ci_low" in rows[0]
    assert all((out / p).stat().st_size > 0 for p in audit.plots)
    # counting destroyed Nat-Evid edits adds i2 to Nat-Evid's flips
    assert (
        main(
            [
                "audit",
                "fusion",
                *map(str, runs[:2]),
                "--output",
                str(out / "all"),
                "--natevid-all",
                "--resamples",
                "20",
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    again = FusionAuditReport.read(out / "all").models["tiny:llava"].figures
    assert again["asr_nat_evid"] == 0.5 and again["delta_nat_evid"] == 0.5  # {i2, i3} \ {i1}


def test_audit_fusion_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = _run(tmp_path / "x", "tiny:llava", "llava", {"fusion_typo": _clean([0])})
    assert main(["audit", "fusion", str(bare)]) == 2
    assert "no fusion_clean samples" in capsys.readouterr().err
    assert main(["audit", "fusion", str(bare), "--fusion-level", "L2"]) == 2
    assert "MODEL=LEVEL" in capsys.readouterr().err
    assert main(["audit", "fusion", str(bare), "--fusion-level", "tiny:llava=L4"]) == 2
    assert "LEVEL one of L1, L2, L3" in capsys.readouterr().err
    assert main(["audit", "fusion", str(tmp_path / "nope")]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_restoration_macro_average_per_level(tmp_path: Path) -> None:
    """Two L2 models: b restores i1 and i2 of its tried flips {i1, i2, i3} (2/3); c restores i1 of {i1, i2}
    (1/2), its i3 flip not reproducing (value None: outside the subset). L2 macro = (2/3 + 1/2) / 2 = 7/12."""

    def run(name: str, model: str, restored: dict[str, bool | None]) -> Path:
        rows = [
            {"item": i, "diagnostic": "restoration", "value": v, "depths": [0] if v else []}
            for i, v in restored.items()
        ]
        return _run(
            tmp_path / name,
            model,
            "qwen2_vl",
            {"fusion_clean": _clean([0, 1, 2, 3])},
            _flips("end_pgd", [0, 1, 2], [0, 1, 2, 3]),
            rows,
        )

    runs = [
        run("b", "tiny:b", {"i1": True, "i2": True, "i3": False}),
        run("c", "tiny:c", {"i1": True, "i2": False, "i3": None}),
    ]
    out = tmp_path / "audit"
    assert (
        main(["audit", "fusion", *map(str, runs), "--output", str(out), "--resamples", "300", "--verbosity", "quiet"])
        == 0
    )
    audit = FusionAuditReport.read(out)
    models = audit.models
    assert models["tiny:b"].figures["restoration"] == pytest.approx(2 / 3)
    assert models["tiny:c"].figures["restoration"] == 0.5
    assert (models["tiny:b"].n_restoration, models["tiny:c"].n_restoration) == (3, 2)
    assert models["tiny:c"].restoration_by_depth == {0: 0.5}
    level = audit.levels["L2"]
    assert level.models == ["tiny:b", "tiny:c"] and level.macro["restoration"] == pytest.approx(7 / 12)
    ci = level.intervals["restoration"]
    lo, hi = ci.low, ci.high
    assert lo is not None and hi is not None
    assert 0 <= lo <= 7 / 12 <= hi <= 1 and hi > lo
    assert "first 40" in audit.restoration_subset
    # both models: End-PGD ASR 3/4 and R+ 3/4, tied ranks 1.5 in both rankings: nobody moves
    agreement = audit.rank_agreement_end_pgd_vs_r_plus
    assert agreement.ranks == {"tiny:b": (1.5, 1.5), "tiny:c": (1.5, 1.5)} and agreement.n_moved == 0


def test_an_empty_clean_set_is_explained_and_the_legend_fits_the_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np
    from PIL import Image

    empty = _run(tmp_path / "z", "tiny:llava", "llava", {"fusion_clean": _clean([])})
    (empty / "attack_outcomes.jsonl").write_text("")  # what harness attack leaves with C empty
    runs = [empty]  # one model: the narrowest figure
    out = tmp_path / "audit"
    assert (
        main(["audit", "fusion", *map(str, runs), "--output", str(out), "--resamples", "20", "--verbosity", "quiet"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "| tiny:llava | L1 | 0 | - | - |" in printed
    assert (
        "Note: tiny:llava: C = 0 (no clean item answered correctly), and every figure is a share of C, so its "
        "row is `-` and its bars in fusion_asr_rplus.png are n/a"
    ) in printed
    # a model with C empty has no figures to rank
    agreement = FusionAuditReport.read(out).rank_agreement_end_pgd_vs_r_plus
    assert agreement.ranks == {} and agreement.n_moved == 0
    # the legend is inside the figure: nothing is drawn on its outermost pixels (a clipped legend would be)
    pixels = np.asarray(Image.open(out / "fusion_asr_rplus.png").convert("L"))
    assert min(pixels[:, 0].min(), pixels[:, -1].min(), pixels[0].min(), pixels[-1].min()) == 255


def test_two_clean_runs_of_one_model_take_the_attacked_one_and_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    evals, attack = _model_a(tmp_path)
    assert main(["audit", "fusion", str(evals), str(attack), "--output", str(tmp_path / "out")]) == 0
    assert [r.getMessage() for r in caplog.records if r.name == "harness.protocols.fusion.audit"] == [
        f"tiny:llava: 2 runs hold fusion_clean answers ({evals}, {attack}); C is taken from {attack}, the run "
        "harness attack wrote, whose clean answers define the items that were attacked"
    ]


def test_two_clean_runs_of_one_model_neither_attacked_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _run(tmp_path / "first", "tiny:llava", "llava", {"fusion_clean": _clean([0, 1])})
    second = _run(tmp_path / "second", "tiny:llava", "llava", {"fusion_clean": _clean([2, 3])})
    assert main(["audit", "fusion", str(first), str(second)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: tiny:llava: 2 runs hold fusion_clean answers ({first}, {second}) and none was written by harness "
        "attack, so which define the clean-correct set C is not clear: pass one clean run per model (with the "
        "runs of its attacks)"
    )
