"""VISTA's peer pool on the leaderboard: its after-submission job, run by the generic server on loopback over
every submitted model, its panel served and exported, and VISTA's headline figures read from it."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from harness.leaderboard.bundle import read_run_files
from harness.leaderboard.db import Database
from harness.leaderboard.export import export_site
from harness.leaderboard.server import create_app
from harness.leaderboard.service import Settings
from harness.leaderboard.tokens import create_token
from tests.leaderboard.test_leaderboard_server import _site_pages_with_working_links, _upload
from tests.leaderboard_fixtures import (  # noqa: F401 (board_*: the data_dir and runs fixtures)
    board_data_dir,
    board_runs,
    running_server,
)


def test_vista_pool_is_recomputed_in_the_background_over_all_models(runs: list[Path], tmp_path: Path) -> None:
    """The pool is VISTA's after-submission job, declared through its leaderboard hooks; the generic server
    runs it, serves its panel (JSON, CSV, image) and its line on each pooled model's page."""
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    token = create_token(db, "alice")
    settings = Settings(protocol_options={"vista": {"task": "shapes_color", "judge": "embedding:0.9", "theta": 0.3}})

    def settled(url: str) -> dict:
        deadline = time.time() + 300  # the job loads the judge's embedder: slow on a loaded machine
        while (state := httpx.get(f"{url}/api/protocols/vista").json())["pending"] and time.time() < deadline:
            time.sleep(0.2)
        assert not state["pending"], "the pool job did not finish in 300 s"
        return state

    with running_server(create_app(settings, db)) as url:
        assert httpx.get(f"{url}/api/protocols/nothing").status_code == 404
        assert httpx.get(f"{url}/panels/vista-pool.png").status_code == 404
        assert _upload(url, read_run_files(runs[0]), token).status_code == 201
        pool = settled(url)["panels"]["vista-pool"]
        assert pool["status"] == "waiting" and "needs at least two" in pool["message"]
        answer = _upload(url, read_run_files(runs[1]), token)
        assert answer.status_code == 201, answer.text
        second = answer.json()
        pool = settled(url)["panels"]["vista-pool"]
        assert pool["status"] == "ok", pool["message"]
        assert [m["model"] for m in pool["members"]] == ["tiny:llava", "tiny:qwen2_vl"]
        assert pool["judge"].startswith("embedding") and pool["config"]["theta"] == 0.3
        for figures in pool["per_model"].values():
            assert figures["queries"] == 3 and 0 <= figures["mean_suspicion"] <= figures["max_suspicion"] <= 1
        assert pool["per_model"]["tiny:qwen2_vl"]["submission_id"] == second["id"]
        index = httpx.get(f"{url}/").text
        assert "VISTA peer pool (shapes_color)" in index and 'src="panels/vista-pool.png"' in index
        assert httpx.get(f"{url}/panels/vista-pool.png").content.startswith(b"\x89PNG")
        rows_text = httpx.get(f"{url}/tables/vista-pool.csv").text
        rows = rows_text.splitlines()
        assert rows[0].startswith("model,submission_id,queries,mean_suspicion") and len(rows) == 3
        assert httpx.get(f"{url}/tables/vista-pool.json").json()["per_model"] == pool["per_model"]
        mean = pool["per_model"]["tiny:qwen2_vl"]["mean_suspicion"]
        assert f"mean S {mean:.3f}" in httpx.get(f"{url}/model/{second['id']}.html").text
    from harness.leaderboard.protocol_parts import board_parts

    figures = board_parts(db, settings).pooled["vista"][second["id"]]  # VISTA's headline figures from the pool
    qwen = pool["per_model"]["tiny:qwen2_vl"]
    assert figures["mean_s"].value == mean and figures["mean_s"].n == 3
    assert figures["flag_share"].value == pytest.approx(qwen["flags"] / 3) and figures["flags"].value == qwen["flags"]
    assert figures["detection"].value in ("positive", "negative") and figures["max_s"].value == qwen["max_suspicion"]
    interval = figures["mean_s"].interval
    assert interval is not None and interval.n == 3
    if interval.low is None:  # every query has the same suspicion: no spread to estimate from, and it says so
        assert interval.reason == f"every resample of the 3 queries gives {mean:.3g}"
    else:
        assert interval.high is not None and interval.low <= mean <= interval.high
        assert interval.label() == "95% CI, cluster_bootstrap over 3 queries"
    site = export_site(db, tmp_path / "site", settings)
    assert _site_pages_with_working_links(site) == 3
    assert (site / "tables" / "vista-pool.csv").read_text() == rows_text
