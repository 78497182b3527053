"""FusionAudit's attacks re-ask with the settings the clean run recorded, as every reader of a run's settings
does (tests/test_verification_matrix.py holds the rest of the callers to it)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_verification_matrix import _eval, family_backend  # noqa: F401 (family_backend: the family: models)


def test_fusion_attacks_re_ask_with_the_settings_the_clean_run_recorded(fusion_dir: Path, tmp_path: Path) -> None:
    """The attacks' re-check asks with the clean run's own settings (its ``--gen-kwargs`` included), read
    from the run's record, not the task's raw ``generation_kwargs`` (32 tokens)."""
    from harness.protocols.fusion.attacks.run import clean_correct_items

    data = fusion_dir.parent.parent
    run = _eval("family:qwen2_vl", "fusion_clean", tmp_path / "runs", data, [], "--gen-kwargs", "max_new_tokens=7")
    _, params = clean_correct_items(run, "fusion_clean", data, [], "qwen2_vl")
    assert params.max_new_tokens == 7
    recorded = json.loads((run / "results.json").read_text())["provenance"]["generation"]["fusion_clean"]
    assert params.as_dict() == {k: v for k, v in recorded.items() if k != "n"}
