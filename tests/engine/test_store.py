import logging
import sqlite3
import time
from pathlib import Path

import pytest

from harness.engine import store as store_module
from harness.engine.store import ResponseStore
from harness.errors import HarnessError


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


def _malformed(path: Path) -> Path:
    """A real response store whose header is intact but whose table pages are overwritten."""
    store = ResponseStore(path)
    store.put_many("m", [(f"req{i}", 0, ["x" * 500]) for i in range(50)])
    store.close()
    data = bytearray(path.read_bytes())
    data[4096:12288] = b"\xde\xad\xbe\xef" * 2048
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("kind", ["garbage", "malformed", "directory", "parent-is-a-file"])
def test_unusable_store_fails_in_one_line_naming_the_file_and_the_fix(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "r.sqlite"
    if kind == "garbage":
        path.write_bytes(b"this is not a database\n" * 200)
    elif kind == "malformed":
        _malformed(path)
    elif kind == "directory":
        path.mkdir()
    else:
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "r.sqlite"
    with pytest.raises(HarnessError) as caught:
        store = ResponseStore(path)
        store.get("m", "req", 0, 1)
        store.put("m", "req", 0, ["a"])
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and str(path) in message
    assert "--cache" in message and "--no-cache" in message


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_store_locked_by_another_writer_keeps_answers_and_merges_them_later(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.3)
    db = tmp_path / "r.sqlite"
    ResponseStore(db).close()
    other = _hold_write_lock(db)
    store = ResponseStore(db)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="harness.engine.store"):
        store.put("m", "req", 1, ["a", "b"])
        store.put("m", "req2", 1, ["c", "d"])
        assert store.get("m", "req", 1, 2) == ["a", "b"]  # kept answers are served
        store.close()
    assert time.monotonic() - started < 5
    waiting = [r.getMessage() for r in caplog.records if "waiting for it" in r.getMessage()]
    assert len(waiting) == 1 and str(db) in waiting[0] and "locked by another process" in waiting[0]
    (side,) = tmp_path.glob("r.sqlite.pending-*.jsonl")
    assert f"{side}" in caplog.records[-1].getMessage() and "2 request(s)" in caplog.records[-1].getMessage()
    other.rollback()
    other.close()
    again = ResponseStore(db)
    assert again.get("m", "req", 1, 2) == ["a", "b"] and again.get("m", "req2", 1, 2) == ["c", "d"]
    assert not list(tmp_path.glob("r.sqlite.pending-*"))
    again.close()


def test_answers_kept_during_a_lock_are_written_once_it_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    db = tmp_path / "r.sqlite"
    store = ResponseStore(db)
    other = _hold_write_lock(db)
    store.put("m", "req", 1, ["a"])
    other.rollback()
    store.put("m", "req2", 1, ["b"])
    assert other.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2
    other.close()
    store.close()
    assert not list(tmp_path.glob("r.sqlite.pending-*"))
