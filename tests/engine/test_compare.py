"""``harness compare``: docs matched by id and hash, only docs scored in both, the paired statistics per
task and metric, Benjamini-Yekutieli over the call, the changed docs, the files; on two tiny-model runs."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.multitest import multipletests

from harness.cli import main
from harness.engine.compare import CompareReport, compare_samples, compare_table
from harness.errors import HarnessError
from harness.metrics.paired import compare_paired
from harness.results.pairing import RunSamples, pair_docs
from harness.results.schema import SampleRecord


def _record(doc_id: int, value: Any, *, doc_hash: str | None = None, answer: str = "x", **doc: Any) -> SampleRecord:
    return SampleRecord(
        task="t",
        doc_id=doc_id,
        doc_hash=doc_hash or f"h{doc_id}",
        doc=doc,
        filtered={"none": answer},
        metrics={"acc,none": value},
    )


def _run(label: str, values: list[Any], config: dict[str, Any] | None = None) -> RunSamples:
    records = [_record(i, v, answer=f"{label}{v}", image=i // 2) for i, v in enumerate(values)]
    return RunSamples(label, label, {"t": records}, {"t": config or {}}, {"t": {"acc": True}})


def test_docs_are_matched_by_id_and_only_docs_scored_in_both_count() -> None:
    a = [_record(0, 1.0), _record(1, None), _record(2, 0.0), _record(3, True)]
    b = [_record(0, 0.0), _record(1, 1.0), _record(3, False), _record(4, 1.0)]
    docs = pair_docs("t", "acc,none", a, b)
    # doc 1 is unparsed in A, doc 2 only in A, doc 4 only in B
    assert docs.doc_ids == (0, 3) and docs.a == (1.0, 1.0) and docs.b == (0.0, 0.0) and docs.dropped == 3


def test_a_doc_with_another_hash_is_one_clear_error() -> None:
    with pytest.raises(HarnessError, match=r"t: doc 0 differs between A \(doc_hash h0\) and B \(doc_hash other\)"):
        pair_docs("t", "acc,none", [_record(0, 1.0)], [_record(0, 1.0, doc_hash="other")])


def test_score_key_and_cluster_key_as_lmms_eval_reads_them() -> None:
    a = [_record(i, {"score": i % 2, "video": f"v{i // 2}"}) for i in range(4)]
    docs = pair_docs("t", "acc,none", a, a, cluster_key="video")
    assert docs.a == (0.0, 1.0, 0.0, 1.0) and docs.clusters == ("v0", "v0", "v1", "v1")
    from_doc = pair_docs("t", "acc,none", [_record(0, 1.0, image=7)], [_record(0, 0.0, image=7)], cluster_key="image")
    assert from_doc.clusters == (7,)
    with pytest.raises(HarnessError, match="cluster_key 'nope' is neither a field of doc 0"):
        pair_docs("t", "acc,none", [_record(0, 1.0)], [_record(0, 0.0)], cluster_key="nope")


def test_three_runs_all_pairs_corrected_together_and_vs_first(tmp_path: Path) -> None:
    a, b, c = (
        _run("A", [1, 1, 1, 1, 1, 0, 1, 0]),
        _run("B", [0, 0, 0, 0, 0, 1, 1, 0]),
        _run("C", [1, 0, 1, 0, 1, 0, 1, 0]),
    )
    report = compare_samples([a, b, c], n_resamples=200)
    assert [(x.model_a, x.model_b) for x in report.comparisons] == [("A", "B"), ("A", "C"), ("B", "C")]
    ab = report.comparisons[0]
    assert ab.stats == compare_paired([1, 1, 1, 1, 1, 0, 1, 0], [0, 0, 0, 0, 0, 1, 1, 0], n_resamples=200)
    assert ab.stats.p_value == pytest.approx(8 / 64)  # McNemar mid-p, n10 = 5, n01 = 1
    p = [x.stats.p_value for x in report.comparisons]
    assert [x.p_adjusted for x in report.comparisons] == pytest.approx(list(multipletests(p, method="fdr_by")[1]))
    assert [d.doc_id for d in ab.changed] == [0, 1, 2, 3, 4, 5]
    assert (ab.changed[0].answer_a, ab.changed[0].answer_b) == ("A1", "B0") and ab.answers_changed == 8
    assert "- A vs B, t acc: 6 doc(s): A higher on 0, 1, 2, 3, 4; B higher on 5" in compare_table(report)
    assert [(x.model_a, x.model_b) for x in compare_samples([a, b, c], "vs_first").comparisons] == [
        ("A", "B"),
        ("A", "C"),
    ]
    formula = _run("=HYPERLINK", [1, 0, 1, 1, 1, 0, 1, 0])  # model text and names stay text in a spreadsheet
    compare_samples([a, formula]).write(tmp_path)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "changed.csv").read_text())))
    assert rows[0]["model_b"] == "'=HYPERLINK" and rows[0]["answer_b"] == "'=HYPERLINK0"
    clustered = compare_samples([_run("A", [1, 0, 1, 1], {"cluster_key": "image"}), _run("B", [0, 0, 1, 0])])
    stats = clustered.comparisons[0].stats
    assert (stats.test, stats.units, stats.interval.unit) == ("clustered_z", 2, "image")


def _tiny_runs(data_dir: Path, out: Path) -> list[Path]:
    for spec in ("tiny:qwen2_vl", "tiny:llava"):
        argv = ["eval", "--model", spec, "--tasks", "shapes", "--limit", "4", "--data-dir", str(data_dir)]
        assert main([*argv, "--output", str(out), "--verbosity", "quiet"]) == 0
    return sorted(p.parent for p in out.glob("*/*/results.json"))


@pytest.fixture(scope="module")
def tiny_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """tiny:llava and tiny:qwen2_vl on 4 docs of each shapes task."""
    return _tiny_runs(data_dir, tmp_path_factory.mktemp("compare-runs"))


def test_compare_two_tiny_model_runs(tiny_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", *map(str, tiny_runs), "--output", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "| tiny:llava | tiny:qwen2_vl | shapes_color | exact_match | 4 | 0 |" in printed
    assert "shapes_kind answer_accuracy: none of tiny:llava's answers could be parsed for it; not compared" in printed
    report = CompareReport.model_validate_json((tmp_path / "cmp" / "compare.json").read_text())
    assert {c.task for c in report.comparisons} == {"shapes_color", "shapes_kind"}
    for c in report.comparisons:  # random-weight models: every difference 0, so no interval, and why
        assert (
            c.stats.n == 4
            and c.stats.interval.reason is not None
            and c.stats.interval.reason == "every resample of the 4 docs gives 0"
        )
    assert [r.label for r in report.runs] == ["tiny:llava", "tiny:qwen2_vl"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "cmp" / "compare.csv").read_text())))
    assert [r["task"] for r in rows] == ["shapes_color", "shapes_kind"] and rows[0]["test"] == "mcnemar_midp"
    assert (tmp_path / "cmp" / "changed.csv").read_text().startswith("model_a,model_b,task,metric,doc_id")


def test_compare_refuses_misaligned_docs_and_a_single_run(
    tiny_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(tiny_runs[1], edited)
    samples = edited / "samples_shapes_color.jsonl"
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    first["doc_hash"] = "0" * 24
    samples.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    assert main(["compare", str(tiny_runs[0]), str(edited)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "shapes_color: doc 0 differs between tiny:llava" in err
    assert "the runs read different data" in err
    assert main(["compare", str(tiny_runs[0])]) == 2
    assert "needs two or more run folders" in capsys.readouterr().err
    assert main(["compare", *map(str, tiny_runs), "--tasks", "shapes_colour"]) == 2
    assert "no task shapes_colour in this run" in capsys.readouterr().err


def test_same_model_twice_is_labelled_by_folder(tiny_runs: list[Path], tmp_path: Path) -> None:
    from harness.engine.compare import CompareOptions, compare_runs

    copy = shutil.copytree(tiny_runs[0], tmp_path / "again")
    report = compare_runs(CompareOptions([tiny_runs[0], copy], tasks=["shapes_color"]))
    assert [r.label for r in report.runs] == [f"tiny:llava ({tiny_runs[0].name})", "tiny:llava (again)"]
    assert all(c.stats.difference == 0 and not c.changed for c in report.comparisons)
