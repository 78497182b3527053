"""DiaVLo's audit.json: its mutual information read as an estimate or as too few pairs (the shared reading of
every protocol's audit.json: tests/protocols/test_audit_report.py)."""

from __future__ import annotations

from pathlib import Path

from harness.protocols.diavlo import audit_report as dr
from harness.protocols.diavlo.metrics import MIResult
from harness.results.interval import Interval
from tests.protocols.test_audit_report import protocol

HERE = Path(__file__).parent


def test_diavlo_mi_is_an_estimate_or_too_few_pairs() -> None:
    """The two shapes ``behaviour_summary`` writes for MI, each read as its own part and written back as it was."""
    interval = Interval.of(0.1, 0.4, "bootstrap", 12, "question")
    full = MIResult(0.25, interval, 12, "knn", True, 0.693, "ln 2 ceiling").as_dict()
    few = {"mi_nats": None, "n": 2, "note": "fewer than 4 pairs with similarity and performance"}
    diavlo = protocol("diavlo").read_audit(HERE / "audit_v1.json")
    overall = diavlo.models["scripted:sees-red"].overall
    for raw, part in ((full, dr.MutualInformation), (few, dr.TooFewPairs)):
        summary = dr.BehaviourSummary.model_validate({**overall.model_dump(by_alias=True), "mutual_information": raw})
        assert type(summary.mutual_information) is part
        assert summary.mutual_information.model_dump(mode="json") == raw
