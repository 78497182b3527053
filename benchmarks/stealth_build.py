"""Full Stealth Prompt Testset build: wall time on this machine (target: at most 30 s on 2 cores).

The vqa subset needs SQuAD; offline, a synthetic SQuAD-format file of the same size stands in (the
rendering work per question is the same). Usage: python benchmarks/stealth_build.py [--squad PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from builders import build_dataset
from tests.protocols.stealth.fixtures import write_squad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--squad", help="a SQuAD source (default: a synthetic SQuAD-format file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        squad = args.squad or str(write_squad(Path(tmp) / "squad.json", n=150))
        start = time.perf_counter()
        out = build_dataset("stealth", Path(tmp) / "stealth", squad=squad)
        elapsed = time.perf_counter() - start
        import pyarrow.parquet as pq

        counts = {f.name.split("-")[0]: pq.ParquetFile(f).metadata.num_rows for f in sorted((out / "data").iterdir())}
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
    total = sum(counts.values())
    print(
        f"stealth full build: {total} images {counts}, {size:.0f} MB, {elapsed:.1f}s wall on {os.cpu_count()} "
        f"cores ({total / elapsed:.0f} images/s); target <= 30 s, ratio {elapsed / 30:.2f}"
    )


if __name__ == "__main__":
    main()
