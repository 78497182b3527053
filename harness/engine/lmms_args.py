"""The ``args`` lmms-eval hands a task's aggregation functions: its command line's namespace.

Aggregations that take ``args`` (OCRBench's, MathVista's, ... 258 of lmms-eval 0.7.3's task configs) read
``args.output_path`` to write their report files and sometimes ``args.model``, ``args.tasks`` or
``args.seed``; the harness fills every attribute of lmms-eval's own command line with this run's values
(``output_path`` is the run folder, or a fresh temporary folder when the run writes none, so task code
never writes into the working directory).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any


def aggregation_args(
    output_path: Path | None,
    model: str,
    tasks: list[str],
    *,
    limit: float | None = None,
    seed: int = 0,
    batch_size: int = 1,
    gen_kwargs: dict[str, Any] | None = None,
    include_paths: list[str] | None = None,
) -> argparse.Namespace:
    """A namespace with lmms-eval's command-line attributes, set to this run's values."""
    folder = output_path if output_path is not None else Path(tempfile.mkdtemp(prefix="harness-task-files-"))
    return argparse.Namespace(
        output_path=str(folder),
        model=model,
        model_args="",
        tasks=",".join(tasks),
        limit=limit,
        offset=0,
        seed=seed,
        batch_size=batch_size,
        gen_kwargs=",".join(f"{k}={v}" for k, v in (gen_kwargs or {}).items()),
        include_path=",".join(include_paths or []) or None,
        num_fewshot=None,
        device=None,
        log_samples=True,
        log_samples_suffix="model_outputs",
        verbosity="INFO",
        predict_only=False,
        use_cache=None,
        write_out=False,
        show_config=False,
        process_with_media=False,
        repeats=None,
    )
