"""VISTA's evidence for ``harness report`` and ``harness view``: a flagged case's answers grouped by cluster,
hostile text kept as text (the shared evidence layer: tests/protocols/test_evidence.py)."""

from __future__ import annotations

from tests.protocols.test_evidence import HOSTILE


def test_vista_groups_a_flagged_case_by_cluster() -> None:
    from harness.protocols.vista.evidence import _case

    row = {"model": "a", "topic": "Asian", "doc_id": "3", "suspicion": "0.7", "pattern": "refusal"}
    flagged = {"responses": {"a": ["x", "y"], "b": ["z", HOSTILE]}, "cluster_ids": {"a": [0, 1], "b": [0, 0]}}
    case = _case(row, flagged, {}, "vista")
    (panel,) = case.panels
    assert [g.label for g in panel.groups] == ["cluster 0: 3 answers from a, b", "cluster 1: 1 answers from a"]
    assert [a.text for a in panel.groups[0].answers] == ["x", "z", HOSTILE]
    assert (
        case.title == "Asian: doc 3, S = 0.700" and case.note is not None and case.note.startswith("flagged (refusal)")
    )
    assert panel.image is None and case.fields["prompt"] == "(not in the runs given)"
