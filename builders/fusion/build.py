"""``harness build fusion``: the FusionAudit item set with its two rendered-text variants.

Selection: each source's rows are sorted by their source id and ``random.Random(seed).sample`` picks
``per_source`` of them (all, when fewer exist), so the three sources are balanced. MME is drawn per
category as the paper composed it (:data:`MME_COMPOSITION`, scaled to ``per_source``); a category with
too few items gives all it has, and the card and a stderr line say so. Each item gets its
deterministic wrong answer (:mod:`builders.fusion.wrong_answer`), its Typo-Evid image
(:mod:`builders.fusion.overlay`) and, unless ``--editor none``, its Nat-Evid image
(:mod:`builders.fusion.natevid`) with the OCR evidence-preservation check (:mod:`builders.fusion.ocr`).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from builders.fusion.natevid import Editor, EditorSpec, instruction
from builders.fusion.ocr import check_preservation, ocr_available
from builders.fusion.overlay import typo_overlay
from builders.fusion.sources import DEFAULT_SOURCES, open_row_image, read_source
from builders.fusion.wrong_answer import answer_kind, wrong_answer
from builders.options import option
from builders.publish import write_hub_folder
from harness.errors import HarnessError
from harness.protocols.fusion.rows import FusionRow

REPO_ID = "vlm-audit/fusion"
SOURCES = ("chartqa", "docvqa", "mme")


def select(rows: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows drawn with ``random.Random(seed)`` from rows sorted by source id (all when fewer)."""
    if len(rows) <= n:
        return list(rows)
    return sorted(random.Random(seed).sample(rows, n), key=lambda r: r["uid"])


#: The paper's MME part: 500 items, 460 of natural-image categories (400 artwork, 60 celebrity) and 40
#: code reasoning (``lmms-lab/MME`` category names).
MME_COMPOSITION = {"artwork": 400, "celebrity": 60, "code_reasoning": 40}


def parse_composition(text: str | None) -> dict[str, int] | None:
    """The MME composition to draw: ``CAT=COUNT,...``; unset: the paper's :data:`MME_COMPOSITION`;
    ``any``: None, a seeded draw over all categories as for the other sources."""
    if text is None:
        return dict(MME_COMPOSITION)
    if text == "any":
        return None
    out = {}
    for part in text.split(","):
        cat, sep, count = part.partition("=")
        if not sep or not cat.strip() or not count.strip().isdigit() or int(count) < 1:
            raise HarnessError(f"--mme-composition expects CAT=COUNT,... with counts >= 1 or 'any', got {text!r}")
        out[_category(cat)] = int(count)
    return out


def _category(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def quotas(composition: dict[str, int], total: int) -> dict[str, int]:
    """The composition scaled to ``total`` items by largest remainder (exact when ``total`` is its sum, so
    500 gives 400 / 60 / 40); ties go to the category listed first."""
    whole = sum(composition.values())
    shares = {c: n * total / whole for c, n in composition.items()}
    out = {c: int(v) for c, v in shares.items()}
    for c in sorted(shares, key=lambda c: out[c] - shares[c])[: total - sum(out.values())]:
        out[c] += 1
    return out


def select_mme(
    rows: list[dict[str, Any]], composition: dict[str, int], per_source: int, seed: int
) -> tuple[list[dict[str, Any]], str]:
    """Per category, :func:`select` of its quota (:func:`quotas`), and the card's line ``cat taken/wanted``;
    a category with too few items gives all it has, and one stderr line says so."""
    wanted = quotas(composition, per_source)
    chosen, taken = [], {}
    for cat, n in wanted.items():
        pool = [r for r in rows if _category(r["category"]) == cat]
        chosen.extend(select(pool, n, seed))
        taken[cat] = min(n, len(pool))
        if len(pool) < n:
            print(
                f"fusion: the MME source has {len(pool)} {cat} items, fewer than the {n} wanted; "
                "all are taken (the card records it)",
                file=sys.stderr,
            )
    line = ", ".join(f"{cat} {taken[cat]}/{n}" for cat, n in wanted.items())
    return sorted(chosen, key=lambda r: r["uid"]), line


@dataclass(frozen=True)
class Options:
    """What ``harness build fusion`` takes; each source defaults to its Hub id."""

    seed: int = option("selection seed", 0)
    per_source: int = option("items per source", 500)
    editor: str | None = option("Nat-Evid editor MODEL[,steps=20,...], tiny, or none")
    chartqa: str | None = option("chartqa source (Hub id, folder or JSON file)")
    docvqa: str | None = option("docvqa source (Hub id, folder or JSON file)")
    mme: str | None = option("mme source (Hub id, folder or JSON file)")
    mme_composition: str | None = option(
        "MME categories CAT=COUNT,... scaled to --per-source (default the paper's "
        "artwork=400,celebrity=60,code_reasoning=40), or any"
    )
    demo: bool = option("build from small self-made sources", False)
    answers_from: str | None = option(
        "with --demo: make MODEL's own clean answers the references, so that "
        "harness attack has a clean-correct set to attack (a check that the "
        "pipeline works, not a measurement)"
    )


#: The card's line on the references of a build from real sources.
SOURCE_REFERENCES = "the sources' own reference answers"


def build(out: Path, options: Options) -> Path:
    """Build the item set into ``out`` (sources default to their Hub ids; ``demo``: the self-made sources
    of :mod:`builders.fusion.demo`, with ``answers_from``: matched to that model, :mod:`builders.fusion.matched`)."""
    given = {"chartqa": options.chartqa, "docvqa": options.docvqa, "mme": options.mme}
    if options.demo:
        from builders.demo import demo_folder
        from builders.fusion.demo import write_sources

        with demo_folder("fusion", **given) as tmp:
            dataset, card_vars = _items(replace(options, demo=False, **write_sources(tmp)))
            if options.answers_from is None:
                return write_hub_folder(dataset, out, "fusion", card_vars)
            return _matched(dataset, out, card_vars, options.answers_from)
    if options.answers_from is not None:
        raise HarnessError(
            "--answers-from goes with --demo only: it replaces the references with a model's own answers"
        )
    dataset, card_vars = _items(options)
    return write_hub_folder(dataset, out, "fusion", card_vars)


def _matched(dataset: Any, out: Path, card_vars: dict[str, Any], spec: str) -> Path:
    """The build written once, answered by ``spec``, and written again with those answers as references."""
    from builders.fusion.matched import clean_answers, match_answers

    write_hub_folder(dataset, out, "fusion", card_vars)
    answers = clean_answers(out, spec)
    matched = dataset.map(lambda row, idx: match_answers(row, answers[idx]), with_indices=True)
    references = (
        f"`{spec}`'s own greedy answers on the clean images (--answers-from), every item scored as "
        "DocVQA (ANLS): a check that the attack and audit pipeline works, not a measurement"
    )
    return write_hub_folder(matched, out, "fusion", {**card_vars, "references": references})


def _items(options: Options) -> tuple[Any, dict[str, Any]]:
    """The selected items with their wrong answers and rendered variants, and the card's variables."""
    from datasets import Dataset, DatasetDict

    if options.per_source < 1:
        raise HarnessError(f"--per-source must be at least 1, got {options.per_source}")
    spec = EditorSpec.parse(options.editor)
    chosen, pools, mme_line = _choose(options)
    edit = Editor(spec) if spec is not None else None
    has_ocr = ocr_available()
    records: list[FusionRow] = []
    counters: dict[str, int] = {}
    for row in tqdm(chosen, desc="fusion items", unit="item"):
        k = counters[row["source"]] = counters.get(row["source"], -1) + 1
        records.append(_record(row, f"{row['source']}-{k:04d}", pools[row["source"]], edit))
    dataset = DatasetDict({"test": Dataset.from_list([r.to_dict() for r in records], features=FusionRow.features())})
    return dataset, _card_vars(records, options, mme_line, spec, has_ocr)


def _given(options: Options) -> dict[str, str]:
    """Each source's location: the option when set, else its Hub id."""
    given = {"chartqa": options.chartqa, "docvqa": options.docvqa, "mme": options.mme}
    return {kind: given[kind] or DEFAULT_SOURCES[kind] for kind in SOURCES}


def _choose(options: Options) -> tuple[list[dict[str, Any]], dict[str, list[str]], str]:
    """The selected rows of every source, each source's text answers (the wrong answers' pool), and the
    card's line on the MME composition."""
    composition = parse_composition(options.mme_composition)
    mme_line = "a seeded draw over all categories (--mme-composition any)"
    chosen: list[dict[str, Any]] = []
    pools: dict[str, list[str]] = {}
    for kind, location in _given(options).items():
        rows = read_source(kind, location)
        if not rows:
            raise HarnessError(f"{kind} source {location}: no items")
        pools[kind] = [a for r in rows for a in r["answers"] if answer_kind(kind, a) == "text"]
        if kind == "mme" and composition is not None:
            picked, mme_line = select_mme(rows, composition, options.per_source, options.seed)
            chosen.extend(picked)
        else:
            chosen.extend(select(rows, options.per_source, options.seed))
    return chosen, pools, mme_line


def _record(row: dict[str, Any], item_id: str, pool: list[str], edit: Editor | None) -> FusionRow:
    """One item: its wrong answer, Typo-Evid image and, with an editor, its checked Nat-Evid image."""
    image = open_row_image(row)
    wrong, kind, rule = wrong_answer(row["source"], row["answers"], row["question"], item_id, pool)
    typo, region, style = typo_overlay(image, wrong)
    record = FusionRow(
        id=item_id,
        source=row["source"],
        source_id=row["uid"],
        category=row["category"],
        question=row["question"],
        answers=row["answers"],
        answer_kind=kind,
        wrong_answer=wrong,
        wrong_rule=rule,
        image=image,
        typo_image=typo,
        typo_region=region,
        typo_style=style.to_json(),
        natevid_image=None,
        natevid_instruction="",
        natevid_status="not_built",
        natevid_ocr_recall=-1.0,
        natevid_wrong_readable=-1,
    )
    if edit is None:
        return record
    edited = edit.edit(image, wrong, row["source"])
    check = check_preservation(image, edited, wrong)
    return replace(
        record,
        natevid_image=edited,
        natevid_instruction=instruction(wrong, row["source"]),
        natevid_status=check.status,
        natevid_ocr_recall=-1.0 if check.recall is None else check.recall,
        natevid_wrong_readable=-1 if check.wrong_readable is None else int(check.wrong_readable),
    )


def _card_vars(
    records: list[FusionRow], options: Options, mme_line: str, spec: EditorSpec | None, has_ocr: bool
) -> dict[str, Any]:
    """The card's variables: counts per source and per Nat-Evid status, the sources, editor and OCR."""
    statuses = {
        st: sum(r.natevid_status == st for r in records)
        for st in ("preserved", "destroyed", "no_text", "skipped", "not_built")
    }
    return {
        "n_items": len(records),
        "seed": options.seed,
        "per_source": options.per_source,
        "mme_composition": mme_line,
        **{f"n_{kind}": sum(r.source == kind for r in records) for kind in SOURCES},
        **{f"src_{kind}": location for kind, location in _given(options).items()},
        "editor": spec.to_json() if spec else "none (no Nat-Evid images)",
        "ocr": "rapidocr-onnxruntime (bundled ONNX weights)" if has_ocr else "not installed: check skipped",
        **{f"n_{st}": n for st, n in statuses.items()},
        "references": SOURCE_REFERENCES,
    }
