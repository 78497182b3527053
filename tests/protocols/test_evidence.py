"""The shared evidence layer: image references resolved by pixel digest (a dataset folder, a run file),
the HTML fragment escaping every string, figures' intervals as recorded, and each built-in protocol's
extractor registered on its Protocol value."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from harness.errors import HarnessError
from harness.hashing import image_digest
from harness.protocols.base import Protocol, get_protocol
from harness.protocols.evidence import (
    Answer,
    AnswerGroup,
    DatasetImage,
    EvidenceFigure,
    ImageRef,
    Item,
    Panel,
    ProtocolEvidence,
    ReferenceValue,
    RunFile,
    Section,
    clip,
    extractor_of,
    figure_interval,
    images_of,
    recorded_interval,
    references_for,
)
from harness.protocols.evidence_html import interval_text, render_evidence
from harness.protocols.evidence_images import ImageStore, thumbnail_png
from harness.results.interval import Interval

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _dataset(folder: Path) -> tuple[Path, list[Image.Image]]:
    """A saved dataset of three rows: an RGB image, a grayscale one, and a row with two image columns."""
    import datasets

    red = Image.new("RGB", (40, 30), (200, 10, 10))
    gray = Image.new("L", (20, 20), 90)
    blue = Image.new("RGB", (10, 10), (0, 0, 250))
    features = datasets.Features(
        {"image": datasets.Image(), "other": datasets.Image(), "text": datasets.Value("string")}
    )
    data = datasets.Dataset.from_dict(
        {"image": [red, gray, red], "other": [red, red, blue], "text": ["a", "b", "c"]}, features=features
    )
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder))
    return folder, [red, gray, blue]


def test_images_are_found_by_digest_with_or_without_a_right_row(tmp_path: Path) -> None:
    folder, (red, gray, blue) = _dataset(tmp_path / "data")
    store = ImageStore()

    def ref(image: Image.Image, row: int | None) -> ImageRef:
        return ImageRef(sha256=image_digest(image), source=DatasetImage(path=str(folder), split="test", row=row))

    assert image_digest(store.image(ref(red, 0))) == image_digest(red)  # the hinted row
    assert image_digest(store.image(ref(blue, 0))) == image_digest(blue)  # a wrong hint: found by a scan
    # a task that converts to RGB records the converted pixels' digest: that is what is found and shown
    converted = gray.convert("RGB")
    found = store.image(ref(converted, None))
    assert found is not None and found.mode == "RGB" and image_digest(found) == image_digest(converted)
    assert store.image(ref(Image.new("RGB", (3, 3)), 1)) is None  # no such image: none, never another one
    assert store.image(ImageRef(sha256=image_digest(red))) is None  # no source
    missing = ImageRef(sha256="0" * 64, source=DatasetImage(path=str(tmp_path / "nowhere"), split="test"))
    assert store.image(missing) is None
    png = store.thumbnail_png(ref(red, 0), size=20)
    assert png is not None and png.startswith(b"\x89PNG")


def test_run_files_are_read_only_inside_their_run_and_must_match(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    image = Image.new("RGB", (8, 8), (1, 2, 3))
    image.save(run / "adv.png")
    image.save(tmp_path / "outside.png")
    digest = image_digest(image)
    store = ImageStore()
    assert store.image(ImageRef(sha256=digest, source=RunFile(run_dir=str(run), path="adv.png"))) is not None
    assert store.image(ImageRef(sha256=digest, source=RunFile(run_dir=str(run), path="../outside.png"))) is None
    assert store.image(ImageRef(sha256="1" * 64, source=RunFile(run_dir=str(run), path="adv.png"))) is None


def test_thumbnails_keep_the_aspect_and_never_enlarge() -> None:
    big = Image.open(__import__("io").BytesIO(thumbnail_png(Image.new("RGB", (800, 600)), 360)))
    small = Image.open(__import__("io").BytesIO(thumbnail_png(Image.new("RGB", (64, 32)), 360)))
    assert big.size == (360, 270) and small.size == (64, 32)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text += data


def test_the_fragment_escapes_every_string() -> None:
    image = ImageRef(sha256="ab" * 32, alt=HOSTILE)
    evidence = ProtocolEvidence(
        protocol="toy",
        title=HOSTILE,
        model=HOSTILE,
        notes=[HOSTILE],
        sections=[
            Section(
                key="k",
                title=HOSTILE,
                flag=HOSTILE,
                figures=[EvidenceFigure(key="f", label=HOSTILE, value=HOSTILE, note=HOSTILE)],
                items=[
                    Item(
                        title=HOSTILE,
                        fields={HOSTILE: HOSTILE},
                        panels=[
                            Panel(
                                caption=HOSTILE,
                                image=image,
                                answers=[Answer(model=HOSTILE, text=HOSTILE, label=HOSTILE, group=HOSTILE)],
                                groups=[AnswerGroup(label=HOSTILE, answers=[Answer(model="m", text=HOSTILE)])],
                                labels={HOSTILE: HOSTILE},
                                lines=[HOSTILE],
                            )
                        ],
                    )
                ],
            )
        ],
    )
    html = render_evidence(evidence, lambda ref: "data:image/png;base64,AAAA")
    page = _Tags()
    page.feed(str(html))
    assert [t for t, _ in page.tags if t == "script"] == []
    assert all(not key.startswith("on") for _, attrs in page.tags for key in attrs)
    assert [a["src"] for t, a in page.tags if t == "img"] == ["data:image/png;base64,AAAA"]
    assert page.text.count(HOSTILE) >= 14
    bell = evidence.model_copy(update={"notes": ["ring\x07\x00 done\n"]})
    assert "ring\\x07\\x00 done" in render_evidence(bell, lambda ref: None)  # shown, not written raw
    unresolved = render_evidence(evidence, lambda ref: None)
    assert f"image {'ab' * 6} not available" in unresolved


def test_intervals_as_recorded() -> None:
    assert interval_text(None) == "no interval recorded"
    assert interval_text(Interval.missing("fewer than 2 docs", 1)) == "no interval (fewer than 2 docs)"
    made = Interval.of(0.1, 0.3, "cluster_bootstrap", 40, unit="sentence")
    assert interval_text(made) == "[0.100, 0.300] (cluster_bootstrap over 40 sentences)"
    assert figure_interval({"ci95": [0.1, 0.3]}, "cluster_bootstrap", 40, "sentence") == made
    assert figure_interval({"interval": made.model_dump()}, "wilson", 3, "doc") == made  # a recorded one wins
    assert figure_interval({"ci95": None}, "wilson", 3, "doc") is None
    assert recorded_interval({"intervals": {"x": made.model_dump()}}, "x") == made
    assert recorded_interval({"x_interval": made.model_dump()}, "x") == made
    assert recorded_interval({"x": 0.2, "interval": made.model_dump()}, "x") == made  # the part's one figure
    assert recorded_interval({"x": 0.2}, "x") is None


def test_helpers() -> None:
    assert clip("x" * 10, 4) == "xxxx [... 6 more characters]" and clip("short") == "short"
    prompt = [{"role": "user", "content": [{"type": "image", "url": {"image_sha256": "d1"}}, {"type": "text"}]}]
    assert images_of(prompt) == ["d1"]
    table = [ReferenceValue(figure="r", label="R", paper_model="Qwen2.5-VL-7B", value=0.5, paper="p", where="T1")]
    assert references_for("hf:Qwen/Qwen2.5-VL-7B-Instruct", table) == table
    assert references_for("hf:Qwen/Qwen2.5-VL-3B-Instruct", table) == []


@pytest.mark.parametrize("name", ["vista", "stealth", "mist", "diavlo", "fusion"])
def test_each_protocol_registers_its_extractor(name: str) -> None:
    protocol = get_protocol(name)
    assert protocol is not None and callable(extractor_of(protocol))


def test_a_broken_extractor_is_one_line() -> None:
    assert extractor_of(Protocol(name="t", title="t", summary="s")) is None
    with pytest.raises(HarnessError, match=r"extensions\['evidence'\] 'nowhere:x' cannot be loaded"):
        extractor_of(Protocol(name="t", title="t", summary="s", extensions={"evidence": "nowhere:x"}))
    with pytest.raises(HarnessError, match="not callable"):
        extractor_of(Protocol(name="t", title="t", summary="s", extensions={"evidence": 3}))
