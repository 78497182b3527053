"""``harness audit fusion --sweep``: FusionAudit's pixel-pathway sweeps as the paper runs them.

For each model (the model of each saved clean run, as in ``harness attack --clean-run``), on the
stability subset (the paper's 300 items: 100 per dataset; here the first ``items / n_sources`` items of
C per source, by item id), the pixel attacks are run at:
- the default PGD setting (``steps`` 40, ``eps`` 8/255) with each of the ``seeds`` (3): the stability
  run; per model and attack the sample SD (ddof 1) of ASR over seeds, and its median over models (the
  paper: median SD 1.3% for MANTIS);
- each of ``steps_grid`` (10 to 50) at seed 0 and the default eps (the paper: ASR saturates at 30-40
  steps; the gain of the last step count over the default is reported per level);
- each of ``eps_grid`` ({2, 4, 8}/255) at seed 0 and the default steps (the paper: the L1 < L2 < L3
  order holds at every eps; the levels' order is reported per eps).
The shared setting (seed 0, default steps and eps) is run once. Level figures are unweighted macro
averages over the level's models (:func:`harness.protocols.fusion.metrics.macro_average`). Each setting's
attack folder lands under ``<output>/<model>/<setting>/``; ``sweep.json`` and the plots beside them.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.protocols.fusion import metrics as fm
from harness.protocols.fusion.attack_outcomes import AttackName
from harness.protocols.fusion.attacks.pgd import PGDConfig
from harness.protocols.fusion.attacks.run import ATTACKS, AttackOptions, CleanItem
from harness.protocols.fusion.rows import FusionRow

PAPER_SEEDS = (0, 1, 2)
PAPER_STEPS = (10, 20, 30, 40, 50)
PAPER_EPS = (2 / 255, 4 / 255, 8 / 255)
PAPER_ITEMS = 300


@dataclass(frozen=True)
class SweepConfig:
    """The sweep's grid (module docstring), the attacks and the default PGD setting the grids vary."""

    items: int = PAPER_ITEMS
    seeds: tuple[int, ...] = PAPER_SEEDS
    steps_grid: tuple[int, ...] = PAPER_STEPS
    eps_grid: tuple[float, ...] = PAPER_EPS
    attacks: tuple[AttackName, ...] = ATTACKS
    pgd: PGDConfig = field(default_factory=PGDConfig)
    batch_size: int = 4

    def settings(self) -> list[tuple[int, int, float]]:
        """Every distinct (seed, steps, eps) the sweep runs, the shared default setting once."""
        first = self.seeds[0]
        grid = [(s, self.pgd.steps, self.pgd.eps) for s in self.seeds]
        grid += [(first, k, self.pgd.eps) for k in self.steps_grid]
        grid += [(first, self.pgd.steps, e) for e in self.eps_grid]
        return list(dict.fromkeys(grid))


def check_sweep(config: SweepConfig) -> None:
    """One line for a grid that cannot run."""
    if config.items < 1 or not config.seeds or not config.steps_grid or not config.eps_grid:
        raise HarnessError("--sweep needs --sweep-items >= 1 and non-empty seed, steps and eps lists")
    if min(config.steps_grid) < 0 or min(config.eps_grid) <= 0:
        raise HarnessError("--sweep needs steps >= 0 and eps > 0")


def stability_subset(items: list[CleanItem], n: int) -> list[CleanItem]:
    """The first ``n / n_sources`` items of C per source, by item id (the paper's 100 per dataset)."""
    sources = sorted({str(FusionRow.read(it.doc, "source", "")) for it in items})
    per_source = max(1, n // max(1, len(sources)))
    ordered = sorted(items, key=lambda it: it.item)
    return [
        it for s in sources for it in [i for i in ordered if str(FusionRow.read(i.doc, "source", "")) == s][:per_source]
    ]


def setting_name(seed: int, steps: int, eps: float) -> str:
    """The folder of one setting: ``seed0_steps40_eps8``, eps in 1/255 units."""
    return f"seed{seed}_steps{steps}_eps{round(eps * 255, 3):g}"


def setting_options(config: SweepConfig, seed: int, steps: int, eps: float) -> AttackOptions:
    """The attack options of one setting: no diagnostics, progress bars off."""
    return AttackOptions(
        attacks=config.attacks,
        pgd=replace(config.pgd, steps=steps, eps=eps),
        seed=seed,
        batch_size=config.batch_size,
        diagnostics=(),
        show_progress=False,
    )


def run_sweep(
    run_dirs: list[Path],
    config: SweepConfig,
    overrides: dict[str, str],
    data_dir: Path | None,
    include_paths: list[str],
    out_dir: Path,
) -> dict[str, Any]:
    """Every setting of the grid on each run's model and stability subset; the sweep's figures."""
    from harness.models.base import create_backend
    from harness.protocols.fusion.attacks.losses import white_box
    from harness.protocols.fusion.attacks.run import clean_correct_items, run_attacks
    from harness.results.schema import read_run

    check_sweep(config)
    asr: dict[str, dict[tuple[int, int, float], dict[str, float | None]]] = {}
    levels: dict[str, str] = {}
    for run_dir in run_dirs:
        run = read_run(run_dir)
        spec = run.config.model
        loaded = create_backend(spec, run.config.model_args)
        backend = white_box(loaded, spec)
        items, params = clean_correct_items(run_dir, "fusion_clean", data_dir, include_paths, loaded.model_family)
        subset = stability_subset(items, config.items)
        levels[spec] = fm.fusion_level(run.provenance.model.model_type, overrides, model=spec)
        asr[spec] = {}
        for setting in config.settings():
            folder = out_dir / spec.replace(":", "__").replace("/", "__") / setting_name(*setting)
            summary = run_attacks(backend, folder, subset, params, setting_options(config, *setting))
            asr[spec][setting] = dict(summary.asr)
    return sweep_figures(asr, levels, config)


def sweep_figures(
    asr: dict[str, dict[tuple[int, int, float], dict[str, float | None]]], levels: dict[str, str], config: SweepConfig
) -> dict[str, Any]:
    """The sweep's figures from each model's ASR per setting and attack (module docstring)."""
    first, steps, eps = config.seeds[0], config.pgd.steps, config.pgd.eps
    by_level: dict[str, list[str]] = {}
    for model, level in levels.items():
        by_level.setdefault(level, []).append(model)

    def macro(setting: tuple[int, int, float], attack: str) -> dict[str, float | None]:
        return {
            lv: fm.macro_average(asr[m][setting].get(attack) for m in names) for lv, names in sorted(by_level.items())
        }

    stability: dict[str, Any] = {}
    for attack in config.attacks:
        sds = {}
        for model in asr:
            values = [asr[model][(s, steps, eps)].get(attack) for s in config.seeds]
            present = [v for v in values if v is not None]
            sds[model] = statistics.stdev(present) if len(present) >= 2 else None
        defined = [v for v in sds.values() if v is not None]
        stability[attack] = {"sd_per_model": sds, "median_sd": statistics.median(defined) if defined else None}
    steps_rows = {
        attack: {str(k): macro((first, k, eps), attack) for k in config.steps_grid} for attack in config.attacks
    }
    last = max(config.steps_grid)
    gain: dict[str, dict[str, float | None]] = {}
    for attack in config.attacks:
        base = macro((first, steps, eps), attack)
        top = steps_rows[attack][str(last)]
        gain[attack] = {
            lv: t - b if (t := top[lv]) is not None and (b := base[lv]) is not None else None for lv in sorted(by_level)
        }
    eps_rows = {
        attack: {f"{round(e * 255, 3):g}/255": macro((first, steps, e), attack) for e in config.eps_grid}
        for attack in config.attacks
    }
    order = {
        attack: {
            key: [lv for lv, _ in sorted(((lv, v) for lv, v in row.items() if v is not None), key=lambda p: p[1])]
            for key, row in rows.items()
        }
        for attack, rows in eps_rows.items()
    }
    per_model = {m: {setting_name(*s): a for s, a in settings.items()} for m, settings in asr.items()}
    return {
        "config": {**asdict(config), "settings": [setting_name(*s) for s in config.settings()]},
        "levels": levels,
        "asr": per_model,
        "stability": stability,
        "steps": steps_rows,
        f"gain_steps_{last}_vs_{steps}": gain,
        "eps": eps_rows,
        "level_order_by_eps": order,
    }


def write_sweep(figures: dict[str, Any], out_dir: Path) -> Path:
    """``sweep.json`` and the sweep's plots in ``out_dir``."""
    from harness.protocols.fusion.plots import sweep_plot

    out_dir.mkdir(parents=True, exist_ok=True)
    figures["plots"] = [
        sweep_plot(figures["steps"], "PGD steps", out_dir / "fusion_sweep_steps.png").name,
        sweep_plot(figures["eps"], "eps", out_dir / "fusion_sweep_eps.png").name,
    ]
    (out_dir / "sweep.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return out_dir / "sweep.json"
