"""Each leaderboard entry's audit report (``harness report``), built from what the server stores of the
submission: its results.json (local paths redacted, as published) and samples, with the images of the
server's own data dir. The server answers it at ``/report/<id>.html`` and the export writes it there."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from harness.leaderboard.bundle import RESULTS
from harness.leaderboard.db import Database, Submission
from harness.leaderboard.records import file_index, get_file
from harness.report import ReportOptions, build_report, render_report

_SAMPLES = re.compile(r"samples_[A-Za-z0-9_.-]+\.jsonl")


def submission_report(db: Database, record: Submission, data_dir: Path | None) -> str:
    """The submission's report page: its run as stored, the datasets' images from ``data_dir`` (None: no
    image; a submission's own paths are never read)."""
    with tempfile.TemporaryDirectory(prefix="harness-report-") as tmp:
        run = Path(tmp) / f"submission-{record.id}"
        run.mkdir()
        for name, _, _ in file_index(db, record.id):
            if name == RESULTS or _SAMPLES.fullmatch(name):
                (run / name).write_bytes(get_file(db, record.id, name) or b"")
        empty = Path(tmp) / "no-data"
        doc = build_report(ReportOptions(paths=[run], model=record.model, data_dir=data_dir or empty))
        return render_report(doc, [Path(run.name)], Path(f"report-{record.id}.html"))
