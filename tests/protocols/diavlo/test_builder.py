"""harness build diavlo on local copies of the four sources: readers, scene-graph sources, the card,
and the Label Studio curation round trip (who changed what, correction rate)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from builders import build_dataset
from builders.diavlo.curation import import_curated
from builders.diavlo.demo import sources_arg
from builders.diavlo.sources import parse_sources, read_source
from harness.errors import HarnessError


def test_readers_parse_each_release_format(diavlo_sources: tuple[dict[str, str], Path]) -> None:
    paths, _ = diavlo_sources
    llava = read_source("llava_bench", paths["llava_bench"])
    assert [p.question_id for p in llava] == ["0", "1", "2"] and llava[0].answer_type == "open"
    assert llava[0].answer.startswith("A red box") and llava[0].image_key == "001.jpg"
    mmb = read_source("mmbench", paths["mmbench"])
    assert mmb[0].options == ("red", "blue", "green", "yellow") and mmb[0].answer == "B"
    assert mmb[0].question == "Look at the table.\nWhat color is the ball?"
    assert mmb[1].question == "What color is the ball?"
    assert mmb[0].load_image().size == (64, 48)
    seed = read_source("seed_bench2", paths["seed_bench2"])
    assert [p.question_id for p in seed] == ["s0", "s1", "s2"]  # the video question is skipped
    vqa = read_source("vqav2", paths["vqav2"])
    assert vqa[0].image_key == "42" and len(vqa[0].answers) == 10 and vqa[0].answer == "red"


def test_reader_and_option_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="does not exist"):
        read_source("vqav2", str(tmp_path / "nope"))
    (tmp_path / "llava").mkdir()
    with pytest.raises(HarnessError, match=re.escape("questions.jsonl")):
        read_source("llava_bench", str(tmp_path / "llava"))
    bad = tmp_path / "mm.tsv"
    bad.write_text("index\tquestion\n0\tq\n")
    with pytest.raises(HarnessError, match="lacks column"):
        read_source("mmbench", str(bad))
    with pytest.raises(HarnessError, match="NAME=PATH"):
        parse_sources("gqa=/x")
    with pytest.raises(HarnessError, match="--sources is required"):
        parse_sources(())
    with pytest.raises(HarnessError, match=r"--scene-graphs .*no such file"):
        build_dataset("diavlo", tmp_path / "o", sources=f"vqav2={tmp_path}", scene_graphs=str(tmp_path / "vg.json"))
    with pytest.raises(HarnessError, match="no scene-graph source"):
        build_dataset("diavlo", tmp_path / "o", sources=f"vqav2={tmp_path}")
    with pytest.raises(HarnessError, match="needs both --detector"):
        build_dataset("diavlo", tmp_path / "o", sources=f"vqav2={tmp_path}", detector="tiny:owlv2")


def test_build_stores_candidates_with_boxes_and_provenance(diavlo_dir: Path) -> None:
    from datasets import load_dataset

    ds = load_dataset(str(diavlo_dir))
    assert set(ds) == {"llava_bench", "mmbench", "seed_bench2", "vqav2"}
    assert all(len(ds[s]) == 3 for s in ds)
    first = ds["vqav2"][0]
    assert first["curation_status"] == "uncurated" and first["answer_type"] == "vqa"
    sk = first["sk_triplets"]
    assert {(t["subject"], t["relation"], t["object"]) for t in sk} == {
        ("red box", "left of", "blue ball"),
        ("blue ball", "on", "table"),
        ("red box", "on", "table"),
    }
    box = next(t for t in sk if t["relation"] == "left of")
    assert box["subject_box"] == [4.0, 16.0, 20.0, 36.0] and box["origin"] == "annotation:relationships.json"
    # the third image of each source has no annotation: the detector source answered (maybe with nothing)
    third = ds["mmbench"][2]
    assert all(t["origin"].startswith("detector:tiny:owlv2+relations:tiny:qwen2_vl") for t in third["sk_triplets"])
    card = (diavlo_dir / "README.md").read_text()
    assert "CC BY-NC 4.0" in card and "non-commercial purposes only" in card
    assert "8 pairs from annotations" in card and "relation proposals lost" in card
    from huggingface_hub import DatasetCard

    assert DatasetCard.load(str(diavlo_dir / "README.md")).data.license == "other"
    assert (diavlo_dir / "LICENSE-SOURCES.md").is_file()


def _annotate(task: dict, who: str, result: list[dict], at: str = "2026-11-01T10:00:00Z") -> dict:
    return {
        **task,
        "annotations": [
            {
                "id": 1,
                "completed_by": {"id": 3, "email": who},
                "result": result,
                "created_at": at,
                "updated_at": at,
                "was_cancelled": False,
            }
        ],
    }


def _verdict(choice: str) -> dict:
    return {"from_name": "verdict", "to_name": "image", "type": "choices", "value": {"choices": [choice]}}


def test_curation_round_trip(tmp_path: Path, diavlo_sources: tuple[dict[str, str], Path]) -> None:
    paths, graphs = diavlo_sources
    export = tmp_path / "curation"
    build_dataset(
        "diavlo",
        tmp_path / "raw",
        sources=sources_arg({"vqav2": paths["vqav2"]}),
        scene_graphs=str(graphs),
        curation_out=str(export),
    )
    verify = json.loads((export / "verify_tasks.json").read_text())
    expand = json.loads((export / "expand_tasks.json").read_text())
    assert (export / "verify_config.xml").read_text().startswith("<View>")
    assert len(verify) == 6 and len(expand) == 3 and (export / "images" / "vqav2-420.png").is_file()
    pre = verify[0]["predictions"][0]["result"]
    assert {r["value"]["rectanglelabels"][0] for r in pre} == {"subject", "object"}
    by_pair = [t for t in verify if t["data"]["pair_id"] == "vqav2-420"]
    # pair 420: keep, edit the triplet, move a box; pair 421: one rejected, two left unreviewed
    moved = {**by_pair[2]["predictions"][0]["result"][0]}
    moved["value"] = {**moved["value"], "x": moved["value"]["x"] + 25.0}  # +16 px on a 64 px image
    edited = {
        "from_name": "edit",
        "to_name": "image",
        "type": "textarea",
        "value": {"text": ["red box | next to | blue ball"]},
    }
    curated = [
        _annotate(by_pair[0], "ann@lab", [_verdict("correct")]),
        _annotate(by_pair[1], "bob@lab", [_verdict("incorrect"), edited]),
        _annotate(by_pair[2], "ann@lab", [_verdict("correct"), moved]),
        _annotate(verify[3], "ann@lab", [_verdict("irrelevant")]),
        verify[4],
        verify[5],
    ]
    assert verify[3]["data"]["pair_id"] == "vqav2-421"
    expansion = _annotate(
        next(t for t in expand if t["data"]["pair_id"] == "vqav2-420"),
        "bob@lab",
        [
            {
                "id": "r1",
                "from_name": "concept_box",
                "to_name": "image",
                "type": "rectanglelabels",
                "original_width": 64,
                "original_height": 48,
                "value": {"x": 0, "y": 75, "width": 100, "height": 25, "rectanglelabels": ["concept"]},
            },
            {
                "id": "r1",
                "from_name": "concept_name",
                "to_name": "image",
                "type": "textarea",
                "value": {"text": ["Table"]},
            },
            {
                "from_name": "new_triplets",
                "to_name": "image",
                "type": "textarea",
                "value": {"text": ["table | under | red box"]},
            },
        ],
    )
    verify_file, expand_file = tmp_path / "verify_export.json", tmp_path / "expand_export.json"
    verify_file.write_text(json.dumps(curated))
    expand_file.write_text(json.dumps([expansion]))
    result = import_curated([verify_file, expand_file])
    assert result.reviewed == 4 and result.corrected == 3 and result.correction_rate == pytest.approx(3 / 4)
    assert result.rejected == 1 and result.added == 1 and result.unreviewed == 2
    assert result.annotators == {"ann@lab", "bob@lab"}
    sk = result.sk["vqav2-420"]
    assert [(t["subject"], t["relation"], t["object"], t["status"]) for t in sk][:3] == [
        (
            by_pair[0]["data"]["triplet"].split(" | ")[0],
            by_pair[0]["data"]["triplet"].split(" | ")[1],
            by_pair[0]["data"]["triplet"].split(" | ")[2],
            "verified",
        ),
        ("red box", "next to", "blue ball", "corrected"),
        (*by_pair[2]["data"]["triplet"].split(" | "), "corrected"),
    ]
    assert sk[3] == {
        "subject": "table",
        "relation": "under",
        "object": "red box",
        "subject_box": [0.0, 36.0, 64.0, 48.0],
        "object_box": [],
        "origin": "curator",
        "status": "added",
        "curated_by": "bob@lab",
    }
    log = result.changes["vqav2-420"]
    assert {(c["annotator"], c["field"]) for c in log} == {
        ("bob@lab", "triplet"),
        ("bob@lab", "verdict"),
        ("ann@lab", moved["value"]["rectanglelabels"][0] + "_box"),
        ("bob@lab", "added"),
    }
    assert result.sk["vqav2-421"] == [] and [c["field"] for c in result.changes["vqav2-421"]] == ["verdict"]
    # the import builds the dataset with the curated SK and its change log
    out = build_dataset(
        "diavlo",
        tmp_path / "curated",
        sources=sources_arg({"vqav2": paths["vqav2"]}),
        scene_graphs=str(graphs),
        curated=(str(verify_file), str(expand_file)),
    )
    from datasets import load_dataset

    row = load_dataset(str(out), split="vqav2")[0]
    assert row["curation_status"] == "curated" and len(row["sk_triplets"]) == 4
    assert {c["field"] for c in row["curation_changes"]} >= {"triplet", "added"}
    summary = json.loads((out / "curation_summary.json").read_text())
    assert summary["correction_rate"] == pytest.approx(3 / 4)


def test_curated_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{")
    with pytest.raises(HarnessError, match="not JSON"):
        import_curated([bad])
    bad.write_text(
        json.dumps(
            [
                {
                    "data": {"kind": "verify", "pair_id": "p", "candidate": 0, "candidate_json": "{}"},
                    "annotations": [{"result": []}],
                }
            ]
        )
    )
    with pytest.raises(HarnessError, match="no verdict"):
        import_curated([bad])


def test_hub_layouts_read_the_same_fields(tmp_path: Path) -> None:
    from tests.protocols.diavlo.fixtures import write_hub_copies

    hub = write_hub_copies(tmp_path)
    llava = read_source("llava_bench", hub["llava_bench"])
    assert llava[0].answer == "A red box." and llava[0].image_key == "007" and llava[0].answer_type == "open"
    mmb = read_source("mmbench", hub["mmbench"])
    assert mmb[0].options == ("red", "blue") and mmb[0].question == "Ball color?" and mmb[0].answer == "B"
    seed = read_source("seed_bench2", hub["seed_bench2"])
    assert [p.question_id for p in seed] == ["9"] and seed[0].image_key == "cc3m/9.jpg"  # multi-image skipped
    assert seed[0].load_image().size == (64, 48)
    vqa = read_source("vqav2", hub["vqav2"])
    assert vqa[0].image_key == "42" and len(vqa[0].answers) == 10
    with pytest.raises(HarnessError, match="cannot load"):
        read_source("vqav2", f"hub:{tmp_path / 'missing'}")
