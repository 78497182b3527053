"""The tiny-model registry: chat recipes in ``harness.tiny_models``, non-chat ones registered by the
protocols that own them (``register_tiny_recipe``), each built once and refused as ``--model`` by purpose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import tiny_models
from harness.errors import ModelSpecError
from harness.models.base import create_backend
from harness.protocols.base import protocols
from harness.tiny_models import blocks, registry
from tests.conftest import ROOT
from tests.test_import_layers import loaded_after

OWNED = {"sdxl_turbo": "vista", "instruct_pix2pix": "fusion", "owlv2": "diavlo", "clip": "stealth"}


def test_the_generic_recipes_name_no_protocol_and_load_none() -> None:
    names = "|".join(p.name for p in protocols() if p.places.code)
    for module in sorted((ROOT / "harness" / "tiny_models").glob("*.py")):
        source = module.read_text(encoding="utf-8")
        assert re.findall(rf"\b({names})\b", source, flags=re.IGNORECASE) == [], module.name
    assert [m for m in loaded_after("import harness.tiny_models") if m.startswith("harness.protocols")] == []


@pytest.mark.parametrize(("arch", "protocol"), sorted(OWNED.items()))
def test_each_protocol_registers_its_own_non_chat_model(arch: str, protocol: str) -> None:
    """Importing the owning protocol's package is what registers its recipe, so its own code always finds it."""
    assert arch not in tiny_models.RECIPES
    loaded_after(
        f"import harness.protocols.{protocol}\nimport harness.tiny_models as t\nassert {arch!r} in t.tiny_archs()"
    )
    protocols()
    with pytest.raises(
        ModelSpecError, match=rf"(?i)^tiny:{arch} is not a chat model to evaluate: it is an? .*{protocol}"
    ):
        create_backend(f"tiny:{arch}")


def test_a_registered_recipe_is_built_once_and_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    monkeypatch.setattr(registry, "_NOT_CHAT", dict(registry._NOT_CHAT))
    builds: list[Path] = []

    def build(out: Path) -> None:
        builds.append(out)
        (out / "weights.txt").write_text("w", encoding="utf-8")
        blocks.mark_tiny(out)

    tiny_models.register_tiny_recipe("toy_encoder", build, "a toy encoder")
    first = tiny_models.tiny_model_path("toy_encoder")
    assert (
        tiny_models.tiny_model_path("toy_encoder")
        == first
        == tmp_path / "tiny" / f"toy_encoder-v{registry.RECIPE_VERSION}"
    )
    assert len(builds) == 1 and (first / "weights.txt").read_text(encoding="utf-8") == "w"
    with pytest.raises(
        ModelSpecError, match=r"^tiny:toy_encoder is not a chat model to evaluate: it is a toy encoder;"
    ):
        create_backend("tiny:toy_encoder")
    with pytest.raises(ModelSpecError, match=r"^unknown tiny architecture 'gpt9'; choose from .*\btoy_encoder\b"):
        tiny_models.tiny_model_path("gpt9")


def test_a_non_chat_recipe_cannot_take_a_chat_models_name() -> None:
    with pytest.raises(ModelSpecError, match=r"^tiny architecture 'qwen2_vl' is a chat model's"):
        tiny_models.register_tiny_recipe("qwen2_vl", lambda out: None, "x")
