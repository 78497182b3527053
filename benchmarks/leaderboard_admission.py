"""Leaderboard admission under the largest accepted upload: peak RSS of the server (its own process, and
its process tree with the re-scoring workers) for one such upload and for three at once, against the
upload's size, and the health check's latency meanwhile.

The upload is a real tiny-model run of ``shapes_color`` whose samples file is filled to the upload limit
(``--max-upload-mb``, default 64) with copies of its records (distinct doc ids), each copy padded so that
the file also reaches the per-submission sample limit where it can: the most records per byte the server
accepts. The server is ``harness leaderboard serve`` in its own process on loopback, over SQLite.

Usage: python benchmarks/leaderboard_admission.py [--max-upload-mb 64] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from harness.leaderboard.bundle import Limits, read_run_files


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


class Sampler:
    """Samples the server's RSS (its process; its tree) and health-check latency until stopped."""

    def __init__(self, pid: int, url: str) -> None:
        self.pid, self.url = pid, url
        self.main_kb = self.tree_kb = 0
        self.health: list[float] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._memory, daemon=True),
            threading.Thread(target=self._health, daemon=True),
        ]

    def __enter__(self) -> Sampler:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _memory(self) -> None:
        tick = 0
        while not self._stop.is_set():
            self.main_kb = max(self.main_kb, _rss_kb(self.pid))
            if tick % 4 == 0:  # the tree from a /proc scan, every 0.2 s (the scan itself costs CPU)
                self.tree_kb = max(self.tree_kb, sum(_rss_kb(p) for p in _tree(self.pid)))
            tick += 1
            time.sleep(0.05)

    def _health(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                client.get(f"{self.url}/api/health").raise_for_status()
                self.health.append(time.perf_counter() - start)
                time.sleep(0.1)


_CLI = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"]


def _harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_CLI, *args], check=True, text=True, capture_output=True, env=env)


def _run(root: Path) -> Path:
    """A real tiny-model run of shapes_color over a 3-doc shapes dataset."""
    from builders import build_dataset

    build_dataset("shapes", root / "data" / "vlm-audit" / "shapes", seed=0, n=3)
    _harness(
        "eval",
        "--model",
        "tiny:llava",
        "--tasks",
        "shapes_color",
        "--data-dir",
        str(root / "data"),
        "--output",
        str(root / "runs"),
        "--no-cache",
        "--verbosity",
        "quiet",
    )
    return next((root / "runs").glob("*/*/results.json")).parent


def _largest_upload(run: Path, limits: Limits, variant: int) -> dict[str, bytes]:
    """The run's files with its samples file filled to the upload limit (records per byte maximal)."""
    files = read_run_files(run)
    results = json.loads(files["results.json"])
    results["provenance"]["started_at"] = f"2026-01-01T00:00:{variant:02d}+00:00"  # a distinct submission
    files["results.json"] = json.dumps(results).encode()
    record = json.loads(files["samples_shapes_color.jsonl"].split(b"\n")[0])
    budget = limits.max_total_bytes - sum(len(v) for k, v in files.items() if k != "samples_shapes_color.jsonl")
    plain = len(json.dumps({**record, "doc_id": limits.max_samples})) + 1  # the widest doc id
    count = min(limits.max_samples, budget // plain)
    pad = max(0, budget // count - plain - len(',"pad":""'))
    line = json.dumps({**record, "doc_id": 0, "pad": "x" * pad}) if pad else json.dumps({**record, "doc_id": 0})
    head, tail = line.split('"doc_id": 0', 1)
    files["samples_shapes_color.jsonl"] = b"".join(f'{head}"doc_id": {i}{tail}\n'.encode() for i in range(count))
    return files


def _upload(url: str, files: dict[str, bytes], token: str) -> str:
    answer = httpx.post(
        f"{url}/api/submissions",
        files=[("files", (n, d)) for n, d in files.items()],
        headers={"Authorization": f"Bearer {token}"},
        timeout=900,
    )
    body = answer.json()
    return f"{answer.status_code} {body.get('status') or body.get('error', '')[:200]}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _measure(label: str, pid: int, url: str, uploads: list[dict[str, bytes]], token: str, baseline_kb: int) -> None:
    size = sum(len(v) for v in uploads[0].values())
    with Sampler(pid, url) as sampler, ThreadPoolExecutor(len(uploads)) as pool:
        start = time.perf_counter()
        codes = list(pool.map(lambda files: _upload(url, files, token), uploads))
        wall = time.perf_counter() - start
    mb = 2**20
    print(f"{label}: {len(uploads)} x {size / mb:.1f} MB upload(s), HTTP {codes}, {wall:.1f} s")
    print(
        f"  server process RSS: baseline {baseline_kb / 1024:.0f} MB, peak {sampler.main_kb / 1024:.0f} MB "
        f"(+{(sampler.main_kb - baseline_kb) / 1024:.0f} MB = {(sampler.main_kb - baseline_kb) * 1024 / size:.2f}x "
        f"one upload; peak/upload {sampler.main_kb * 1024 / size:.2f}x)"
    )
    print(
        f"  server tree RSS (workers included): peak {sampler.tree_kb / 1024:.0f} MB = "
        f"{sampler.tree_kb * 1024 / size:.2f}x one upload, {sampler.tree_kb * 1024 / (size * len(uploads)):.2f}x "
        f"all uploads"
    )
    print(
        f"  health check: {len(sampler.health)} calls, median {statistics.median(sampler.health) * 1000:.0f} ms, "
        f"max {max(sampler.health) * 1000:.0f} ms"
    )


def main() -> None:
    """Prints peak RSS and health latency for one and for three concurrent largest accepted uploads."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-upload-mb", type=float, default=64.0)
    parser.add_argument("--out", help="working folder (default: a temporary one)")
    args = parser.parse_args()
    limits = Limits(max_total_bytes=int(args.max_upload_mb * 2**20))
    with tempfile.TemporaryDirectory(prefix="lb-admission-") as tmp:
        root = Path(args.out or tmp)
        env = {**os.environ, "HARNESS_CACHE": str(root / "cache"), "OMP_NUM_THREADS": "1"}
        os.environ.update(env)
        run = _run(root)
        db = f"sqlite:///{root / 'board.sqlite'}"
        token = _harness("leaderboard", "token", "create", "bench", "--db", db, env=env).stdout.strip()
        port = _free_port()
        server = subprocess.Popen(
            [
                *_CLI,
                "leaderboard",
                "serve",
                "--db",
                db,
                "--port",
                str(port),
                "--max-upload-mb",
                str(args.max_upload_mb),
                "--rescore-timeout",
                "600",
                "--rescore-workers",
                "2",
            ],
            env=env,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    httpx.get(f"{url}/api/health", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            baseline = _rss_kb(server.pid)
            uploads = [_largest_upload(run, limits, i) for i in range(4)]
            lines = uploads[0]["samples_shapes_color.jsonl"].count(b"\n")
            print(f"largest accepted upload: {lines} sample records, limits {limits}")
            _measure("one upload", server.pid, url, uploads[:1], token, baseline)
            _measure("three at once", server.pid, url, uploads[1:], token, baseline)
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
