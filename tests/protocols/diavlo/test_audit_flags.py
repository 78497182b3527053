"""DiaVLo's audit takes the include-path flags every command that opens a run's tasks takes
(tests/engine/test_run_task_sources.py)."""

from __future__ import annotations


def test_diavlo_audit_takes_the_same_flags() -> None:
    from harness.cli import build_parser

    args = build_parser().parse_args(["audit", "diavlo", "run", "--include-path", "x", "--trust-run-include-paths"])
    assert args.include_path == ["x"] and args.trust_run_include_paths
