"""``harness audit vista``: pool every model's k responses per query, cluster them by bidirectional
entailment, score each (model, query) for suspicion and flag the internally uniform, peer-divergent ones.
Reads runs only through the results contract (results.json and samples files)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.metrics.entailment_clusters import cluster_responses
from harness.metrics.vista import model_detection, raven_scores, suspicion_scores
from harness.results.schema import read_run, read_samples


@dataclass
class AuditConfig:
    task: str = "vista"
    alpha: float = 0.5
    theta: float = 0.6
    clustering: str = "components"
    reference: str = "all"


@dataclass
class AuditResult:
    config: AuditConfig
    models: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    flagged: list[dict[str, Any]] = field(default_factory=list)
    per_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge_calls: int = 0
    all_pairs_calls: int = 0
    skipped_queries: int = 0


def _pool(run_dirs: list[Path], task: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Model names and, per doc hash, {model: record} for queries every model answered."""
    models: list[str] = []
    by_model: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        run = read_run(run_dir)
        if task not in run.configs:
            raise HarnessError(f"{run_dir}: the run has no task {task!r} (tasks: {', '.join(run.configs)})")
        name = str(run.config.get("model"))
        if name in by_model:
            name = f"{name}@{run_dir.name}"
        models.append(name)
        by_model[name] = {r.doc_hash: r for r in read_samples(run_dir, task)}
    if len(models) < 2:
        raise HarnessError("a VISTA audit compares at least two models' runs")
    common = set.intersection(*(set(recs) for recs in by_model.values()))
    return models, {h: {m: by_model[m][h] for m in models} for h in sorted(common)}


def run_audit(run_dirs: list[Path], judge: Callable[[str, str], bool], config: AuditConfig) -> AuditResult:
    models, queries = _pool([Path(d) for d in run_dirs], config.task)
    result = AuditResult(config, models)
    calls_before = getattr(judge, "calls", 0)
    for doc_hash, records in queries.items():
        if any(r.error is not None or not r.responses for r in records.values()):
            result.skipped_queries += 1
            continue
        pool = [(m, text) for m in models for text in records[m].responses]
        clusters = cluster_responses([t for _, t in pool], judge, config.clustering)
        result.judge_calls += clusters.judge_calls
        unique = len({t.strip() for _, t in pool if t.strip()})
        result.all_pairs_calls += unique * (unique - 1)
        assignments: dict[str, list[int]] = {m: [] for m in models}
        for (model, _), cid in zip(pool, clusters.ids, strict=True):
            assignments[model].append(cid)
        scores = suspicion_scores(assignments, config.alpha, config.reference)
        raven = raven_scores(assignments)
        first = records[models[0]]
        for model in models:
            row = {"model": model, "doc_id": first.doc_id, "doc_hash": doc_hash, **scores[model],
                   "raven": raven[model], "clusters": len(set(assignments[model])),
                   "flagged": scores[model]["suspicion"] >= config.theta}
            result.rows.append(row)
            if row["flagged"]:
                result.flagged.append({**row, "doc": first.doc,
                                       "responses": {m: records[m].responses for m in models},
                                       "cluster_ids": assignments})
    result.judge_calls = max(result.judge_calls, getattr(judge, "calls", 0) - calls_before)
    for model in models:
        values = [r["suspicion"] for r in result.rows if r["model"] == model]
        if not values:
            continue
        result.per_model[model] = {
            "queries": len(values), "mean_suspicion": float(np.mean(values)), "max_suspicion": float(max(values)),
            "flags": sum(r["flagged"] for r in result.rows if r["model"] == model),
            "mean_semantic_entropy": float(np.mean([r["se"] for r in result.rows if r["model"] == model])),
            "detection": model_detection(values, config.theta),
        }
    return result


def write_audit(result: AuditResult, out_dir: Path, judge_name: str) -> Path:
    """audit.json (settings, per-model table, call counts), audit.csv (one row per model and query),
    flagged.jsonl (every response of every model for each flagged case) and the S distribution plot."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {"config": result.config.__dict__, "judge": judge_name, "models": result.models,
               "per_model": result.per_model, "judge_calls": result.judge_calls,
               "all_pairs_calls": result.all_pairs_calls, "skipped_queries": result.skipped_queries,
               "flagged": len(result.flagged)}
    (out_dir / "audit.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    with (out_dir / "audit.csv").open("w", newline="", encoding="utf-8") as fh:
        fields = ["model", "doc_id", "doc_hash", "se", "confidence", "divergence", "suspicion", "raven",
                  "clusters", "flagged"]
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: r[k] for k in fields} for r in result.rows)
    with (out_dir / "flagged.jsonl").open("w", encoding="utf-8") as fh:
        for case in result.flagged:
            fh.write(json.dumps(case, default=str) + "\n")
    if result.rows:
        from harness.plots.vista import suspicion_distribution

        suspicion_distribution({m: [r["suspicion"] for r in result.rows if r["model"] == m] for m in result.models},
                               result.config.theta, out_dir / "suspicion_by_model.png")
    return out_dir
