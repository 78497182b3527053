from pathlib import Path

from harness.engine.store import ResponseStore


def test_roundtrip_partial_and_refresh(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    store = ResponseStore(db)
    assert store.get("m", "req", 1, 2) is None
    store.put("m", "req", 1, ["a", "b"])
    assert store.get("m", "req", 1, 2) == ["a", "b"]
    assert store.get("m", "req", 1, 3) is None  # fewer than n samples cached
    assert store.get("m", "req", 2, 2) is None  # other seed
    assert store.get("other", "req", 1, 2) is None  # other model
    store.close()
    refresh = ResponseStore(db, read=False)
    assert refresh.get("m", "req", 1, 2) is None
    refresh.put("m", "req", 1, ["c", "d"])
    refresh.close()
    again = ResponseStore(db)
    assert again.get("m", "req", 1, 2) == ["c", "d"]
    assert again.count("m") == 2
    assert again._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_disabled_store_neither_reads_nor_writes(tmp_path: Path) -> None:
    off = ResponseStore(None)
    off.put("m", "r", 0, ["x"])
    assert off.get("m", "r", 0, 1) is None
