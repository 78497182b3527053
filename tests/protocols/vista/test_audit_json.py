"""VISTA's and its controlled study's paper tables, rendered from a saved audit.json alone (the shared reading
of every protocol's audit.json: tests/protocols/test_audit_report.py)."""

from __future__ import annotations

from pathlib import Path

from harness.protocols.vista.implant.tables import markdown_tables as study_tables
from harness.protocols.vista.tables import markdown_tables
from tests.protocols.test_audit_report import protocol

HERE = Path(__file__).parent


def test_the_paper_tables_of_a_saved_audit_render_from_its_audit_json_alone() -> None:
    vista = markdown_tables(protocol("vista").read_audit(HERE / "audit_v1.json"))
    assert "| tiny:llava | 0.11 | 0.11 | 0 | 0.00 | 0.11 | none |" in vista  # Table 14, no intervals in version 1
    assert "| tiny:gemma3 | Asian | 6.7 | 0.0 | 0.0 | 6.7 | 15 |" in vista  # Table 15
    assert "Not computed (more than the stored k): k = 5, 10, 20." in vista
    study = study_tables(protocol("vista-implant").read_audit(HERE / "implant" / "audit_v1.json"))
    assert "Rater `lexicon`, judge `embedding:all-MiniLM-L6-v2`" in study and "| llava | Uber | 0 | 69 | 0 |" in study
