"""``harness view`` at paper scale: a synthetic run of 100,000 samples (and a second one for the
side-by-side view), served by the real command in its own process on loopback.

Prints: the time to index each run (once per run folder, at the viewer's start), the time from starting a
viewer whose indexes are already built to its first samples page, the time of pages 2, 10, 100, 1,000 and
the last one, of filtered, searched and sorted pages, of a side-by-side page, the server's peak resident
memory (VmHWM) and the index's size beside the samples file's.

Usage: python benchmarks/viewer_scale.py [--samples 100000] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.results.schema import Provenance, RunConfig, RunResults, TaskCounts
from harness.viewer.catalog import folder_id

TASK = "synthetic_vqa"
WORDS = "the a red green blue yellow circle square triangle shape left right above below one two three".split()


def _sentence(seed: int, n: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(n))


def write_run(folder: Path, samples: int, model: str, shift: int) -> Path:
    """A run folder of ``samples`` records of one task (3 answers each, 2 metrics, 1% errors); ``shift``
    changes which docs the model gets right, so two runs differ on some docs."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"samples_{TASK}.jsonl").open("w", encoding="utf-8") as fh:
        for doc_id in range(samples):
            right = (doc_id * 31 + shift) % 5 < 2
            answer = "red" if right else _sentence(doc_id + shift, 4)
            if doc_id == samples // 2:
                answer = "a needle in the haystack"
            error = "generation failed: the backend raised TimeoutError" if doc_id % 100 == 99 else None
            record = {
                "task": TASK,
                "doc_id": doc_id,
                "doc_hash": hashlib.sha256(str(doc_id).encode()).hexdigest()[:24],
                "doc": {"id": f"doc-{doc_id:06d}", "question": _sentence(doc_id, 9), "answer": "red"},
                "target": "red",
                "prompt": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image", "url": {"image_sha256": hashlib.sha256(b"%d" % doc_id).hexdigest()}},
                            {"type": "text", "text": _sentence(doc_id, 9) + "\nAnswer with one word."},
                        ],
                    }
                ],
                "request_key": hashlib.sha256(f"{model}{doc_id}".encode()).hexdigest()[:24],
                "seed": doc_id,
                "responses": [] if error else [answer, _sentence(doc_id + 1, 5), _sentence(doc_id + 2, 6)],
                "filtered": {} if error else {"none": answer},
                "metrics": {} if error else {"exact_match,none": float(right), "length,none": len(answer)},
                "unparsed": [],
                "turns": [],
                "choices": [],
                "error": error,
            }
            fh.write(json.dumps(record) + "\n")
    results = RunResults.model_validate(
        {
            "results": {TASK: {"alias": TASK, "exact_match,none": 0.4, "exact_match_stderr,none": 0.0015}},
            "configs": {TASK: {}},
            "versions": {TASK: 1},
            "n-samples": {TASK: {"original": samples, "effective": samples}},
            "counts": {TASK: TaskCounts(samples=samples, scored=samples, errors=samples // 100)},
            "config": RunConfig(model=model, tasks=[TASK]),
            "provenance": Provenance(started_at=f"2026-01-0{1 + shift}T00:00:00"),
        }
    )
    (folder / "results.json").write_text(results.to_json())
    return folder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


def _get(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - started, len(body)


def _start(runs: Path, index_dir: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    """``harness view`` in its own process; returns it, its URL and the seconds until it answered."""
    port = _free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "view", str(runs), "--port", str(port), "--index-dir", str(index_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            _get(url + "/")
            return process, url, time.perf_counter() - started
        except OSError:
            if process.poll() is not None:
                error = process.stderr.read().decode() if process.stderr else ""
                raise SystemExit(f"harness view exited: {error}") from None
            time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--out", type=Path, help="where the synthetic runs go (default: a temporary folder)")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="viewer-scale-"))
    runs = root / "runs"
    started = time.perf_counter()
    run_a = write_run(runs / "model-a" / "run", args.samples, "hf:org/model-a", 0)
    run_b = write_run(runs / "model-b" / "run", args.samples, "hf:org/model-b", 1)
    size_mb = (run_a / f"samples_{TASK}.jsonl").stat().st_size / 2**20
    print(f"wrote 2 runs of {args.samples:,} samples ({size_mb:.0f} MB each) in {time.perf_counter() - started:.1f}s")

    index_dir = root / "index"
    process, url, cold = _start(runs, index_dir)
    cold_peak = _peak_rss_mb(process.pid)
    _stop(process)
    print(f"cold start (indexes both runs, then serves): {cold:.2f}s; peak RSS {cold_peak:.0f} MB")

    process, url, warm = _start(runs, index_dir)
    samples_url = f"{url}/run/{folder_id(run_a)}/{TASK}/"
    first, _ = _get(samples_url)
    print(f"warm start (indexes up to date): {warm:.2f}s to the runs page; first samples page {first * 1000:.0f} ms")
    last_page = math.ceil(args.samples / 50)
    paging = {}
    for page in (2, 10, 100, 1000, last_page):
        paging[page] = statistics.median(_get(f"{samples_url}?page={page}")[0] for _ in range(3))
        print(f"  page {page:>6,}                      {paging[page] * 1000:7.0f} ms (median of 3)")
    filters = {
        "errors only": "error=generation+failed",
        "exact_match = 1": "metric=exact_match%2Cnone&op=eq&value=1",
        "sorted by length, descending": "metric=length%2Cnone&sort=-metric",
        "search 'needle'": "q=needle",
        "search 'triangle'": "q=triangle",
        "200 per page": "per_page=200",
    }
    print("  a filter's first page (the matching ids found), then its page 2 and page 20 (read from them):")
    for name, query in filters.items():
        first_filtered = _get(f"{samples_url}?{query}")[0]
        later = [_get(f"{samples_url}?{query}&page={page}")[0] for page in (2, 20)]
        paging[name] = max(later)
        print(
            f"  {name:<30} {first_filtered * 1000:7.0f} ms, then {later[0] * 1000:.0f} ms and {later[1] * 1000:.0f} ms"
        )
    compare = f"{url}/compare?run={folder_id(run_a)}&run={folder_id(run_b)}&task={TASK}"
    for name, query in {"side by side, page 1": "", "side by side, page 1,000": "&page=1000"}.items():
        times = [_get(compare + query)[0] for _ in range(3)]
        print(f"  {name:<32} {statistics.median(times) * 1000:7.0f} ms (median of 3)")
    peak = _peak_rss_mb(process.pid)
    _stop(process)
    index_mb = sum(p.stat().st_size for p in index_dir.rglob("*.sqlite")) / 2 / 2**20
    print(f"serving peak RSS {peak:.0f} MB; index {index_mb:.0f} MB per run beside {size_mb:.0f} MB of samples")
    print(f"first page {first * 1000:.0f} ms (target < 2000); paging max {max(paging.values()) * 1000:.0f} ms (< 300)")
    if not args.out:
        for path in sorted(root.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        root.rmdir()
    os.sync()


if __name__ == "__main__":
    main()
