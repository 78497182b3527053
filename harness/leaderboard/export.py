"""``harness leaderboard export --out DIR``: a static copy of the site (HTML, JSON, CSV, images and the
submitted files) for any static host or a Hugging Face Space; the links are relative, as on the server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.leaderboard.db import Database
from harness.leaderboard.pages import STATIC, render_index, render_model
from harness.leaderboard.records import file_index, get_file, list_submissions, submission_summary
from harness.leaderboard.tables import protocol_tables, table_csv, table_json
from harness.protocols.vista.pool import POOL_TABLE, latest_pool, pool_csv, pool_json


def export_site(db: Database, out: Path, vista_task: str = "vista") -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = list_submissions(db)
    pool = latest_pool(db, vista_task)
    (out / "index.html").write_text(render_index(records, pool), encoding="utf-8")
    shutil.copytree(STATIC, out / "static", dirs_exist_ok=True)
    for table in protocol_tables(records):
        (out / "tables").mkdir(exist_ok=True)
        (out / "tables" / f"{table.protocol}.csv").write_text(table_csv(table), encoding="utf-8")
        (out / "tables" / f"{table.protocol}.json").write_text(json.dumps(table_json(table), indent=1),
                                                               encoding="utf-8")
    for record in records:
        files = file_index(db, record.id)
        (out / "model").mkdir(exist_ok=True)
        (out / "model" / f"{record.id}.html").write_text(render_model(record, files, pool), encoding="utf-8")
        folder = out / "files" / str(record.id)
        folder.mkdir(parents=True, exist_ok=True)
        for name, _, _ in files:
            (folder / name).write_bytes(get_file(db, record.id, name) or b"")
    (out / "api").mkdir(exist_ok=True)
    (out / "api" / "submissions.json").write_text(json.dumps([submission_summary(r) for r in records], indent=1),
                                                  encoding="utf-8")
    (out / "api" / "vista.json").write_text(json.dumps(pool_json(pool), indent=1), encoding="utf-8")
    if pool is not None:
        (out / "tables").mkdir(exist_ok=True)
        (out / "tables" / f"{POOL_TABLE}.csv").write_text(pool_csv(pool), encoding="utf-8")
        (out / "tables" / f"{POOL_TABLE}.json").write_text(json.dumps(pool_json(pool), indent=1), encoding="utf-8")
    if pool is not None and pool.plot is not None:
        (out / "vista").mkdir(exist_ok=True)
        (out / "vista" / "suspicion.png").write_bytes(pool.plot)
    return out
