"""The SK curation round trip in Label Studio's JSON formats.

Export (``export_tasks``) writes two Label Studio projects into a folder:

- ``verify_tasks.json`` + ``verify_config.xml``: one task per candidate triplet (is it correct and
  relevant to the image and question?), with the candidate's boxes as pre-annotations
  (``predictions``); the annotator picks correct / incorrect / irrelevant, may type a corrected
  triplet (``subject | relation | object``) and may move or redraw the subject / object boxes;
- ``expand_tasks.json`` + ``expand_config.xml``: one task per pair listing the candidates, where
  the annotator adds missing triplets (one ``subject | relation | object`` per line) and draws a
  ``concept`` box per new concept, naming it in the region's text field;
- ``images/<pair_id>.png``, referenced as ``<image_root>/<pair_id>.png`` (Label Studio local storage).

Import (``import_curated``) reads Label Studio's JSON export of either or both projects (a list of
tasks, each with its ``data`` and ``annotations``) and rebuilds each pair's SK from it; when a task
has several annotations the most recent one (``updated_at``, then ``created_at``) decides. Kept:
candidates marked correct (with any edits), candidates marked incorrect but given a corrected
triplet, and added triplets. Every difference from the candidate is logged with who made it
(``completed_by``: e-mail or user id) and when. Correction rate = reviewed candidates that were
rejected or edited (triplet or a box moved by more than ``box_tolerance`` pixels) / reviewed
candidates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builders.diavlo.sources import read_json
from harness.errors import HarnessError
from harness.protocols.diavlo.metrics import Triplet
from harness.protocols.diavlo.triplet_parser import parse_triplets

VERIFY_CONFIG = """<View>
  <Header value="$question"/>
  <Text name="answer" value="$answer"/>
  <Image name="image" value="$image"/>
  <RectangleLabels name="box" toName="image">
    <Label value="subject" background="#1f77b4"/>
    <Label value="object" background="#ff7f0e"/>
  </RectangleLabels>
  <Text name="triplet" value="$triplet"/>
  <Choices name="verdict" toName="image" choice="single" required="true">
    <Choice value="correct"/>
    <Choice value="incorrect"/>
    <Choice value="irrelevant"/>
  </Choices>
  <TextArea name="edit" toName="image" maxSubmissions="1"
            placeholder="corrected triplet: subject | relation | object"/>
</View>
"""
EXPAND_CONFIG = """<View>
  <Header value="$question"/>
  <Text name="answer" value="$answer"/>
  <Text name="existing" value="$existing"/>
  <Image name="image" value="$image"/>
  <RectangleLabels name="concept_box" toName="image">
    <Label value="concept" background="#2ca02c"/>
  </RectangleLabels>
  <TextArea name="concept_name" toName="image" perRegion="true" placeholder="concept name"/>
  <TextArea name="new_triplets" toName="image" placeholder="one per line: subject | relation | object"/>
</View>
"""


def _triplet_text(c: dict[str, Any]) -> str:
    return f"{c['subject']} | {c['relation']} | {c['object']}"


def _rect(box: list[float], label: str, from_name: str, width: int, height: int, region_id: str) -> dict[str, Any]:
    x0, y0, x1, y1 = box
    return {
        "id": region_id,
        "from_name": from_name,
        "to_name": "image",
        "type": "rectanglelabels",
        "original_width": width,
        "original_height": height,
        "image_rotation": 0,
        "value": {
            "x": 100 * x0 / width,
            "y": 100 * y0 / height,
            "width": 100 * (x1 - x0) / width,
            "height": 100 * (y1 - y0) / height,
            "rotation": 0,
            "rectanglelabels": [label],
        },
    }


def _box_from_rect(item: dict[str, Any]) -> list[float]:
    v, w, h = item["value"], item.get("original_width"), item.get("original_height")
    if not w or not h:
        raise HarnessError(f"region {item.get('id')}: no original_width/original_height to convert percent boxes")
    return [v["x"] * w / 100, v["y"] * h / 100, (v["x"] + v["width"]) * w / 100, (v["y"] + v["height"]) * h / 100]


def export_tasks(pairs: list[dict[str, Any]], out_dir: Path, image_root: str = "/data/local-files/?d=images") -> Path:
    """Write the verification and expansion projects for ``pairs`` (each: pair_id, question, answer,
    image (PIL), candidates) into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "images").mkdir(exist_ok=True)
    verify: list[dict[str, Any]] = []
    expand: list[dict[str, Any]] = []
    for pair in pairs:
        image = pair["image"]
        image.save(out_dir / "images" / f"{pair['pair_id']}.png")
        url = f"{image_root}/{pair['pair_id']}.png"
        width, height = image.size
        common = {"pair_id": pair["pair_id"], "image": url, "question": pair["question"], "answer": pair["answer"]}
        for k, cand in enumerate(pair["candidates"]):
            regions = [
                _rect(cand[f"{role}_box"], role, "box", width, height, f"{pair['pair_id']}-{k}-{role}")
                for role in ("subject", "object")
                if cand[f"{role}_box"]
            ]
            verify.append(
                {
                    "data": {
                        **common,
                        "kind": "verify",
                        "candidate": k,
                        "triplet": _triplet_text(cand),
                        "candidate_json": json.dumps(cand),
                    },
                    "predictions": [{"model_version": cand["origin"], "result": regions}],
                }
            )
        expand.append(
            {
                "data": {
                    **common,
                    "kind": "expand",
                    "existing": "\n".join(_triplet_text(c) for c in pair["candidates"]) or "(none)",
                }
            }
        )
    (out_dir / "verify_tasks.json").write_text(json.dumps(verify, indent=1) + "\n", encoding="utf-8")
    (out_dir / "expand_tasks.json").write_text(json.dumps(expand, indent=1) + "\n", encoding="utf-8")
    (out_dir / "verify_config.xml").write_text(VERIFY_CONFIG, encoding="utf-8")
    (out_dir / "expand_config.xml").write_text(EXPAND_CONFIG, encoding="utf-8")
    return out_dir


@dataclass
class CurationResult:
    """pair_id -> curated SK triplets, pair_id -> change log, and the round trip's counts."""

    sk: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    changes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reviewed: int = 0
    corrected: int = 0
    rejected: int = 0
    added: int = 0
    unreviewed: int = 0
    annotators: set[str] = field(default_factory=set)

    @property
    def correction_rate(self) -> float | None:
        """The share of reviewed pairs an annotator corrected; None before any review."""
        return self.corrected / self.reviewed if self.reviewed else None

    def summary(self) -> dict[str, Any]:
        """The round trip's counts, correction rate and annotators as plain JSON (the build's summary)."""
        return {
            "reviewed": self.reviewed,
            "corrected": self.corrected,
            "rejected": self.rejected,
            "added": self.added,
            "unreviewed": self.unreviewed,
            "correction_rate": self.correction_rate,
            "annotators": sorted(self.annotators),
        }


def _who(annotation: dict[str, Any]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or who.get("id"))
    return f"user:{who}" if who is not None else "unknown"


def _latest(task: dict[str, Any]) -> dict[str, Any] | None:
    done = [a for a in task.get("annotations", []) if not a.get("was_cancelled")]
    return max(done, key=lambda a: (a.get("updated_at") or "", a.get("created_at") or ""), default=None)


def _texts(result: list[dict[str, Any]], from_name: str) -> list[str]:
    return [t for r in result if r.get("from_name") == from_name for t in r["value"].get("text", [])]


def _moved(before: list[float], after: list[float], tolerance: float) -> bool:
    if not before or not after:
        return bool(before) != bool(after)
    return max(abs(a - b) for a, b in zip(before, after, strict=True)) > tolerance


def _read_export(path: Path) -> list[dict[str, Any]]:
    tasks = read_json(path, "--curated", "Label Studio's JSON export")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "data" in t for t in tasks):
        raise HarnessError(f"--curated {path}: expected Label Studio's JSON export (a list of tasks with data)")
    return tasks


def import_curated(paths: list[Path], box_tolerance: float = 2.0) -> CurationResult:
    """Rebuild SK from Label Studio exports (module docstring); verification first, then expansion."""
    tasks = [t for p in paths for t in _read_export(p)]
    result = CurationResult()
    for task in sorted(
        tasks,
        key=lambda t: (t["data"].get("kind") != "verify", t["data"].get("pair_id", ""), t["data"].get("candidate", -1)),
    ):
        data = task["data"]
        if data.get("kind") not in {"verify", "expand"} or "pair_id" not in data:
            raise HarnessError("a curated task lacks kind/pair_id: was it exported by harness build diavlo?")
        pair_id = data["pair_id"]
        result.sk.setdefault(pair_id, [])
        log = result.changes.setdefault(pair_id, [])
        annotation = _latest(task)
        if annotation is None:
            result.unreviewed += data["kind"] == "verify"
            continue
        who, when = _who(annotation), annotation.get("updated_at") or annotation.get("created_at") or ""
        result.annotators.add(who)
        items = annotation.get("result", [])
        if data["kind"] == "verify":
            _apply_verification(result, pair_id, data, items, who, when, box_tolerance)
        else:
            _apply_expansion(result, pair_id, items, who, when, log)
    return result


def _apply_verification(
    result: CurationResult,
    pair_id: str,
    data: dict[str, Any],
    items: list[dict[str, Any]],
    who: str,
    when: str,
    tolerance: float,
) -> None:
    """One reviewed candidate: its verdict, corrected triplet and moved boxes, each change logged."""
    cand = json.loads(data["candidate_json"])
    log = result.changes[pair_id]
    where = f"{pair_id} candidate {data['candidate']}"
    verdict = _verdict(items, where, who)
    result.reviewed += 1

    def note(what: str, before: Any, after: Any) -> None:
        log.append(
            {
                "candidate": data["candidate"],
                "annotator": who,
                "at": when,
                "field": what,
                "before": json.dumps(before),
                "after": json.dumps(after),
            }
        )

    curated = dict(cand)
    edited = _edited_triplet(items, where, who)
    if edited is not None and (edited.subject, edited.relation, edited.object) != (
        cand["subject"],
        cand["relation"],
        cand["object"],
    ):
        curated.update(edited.as_dict())
        note("triplet", _triplet_text(cand), _triplet_text(curated))
    for role, box in _drawn_boxes(items).items():
        if _moved(cand[f"{role}_box"], box, tolerance):
            curated[f"{role}_box"] = [round(v, 2) for v in box]
            note(f"{role}_box", cand[f"{role}_box"], curated[f"{role}_box"])
    keep = verdict == "correct" or (verdict == "incorrect" and edited is not None)
    if verdict != "correct":
        note("verdict", "candidate", verdict)
    changed = verdict != "correct" or curated != cand
    result.corrected += changed
    if not keep:
        result.rejected += 1
        return
    status = "corrected" if changed else "verified"
    result.sk[pair_id].append({**curated, "status": status, "curated_by": who})


def _verdict(items: list[dict[str, Any]], where: str, who: str) -> str:
    """The annotator's first verdict choice (an error when the annotation has none)."""
    verdicts = [c for r in items if r.get("from_name") == "verdict" for c in r["value"].get("choices", [])]
    if not verdicts:
        raise HarnessError(f"{where}: annotation by {who} has no verdict")
    verdict: str = verdicts[0]
    return verdict


def _edited_triplet(items: list[dict[str, Any]], where: str, who: str) -> Triplet | None:
    """The annotator's corrected triplet, if any (an error when a correction does not parse)."""
    edits = [parse_triplets(t).triplets for t in _texts(items, "edit")]
    if any(not ts for ts in edits):
        raise HarnessError(f"{where}: the corrected triplet by {who} is not 'subject | relation | object'")
    return next((ts[0] for ts in edits if ts), None)


def _drawn_boxes(items: list[dict[str, Any]]) -> dict[str, list[float]]:
    """The subject and object boxes the annotator drew, subject first."""
    boxes = {
        r["value"]["rectanglelabels"][0]: _box_from_rect(r)
        for r in items
        if r.get("from_name") == "box" and r.get("type") == "rectanglelabels"
    }
    return {role: boxes[role] for role in ("subject", "object") if role in boxes}


def _apply_expansion(
    result: CurationResult, pair_id: str, items: list[dict[str, Any]], who: str, when: str, log: list[dict[str, Any]]
) -> None:
    names = {
        r["id"]: t.strip().lower()
        for r in items
        if r.get("from_name") == "concept_name"
        for t in r["value"].get("text", [])[:1]
    }
    boxes = {
        names[r["id"]]: [round(v, 2) for v in _box_from_rect(r)]
        for r in items
        if r.get("from_name") == "concept_box" and r.get("id") in names
    }
    for text in _texts(items, "new_triplets"):
        parsed = parse_triplets(text)
        if parsed.status != "ok":
            raise HarnessError(f"{pair_id}: added triplets by {who} are not 'subject | relation | object' lines")
        for t in parsed.triplets:
            added = {
                **t.as_dict(),
                "subject_box": boxes.get(t.subject.lower(), []),
                "object_box": boxes.get(t.object.lower(), []),
                "origin": "curator",
                "status": "added",
                "curated_by": who,
            }
            result.sk[pair_id].append(added)
            result.added += 1
            log.append(
                {
                    "candidate": -1,
                    "annotator": who,
                    "at": when,
                    "field": "added",
                    "before": "null",
                    "after": json.dumps(_triplet_text(added)),
                }
            )
