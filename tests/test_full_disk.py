"""A full disk is one line and loses nothing: the response store, the run folder of an eval, a rescore, a
build and an audit report, each on a real tmpfs of 2 MB filled to the last page (mounted by the test: it
needs root, and is skipped where mounting is impossible)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli import main
from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.protocols.vista.audit_report import VistaAuditReport
from tests.conftest import ROOT, run_harness

PAGE = 4096


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> list[Path]:
    """Fill ``disk`` with one-page files until it is full; deleting k of them frees k pages."""
    folder = disk / "filler"
    folder.mkdir(exist_ok=True)
    files = []
    while True:
        path = folder / f"{len(files)}"
        try:
            path.write_bytes(b"x" * PAGE)
        except OSError:
            path.unlink(missing_ok=True)
            return files
        files.append(path)


def free(files: list[Path], pages: int | None = None) -> None:
    for path in files[: len(files) if pages is None else pages]:
        path.unlink(missing_ok=True)


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line


def no_tmp_files(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith((".tmp", ".partial"))]


def test_a_full_store_keeps_earlier_answers_serves_later_ones_and_names_the_cause(
    disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = disk / "responses.sqlite"
    store = ResponseStore(path)
    store.put("m", "before", 0, ["kept"])
    fillers = fill(disk)
    with caplog.at_level(logging.WARNING):
        for i in range(40):
            store.put("m", f"after{i}", 0, ["y" * 3000])  # never raises: generation goes on
        assert store.get("m", "after39", 0, 1) == ["y" * 3000]  # kept in memory
        store.close()
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "cannot rollback" in m or "still locked" in m]
    full = [m for m in messages if "generation goes on" in m]
    assert len(full) == 1 and str(path) in full[0] and "full" in full[0]
    (lost,) = [m for m in messages if "only in this run's samples files" in m]
    assert "No space left on device" in lost and "40 request(s)" in lost
    assert not list(disk.glob("*.pending-*"))  # no empty side file left
    free(fillers)
    again = ResponseStore(path)
    assert again.get("m", "before", 0, 1) == ["kept"]
    again.close()


def test_a_store_whose_disk_frees_up_writes_the_kept_answers(disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = disk / "responses.sqlite"
    store = ResponseStore(path)
    store.put("m", "before", 0, ["kept"])
    fillers = fill(disk)
    for i in range(10):
        store.put("m", f"after{i}", 0, ["y" * 3000])
    free(fillers)
    with caplog.at_level(logging.WARNING):
        store.put("m", "last", 0, ["z"])
    assert [r for r in caplog.records if "writable again, 11 kept request(s) written" in r.getMessage()]
    store.close()
    again = ResponseStore(path)
    assert again.count("m") == 12
    again.close()


def test_a_store_that_cannot_be_created_on_a_full_disk_stops_in_one_line(disk: Path) -> None:
    fill(disk)
    path = disk / "new.sqlite"
    with pytest.raises(HarnessError) as refused:
        ResponseStore(path).put("m", "r", 0, ["x"])
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and str(path) in message and "--no-cache" in message
    assert "full" in message or "No space" in message or "disk I/O" in message


def eval_shapes(cwd: Path, store: Path, output: Path, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    """``harness eval`` of three shapes_color docs on tiny Qwen2-VL with the given store and output folder."""
    args = ["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes_color", "--limit", "3"]
    args += ["--cache", str(store), "--output", str(output), *(["--verbosity", "quiet"] if quiet else [])]
    return run_harness(*args, cwd=cwd)


@pytest.fixture
def sized_run(tmp_path: Path, data_dir: Path) -> tuple[Path, Path]:
    """A first run of shapes_color (its answers in a store off the small disk): its folder and the store."""
    store = tmp_path / "store.sqlite"
    done = eval_shapes(tmp_path, store, tmp_path / "first")
    assert done.returncode == 0, done.stderr
    (results,) = (tmp_path / "first").rglob("results.json")
    return results.parent, store


def test_an_eval_whose_results_do_not_fit_keeps_its_samples_and_finishes_with_harness_score(
    disk: Path, tmp_path: Path, sized_run: tuple[Path, Path]
) -> None:
    first, store = sized_run
    samples = (first / "samples_shapes_color.jsonl").read_bytes()
    fillers = fill(disk)
    free(fillers, -(-len(samples) // PAGE))  # room for the samples file, not for results.json
    done = eval_shapes(tmp_path, store, disk / "out")
    line = error_line(done)
    assert "results.json: No space left on device (about" in line and "needed" in line
    (run_dir,) = (disk / "out").glob("*/*")
    assert (run_dir / "samples_shapes_color.jsonl").read_bytes() == samples  # kept
    assert not (run_dir / "results.json").exists() and no_tmp_files(disk)
    command = re.search(r"`(harness score [^`]+)`", line)
    assert command is not None and f"--output {run_dir}" in command.group(1)
    free(fillers)
    finish = run_harness(*command.group(1).split()[1:], cwd=tmp_path)
    assert finish.returncode == 0, finish.stderr
    finished = json.loads((run_dir / "results.json").read_text())
    assert finished["results"] == json.loads((first / "results.json").read_text())["results"]
    shutil.rmtree(command.group(1).split()[2])


def test_an_eval_on_a_full_output_disk_saves_the_whole_run_elsewhere(
    disk: Path, tmp_path: Path, sized_run: tuple[Path, Path]
) -> None:
    _, store = sized_run
    fill(disk)
    done = eval_shapes(tmp_path, store, disk / "out")
    line = error_line(done)
    assert "samples_shapes_color.jsonl: No space left on device" in line and no_tmp_files(disk)
    saved = re.search(r"saved in (\S+):", line)
    assert saved is not None and (Path(saved.group(1)) / "results.json").is_file()
    shutil.rmtree(saved.group(1))


def test_harness_score_on_a_full_disk_changes_nothing_and_says_so(
    disk: Path, tmp_path: Path, sized_run: tuple[Path, Path]
) -> None:
    first, _ = sized_run
    run_dir = disk / "run"
    run_dir.mkdir()
    for path in first.iterdir():
        (run_dir / path.name).write_bytes(path.read_bytes())
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    fillers = fill(disk)
    line = error_line(run_harness("score", str(run_dir), cwd=tmp_path))
    assert "cannot write the rescored run: " in line and "No space left on device" in line
    assert str(run_dir) in line and "rerun harness score" in line
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before and no_tmp_files(disk)
    free(fillers)
    assert run_harness("score", str(run_dir), cwd=tmp_path).returncode == 0


def test_a_build_on_a_full_disk_is_one_line_naming_the_build(disk: Path, tmp_path: Path) -> None:
    fill(disk)
    line = error_line(run_harness("build", "shapes", "--n", "8", "--out", str(disk / "shapes"), cwd=tmp_path))
    assert line.startswith("error: harness build shapes: cannot write ") and "No space left on device" in line
    assert not (disk / "shapes").exists() and no_tmp_files(disk)


def test_ctrl_c_during_a_build_names_the_build(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "shapes"
    # the console script, as a user runs it (under `python -m`, CPython reports a handled Ctrl-C as -SIGINT)
    script = Path(sys.executable).with_name("harness")
    proc = subprocess.Popen(
        [str(script), "build", "shapes", "--n", "400000", "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the command has parsed its arguments and starts the build, however slowly
    assert first == f"building shapes into {out} ...\n", first
    proc.send_signal(signal.SIGINT)  # 400,000 images: far from done, whatever the machine's load
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        f"interrupted: harness build shapes --output {out} was stopped before it "
        "finished; rerun the same command to build it"
    )
    assert "response store" not in err and not out.exists() and no_tmp_files(tmp_path)


def test_a_ctrl_c_a_library_swallows_still_ends_the_command_with_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Code that catches KeyboardInterrupt and carries on cannot make an interrupted build exit 0."""
    from harness.cli import build

    def swallowing_build(args: object) -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            pass  # as a library that catches it and goes on would
        return 0

    monkeypatch.setattr(build, "_cmd_build", swallowing_build)
    assert main(["build", "shapes", "--output", "x", "--verbosity", "quiet"]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "interrupted: harness build shapes --output x was stopped before it finished; rerun the same command to "
        "build it"
    )
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back after the command


def test_an_eval_whose_store_fills_up_mid_run_finishes_and_names_the_cause(
    disk: Path, tmp_path: Path, data_dir: Path
) -> None:
    path = disk / "responses.sqlite"
    holder = ResponseStore(path)  # another process's open store: its log and index files stay in place
    holder.put("m", "before", 0, ["kept"])
    fillers = fill(disk)
    done = eval_shapes(tmp_path, path, tmp_path / "out", quiet=False)
    assert done.returncode == 0, done.stderr
    assert "cannot rollback" not in done.stderr and "still locked" not in done.stderr
    assert "Traceback" not in done.stderr
    full = [line for line in done.stderr.splitlines() if "generation goes on" in line]
    assert len(full) == 1 and str(path) in full[0] and "full" in full[0]
    (samples,) = (tmp_path / "out").rglob("samples_shapes_color.jsonl")
    assert all(json.loads(line)["responses"] for line in samples.read_text().splitlines())  # nothing lost
    free(fillers)
    assert holder.get("m", "before", 0, 1) == ["kept"]
    holder.close()


def test_an_audit_report_on_a_full_disk_is_one_line_and_keeps_the_old_report(disk: Path) -> None:
    report = VistaAuditReport.read(ROOT / "tests" / "protocols" / "vista" / "audit_v1.json")
    path = report.write(disk / "audit")
    fill(disk)
    bigger = report.model_copy(update={"judge": "j" * 3 * PAGE})
    with pytest.raises(HarnessError) as exc:
        bigger.write(disk / "audit")
    assert str(exc.value).startswith(f"{path}: No space left on device (about ") and "\n" not in str(exc.value)
    assert VistaAuditReport.read(path) == report and no_tmp_files(disk / "audit")
