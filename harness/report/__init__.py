"""``harness report``: one model's audit across the protocols, as one self-contained HTML page and the same
content as JSON. It sits above the protocols (it reads them through the registry) and below the command
line, beside the leaderboard, which links each entry to its report."""

from harness.report.build import ReportOptions, build_report
from harness.report.html import render_report, write_report
from harness.report.model import ModelAudit

__all__ = ["ModelAudit", "ReportOptions", "build_report", "render_report", "write_report"]
