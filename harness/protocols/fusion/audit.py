"""``harness audit fusion``: FusionAudit's figures for every model from its saved runs.

Reads, per run folder, through the results contract: ``samples_fusion_clean.jsonl`` (the clean-correct
set C: J correct), ``samples_fusion_typo`` / ``samples_fusion_natevid`` (a flip: an item of C answered
wrong; ``uses_injected`` for P_use), ``samples_fusion_read_typo`` / ``..._read_natevid`` (P_read), and
from ``harness attack``: ``attack_outcomes.jsonl`` (Vis-PGD, End-PGD, MANTIS flips) and
``diagnostics.jsonl`` (OAR on the Typo-Evid and on the matched clean image, layer restoration).
Several folders of one model (same ``--model`` spec) are merged. An item of C that an attack could
not be run on (an error, a missing image, or a Nat-Evid edit whose OCR check says the evidence was
destroyed, unless ``--natevid-all``) counts as not flipped and is reported under ``missing``. An
attack with no outcome on any item of C was not run: its ASR is
None and it is listed under ``attacks_not_run`` (R0 and R+ then cover the attacks that were run).
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.protocols.fusion import metrics as fm
from harness.protocols.fusion.attack_outcomes import OUTCOMES_FILE, read_diagnostics, read_outcomes
from harness.protocols.fusion.audit_report import FusionAuditReport, FusionSettings
from harness.protocols.fusion.rows import FusionRow
from harness.results.interval import Interval
from harness.results.schema import read_run, read_samples

log = logging.getLogger(__name__)

VARIANT_TASKS = {
    fm.TYPO_EVID: ("fusion_typo", "fusion_read_typo", "typo"),
    fm.NAT_EVID: ("fusion_natevid", "fusion_read_natevid", "natevid"),
}
CI_FIGURES = (
    "asr_vis_pgd",
    "asr_end_pgd",
    "asr_typo_evid",
    "asr_mantis",
    "asr_nat_evid",
    "r0",
    "r_plus",
    "delta_mantis",
    "delta_nat_evid",
    "delta",
    "rug_typo",
    "rug_natevid",
    "oar",
    "oar_clean",
    "oar_increase",
    "restoration",
)
RESTORATION_SUBSET = (
    "layer restoration: per model the first 40 (--restoration-items) End-PGD flips by item id, "
    "counting those whose saved adversarial image still flips under greedy decoding (the paper "
    "keeps 24-40 per model); per level the unweighted macro average over models with a "
    "paired-bootstrap 95% CI"
)


@dataclass(frozen=True)
class FusionAuditConfig:
    """The audit's choices: delta against each strengthened attack's own pathway or the whole baseline suite,
    Nat-Evid counted only on edits whose evidence survived, fusion-level overrides, and the bootstrap."""

    delta_mode: fm.DeltaMode = "pathway"
    oar_mode: fm.OarIncreaseMode = "per_item"
    natevid_preserved_only: bool = True
    level_overrides: dict[str, str] = field(default_factory=dict)
    n_resamples: int = 1000
    seed: int = 0


@dataclass
class ModelRuns:
    """The run folders of one model (one ``--model`` spec), merged by the audit, and its model type."""

    name: str
    model_type: str | None
    folders: list[Path] = field(default_factory=list)


def _models(run_dirs: list[Path]) -> dict[str, ModelRuns]:
    models: dict[str, ModelRuns] = {}
    for run_dir in run_dirs:
        run = read_run(run_dir)
        name = run.config.model
        entry = models.setdefault(name, ModelRuns(name, run.provenance.model.model_type))
        entry.folders.append(Path(run_dir))
    return models


def _samples(folders: list[Path], task: str) -> dict[str, Any]:
    """Item id -> sample record of ``task``: the first folder that has the task wins, a folder written by
    ``harness attack`` first (its clean answers define the C that was attacked)."""
    ordered = sorted(folders, key=lambda f: not (f / OUTCOMES_FILE).is_file())
    for folder in ordered:
        if (folder / f"samples_{task}.jsonl").is_file():
            return {str(FusionRow.read(r.doc, "id", r.doc_id)): r for r in read_samples(folder, task)}
    return {}


def clean_run(runs: ModelRuns) -> Path | None:
    """The one folder whose ``fusion_clean`` answers define the model's clean-correct set C. Of several, the
    one ``harness attack`` wrote is taken (its clean answers define the C that was attacked), and a warning
    says so; several with none, or several attack folders, are refused in one line: which C is meant is
    the user's to say."""
    found = [f for f in runs.folders if (f / "samples_fusion_clean.jsonl").is_file()]
    if len(found) <= 1:
        return found[0] if found else None
    attacked = [f for f in found if (f / OUTCOMES_FILE).is_file()]
    if len(attacked) == 1:
        log.warning(
            "%s: %d runs hold fusion_clean answers (%s); C is taken from %s, the run harness attack wrote, "
            "whose clean answers define the items that were attacked",
            runs.name,
            len(found),
            ", ".join(map(str, found)),
            attacked[0],
        )
        return attacked[0]
    raise HarnessError(
        f"{runs.name}: {len(found)} runs hold fusion_clean answers ({', '.join(map(str, found))}) and "
        f"{'several were' if attacked else 'none was'} written by harness attack, so which define the "
        "clean-correct set C is not clear: pass one clean run per model (with the runs of its attacks)"
    )


def model_outcomes(
    runs: ModelRuns,
    config: FusionAuditConfig,
) -> tuple[list[fm.ItemOutcome], dict[str, int], list[str], dict[str, list[int]]]:
    """The outcomes of every item of the model's C, the per-attack missing counts, all item ids seen and
    the restoring depths of each End-PGD flip that layer restoration was tried on."""
    source = clean_run(runs)
    clean = _samples([source], "fusion_clean") if source is not None else {}
    if not clean:
        raise HarnessError(
            f"{runs.name}: no fusion_clean samples in {', '.join(map(str, runs.folders))} "
            "(run harness eval --tasks fusion or harness attack first)"
        )
    c_items = [i for i, r in clean.items() if r.error is None and r.metrics.get(fm.CORRECT) == 1.0]
    flips: dict[str, dict[str, bool]] = {i: {} for i in c_items}
    read: dict[str, dict[str, bool]] = {i: {} for i in c_items}
    use: dict[str, dict[str, bool]] = {i: {} for i in c_items}
    for attack, (task, read_task, variant) in VARIANT_TASKS.items():
        answered, reading = _samples(runs.folders, task), _samples(runs.folders, read_task)
        for i in c_items:
            rec = answered.get(i)
            destroyed = (
                attack == fm.NAT_EVID
                and config.natevid_preserved_only
                and rec is not None
                and FusionRow.read(rec.doc, "natevid_status", None) == "destroyed"
            )
            if rec is not None and rec.error is None and fm.CORRECT in rec.metrics and not destroyed:
                flips[i][attack] = rec.metrics[fm.CORRECT] == 0.0
                use[i][variant] = rec.metrics.get(fm.USES_INJECTED) == 1.0
            r = reading.get(i)
            if r is not None and r.error is None and fm.READS_INJECTED in r.metrics:
                read[i][variant] = r.metrics[fm.READS_INJECTED] == 1.0
    for outcome in (o for folder in runs.folders for o in read_outcomes(folder)):
        if outcome.item in flips and outcome.error is None:
            flips[outcome.item][outcome.attack] = outcome.flipped
    oar: dict[str, dict[str, float | None]] = {"oar": {}, "oar_clean": {}}
    restored: dict[str, bool] = {}
    depths: dict[str, list[int]] = {}
    for row in (d for folder in runs.folders for d in read_diagnostics(folder)):
        if row.diagnostic in oar:
            oar[row.diagnostic][row.item] = None if row.value is None else float(row.value)
        elif row.value is not None:  # None: the flip did not reproduce, outside the restoration subset
            restored[row.item] = bool(row.value)
            depths[row.item] = list(row.depths)
    outcomes = [
        fm.ItemOutcome(
            item=i,
            flips=flips[i],
            read=read[i],
            use=use[i],
            oar=oar["oar"].get(i),
            oar_clean=oar["oar_clean"].get(i),
            restored=restored.get(i),
        )
        for i in c_items
    ]
    missing = {a: sum(a not in flips[i] for i in c_items) for a in fm.SUITE}
    return outcomes, missing, sorted(clean), {i: d for i, d in depths.items() if i in flips}


@dataclass
class FusionAuditResult:
    """The audit: its config, each model's figures with CIs, the per-level macro averages with CIs, and the
    rank agreement between End-PGD ASR and R+."""

    config: FusionAuditConfig
    models: dict[str, dict[str, Any]]
    levels: dict[str, dict[str, Any]]
    rank_agreement: dict[str, Any]


def run_fusion_audit(run_dirs: list[Path], config: FusionAuditConfig) -> FusionAuditResult:
    """FusionAudit's figures for every model found in ``run_dirs`` and for each fusion level, with paired
    bootstrap 95% CIs (module docstring)."""
    if config.delta_mode not in fm.DELTA_MODES:
        raise HarnessError(f"--delta-mode {config.delta_mode!r}: choose pathway or suite")
    if config.oar_mode not in fm.OAR_INCREASE_MODES:
        raise HarnessError(f"--oar-increase {config.oar_mode!r}: choose {' or '.join(fm.OAR_INCREASE_MODES)}")
    per_model: dict[str, dict[str, fm.ItemOutcome]] = {}
    universe: set[str] = set()
    report: dict[str, dict[str, Any]] = {}
    for name, runs in _models(run_dirs).items():
        outcomes, missing, seen, depths = model_outcomes(runs, config)
        per_model[name] = {o.item: o for o in outcomes}
        universe.update(seen)
        not_run = [a for a in fm.SUITE if outcomes and missing[a] == len(outcomes)]
        report[name] = {
            "model_type": runs.model_type,
            "fusion_level": fm.fusion_level(runs.model_type, config.level_overrides, model=name),
            "runs": [str(f) for f in runs.folders],
            "figures": _figures(outcomes, not_run, config),
            "missing": missing,
            "attacks_not_run": not_run,
            "n_items": len(seen),
            "restoration_by_depth": fm.restoration_by_depth(depths),
            "n_restoration": len(depths),
        }
    levels: dict[str, list[str]] = {}
    for name, row in report.items():
        levels.setdefault(row["fusion_level"], []).append(name)
    intervals = _bootstrap(per_model, sorted(universe), report, levels, config)
    for name, row in report.items():
        n_items = len(per_model[name])  # each model's figures rest on its own clean-correct set C
        row["intervals"] = {
            k: intervals[(name, k)].clipped(*fm.figure_range(k)).model_copy(update={"n": n_items}) for k in CI_FIGURES
        }
    level_report = {
        level: {
            "models": names,
            "macro": {k: fm.macro_average(report[m]["figures"][k] for m in names) for k in CI_FIGURES},
            "intervals": {k: intervals[(f"@{level}", k)].clipped(*fm.figure_range(k)) for k in CI_FIGURES},
        }
        for level, names in sorted(levels.items())
    }
    end_pgd = {m: r["figures"]["asr_end_pgd"] for m, r in report.items()}
    r_plus = {m: r["figures"]["r_plus"] for m, r in report.items()}
    agreement: dict[str, Any] = {**fm.rank_agreement(end_pgd, r_plus), **fm.rank_moves(end_pgd, r_plus)}
    return FusionAuditResult(config, report, level_report, agreement)


def _figures(outcomes: list[fm.ItemOutcome], not_run: list[str], config: FusionAuditConfig) -> dict[str, Any]:
    """A model's figures over its items; an attack that was not run has no ASR."""
    return {
        **fm.model_figures(outcomes, config.delta_mode, config.oar_mode),
        **{f"asr_{a}": None for a in not_run},
    }


def _bootstrap(
    per_model: dict[str, dict[str, fm.ItemOutcome]],
    universe: list[str],
    report: dict[str, dict[str, Any]],
    levels: dict[str, list[str]],
    config: FusionAuditConfig,
) -> dict[tuple[str, str], Interval]:
    """The paired bootstrap's interval of every :data:`CI_FIGURES` figure, per model and per level
    (``@LEVEL``: the macro average over the level's models), resampling items."""

    def statistic(sample: dict[str, list[fm.ItemOutcome]]) -> dict[tuple[str, str], float | None]:
        out: dict[tuple[str, str], float | None] = {}
        figures = {m: _figures(items, report[m]["attacks_not_run"], config) for m, items in sample.items()}
        for m, f in figures.items():
            out.update({(m, k): f[k] for k in CI_FIGURES})
        for level, names in levels.items():
            out.update({(f"@{level}", k): fm.macro_average(figures[m][k] for m in names) for k in CI_FIGURES})
        return out

    return fm.paired_bootstrap(per_model, universe, statistic, config.n_resamples, config.seed)


def write_fusion_audit(result: FusionAuditResult, out_dir: Path) -> Path:
    """``audit.json``, ``audit.csv`` (one row per model) and the plots."""
    from harness.protocols.fusion.plots import asr_bars, rug_oar_by_level

    out_dir.mkdir(parents=True, exist_ok=True)
    plots = [
        asr_bars(result.models, out_dir / "fusion_asr_rplus.png").name,
        rug_oar_by_level(result.levels, out_dir / "fusion_rug_oar_by_level.png").name,
    ]
    FusionAuditReport(
        config=FusionSettings.model_validate(asdict(result.config)),
        models=result.models,
        levels=result.levels,
        rank_agreement_end_pgd_vs_r_plus=result.rank_agreement,
        restoration_subset=RESTORATION_SUBSET,
        plots=plots,
    ).write(out_dir)
    figure_names = list(next(iter(result.models.values()))["figures"]) if result.models else []
    with (out_dir / "audit.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        header = ["model", "model_type", "fusion_level", *figure_names]
        header += [f"{k}_ci_{end}" for k in CI_FIGURES for end in ("low", "high")]
        header += ["interval"]
        writer.writerow(header)
        for name, row in result.models.items():
            ci = [v for k in CI_FIGURES for v in (row["intervals"][k].low, row["intervals"][k].high)]
            ci.append(_interval_label(row["intervals"].values()))
            writer.writerow(
                [name, row["model_type"], row["fusion_level"], *[row["figures"][k] for k in figure_names], *ci]
            )
    return out_dir


def _interval_label(intervals: Iterable[Interval]) -> str:
    """How a row's intervals were made (``95% CI, paired_bootstrap over 40 clean-correct items``), from the
    first defined one; why there is none otherwise."""
    found = list(intervals)
    defined = next((i for i in found if i.defined), None)
    return defined.label() if defined else (found[0].text() if found else "")
