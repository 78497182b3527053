"""Pluggable scene-graph sources: candidate SK triplets with boxes for one image-question pair.

- :class:`AnnotationSource` reads existing annotations in Visual Genome's ``relationships.json``
  format ([{image_id, relationships: [{predicate, subject: {name | names, x, y, w, h}, object: ...}]}]);
  an ``image_data.json`` beside it ([{image_id, coco_id}]) lets COCO ids (VQA v2) find VG graphs.
  A pair finds its graph by its ``image_key``.
- :class:`DetectorSource` asks a VLM (any harness backend, answers cached in the response store) for
  (subject, relation, object) triplets relevant to the question and grounds every subject and object
  with an open-vocabulary detector; a concept the detector does not find keeps an empty box.
- :class:`ChainedSource` uses annotations where the pair has them, else the detector source.

Candidates are ranked by cosine similarity of the triplet sentence to "question answer" and the
``max_candidates`` most relevant are kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders.diavlo.sources import Pair, read_json
from harness.engine.requests import make_request
from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.models.base import Backend, GenerationParams
from harness.models.messages import ChatMessage
from harness.protocols.diavlo.detector import OpenVocabDetector
from harness.protocols.diavlo.triplet_parser import parse_triplets

RELATION_PROMPT = (
    "Question about this image: {question}\n"
    "List the objects and relations in the image that matter for answering it, one "
    "(subject, relation, object) triplet per line."
)


def _candidate(
    subject: str, relation: str, obj: str, subject_box: list[float], object_box: list[float], origin: str
) -> dict[str, Any]:
    return {
        "subject": subject,
        "relation": relation,
        "object": obj,
        "subject_box": subject_box,
        "object_box": object_box,
        "origin": origin,
    }


def _vg_box(node: dict[str, Any]) -> list[float]:
    if not all(k in node for k in ("x", "y", "w", "h")):
        return []
    return [float(node["x"]), float(node["y"]), float(node["x"] + node["w"]), float(node["y"] + node["h"])]


def _vg_name(node: dict[str, Any]) -> str:
    names = node.get("names") or [node.get("name", "")]
    return str(names[0]).strip()


class AnnotationSource:
    """Candidate triplets from Visual Genome scene-graph annotations
    (relationships.json; COCO ids map through image_data.json when it sits beside it)."""

    name = "annotation"

    def __init__(self, relationships: str) -> None:
        path = Path(relationships).expanduser()
        graphs = read_json(path, "--scene-graphs", "Visual Genome's relationships.json format")
        aliases: dict[str, str] = {}
        image_data = path.parent / "image_data.json"
        if image_data.is_file():
            for row in json.loads(image_data.read_text(encoding="utf-8")):
                if row.get("coco_id") is not None:
                    aliases[str(row["coco_id"])] = str(row["image_id"])
        self.graphs = {str(g["image_id"]): g.get("relationships", []) for g in graphs}
        self.aliases = aliases
        self.origin = f"annotation:{path.name}"

    def candidates(self, pair: Pair, image: Any) -> list[dict[str, Any]]:
        """The annotated relationships of the pair's image as candidates (none when it has no graph)."""
        key = pair.image_key if pair.image_key in self.graphs else self.aliases.get(pair.image_key, "")
        out = []
        for rel in self.graphs.get(key, []):
            subject, obj = _vg_name(rel["subject"]), _vg_name(rel["object"])
            if subject and obj and rel.get("predicate"):
                out.append(
                    _candidate(
                        subject,
                        str(rel["predicate"]).strip().lower(),
                        obj,
                        _vg_box(rel["subject"]),
                        _vg_box(rel["object"]),
                        self.origin,
                    )
                )
        return out


class DetectorSource:
    """Candidate triplets for images without annotations: a VLM names the relations, an
    open-vocabulary detector boxes their subjects and objects."""

    name = "detector"

    def __init__(
        self, detector: OpenVocabDetector, vlm: Backend, vlm_spec: str, store: ResponseStore, max_new_tokens: int = 128
    ) -> None:
        self.detector, self.vlm, self.store = detector, vlm, store
        self.params = GenerationParams(max_new_tokens=max_new_tokens)
        self.origin = f"detector:{detector.spec}+relations:{vlm_spec}"
        self.vlm_losses = {"empty": 0, "unusable": 0}

    def _relations(self, pair: Pair, image: Any) -> str:
        from harness.engine.generation import answer_requests

        messages = [ChatMessage.user(RELATION_PROMPT.format(question=pair.question), [image])]
        request = make_request(messages, self.params)
        responses, errors = answer_requests(self.vlm, [request], self.store)
        if request.key in errors:
            raise HarnessError(f"relation proposals for {pair.source} {pair.question_id}: {errors[request.key]}")
        return responses[request.key][0]

    def candidates(self, pair: Pair, image: Any) -> list[dict[str, Any]]:
        """The VLM's triplets for the pair's image with the detector's boxes (an empty box where it
        finds no such object); empty or unusable VLM answers are counted in ``vlm_losses``."""
        parsed = parse_triplets(self._relations(pair, image))
        if parsed.status in self.vlm_losses:
            self.vlm_losses[parsed.status] += 1
        concepts = [c for t in parsed.triplets for c in (t.subject, t.object)]
        boxes = self.detector.detect(image, concepts)

        def box(concept: str) -> list[float]:
            return list(boxes[concept].box) if concept in boxes else []

        return [
            _candidate(t.subject, t.relation, t.object, box(t.subject), box(t.object), self.origin)
            for t in parsed.triplets
        ]


class ChainedSource:
    """Annotations where a pair has them, else the detector source (when one is configured)."""

    name = "chained"

    def __init__(self, annotations: AnnotationSource | None, detector: DetectorSource | None) -> None:
        self.annotations, self.detector = annotations, detector

    def candidates(self, pair: Pair, image: Any) -> list[dict[str, Any]]:
        """The annotated candidates, or the detector's when there are none."""
        found = self.annotations.candidates(pair, image) if self.annotations else []
        if not found and self.detector is not None:
            found = self.detector.candidates(pair, image)
        return found


def rank_candidates(pair: Pair, candidates: list[dict[str, Any]], encoder: Any, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` candidates closest to "question answer" (duplicates dropped, order by relevance)."""
    unique = list({(c["subject"], c["relation"], c["object"]): c for c in candidates}.values())
    if not unique:
        return []
    query = encoder.vector(f"{pair.question} {pair.answer}")
    scored = [
        (float(encoder.vector(f"{c['subject']} {c['relation']} {c['object']}") @ query), k, c)
        for k, c in enumerate(unique)
    ]
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [{**c, "relevance": round(score, 4)} for score, _, c in scored[:limit]]
