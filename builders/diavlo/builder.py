"""``harness build diavlo``: SHOULD-KNOW behaviour specifications over four VQA sources.

Steps: read each source in its released format (``sources``), take ``per_source`` pairs per source
(sorted by question id, then ``random.Random(seed).sample``), propose candidate triplets with boxes
(``scene_graph``: annotations, else detector + VLM relations; the most relevant ``max_candidates``
kept), and either export Label Studio curation tasks (``curation_out``) or import curated exports
(``curated``) to fix each pair's SK. Without ``curated`` the SK is the uncurated candidate set,
marked so. One split per source.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builders.diavlo.curation import CurationResult, export_tasks, import_curated
from builders.diavlo.scene_graph import AnnotationSource, ChainedSource, DetectorSource, rank_candidates
from builders.diavlo.sources import SOURCES, Pair, parse_sources, read_source
from builders.options import option
from builders.publish import write_hub_folder
from harness.errors import HarnessError
from harness.paths import default_store_path
from harness.protocols.diavlo.rows import CurationChange, DiavloRow, SkTriplet

REPO_ID = "vlm-audit/diavlo"
LICENSES = {
    "llava_bench": "LLaVA-Bench (In-the-Wild): questions and GPT-4 answers under CC BY-NC 4.0 (LLaVA data; use also "
    "under OpenAI's terms); images keep their own web licenses",
    "mmbench": "MMBench (OpenCompass): Apache-2.0; images keep their original sources' licenses",
    "seed_bench2": "SEED-Bench-2: CC BY-NC 4.0 (non-commercial use only)",
    "vqav2": "VQA v2: annotations CC BY 4.0; COCO images under their Flickr licenses (COCO terms of use)",
}


def _select(pairs: list[Pair], n: int | None, seed: int) -> list[Pair]:
    ordered = sorted(pairs, key=lambda p: (len(p.question_id), p.question_id))
    if n is None or n >= len(ordered):
        return ordered
    chosen = random.Random(seed).sample(range(len(ordered)), n)
    return [ordered[i] for i in sorted(chosen)]


def _scene_graph_source(scene_graphs: str | None, detector: str | None, relation_model: str | None) -> ChainedSource:
    annotations = AnnotationSource(scene_graphs) if scene_graphs else None
    detector_source = None
    if detector or relation_model:
        if not (detector and relation_model):
            raise HarnessError(
                "the detector source needs both --detector (e.g. tiny:owlv2) and --relation-model (e.g. tiny:qwen2_vl)"
            )
        from harness.engine.store import ResponseStore
        from harness.models.base import create_backend
        from harness.protocols.diavlo.detector import OpenVocabDetector

        detector_source = DetectorSource(
            OpenVocabDetector(detector),
            create_backend(relation_model),
            relation_model,
            ResponseStore(default_store_path()),
        )
    if annotations is None and detector_source is None:
        raise HarnessError("no scene-graph source: pass --scene-graphs FILE and/or --detector with --relation-model")
    return ChainedSource(annotations, detector_source)


def _sk_record(triplet: dict[str, Any], status: str, curated_by: str) -> SkTriplet:
    return SkTriplet(
        subject=triplet["subject"],
        relation=triplet["relation"],
        object=triplet["object"],
        subject_box=[float(v) for v in triplet.get("subject_box", [])],
        object_box=[float(v) for v in triplet.get("object_box", [])],
        origin=triplet.get("origin", ""),
        status=triplet.get("status", status),
        curated_by=triplet.get("curated_by", curated_by),
    )


def _origin_text(origins: dict[str, int], graph: ChainedSource) -> str:
    """Where each pair's candidates came from, and the relation proposals the detector source lost."""
    text = (
        f"{origins['annotation']} pairs from annotations, {origins['detector']} from the detector source, "
        f"{origins['none']} without candidates"
    )
    if graph.detector is not None:
        lost = graph.detector.vlm_losses
        text += f" (relation proposals lost: {lost['empty']} empty, {lost['unusable']} in no triplet format)"
    return text


@dataclass(frozen=True)
class Options:
    """What ``harness build diavlo`` takes (module docstring)."""

    sources: str = option(f"NAME=PATH,... with NAME in {', '.join(SOURCES)}", "")
    seed: int = option("pair selection seed", 0)
    per_source: int | None = option("pairs per source (default: all)")
    scene_graphs: str | None = option("scene-graph annotations (Visual Genome relationships.json)")
    detector: str | None = option("open-vocabulary detector, hf:ID_OR_FOLDER or tiny:owlv2")
    relation_model: str | None = option("VLM proposing triplets for the detector, e.g. hf:MODEL")
    max_candidates: int = option("candidate triplets kept per pair", 8)
    curation_out: str | None = option("write Label Studio verification/expansion tasks here")
    curated: tuple[str, ...] = option("Label Studio JSON export to import", ())
    demo: bool = option("build from small self-made sources and scene graphs", False)


def build(out: Path, options: Options) -> Path:
    """Build the SK dataset into ``out`` (module docstring); returns the dataset folder. ``demo``: from
    the self-made sources and scene graphs of :mod:`builders.diavlo.demo`."""
    if options.demo:
        return _build_demo(out, options)
    from harness.embeddings import MiniLMEncoder

    locations = parse_sources(options.sources)
    graph = _scene_graph_source(options.scene_graphs, options.detector, options.relation_model)
    encoder = MiniLMEncoder()
    curated = options.curated
    curation: CurationResult | None = import_curated([Path(p).expanduser() for p in curated]) if curated else None
    splits: dict[str, list[DiavloRow]] = {}
    to_export = []
    origins = {"annotation": 0, "detector": 0, "none": 0}
    for name in SOURCES:
        if name not in locations:
            continue
        rows: list[DiavloRow] = []
        for pair in _select(read_source(name, locations[name]), options.per_source, options.seed):
            image = pair.load_image()
            candidates = rank_candidates(pair, graph.candidates(pair, image), encoder, options.max_candidates)
            origins[candidates[0]["origin"].split(":")[0] if candidates else "none"] += 1
            to_export.append(_curation_task(pair, image, candidates))
            rows.append(_row(name, pair, image, candidates, curation))
        if not rows:
            raise HarnessError(f"{name}: no usable pair in {locations[name]}")
        splits[name] = rows
    if options.curation_out:
        export_tasks(to_export, Path(options.curation_out).expanduser())
    return _write(out, splits, curation.summary() if curation else None, options, _origin_text(origins, graph))


def _build_demo(out: Path, options: Options) -> Path:
    """Write the demo sources and scene graphs into a temporary folder and build from them."""
    from builders.demo import demo_folder
    from builders.diavlo.demo import sources_arg, write_sources

    with demo_folder("diavlo", sources=options.sources, scene_graphs=options.scene_graphs) as tmp:
        paths, graphs = write_sources(tmp)
        return build(out, replace(options, demo=False, sources=sources_arg(paths), scene_graphs=str(graphs)))


def _pair_id(pair: Pair) -> str:
    return f"{pair.source}-{pair.question_id}"


def _curation_task(pair: Pair, image: Any, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """One pair as a Label Studio verification/expansion task (``curation_out``)."""
    return {
        "pair_id": _pair_id(pair),
        "question": pair.question,
        "answer": pair.answer,
        "image": image,
        "candidates": candidates,
    }


def _row(
    name: str, pair: Pair, image: Any, candidates: list[dict[str, Any]], curation: CurationResult | None
) -> DiavloRow:
    """One pair's dataset row: its SK from the curated export when it has one, else its ranked candidates."""
    pair_id = _pair_id(pair)
    if curation is not None and pair_id in curation.sk:
        sk = [_sk_record(t, "verified", "") for t in curation.sk[pair_id]]
        changes = [CurationChange(**c) for c in curation.changes[pair_id]]
        status = "curated"
    else:
        sk, changes = [_sk_record(c, "candidate", "") for c in candidates], []
        status = "uncurated"
    return DiavloRow(
        id=pair_id,
        source=name,
        question_id=pair.question_id,
        question=pair.question,
        options=list(pair.options),
        answer=pair.answer,
        answers=list(pair.answers),
        answer_type=pair.answer_type,
        category=pair.category,
        image=image,
        image_key=pair.image_key,
        sk_triplets=sk,
        curation_status=status,
        curation_changes=changes,
    )


def _write(
    out: Path,
    splits: dict[str, list[DiavloRow]],
    summary: dict[str, Any] | None,
    options: Options,
    candidate_origins: str,
) -> Path:
    """The splits as a Hub folder with its card, the sources' licenses and the curation summary."""
    from datasets import Dataset, DatasetDict

    features = DiavloRow.features()
    dataset = DatasetDict(
        {name: Dataset.from_list([r.to_dict() for r in rows], features=features) for name, rows in splits.items()}
    )
    split_licenses = "\n".join(f"- `{n}`: {LICENSES[n]}" for n in splits)
    card_vars = {
        "sizes": ", ".join(f"{n}: {len(r)}" for n, r in splits.items()),
        "licenses": split_licenses,
        "curation": json.dumps(summary) if summary else "not curated yet (SK = ranked candidates)",
        "nc_note": (
            "This build includes SEED-Bench-2, licensed CC BY-NC 4.0: the dataset may be used for "
            "non-commercial purposes only."
            if "seed_bench2" in splits
            else ""
        ),
        "seed": options.seed,
        "max_candidates": options.max_candidates,
        "sources_of_candidates": candidate_origins,
    }
    licenses = "# Licenses of the DiaVLo splits\n\n" + split_licenses + "\n"
    folder = write_hub_folder(dataset, out, "diavlo", card_vars, {"LICENSE-SOURCES.md": licenses.encode()})
    if summary is not None:
        (folder / "curation_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return folder
