"""FusionAudit's audit.json across its versions: its one name from version 2, and the bare interval pairs of
versions 1 and 2 read as typed intervals (the shared reading of every protocol's audit.json:
tests/protocols/test_audit_report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.protocols.test_audit_report import protocol

HERE = Path(__file__).parent


def test_fusion_reports_name_it_fusion_from_version_2() -> None:
    """Version 1 named the protocol ``fusionaudit`` (read as ``fusion``); version 2 holds its one name only."""
    old = json.loads((HERE / "audit_v1.json").read_text())
    fusion = protocol("fusion").audit_report
    assert fusion is not None and fusion.SCHEMA_VERSION == 3
    assert fusion.parse({**old, "schema_version": 1}).protocol == "fusion"
    assert fusion.parse({**old, "schema_version": 2, "protocol": "fusion"}).schema_version == 3
    with pytest.raises(ValidationError, match="protocol"):
        fusion.parse({**old, "schema_version": 2})  # a version 2 report that calls it fusionaudit


def test_fusion_ci_pairs_of_versions_1_and_2_read_as_paired_bootstrap_intervals() -> None:
    """Versions 1-2 held bare ``ci95`` pairs made by the paired bootstrap over clean-correct items: read as
    such Intervals, n the model's |C| (a level's n was not recorded: 0); an undefined one says so."""
    report = protocol("fusion").read_audit(HERE / "audit_v1.json")
    old = json.loads((HERE / "audit_v1.json").read_text())
    model = report.models["tiny:llava"]
    low, high = old["models"]["tiny:llava"]["ci95"]["r_plus"]
    r_plus = model.intervals["r_plus"]
    assert (r_plus.low, r_plus.high, r_plus.method) == (low, high, "paired_bootstrap")
    assert (r_plus.unit, r_plus.n) == ("clean-correct item", model.figures["n_clean_correct"])
    missing = [k for k, ci in old["models"]["tiny:llava"]["ci95"].items() if ci is None]
    assert missing and model.intervals[missing[0]].reason == "the figure is undefined"
