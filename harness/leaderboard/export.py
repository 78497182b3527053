"""``harness leaderboard export --output DIR``: a static copy of the site (HTML, JSON, CSV, images and the
submitted files) for any static host or a Hugging Face Space; the links are relative, as on the server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.leaderboard.db import Database
from harness.leaderboard.pages import STATIC, render_index, render_model
from harness.leaderboard.protocol_parts import board_parts
from harness.leaderboard.ranks import table_ranks
from harness.leaderboard.records import file_index, get_file, list_submissions, submission_summary
from harness.leaderboard.report_link import submission_report
from harness.leaderboard.service import Settings
from harness.leaderboard.tables import protocol_tables, table_csv, table_json


def export_site(db: Database, out: Path, settings: Settings | None = None) -> Path:
    """Write the site into ``out`` (the protocols' options from ``settings``, e.g. which task a pool covers)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = list_submissions(db)
    settings = settings or Settings()
    parts = board_parts(db, settings)
    ranks = table_ranks(db, records, settings.include_paths)
    (out / "index.html").write_text(render_index(records, parts, settings.page_size, ranks), encoding="utf-8")
    shutil.copytree(STATIC, out / "static", dirs_exist_ok=True)
    tables = out / "tables"
    tables.mkdir(exist_ok=True)
    for table in protocol_tables(records, parts):
        (tables / f"{table.protocol}.csv").write_text(table_csv(table), encoding="utf-8")
        (tables / f"{table.protocol}.json").write_text(json.dumps(table_json(table), indent=1), encoding="utf-8")
    for panel in parts.panels:
        (tables / f"{panel.key}.csv").write_text(panel.csv, encoding="utf-8")
        (tables / f"{panel.key}.json").write_text(json.dumps(panel.data, indent=1), encoding="utf-8")
        if panel.image is not None:
            (out / "panels").mkdir(exist_ok=True)
            (out / "panels" / f"{panel.key}.png").write_bytes(panel.image)
    for record in records:
        files = file_index(db, record.id)
        (out / "model").mkdir(exist_ok=True)
        (out / "model" / f"{record.id}.html").write_text(render_model(record, files, parts), encoding="utf-8")
        (out / "report").mkdir(exist_ok=True)
        (out / "report" / f"{record.id}.html").write_text(
            submission_report(db, record, settings.data_dir), encoding="utf-8"
        )
        folder = out / "files" / str(record.id)
        folder.mkdir(parents=True, exist_ok=True)
        for name, _, _ in files:
            (folder / name).write_bytes(get_file(db, record.id, name) or b"")
    (out / "api").mkdir(exist_ok=True)
    (out / "api" / "submissions.json").write_text(
        json.dumps([submission_summary(r) for r in records], indent=1), encoding="utf-8"
    )
    for protocol, _ in parts.protocols:
        (out / "api" / "protocols").mkdir(exist_ok=True)
        (out / "api" / "protocols" / f"{protocol.name}.json").write_text(
            json.dumps(parts.state(protocol.name, 0), indent=1), encoding="utf-8"
        )
    return out
