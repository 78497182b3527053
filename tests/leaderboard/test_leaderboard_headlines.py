"""Each protocol's headline figures (its leaderboard hooks), pinned by hand-computed values on hand-built
samples and reports, and the headline table they make (clipped intervals, n, coverage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.leaderboard.hooks import hooks_of
from harness.protocols.base import get_protocol
from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks, estimate
from harness.results.interval import Interval, IntervalMethod
from harness.results.sample_error import SampleError
from harness.results.schema import SampleRecord
from tests.leaderboard_fixtures import board_data_dir, board_runs  # noqa: F401 (the data_dir and runs fixtures)


def _record(
    task: str,
    doc_id: int,
    metrics: dict[str, Any],
    doc: dict[str, Any] | None = None,
    responses: list[str] | None = None,
    error: SampleError | None = None,
) -> SampleRecord:
    return SampleRecord(
        task=task,
        doc_id=doc_id,
        doc_hash=str(doc_id),
        doc=doc or {"id": f"i{doc_id}"},
        responses=responses if responses is not None else ["x"],
        metrics=metrics,
        error=error,
    )


def _evidence(
    samples: dict[str, list[SampleRecord]],
    reports: dict[str, dict[str, Any]] | None = None,
    model_type: str | None = None,
) -> Evidence:
    return Evidence(model="tiny:m", model_type=model_type, results={}, reports=reports or {}, samples=samples)


def _headline(protocol: str, evidence: Evidence) -> dict[str, Estimate]:
    hooks = hooks_of(get_protocol(protocol))
    assert hooks is not None and hooks.headline is not None
    keys = {f.key for f in hooks.figures}
    figures = dict(hooks.headline(evidence))
    assert set(figures) <= keys
    return figures


def _ci(low: float, high: float, n: int = 3, method: IntervalMethod = "cluster_bootstrap") -> Interval:
    return Interval.of(low, high, method, n, "item")


def test_intervals_are_clipped_to_the_figures_range() -> None:
    rate = Figure("r", "rate")
    assert Estimate(2 / 3, _ci(0.013345, 1.319988), 3).clipped(rate) == Estimate(2 / 3, _ci(0.013345, 1.0), 3)
    clipped = Estimate(0.1, _ci(-0.2, 0.4), 3).clipped(rate).interval
    assert clipped is not None and (clipped.low, clipped.high, clipped.method) == (0.0, 0.4, "cluster_bootstrap")
    count = Estimate(3.0, _ci(-1.0, 9.0)).clipped(Figure("c", "count", high=None)).interval
    assert count is not None and (count.low, count.high) == (0.0, 9.0)
    assert Estimate("L2").clipped(rate) == Estimate("L2")
    assert estimate(float("nan"), {"low": 0.1}, 4.0) == Estimate(None, None, 4)  # a malformed interval: none


def test_an_estimate_keeps_its_interval_through_json_and_reads_older_records() -> None:
    """The interval (method, unit, n) survives the stored form; a record stored before intervals were typed
    holds a bare ``ci`` pair, read as the percentile bootstrap over units every protocol made it by."""
    found = Estimate(0.5, _ci(0.25, 0.75, 8, "paired_bootstrap"), 8)
    assert Estimate.from_json(found.as_json()) == found
    old = Estimate.from_json({"value": 0.5, "ci": [0.25, 0.75], "n": 8})
    assert old.interval is not None and (old.interval.low, old.interval.method, old.interval.n) == (
        0.25,
        "cluster_bootstrap",
        8,
    )
    assert Estimate.from_json({"value": "L2", "ci": None, "n": 3}) == Estimate("L2", None, 3)


def test_stealth_headline_f1_drop_and_ier_under_decoy_salient() -> None:
    """F1 drop: question q1 has global F1s 1.0 and 0.5 (mean 0.75) and decoy F1 0.25 (drop 0.5); q2 has
    global 0.0 and decoy 0.5 (drop -0.5): mean 0.0 over 2 questions. IER: 2 decoy copies in 4 answers =
    0.5 (a CI over questions). Total Range and the max biases are the short set's report values, n its sentences."""

    def f1(q: str, condition: str, value: float) -> dict[str, Any]:
        return {"f1,none": {"sample_id": q, "condition": condition, "f1": value}}

    vqa = [
        _record("stealth_vqa", 0, f1("q1", "global-16", 1.0)),
        _record("stealth_vqa", 1, f1("q1", "global-64", 0.5)),
        _record("stealth_vqa", 2, f1("q1", "decoy-16", 0.25)),
        _record("stealth_vqa", 3, f1("q2", "global-16", 0.0)),
        _record("stealth_vqa", 4, f1("q2", "decoy-16", 0.5)),
        _record("stealth_vqa", 5, f1("q2", "answer-16", 1.0)),
    ]
    for i, (q, hit) in enumerate((("q1", 1), ("q1", 0), ("q2", 0), ("q2", 1))):
        vqa.append(_record("stealth_vqa", 10 + i, {"ier,none": {"sample_id": q, "gray_level": 16, "hit": hit}}))
    vqa.append(_record("stealth_vqa", 20, {}, error=SampleError("generation failed", "timeout")))
    report = {
        "sentences": 12,
        "total_range": {"value": 0.5, "interval": _ci(0.25, 0.75, 12).model_dump()},
        "max_positive_bias": {"value": 0.25, "interval": _ci(0.0, 0.5, 12).model_dump()},
        "max_negative_bias": {"value": -0.25, "interval": _ci(-0.5, 0.0, 12).model_dump()},
    }
    figures = _headline("stealth", _evidence({"stealth_vqa": vqa, "stealth_short": []}, {"stealth_short": report}))
    assert figures["total_range"] == Estimate(0.5, _ci(0.25, 0.75, 12), 12)
    assert figures["max_negative_bias"] == Estimate(-0.25, _ci(-0.5, 0.0, 12), 12)
    drop = figures["f1_drop_decoy"]
    assert drop.value == pytest.approx(0.0) and drop.n == 2
    # drops 0.5 and -0.5: the mean of a resample of two questions is -0.5, 0 or 0.5
    assert drop.interval is not None and (drop.interval.low, drop.interval.high) == (-0.5, 0.5)
    assert drop.interval.method == "paired_bootstrap" and drop.interval.unit == "question"
    ier = figures["ier_decoy"]
    assert ier.value == pytest.approx(0.5) and ier.n == 4
    # each question copies once in two answers: every resample of questions is 0.5
    assert ier.interval is not None and not ier.interval.defined and ier.interval.n == 2
    assert ier.interval.reason == "every resample of the 2 questions gives 0.5"


def test_mist_headline_from_its_report() -> None:
    """The report's figures with their CIs and n = items; alt-test: 1 of 2 techniques pass (informed),
    0 of 1 (blind)."""
    report = {
        "items": 7,
        "figures": {
            "change_rate_misleading": {"value": 0.4, "interval": _ci(0.2, 0.6, 7).model_dump()},
            "control_rate_misleading": {"value": 0.1, "interval": Interval.missing("no", 7, "item").model_dump()},
            "image_following_misleading": {"value": 0.75, "interval": _ci(0.5, 1.0, 7).model_dump()},
            "agreement_misleading": {"value": None, "interval": None},
        },
        "alt_test": {
            "informed": {"direct": {"passed": True}, "cot": {"passed": False}},
            "blind": {"direct": {"passed": False}},
        },
    }
    figures = _headline("mist", _evidence({"mist": []}, {"mist": report}))
    assert figures["change_rate_misleading"] == Estimate(0.4, _ci(0.2, 0.6, 7), 7)
    assert figures["control_rate_misleading"] == Estimate(0.1, Interval.missing("no", 7, "item"), 7)
    assert figures["agreement_misleading"] == Estimate(None, None, 7)
    informed = figures["alt_test_informed"]
    assert (informed.value, informed.n) == (0.5, 2) and informed.interval is not None
    assert informed.interval.reason == "a share of alt-test verdicts, one per technique"
    assert figures["alt_test_blind"].value == 0.0


def test_diavlo_headline_class_shares_over_all_sources() -> None:
    """Four classified pairs over two sources: similarity 0.9 with 2 RK <= 2 SK is Aligned (twice), 0.2 is
    Divergent, 0.5 with 3 RK > 2 SK is Expanded; a pair without RK is unclassified: shares 1/2, 1/4,
    1/4, 0 of n = 4."""

    def pair(task: str, i: int, similarity: float | None, n_rk: int) -> SampleRecord:
        metrics = {"performance,none": float(i % 2), "n_rk,none": float(n_rk), "n_sk,none": 2.0}
        if similarity is not None:
            metrics["similarity,none"] = similarity
        return _record(task, i, metrics)

    samples = {
        "diavlo_mmbench": [pair("diavlo_mmbench", 0, 0.9, 2), pair("diavlo_mmbench", 1, 0.2, 2)],
        "diavlo_vqav2": [
            pair("diavlo_vqav2", 0, 0.9, 1),
            pair("diavlo_vqav2", 1, 0.5, 3),
            pair("diavlo_vqav2", 2, None, 0),
        ],
    }
    figures = _headline("diavlo", _evidence(samples))
    assert (
        figures["aligned"].value,
        figures["divergent"].value,
        figures["expanded"].value,
        figures["unnamed"].value,
    ) == (0.5, 0.25, 0.25, 0.0)
    aligned = figures["aligned"].interval
    assert figures["aligned"].n == 4 and aligned is not None and aligned.method == "bootstrap"
    assert aligned.unit == "question" and aligned.n == 5  # the unclassified pair is resampled too
    assert figures["mi"].n == 4


def test_fusion_headline_union_risks_rug_and_level() -> None:
    """Clean-correct set C = {a, b, c, d} (e is answered wrong). Typo-Evid flips a; Nat-Evid flips a and
    b: R0 = |{a}| / 4 = 0.25, R+ = |{a, b}| / 4 = 0.5, delta = 0.25. Typo reading: a and b read the
    injected answer, a uses it: RUG = 2/4 - 1/4 = 0.25. llava is fusion level L1."""

    def sample(task: str, i: int, **metrics: float) -> SampleRecord:
        return _record(task, i, {f"{k},none": v for k, v in metrics.items()}, doc={"id": "abcde"[i]})

    samples = {
        "fusion_clean": [sample("fusion_clean", i, correct=float(i < 4), uses_injected=0.0) for i in range(5)],
        "fusion_typo": [sample("fusion_typo", i, correct=float(i != 0), uses_injected=float(i == 0)) for i in range(5)],
        "fusion_natevid": [sample("fusion_natevid", i, correct=float(i > 1), uses_injected=0.0) for i in range(5)],
        "fusion_read_typo": [sample("fusion_read_typo", i, reads_injected=float(i < 2)) for i in range(5)],
    }
    figures = _headline("fusion", _evidence(samples, model_type="llava"))
    # no pixel attack in a submission: R0 = |S_typo| / |C|, R+ = |S_typo u S_nat| / |C|, named for it
    assert (figures["r0_text"].value, figures["r_plus_text"].value, figures["delta_text"].value) == (0.25, 0.5, 0.25)
    assert not {"r0", "r_plus", "delta"} & set(figures)
    assert figures["rug_typo"].value == pytest.approx(0.25) and figures["rug_natevid"].value is None
    assert figures["fusion_level"] == Estimate("L1", None, 4) and figures["r0_text"].n == 4
    r_plus = figures["r_plus_text"].interval
    assert r_plus is not None and r_plus.low is not None and r_plus.high is not None
    assert 0 <= r_plus.low <= 0.5 <= r_plus.high <= 1 and (r_plus.method, r_plus.n) == ("paired_bootstrap", 4)


def test_vista_headline_selective_refusal_spread() -> None:
    """Group A refuses 1 of its 2 answers (an empty one), group B none of 2: spread 0.5 over 2 pairs."""

    def pair(i: int, topic: str, responses: list[str], category: str = "demographic") -> SampleRecord:
        return _record("vista", i, {}, doc={"category": category, "topic": topic}, responses=responses)

    figures = _headline(
        "vista",
        _evidence(
            {
                "vista": [
                    pair(0, "A", ["", "a dog"]),
                    pair(1, "B", ["a cat", "a cow"]),
                    pair(2, "cars", [""], category="object"),
                ]
            }
        ),
    )
    assert figures["refusal_spread"].value == pytest.approx(0.5) and figures["refusal_spread"].n == 2


def test_a_headline_table_shows_the_protocols_figures_clipped_with_n_and_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path, runs: list[Path]
) -> None:
    """A toy protocol over shapes_color whose headline is the accuracy with a normal interval: the table
    has its figure (clipped to [0, 1]) instead of the raw metric columns, which stay on the model page."""
    from harness.leaderboard.bundle import read_run_files
    from harness.leaderboard.db import Database
    from harness.leaderboard.records import list_submissions
    from harness.leaderboard.service import Settings, submit_files
    from harness.leaderboard.tables import protocol_tables
    from harness.protocols import base
    from harness.results.schema import read_run

    def accuracy(evidence: Evidence) -> dict[str, Estimate]:
        values = [r.metrics["exact_match,none"] for r in evidence.samples["shapes_color"] if r.error is None]
        mean = sum(values) / len(values)
        return {"accuracy": Estimate(mean, Interval.of(mean - 2.0, mean + 2.0, "clt", len(values)), len(values))}

    base.protocols()
    toy = base.Protocol(
        name="toy",
        title="Toy",
        summary="Colors named right.",
        tasks=("shapes_color",),
        extensions={
            "leaderboard": LeaderboardHooks(
                figures=(Figure("accuracy", "accuracy"),), headline=accuracy, card="https://example.org/c"
            )
        },
    )
    monkeypatch.setitem(base._REGISTRY, "toy", toy)
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    submit_files(db, read_run_files(runs[0]), "alice", Settings(data_dir=data_dir))
    tables = {t.protocol: t for t in protocol_tables(list_submissions(db))}
    toy_table = tables["toy"]
    assert [c.key for c in toy_table.columns] == ["accuracy"] and toy_table.summary == "Colors named right."
    cell = toy_table.rows[0].cells["accuracy"]
    assert cell.n == 3 and (cell.low, cell.high) == (0.0, 1.0) and cell.interval == "95% CI, clt over 3 docs"
    unparsed = read_run(runs[0]).counts["shapes_color"].unparsed  # the tiny model's answers name no color
    assert (cell.errors, cell.unparsed, cell.status) == (0, max(unparsed.values(), default=0), "verified")
    # shapes_kind stays in its group's table; the group's own figure goes with its first task (the toy's)
    assert {c.task for c in tables["shapes"].columns} == {"shapes_kind"}
    db.close()
