"""Load a task's dataset: Hub id, local parquet folder or ``save_to_disk`` folder, with offline mapping.

``--data-dir DIR`` (or ``HARNESS_DATA_DIR``) maps a Hub id ``org/name`` to ``DIR/org/name`` when that
folder exists, so the same task YAML runs from a local copy without network access.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import DatasetError
from harness.taskspec.config import TaskConfig

log = logging.getLogger(__name__)
DATA_DIR_ENV = "HARNESS_DATA_DIR"
# lmms-eval dataset_kwargs that are not load_dataset arguments.
_NON_LOADER_KWARGS = {"load_from_disk", "token", "video", "force_download", "force_unzip", "cache_dir",
                      "local_files_only", "create_link"}


@dataclass(frozen=True)
class LoadedDataset:
    docs: Any  # datasets.Dataset
    source: str
    fingerprint: dict[str, Any]


def default_data_dir() -> Path:
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("HARNESS_CACHE", Path.home() / ".cache" / "harness")) / "data"


def resolve_path(dataset_path: str, data_dir: Path | None) -> tuple[str, bool]:
    """Where to read ``dataset_path`` from, and whether that is a local folder."""
    if Path(dataset_path).expanduser().is_dir():
        return str(Path(dataset_path).expanduser()), True
    if data_dir is not None and (data_dir / dataset_path).is_dir():
        return str(data_dir / dataset_path), True
    return dataset_path, False


def _is_saved_to_disk(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()


def _content_hash(path: Path) -> str:
    """sha256 of a folder's files; several tasks on one dataset (a group's splits) hash it once."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and "cache-" not in p.name)
    return _hash_files(path, tuple((f, f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@functools.lru_cache(maxsize=64)
def _hash_files(root: Path, files: tuple[tuple[Path, int, int], ...]) -> str:
    """Keyed by (name, size, mtime) of every file, so a folder rebuilt in place is hashed anew."""
    h = hashlib.sha256()
    for f, _, _ in files:
        h.update(str(f.relative_to(root)).encode())
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def load_task_dataset(config: TaskConfig, data_dir: Path | None) -> LoadedDataset:
    """The test split of a task's dataset, with a fingerprint of exactly what was read."""
    import datasets

    if not config.dataset_path:
        raise DatasetError(f"task {config.task}: no dataset_path in {config.source}")
    split = config.test_split or "test"
    kwargs = {k: v for k, v in config.dataset_kwargs.items() if k not in _NON_LOADER_KWARGS}
    path, local = resolve_path(config.dataset_path, data_dir)
    sha = _content_hash(Path(path)) if local else None
    try:
        if local and (config.dataset_kwargs.get("load_from_disk") or _is_saved_to_disk(Path(path))):
            loaded = datasets.load_from_disk(path)
            docs = loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
        else:
            if local:
                # datasets' cache can serve a stale copy of a folder rebuilt in place: key it by content.
                kwargs.setdefault("cache_dir", str(Path(datasets.config.HF_DATASETS_CACHE) / "harness-local" / sha))
            docs = datasets.load_dataset(path, name=config.dataset_name, split=split, **kwargs)
    except KeyError:
        raise DatasetError(f"task {config.task}: dataset {path} has no split {split!r}") from None
    except (FileNotFoundError, ConnectionError, OSError, ValueError) as exc:
        if local:
            raise DatasetError(f"task {config.task}: cannot read {path}: {str(exc).splitlines()[0]}") from None
        where = data_dir / config.dataset_path if data_dir else "DIR/" + config.dataset_path
        raise DatasetError(
            f"task {config.task}: dataset {config.dataset_path!r} is not available "
            f"({type(exc).__name__}); offline, put a copy at {where} (see --data-dir) "
            f"or build it with `harness build`"
        ) from None
    if local:
        fingerprint = {"kind": "local", "path": path, "sha256": sha}
    else:
        fingerprint = {"kind": "hub", "repo": config.dataset_path, "revision": _hub_revision(config.dataset_path)}
    fingerprint.update(split=split, num_rows=len(docs), datasets_fingerprint=getattr(docs, "_fingerprint", None))
    return LoadedDataset(docs=docs, source=path, fingerprint=fingerprint)


def _hub_revision(repo: str) -> str | None:
    """The commit sha of a Hub dataset, when the Hub can be asked; None offline."""
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(repo).sha
    except Exception:  # offline or private: the datasets fingerprint still identifies the cache
        log.debug("no Hub revision for %s", repo, exc_info=True)
        return None
