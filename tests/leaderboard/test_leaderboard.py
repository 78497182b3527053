"""Leaderboard storage and re-scoring against a real SQLite file, on real tiny-model runs."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from harness.errors import HarnessError
from harness.leaderboard.bundle import Limits, SubmissionError, parse_bundle, read_run_files
from harness.leaderboard.db import Database, Submission, Token
from harness.leaderboard.records import Z95, list_submissions, model_traits
from harness.leaderboard.rescoring import verify
from harness.leaderboard.service import Settings, submit_files
from harness.leaderboard.tables import protocol_tables, size_bucket, table_csv, table_json
from harness.leaderboard.tokens import create_token, list_tokens, revoke_token, submitter_of
from harness.results.schema import ModelInfo, read_run
from harness.taskspec.registry import TaskRegistry
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    edited_run,
)


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    yield database
    database.close()


def test_migrations_build_the_models_schema_in_a_sqlite_file(tmp_path: Path) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from harness.leaderboard.db import Base

    path = tmp_path / "fresh.sqlite"
    db = Database(f"sqlite:///{path}")
    with db.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        assert conn.execute(text("select version_num from alembic_version")).scalar() == "0005"
    db.close()
    Database(f"sqlite:///{path}").close()  # reopening an up-to-date database is a no-op
    assert path.is_file()


def test_tokens_are_stored_as_hashes_and_can_be_revoked(db: Database) -> None:
    token = create_token(db, "alice")
    assert submitter_of(db, token) == "alice" and submitter_of(db, token + "x") is None and submitter_of(db, "") is None
    with db.session() as session:
        row = session.scalar(select(Token))
        assert row.token_hash == hashlib.sha256(token.encode()).hexdigest() and token not in row.token_hash
    with pytest.raises(HarnessError, match="exists already"):
        create_token(db, "alice")
    revoke_token(db, "alice")
    assert submitter_of(db, token) is None
    assert [active for _, _, active in list_tokens(db)] == [False]
    create_token(db, "alice")  # the name is free again


def test_a_real_run_is_verified_stored_once_and_tabled_with_its_numbers(
    db: Database, runs: list[Path], data_dir: Path
) -> None:
    settings = Settings(data_dir=data_dir)
    first = submit_files(db, read_run_files(runs[0]), "alice", settings)
    assert first.status == "verified" and not first.duplicate
    assert {t: c["status"] for t, c in first.checks.items()} == dict.fromkeys(
        ("shapes_color", "shapes_kind", "shapes"), "verified"
    )
    assert first.checks["shapes_color"]["docs_checked"] and first.checks["shapes_kind"]["docs_checked"]
    again = submit_files(db, read_run_files(runs[0]), "bob", settings)
    assert again.duplicate and again.id == first.id
    submit_files(db, read_run_files(runs[1]), "alice", settings)
    records = list_submissions(db)
    assert len(records) == 2
    (table,) = protocol_tables(records)
    assert table.protocol == "shapes" and table.columns[0].task == "shapes"  # the group column first
    for record, run_dir in zip(records, runs, strict=True):
        run = read_run(run_dir)
        row = next(r for r in table.rows if r.id == record.id)
        assert row.model == run.config.model and row.family == run.provenance.model.model_type
        assert record.parameters == run.provenance.model.parameters and row.size == "< 1B"
        for task, values in {**run.results, **run.groups}.items():
            value, stderr = values["exact_match,none"], values["exact_match_stderr,none"]
            cell = row.cells[f"{task}/exact_match,none"]
            assert cell.value == pytest.approx(value) and cell.status == "verified"
            assert cell.low == pytest.approx(value - Z95 * stderr) and cell.high == pytest.approx(value + Z95 * stderr)
    exported = list(csv.DictReader(io.StringIO(table_csv(table))))
    assert [r["model"] for r in exported] == [read_run(r).config.model for r in runs]
    assert json.loads(json.dumps(table_json(table)))["rows"][0]["cells"]["shapes_color/exact_match,none"][
        "value"
    ] == pytest.approx(read_run(runs[0]).results["shapes_color"]["exact_match,none"])
    with db.session() as session:
        names = session.execute(text("select name, kind from files where submission_id = 1 order by id")).all()
    assert ("results.json", "results") in names and ("leaderboard_metrics.png", "chart") in names
    assert ("samples_shapes_color.jsonl", "samples") in names


def test_claimed_figures_that_differ_are_flagged_or_refused(db: Database, runs: list[Path], tmp_path: Path) -> None:
    def inflate(results: dict) -> None:
        results["results"]["shapes_color"]["exact_match,none"] = 0.99

    forged = edited_run(runs[0], tmp_path / "forged", inflate)
    with pytest.raises(SubmissionError, match="claimed figures differ") as refused:
        submit_files(db, read_run_files(forged), "mallory", Settings(on_mismatch="refuse"))
    assert refused.value.status == 409
    outcome = submit_files(db, read_run_files(forged), "mallory", Settings())
    assert outcome.status == "flagged"
    check = outcome.checks["shapes_color"]
    assert check["status"] == "mismatch" and outcome.checks["shapes_kind"]["status"] == "rescored"
    assert {
        "metric": "exact_match,none",
        "claimed": 0.99,
        "recomputed": read_run(runs[0]).results["shapes_color"]["exact_match,none"],
    } in check["mismatches"]
    record = list_submissions(db)[0]
    score = next(s for s in record.scores if s.task == "shapes_color" and s.metric == "exact_match,none")
    assert score.claimed == 0.99 and score.value != 0.99 and score.status == "mismatch"

    def inflate_group(results: dict) -> None:
        results["groups"]["shapes"]["exact_match,none"] = 0.5

    outcome = submit_files(db, read_run_files(edited_run(runs[0], tmp_path / "group", inflate_group)), "m", Settings())
    assert outcome.status == "flagged" and outcome.checks["shapes_color"]["status"] == "rescored"
    assert outcome.checks["shapes"]["status"] == "mismatch" and outcome.checks["shapes"]["version"] == "group"
    group = next(s for s in list_submissions(db)[1].scores if s.task == "shapes")
    assert group.claimed == 0.5 and group.status == "mismatch"


def test_tampered_samples_and_docs_are_caught(runs: list[Path], tmp_path: Path, data_dir: Path) -> None:
    registry = TaskRegistry.discover()
    files = read_run_files(runs[0])
    lines = [json.loads(line) for line in files["samples_shapes_color.jsonl"].decode().splitlines()]
    lines[0]["metrics"]["exact_match,none"] = 1.0  # a per-sample claim the responses do not support
    lines[1]["doc"]["color"] = "purple"  # a doc that is not the dataset's
    files["samples_shapes_color.jsonl"] = "".join(json.dumps(r) + "\n" for r in lines).encode()
    check = verify(parse_bundle(files), registry, data_dir).checks["shapes_color"]
    assert check.status == "mismatch" and check.samples_differing == 1
    assert "1 sample doc(s) differ from the dataset" in check.message
    assert verify(parse_bundle(files), registry, None).checks["shapes_color"].docs_checked is False
    del lines[2]["doc"]["color"]  # a doc the task's scoring code cannot read: that sample's error on re-scoring
    files["samples_shapes_color.jsonl"] = "".join(json.dumps(r) + "\n" for r in lines).encode()
    check = verify(parse_bundle(files), registry, None).checks["shapes_color"]
    assert check.status == "mismatch" and check.samples_differing == 2
    assert any(m.metric == "counts" and m.recomputed["errors"] == 1 for m in check.mismatches)


def test_unknown_tasks_and_versions_are_refused(runs: list[Path], tmp_path: Path) -> None:
    files = read_run_files(runs[0])
    results = json.loads(files["results.json"])
    results["versions"]["shapes_color"] = 7
    files["results.json"] = json.dumps(results).encode()
    with pytest.raises(SubmissionError, match="scores version '1'"):
        verify(parse_bundle(files), TaskRegistry.discover())
    results["versions"]["shapes_color"] = 1
    for key in ("configs", "results", "counts", "versions"):
        results[key]["no_such_task"] = results[key].pop("shapes_color")
    files["results.json"] = json.dumps(results).encode()
    files["samples_no_such_task.jsonl"] = files.pop("samples_shapes_color.jsonl").replace(
        b'"task":"shapes_color"', b'"task":"no_such_task"'
    )
    with pytest.raises(SubmissionError, match="'no_such_task' is not known to this server"):
        verify(parse_bundle(files), TaskRegistry.discover())


IMAGE_TASK = """task: shapes_pixels
dataset_path: vlm-audit/shapes
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is the shape?"
doc_to_target: color
process_results: !function utils.process_results
process_results_use_image: true
metric_list:
  - metric: exact_match
    aggregation: mean
generation_kwargs:
  max_new_tokens: 4
metadata:
  version: 1
"""
IMAGE_UTILS = """
def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def process_results(doc, results):
    red = doc["image"].convert("RGB").getpixel((32, 32))[0] > 128
    return {"exact_match": float(("red" in results[0].lower()) == red)}
"""


def test_a_task_scored_from_images_is_unverifiable_without_the_data(tmp_path: Path, data_dir: Path) -> None:
    from harness.cli import main

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "pixels.yaml").write_text(IMAGE_TASK)
    (tasks / "utils.py").write_text(IMAGE_UTILS)
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:llava",
                "--tasks",
                "shapes_pixels",
                "--include-path",
                str(tasks),
                "--data-dir",
                str(data_dir),
                "--output",
                str(tmp_path / "runs"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    (run_dir,) = [p.parent for p in (tmp_path / "runs").glob("*/*/results.json")]
    bundle = parse_bundle(read_run_files(run_dir))
    registry = TaskRegistry.discover([tasks])
    blind = verify(bundle, registry, None)
    assert blind.status == "unverifiable" and "without the dataset" in blind.checks["shapes_pixels"].message
    assert blind.results["shapes_pixels"] == read_run(run_dir).results["shapes_pixels"]  # the claim, marked
    assert verify(bundle, registry, data_dir).status == "verified"


def test_malformed_and_oversized_bundles_are_refused_with_clear_errors(runs: list[Path]) -> None:
    good = read_run_files(runs[0])
    cases = [
        ({k: v for k, v in good.items() if k != "results.json"}, "results.json is missing", 400),
        ({**good, "results.json": b"{not json"}, "results.json: not JSON", 422),
        ({**good, "results.json": b"[" * 100_000}, "results.json: JSON nested deeper than 64 levels; refused", 422),
        (
            {**good, "results.json": _without(good["results.json"], "counts", "shapes_kind")},
            "results.json: counts has no entry for task(s) shapes_kind",
            422,
        ),
        (
            {**good, "results.json": json.dumps({"schema_version": 1, "results": {}}).encode()},
            "results.json: configs: Field required",
            422,
        ),
        (
            {k: v for k, v in good.items() if k != "samples_shapes_kind.jsonl"},
            "samples file(s) missing for task(s) shapes_kind",
            400,
        ),
        ({**good, "../evil.sh": b"x"}, "unexpected file(s) '../evil.sh'", 400),
        (
            {**good, "samples_shapes_kind.jsonl": b'{"task": "shapes_kind"}\n'},
            "samples_shapes_kind.jsonl line 1: doc_id: Field required",
            422,
        ),
        ({**good, "samples_shapes_kind.jsonl": b"[1]\n"}, "line 1: a sample record must be a JSON object", 422),
        ({**good, "plot.png": b"GIF89a not a png"}, "plot.png: not a readable PNG image", 422),
    ]
    for files, message, status in cases:
        with pytest.raises(SubmissionError) as exc:
            parse_bundle(files)
        assert message in str(exc.value) and exc.value.status == status
    with pytest.raises(SubmissionError, match="over the 1000-byte limit") as exc:
        parse_bundle(good, Limits(max_total_bytes=1000))
    assert exc.value.status == 413


def test_model_traits_and_size_buckets() -> None:
    api = model_traits("openai:gpt-4o-mini", ModelInfo(backend="openai", model="gpt-4o-mini"))
    assert (api.access, api.family, api.parameters) == ("api", "gpt", None)
    named = model_traits("hf:Qwen/Qwen2-VL-7B-Instruct", ModelInfo())
    assert (named.access, named.family, named.parameters) == ("open", "qwen", 7_000_000_000)
    assert model_traits("hf:HuggingFaceTB/SmolVLM-256M-Instruct", ModelInfo()).parameters == 256_000_000
    assert [size_bucket(p) for p in (None, 5e8, 2e9, 7e9, 13e9, 7e10)] == [
        "unknown",
        "< 1B",
        "1-4B",
        "4-10B",
        "10-40B",
        "> 40B",
    ]


def test_records_cannot_be_rewritten_by_resubmission(db: Database, runs: list[Path], tmp_path: Path) -> None:
    submit_files(db, read_run_files(runs[1]), "alice", Settings())
    copy = tmp_path / "copy"
    shutil.copytree(runs[1], copy)
    (copy / "extra_plot.png").write_bytes(_png())
    outcome = submit_files(db, read_run_files(copy), "bob", Settings())
    assert outcome.duplicate  # plots are not part of a run's identity; the first record stands
    with db.session() as session:
        assert session.scalar(select(Submission.submitter)) == "alice"
    for statement in ("update submissions set model = 'x'", "delete from scores", "update files set size = 0"):
        with pytest.raises(DBAPIError, match="leaderboard records are immutable"), db.engine.begin() as conn:
            conn.execute(text(statement))


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def _without(results_json: bytes, key: str, task: str) -> bytes:
    results = json.loads(results_json)
    del results[key][task]
    return json.dumps(results).encode()


def test_cells_pin_hand_computed_values_of_a_rescored_run(db: Database, runs: list[Path], tmp_path: Path) -> None:
    """Two of three shapes_color answers made right and re-scored with `harness score`: exact_match is
    2/3, its stderr the sample standard deviation over sqrt(n) = sqrt(1/3)/sqrt(3) = 1/3, and the cell's
    95% interval 2/3 ± 1.959964 / 3 = [0.013345, 1.319988]."""
    from harness.cli import main

    run_dir = tmp_path / "run"
    shutil.copytree(runs[0], run_dir)
    path = run_dir / "samples_shapes_color.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for record in lines[:2]:
        record["responses"] = [record["target"]] * len(record["responses"])
    lines[2]["responses"] = ["not an answer"] * len(lines[2]["responses"])
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["score", str(run_dir)]) == 0
    assert submit_files(db, read_run_files(run_dir), "alice", Settings()).status == "rescored"
    (table,) = protocol_tables(list_submissions(db))
    cell = table.rows[0].cells["shapes_color/exact_match,none"]
    assert cell.value == pytest.approx(2 / 3) and cell.n == 3
    assert (cell.low, cell.high) == (pytest.approx(0.013345, abs=1e-6), pytest.approx(1.319988, abs=1e-6))


def test_a_toy_protocol_plugs_its_table_options_job_and_panel_into_the_leaderboard(
    db: Database, runs: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A protocol registered at run time (no leaderboard module names it) gets its own table for its task,
    its option values from the settings, its job after new submissions carrying that task, and its panel."""
    from harness.leaderboard.protocol_parts import board_parts
    from harness.leaderboard.service import import_runs
    from harness.protocols import base
    from harness.protocols.leaderboard_hooks import Job, LeaderboardHooks, Option, Panel
    from harness.protocols.pool_store import PoolStore

    calls: list[dict] = []

    def panels(_: PoolStore, options: dict) -> list[Panel]:
        return [
            Panel(
                key="toy-panel",
                title=f"Toy over {options['task']}",
                status="ok",
                message=f"{len(calls)} run(s)",
                members=(),
                data={"calls": len(calls)},
                csv="calls\n",
                model_notes={1: "seen by the toy"},
            )
        ]

    hooks = LeaderboardHooks(
        options=(Option("task", "shapes_color", "the toy's task"),),
        job=Job(tasks=lambda o: (o["task"],), run=lambda _, o: calls.append(dict(o))),
        panels=panels,
    )
    base.protocols()
    toy = base.Protocol(
        name="toy",
        title="Toy",
        summary="A protocol of the tests.",
        tasks=("shapes_kind",),
        extensions={"leaderboard": hooks},
    )
    monkeypatch.setitem(base._REGISTRY, "toy", toy)
    with pytest.raises(HarnessError, match="unknown leaderboard option"):
        Settings(protocol_options={"toy": {"colour": "red"}})
    with pytest.raises(HarnessError, match="no such protocol"):
        Settings(protocol_options={"nothing": {}})
    settings = Settings(protocol_options={"toy": {"task": "shapes_kind"}})
    import_runs(db, runs, "alice", settings)
    assert calls == [{"task": "shapes_kind"}]  # once for both new runs
    import_runs(db, runs, "alice", settings)
    assert len(calls) == 1  # nothing new: no job
    tables = {t.protocol: t for t in protocol_tables(list_submissions(db))}
    assert list(tables) == ["toy", "shapes"]  # the registered protocols first, then the tables of no protocol
    assert {c.task for c in tables["toy"].columns} == {"shapes_kind"}
    assert {c.task for c in tables["shapes"].columns} == {"shapes", "shapes_color"}
    parts = board_parts(db, settings)
    assert [p.title for p in parts.panels] == ["Toy over shapes_kind"]
    assert parts.model_notes(1) == [("Toy over shapes_kind", "seen by the toy")] and parts.model_notes(2) == []
    assert parts.state("toy", 0) == {"protocol": "toy", "pending": 0, "panels": {"toy-panel": {"calls": 1}}}


def _cherry_picked(run: Path, dest: Path) -> Path:
    """A copy of ``run`` with 2 of 3 shapes_color samples marked errors and one shapes_kind sample deleted,
    re-scored with `harness score` so that every claimed figure and count agrees with the samples."""
    from harness.cli import main

    shutil.copytree(run, dest)
    color = dest / "samples_shapes_color.jsonl"
    lines = [json.loads(line) for line in color.read_text().splitlines()]
    for record in lines[1:]:
        record.update(responses=[], metrics={}, filtered={}, error="generation failed: (cherry-picked)")
    color.write_text("".join(json.dumps(r) + "\n" for r in lines))
    kind = dest / "samples_shapes_kind.jsonl"
    kind.write_text("".join(line + "\n" for line in kind.read_text().splitlines()[:2]))
    assert main(["score", str(dest)]) == 0
    return dest


def test_a_cherry_picked_run_is_partial_never_verified(
    db: Database, runs: list[Path], tmp_path: Path, data_dir: Path
) -> None:
    """Errors over 5% of a task (2 of 3 samples) and a deleted sample (2 of the dataset's 3 docs) make those
    tasks partial, with or without the server's copy of the data; without it the rest is only rescored."""
    run = _cherry_picked(runs[0], tmp_path / "picked")
    with_data = verify(parse_bundle(read_run_files(run)), TaskRegistry.discover(), data_dir)
    assert with_data.status == "partial"
    color, kind = with_data.checks["shapes_color"], with_data.checks["shapes_kind"]
    assert (color.status, color.errors, color.docs_covered, color.docs_expected) == ("partial", 2, 3, 3)
    assert "2 of 3 samples are errors (over the 5% this server accepts)" in color.message
    assert (kind.status, kind.docs_covered, kind.docs_expected) == ("partial", 2, 3)
    assert "covers 2 of the task's 3 docs" in kind.message
    assert with_data.checks["shapes"].status == "partial"  # a group is as good as its worst member
    # ... and says which members made it so, with their reasons (never an empty one)
    assert with_data.checks["shapes"].message == (
        "as its task(s) shapes_color (2 of 3 samples are errors (over the 5% this server accepts)); "
        "shapes_kind (covers 2 of the task's 3 docs)"
    )
    blind = verify(parse_bundle(read_run_files(run)), TaskRegistry.discover(), None)
    assert blind.status == "partial" and blind.checks["shapes_kind"].docs_expected == 3  # the claimed n-samples
    assert (
        verify(parse_bundle(read_run_files(run)), TaskRegistry.discover(), data_dir, max_error_share=1.0)
        .checks["shapes_color"]
        .status
        == "verified"
    )

    def hide(results: dict) -> None:  # a cheat that also rewrites n-samples to the samples it kept
        results["n-samples"]["shapes_kind"]["effective"] = 2

    hidden = edited_run(run, tmp_path / "hidden", hide)
    blind = verify(parse_bundle(read_run_files(hidden)), TaskRegistry.discover(), None)
    kind = blind.checks["shapes_kind"]
    assert kind.status == "rescored" and "docs not checked" in kind.message
    seen = verify(parse_bundle(read_run_files(hidden)), TaskRegistry.discover(), data_dir)
    assert seen.checks["shapes_kind"].status == "partial"
    outcome = submit_files(db, read_run_files(run), "mallory", Settings(data_dir=data_dir))
    assert outcome.status == "partial"
    (table,) = protocol_tables(list_submissions(db))
    cell = table.rows[0].cells["shapes_color/exact_match,none"]
    assert (cell.n, cell.errors, cell.unparsed, cell.status) == (1, 2, 0, "partial")
    group = table.rows[0].cells["shapes/exact_match,none"]
    assert (group.n, group.errors, group.status) == (3, 2, "partial")  # 1 + 2 scored, 2 + 0 errors


def test_a_run_cut_by_limit_is_partial(db: Database, runs: list[Path], tmp_path: Path) -> None:
    """Without the data, a claimed --limit that cut the task (effective == limit) is partial."""

    def limited(results: dict) -> None:
        results["config"]["limit"] = 3

    check = verify(
        parse_bundle(read_run_files(edited_run(runs[0], tmp_path / "cut", limited))), TaskRegistry.discover(), None
    ).checks["shapes_color"]
    assert check.status == "partial" and "cut to 3 docs (--limit)" in check.message


def test_published_text_carries_no_local_paths() -> None:
    from harness.leaderboard.public import public_results, redact

    assert redact("hf:/home/alice/models/llava-1.5") == "hf:llava-1.5"
    assert redact({"include_paths": ["/home/alice/tasks", "~/x/y"], "model": "hf:org/name"}) == {
        "include_paths": ["tasks", "y"],
        "model": "hf:org/name",
    }
    assert redact(r"C:\Users\alice\run") == "run" and redact("see /tmp/a/b.json, then") == "see b.json, then"
    for kept in ("hf://datasets/org/x", "http://host/a/b", "2/3 of it", "a / b", "tiny:llava", "<b>x</b>", "/x"):
        assert redact(kept) == kept
    assert json.loads(public_results(b'{"config": {"model": "hf:/srv/m"}}')) == {"config": {"model": "hf:m"}}
    assert public_results(b"{not json") == b"{not json"
