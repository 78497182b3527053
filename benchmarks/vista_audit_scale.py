"""A paper-size VISTA audit (6 models x 1,900 queries x 10 samples = 114,000 responses) scored with every
LLM-judge decision already in the response store: prints the scoring time and the judge decisions per
query against asking all pairs.

    python benchmarks/vista_audit_scale.py [--models 6 --queries 1900 --k 10]

Responses are synthetic and all distinct (as sampled long answers are); each carries one of a few
meanings per query, and a first pass with a ground-truth judge (same meaning <=> entailment) fills the
store through the LLM judge's own keys. The timed pass is the real code path: a fresh ``LLMJudge`` on
the tiny text model, decisions preloaded from SQLite, ``audit_records`` over the records; the model is
never called (checked).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.engine.store import ResponseStore
from harness.judges.entailment import LLMJudge
from harness.models import create_backend
from harness.protocols.vista.audit import AuditConfig, audit_records
from harness.results.schema import SampleRecord

MEANINGS = ("alpha", "bravo", "charlie", "delta")
FILLER = " ".join(["the answer goes on with more detail about the image and the question"] * 3)


def synthetic_pool(models: int, queries: int, k: int, seed: int = 0) -> dict[str, list[SampleRecord]]:
    """Peers sample 3 meanings from a per-query mix; the last model answers a 4th meaning on 2% of queries."""
    rng = random.Random(seed)
    pool: dict[str, list[SampleRecord]] = {f"model-{m}": [] for m in range(models)}
    for q in range(queries):
        weights = [rng.random() + 0.1 for _ in range(3)]
        odd = rng.random() < 0.02
        for m, name in enumerate(pool):
            texts = []
            for i in range(k):
                meaning = "delta" if odd and m == models - 1 else rng.choices(MEANINGS[:3], weights)[0]
                texts.append(f"{meaning} q{q} m{m} s{i} {FILLER}")
            pool[name].append(
                SampleRecord(task="vista", doc_id=q, doc_hash=f"q{q}", doc={"topic": f"t{q % 19}"}, responses=texts)
            )
    return pool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=6)
    parser.add_argument("--queries", type=int, default=1900)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    pool = synthetic_pool(args.models, args.queries, args.k)
    backend = create_backend("tiny:qwen3")
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "judge.sqlite"
        filler = LLMJudge(backend, ResponseStore(None))
        decided: dict[str, str] = {}

        def truth(premise: str, hypothesis: str) -> bool:
            same = premise.split()[0] == hypothesis.split()[0]
            decided[filler.key(premise, hypothesis)] = "Yes" if same else "No"
            return same

        t0 = time.perf_counter()
        audit_records(pool, truth, AuditConfig(stability=True))
        ResponseStore(store_path).put_many(backend.fingerprint, [(key, 0, [v]) for key, v in decided.items()])
        fill_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        judge = LLMJudge(backend, ResponseStore(store_path))
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = audit_records(pool, judge, AuditConfig(stability=False))
        score_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with_stability = audit_records(pool, judge, AuditConfig(stability=True))
        stability_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        strict = audit_records(pool, truth, AuditConfig(clustering="strict", stability=False))
        strict_s = time.perf_counter() - t0
        assert judge.calls == 0, "the timed passes must not call the model"
    responses = args.models * args.queries * args.k
    n = args.queries - result.skipped_queries
    print(f"responses: {responses:,} ({args.models} models x {args.queries} queries x {args.k} samples)")
    print(f"store fill (ground-truth pass, not timed below): {len(decided):,} decisions in {fill_s:.1f} s")
    print(f"load cached decisions from SQLite: {load_s:.2f} s")
    print(f"score (clusters, SE, confidence, divergence, S, tables, sweeps): {score_s:.2f} s")
    print(f"score + leave-one-peer-out stability ({args.models} re-clusterings): {stability_s:.2f} s")
    print(
        f"judge decisions per query: {result.judge_decisions / n:.0f}; all ordered pairs per query: "
        f"{result.all_pairs_calls / n:.0f}; ratio {result.judge_decisions / result.all_pairs_calls:.3f}"
    )
    print(
        f"strict cliques instead (ground-truth judge in memory): {strict_s:.2f} s, "
        f"{strict.judge_decisions / n:.0f} decisions per query"
    )
    flagged = {m: row["flags"] for m, row in with_stability.per_model.items()}
    print(f"flags per model at theta {result.config.theta}: {flagged}")


if __name__ == "__main__":
    main()
