"""``harness audit vista`` over two tiny models' sampled runs, with the offline and the LLM judge."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.store import ResponseStore
from harness.judges.entailment import EmbeddingJudge, LLMJudge
from harness.models import create_backend
from harness.protocols.vista.audit import AuditConfig, run_audit, write_audit
from harness.protocols.vista.audit_report import VistaAuditReport


@pytest.fixture(scope="module")
def runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("runs")
    dirs = []
    for spec in ("tiny:qwen2_vl", "tiny:gemma3"):
        opts = EvalOptions(
            tasks=["shapes_color"],
            data_dir=data_dir,
            limit=3,
            repeats=3,
            output=out,
            use_cache=False,
            show_progress=False,
            gen_overrides={"temperature": 1.0, "max_new_tokens": 5},
        )
        dirs.append(evaluate(create_backend(spec), spec, opts)[2])
    return dirs


def test_audit_scores_every_model_and_query_and_writes_its_files(runs: list[Path], tmp_path: Path) -> None:
    judge = EmbeddingJudge(threshold=0.9)
    result = run_audit(runs, judge, AuditConfig(task="shapes_color", theta=0.3))
    assert result.models == ["tiny:qwen2_vl", "tiny:gemma3"]
    assert len(result.rows) == 6 and result.skipped_queries == 0
    assert 0 < result.judge_decisions <= result.all_pairs_calls
    for row in result.rows:
        assert 0 <= row["suspicion"] <= 1 and row["suspicion"] == pytest.approx(row["confidence"] * row["divergence"])
        assert row["flagged"] == (row["suspicion"] >= 0.3)
    out = write_audit(result, tmp_path / "audit", judge.name)
    summary = VistaAuditReport.read(out)
    assert set(summary.per_model) == set(result.models) and summary.judge == judge.name
    assert len(list(csv.DictReader((out / "audit.csv").open()))) == 6
    flagged = (out / "flagged.jsonl").read_text().splitlines()
    assert len(flagged) == summary.flagged
    if flagged:
        assert set(json.loads(flagged[0])["responses"]) == set(result.models)
        assert "<PIL." not in flagged[0]  # a doc's images are written by digest, as in samples files
    assert (out / "suspicion_by_model.png").is_file()
    for figures in summary.per_model.values():  # three queries: an interval over them, in [0, 1]
        mean = figures.interval("mean_suspicion")
        assert mean is not None and (mean.unit, mean.n) == ("query", 3)
        # random-weight answers: the same S on every query, so no interval, and the reason
        assert mean.method == "cluster_bootstrap" or (
            mean.reason is not None and "every resample of the 3 queries" in mean.reason
        )
        assert not mean.defined or (mean.low is not None and mean.high is not None and 0 <= mean.low <= mean.high <= 1)
        assert figures.interval("detection_score") is not None and figures.interval("flag_share") is not None
    per_model = list(csv.DictReader((out / "models.csv").open()))
    assert [r["model"] for r in per_model] == result.models and per_model[0]["mean_suspicion_interval"]


def test_model_intervals_by_hand() -> None:
    """Four queries, S = 0, 0, 0, 1 and theta 0.5: the mean S and flagged share of a resample are k/4 with k
    ~ Binomial(4, 1/4); P(k = 0) = 81/256 puts the 2.5% point at 0, P(k >= 3) = 13/256 = 5.1% and
    P(k = 4) = 1/256 put the 97.5% point at 3/4. The detection score (the top query's S: top 5% of 4 is
    one query) is 1 unless the resample misses the flagged query (P = 81/256), so its interval is [0, 1].
    Constant S has a degenerate interval; one query has none, and says why."""
    from harness.protocols.vista.audit import model_intervals

    out = model_intervals([0.0, 0.0, 0.0, 1.0], theta=0.5)
    assert (out["mean_suspicion"]["low"], out["mean_suspicion"]["high"]) == (0.0, 0.75)
    assert (out["flag_share"]["low"], out["flag_share"]["high"]) == (0.0, 0.75)
    assert (out["detection_score"]["low"], out["detection_score"]["high"]) == (0.0, 1.0)
    assert out["mean_suspicion"]["method"] == "cluster_bootstrap" and out["mean_suspicion"]["unit"] == "query"
    constant = model_intervals([0.4, 0.4, 0.4], theta=0.5)["mean_suspicion"]
    assert constant["low"] is None and constant["reason"] == "every resample of the 3 queries gives 0.4"
    single = model_intervals([0.7], theta=0.5)["mean_suspicion"]
    assert single["low"] is None and single["reason"] == "fewer than 2 queries"


def test_llm_judge_decisions_are_cached(runs: list[Path], tmp_path: Path) -> None:
    store = tmp_path / "judge.sqlite"
    first = LLMJudge(create_backend("tiny:qwen3"), ResponseStore(store))
    run_audit(runs, first, AuditConfig(task="shapes_color"))
    again = LLMJudge(create_backend("tiny:qwen3"), ResponseStore(store))
    result = run_audit(runs, again, AuditConfig(task="shapes_color"))
    assert first.calls > 0 and again.calls == 0 and len(result.rows) == 6


def test_cli_audit_and_its_errors(runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cli"
    assert (
        main(
            ["audit", "vista", *map(str, runs), "--task", "shapes_color", "--output", str(out), "--judge", "embedding"]
        )
        == 0
    )
    assert "judge decisions:" in capsys.readouterr().out and (out / "audit.json").is_file()
    assert main(["audit", "vista", str(runs[0]), "--task", "shapes_color", "--judge", "embedding"]) == 2
    assert "at least two models" in capsys.readouterr().err
    assert main(["audit", "vista", *map(str, runs), "--judge", "embedding"]) == 2
    assert "0 of 2 run(s) have it; the skipped runs hold shapes_color" in capsys.readouterr().err


def test_cli_audit_skips_runs_of_other_tasks(
    runs: list[Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    opts = EvalOptions(
        tasks=["shapes_kind"],
        data_dir=data_dir,
        limit=1,
        output=runs[0].parent.parent,
        use_cache=False,
        show_progress=False,
        gen_overrides={"max_new_tokens": 2},
    )
    other = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)[2]
    everything = sorted({*runs, other})
    assert (
        main(
            [
                "audit",
                "vista",
                *map(str, everything),
                "--task",
                "shapes_color",
                "--output",
                str(tmp_path / "a"),
                "--no-stability",
                "--judge",
                "embedding",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "skipped 1 run(s) without task 'shapes_color'; auditing 2" in captured.out
    assert "audit: 100%" in captured.err  # the progress bar, hidden by --verbosity quiet:
    assert (
        main(
            [
                "audit",
                "vista",
                *map(str, runs),
                "--task",
                "shapes_color",
                "--output",
                str(tmp_path / "q"),
                "--verbosity",
                "quiet",
                "--judge",
                "embedding",
            ]
        )
        == 0
    )
    assert "audit:" not in capsys.readouterr().err
    assert VistaAuditReport.read(tmp_path / "a" / "audit.json").skipped_runs == 1
    assert main(["audit", "vista", str(runs[0]), str(other), "--task", "shapes_color", "--judge", "embedding"]) == 2
    assert "1 of 2 run(s) have it" in capsys.readouterr().err


def test_default_judge_is_the_papers_and_offline_names_the_others(
    runs: list[Path], capsys: pytest.CaptureFixture
) -> None:
    """Without --judge the audit loads Qwen3-4B-Instruct (A.2); offline that is one line naming the others."""
    assert main(["audit", "vista", *map(str, runs), "--task", "shapes_color"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Qwen/Qwen3-4B-Instruct-2507" in err
    assert "embedding[:threshold]" in err and "nli:MODEL" in err


def test_llm_judge_reads_yes_past_quotes_and_emphasis() -> None:
    from harness.judges.entailment import reads_yes

    for answer in ("Yes", '"Yes"', "**Yes**", " yes.", "'Yes', they agree", "(Yes)"):
        assert reads_yes(answer), answer
    for answer in ("No", '"No"', "Yesterday it rained", "", "I think yes"):
        assert not reads_yes(answer), answer
