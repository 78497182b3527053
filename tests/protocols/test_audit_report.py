"""Every protocol audit's audit.json through its typed report (``Protocol.audit_report``): a file of today's
unversioned format (version 1, written by the audits before reports were typed) reads back with the
same keys and values, a report writes and reads back whole, and a bad file is one line naming it."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.protocols.audit_report import AUDIT_FILE, AuditReport
from harness.protocols.base import Protocol, get_protocol, protocols
from harness.protocols.diavlo import audit_report as dr
from harness.protocols.diavlo.audit import DiavloAuditConfig
from harness.protocols.diavlo.concept_effects import DMLSettings
from harness.protocols.diavlo.metrics import CLASSES, Thresholds
from harness.protocols.fusion.audit import FusionAuditConfig
from harness.protocols.fusion.audit_report import FusionSettings
from harness.protocols.vista.audit import AuditConfig
from harness.protocols.vista.audit_report import AuditSettings
from harness.protocols.vista.implant.audit_report import StudySettings
from harness.protocols.vista.implant.study import StudyConfig

HERE = Path(__file__).parent
# (protocol, an audit.json its audit wrote before reports were versioned)
FIXTURES = [
    ("vista", HERE / "vista" / "audit_v1.json"),
    ("vista-implant", HERE / "vista" / "implant" / "audit_v1.json"),
    ("diavlo", HERE / "diavlo" / "audit_v1.json"),
    ("fusion", HERE / "fusion" / "audit_v1.json"),
]
# What reading a fixture as its report's current version changes: FusionAudit's version 2 names it "fusion"
# and its version 3 types the intervals; VISTA's and DiaVLo's version 2 add intervals (None in a version 1 file)
UPGRADED = {
    "fusion": {"schema_version": 3, "protocol": "fusion"},
    "vista": {"schema_version": 2},
    "diavlo": {"schema_version": 2},
}


def _as_read(new: Any, old: Any) -> Any:
    """``new`` without the fields a later version added that a version 1 file reads as None (intervals), and
    FusionAudit's ``intervals`` written back as the ``ci95`` pairs they were read from."""
    if isinstance(new, dict) and isinstance(old, dict):
        if "intervals" in new and "ci95" in old:
            pairs = {k: [i["low"], i["high"]] if i["low"] is not None else None for k, i in new["intervals"].items()}
            new = {("ci95" if k == "intervals" else k): (pairs if k == "intervals" else v) for k, v in new.items()}
        return {k: _as_read(v, old.get(k)) for k, v in new.items() if k in old or v is not None}
    if isinstance(new, list) and isinstance(old, list):
        return [_as_read(a, b) for a, b in zip(new, old, strict=False)] + new[len(old) :]
    return new


def protocol(name: str) -> Protocol:
    found = get_protocol(name)
    assert found is not None and found.audit_report is not None
    return found


def test_every_built_in_audit_declares_its_report() -> None:
    built_in = [p for p in protocols() if (p.places.code or "").startswith("harness/protocols/")]
    with_audit = {p.name for p in built_in if p.audit is not None}
    assert with_audit == {p.name for p in built_in if p.audit_report is not None} == {n for n, _ in FIXTURES}
    assert get_protocol("fusionaudit") is get_protocol("fusion")


@pytest.mark.parametrize(("name", "fixture"), FIXTURES, ids=[n for n, _ in FIXTURES])
def test_an_unversioned_audit_reads_as_its_current_version_and_writes_back_its_keys_and_values(
    name: str, fixture: Path, tmp_path: Path
) -> None:
    """Read as its report's current version: version 1 itself, or what ``UPGRADED`` says a bump changed."""
    proto = protocol(name)
    report = proto.read_audit(fixture)
    upgrade = UPGRADED.get(name, {"schema_version": 1})
    assert type(report) is proto.audit_report and report.schema_version == upgrade["schema_version"]
    old = json.loads(fixture.read_text())
    assert "schema_version" not in old
    written = _as_read(json.loads(report.to_json()), {"schema_version": 1, **old})
    assert written == {"schema_version": 1, **old, **upgrade}  # same keys and values, nested ones included
    assert list(written) == ["schema_version", *old]  # in the same order
    path = report.write(tmp_path)
    assert path == tmp_path / AUDIT_FILE and proto.read_audit(tmp_path) == report


def test_a_report_is_typed_all_the_way_down() -> None:
    """Attribute access where the old readers used keys, with the old key spellings as aliases."""
    vista = protocol("vista").read_audit(HERE / "vista" / "audit_v1.json")
    assert vista.config.theta == 0.6 and vista.per_model["tiny:llava"].patterns.divergent_content == 0
    assert vista.sweeps.k.unavailable == [5, 10, 20] and vista.judge == "embedding:all-MiniLM-L6-v2"
    diavlo = protocol("diavlo").read_audit(HERE / "diavlo" / "audit_v1.json")
    model = diavlo.models["scripted:sees-red"]
    assert model.overall.classes.aligned == 1.0 and model.overall.classes.counts.aligned == 2
    assert diavlo.config.thresholds.tau_a == 0.75 and diavlo.config.dml.n_folds == 3
    fusion = protocol("fusion").read_audit(HERE / "fusion" / "audit_v1.json")
    assert fusion.models["tiny:llava"].restoration_by_depth == {0: 0.0, 1: 1.0}
    assert fusion.rank_agreement_end_pgd_vs_r_plus.ranks["hf:other"] == (3.0, 3.0)


def test_the_settings_parts_name_every_field_of_the_audits_configs() -> None:
    """A setting added to an audit's config must be added to its report too (or audit.json drops it)."""
    pairs = [
        (AuditConfig, AuditSettings, []),
        (StudyConfig, StudySettings, []),
        (DiavloAuditConfig, dr.DiavloSettings, ["outcomes"]),
        (Thresholds, dr.ClassThresholds, []),
        (DMLSettings, dr.DMLSettingsPart, []),
        (FusionAuditConfig, FusionSettings, []),
    ]
    for config, part, added in pairs:
        assert [f.name for f in dataclasses.fields(config)] + added == list(part.model_fields), config.__name__

    diavlo = protocol("diavlo").read_audit(HERE / "diavlo" / "audit_v1.json")
    assert tuple(diavlo.models["scripted:sees-red"].overall.classes.shares) == CLASSES


def one_line(exc: pytest.ExceptionInfo[HarnessError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_bad_audit_files_fail_in_one_line_naming_them(tmp_path: Path) -> None:
    vista = protocol("vista")
    good = json.loads((HERE / "vista" / "audit_v1.json").read_text())
    cases = {
        "future.json": (
            json.dumps({**good, "schema_version": 99}),
            "schema_version 99; this harness reads version(s) 1",
        ),
        "cut.json": (json.dumps(good)[:200], "not valid JSON"),
        "list.json": ("[1, 2]", "not a VistaAuditReport"),
        "typo.json": (json.dumps({**good, "judg": "x"}), "not a VistaAuditReport (judg: Extra inputs"),
        "wrong.json": (json.dumps({**good, "models": "A"}), "not a VistaAuditReport (models: Input should be"),
        "missing.json": (
            json.dumps({k: v for k, v in good.items() if k != "sweeps"}),
            "not a VistaAuditReport (sweeps: Field required)",
        ),
        "deep.json": ("[" * 100 + "]" * 100, "nested deeper than"),
        "latin1.json": (None, "unreadable"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes(b'{"judge": "\xe9"}')
        else:
            path.write_text(text)
        with pytest.raises(HarnessError) as exc:
            vista.read_audit(path)
        assert one_line(exc).startswith(f"{path}: ") and expected in str(exc.value), name
    with pytest.raises(HarnessError) as exc:
        vista.read_audit(tmp_path / "nowhere")
    assert "no audit report there (run harness audit first)" in one_line(exc)
    # another protocol's audit is not this one's
    with pytest.raises(HarnessError) as exc:
        vista.read_audit(HERE / "fusion" / "audit_v1.json")
    assert "not a VistaAuditReport" in one_line(exc)


def test_a_protocol_without_an_audit_has_no_report(tmp_path: Path) -> None:
    stealth = get_protocol("stealth")
    assert stealth is not None and stealth.audit_report is None
    with pytest.raises(HarnessError) as exc:
        stealth.read_audit(tmp_path)
    assert one_line(exc) == "protocol 'stealth' declares no audit report"


def test_a_newer_report_reads_its_older_versions() -> None:
    """The pattern a version bump follows: the new SCHEMA_VERSION and field default, old versions kept readable."""

    class Toy(AuditReport):
        SCHEMA_VERSION = 2
        READABLE_VERSIONS = (1, 2)
        schema_version: int = 2
        figure: float

    assert Toy.parse({"figure": 1}).schema_version == 2  # unversioned: version 1, read as the current one
    assert Toy.parse({"schema_version": 1, "figure": 1}) == Toy(figure=1)
    with pytest.raises(HarnessError, match="schema_version 3; this harness reads version"):
        Toy.parse({"schema_version": 3, "figure": 1})
    # a figure that is not a number is written as json.dumps wrote it, and read back
    assert '"figure": NaN' in Toy(figure=float("nan")).to_json()
    assert math.isnan(Toy.parse(json.loads(Toy(figure=float("nan")).to_json())).figure)
