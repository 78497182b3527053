"""Write a dataset in the Hub's folder layout (parquet shards + README card) and push it."""

from __future__ import annotations

import shutil
import string
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


def bundled_cards_dir() -> Path:
    """The dataset cards shipped with the harness (the source tree's or the installed package's)."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "cards", here.parent / "harness" / "_bundled" / "cards"):
        if candidate.is_dir():
            return candidate
    raise HarnessError("the bundled cards/ folder is missing from this installation")


def split_configs(splits: list[str]) -> list[dict[str, Any]]:
    """The card's ``configs`` entry for exactly the splits written, so a partial build (some subsets
    left out) still loads: a split listed without files makes ``load_dataset`` fail."""
    if not splits:
        raise HarnessError("the build produced no splits; nothing to write")
    return [{"config_name": "default", "data_files": [{"split": s, "path": f"data/{s}-*"} for s in splits]}]


def write_hub_folder(
    dataset: Any, out: Path, card_name: str, card_vars: dict[str, Any], extra_files: dict[str, bytes] | None = None
) -> Path:
    """Save each split as ``data/<split>-00000-of-00001.parquet`` (image files embedded, as the Hub
    needs), the card as README.md, and any extra files (a preview image) beside them.

    That layout is what ``load_dataset(out)`` and the Hub both read, so the local folder and the
    published repo load identically. The card's ``configs`` are rendered from ``dataset``'s splits,
    never from the template, and validated before anything is written.
    """
    from datasets.table import embed_table_storage
    from huggingface_hub import DatasetCard

    template = (bundled_cards_dir() / f"{card_name}.md").read_text(encoding="utf-8")
    card = DatasetCard(string.Template(template).substitute(card_vars))
    if card.data.to_dict().get("configs"):
        raise HarnessError(f"card {card_name}: its template lists configs; they are written from the built splits")
    card.data.configs = split_configs(list(dataset))
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "data").mkdir(parents=True)
        for split, ds in dataset.items():  # images given as file paths are embedded: the folder stands alone
            embedded = ds.with_format("arrow").map(embed_table_storage, batched=True, keep_in_memory=True)
            embedded.to_parquet(str(tmp / "data" / f"{split}-00000-of-00001.parquet"))
        card.save(str(tmp / "README.md"))
        for name, blob in (extra_files or {}).items():
            (tmp / name).write_bytes(blob)
    except BaseException:  # a full disk or Ctrl-C: no half-written folder is left, the previous build stays
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    return out


def push_folder(folder: Path, repo_id: str) -> None:
    """Upload a built folder to a Hub dataset repo (needs network and a token)."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset")
