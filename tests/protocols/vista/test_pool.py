"""The VISTA peer pool's published forms (its panel's JSON and CSV) from a stored computation."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

from harness.protocols.pool_store import PoolMember, StoredPool
from harness.protocols.vista.pool import pool_csv, pool_json

FIGURES = {
    "queries": 3,
    "mean_suspicion": 0.25,
    "max_suspicion": 0.5,
    "flags": 1,
    "flag_share": 1 / 3,
    "mean_semantic_entropy": 0.7,
    "refusal_rate": 0.0,
    "dominant_pattern": "none",
    "detection": {"positive": False, "score": 0.1},
}
POOL = StoredPool(
    id=7,
    computed_at=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
    task="vista",
    judge="embedding",
    config={"theta": 0.6},
    members=(PoolMember(2, "=cmd|' /C calc'!A0"), PoolMember(5, "tiny:llava")),
    per_model={
        "=cmd|' /C calc'!A0": {**FIGURES, "submission_id": 2},
        "tiny:llava": {**FIGURES, "submission_id": 5},
    },
    status="ok",
    message="2 models",
)


def test_pool_json_keeps_the_members_as_the_api_served_them() -> None:
    data = pool_json(POOL)
    assert data is not None and pool_json(None) is None
    assert data["id"] == 7 and data["computed_at"] == "2026-12-01T09:30:00+00:00"
    assert data["members"] == [
        {"submission_id": 2, "model": "=cmd|' /C calc'!A0"},
        {"submission_id": 5, "model": "tiny:llava"},
    ]


def test_pool_csv_has_a_row_per_model_and_a_model_name_cannot_be_a_formula() -> None:
    header, *rows = list(csv.reader(io.StringIO(pool_csv(POOL))))
    assert header[:3] == ["model", "submission_id", "queries"] and header[-3:] == ["computed_at", "judge", "pool_size"]
    assert [r[0] for r in rows] == ["'=cmd|' /C calc'!A0", "tiny:llava"]
    assert rows[1][1:3] == ["5", "3"] and rows[1][-3:] == ["2026-12-01T09:30:00+00:00", "embedding", "2"]
