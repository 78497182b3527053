"""``harness submit RUN_DIR --to TARGET``: a run to a leaderboard server, to a Hugging Face dataset repo
(``hf://datasets/ORG/NAME``), or into a local folder in that repo's layout; or its scores into a model
repo in the Hub's ``.eval_results`` format (``hf://ORG/MODEL``).

The Hub layout is ``runs/<model>/<content hash>/`` holding the run's results.json, samples files and
plots; ``harness leaderboard import FOLDER`` ingests such a folder (e.g. a clone of the repo).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.leaderboard.bundle import Bundle, Limits, parse_bundle, read_run_files

TOKEN_ENV = "HARNESS_LEADERBOARD_TOKEN"
_HF = re.compile(r"hf://datasets/([A-Za-z0-9][\w.-]*/[\w.-]+)/?")
_HF_MODEL = re.compile(r"hf://(?:models/)?(?!datasets/|spaces/|models/)([A-Za-z0-9][\w.-]*/[\w.-]+)/?")
_HUB_README = """# Leaderboard submissions

Runs of the VLM audit harness, one folder per run: `runs/<model>/<content hash>/` with `results.json`,
`samples_<task>.jsonl` and the run's plots. A leaderboard server ingests this layout with
`harness leaderboard import FOLDER`.
"""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", text).strip("_")[:120] or "model"


def load_bundle(run_dir: Path, read_timeout_s: float | None = None) -> tuple[Bundle, dict[str, bytes]]:
    """Read and validate a run folder as the server will (so a refusal shows before any upload), reading
    for at most ``read_timeout_s``."""
    files = read_run_files(Path(run_dir))
    return parse_bundle(files, Limits(max_total_bytes=2**40, read_timeout_s=read_timeout_s)), files


def post_run(
    run_dir: Path, url: str, token: str | None, timeout: float = 600.0, read_timeout_s: float | None = None
) -> dict[str, Any]:
    """Upload a run to a leaderboard server; returns its answer (id, status, checks, page)."""
    import httpx  # the [leaderboard] extra

    token = token or os.environ.get(TOKEN_ENV)
    if not token:
        raise HarnessError(f"--token is required to submit to {url} (or set {TOKEN_ENV})")
    _, files = load_bundle(run_dir, read_timeout_s)
    endpoint = url.rstrip("/") + "/api/submissions"
    parts = [("files", (name, data, "application/octet-stream")) for name, data in files.items()]
    try:
        response = httpx.post(endpoint, files=parts, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
    except httpx.HTTPError as exc:
        raise HarnessError(f"cannot reach the leaderboard at {url}: {exc}") from None
    try:
        body: dict[str, Any] = response.json()
    except ValueError:
        body = {"error": response.text[:300]}
    if response.status_code not in (200, 201):
        raise HarnessError(
            f"the leaderboard refused the submission (HTTP {response.status_code}): {body.get('error', body)}"
        )
    body["page"] = url.rstrip("/") + "/" + body["page"]
    return body


def write_hub_layout(run_dir: Path, root: Path, read_timeout_s: float | None = None) -> Path:
    """Copy a validated run into ``root/runs/<model>/<content hash>/``; returns that folder."""
    bundle, files = load_bundle(run_dir, read_timeout_s)
    target = Path(root) / "runs" / _slug(bundle.model) / bundle.content_hash[:16]
    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (target / name).write_bytes(data)
    readme = Path(root) / "README.md"
    if not readme.exists():
        readme.write_text(_HUB_README, encoding="utf-8")
    return target


def push_to_hub(run_dir: Path, repo_id: str, token: str | None, read_timeout_s: float | None = None) -> str:
    """Stage the Hub layout of one run and upload it to a dataset repo (a thin huggingface_hub call)."""
    from huggingface_hub import HfApi

    with tempfile.TemporaryDirectory(prefix="harness-submit-") as tmp:
        folder = write_hub_layout(run_dir, Path(tmp), read_timeout_s)
        path_in_repo = folder.relative_to(tmp).as_posix()
        api = HfApi(token=token)
        try:
            api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
            api.upload_folder(
                repo_id=repo_id,
                repo_type="dataset",
                folder_path=str(folder),
                path_in_repo=path_in_repo,
                commit_message=f"Add run {path_in_repo}",
            )
        except Exception as exc:  # network, auth and permission errors of the Hub client
            raise _push_failed(
                f"dataset {repo_id}", exc, "write it to a folder with --to DIR and upload that folder later"
            ) from None
    return f"https://huggingface.co/datasets/{repo_id}/tree/main/{path_in_repo}"


def _push_failed(repo: str, exc: Exception, remedy: str) -> HarnessError:
    """The one line for an upload the Hub client could not make: the repo, the client's first line, what to do."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return HarnessError(f"cannot push to the Hub {repo}: {type(exc).__name__}: {first} ({remedy})")


def push_eval_results(
    run_dir: Path, repo_id: str, token: str | None, leaderboard: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Write the run's ``.eval_results/*.yaml`` (marking what ``leaderboard``, a server's answer for this run,
    verified) and upload them to model repo ``repo_id`` (a thin huggingface_hub call); a failed push leaves
    the files in a named folder."""
    from huggingface_hub import HfApi

    from harness.leaderboard.eval_results import FOLDER, write_eval_results

    checks = {t: str(c.get("status")) for t, c in (leaderboard or {}).get("checks", {}).items()}
    staged = Path(tempfile.mkdtemp(prefix="harness-eval-results-"))
    files = write_eval_results(run_dir, staged, checks, (leaderboard or {}).get("page"))
    if not files:
        raise HarnessError(f"{run_dir}: no task of the run reads a Hub dataset with a headline figure to report")
    try:
        HfApi(token=token).upload_folder(
            repo_id=repo_id,
            repo_type="model",
            folder_path=str(staged / FOLDER),
            path_in_repo=FOLDER,
            commit_message=f"Add evaluation results ({', '.join(f.stem for f in files)})",
        )
    except Exception as exc:  # network, auth and permission errors of the Hub client
        where = f"the files are in {staged / FOLDER}: upload them to the model repo's .eval_results/ later"
        raise _push_failed(f"model {repo_id}", exc, where) from None
    shutil.rmtree(staged, ignore_errors=True)
    return {"hub": f"https://huggingface.co/{repo_id}/tree/main/{FOLDER}", "files": [f.name for f in files]}


def submit(
    run_dir: Path,
    to: str,
    token: str | None = None,
    leaderboard: str | None = None,
    read_timeout_s: float | None = None,
) -> dict[str, Any]:
    """Send a run where ``to`` says: ``http(s)://`` server, ``hf://datasets/ORG/NAME`` (the run's files),
    ``hf://ORG/NAME`` (a model repo: its scores as ``.eval_results``, first submitted to ``leaderboard`` when
    given, whose verdicts they carry) or a local folder; the run's files are read (and checked as the server will)
    for at most ``read_timeout_s``."""
    if leaderboard is not None and not _HF_MODEL.fullmatch(to):
        raise HarnessError("--leaderboard goes with a model repo target, --to hf://ORG/NAME")
    if to.startswith(("http://", "https://")):
        return post_run(run_dir, to, token, read_timeout_s=read_timeout_s)
    if to.startswith("hf://"):
        match = _HF.fullmatch(to)
        if match:
            return {"hub": push_to_hub(run_dir, match.group(1), token, read_timeout_s)}
        model = _HF_MODEL.fullmatch(to)
        if not model:
            raise HarnessError(f"--to {to!r}: a Hub target looks like hf://datasets/ORG/NAME or hf://ORG/MODEL")
        load_bundle(run_dir, read_timeout_s)  # checked as a server would: a run holding a credential is refused
        answer = post_run(run_dir, leaderboard, token, read_timeout_s=read_timeout_s) if leaderboard else None
        pushed = push_eval_results(run_dir, model.group(1), None if leaderboard else token, answer)
        return {**(answer or {}), **pushed}
    if "://" in to:
        raise HarnessError(f"--to {to!r}: use http(s)://HOST, hf://datasets/ORG/NAME, hf://ORG/MODEL or a folder")
    return {"folder": str(write_hub_layout(run_dir, Path(to), read_timeout_s))}


def hub_runs(root: Path) -> list[Path]:
    """The run folders of a Hub-layout folder; a symbolic link among ``runs/<model>/<hash>`` (or a folder
    that resolves outside ``root``) is refused, so an import reads only the clone's own files."""
    root = Path(root)
    top = root.resolve()
    runs = sorted(p.parent for p in root.glob("runs/*/*/results.json"))
    for run in runs:
        for folder in (run.parent.parent, run.parent, run):
            if folder.is_symlink() or not folder.resolve().is_relative_to(top):
                raise HarnessError(f"{folder}: a symbolic link or a folder outside {root}; refused")
    if not runs:
        raise HarnessError(f"{root}: no runs/<model>/<hash>/results.json (not a leaderboard Hub folder)")
    return runs
