"""Load a task's dataset: Hub id, local parquet folder or ``save_to_disk`` folder, with offline mapping.

``--data-dir DIR`` (or ``HARNESS_DATA_DIR``) maps a Hub id ``org/name`` to ``DIR/org/name`` when that
folder exists, so the same task YAML runs from a local copy without network access. Offline
(``HF_HUB_OFFLINE=1``, or a Hub found unreachable by one quick probe) only the Hub cache is read, and
every missing dataset of a run is reported at once with the command that builds it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import DatasetError
from harness.hub import offline_reason
from harness.paths import cache_root
from harness.taskspec.config import TaskConfig

log = logging.getLogger(__name__)
DATA_DIR_ENV = "HARNESS_DATA_DIR"
# lmms-eval dataset_kwargs that are not load_dataset arguments.
_NON_LOADER_KWARGS = {
    "load_from_disk",
    "token",
    "video",
    "force_download",
    "force_unzip",
    "cache_dir",
    "local_files_only",
    "create_link",
}


#: The ``harness build`` command that makes a dataset (``(dataset_path, out)``, ``out`` None for the default
#: data dir), or None when no builder makes it. The builders sit above this layer, so the caller passes it in
#: (the command line passes :func:`builders.build_hint`); without one, a missing dataset's remedy is a copy.
BuildHint = Callable[[str, Path | None], str | None]


class MissingDatasetError(DatasetError):
    """A task's dataset is neither a local folder nor obtainable from the Hub."""

    def __init__(self, config: TaskConfig, data_dir: Path | None, reason: str, hint: BuildHint | None) -> None:
        self.config, self.data_dir, self.reason = config, data_dir, reason
        super().__init__(
            f"task {config.task}: dataset {config.dataset_path!r} is not available ({reason}); "
            f"{_remedy(str(config.dataset_path), data_dir, hint)}"
        )


@dataclass(frozen=True)
class LoadedDataset:
    """A task's dataset: its docs, where they were read from, and the fingerprint recorded in provenance."""

    docs: Any  # datasets.Dataset
    source: str
    fingerprint: dict[str, Any]


def default_data_dir() -> Path:
    """Where built datasets live: ``$HARNESS_DATA_DIR``, else ``data/`` under the harness cache."""
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env)
    return cache_root() / "data"


def resolve_path(dataset_path: str, data_dir: Path | None) -> tuple[str, bool]:
    """Where to read ``dataset_path`` from, and whether that is a local folder."""
    if Path(dataset_path).expanduser().is_dir():
        return str(Path(dataset_path).expanduser()), True
    if data_dir is not None and (data_dir / dataset_path).is_dir():
        return str(data_dir / dataset_path), True
    return dataset_path, False


def local_splits(path: Path, name: str | None = None) -> list[str] | None:
    """The splits a local dataset folder holds, read from its metadata without loading it (a saved
    DatasetDict's ``dataset_dict.json``, else the data files its card declares); None for a single saved
    Dataset (every split reads it whole) or a folder whose splits cannot be told."""
    import datasets

    if (path / "dataset_dict.json").is_file():
        try:
            return list(json.loads((path / "dataset_dict.json").read_text(encoding="utf-8"))["splits"])
        except (ValueError, KeyError, TypeError):
            return None
    if (path / "state.json").is_file():
        return None
    try:
        return list(datasets.get_dataset_split_names(str(path), config_name=name))
    except Exception:  # an unreadable folder: loading it says why, with the task's name
        log.debug("no split names for %s", path, exc_info=True)
        return None


#: How ``datasets`` names the splits of a folder of data files (``val-00000.parquet`` is split ``validation``).
SPLIT_NAMING = (
    "a folder of data files has its splits named by the files: train-*, test-*, and validation for "
    "val-*, valid-*, dev-* or eval-*; another split name is declared in the folder's README.md "
    "(configs: [{config_name: default, data_files: [{split: NAME, path: NAME-*.parquet}]}])"
)


def missing_split(split: str, path: str, splits: Sequence[str], remedy: str) -> str:
    """The words for a local copy without the split a task reads (``harness tasks`` and ``harness eval``)."""
    return f"split {split!r} not built (the local copy {path} has {', '.join(splits) or 'none'}; {remedy})"


def _is_saved_to_disk(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file() or (path / "state.json").is_file()


#: The Hub's benchmark registration at a dataset folder's root (written by every build: builders.benchmark).
EVAL_YAML = "eval.yaml"
#: Files of a dataset folder that describe it to the Hub and that no task reads: not part of its content hash.
NOT_CONTENT = frozenset({EVAL_YAML})


def _content_hash(path: Path) -> str:
    """sha256 of a folder's files; several tasks on one dataset (a group's splits) hash it once. The Hub's
    benchmark registration (``eval.yaml``, written by every build) is left out: it describes the data."""
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and "cache-" not in p.name and p.relative_to(path).as_posix() not in NOT_CONTENT
    )
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


def _build_command(dataset_path: str, data_dir: Path | None, hint: BuildHint | None) -> str | None:
    """The exact ``harness build`` command that makes ``dataset_path`` under ``data_dir``, if a builder does."""
    target = (data_dir or default_data_dir()) / dataset_path
    return hint(dataset_path, None if target == default_data_dir() / dataset_path else target) if hint else None


def _remedy(dataset_path: str, data_dir: Path | None, hint: BuildHint | None) -> str:
    """How to get ``dataset_path``: the exact ``harness build`` command when a builder makes it, else where to
    put a copy."""
    command = _build_command(dataset_path, data_dir, hint)
    return (
        f"build it: {command}"
        if command
        else f"put a copy at {(data_dir or default_data_dir()) / dataset_path} (see --data-dir)"
    )


def load_task_datasets(
    configs: Sequence[TaskConfig], data_dir: Path | None, hint: BuildHint | None = None
) -> dict[str, LoadedDataset]:
    """Each task's dataset, or one error naming every missing dataset of the run with how to get each."""
    loaded: dict[str, LoadedDataset] = {}
    missing: dict[str, list[MissingDatasetError]] = {}
    for config in configs:
        try:
            loaded[config.task] = load_task_dataset(config, data_dir, hint)
        except MissingDatasetError as exc:
            missing.setdefault(str(config.dataset_path), []).append(exc)
    if not missing:
        return loaded
    if len(missing) == 1 and len(next(iter(missing.values()))) == 1:
        raise next(iter(missing.values()))[0]
    reasons = {exc.reason for errors in missing.values() for exc in errors}
    parts = [
        f"{path!r} (task{'s' if len(errors) > 1 else ''} {', '.join(e.config.task for e in errors)}): "
        f"{_remedy(path, data_dir, hint)}"
        for path, errors in missing.items()
    ]
    raise DatasetError(f"{len(missing)} datasets are not available ({'; '.join(sorted(reasons))}): " + "; ".join(parts))


def load_task_dataset(config: TaskConfig, data_dir: Path | None, hint: BuildHint | None = None) -> LoadedDataset:
    """The test split of a task's dataset, with a fingerprint of exactly what was read."""
    import datasets

    if not config.dataset_path:
        raise DatasetError(f"task {config.task}: no dataset_path in {config.source}")
    split = config.test_split or "test"
    kwargs = {k: v for k, v in config.dataset_kwargs.items() if k not in _NON_LOADER_KWARGS}
    path, local = resolve_path(config.dataset_path, data_dir)
    splits = local_splits(Path(path), config.dataset_name) if local else None
    if splits is not None and split not in splits:
        command = _build_command(config.dataset_path, data_dir, hint)
        remedy = f"build it: {command}" if command else "save the split into it"
        naming = "" if command or _is_saved_to_disk(Path(path)) else f"; {SPLIT_NAMING}"
        raise DatasetError(f"task {config.task}: {missing_split(split, path, splits, remedy)}{naming}")
    sha = _content_hash(Path(path)) if local else None
    offline = None if local else offline_reason()
    try:
        if local and (config.dataset_kwargs.get("load_from_disk") or _is_saved_to_disk(Path(path))):
            loaded = datasets.load_from_disk(path)
            docs = loaded[split] if isinstance(loaded, datasets.DatasetDict) else loaded
        else:
            if local:
                # datasets' cache can serve a stale copy of a folder rebuilt in place: key it by content.
                cache = Path(datasets.config.HF_DATASETS_CACHE) / "harness-local" / str(sha)
                kwargs.setdefault("cache_dir", str(cache))
            docs = datasets.load_dataset(path, name=config.dataset_name, split=split, **kwargs)
    except KeyError:
        raise DatasetError(f"task {config.task}: dataset {path} has no split {split!r}") from None
    except (FileNotFoundError, ConnectionError, OSError, ValueError) as exc:
        if local:
            raise DatasetError(f"task {config.task}: cannot read {path}: {str(exc).splitlines()[0]}") from None
        raise MissingDatasetError(config, data_dir, offline or type(exc).__name__, hint) from None
    fingerprint: dict[str, Any]
    if local:
        fingerprint = {"kind": "local", "path": path, "sha256": sha}
    else:
        revision = None if offline else _hub_revision(config.dataset_path)
        fingerprint = {"kind": "hub", "repo": config.dataset_path, "revision": revision}
    fingerprint.update(split=split, num_rows=len(docs), datasets_fingerprint=getattr(docs, "_fingerprint", None))
    return LoadedDataset(docs=docs, source=path, fingerprint=fingerprint)


def _hub_revision(repo: str) -> str | None:
    """The commit sha of a Hub dataset, when the Hub can be asked; None offline."""
    try:
        from huggingface_hub import HfApi

        sha: str | None = HfApi().dataset_info(repo).sha
        return sha
    except Exception:  # offline or private: the datasets fingerprint still identifies the cache
        log.debug("no Hub revision for %s", repo, exc_info=True)
        return None


@contextmanager
def local_copies_for_task_code(task_folder: Path, data_dir: Path | None) -> Iterator[None]:
    """While a task's own code runs (``process_docs``), its ``load_dataset("org/name", ...)`` calls read
    ``DATA_DIR/org/name`` when that folder exists, as the task's own dataset does: lmms-eval's gqa loads its
    images from a second dataset there. Both ``datasets.load_dataset`` and the name a module of the task's
    folder imported (``from datasets import load_dataset``) are redirected, and restored after."""
    import datasets

    original = datasets.load_dataset
    if data_dir is None:
        yield
        return

    def load_local_first(path: str, *args: Any, **kwargs: Any) -> Any:
        resolved, local = resolve_path(str(path), data_dir)
        if local:
            log.info("task code's load_dataset(%r) reads the local copy %s", path, resolved)
            kwargs = {k: v for k, v in kwargs.items() if k not in _NON_LOADER_KWARGS}
        return original(resolved, *args, **kwargs)

    folder = task_folder.resolve()
    modules = [
        m
        for m in list(sys.modules.values())
        if getattr(m, "load_dataset", None) is original
        and Path(getattr(m, "__file__", None) or "/").resolve().is_relative_to(folder)
    ]
    datasets.load_dataset = load_local_first
    for module in modules:
        module.load_dataset = load_local_first  # type: ignore[attr-defined]  # the module's own import of it
    try:
        yield
    finally:
        datasets.load_dataset = original
        for module in modules:
            module.load_dataset = original  # type: ignore[attr-defined]
