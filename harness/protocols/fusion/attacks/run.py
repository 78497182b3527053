"""``harness attack``: the pixel attacks of FusionAudit on the clean-correct items of a model.

Flow: the clean task is run (or a saved clean run is read); its items judged correct by J form the
clean-correct set C; each requested attack runs batched PGD on C; every adversarial image is
quantised to uint8, saved, and re-answered through the real processor and ``generate``; a flip counts
only when J judges that answer wrong. Optional diagnostics: OAR on the Typo-Evid images of C (and, for
the same region, on their clean images) and layer restoration on End-PGD flips. Everything lands in the run folder:
``attacks/<attack>/<item>.png``, ``attack_outcomes.jsonl``, ``diagnostics.jsonl`` and ``attack.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from harness.engine.distributed import ReplicaPool, map_shards
from harness.engine.requests import make_request
from harness.errors import HarnessError
from harness.hashing import derive_seed, stable_hash
from harness.models.base import GenerationParams, WhiteBoxBackend
from harness.models.messages import ChatMessage, ImagePart
from harness.protocols.fusion import metrics as fm
from harness.protocols.fusion.attack_outcomes import (
    AttackName,
    AttackOutcome,
    AttackSummary,
    Diagnostic,
    DiagnosticName,
    write_attack,
)
from harness.protocols.fusion.attacks.diagnostics import (
    RESTORATION_ITEMS,
    layer_restoration,
    overlay_attention_ratio,
)
from harness.protocols.fusion.attacks.losses import WhiteBox, white_box
from harness.protocols.fusion.attacks.pgd import PGDConfig, pgd
from harness.protocols.fusion.attacks.pixels import image_to_tensor, tensor_to_image
from harness.protocols.fusion.judge import judge
from harness.protocols.fusion.metrics import CORRECT
from harness.protocols.fusion.rows import FusionRow
from harness.results.interval import Interval
from harness.results.schema import ModelInfo

Name = TypeVar("Name", bound=str)
ATTACKS: tuple[AttackName, ...] = ("vis_pgd", "end_pgd", "mantis")
DIAGNOSTICS: tuple[DiagnosticName, ...] = ("oar", "restoration")


@dataclass(frozen=True)
class AttackOptions:
    """What ``harness attack`` runs: the attacks, their PGD settings, the seed and batch size, the diagnostics,
    and the clean task whose saved run supplies the items."""

    attacks: tuple[AttackName, ...] = ATTACKS
    pgd: PGDConfig = field(default_factory=PGDConfig)
    seed: int = 0
    batch_size: int = 4
    diagnostics: tuple[DiagnosticName, ...] = DIAGNOSTICS
    task: str = "fusion_clean"
    show_progress: bool = True
    restoration_items: int = RESTORATION_ITEMS


@dataclass
class CleanItem:
    """One item the model answered correctly in the clean run: its document, the messages, the clean image and
    the clean answer."""

    item: str
    doc: dict[str, Any]
    messages: list[ChatMessage]
    image: Any
    response: str


def parse_fraction(text: str) -> float:
    """``8/255`` or ``0.03`` as a float."""
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            return float(num) / float(den)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise HarnessError(f"expected a number or a fraction like 8/255, got {text!r}") from None


def parse_list(text: str, known: tuple[Name, ...], what: str) -> tuple[Name, ...]:
    """Comma-separated names, each one of ``known`` (so typed as those names)."""
    items = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [t for t in items if t not in known]
    if unknown or not items:
        raise HarnessError(f"{what}: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}")
    return tuple(next(k for k in known if k == t) for t in items)


def _replace_image(messages: list[ChatMessage], image: Any) -> list[ChatMessage]:
    """The messages with every image replaced by ``image`` (the attacked one)."""
    return [
        replace(m, content=tuple(ImagePart(image) if isinstance(p, ImagePart) else p for p in m.content))
        for m in messages
    ]


def _first_image(messages: list[ChatMessage]) -> Any:
    for m in messages:
        if m.images:
            return m.images[0]
    raise HarnessError("the attacked task's prompt has no image")


def clean_correct_items(
    run_dir: Path, task: str, data_dir: Path | None, include_paths: list[str], family: str | None
) -> tuple[list[CleanItem], GenerationParams]:
    """C from a saved clean run, with each item's doc, prompt and clean answer, and the generation settings
    the run recorded for the task (its ``--gen-kwargs`` and model defaults included), used again for the
    re-check."""
    from harness.engine.tasks import open_task
    from harness.results.schema import read_run, read_samples

    path = run_dir / f"samples_{task}.jsonl"
    if not path.is_file():
        raise HarnessError(f"{run_dir}: no samples of task {task} (run it with harness eval, or drop --clean-run)")
    opened = open_task(task, family, data_dir, include_paths)
    prompts, docs = opened.prompts, opened.docs
    items = []
    for record in read_samples(run_dir, task):
        if record.error is not None or record.metrics.get(CORRECT) != 1.0:
            continue
        doc = docs[record.doc_id]
        messages = prompts.build_messages(doc)
        items.append(
            CleanItem(str(FusionRow.read(doc, "id")), doc, messages, _first_image(messages), record.responses[0])
        )
    recorded = read_run(run_dir).provenance.generation.get(task)
    if recorded is None:
        raise HarnessError(f"{run_dir}: the run records no generation settings for task {task}")
    return items, recorded.params


def run_attacks(
    backend: WhiteBoxBackend,
    run_dir: Path,
    items: list[CleanItem],
    params: GenerationParams,
    opts: AttackOptions,
    pool: ReplicaPool | None = None,
) -> AttackSummary:
    """Attack C, re-check every adversarial image, run the diagnostics, write everything to ``run_dir``.
    With ``pool`` (replicas on Ray holding :func:`white_box_replica`), the attack batches run on them."""
    wb = WhiteBox(backend)
    outcomes: list[AttackOutcome] = []
    timings: dict[str, float] = {}
    for attack in opts.attacks:
        started = time.time()
        folder = run_dir / "attacks" / attack
        folder.mkdir(parents=True, exist_ok=True)
        batches = [items[i : i + opts.batch_size] for i in range(0, len(items), opts.batch_size)]
        work = partial(_attack_shard, attack, params, opts)
        for done in tqdm(
            map_shards(work, batches, wb, folder, pool),
            total=len(batches),
            desc=attack,
            unit="batch",
            disable=not opts.show_progress or not batches,
        ):
            outcomes.extend(done)
        timings[attack] = round(time.time() - started, 3)
    diagnostics = _diagnostics(wb, items, outcomes, params, opts, run_dir)
    summary = AttackSummary(
        task=opts.task,
        attacks=list(opts.attacks),
        pgd=asdict(opts.pgd),
        seed=opts.seed,
        batch_size=opts.batch_size,
        diagnostics=list(opts.diagnostics),
        n_clean_correct=len(items),
        model=ModelInfo.model_validate(backend.info()),
        time_s=timings,
        items_per_minute={a: round(60 * len(items) / t, 2) if t and items else None for a, t in timings.items()},
        asr={
            a: (sum(o.flipped for o in outcomes if o.attack == a) / len(items)) if items else None for a in opts.attacks
        },
        asr_intervals=asr_intervals(items, outcomes, opts.attacks, opts.seed),
        errors=sum(o.error is not None for o in outcomes),
    )
    write_attack(run_dir, outcomes, diagnostics, summary)
    return summary


def asr_intervals(
    items: list[CleanItem], outcomes: list[AttackOutcome], attacks: Sequence[str], seed: int
) -> dict[str, Interval]:
    """Each attack's ASR interval over the clean-correct items, as the audit makes it (``fm.paired_bootstrap``
    with this one model): an item with every attack's outcome on it is one unit."""
    flipped = {(o.item, o.attack) for o in outcomes if o.flipped}
    per_item = {i.item: fm.ItemOutcome(i.item, flips={a: (i.item, a) in flipped for a in attacks}) for i in items}
    intervals = fm.paired_bootstrap(
        {"model": per_item}, sorted(per_item), lambda s: {a: fm.asr(s["model"], a) for a in attacks}, seed=seed
    )
    return {a: interval.clipped(*fm.SHARE) for a, interval in intervals.items()}


def white_box_replica(spec: str, model_args: dict[str, str]) -> WhiteBox:
    """What a Ray replica of ``harness attack`` holds: the model of ``spec``, opened for white-box use."""
    from harness.models.base import create_backend

    return WhiteBox(white_box(create_backend(spec, model_args), spec))


def _attack_shard(
    attack: AttackName,
    params: GenerationParams,
    opts: AttackOptions,
    wb: WhiteBox,
    items: list[CleanItem],
    folder: Path,
) -> list[AttackOutcome]:
    import torch

    return _attack_batch(wb, attack, items, params, opts, folder, torch)


def _attack_batch(
    wb: WhiteBox,
    attack: AttackName,
    items: list[CleanItem],
    params: GenerationParams,
    opts: AttackOptions,
    folder: Path,
    torch: Any,
) -> list[AttackOutcome]:
    base = [AttackOutcome(item=it.item, attack=attack, clean_response=it.response) for it in items]
    try:
        batch = wb.batch(
            [it.messages for it in items],
            [it.response for it in items],
            [FusionRow.read(it.doc, "wrong_answer") for it in items],
        )
        x0 = [image_to_tensor(it.image).to(wb.device) for it in items]
        if attack == "vis_pgd":
            with torch.no_grad():
                clean = [f.detach() for f in wb.image_features(wb.pixel_inputs(x0), batch)]
            loss = wb.vis_loss(batch, clean)
        elif attack == "end_pgd":
            loss = wb.end_loss(batch)
        else:
            loss = wb.mantis_loss(batch)
        generator = torch.Generator().manual_seed(derive_seed(opts.seed, f"{attack}:{items[0].item}"))
        adversarial, first, last = pgd(x0, loss, opts.pgd, generator)
    except (HarnessError, RuntimeError) as exc:  # a bad item or out of memory: recorded, the run goes on
        hint = " (try --batch-size 1 or --noise-scale 0.5)" if "out of memory" in str(exc).lower() else ""
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}{hint}"
        return [b.model_copy(update={"error": error}) for b in base]
    images = [tensor_to_image(x) for x in adversarial]
    requests = []
    for it, image in zip(items, images, strict=True):
        messages = _replace_image(it.messages, image)
        key = stable_hash({"attack": attack, "item": it.item, "image": image, "params": params.as_dict()})
        requests.append(make_request(messages, params, 1, opts.seed, key=key))
    # One request per call: left padding in a batch could change a greedy answer by itself.
    answers = [wb.backend.generate([request])[0] for request in requests]
    out = []
    for k, (it, image, answer) in enumerate(zip(items, images, answers, strict=True)):
        name = f"{it.item}.png"
        image.save(folder / name)
        clean_u8 = image_to_tensor(it.image)
        row: dict[str, Any] = {
            "image": f"attacks/{attack}/{name}",
            "loss_start": first[k] if first else None,
            "loss_end": last[k] if last else None,
            "linf_uint8": round(float((image_to_tensor(image) - clean_u8).abs().max()) * 255),
        }
        if isinstance(answer, Exception):
            row["error"] = f"re-check failed: {type(answer).__name__}: {answer}"
        else:
            row["response"] = answer[0]
            row["flipped"] = not judge(FusionRow.read(it.doc, "source"), answer[0], FusionRow.read(it.doc, "answers"))
        out.append(base[k].model_copy(update=row))
    return out


def _judged_against(it: CleanItem) -> Callable[[str], bool]:
    """J on the item's references: whether an answer to ``it`` is correct."""
    return lambda text: judge(FusionRow.read(it.doc, "source"), text, FusionRow.read(it.doc, "answers"))


def _diagnostics(
    wb: WhiteBox,
    items: list[CleanItem],
    outcomes: list[AttackOutcome],
    params: GenerationParams,
    opts: AttackOptions,
    run_dir: Path,
) -> list[Diagnostic]:
    from PIL import Image

    rows: list[Diagnostic] = []
    if "oar" in opts.diagnostics:
        for it in tqdm(items, desc="oar", unit="item", disable=not opts.show_progress or not items):
            typo = FusionRow.read(it.doc, "typo_image", None)
            if typo is None or not FusionRow.read(it.doc, "typo_region", None):
                continue
            region = tuple(FusionRow.read(it.doc, "typo_region"))
            messages = _replace_image(it.messages, typo.convert("RGB"))
            value = overlay_attention_ratio(wb, messages, typo.size, region)
            rows.append(Diagnostic(item=it.item, diagnostic="oar", value=value))
            # the matched clean image (same size, same region): the baseline of the relative OAR increase
            clean = overlay_attention_ratio(wb, it.messages, typo.size, region)
            rows.append(Diagnostic(item=it.item, diagnostic="oar_clean", value=clean))
    if "restoration" in opts.diagnostics:
        by_item = {it.item: it for it in items}
        flips = sorted(
            (o for o in outcomes if o.attack == "end_pgd" and o.flipped and o.image is not None), key=lambda o: o.item
        )[: opts.restoration_items]
        for o in tqdm(flips, desc="restoration", unit="item", disable=not opts.show_progress or not flips):
            it = by_item[o.item]
            with Image.open(run_dir / str(o.image)) as im:
                adversarial = _replace_image(it.messages, im.convert("RGB"))
            restored, depths = layer_restoration(
                wb, it.messages, adversarial, params.max_new_tokens, _judged_against(it)
            )
            rows.append(Diagnostic(item=it.item, diagnostic="restoration", value=restored, depths=depths))
    return rows
