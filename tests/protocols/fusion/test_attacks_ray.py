"""``harness attack`` on a real local Ray cluster (started once for this module, as in tests/engine/test_ray.py):
the attacks shard over white-box replicas and survive a killed worker with the same outcomes and images."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from harness.engine.distributed import RayOptions
from harness.engine.requests import make_request
from harness.models import GenerationParams, create_backend
from tests.engine.test_ray import KillAfterFirst, ask, cluster  # noqa: F401 (cluster: the module's Ray cluster)


def test_harness_attack_shards_on_ray_and_survives_a_killed_worker(tmp_path: Path) -> None:
    from harness.protocols.fusion.attacks.pgd import PGDConfig
    from harness.protocols.fusion.attacks.run import AttackOptions, CleanItem, run_attacks, white_box_replica

    backend = create_backend("tiny:llava")
    greedy = GenerationParams(max_new_tokens=4)
    items = []
    for i in range(4):
        messages = ask("what is written here", (60 * i, 200, 30 + 50 * i))
        clean = backend.generate([make_request(messages, greedy)])[0]
        assert isinstance(clean, list)
        image = messages[0].images[0]
        items.append(
            CleanItem(
                f"item{i}",
                {"source": "docvqa", "answers": [clean[0].strip() or "."], "wrong_answer": "zzz"},
                messages,
                image,
                clean[0],
            )
        )
    opts = AttackOptions(
        attacks=("end_pgd",),
        pgd=PGDConfig(eps=16 / 255, alpha=8 / 255, steps=1),
        batch_size=1,
        diagnostics=(),
        show_progress=False,
    )
    here = run_attacks(backend, tmp_path / "here", items, greedy, opts)
    # no replacement actor: the killed actor's shards finish on the other one
    pool = KillAfterFirst(partial(white_box_replica, "tiny:llava", {}), RayOptions(workers=2, max_replacements=0))
    try:
        there = run_attacks(backend, tmp_path / "ray", items, greedy, opts, pool)
        assert pool.resent >= 1 and len(pool.actors) == 1
    finally:
        pool.close()
    assert there.asr == here.asr and there.n_clean_correct == 4
    rows = {
        d: [json.loads(line) for line in (tmp_path / d / "attack_outcomes.jsonl").read_text().splitlines()]
        for d in ("here", "ray")
    }
    assert len(rows["here"]) == 4
    for a, b in zip(rows["ray"], rows["here"], strict=True):
        # losses agree to rounding (a replica may use another thread count); everything else is identical
        assert a["loss_end"] == pytest.approx(b["loss_end"], rel=1e-5)
        assert {**a, "loss_start": None, "loss_end": None} == {**b, "loss_start": None, "loss_end": None}
    for i in range(4):  # the adversarial images, written on the workers, came back whole
        name = f"attacks/end_pgd/item{i}.png"
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "here" / name).read_bytes()
