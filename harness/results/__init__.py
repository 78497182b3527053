"""The results contract: typed ``results.json`` and ``samples_<task>.jsonl`` read by every tool."""

from harness.results.schema import RunResults, SampleRecord, read_run, read_samples, write_run

__all__ = ["RunResults", "SampleRecord", "read_run", "read_samples", "write_run"]
